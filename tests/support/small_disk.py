"""A test's code run on a small, fresh file system (a full disk on demand)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def on_a_small_file_system(code: str, size: str = "400k") -> subprocess.CompletedProcess[str]:
    """Runs ``code`` with the directory ``/mnt/small`` a fresh file system of ``size``, in a
    mount namespace of its own (it vanishes with the process). Needs root, or user
    namespaces; the test skips without them, and CI (``MEMRESOLVE_REQUIRE_TMPFS=1``, as
    root) turns that skip into a failure."""
    script = (
        f"mkdir -p /mnt/small && mount -t tmpfs -o size={size} tmpfs /mnt/small && "
        'exec "$0" -c "$1"'
    )
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
    try:
        done = subprocess.run(
            [*command, sys.executable, textwrap.dedent(code)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    except FileNotFoundError:
        done = None
    if done is None or "mount:" in done.stderr or "unshare:" in done.stderr:
        why = "cannot mount a small file system here (needs root and unshare)"
        if os.environ.get("MEMRESOLVE_REQUIRE_TMPFS"):
            pytest.fail(why)
        pytest.skip(why)
    return done
