"""The exceptions memresolve raises, from either backend.

Defined once, here; the Rust binding imports these very classes, so
``except memresolve.InvalidInputError`` works whichever backend ran.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

__all__ = [
    "BackendUnavailableError",
    "ErasureDelayedWarning",
    "ErrorKind",
    "InternalError",
    "InvalidInputError",
    "MemoryLimitError",
    "MemresolveError",
    "StoreBusyError",
    "StoreClosedError",
    "StoreDamagedError",
    "StoreError",
]


class ErrorKind(StrEnum):
    """What is wrong with an input: a closed set, the same from every backend and reader.

    Programs branch on ``error.kind``, never on the message text. The Rust
    core has the same table (a test compares them).
    """

    WRONG_TYPE = "wrong-type"
    """A value or column of the wrong type (a ``str`` expected, an ``int`` given)."""
    MISSING = "missing"
    """A required field, argument or value is absent or null."""
    MISSING_COLUMN = "missing-column"
    """A required Arrow column is absent."""
    EMPTY = "empty"
    """An empty string where a non-empty one is required."""
    UNKNOWN_VALUE = "unknown-value"
    """A value outside its vocabulary (status, authority, scope kind)."""
    UNKNOWN_FIELD = "unknown-field"
    """A field the schema does not have (JSON Lines objects, scope objects)."""
    DUPLICATE_FIELD = "duplicate-field"
    """A JSON object names a field twice, or an Arrow table a column."""
    NAIVE_TIME = "naive-time"
    """A datetime or Arrow timestamp without a time zone."""
    OUT_OF_RANGE = "out-of-range"
    """A number or instant outside its range."""
    NOT_FINITE = "not-finite"
    """NaN or infinity."""
    INVALID_UNICODE = "invalid-unicode"
    """A lone surrogate, or bytes that are not UTF-8."""
    DUPLICATE_ID = "duplicate-id"
    """Two records (or contexts) of one call share an id."""
    MALFORMED = "malformed"
    """Data that cannot be parsed or read: not JSON, not an instant, invalid Arrow data."""
    INCONSISTENT = "inconsistent"
    """Fields valid on their own that contradict each other."""


class MemresolveError(Exception):
    """Base class of every memresolve error."""


class InvalidInputError(MemresolveError, ValueError):
    """Bad input: a record, context or tombstone that breaks a rule of the contract.

    The message names what was wrong and where; the same facts are attributes,
    so a program can react without parsing text. Messages never contain a
    record's ``value``.

    Attributes:
        kind: what is wrong, one of ``ErrorKind``.
        record_id: id of the offending record, when there is one and it is valid.
        field: name of the offending field (dotted for nested ones, ``scope.user_id``).
        line: 1-based line number, when the input came from a JSON Lines file.
        row: 0-based row index, when the input came from an Arrow table (in a
            batch job, the row within ``file``).
        file: the input file the row is in, when a batch job read files.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind | str,
        record_id: str | None = None,
        field: str | None = None,
        line: int | None = None,
        row: int | None = None,
        file: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = ErrorKind(kind)
        self.record_id = record_id
        self.field = field
        self.line = line
        self.row = row
        self.file = file

    def where(self) -> tuple[ErrorKind, str | None, int | None, str | None]:
        """``(kind, field, row, record_id)``: what the differential tests compare."""
        return (self.kind, self.field, self.row, self.record_id)

    def __reduce__(self) -> tuple[object, ...]:
        # Keep the attributes across pickling (multiprocessing workers).
        attributes = {
            "kind": self.kind.value,
            "record_id": self.record_id,
            "field": self.field,
            "line": self.line,
            "row": self.row,
            "file": self.file,
        }
        return (_rebuild_invalid_input, (self.args[0], attributes))


def _rebuild_invalid_input(message: str, attributes: dict[str, Any]) -> InvalidInputError:
    return InvalidInputError(message, **attributes)


class BackendUnavailableError(MemresolveError, ImportError):
    """The backend forced with ``MEMRESOLVE_BACKEND`` cannot be used here."""


class MemoryLimitError(MemresolveError, MemoryError):
    """A batch job cannot stay within its ``memory_limit``: one owner's part of
    the store alone needs more. The message names the owner and the size."""


class StoreError(MemresolveError):
    """A ``MemoryStore`` cannot serve the call; a subclass says why. (A full disk and other
    I/O errors are ``OSError``, as from any file: ``ENOSPC``, ``EIO``.)

    Attributes:
        path: the store's file, or None for a store in memory.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_store_error, (type(self), self.args[0], self.path))


def _rebuild_store_error(kind: type[StoreError], message: str, path: str | None) -> StoreError:
    return kind(message, path=path)


class StoreBusyError(StoreError):
    """Another connection to the store's file (in this process or another) held its write
    lock for longer than the store waits (30 s). Nothing was written: retry later."""


class StoreDamagedError(StoreError):
    """The store's file is damaged (SQLite finds its pages corrupt): every call that reads
    the damaged pages raises this. Restore the file from a backup."""


class StoreClosedError(StoreError):
    """The store was closed (``close()``, or its ``with`` block ended)."""


class InternalError(MemresolveError, RuntimeError):
    """A backend found one of its own invariants broken: a bug, please report it."""


class ErasureDelayedWarning(UserWarning):
    """A store's erasure is committed, but what it erased is still in the store's files:
    the message says why (another connection reads an older snapshot or writes; the
    disk is full; a crash interrupted an earlier erasure). The pending state is kept in
    the file: the store finishes it in the background, at its next write, ``wipe()``
    or ``close()``, and any later open of the file tries again (``docs/store.md``)."""
