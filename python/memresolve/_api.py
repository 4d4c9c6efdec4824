"""The public functions: check the call, run the selected kernel, wrap the result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memresolve import _kernels
from memresolve._call import resolve_with
from memresolve._inputs import ForgetTombstone, RetrievalContext
from memresolve._records import MemoryRecord
from memresolve._result import Resolution

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["resolve", "resolve_batch"]


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
    return resolve_with(_kernels.SELECTED.resolve_rows, records, context, tombstones)


def resolve_batch(
    records: object,
    contexts: object,
    *,
    tombstones: object | None = None,
    include_excluded: bool = False,
) -> pa.Table:
    """Resolve every context over one store of records, on Arrow tables (``docs/spec.md`` §4).

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
    result: pa.Table = _kernels.SELECTED_BATCH(
        records, contexts, tombstones=tombstones, include_excluded=include_excluded
    )
    return result
