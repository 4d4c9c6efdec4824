"""A process's own peak resident memory, without its parent's.

On Linux a process's peak resident set (``ru_maxrss``) survives ``exec``: it starts from
the address space the process had before it. A child started with ``vfork`` (what
``subprocess`` does whenever it can) shares its parent's address space until then, so its
``ru_maxrss`` is at least the parent's peak; a child started with ``fork`` gets a copy, so
at least the parent's resident memory at that moment. A benchmark or test that generated a
store, or hashed an output, before starting a job would lend that memory to the job's peak.

So a Python process reports its own peak with ``own_peak_bytes()`` (``VmHWM``: the peak of
the address space it has now, the one ``exec`` gave it), and a command of any kind is started
by ``run_measured()`` through this file run as a script: a fresh interpreter that imports
nothing but the standard library, starts the command, and reads the command's peak from
``wait4``. What it lends the command is its own resident memory, about 10 MB.

Only the standard library here: the launcher must stay small.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Measured", "own_peak_bytes", "resident_bytes", "run_measured"]


def own_peak_bytes() -> int:
    """This process's peak resident memory since its last ``exec``, in bytes.

    ``VmHWM`` from ``/proc/self/status`` on Linux; elsewhere ``ru_maxrss``, which may
    include the parent's memory as described above.
    """
    peak = _status_bytes("VmHWM")
    if peak is not None:
        return peak
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def resident_bytes() -> int:
    """This process's resident memory now, in bytes (``VmRSS``; 0 where there is none)."""
    return _status_bytes("VmRSS") or 0


def _status_bytes(field: str) -> int | None:
    """A memory ``field`` of ``/proc/self/status`` (Linux), in bytes."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class Measured:
    """How a command started by ``run_measured`` ended."""

    returncode: int
    seconds: float
    """Wall clock from starting the command to its end (its interpreter start included)."""
    peak_bytes: int
    """The command's peak resident memory (its parent's not included)."""
    stdout: str
    stderr: str
    timed_out: bool


def run_measured(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 3600.0,
    address_space: int = 0,
) -> Measured:
    """Runs ``command`` to its end (killed after ``timeout`` seconds) and measures it.

    ``address_space``, when positive, caps the command's address space (``RLIMIT_AS``)
    in bytes. The command's output is captured (undecodable bytes replaced). Whatever
    the command started is killed with it when it ends, times out or this call is
    interrupted. A command that cannot be started ends with status 127.
    """
    with tempfile.TemporaryDirectory() as directory:
        report = Path(directory) / "report.json"
        launcher = [sys.executable, "-I", __file__, str(report), str(timeout), str(address_space)]
        with subprocess.Popen(
            [*launcher, "--", *command],
            env=None if env is None else dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        ) as process:
            try:
                stdout, stderr = process.communicate()
            except BaseException:
                process.terminate()  # the launcher kills the command's group, then ends
                process.wait()
                raise
        if not report.exists():
            raise RuntimeError(f"the launcher failed (exit {process.returncode}): {stderr}")
        facts = json.loads(report.read_text())
    return Measured(
        returncode=facts["returncode"],
        seconds=facts["seconds"],
        peak_bytes=facts["peak_bytes"],
        stdout=stdout,
        stderr=stderr,
        timed_out=facts["timed_out"],
    )


def _launch(argv: list[str]) -> int:
    """The launcher: ``REPORT TIMEOUT ADDRESS_SPACE -- COMMAND...``."""
    report, timeout, address_space, separator, *command = argv
    if separator != "--" or not command:
        raise SystemExit("usage: peak_memory.py REPORT TIMEOUT ADDRESS_SPACE -- COMMAND...")
    cap = int(address_space)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    started = time.perf_counter()
    try:
        # A session of its own: the command and all it starts are killed as one group.
        process = subprocess.Popen(
            command,
            preexec_fn=limit if cap > 0 else None,  # noqa: PLW1509 - no thread runs yet
            start_new_session=True,
        )
    except OSError as error:
        print(f"{command[0]}: {error}", file=sys.stderr)
        facts = {"returncode": 127, "seconds": 0.0, "peak_bytes": 0, "timed_out": False}
        Path(report).write_text(json.dumps(facts))
        return 0
    fired = threading.Event()

    def kill_group() -> None:
        with contextlib.suppress(ProcessLookupError):  # nothing of it is left
            os.killpg(process.pid, signal.SIGKILL)

    def time_out() -> None:
        fired.set()
        kill_group()

    # Ctrl-C reaches this process, not the command's session: it takes the command along.
    for interruption in (signal.SIGINT, signal.SIGTERM):
        signal.signal(interruption, lambda *_: kill_group())
    timer = threading.Timer(float(timeout), time_out)
    timer.daemon = True
    timer.start()
    _, status, usage = os.wait4(process.pid, 0)  # blocking: the time is exact
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    timer.cancel()
    kill_group()  # what it left running (it would hold the output pipes open)
    peak = usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024
    facts = {
        "returncode": process.returncode,
        "seconds": seconds,
        "peak_bytes": peak,
        "timed_out": fired.is_set(),
    }
    Path(report).write_text(json.dumps(facts))
    return 0


if __name__ == "__main__":
    raise SystemExit(_launch(sys.argv[1:]))
