"""``memresolve.testing.peak_memory``: a command's peak memory, without its parent's.

Each case runs in a parent process of its own that first holds (or held) far more memory than
the command it measures, since that is what the benchmarks' parents do and what made CI see a
1 GB peak for a job that never passed 0.5 GB: ``ru_maxrss`` survives ``exec``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="VmHWM and exec rules: Linux")

MIB = 1 << 20
PARENT_HELD = 800 * MIB
CHILD_USES = 100 * MIB

# A parent that touched PARENT_HELD bytes, freed them (its peak stays), then measures a child
# that touches CHILD_USES bytes, three ways: naively, with run_measured, and as the child
# sees itself with own_peak_bytes.
_PARENT = textwrap.dedent(
    f"""
    import json, os, subprocess, sys
    from memresolve.testing.peak_memory import run_measured

    held = bytearray({PARENT_HELD})
    for at in range(0, len(held), 4096):
        held[at] = 1
    del held
    child = (
        "import json\\n"
        "from memresolve.testing.peak_memory import own_peak_bytes\\n"
        "used = bytearray({CHILD_USES})\\n"
        "for at in range(0, len(used), 4096): used[at] = 1\\n"
        "print(own_peak_bytes())\\n"
    )
    naive = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    seen_by_child = int(naive.stdout.read())
    _, _, usage = os.wait4(naive.pid, 0)
    measured = run_measured([sys.executable, "-c", child])
    print(json.dumps({{
        "naive": usage.ru_maxrss * 1024,
        "own": seen_by_child,
        "measured": measured.peak_bytes,
        "returncode": measured.returncode,
        "seconds": measured.seconds,
    }}))
    """
)


def test_the_parents_memory_does_not_count() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PARENT], capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout)
    # What the benchmarks measured before: the parent's peak, not the child's.
    assert seen["naive"] >= PARENT_HELD
    for way in ("own", "measured"):
        assert CHILD_USES <= seen[way] < CHILD_USES + 150 * MIB, (way, seen)
    assert seen["returncode"] == 0
    assert 0 < seen["seconds"] < 60


def test_a_command_past_its_time_is_killed_with_its_children() -> None:
    from memresolve.testing.peak_memory import run_measured  # noqa: PLC0415

    # The shell's child (sleep) must die too, or the call would wait for its pipes.
    started = time.perf_counter()
    measured = run_measured(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    assert time.perf_counter() - started < 10
    assert measured.timed_out
    assert measured.returncode != 0


def test_what_a_command_leaves_running_is_killed_when_it_ends() -> None:
    from memresolve.testing.peak_memory import run_measured  # noqa: PLC0415

    started = time.perf_counter()
    measured = run_measured(["sh", "-c", "sleep 30 & exit 3"], timeout=60)
    assert time.perf_counter() - started < 10
    assert (measured.returncode, measured.timed_out) == (3, False)


def _running(marker: str) -> bool:
    """Whether a ``sleep MARKER`` process runs."""
    wanted = f"sleep\0{marker}\0".encode()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                return True
        except OSError:
            continue  # it ended meanwhile
    return False


def test_an_interrupted_measurement_takes_the_command_along() -> None:
    """Ctrl-C on a terminal reaches the benchmark and the launcher, not the command's own
    session: the launcher must kill it, or it would run on, orphaned."""
    marker = f"{os.getpid()}.{time.monotonic_ns() % 1000}"
    script = (
        "from memresolve.testing.peak_memory import run_measured\n"
        f"run_measured(['sleep', '{marker}'])\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], start_new_session=True, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while not _running(marker):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    os.killpg(parent.pid, signal.SIGINT)  # what a terminal sends its foreground group
    assert parent.wait(timeout=30) != 0
    deadline = time.monotonic() + 10
    while _running(marker):
        assert time.monotonic() < deadline, "the command outlived the interrupted measurement"
        time.sleep(0.05)


def test_a_command_that_cannot_start_ends_with_127() -> None:
    from memresolve.testing.peak_memory import run_measured  # noqa: PLC0415

    measured = run_measured(["/nonexistent/memresolve-command"])
    assert measured.returncode == 127
    assert "nonexistent" in measured.stderr


def test_an_address_space_cap_applies_to_the_command() -> None:
    from memresolve.testing.peak_memory import run_measured  # noqa: PLC0415

    grab = "bytearray(1 << 30)"
    capped = run_measured([sys.executable, "-c", grab], address_space=512 * MIB)
    assert capped.returncode != 0
    assert "MemoryError" in capped.stderr
    free = run_measured([sys.executable, "-c", "print('ok')"])
    assert (free.returncode, free.stdout.strip(), free.timed_out) == (0, "ok", False)
