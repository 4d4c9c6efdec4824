"""Comparing batch outputs, and the Arrow tables of a generated store (shared by the batch
job's tests: resolve_dataset, the command, Spark)."""

from __future__ import annotations

import pyarrow as pa

import memresolve as mr
from memresolve.testing import Store

#: Each context's rows, in order: (record_id, decision, and key, value, certainty if any).
Rows = dict[str, list[tuple[object, ...]]]

_COMPARED = ("record_id", "decision", "key", "value", "certainty")


def by_context(table: pa.Table) -> Rows:
    """``table``'s rows grouped by context, in the order they came (decision as a string)."""
    names = [name for name in _COMPARED if name in table.column_names]
    rows: Rows = {}
    for row in table.select(["context_id", *names]).to_pylist():
        rows.setdefault(row["context_id"], []).append(tuple(row[name] for name in names))
    return rows


def arrow_tables(store: Store) -> tuple[pa.Table, pa.Table, pa.Table]:
    """A generated store's records, contexts and tombstones as Arrow tables."""
    return (
        mr.records_to_arrow(store.records),
        mr.contexts_to_arrow(store.contexts),
        mr.tombstones_to_arrow(store.tombstones),
    )
