"""The inputs of the batch job, read batch by batch: Parquet files, directories, Arrow streams.

A ``Source`` yields ``(file, first row within the file, batch)`` with only the
columns resolution reads, in batches of at most ``BATCH_ROWS`` rows, and never
holds a whole input. Errors of the Parquet reader (a file that is not Parquet,
a column whose type differs between files) become ``InvalidInputError``
naming the file.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memresolve._arrow_input import (
    arrow_source,
    column_names,
    mended,
    plain,
    pyarrow_module,
    validated,
)
from memresolve._background import read_ahead
from memresolve._canonical import NAME_COLUMNS
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["BATCH_ROWS", "STREAM", "Source", "in_file"]

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
        # (name, metadata) of each Parquet file. A file is opened only while it is
        # read: an open reader keeps the file's buffers, as much memory as the file.
        self._dataset: list[tuple[str, Any]] | None = None
        self._stream: Any = None
        self._table: Any = None  # an input already in memory: rows can be read again
        self._per_row: float | None = None
        if isinstance(data, str | os.PathLike):
            self._dataset = _parquet_files(Path(data), what)
            self.schema = self._dataset[0][1].schema.to_arrow_schema()
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
            raise (in_file(self._dataset[0][0], error) if self._dataset else error) from None
        self.columns = [name for name in columns if name in present]

    @property
    def is_files(self) -> bool:
        return self._dataset is not None

    def total_rows(self) -> int | None:
        """The rows of the input: from the Parquet metadata, or an in-memory table's (None:
        a stream, not known until it is read)."""
        if self._dataset is not None:
            return sum(int(metadata.num_rows) for _, metadata in self._dataset)
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
            for name, metadata in self._dataset or ():
                if metadata.num_rows:
                    columns = self._columns_of(metadata)
                    with _parquet().ParquetFile(
                        name, read_dictionary=_names(metadata, columns)
                    ) as file:
                        # The first 8,192 rows, not the whole row group: it may be large.
                        sample = next(file.iter_batches(batch_size=8_192, columns=columns))
                    group_rows = metadata.row_group(0).num_rows
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

    def _file_batches(self, dataset: list[tuple[str, Any]]) -> Iterator[tuple[str, int, Any]]:
        pa = pyarrow_module()
        rows = 0
        batch_rows = self.batch_rows()
        for name, metadata in dataset:
            self._files.append((name, rows))
            offset = 0
            try:
                columns = self._columns_of(metadata)
                with _parquet().ParquetFile(
                    name, read_dictionary=_names(metadata, columns)
                ) as file:
                    for batch in file.iter_batches(batch_size=batch_rows, columns=columns):
                        if batch.num_rows:
                            yield name, offset, batch
                            offset += batch.num_rows
                    if offset == 0:  # no rows: its columns are checked all the same
                        schema = pa.schema([file.schema_arrow.field(c) for c in columns])
                        yield name, 0, _no_rows(schema)
            except InvalidInputError as error:
                raise (error if error.file else in_file(name, error)) from None
            except (
                pa.ArrowInvalid,
                pa.ArrowTypeError,
                pa.ArrowNotImplementedError,
                KeyError,
                ValueError,
            ) as exc:
                raise InvalidInputError(
                    f"{name}: {self.what}: the file cannot be read as this input"
                    f" ({type(exc).__name__}: {exc})",
                    kind=ErrorKind.MALFORMED,
                    field=self.what,
                    file=name,
                ) from exc
            rows += offset

    def _stream_batches(self) -> Iterator[tuple[str, int, Any]]:
        self._files.append((STREAM, 0))
        offset = 0
        while True:
            try:
                batch = self._stream.read_next_batch()
            except StopIteration:
                return
            except Exception as exc:  # whatever the stream raised
                if _interrupted(exc):
                    raise KeyboardInterrupt from exc
                raise InvalidInputError(
                    f"{self.what}: the Arrow stream failed: {type(exc).__name__}: {exc}",
                    kind=ErrorKind.MALFORMED,
                    field=self.what,
                ) from exc
            # Mended for the spill: each batch is written to an IPC file as it is.
            selected = mended(batch.select(self.columns), to_spill=True)
            batch = validated(plain(selected, self.what), self.what)
            for start in range(0, batch.num_rows, BATCH_ROWS):
                piece = batch.slice(start, BATCH_ROWS)
                yield STREAM, offset, piece
                offset += piece.num_rows

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
        pq = _parquet()
        table = pq.read_table(name, columns=[column])
        return table.column(column)[within].as_py()


def _no_rows(schema: Any) -> Any:
    """A batch of ``schema`` with no rows. Not ``from_pylist([])``: pyarrow has no converter
    from Python for some types the readers accept (a dictionary of string views)."""
    pa = pyarrow_module()
    return pa.RecordBatch.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)


def _parquet_files(path: Path, what: str) -> list[tuple[str, Any]]:
    """The Parquet files of ``path`` (a file, or a directory read recursively, in name
    order, skipping names that start with ``.`` or ``_`` as Spark and Hive leave them)."""
    pq = _parquet()
    pa = pyarrow_module()
    if not path.exists():
        raise FileNotFoundError(f"{what}: no such file or directory: {path}")
    if path.is_dir():
        names = sorted(
            candidate
            for candidate in path.rglob("*")
            if candidate.is_file()
            and not any(part.startswith((".", "_")) for part in candidate.relative_to(path).parts)
        )
    else:
        names = [path]
    if not names:
        raise InvalidInputError(
            f"{path}: {what}: the directory holds no Parquet files",
            kind=ErrorKind.MALFORMED,
            field=what,
            file=str(path),
        )
    files = []
    for name in names:
        try:
            metadata = pq.read_metadata(str(name))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
            raise InvalidInputError(
                f"{name}: {what}: not a Parquet file ({exc})",
                kind=ErrorKind.MALFORMED,
                field=what,
                file=str(name),
            ) from exc
        files.append((str(name), metadata))
    return files


def _names(metadata: Any, columns: list[str]) -> list[str]:
    """The string columns of ``columns`` to read from a Parquet file as dictionaries: the
    names (``NAME_COLUMNS``) that the file stores dictionary-encoded in every row group.

    Read so, they are decoded without a string per row (a quarter less decoding at 10M
    records). A column chunk whose writer gave up on its dictionary (too many distinct
    values: the rest of its pages are plain strings) is not: pyarrow would then build a
    dictionary per batch holding every value seen so far in the row group. Its data pages
    tell: dictionary indices never take more than 4 bytes a value, plain strings do.
    """
    pa = pyarrow_module()
    schema = metadata.schema.to_arrow_schema()
    names = [
        name
        for name in columns
        if name in NAME_COLUMNS
        and (
            pa.types.is_string(schema.field(name).type)
            or pa.types.is_large_string(schema.field(name).type)
        )
    ]
    positions = {metadata.schema.column(index).path: index for index in range(metadata.num_columns)}
    return [
        name
        for name in names
        if name in positions
        and all(
            _dictionary_encoded(metadata.row_group(group).column(positions[name]))
            for group in range(metadata.num_row_groups)
        )
    ]


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


def _dictionary_encoded(chunk: Any) -> bool:
    """Whether a Parquet column chunk holds only dictionary indices past its dictionary
    page (by size: indices never take more than 4 bytes a value)."""
    start = chunk.dictionary_page_offset
    if not chunk.has_dictionary_page or not start or chunk.data_page_offset <= start:
        return False
    data = chunk.total_compressed_size - (chunk.data_page_offset - start)
    return bool(data <= 4 * max(1, chunk.num_values))


def _interrupted(error: Exception) -> bool:
    """Whether a stream failed because its Python producer was interrupted (Ctrl-C): the
    Arrow C stream reports that as an ``ArrowInvalid`` whose text holds the traceback,
    whose exception line (the first after its last indented frame line) names it."""
    _, found, traceback = str(error).partition("Python exception:")
    lines = traceback.strip("\n").splitlines()
    frames = [index for index, line in enumerate(lines) if line.startswith(" ")]
    exception_line = lines[frames[-1] + 1] if frames and frames[-1] + 1 < len(lines) else ""
    return bool(found) and _INTERRUPTION.fullmatch(exception_line) is not None


#: A ``KeyboardInterrupt``'s exception line, with or without a message.
_INTERRUPTION = re.compile(r"KeyboardInterrupt(?::.*)?")


def _parquet() -> Any:
    return __import__("pyarrow.parquet", fromlist=["read_table"])


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
