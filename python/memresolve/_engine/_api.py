"""The public functions: check the call, run the selected kernel, wrap the result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from memresolve._engine import _kernels
from memresolve._io import contexts_to_arrow
from memresolve._model import ForgetTombstone, MemoryRecord, Resolution, RetrievalContext

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
    return _kernels.SELECTED.resolve(records, context, tombstones)


def resolve_batch(
    records: object,
    contexts: object,
    *,
    tombstones: object | None = None,
    include_excluded: bool = False,
    with_values: bool = False,
) -> pa.Table:
    """Resolve every context over one store of records, on Arrow tables (``docs/spec.md`` §4).

    ``records``, ``contexts`` and ``tombstones`` are anything that implements
    the Arrow PyCapsule interface (a pyarrow ``Table``/``RecordBatch``/
    ``RecordBatchReader``, a polars ``DataFrame``, a duckdb relation) or a
    polars ``LazyFrame`` (run once, by its streaming engine). Their columns are
    documented in docs/batch.md; extra columns are ignored, so private text need
    not be loaded unless ``with_values`` asks for it. ``contexts`` may also be Python
    objects, as ``contexts_to_arrow`` takes them: a mapping of ``context_id`` to
    ``RetrievalContext``, ``(context_id, RetrievalContext)`` pairs, or bare contexts
    (each then has its 1-based position as its id).

    Returns a pyarrow ``Table``, one record batch per 512 contexts, of:

    ============== ================================ ========================================
    column         type                             holds
    ============== ================================ ========================================
    ``context_id`` ``string``                       the context's id
    ``record_id``  ``string``                       a candidate of that context
    ``decision``   ``dictionary<int8, string>``     ``active`` (code 0) or the exclusion
                                                    reason (codes 1-5, in stage order)
    ``key``        ``string``, null unless active   with ``with_values``: the winner's key
    ``value``      ``string``, null unless active   with ``with_values``: its value
    ``certainty``  ``dictionary<int8, string>``     with ``with_values``: ``confirmed``,
                                                    ``likely`` or ``uncertain``
    ============== ================================ ========================================

    For each context, in input order: its winners in ``active`` order, then,
    with ``include_excluded``, its other candidates by record id. Records
    outside a context's scopes are not rows. Every context's rows equal
    ``resolve(all records, that context)`` less its scope exclusions. With
    ``with_values`` the records table needs ``value`` and ``confidence``; the
    text of a value is read only for the rows that win.

    Raises:
        InvalidInputError: an input is not Arrow, or breaks a rule; the error
            names the column (``field``), the first bad row (``row``) and the
            kind of problem (``kind``).
    """
    if _python_objects(contexts):
        # Objects, not Arrow: a mapping of context_id to context, pairs, or bare contexts.
        contexts = contexts_to_arrow(contexts)  # type: ignore[arg-type]
    result: pa.Table = _kernels.SELECTED_BATCH(
        records,
        contexts,
        tombstones=tombstones,
        include_excluded=include_excluded,
        with_values=with_values,
    )
    return result


def _python_objects(contexts: object) -> bool:
    """Whether ``contexts`` is Python objects (a mapping, or any iterable of contexts or
    pairs) rather than Arrow data, which exports a C stream or array (a polars
    ``DataFrame`` iterates over its columns, but exports a stream first)."""
    if hasattr(contexts, "__arrow_c_stream__") or hasattr(contexts, "__arrow_c_array__"):
        return False
    return isinstance(contexts, Mapping) or (
        isinstance(contexts, Iterable) and not isinstance(contexts, str | bytes)
    )
