"""The inputs of the batch job, read batch by batch: Parquet files, directories, Arrow streams.

A ``Source`` yields ``(file, first row within the file, batch)`` with only the
columns resolution reads, in batches of at most ``BATCH_ROWS`` rows, and never
holds a whole input. Every failure of a Parquet file (not Parquet, corrupt or
truncated bytes, a column whose type differs between files, a file changed while
it is read) is ``InvalidInputError`` naming the file (``_parquet_input``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from memresolve._dataset._background import read_ahead
from memresolve._io import (
    ParquetInput,
    arrow_source,
    column_names,
    lists_an_item,
    mended,
    parquet_files,
    plain,
    pyarrow_module,
    stream_failed,
    validated,
)
from memresolve._model import arguments
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["BATCH_ROWS", "STREAM", "Source", "in_file"]

Checked = TypeVar("Checked")

#: Rows per batch handed to the router: big enough to amortise a call, small
#: enough that a batch and its routed copies are a few tens of megabytes.
BATCH_ROWS = 65_536
#: Fewer rows per Parquet batch when rows are wide (large values read with
#: ``with_values``): the batches decoded ahead stay within a few of these.
BATCH_BYTES = 32 * 2**20
#: Rows per batch, at least (a call into the router has a fixed cost).
MIN_BATCH_ROWS = 1_024
#: The ``file`` of rows that came from an Arrow stream rather than a file.
STREAM = "<stream>"


class Source:
    """One input of the job (``records``, ``contexts`` or ``tombstones``)."""

    def __init__(self, data: object, what: str, columns: tuple[str, ...]) -> None:
        pa = pyarrow_module()
        self.what = what
        self._files: list[tuple[str, int]] = []  # (file, first row in the whole input)
        # Each Parquet file. A file is opened only while it is read: an open reader keeps
        # the file's buffers, as much memory as the file.
        self._dataset: list[ParquetInput] | None = None
        self._stream: Any = None
        self._table: Any = None  # an input already in memory: rows can be read again
        self._per_row: float | None = None
        if isinstance(data, str | os.PathLike):
            self._dataset = parquet_files(arguments.path(data, what), what)
            self.schema = self._dataset[0].metadata.schema.to_arrow_schema()
        else:
            source = arrow_source(data, what)
            if isinstance(source, pa.RecordBatch):
                source = pa.Table.from_batches([source])
            if isinstance(source, pa.Table):
                # Checked whole before it is exported as a stream: pyarrow's export of a
                # table with a column shorter than the table crashes the interpreter.
                self._table = source = validated(plain(mended(source), what), what)
            if not hasattr(source, "__arrow_c_stream__"):
                raise InvalidInputError(
                    f"{what}: expected a Parquet file or directory, or an Arrow table or stream,"
                    f" got {type(data).__name__}",
                    kind=ErrorKind.WRONG_TYPE,
                    field=what,
                )
            try:
                self._stream = pa.RecordBatchReader.from_stream(source)
            except Exception as exc:  # whatever the producer raised
                raise InvalidInputError(
                    f"{what}: expected an Arrow table or stream, got {type(data).__name__}"
                    f" ({type(exc).__name__}: {exc})",
                    kind=ErrorKind.WRONG_TYPE,
                    field=what,
                ) from exc
            self.schema = self._stream.schema
        self.wanted = columns
        try:
            present = column_names(self.schema, what)
        except InvalidInputError as error:  # the first file's fault: named with it
            raise (in_file(self._dataset[0].name, error) if self._dataset else error) from None
        self.columns = [name for name in columns if name in present]

    def reads(self, column: str) -> bool:
        """Whether ``column`` is among the columns this input reads (from every file that
        has it; a file without it reads it as null)."""
        return column in self.wanted

    def may_list(self, column: str) -> bool:
        """Whether some row of the list ``column`` holds an item, found before the rows the
        job reads: in files and in memory, from that column alone (each file with its own
        columns; read again later, and checked then); a stream is read whole here and
        replayed (an input read whole by every part anyway: the tombstones)."""
        pa = pyarrow_module()
        if self._table is not None:
            return column in self.columns and lists_an_item(self._table.column(column))
        if self._dataset is None:
            if column not in self.columns:
                return False
            held = list(iter(self._next_batch, None))
            self._stream = pa.RecordBatchReader.from_batches(self.schema, held)
            return any(
                lists_an_item(
                    validated(plain(mended(b.select([column])), self.what), self.what).column(0)
                )
                for b in held
            )
        try:
            for file in self._dataset:
                if column in self._columns_of(file.metadata) and any(
                    lists_an_item(batch.column(0))
                    for batch in file.batches([column], self.batch_rows())
                ):
                    return True
        except InvalidInputError:
            return True  # reported in its turn, when the input is read
        return False

    @property
    def is_files(self) -> bool:
        return self._dataset is not None

    def total_rows(self) -> int | None:
        """The rows of the input: from the Parquet metadata, or an in-memory table's (None:
        a stream, not known until it is read)."""
        if self._dataset is not None:
            return sum(file.rows for file in self._dataset)
        if self._table is not None:
            return int(self._table.num_rows)
        return None

    def estimated_bytes(self) -> int | None:
        """The size in Arrow of the columns read, estimated (None: a stream, size unknown).

        Rows come from the Parquet metadata; bytes per row from a first batch
        read as Arrow. (The metadata's "uncompressed" sizes are of Parquet's
        encodings: a dictionary-encoded id column is a fraction of its Arrow size.)
        """
        rows = self.total_rows() if self._dataset is not None else None
        if rows is None:
            return None
        return math.ceil(rows * self._bytes_per_row())

    def _bytes_per_row(self) -> float:
        """Arrow bytes per row of the columns read, from a sample of the first rows."""
        if self._per_row is None:
            self._per_row = 0.0
            for file in self._dataset or ():
                if file.rows:
                    columns = self._columns_of(file.metadata)
                    # The first 8,192 rows, not the whole row group: it may be large.
                    sample, group_rows = file.first_rows(columns, 8_192)
                    self._per_row = _sample_bytes(sample, group_rows) / max(1, sample.num_rows)
                    break
        return self._per_row

    def batch_rows(self) -> int:
        """Rows per Parquet batch: ``BATCH_ROWS``, fewer for rows wider than ``BATCH_BYTES``
        spread over as many."""
        fitting = int(BATCH_BYTES / max(1.0, self._bytes_per_row()))
        return max(MIN_BATCH_ROWS, min(BATCH_ROWS, fitting))

    def batches(self) -> Iterator[tuple[str, int, Any]]:
        """``(file, first row of the batch within that file, batch)``, in input order."""
        if self._dataset is None:
            yield from self._stream_batches()
            return
        # Decoding the next batches (GIL released) overlaps the caller's work on this one.
        with read_ahead(self._file_batches(self._dataset)) as batches:
            yield from batches

    def _columns_of(self, metadata: Any) -> list[str]:
        """The columns read that the file of ``metadata`` has (each file is read with its
        own columns and types, and checked as it is: a column it lacks, a type only it
        has, are its own faults)."""
        present = set(column_names(metadata.schema.to_arrow_schema(), self.what))
        return [column for column in self.wanted if column in present]

    def _file_batches(self, dataset: list[ParquetInput]) -> Iterator[tuple[str, int, Any]]:
        pa = pyarrow_module()
        rows = 0
        batch_rows = self.batch_rows()
        for file in dataset:
            name = file.name
            self._files.append((name, rows))
            offset = 0
            try:
                columns = self._columns_of(file.metadata)
                for batch in file.batches(columns, batch_rows):
                    if batch.num_rows:
                        yield name, offset, batch
                        offset += batch.num_rows
                if offset == 0:  # no rows: its columns are checked all the same
                    arrow_schema = file.metadata.schema.to_arrow_schema()
                    schema = pa.schema([arrow_schema.field(c) for c in columns])
                    yield name, 0, _no_rows(schema)
            except InvalidInputError as error:
                raise (error if error.file else in_file(name, error)) from None
            rows += offset

    def _next_batch(self) -> Any:
        """The stream's next batch (None at its end); a failure of the stream is named."""
        try:
            return self._stream.read_next_batch()
        except StopIteration:
            return None
        except Exception as exc:  # whatever the stream raised
            raise stream_failed(self.what, exc) from exc

    def _stream_batches(self) -> Iterator[tuple[str, int, Any]]:
        self._files.append((STREAM, 0))
        offset = 0
        for read in iter(self._next_batch, None):
            # Mended for the spill: each batch is written to an IPC file as it is.
            selected = mended(read.select(self.columns), to_spill=True)
            batch = validated(plain(selected, self.what), self.what)
            for start in range(0, batch.num_rows, BATCH_ROWS):
                piece = batch.slice(start, BATCH_ROWS)
                yield STREAM, offset, piece
                offset += piece.num_rows

    def checked(self, check: Callable[[Any, int], Checked]) -> Iterator[tuple[str, Any, Checked]]:
        """Each batch of this input, with its file's name and what ``check(batch, first row)``
        made of it (the native router or checker: it refuses a batch that breaks a rule of
        the batch form, and the refusal is made to name the file and the row in it). An
        input of no rows is checked all the same, as one empty batch: a missing or mistyped
        column is refused whether or not there are rows."""
        rows = 0
        for name, offset, batch in self.batches():
            try:
                made = check(batch, offset)
            except InvalidInputError as error:
                raise in_file(name, error) from None
            rows += batch.num_rows
            yield name, batch, made
        if rows == 0:
            check(self.empty(), 0)

    def refuse_repeats(self, repeat: tuple[int, int] | None, column: str) -> None:
        """Refuses the input if ``repeat`` (the earlier and the later row of the first value
        of ``column`` seen twice, over the whole input) is not None, naming both places."""
        if repeat is None:
            return
        earlier, later = repeat
        name, row = self.place(later)
        earlier_name, earlier_row = self.place(earlier)
        where = (
            f"row {earlier_row}" if earlier_name == name else f"row {earlier_row} of {earlier_name}"
        )
        value = self.value_at(column, later) if column == "id" else None
        error = InvalidInputError(
            f"{self.what}: column {column!r} row {row} repeats the {column} of {where}",
            kind=ErrorKind.DUPLICATE_ID,
            field=column,
            row=row,
            record_id=value if isinstance(value, str) else None,
        )
        raise in_file(name, error)

    def empty(self) -> Any:
        """A batch with no rows and the columns read (to check a table that has none)."""
        pa = pyarrow_module()
        return _no_rows(pa.schema([self.schema.field(name) for name in self.columns]))

    def place(self, row: int) -> tuple[str, int]:
        """The file, and the row within it, of the whole input's ``row``."""
        name, first = self._files[0]
        for candidate, start in self._files:
            if start > row:
                break
            name, first = candidate, start
        return name, row - first

    def value_at(self, column: str, row: int) -> object:
        """The value of ``column`` at the whole input's ``row`` (None: a stream, read once)."""
        if self._table is not None:
            return self._table.column(column)[row].as_py()
        if self._dataset is None:
            return None
        name, within = self.place(row)
        file = next(file for file in self._dataset if file.name == name)
        return file.value_at(column, within)


def _no_rows(schema: Any) -> Any:
    """A batch of ``schema`` with no rows. Not ``from_pylist([])``: pyarrow has no converter
    from Python for some types the readers accept (a dictionary of string views)."""
    pa = pyarrow_module()
    return pa.RecordBatch.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)


def _sample_bytes(sample: Any, group_rows: int) -> float:
    """The Arrow bytes of a sample's rows: a dictionary column's indices, and its share of
    the dictionary the rest of its row group (``group_rows`` rows) shares."""
    pa = pyarrow_module()
    share = min(1.0, sample.num_rows / max(1, group_rows))
    total = 0.0
    for column in sample.columns:
        if pa.types.is_dictionary(column.type):
            total += column.indices.nbytes + column.dictionary.nbytes * share
        else:
            total += column.nbytes
    return total


def in_file(name: str, error: InvalidInputError) -> InvalidInputError:
    """``error``, about a row of the file ``name``, saying so."""
    if name == STREAM:
        return error
    return InvalidInputError(
        f"{name}: {error}",
        kind=error.kind,
        record_id=error.record_id,
        field=error.field,
        row=error.row,
        file=name,
    )
