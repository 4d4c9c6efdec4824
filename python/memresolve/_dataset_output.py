"""The batch job's output: Parquet files written in order on a thread of their own, as
many at once as the memory limit leaves room for."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memresolve._background import shut_down

__all__ = ["OutputWriter"]


class OutputWriter:
    """Writes tables as ``part-NNNNN.parquet`` files of ``directory``, in order.

    A write runs on the writer thread while the job goes on. A table waits for earlier
    writes until at most ``IN_FLIGHT`` are left and the bytes the job holds for itself
    (``reserved``), the tables still being written and the new one fit in ``budget``: a
    writer slower than the job must slow it down, not let finished output pile up.
    A failed write is raised by the next call that looks at it.
    """

    #: Tables written or waiting at once: one written while the next waits.
    IN_FLIGHT = 2

    def __init__(self, directory: Path, budget: int) -> None:
        self.directory = directory
        self.budget = budget
        #: How many files were started.
        self.written = 0
        self._thread = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="memresolve-write-output"
        )
        self._writing: deque[tuple[int, Future[None]]] = deque()

    def write(self, table: Any, reserved: int = 0) -> None:
        """Writes ``table`` as the next file, on the writer thread."""
        self._reap()
        while self._writing and (
            len(self._writing) >= self.IN_FLIGHT
            or reserved + self.writing_bytes() + table.nbytes > self.budget
        ):
            self._wait_oldest()
        path = self.directory / f"part-{self.written:05d}.parquet"
        self._writing.append((int(table.nbytes), self._thread.submit(_write_parquet, table, path)))
        self.written += 1

    def writing_bytes(self) -> int:
        """The bytes of the tables still being written."""
        self._reap()
        return sum(size for size, _ in self._writing)

    def wait(self) -> None:
        """Waits for every write; raises the first failure."""
        while self._writing:
            self._wait_oldest()

    def stop(self) -> None:
        """Drops the writes not started and waits for the one running."""
        self._writing.clear()
        shut_down(self._thread)

    def _reap(self) -> None:
        while self._writing and self._writing[0][1].done():
            self._wait_oldest()

    def _wait_oldest(self) -> None:
        _, write = self._writing.popleft()
        write.result()


def _write_parquet(table: Any, path: Path) -> None:
    pq = __import__("pyarrow.parquet", fromlist=["write_table"])
    # Dictionaries only where values repeat: a context's id repeats on each of its
    # rows, a record's id hardly ever (trying costs a fifth of the write).
    repeating = [
        name
        for name in ("context_id", "decision", "key", "certainty")
        if name in table.column_names
    ]
    pq.write_table(table, str(path), use_dictionary=repeating)
