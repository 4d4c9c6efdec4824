"""``memresolve batch``: exit codes, the summary, progress on a terminal only, and what a
failed, interrupted or disk-starved job leaves behind (nothing).

The command runs in a child process, as a user runs it: signals, resource limits and
terminals are the child's own.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import resource
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import memresolve as mr
from memresolve.testing.batch_store import Written, write_parquet

COMMAND = [sys.executable, "-m", "memresolve", "batch"]

# One worker runs the module: its store is generated once, by a module fixture.
pytestmark = pytest.mark.xdist_group("cli-batch")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """A 200k-record UUID store, two files per input."""
    return write_parquet(tmp_path_factory.mktemp("store"), 200_000, seed=5, chunk_records=100_000)


def _argv(store: Written, out: Path, *extra: str) -> list[str]:
    return [*COMMAND, str(store.records), str(store.contexts), "--out", str(out), *extra]


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, **kwargs)


def test_a_job_prints_its_summary_and_no_progress_when_not_on_a_terminal(
    store: Written, tmp_path: Path
) -> None:
    done = _run(_argv(store, tmp_path / "out", "--tombstones", str(store.tombstones)))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "200,000 records" in done.stdout
    assert f"wrote {tmp_path / 'out'}" in done.stdout
    expected = mr.resolve_batch(
        pq.read_table(store.records),
        pq.read_table(store.contexts),
        tombstones=pq.read_table(store.tombstones),
    )
    assert pq.read_table(tmp_path / "out").num_rows == expected.num_rows


def test_json_is_the_summary_for_machines(store: Written, tmp_path: Path) -> None:
    argv = _argv(store, tmp_path / "out", "--json", "--include-excluded", "--threads", "1")
    done = _run([*argv, "--spill-compression", "zstd"])
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["records"] == 200_000
    assert summary["output"] == str(tmp_path / "out")
    assert set(summary) >= {"contexts", "tombstones", "parts", "rows", "seconds"}
    assert summary["rows"]["active"] > 0
    assert summary["rows"]["superseded"] > 0  # excluded rows were asked for
    assert sum(summary["rows"].values()) == pq.read_table(tmp_path / "out").num_rows


def test_bad_input_exits_2_naming_file_column_and_row(store: Written, tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    files = sorted(Path(store.records).iterdir())
    for path in files:
        table = pq.read_table(path)
        if path == files[-1]:
            authority = table.column("authority").to_pylist()
            authority[7_777] = "rumour"
            column = table.schema.get_field_index("authority")
            table = table.set_column(
                column, "authority", pa.array(authority, table.schema.field(column).type)
            )
        pq.write_table(table, records / path.name)
    spill = tmp_path / "spill"
    spill.mkdir()
    argv = [*COMMAND, str(records), str(store.contexts), "--out", str(tmp_path / "out")]
    done = _run([*argv, "--spill-directory", str(spill)])
    assert done.returncode == 2
    assert str(records / files[-1].name) in done.stderr
    assert "authority" in done.stderr
    assert "row 7777" in done.stderr
    assert "rumour" in done.stderr
    assert not (tmp_path / "out").exists()
    assert list(spill.iterdir()) == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


@pytest.mark.parametrize(
    ("problem", "status", "said"),
    [
        ("missing", 2, "no such file"),
        ("exists", 2, "pass --overwrite"),
        ("threads", 2, "--threads"),
        ("limit", 1, "memory_limit"),
        ("bad-limit", 2, "memory_limit"),
        ("codec", 2, "--spill-compression"),
    ],
)
def test_exit_codes(store: Written, tmp_path: Path, problem: str, status: int, said: str) -> None:
    out = tmp_path / "out"
    argv = _argv(store, out)
    if problem == "missing":
        argv[len(COMMAND)] = str(tmp_path / "nowhere")
    elif problem == "exists":
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    elif problem == "threads":
        argv += ["--threads", "0"]
    elif problem == "limit":
        argv += ["--memory-limit", "100MB"]
    elif problem == "bad-limit":
        argv += ["--memory-limit", "lots"]
    else:
        argv += ["--spill-compression", "gzip"]
    done = _run(argv)
    assert done.returncode == status, done.stderr
    assert said in done.stderr
    assert done.stdout == ""
    if problem == "exists":
        assert (out / "keep.txt").read_text() == "mine"  # untouched
    else:
        assert not out.exists()


def test_overwrite_replaces_an_old_output(store: Written, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # The old output is an earlier job's, with more rows (--overwrite replaces nothing else:
    # tests/dataset/test_job_outputs.py).
    assert _run(_argv(store, out, "--include-excluded")).returncode == 0
    stale = pq.read_table(out).num_rows
    done = _run([*_argv(store, out, "--overwrite"), "--json"])
    assert done.returncode == 0, done.stderr
    assert pq.read_table(out).num_rows == sum(json.loads(done.stdout)["rows"].values()) < stale


def test_a_terminal_gets_progress_bars(store: Written, tmp_path: Path) -> None:
    main, child = pty.openpty()
    # A terminal has a size; a fresh pseudo-terminal's is 0 x 0, which tqdm draws as nothing.
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(
        _argv(store, tmp_path / "out"),
        stdin=child,
        stdout=subprocess.DEVNULL,
        stderr=child,
        close_fds=True,
    )
    os.close(child)
    screen = _read_until_exit(main, process)
    os.close(main)
    assert process.returncode == 0, screen
    assert "reading records" in screen
    assert "/200k" in screen, "the records bar knows its total, so it has an ETA"
    assert "resolving" in screen
    assert "row/s" in screen or "it/s" in screen or "rows/s" in screen


def _read_until_exit(fd: int, process: subprocess.Popen[bytes]) -> str:
    chunks: list[bytes] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65_536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif process.poll() is not None:
            break
    process.wait(timeout=60)
    return b"".join(chunks).decode(errors="replace")


def test_ctrl_c_exits_1_and_leaves_nothing(tmp_path: Path) -> None:
    # Big enough that the job is still routing when the signal comes.
    store = write_parquet(tmp_path / "store", 1_000_000, seed=9, chunk_records=250_000)
    spill = tmp_path / "spill"
    spill.mkdir()
    out = tmp_path / "out"
    process = subprocess.Popen(
        [*_argv(store, out, "--memory-limit", "700MB"), "--spill-directory", str(spill)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not any(spill.rglob("*.arrows")) and process.poll() is None:
        assert time.monotonic() < deadline, "the job never spilled"
        time.sleep(0.01)
    assert process.poll() is None, "the job ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr
    assert "interrupted" in stderr
    assert stdout == ""
    assert not out.exists()
    assert list(spill.iterdir()) == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_a_full_disk_exits_1_and_leaves_nothing(store: Written, tmp_path: Path) -> None:
    """A file-size limit (RLIMIT_FSIZE) makes writes fail as a full disk does (EFBIG)."""

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    spill = tmp_path / "spill"
    spill.mkdir()
    out = tmp_path / "out"
    done = _run(
        [*_argv(store, out, "--with-values"), "--spill-directory", str(spill)],
        preexec_fn=small_files,
    )
    assert done.returncode == 1, done.stderr
    assert "File too large" in done.stderr or "EFBIG" in done.stderr or "[Errno 27]" in done.stderr
    assert "--spill-directory" in done.stderr
    assert "--spill-compression zstd" in done.stderr  # the default spills uncompressed
    assert not out.exists()
    assert list(spill.iterdir()) == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_the_bundled_story_as_parquet_is_the_story() -> None:
    """The Parquet files ``make demo`` and the README run are the JSON Lines story, converted."""
    story = Path(mr.__file__).parent / "_data" / "story"
    records = mr.read_records(story / "records.jsonl")
    contexts = [
        (f"context-{n}", c) for n, c in enumerate(mr.read_contexts(story / "contexts.jsonl"), 1)
    ]
    tombstones = mr.read_tombstones(story / "tombstones.jsonl")
    assert pq.read_table(story / "records.parquet").equals(mr.records_to_arrow(records))
    assert pq.read_table(story / "contexts.parquet").equals(mr.contexts_to_arrow(contexts))
    assert pq.read_table(story / "tombstones.parquet").equals(mr.tombstones_to_arrow(tombstones))


@pytest.mark.parametrize("command", ["batch", "normalize"])
def test_the_spill_codec_option_reaches_every_spill(
    store: Written,
    tmp_path: Path,
    spill_codecs: list[str | None],
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """In this process (the one test here that is), to see which codec each spill is made
    with: every ``Parts`` is still made and used for real."""
    from memresolve._cli._main import main  # noqa: PLC0415

    if command == "batch":
        argv = _argv(store, tmp_path / "out")[len(COMMAND) - 1 :]
    else:
        now = "2026-07-30T00:00Z"
        argv = ["normalize", str(store.records), "--now", now, "--out", str(tmp_path / "out")]
    assert main([*argv, "--spill-compression", "lz4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["output"] == str(tmp_path / "out")
    assert spill_codecs
    assert set(spill_codecs) == {"lz4"}
