"""How the command stops (issue 35, findings 7 and 9): SIGINT, SIGTERM and SIGHUP stop a job
cleanly (exit 1, nothing left behind); SIGKILL leaves what the next run removes; a closed
pipe ends the command quietly (141); ``--threads`` is bounded; a NUL in a path is bad input.

Real processes and real signals: the command runs in a child, as a user runs it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memresolve as mr
from memresolve._cli._batch import THREADS_PER_CPU, available_cpus
from memresolve._cli._main import main
from memresolve._cli._stops import STOP_SIGNALS
from memresolve.testing.batch_store import Written, generate, write_parquet

pytestmark = [
    pytest.mark.skipif(mr.backend_name() != "native", reason="the jobs run on the compiled core"),
    # One worker runs the module: its store is generated once, by a module fixture.
    pytest.mark.xdist_group("cli-stops"),
]

COMMAND = [sys.executable, "-m", "memresolve"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """Big enough that a job under a small limit is still spilling when it is signalled."""
    return write_parquet(tmp_path_factory.mktemp("store"), 1_000_000, seed=9, chunk_records=250_000)


def _job(store: Written, tmp_path: Path) -> list[str]:
    return [
        *(*COMMAND, "batch", str(store.records), str(store.contexts)),
        *("--out", str(tmp_path / "out"), "--memory-limit", "700MB", "--with-values"),
        *("--spill-directory", str(tmp_path / "spill")),
    ]


def _leftovers(tmp_path: Path) -> list[str]:
    hidden = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    return sorted([*hidden, *(p.name for p in (tmp_path / "spill").iterdir())])


def _start_spilling(store: Written, tmp_path: Path) -> subprocess.Popen[str]:
    (tmp_path / "spill").mkdir(exist_ok=True)
    process = subprocess.Popen(
        _job(store, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while not any((tmp_path / "spill").rglob("*.arrows")) and process.poll() is None:
        assert time.monotonic() < deadline, "the job never spilled"
        time.sleep(0.01)
    assert process.poll() is None, "the job ended before it could be stopped"
    return process


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_regression_every_stop_signal_stops_cleanly(
    signum: int, store: Written, tmp_path: Path
) -> None:
    """SIGTERM (Kubernetes, systemd, ``docker stop``) left the spill (private values with
    ``--with-values``) and the hidden partial output; only Ctrl-C was cleaned up."""
    process = _start_spilling(store, tmp_path)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr
    assert "Traceback" not in stderr
    said = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    assert f"memresolve: {said}; nothing was written" in stderr
    assert stdout == ""
    assert not (tmp_path / "out").exists()
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("how", ["SIGKILL", "a second stop signal"])
def test_regression_a_killed_job_leaves_what_the_rerun_removes(
    how: str, store: Written, tmp_path: Path
) -> None:
    process = _start_spilling(store, tmp_path)
    if how == "SIGKILL":
        process.kill()
    else:  # a second while the first is handled (two of one kind would merge into one)
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGHUP)
    process.communicate(timeout=120)
    assert process.returncode in (-signal.SIGKILL, -signal.SIGTERM, -signal.SIGHUP)
    left = _leftovers(tmp_path)
    assert any(name.startswith("memresolve-spill-") for name in left), left
    assert any(name.startswith(".out.partial-") for name in left), left
    rerun = subprocess.run(
        _job(store, tmp_path), capture_output=True, text=True, check=False, timeout=300
    )
    assert rerun.returncode == 0, rerun.stderr
    assert _leftovers(tmp_path) == []


def test_the_command_restores_the_signal_handlers_it_installed(tmp_path: Path) -> None:
    """``main`` may run inside another program (a test runner, a notebook)."""
    story = Path(mr.__file__).parent / "_data" / "story"
    before = [signal.getsignal(s) for s in STOP_SIGNALS]
    argv = ["batch", str(story / "records.parquet"), str(story / "contexts.parquet")]
    assert main([*argv, "--out", str(tmp_path / "out"), "--json"]) == 0
    assert [signal.getsignal(s) for s in STOP_SIGNALS] == before


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Records and many contexts as JSON Lines: far more output than a pipe holds."""
    root = tmp_path_factory.mktemp("jsonl")
    generated = generate(3_000, seed=4)
    mr.write_records(mr.records_from_arrow(generated.records), root / "records.jsonl")
    contexts = [context for _, context in mr.contexts_from_arrow(generated.contexts)]
    mr.write_contexts(contexts * 20, root / "contexts.jsonl")
    return root / "records.jsonl", root / "contexts.jsonl"


@pytest.mark.parametrize("output", ["text", "json"])
def test_regression_a_closed_pipe_ends_the_command_quietly(
    output: str, jsonl: tuple[Path, Path]
) -> None:
    """``memresolve resolve ... | head -1`` printed "Broken pipe" and exited 2, the status
    of bad input; it now ends as a command killed by SIGPIPE would (141), saying nothing."""
    records, contexts = jsonl
    process = subprocess.Popen(
        [*COMMAND, "resolve", str(records), "--contexts", str(contexts), "--format", output],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    assert process.stdout.readline()  # what ``head -1`` reads, then it goes away
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=120) == 141, stderr
    assert stderr == ""


def test_a_closed_pipe_in_a_shell_pipeline(jsonl: tuple[Path, Path]) -> None:
    records, contexts = jsonl
    command = " ".join([*COMMAND, "resolve", str(records), "--contexts", str(contexts)])
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command} | head -1; echo status $?"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.stdout.splitlines()[-1] == "status 141"
    assert done.stderr == ""


@pytest.mark.parametrize("threads", ["99999999999", "100000", "0", "-1", "two", "9" * 40])
def test_regression_threads_are_bounded_with_a_clear_error(threads: str, tmp_path: Path) -> None:
    """``--threads 99999999999`` was an OverflowError traceback; ``--threads 100000`` was
    accepted and started that many threads, stalling the machine."""
    story = Path(mr.__file__).parent / "_data" / "story"
    for argv in (
        ["batch", str(story / "records.parquet"), str(story / "contexts.parquet")],
        ["normalize", str(story / "records.parquet"), "--now", "2026-07-30T00:00Z"],
        [
            "forget-sweep",
            str(story / "records.parquet"),
            "--tombstones",
            str(story / "tombstones.parquet"),
        ],
    ):
        done = subprocess.run(
            [*COMMAND, *argv, "--out", str(tmp_path / "out"), "--threads", threads],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert "argument --threads" in done.stderr
        assert "Traceback" not in done.stderr
        assert not (tmp_path / "out").exists()


def test_threads_up_to_four_times_the_available_cpus_are_taken(tmp_path: Path) -> None:
    story = Path(mr.__file__).parent / "_data" / "story"
    argv = [*COMMAND, "forget-sweep", str(story / "records.parquet")]
    argv += ["--tombstones", str(story / "tombstones.parquet"), "--out"]
    most = THREADS_PER_CPU * available_cpus()
    done = subprocess.run(
        [*argv, str(tmp_path / "a"), "--threads", str(most)], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    # The CPUs this process may use: a process pinned to one CPU may take four threads.
    one = subprocess.run(
        [*argv, str(tmp_path / "b"), "--threads", str(THREADS_PER_CPU + 1)],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}),
    )
    assert one.returncode == 2
    assert f"1 to {THREADS_PER_CPU} ({THREADS_PER_CPU} times the 1 CPUs" in one.stderr


@pytest.mark.parametrize("command", ["resolve", "batch", "normalize", "forget-sweep", "demo"])
def test_regression_a_nul_in_a_path_argument_exits_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A NUL cannot come from a shell's argv, but ``main`` takes any list: it was a bare
    ``ValueError`` ("embedded null byte")."""
    story = Path(mr.__file__).parent / "_data" / "story"
    bad = str(tmp_path / "a\x00b")
    argv = {
        "resolve": ["resolve", str(story / "records.jsonl"), "--contexts", bad],
        "batch": ["batch", str(story / "records.parquet"), bad, "--out", str(tmp_path / "o")],
        "normalize": [
            *("normalize", str(story / "records.parquet")),
            *("--now", "2026-07-30T00:00Z", "--out", bad),
        ],
        "forget-sweep": [
            *("forget-sweep", str(story / "records.parquet"), "--out", str(tmp_path / "o")),
            *("--tombstones", str(story / "tombstones.parquet"), "--spill-directory", bad),
        ],
        "demo": ["demo", "--store", bad],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "NUL" in err
    assert "Traceback" not in err
