"""The batch job's output: Parquet files written in order on a thread of their own, as
many at once as the memory limit leaves room for."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memresolve._dataset._background import shut_down

__all__ = ["ROW_GROUP_BYTES", "OutputWriter", "encoding_bytes", "write_parquet"]

#: The most Arrow bytes in one row group of an output file. Parquet's writer holds a row
#: group's pages, encoded and compressed, until the group is written: with the default of
#: 1Mi rows a group of long texts held 298 MiB beside its 190 MiB table (measured). Cut
#: by bytes, it holds a group at a time, whatever the rows hold.
ROW_GROUP_BYTES = 64 * 2**20
#: Parquet's default rows in a group, kept where rows are short.
ROW_GROUP_ROWS = 2**20


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
        # Counted once: past a row group, encoding_bytes scans the table's text columns.
        held = int(table.nbytes) + encoding_bytes(table)
        while self._writing and (
            len(self._writing) >= self.IN_FLIGHT
            or reserved + self.writing_bytes() + held > self.budget
        ):
            self._wait_oldest()
        path = self.directory / f"part-{self.written:05d}.parquet"
        self._writing.append((held, self._thread.submit(_write_parquet, table, path)))
        self.written += 1

    def writing_bytes(self) -> int:
        """The bytes of the tables still being written, their encoding included."""
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


def encoding_bytes(table: Any) -> int:
    """What Parquet's writer holds beside ``table`` while it writes it: a row group's pages,
    encoded and compressed, at most about twice its Arrow bytes (text that does not
    compress: its encoded copy, and the compressed one). A group is at most
    ``ROW_GROUP_BYTES``, or one row larger than that."""
    size = int(table.nbytes)
    if size <= ROW_GROUP_BYTES:
        return 2 * size
    return 2 * min(size, max(ROW_GROUP_BYTES, _largest_row_bytes(table)))


def _largest_row_bytes(table: Any) -> int:
    """At least the Arrow bytes of ``table``'s largest row: its longest text in each text
    column, and every other column's widest value."""
    pa = __import__("pyarrow")
    pc = __import__("pyarrow.compute", fromlist=["binary_length"])
    total = 0
    for column in table.columns:
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
            longest = pc.max(pc.binary_length(column)).as_py()
            total += 8 + int(longest or 0)
        else:
            total += 16  # codes, numbers and times: a few bytes each
    return total


def row_groups(table: Any) -> Iterator[Any]:
    """``table`` in slices of at most ``ROW_GROUP_ROWS`` rows and ``ROW_GROUP_BYTES`` of
    Arrow (a row larger than that alone in its slice), cut by the bytes of the rows each
    slice holds: long rows anywhere in the table make smaller groups there only."""
    start, rows = 0, table.num_rows
    while start < rows:
        take = min(ROW_GROUP_ROWS, rows - start)
        piece = table.slice(start, take)
        while take > 1 and piece.nbytes > ROW_GROUP_BYTES:
            # In proportion to the bytes: strictly fewer rows each time.
            take = max(1, min(take - 1, take * ROW_GROUP_BYTES // int(piece.nbytes)))
            piece = table.slice(start, take)
        yield piece
        start += take


def write_parquet(table: Any, path: Path, dictionary: list[str] | bool = True) -> None:
    """Writes ``table`` to ``path``, in row groups of at most about ``ROW_GROUP_BYTES``
    (``row_groups``).

    zstd at level 1: as fast as snappy here, and half the size, since a record's id comes
    back in every context that sees it (10M records: 103 MB of output against 219 MB)."""
    pq = __import__("pyarrow.parquet", fromlist=["ParquetWriter"])
    with pq.ParquetWriter(
        str(path),
        table.schema,
        use_dictionary=dictionary,
        compression="zstd",
        compression_level=1,
    ) as writer:
        for group in row_groups(table):
            writer.write_table(group, row_group_size=group.num_rows)


def _write_parquet(table: Any, path: Path) -> None:
    # Dictionaries only where values repeat: a context's id repeats on each of its
    # rows, a record's id hardly ever (trying costs a fifth of the write).
    repeating = [
        name
        for name in ("context_id", "decision", "key", "certainty")
        if name in table.column_names
    ]
    write_parquet(table, path, repeating)
