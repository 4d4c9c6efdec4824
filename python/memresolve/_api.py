"""The public functions: check the call, run the selected kernel, wrap the result."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from memresolve import _backend
from memresolve._backend import Kernel
from memresolve._records import ForgetTombstone, MemoryRecord, RetrievalContext
from memresolve._result import Exclusion, RawResolution, Resolution, Trace
from memresolve._types import RESOLVER_VERSION, Reason
from memresolve.errors import InternalError, InvalidInputError

__all__ = ["resolve", "resolve_with"]

_REASONS = tuple(Reason)


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
    rows = _checked_records(records)
    if not isinstance(context, RetrievalContext):
        raise InvalidInputError(
            f"context: expected a RetrievalContext, got {type(context).__name__}", field="context"
        )
    tombstone_rows = _checked_tombstones(tombstones)
    raw = kernel.resolve_rows(rows, context, tombstone_rows)
    return _wrap(rows, raw)


def _checked_records(records: Iterable[MemoryRecord]) -> tuple[MemoryRecord, ...]:
    if isinstance(records, str | bytes) or not isinstance(records, Iterable):
        raise InvalidInputError(
            f"records: expected an iterable of MemoryRecord, got {type(records).__name__}",
            field="records",
        )
    rows = tuple(records)
    first_row_of: dict[str, int] = {}
    for row, record in enumerate(rows):
        if not isinstance(record, MemoryRecord):
            raise InvalidInputError(
                f"records[{row}]: expected a MemoryRecord, got {type(record).__name__}",
                field="records",
            )
        earlier = first_row_of.setdefault(record.id, row)
        if earlier != row:
            raise InvalidInputError(
                f"record {record.id!r}: field 'id' is not unique "
                f"(records[{earlier}] and records[{row}] share it)",
                record_id=record.id,
                field="id",
            )
    return rows


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


def _wrap(records: tuple[MemoryRecord, ...], raw: RawResolution) -> Resolution:
    seen = sorted([*raw.active, *(row for row, _ in raw.excluded)])
    if seen != list(range(len(records))):
        raise InternalError("the backend did not account for every candidate exactly once")
    excluded = tuple(Exclusion(records[row].id, _REASONS[code]) for row, code in raw.excluded)
    counts = Counter(exclusion.reason for exclusion in excluded)
    trace = Trace(
        memory_candidates=len(records),
        memory_active=len(raw.active),
        excluded_scope=counts[Reason.SCOPE],
        excluded_expired=counts[Reason.STATUS_OR_TIME],
        excluded_forgotten=counts[Reason.FORGOTTEN],
        excluded_superseded=counts[Reason.SUPERSEDED],
        excluded_precedence=counts[Reason.LOWER_PRECEDENCE],
        resolver_version=RESOLVER_VERSION,
    )
    return Resolution(tuple(records[row] for row in raw.active), excluded, trace)
