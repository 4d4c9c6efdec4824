"""The store's background step: a wipe that another connection's read held back, and the
compaction of an ``erase_user`` a crash interrupted, retried on a thread of its own until
they succeed, so that what was erased leaves the file soon after whatever held it back
ends, even when the application makes no further call."""

from __future__ import annotations

import threading
from typing import Final

from memresolve._store._file import StoreFile

__all__ = ["Wiper"]

#: The first retry's delay, in seconds; each next one waits twice as long, up to the last.
FIRST_DELAY: Final = 0.05
LAST_DELAY: Final = 2.0


class Wiper:
    """Retries what the file's erasures leave to do without waiting for locks, under the
    store's lock, until nothing is left or the store is closed. A wipe is quick; a
    compaction (only after a crash interrupted one) holds the store's calls for as long
    as it runs, about a minute at 10M records."""

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
                    left, _ = self._file.finish(0.0, compact=True)
                except Exception:  # the store's own calls report file errors; this one retries
                    left = None
                if left is not None and not (left.unwiped or left.uncompacted):
                    self._file.record_outside_a_write()
                    return
            delay = min(delay * 2, LAST_DELAY)
