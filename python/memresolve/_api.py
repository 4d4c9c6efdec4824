"""The public functions: check the call, run the selected kernel, wrap the result."""

from __future__ import annotations

from collections.abc import Iterable

from memresolve import _backend
from memresolve._backend import Kernel
from memresolve._records import ForgetTombstone, MemoryRecord, RetrievalContext
from memresolve._result import Resolution
from memresolve.errors import InternalError, InvalidInputError

__all__ = ["resolve", "resolve_with"]


def resolve(
    records: Iterable[MemoryRecord],
    context: RetrievalContext,
    *,
    tombstones: Iterable[ForgetTombstone] | None = (),
) -> Resolution:
    """Decide which candidate records are true now in ``context``.

    Every candidate ends up either in ``active`` (one winner per scope and key)
    or in ``excluded`` with the first pipeline stage that excluded it. The
    result depends only on the records and tombstones as sets and on
    ``context``: never on input order, the machine's clock, locale or backend.

    Raises:
        InvalidInputError: a candidate is not a ``MemoryRecord``, two share an
            id, or the context or a tombstone has the wrong type.
    """
    return resolve_with(_backend.SELECTED, records, context, tombstones)


def resolve_with(
    kernel: Kernel,
    records: Iterable[MemoryRecord],
    context: RetrievalContext,
    tombstones: Iterable[ForgetTombstone] | None,
) -> Resolution:
    """``resolve`` with an explicit kernel (the reference's own ``resolve`` uses this)."""
    if isinstance(records, str | bytes) or not isinstance(records, Iterable):
        raise InvalidInputError(
            f"records: expected an iterable of MemoryRecord, got {type(records).__name__}",
            field="records",
        )
    rows = tuple(records)  # each kernel checks that these are records with unique ids
    if not isinstance(context, RetrievalContext):
        raise InvalidInputError(
            f"context: expected a RetrievalContext, got {type(context).__name__}", field="context"
        )
    raw = kernel.resolve_rows(rows, context, _checked_tombstones(tombstones))
    if len(raw.active) + len(raw.excluded_codes) != len(rows) or len(raw.excluded_rows) != len(
        raw.excluded_codes
    ):
        raise InternalError("the backend did not account for every candidate exactly once")
    return Resolution.from_raw(rows, raw)


def _checked_tombstones(
    tombstones: Iterable[ForgetTombstone] | None,
) -> tuple[ForgetTombstone, ...]:
    if tombstones is None:  # as in the batch form's signature (SPEC §4)
        return ()
    if isinstance(tombstones, str | bytes) or not isinstance(tombstones, Iterable):
        raise InvalidInputError(
            f"tombstones: expected an iterable of ForgetTombstone, got {type(tombstones).__name__}",
            field="tombstones",
        )
    rows = tuple(tombstones)
    for row, tombstone in enumerate(rows):
        if not isinstance(tombstone, ForgetTombstone):
            raise InvalidInputError(
                f"tombstones[{row}]: expected a ForgetTombstone, got {type(tombstone).__name__}",
                field="tombstones",
            )
    return rows
