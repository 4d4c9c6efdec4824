"""The store's background step: a wipe that another connection's read held back, retried on
a thread of its own until it succeeds, so that erased text leaves the file soon after the
read ends even when the application makes no further call."""

from __future__ import annotations

import threading
from typing import Final

from memresolve._store_file import StoreFile

__all__ = ["Wiper"]

#: The first retry's delay, in seconds; each next one waits twice as long, up to the last.
FIRST_DELAY: Final = 0.05
LAST_DELAY: Final = 2.0


class Wiper:
    """Retries the file's pending wipe without waiting for locks (a turn is never stalled
    behind it), under the store's lock, until none is pending or the store is closed."""

    def __init__(self, file: StoreFile) -> None:
        self._file = file
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self) -> None:
        """Starts retrying, unless a retry thread is already at it or the store closed."""
        if self._stop.is_set() or (self._thread is not None and self._thread.is_alive()):
            return
        self._thread = threading.Thread(target=self._run, name="memresolve-wipe", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops retrying for good (the store is closing: it makes its own last attempt).
        Called without the store's lock, which the thread may be waiting for."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        delay = FIRST_DELAY
        while not self._stop.wait(delay):
            with self._file.lock:
                if self._file.closed:
                    return
                try:
                    left, _ = self._file.finish(0.0, compact=False)
                except Exception:  # the store's own calls report file errors; this one retries
                    left = None
                if left is not None and not left.unwiped:
                    self._file.record_outside_a_write()
                    return
            delay = min(delay * 2, LAST_DELAY)
