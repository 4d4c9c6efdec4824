"""The public functions: check the call, run the selected kernel, wrap the result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memresolve import _backend
from memresolve._backend import Kernel
from memresolve._records import ForgetTombstone, MemoryRecord, RetrievalContext
from memresolve._result import Resolution
from memresolve.errors import InternalError, InvalidInputError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["resolve", "resolve_batch", "resolve_with"]


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


def resolve_batch(
    records: object,
    contexts: object,
    *,
    tombstones: object | None = None,
    include_excluded: bool = False,
) -> pa.Table:
    """Resolve every context over one store of records, on Arrow tables (SPEC §4).

    ``records``, ``contexts`` and ``tombstones`` are anything that implements
    the Arrow PyCapsule interface: a pyarrow ``Table``/``RecordBatch``/
    ``RecordBatchReader``, a polars ``DataFrame``, a duckdb result. Their
    columns are documented in ``memresolve._arrow`` and the README; extra
    columns (such as ``value``) are ignored, so private text need not be
    loaded.

    Returns a pyarrow ``Table`` with ``context_id``, ``record_id`` and
    ``decision`` (dictionary-encoded: ``active`` or an exclusion reason). For
    each context, in input order: its winners in ``active`` order, then, with
    ``include_excluded``, its other candidates by record id. Records outside a
    context's scopes are not rows. Every context's rows equal
    ``resolve(all records, that context)`` less its scope exclusions.

    Raises:
        InvalidInputError: an input is not Arrow, or breaks a rule; the error
            names the column (``field``) and the first bad row (``row``).
    """
    result: pa.Table = _backend.SELECTED_BATCH(
        records, contexts, tombstones=tombstones, include_excluded=include_excluded
    )
    return result


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
