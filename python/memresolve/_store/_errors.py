"""SQLite's errors as the store's contract states them (``docs/errors.md``).

Python's ``sqlite3`` raises its own exception classes, which say nothing a program can
act on without parsing their text and carry no system errno. The store raises instead:
a full disk as ``OSError(ENOSPC)`` and other I/O failures as ``OSError(EIO)`` (as any
file would), a lock held past the busy timeout as ``StoreBusyError``, a damaged file as
``StoreDamagedError``, a file that cannot be opened as the ``OSError`` its path gives.
SQLite's result code, not the message, decides (``sqlite_errorcode``, Python 3.11).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from memresolve.errors import (
    ErrorKind,
    InternalError,
    InvalidInputError,
    StoreBusyError,
    StoreDamagedError,
)

__all__ = ["translated", "translating"]

# SQLite's primary result codes (sqlite3.h).
_PERM: Final = 3
_BUSY: Final = 5
_LOCKED: Final = 6
_NOMEM: Final = 7
_READONLY: Final = 8
_IOERR: Final = 10
_CORRUPT: Final = 11
_FULL: Final = 13
_CANTOPEN: Final = 14
_TOOBIG: Final = 18
_NOTADB: Final = 26


def translated(error: sqlite3.Error, path: Path | None) -> BaseException:
    """The exception of the contract for ``error``, raised by the store whose file is
    ``path`` (None: in memory)."""
    where = "store" if path is None else f"store {path}"
    name = None if path is None else str(path)
    code = getattr(error, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    if primary in (_FULL, _IOERR):
        number, what = (
            (errno.ENOSPC, "the disk is full")
            if primary == _FULL
            else (
                errno.EIO,
                "an I/O error",
            )
        )
        return OSError(number, f"{where}: {what} ({error})", name)
    if primary in (_CANTOPEN, _PERM, _READONLY):
        return OSError(_errno_of(path, primary), f"{where}: cannot write the file ({error})", name)
    if primary in (_BUSY, _LOCKED):
        return StoreBusyError(
            f"{where}: another connection held the file's lock for longer than the store "
            f"waits; nothing was written, retry later ({error})",
            path=name,
        )
    if primary in (_CORRUPT, _NOTADB):
        return StoreDamagedError(
            f"{where}: the file is damaged ({error}); restore it from a backup", path=name
        )
    return _beyond_the_file(primary, error, where)


def _beyond_the_file(primary: int | None, error: sqlite3.Error, where: str) -> BaseException:
    """The exception for an error that is not about the file: memory, a value SQLite
    cannot hold, or a fault of SQLite's use here (a bug)."""
    if primary == _NOMEM:
        return MemoryError(f"{where}: SQLite ran out of memory")
    if primary == _TOOBIG:
        return InvalidInputError(
            f"{where}: a value is larger than SQLite stores ({error})",
            kind=ErrorKind.OUT_OF_RANGE,
        )
    return InternalError(f"{where}: SQLite failed unexpectedly ({type(error).__name__}: {error})")


def _errno_of(path: Path | None, primary: int) -> int:
    """The errno a file that SQLite cannot open or write most likely has."""
    if path is not None:
        if path.is_dir():
            return errno.EISDIR
        if not path.parent.is_dir():
            return errno.ENOENT
        if not os.access(path if path.exists() else path.parent, os.W_OK):
            return errno.EACCES
    return errno.EROFS if primary == _READONLY else errno.EACCES


@contextmanager
def translating(path: Path | None) -> Iterator[None]:
    """Raises the contract's exception for any ``sqlite3.Error`` inside the block."""
    try:
        yield
    except sqlite3.Error as error:
        raise translated(error, path) from error
