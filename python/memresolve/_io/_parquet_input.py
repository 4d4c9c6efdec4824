"""The Parquet files of a job's input, read so that a bad file is bad input naming it.

Whatever a file's bytes hold (a flipped bit in a page, a dictionary page or the footer; a
truncated file; a file rewritten while it is read), reading it gives rows or
``InvalidInputError(malformed)`` naming the file, and the row group and column where they
are known; never pyarrow's bare ``OSError`` ("Corrupt snappy compressed data.",
"Unexpected end of stream", "File too short"), nor its ``ArrowInvalid`` ("Index not in
dictionary bounds"). A file system error stays an ``OSError`` with its errno (a file that is
gone, unreadable, a directory, an I/O error): pyarrow's own reports of corrupt bytes carry
no errno, and where its report of a real fault lacks one (it says "is a directory" without
``EISDIR``) the file is looked at again to tell. Each file is read row group by row group,
so that a failure names its group, and then the first of its columns that fails alone.

A file is listed with a signature (device, inode, size, modification time): a file whose
signature differs when it is opened, or once it has been read, changed under the job, and
is refused as such (``docs/errors.md``: inputs must not change during a call).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memresolve._io._arrow_input import pyarrow_module
from memresolve._io._canonical import NAME_COLUMNS
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["ParquetInput", "dictionary_names", "parquet_files"]

#: What identifies a file's content for as long as nobody writes it.
Signature = tuple[int, int, int, int]


def _parquet() -> Any:
    return __import__("pyarrow.parquet", fromlist=["read_table"])


def _signature(name: str) -> Signature:
    found = os.stat(name)
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


@dataclass
class ParquetInput:
    """One Parquet file of an input (``what``: records, contexts or tombstones)."""

    name: str
    what: str
    metadata: Any
    signature: Signature
    #: Whether every row group's metadata was built once through the reader (``_probe``).
    probed: bool = field(default=False, compare=False)

    @property
    def rows(self) -> int:
        return int(self.metadata.num_rows)

    def malformed(
        self, problem: str, *, group: int | None = None, column: str | None = None
    ) -> InvalidInputError:
        where = "".join(
            (
                "" if group is None else f" row group {group}",
                "" if column is None else f" column {column!r}",
            )
        )
        return InvalidInputError(
            f"{self.name}: {self.what}:{where} {problem}",
            kind=ErrorKind.MALFORMED,
            field=column or self.what,
            file=self.name,
        )

    def _failure(self, exc: Exception, group: int | None, columns: list[str]) -> BaseException:
        """What to raise for ``exc``, raised reading ``group`` (None: not one group) of
        ``columns``: a file system error as it is, else bad input (module docstring)."""
        try:
            now = os.stat(self.name)
        except OSError as gone:
            return gone  # deleted, or unreadable: the file system's error, with its errno
        if stat.S_ISDIR(now.st_mode):
            return IsADirectoryError(errno.EISDIR, "Is a directory", self.name)
        if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != self.signature:
            return self.malformed("changed while it was read; inputs must stay still during a job")
        column = None if group is None else self._failing_column(group, columns)
        return self.malformed(
            f"cannot be read as a Parquet file of this input ({type(exc).__name__}: {exc})",
            group=group,
            column=column,
        )

    def _failing_column(self, group: int, columns: list[str]) -> str | None:
        """The first of ``columns`` whose data in ``group`` fails to read on its own."""
        for column in columns:
            try:
                with _parquet().ParquetFile(self.name) as file:
                    for _ in file.iter_batches(
                        batch_size=8_192, row_groups=[group], columns=[column]
                    ):
                        pass
            except Exception:  # any failure names the column; the caller raises its own
                return column
        return None

    @contextmanager
    def reading(self, group: int | None = None, columns: list[str] | None = None) -> Iterator[None]:
        """Turns the failures of reading this file inside the block into ``_failure``'s."""
        pa = pyarrow_module()
        try:
            yield
        except InvalidInputError:
            raise
        except MemoryError:
            raise  # the machine's memory, not the file's fault (pyarrow's ArrowMemoryError too)
        except OSError as exc:
            if exc.errno is not None:
                raise
            raise self._failure(exc, group, columns or []) from exc
        except (pa.ArrowException, KeyError, ValueError, IndexError) as exc:
            raise self._failure(exc, group, columns or []) from exc

    def _probe(self, columns: list[str]) -> None:
        """Builds each row group's metadata, and that of its chunks of ``columns``, through
        pyarrow's reader (one row of each group) before anything reads them through
        ``metadata.row_group(i)`` and ``.column(j)``: those accessors do not translate the
        C++ exception that metadata failing its checks raises (a bit flipped in a chunk's
        size statistics: "Repetition level histogram size mismatch"), and the process
        aborts (std::terminate). The reader builds the same metadata and reports the
        same failure as an error (about 1 ms a row group)."""
        if self.probed:
            return
        with self.reading(), _parquet().ParquetFile(self.name) as file:
            for group in range(self.metadata.num_row_groups):
                with self.reading(group, columns):
                    next(file.iter_batches(batch_size=1, row_groups=[group], columns=columns), None)
        self.probed = True

    def dictionary_names(self, columns: list[str]) -> list[str]:
        """``dictionary_names`` of this file, its metadata checked first (``_probe``)."""
        names = [column for column in columns if column in NAME_COLUMNS]
        self._probe(names or columns[:1])
        return dictionary_names(self.metadata, columns)

    def check_unchanged(self) -> None:
        """Refuses the file if it is not the file that was listed (module docstring): a
        directory now is ``IsADirectoryError``, a file gone the file system's error."""
        now = os.stat(self.name)
        if stat.S_ISDIR(now.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", self.name)
        if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != self.signature:
            raise self.malformed("changed while it was read; inputs must stay still during a job")

    def batches(self, columns: list[str], batch_rows: int) -> Iterator[Any]:
        """The rows of ``columns``, row group by row group, in batches of at most
        ``batch_rows``; names read as dictionaries where the file keeps them so."""
        self.check_unchanged()
        dictionaries = self.dictionary_names(columns)
        with (
            self.reading(),
            _parquet().ParquetFile(self.name, read_dictionary=dictionaries) as file,
        ):
            for group in range(self.metadata.num_row_groups):
                with self.reading(group, columns):
                    yield from file.iter_batches(
                        batch_size=batch_rows, row_groups=[group], columns=columns
                    )
        self.check_unchanged()

    def first_rows(self, columns: list[str], rows: int) -> tuple[Any, int]:
        """At most ``rows`` rows of ``columns``, the first of the first row group that has
        any, and how many rows that group has (the file has rows)."""
        dictionaries = self.dictionary_names(columns)
        groups = self.metadata.num_row_groups
        group = next(g for g in range(groups) if self.metadata.row_group(g).num_rows)
        with (
            self.reading(group, columns),
            _parquet().ParquetFile(self.name, read_dictionary=dictionaries) as file,
        ):
            batches = file.iter_batches(batch_size=rows, row_groups=[group], columns=columns)
            sample = next(batches, None)
        if sample is None:  # the footer counted rows the group does not hold
            raise self.malformed("holds fewer rows than its footer says", group=group)
        return sample, int(self.metadata.row_group(group).num_rows)

    def value_at(self, column: str, row: int) -> object:
        """The value of ``column`` at ``row`` of this file."""
        with self.reading(None, [column]):
            table = _parquet().read_table(self.name, columns=[column])
            return table.column(column)[row].as_py()


def parquet_files(path: Path, what: str) -> list[ParquetInput]:
    """The Parquet files of ``path`` (a file, or a directory read recursively, in name
    order, skipping names that start with ``.`` or ``_`` as Spark and Hive leave them)."""
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, f"{what}: no such file or directory", str(path))
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
        listed = ParquetInput(str(name), what, None, _signature(str(name)))
        with listed.reading():
            metadata = _parquet().read_metadata(str(name))
        files.append(ParquetInput(str(name), what, metadata, listed.signature))
    return files


def dictionary_names(metadata: Any, columns: list[str]) -> list[str]:
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


def _dictionary_encoded(chunk: Any) -> bool:
    """Whether a Parquet column chunk holds only dictionary indices past its dictionary
    page (by size: indices never take more than 4 bytes a value)."""
    start = chunk.dictionary_page_offset
    if not chunk.has_dictionary_page or not start or chunk.data_page_offset <= start:
        return False
    data = chunk.total_compressed_size - (chunk.data_page_offset - start)
    return bool(data <= 4 * max(1, chunk.num_values))
