"""One call of ``resolve``: check its arguments, run a kernel, wrap the kernel's answer.

Shared by the facade (``memresolve.resolve``, whatever backend is selected)
and the reference's own ``resolve``; it imports no backend, so neither of
them imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from memresolve._model._inputs import ForgetTombstone, RetrievalContext
from memresolve._model._records import MemoryRecord
from memresolve._model._result import RawResolution, Resolution
from memresolve.errors import ErrorKind, InternalError, InvalidInputError

__all__ = [
    "Prepared",
    "ResolveRows",
    "checked_tombstones",
    "not_a_context",
    "record_rows",
    "resolve_prepared",
    "resolve_with",
]

#: A kernel's ``resolve_rows``: candidates not checked yet (the kernel rejects
#: a non-record and a repeated id), the context and tombstones checked.
ResolveRows = Callable[
    [tuple[object, ...], RetrievalContext, tuple[ForgetTombstone, ...]], RawResolution
]


class Prepared(Protocol):
    """Candidates and tombstones checked once by a kernel (``_kernels.Kernel.prepare``),
    to resolve in any number of contexts."""

    @property
    def records(self) -> tuple[MemoryRecord, ...]: ...

    def extended(self, records: tuple[object, ...]) -> Prepared:
        """A copy with ``records`` added after the candidates, checked as ``prepare``
        checks them (rows counted on from the candidates'); this one is unchanged."""
        ...

    def forgotten(
        self, tombstones: tuple[ForgetTombstone, ...], records: tuple[object, ...]
    ) -> Prepared:
        """A copy that also holds ``tombstones``, with ``records`` in place of the
        candidates with their ids (each reads as its candidate does for resolution: only
        text may differ, as after an erasure); this one is unchanged."""
        ...

    def resolve_rows(self, context: RetrievalContext) -> RawResolution: ...


def resolve_with(
    resolve_rows: ResolveRows,
    records: Iterable[MemoryRecord],
    context: RetrievalContext,
    tombstones: Iterable[ForgetTombstone] | None,
) -> Resolution:
    """``memresolve.resolve`` run by the kernel function ``resolve_rows``."""
    rows = record_rows(records)  # each kernel checks that these are records with unique ids
    if not isinstance(context, RetrievalContext):
        raise not_a_context(context)
    return _result(rows, resolve_rows(rows, context, checked_tombstones(tombstones)))


def not_a_context(context: object) -> InvalidInputError:
    """The error for a ``context`` argument that is not a ``RetrievalContext``."""
    return InvalidInputError(
        f"context: expected a RetrievalContext, got {type(context).__name__}",
        kind=ErrorKind.WRONG_TYPE,
        field="context",
    )


def _result(rows: tuple[MemoryRecord, ...], raw: RawResolution) -> Resolution:
    if len(raw.active) + len(raw.excluded_codes) != len(rows) or len(raw.excluded_rows) != len(
        raw.excluded_codes
    ):
        raise InternalError("the backend did not account for every candidate exactly once")
    return Resolution.from_raw(rows, raw)


def resolve_prepared(prepared: Prepared, context: RetrievalContext) -> Resolution:
    """``memresolve.resolve`` of candidates checked once (``Kernel.prepare``)."""
    if not isinstance(context, RetrievalContext):
        raise not_a_context(context)
    return _result(prepared.records, prepared.resolve_rows(context))


def record_rows(records: object) -> tuple[MemoryRecord, ...]:
    """The candidates of a call as a tuple (typed as given: not yet checked to be records)."""
    # The common containers first: the ABC check below costs as much as copying 50 rows.
    if type(records) is list:
        return tuple(records)
    if type(records) is tuple:
        return records
    if isinstance(records, str | bytes) or not isinstance(records, Iterable):
        raise InvalidInputError(
            f"records: expected an iterable of MemoryRecord, got {type(records).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="records",
        )
    return tuple(records)  # each item is checked by the kernel


def checked_tombstones(
    tombstones: Iterable[ForgetTombstone] | None,
) -> tuple[ForgetTombstone, ...]:
    """The tombstones of a call as a tuple; ``None`` means none (as in the batch form)."""
    if tombstones is None or (type(tombstones) is tuple and not tombstones):
        return ()
    # The common containers skip the ABC check, which costs as much as a tombstone.
    if (
        type(tombstones) is not list
        and type(tombstones) is not tuple
        and (isinstance(tombstones, str | bytes) or not isinstance(tombstones, Iterable))
    ):
        raise InvalidInputError(
            f"tombstones: expected an iterable of ForgetTombstone, got {type(tombstones).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="tombstones",
        )
    rows = tuple(tombstones)
    for row, tombstone in enumerate(rows):
        if not isinstance(tombstone, ForgetTombstone):
            raise InvalidInputError(
                f"tombstones[{row}]: expected a ForgetTombstone, got {type(tombstone).__name__}",
                kind=ErrorKind.WRONG_TYPE,
                field="tombstones",
            )
    return rows
