"""How the ``memresolve`` command stops: on a signal, or when its reader goes away.

**Signals.** The command owns its process, so it turns SIGTERM (``kill``, ``docker stop``,
Kubernetes, systemd) and SIGHUP (a closed terminal) into the clean stop Ctrl-C gets: the
handler raises ``Stopped``, a ``KeyboardInterrupt``, in the main thread, and the job's
``finally`` removes its spill and partial output; the exit status is 1, as for Ctrl-C,
with a message naming the signal. A second stop signal while the first is being handled
forces the stop (the signal's default action: the process dies by it), as a second Ctrl-C
does in most tools; what the job had not removed yet is removed by the next job (its lock
files say no process holds it). The library itself installs no handler: its hosts own their
signals. The previous handlers come back when the command returns (``main`` may run inside
another program).

**A closed pipe.** ``memresolve resolve ... | head -1``: once ``head`` exits, a write to
standard output fails with ``EPIPE`` (Python ignores SIGPIPE). The command then ends
quietly, with no message, with status 141 (128 + SIGPIPE), the status a shell reports for
``cat`` killed by SIGPIPE in the same pipe: with ``set -o pipefail`` the pipeline fails, as
it does with any other command there; without it, the pipeline's status is ``head``'s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["EXIT_BROKEN_PIPE", "STOP_SIGNALS", "Stopped", "quiet_stdout", "stop_signals"]

#: The signals the command stops cleanly on.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The exit status when standard output's reader went away: as if killed by SIGPIPE.
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, turned into Ctrl-C's clean stop."""

    def __init__(self, signum: int) -> None:
        self.signal = signal.Signals(signum)
        super().__init__(f"stopped by {self.signal.name}")


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """While the block runs, a stop signal raises in the main thread (``KeyboardInterrupt``
    for SIGINT, ``Stopped`` for the others), once; a second forces the stop. Elsewhere than
    in the main thread (where Python runs handlers) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        if received:  # a second one: the signal's own action, now
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        received.append(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def quiet_stdout() -> None:
    """Points standard output at ``/dev/null`` after its reader went away, so that the
    interpreter's last flush at exit does not fail again ("Exception ignored ...")."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
