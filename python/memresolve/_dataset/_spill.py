"""Where the batch job keeps what does not fit in memory: parts, and id hashes.

``Parts`` holds the rows routed to each part of one input table (records,
contexts or tombstones): in memory when the job has one part, else in one
Arrow IPC stream per part, in a private temporary directory, written on a
thread of their own (``_background``) while the next batch is routed. Spill
files are uncompressed unless the job asks: a part is then mapped back in
place, not decoded: at 10M and 100M records the job took about two thirds
of the time it took with zstd (which spills a quarter of the bytes; lz4 was
slower than zstd on these columns).
``IdBuckets`` holds the 128-bit hash and row of every id, bucketed by hash,
so that ids can be checked unique across the whole input with one bucket in
memory at a time. Both only ever hold the columns resolution reads.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from memresolve._dataset._background import InOrder
from memresolve._io import pyarrow_module

__all__ = ["IdBuckets", "Parts", "compacted"]

#: Bytes of input batches the spill thread may keep alive while they wait to be written.
SPILL_QUEUE_BYTES: Final = 64 * 2**20
#: One id: its hash (two halves) and its row in the input.
_ID_DTYPE = [("high", "<u8"), ("low", "<u8"), ("row", "<u8")]


def _numpy() -> Any:
    import numpy  # noqa: PLC0415 - the batch job's optional dependency

    return numpy


def compacted(batch: Any) -> Any:
    """``batch`` with each dictionary column that holds more values than rows cut down to
    the values its rows use.

    A part taking a few rows of a batch would otherwise keep, and spill, the batch's whole
    dictionary (a row group's, for names read from Parquet): at most a dictionary per batch
    and part, so a store of many distinct names split in many parts would spill more than
    its plain strings. Compacted, a part's dictionary columns never hold more values than
    rows. Dictionaries no larger than the rows are kept whole: consecutive batches share
    them, and the spill writes each once.
    """
    pa = pyarrow_module()
    columns = list(batch.columns)
    changed = False
    for position, column in enumerate(columns):
        if pa.types.is_dictionary(column.type) and len(column.dictionary) > len(column):
            pc = __import__("pyarrow.compute", fromlist=["unique"])
            used = pc.unique(column.indices.drop_null())
            indices = pc.index_in(column.indices, value_set=used).cast(column.type.index_type)
            columns[position] = pa.DictionaryArray.from_arrays(
                indices, column.dictionary.take(used)
            )
            changed = True
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema) if changed else batch


class Parts:
    """The rows of one input table, part by part."""

    def __init__(
        self,
        name: str,
        parts: int,
        directory: Path | None,
        split: int = 0,
        *,
        compression: str | None = None,
    ) -> None:
        # Named by input, split depth and a token: parts split again live
        # beside the ones they came from.
        self.name = f"{name}-{split}-{uuid.uuid4().hex[:8]}"
        self.parts = parts
        self.directory = directory
        self.compression = compression
        self.rows = [0] * parts
        self.bytes = [0] * parts
        self._schema: Any = None
        self._writers: dict[int, Any] = {}
        self._sinks: dict[int, Any] = {}
        self._memory: dict[int, list[Any]] = {}
        #: Spill writes, in order, off the routing thread (the batches they keep alive:
        #: bounded in number and bytes, within what the jobs set aside for batches in flight).
        self._background = (
            None if directory is None else InOrder("spill", depth=8, max_weight=SPILL_QUEUE_BYTES)
        )

    def _path(self, part: int) -> Path:
        assert self.directory is not None
        return self.directory / f"{self.name}-{part:05d}.arrows"

    def add_routed(self, batch: Any, rows: bytes, ends: bytes) -> None:
        """Appends the rows of ``batch`` a router grouped by part: ``rows`` (native-endian
        ``u32`` row numbers, part after part) and where each part's rows end."""
        np = _numpy()
        taken = np.frombuffer(rows, dtype=np.uint32)
        if self.parts == 1 and len(taken) == batch.num_rows:
            self.add(0, batch)  # every row, in order: no copy
            return
        stops = np.frombuffer(ends, dtype=np.uint32).astype(np.int64)
        starts = np.concatenate(([0], stops[:-1]))
        if self._background is None:
            for part in np.flatnonzero(stops > starts):
                self.add(int(part), compacted(batch.take(taken[starts[part] : stops[part]])))
            return
        # Spilled: each part's rows are copied out on the spill thread, as they are written.
        batch = self._conformed(batch)
        for part in np.flatnonzero(stops > starts).tolist():
            rows = taken[starts[part] : stops[part]]
            self.rows[part] += len(rows)
            # Each part's call keeps the batch alive: it weighs its share of it.
            share = batch.nbytes * len(rows) // max(1, batch.num_rows)
            self._background.submit(self._take_and_write, part, batch, rows, weight=share)

    def add(self, part: int, batch: Any) -> None:
        """Appends ``batch`` (rows of this table) to ``part``."""
        batch = self._conformed(batch)
        self.rows[part] += batch.num_rows
        if self._background is None:
            self.bytes[part] += batch.nbytes
            self._memory.setdefault(part, []).append(batch)
            return
        self._background.submit(self._write, part, batch, weight=batch.nbytes)

    def _conformed(self, batch: Any) -> Any:
        """``batch`` in this table's schema (its first batch's)."""
        if self._schema is None:
            self._schema = batch.schema
        elif batch.schema != self._schema:
            batch = pyarrow_module().RecordBatch.from_arrays(
                [
                    column.cast(field.type)
                    for column, field in zip(batch.columns, self._schema, strict=True)
                ],
                schema=self._schema,
            )
        return batch

    def _take_and_write(self, part: int, batch: Any, rows: Any) -> None:
        self._write(part, compacted(batch.take(rows)))

    def _write(self, part: int, batch: Any) -> None:
        """Appends ``batch`` to the spill file of ``part`` (on the spill thread; ``bytes``
        is counted there too, and read once the spill is closed)."""
        self.bytes[part] += batch.nbytes
        writer = self._writers.get(part)
        if writer is None:
            pa = pyarrow_module()
            sink = pa.OSFile(str(self._path(part)), "wb")
            options = pa.ipc.IpcWriteOptions(compression=self.compression)
            writer = pa.ipc.new_stream(sink, self._schema, options=options)
            self._writers[part], self._sinks[part] = writer, sink
        writer.write_batch(batch)

    def close(self, *, discard: bool = False) -> None:
        """Finishes every spill file (call once all rows are added); raises a failed write.

        ``discard``: the job failed; its files are dropped, and nothing more is raised.
        """
        background, self._background = self._background, None
        if background is not None:
            try:
                if not discard:
                    background.wait()
            finally:
                background.close()
        try:
            for writer in self._writers.values():
                writer.close()
            for sink in self._sinks.values():
                sink.close()
        except Exception:
            if not discard:
                raise
        finally:
            self._writers.clear()
            self._sinks.clear()

    def spilled_bytes(self) -> int:
        """The size of the spill files on disk."""
        return sum(path.stat().st_size for path in self._paths())

    def _paths(self) -> Iterator[Path]:
        if self.directory is not None:
            for part in range(self.parts):
                if self.rows[part]:
                    yield self._path(part)

    def table(self, part: int, schema: Any = None) -> Any:
        """The rows of ``part`` as one table (``schema``, or this table's, when it has none)."""
        pa = pyarrow_module()
        schema = self._schema if self._schema is not None else schema
        if not self.rows[part]:
            return None if schema is None else schema.empty_table()
        if self.directory is None:
            return pa.Table.from_batches(self._memory[part], schema=self._schema)
        with pa.memory_map(str(self._path(part))) as source:
            return pa.ipc.open_stream(source).read_all()

    def batches(self, part: int) -> Iterator[Any]:
        """The rows of ``part``, batch by batch, as they were added."""
        pa = pyarrow_module()
        if not self.rows[part]:
            return
        if self.directory is None:
            yield from self._memory[part]
            return
        with pa.memory_map(str(self._path(part))) as source:
            yield from pa.ipc.open_stream(source)

    def remove(self, part: int) -> None:
        """Frees ``part`` once it is resolved."""
        self._memory.pop(part, None)
        if self.directory is not None and self.rows[part]:
            self._path(part).unlink(missing_ok=True)


class IdBuckets:
    """The hash and row of every id of one input table, bucketed by hash."""

    def __init__(self, name: str, directory: Path, buckets: int = 64) -> None:
        self.name = name
        self.directory = directory
        self.buckets = buckets
        self.count = 0
        self._files = [
            (directory / f"{name}-ids-{bucket:03d}.bin").open("wb") for bucket in range(buckets)
        ]

    def add(self, hashes: bytes, first_row: int) -> None:
        """Appends the ids of rows ``first_row..`` (``hashes``: two ``u64`` per row)."""
        np = _numpy()
        halves = np.frombuffer(hashes, dtype=np.uint64).reshape(-1, 2)
        # Bucket numbers as bytes: numpy's stable sort of bytes is a radix sort, four
        # times as fast as the merge sort it does for wider integers.
        small = np.uint8 if self.buckets <= 256 else np.uint32
        bucket_of = (halves[:, 0] % np.uint64(self.buckets)).astype(small)
        order = np.argsort(bucket_of, kind="stable")  # rows stay in order within a bucket
        entries = np.empty(len(halves), dtype=_ID_DTYPE)
        entries["high"], entries["low"] = halves[order, 0], halves[order, 1]
        entries["row"] = order.astype(np.uint64) + np.uint64(first_row)
        ends = np.cumsum(np.bincount(bucket_of, minlength=self.buckets))
        data = memoryview(entries.view(np.uint8))
        start = 0
        for bucket, end in enumerate(ends.tolist()):
            if end > start:
                self._files[bucket].write(data[start * entries.itemsize : end * entries.itemsize])
            start = end
        self.count += len(halves)

    def close(self) -> None:
        """Finishes the bucket files (again: no harm)."""
        for file in self._files:
            file.close()

    def first_repeat(self) -> tuple[int, int] | None:
        """``(earlier, later)`` rows of the repeated id with the smallest later row, or None."""
        np = _numpy()
        self.close()
        best: tuple[int, int] | None = None
        for bucket in range(self.buckets):
            path = self.directory / f"{self.name}-ids-{bucket:03d}.bin"
            entries = np.fromfile(path, dtype=_ID_DTYPE)
            os.unlink(path)
            if len(entries) < 2:
                continue
            # Most buckets repeat nothing: sorting the high halves alone (a plain
            # integer sort) shows it; only entries whose high half repeats go on.
            high = np.sort(entries["high"])
            repeated = high[1:][high[1:] == high[:-1]]
            if not len(repeated):
                continue
            entries = entries[np.isin(entries["high"], repeated)]
            entries.sort(order=["high", "low", "row"])
            same = (entries["high"][1:] == entries["high"][:-1]) & (
                entries["low"][1:] == entries["low"][:-1]
            )
            if not same.any():
                continue
            # A run of equal hashes starts where the previous entry differs; the
            # run's second row (rows ascend within it) repeats its first.
            starts = np.concatenate(([True], ~same))[:-1]
            repeats = np.flatnonzero(starts & same)
            laters = entries["row"][repeats + 1]
            first = int(np.argmin(laters))
            earlier, later = int(entries["row"][repeats[first]]), int(laters[first])
            if best is None or later < best[1]:
                best = (earlier, later)
        return best
