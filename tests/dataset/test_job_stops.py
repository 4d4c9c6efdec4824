"""Every way a job stops cleans up (issue 35, finding 7), as the library sees it: the spill
directory and the hidden partial output are removed by the job's ``finally``, whatever
a host's signal handler raises; the library never takes over the host's signals; and what
a killed job leaves (SIGKILL, a SIGTERM the host did not handle) is removed by the next
job, which never touches a live job's directories nor anything memresolve did not create.

Real processes, real signals, real locks: each job that is stopped runs in a child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import memresolve as mr
from memresolve._dataset._owned import (
    LOCK_NAME,
    LOCK_TEXT,
    OLD,
    PARTIAL,
    SPILL,
    OwnedDirectory,
    sweep,
)
from memresolve._dataset._publish import MARKER
from memresolve.testing.batch_store import generate

pytestmark = pytest.mark.skipif(
    mr.backend_name() != "native", reason="the dataset jobs run on the compiled core"
)

STORE = generate(3_000, seed=8)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    for name in ("records", "contexts"):
        pq.write_table(getattr(STORE, name), tmp_path / f"{name}.parquet")
    (tmp_path / "spill").mkdir()
    (tmp_path / "outputs").mkdir()
    return tmp_path


def _leftovers(store: Path) -> list[str]:
    """What a job left behind: the spill directory's entries, hidden outputs."""
    return sorted(
        [f"spill/{p.name}" for p in (store / "spill").iterdir()]
        + [f"outputs/{p.name}" for p in (store / "outputs").iterdir() if p.name.startswith(".")]
    )


#: A child that starts a job which stops, mid-read, until it is signalled.
JOB = """
import os, signal, sys, time
import memresolve as mr
store = sys.argv[1]
{handler}
def progress(stage, done, total):
    if stage == "records":
        print("reading", flush=True)
        time.sleep(120)
try:
    mr.resolve_dataset(
        f"{{store}}/records.parquet", f"{{store}}/contexts.parquet", f"{{store}}/outputs/out",
        spill_directory=f"{{store}}/spill", parts=4, progress=progress,
    )
finally:
    print("finally", flush=True)
"""


def _start_job(store: Path, handler: str = "") -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(JOB.format(handler=handler)), str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line == "reading\n", process.communicate(timeout=60)
    return process


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_hosts_signal_handler_that_raises_gets_a_clean_stop(signum: int, store: Path) -> None:
    """A web server or task queue owns its signals: its handler raises, and the job's
    ``finally`` removes the spill (private values included) and the partial output."""
    handler = f"signal.signal({int(signum)}, lambda *_: sys.exit(7))"
    process = _start_job(store, handler)
    assert any((store / "spill").iterdir())
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 7, stderr
    assert "finally" in stdout
    assert _leftovers(store) == []


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_regression_a_killed_jobs_leftovers_are_removed_by_the_next_job(
    signum: int, store: Path
) -> None:
    """SIGKILL, or SIGTERM in a host that handles it not (the default kills), leaves the
    spill and the partial output; the next job (here, to another output) removes them."""
    process = _start_job(store)
    process.send_signal(signum)
    process.communicate(timeout=60)
    assert process.returncode == -signum
    left = _leftovers(store)
    assert [name for name in left if SPILL.fullmatch(name.split("/")[1])]
    assert [name for name in left if PARTIAL.fullmatch(name.split("/")[1])]
    mr.forget_sweep_dataset(
        store / "records.parquet", store / "outputs" / "other", spill_directory=store / "spill"
    )
    assert _leftovers(store) == []


def test_the_library_never_takes_over_the_hosts_signals(store: Path) -> None:
    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE)
    before = [signal.getsignal(s) for s in watched]
    during: list[object] = []

    def progress(stage: str, done: int, total: int | None) -> None:
        during.append([signal.getsignal(s) for s in watched])

    mr.resolve_dataset(
        store / "records.parquet",
        store / "contexts.parquet",
        store / "outputs" / "out",
        spill_directory=store / "spill",
        parts=3,
        progress=progress,
    )
    assert during
    assert all(handlers == before for handlers in during)
    assert [signal.getsignal(s) for s in watched] == before


LIVE = """
import sys, time
from pathlib import Path
from memresolve._dataset._owned import OwnedDirectory
owned = OwnedDirectory.create_spill(Path(sys.argv[1]))
print(owned.path.name, flush=True)
time.sleep(120)
"""


def test_a_live_jobs_directory_is_never_swept_and_a_dead_ones_is(tmp_path: Path) -> None:
    mine = OwnedDirectory.create_spill(tmp_path)  # this process's, alive
    (mine.path / "part.arrows").write_bytes(b"private")
    child = subprocess.Popen(
        [sys.executable, "-c", LIVE, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    with child.stdout:
        theirs = tmp_path / child.stdout.readline().strip()
    try:
        assert sweep(tmp_path, SPILL) == []
        assert (mine.path / "part.arrows").exists()
        assert theirs.is_dir()
    finally:
        child.kill()
        child.wait(timeout=60)
    assert sweep(tmp_path, SPILL) == [theirs]
    assert not theirs.exists()
    assert (mine.path / "part.arrows").exists()
    mine.remove()
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_leaves_what_memresolve_did_not_create(tmp_path: Path) -> None:
    names = [f"memresolve-spill-{n:012x}" for n in range(6)]
    (tmp_path / names[0]).mkdir()  # no lock file: made by hand, or by an older memresolve
    (tmp_path / names[1]).mkdir()
    (tmp_path / names[1] / LOCK_NAME).write_bytes(b"someone else's lock\n")
    (tmp_path / names[2]).mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / LOCK_NAME).write_bytes(LOCK_TEXT)
    (tmp_path / names[2] / LOCK_NAME).symlink_to(tmp_path / "elsewhere" / LOCK_NAME)
    (tmp_path / names[3]).symlink_to(tmp_path / "elsewhere")  # a link to a "spill"
    (tmp_path / names[4]).write_bytes(LOCK_TEXT)  # a file
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / names[5]).mkdir()
    (tmp_path / names[5] / LOCK_NAME).symlink_to(tmp_path / "fifo")  # must not block
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert sweep(tmp_path, SPILL) == []
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


OWN_AND_DIE = """
import sys
from pathlib import Path
from memresolve._dataset._owned import OwnedDirectory
OwnedDirectory.adopt(Path(sys.argv[1]))
"""


def test_an_old_output_a_killed_job_had_moved_aside_is_put_back(store: Path) -> None:
    """A job killed between moving the old output aside and putting the new one in place:
    the next job puts the old output back, where it was."""
    out = store / "outputs" / "out"
    mr.forget_sweep_dataset(store / "records.parquet", out)
    kept = sorted(p.name for p in out.iterdir())
    aside = store / "outputs" / ".out.old-0123456789ab"
    out.rename(aside)
    subprocess.run([sys.executable, "-c", OWN_AND_DIE, str(aside)], check=True, timeout=60)
    assert (aside / LOCK_NAME).exists()
    mr.forget_sweep_dataset(store / "records.parquet", store / "outputs" / "other")
    assert sorted(p.name for p in out.iterdir()) == kept
    assert MARKER in kept
    assert not aside.exists()
    # Once the new output had landed, the old one is what the dead job was removing.
    mr.forget_sweep_dataset(store / "records.parquet", store / "outputs" / "new")
    (store / "outputs" / "new").rename(aside)
    subprocess.run([sys.executable, "-c", OWN_AND_DIE, str(aside)], check=True, timeout=60)
    assert sweep(store / "outputs", OLD) == [aside]
    assert sorted(p.name for p in out.iterdir()) == kept
    assert _leftovers(store) == []


FULL_DISK = """
set -e
mount -t tmpfs -o size={size} memresolve-test "$1"
mkdir "$1/outputs"
set +e
"$2" -m memresolve batch "$3/records.parquet" "$3/contexts.parquet" --with-values \\
    --include-excluded --out "$1/outputs/out" --spill-directory "$4" \\
    --spill-compression zstd --memory-limit 580MiB --json
echo "status $?"
ls -A "$4" "$1/outputs"
"""


@pytest.fixture(scope="module")
def bigger_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200k records: a job that spills about 15 MB (zstd) in three parts and writes 4 MB."""
    root = tmp_path_factory.mktemp("bigger")
    store = generate(200_000, seed=8)
    pq.write_table(store.records, root / "records.parquet")
    pq.write_table(store.contexts, root / "contexts.parquet")
    return root


@pytest.mark.parametrize("filled", ["spill", "output"])
def test_a_full_disk_leaves_nothing(filled: str, bigger_store: Path, tmp_path: Path) -> None:
    """A real small file system (tmpfs, in a mount namespace of the child's own that
    vanishes with it) filled by the job's spill, or by its output: ENOSPC, exit 1, and
    neither spill nor partial output left behind."""
    mount = tmp_path / "small"
    mount.mkdir()
    spill = mount / "spill" if filled == "spill" else tmp_path / "spill"
    script = FULL_DISK.format(size="8m" if filled == "spill" else "2m")
    if filled == "spill":
        script = script.replace('mkdir "$1/outputs"', 'mkdir "$1/outputs" "$4"')
    else:
        spill.mkdir()
    done = subprocess.run(
        [
            *("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"),
            *(str(mount), sys.executable, str(bigger_store), str(spill)),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode != 0 or "status" not in done.stdout:
        reason = f"cannot mount a tmpfs here ({done.stderr.strip()[-300:]})"
        if os.environ.get("MEMRESOLVE_REQUIRE_TMPFS") == "1":
            pytest.fail(f"MEMRESOLVE_REQUIRE_TMPFS=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    status, _, listing = done.stdout.partition("status ")[2].partition("\n")
    assert status == "1", done.stderr
    assert "No space left on device" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(listing.split()) == sorted([f"{spill}:", f"{mount}/outputs:"]), listing


def test_every_job_removes_its_directories_when_it_fails(store: Path) -> None:
    statuses = STORE.records.column("status").cast("string").to_pylist()
    table = STORE.records.set_column(
        STORE.records.schema.get_field_index("status"),
        "status",
        pa.array([*statuses[:-1], "rumour"]),
    )
    bad = store / "bad.parquet"
    pq.write_table(table, bad)
    out, spill = store / "outputs" / "out", store / "spill"
    now = STORE.contexts.column("now")[0].as_py()
    jobs: list[Callable[[], object]] = [
        lambda: mr.resolve_dataset(bad, store / "contexts.parquet", out, spill_directory=spill),
        lambda: mr.normalize_dataset(bad, out, now=now, spill_directory=spill, parts=3),
        lambda: mr.forget_sweep_dataset(bad, out, spill_directory=spill),
    ]
    for job in jobs:
        with pytest.raises(mr.InvalidInputError) as caught:
            job()
        assert caught.value.field == "status"
        assert _leftovers(store) == []
