"""Checks of a public call's arguments that are not data rows: paths, and iterables of the
package's own objects. Each bad argument is an ``InvalidInputError`` naming it, so no call
leaks a ``TypeError`` or ``AttributeError`` from inside the package (``docs/errors.md``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["items", "path"]

T = TypeVar("T")


def path(value: object, field: str) -> Path:
    """A file system path given as ``str`` or ``os.PathLike[str]``: not empty, valid
    Unicode, and without a NUL character."""
    try:
        text = os.fspath(value) if isinstance(value, os.PathLike) else value
    except TypeError:
        text = None
    if not isinstance(text, str):
        raise InvalidInputError(
            f"{field}: expected a path (str or os.PathLike), got {type(value).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field=field,
        )
    if not text:
        raise InvalidInputError(f"{field}: the path is empty", kind=ErrorKind.EMPTY, field=field)
    if "\x00" in text:
        # No file system names a file so: the operating system's calls would raise a bare
        # ValueError ("embedded null byte") wherever the path is first used.
        raise InvalidInputError(
            f"{field}: the path holds a NUL character", kind=ErrorKind.MALFORMED, field=field
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{field}: the path holds a lone surrogate", kind=ErrorKind.INVALID_UNICODE, field=field
        ) from None
    return Path(text)


def items(value: object, expected: type[T], field: str) -> tuple[T, ...]:
    """Every item of an iterable argument, each an instance of ``expected``."""
    name = expected.__name__
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInputError(
            f"{field}: expected an iterable of {name}, got {type(value).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field=field,
        )
    rows = tuple(value)
    for row, item in enumerate(rows):
        if not isinstance(item, expected):
            raise InvalidInputError(
                f"{field}[{row}]: expected a {name}, got {type(item).__name__}",
                kind=ErrorKind.WRONG_TYPE,
                field=field,
                row=row,
            )
    return rows
