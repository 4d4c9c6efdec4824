"""``memresolve.testing.peak_memory``: a command's peak memory, without its parent's.

Each case runs in a parent process of its own that first holds (or held) far more memory than
the command it measures, since that is what the benchmarks' parents do and what made CI see a
1 GB peak for a job that never passed 0.5 GB: ``ru_maxrss`` survives ``exec``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

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
    measured = run_measured(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    assert measured.timed_out
    assert measured.returncode != 0
    assert measured.seconds < 10


def test_an_address_space_cap_applies_to_the_command() -> None:
    from memresolve.testing.peak_memory import run_measured  # noqa: PLC0415

    grab = "bytearray(1 << 30)"
    capped = run_measured([sys.executable, "-c", grab], address_space=512 * MIB)
    assert capped.returncode != 0
    assert "MemoryError" in capped.stderr
    free = run_measured([sys.executable, "-c", "print('ok')"])
    assert (free.returncode, free.stdout.strip(), free.timed_out) == (0, "ok", False)
