"""The exceptions memresolve raises, from either backend.

Defined once, here; the Rust binding imports these very classes, so
``except memresolve.InvalidInputError`` works whichever backend ran.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "InternalError",
    "InvalidInputError",
    "MemresolveError",
]


class MemresolveError(Exception):
    """Base class of every memresolve error."""


class InvalidInputError(MemresolveError, ValueError):
    """Bad input: a record, context or tombstone that breaks a rule of the contract.

    The message names what was wrong and where; the same facts are attributes,
    so a program can react without parsing text. Messages never contain a
    record's ``value``.

    Attributes:
        record_id: id of the offending record, when there is one and it is valid.
        field: name of the offending field (dotted for nested ones, ``scope.user_id``).
        line: 1-based line number, when the input came from a JSON Lines file.
        row: 0-based row index, when the input came from an Arrow table.
    """

    def __init__(
        self,
        message: str,
        *,
        record_id: str | None = None,
        field: str | None = None,
        line: int | None = None,
        row: int | None = None,
    ) -> None:
        super().__init__(message)
        self.record_id = record_id
        self.field = field
        self.line = line
        self.row = row

    def __reduce__(self) -> tuple[object, ...]:
        # Keep the attributes across pickling (multiprocessing workers).
        return (
            _rebuild_invalid_input,
            (self.args[0], self.record_id, self.field, self.line, self.row),
        )


def _rebuild_invalid_input(
    message: str,
    record_id: str | None,
    field: str | None,
    line: int | None,
    row: int | None = None,
) -> InvalidInputError:
    return InvalidInputError(message, record_id=record_id, field=field, line=line, row=row)


class BackendUnavailableError(MemresolveError, ImportError):
    """The backend forced with ``MEMRESOLVE_BACKEND`` cannot be used here."""


class InternalError(MemresolveError, RuntimeError):
    """A backend found one of its own invariants broken: a bug, please report it."""
