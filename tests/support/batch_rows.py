"""Comparing batch outputs and their errors, and the Arrow tables of a generated store
(shared by the batch job's tests: resolve_dataset, the command, Spark, the layouts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

import memresolve as mr
from memresolve.testing import Store
from memresolve.testing.layouts import Tables
from story import ADA, RAINCOAT_SCENE, ROWAN, context, day, forget, record

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


@dataclass(frozen=True)
class Outcome:
    """What a reader gave: its answer, or its input error as the contract states it (kind,
    field, row, record id; the message is shown, never compared: it differs by backend)."""

    answer: object = None
    error: tuple[object, ...] | None = None
    message: str = field(default="", compare=False)

    def __repr__(self) -> str:
        if self.error is None:
            return "Outcome(answer=...)"
        return f"Outcome(error={self.error!r}, message={self.message!r})"


def outcome(read: Callable[..., object], *arguments: object) -> Outcome:
    """``read(*arguments)``'s answer, or the ``InvalidInputError`` it raised."""
    try:
        return Outcome(answer=read(*arguments))
    except mr.InvalidInputError as error:
        where = (error.kind, error.field, error.row, error.record_id)
        return Outcome(error=where, message=str(error))


# Layouts that failed, built by hand (the property draws them among others) ---------------


def story_tables(kinds: dict[str, pa.DataType]) -> Tables:
    """A small store as Arrow tables, the columns named in ``kinds`` cast to their type: four
    records (user, character, two in a scene, one superseding the other), two contexts, a
    tombstone. ``scene_id`` is null on the first two records, ``supersedes`` on three."""
    records = mr.records_to_arrow(
        [
            record("first", valid_from=day(1)),
            record("second", scope=ROWAN, valid_from=day(2)),
            record("third", key="outfit", scope=RAINCOAT_SCENE, valid_from=day(3)),
            record("fourth", key="outfit", scope=RAINCOAT_SCENE, supersedes="third"),
        ]
    )
    contexts = mr.contexts_to_arrow([("in-scene", context()), ("elsewhere", context(now=day(2)))])
    tombstones = mr.tombstones_to_arrow([forget("pet.name", ADA, day(5))])

    def cast(table: pa.Table) -> pa.Table:
        columns = [
            column.cast(kinds[name]) if name in kinds else column
            for name, column in zip(table.column_names, table.columns, strict=True)
        ]
        return pa.Table.from_arrays(columns, names=table.column_names)

    return Tables(cast(records), cast(contexts), cast(tombstones))


def after_an_empty_chunk(table: pa.Table) -> pa.Table:
    """Each column as issue 35 found it refused: an empty chunk at offset 2 of the column,
    then the whole column."""
    columns = []
    for column in table.columns:
        whole = column.combine_chunks()
        columns.append(pa.chunked_array([whole.slice(min(2, len(whole)), 0), whole], whole.type))
    return pa.Table.from_arrays(columns, names=table.column_names)


def over_an_empty_dictionary(table: pa.Table, names: tuple[str, ...]) -> pa.Table:
    """``table`` with each dictionary column of ``names`` chunked anew: its leading null rows
    as one chunk whose dictionary is an empty slice at an offset (what a writer makes of a
    chunk it saw only nulls in, sliced out of a larger dictionary), then the rest."""
    for name in names:
        column = table.column(name).combine_chunks()
        rows = next((row for row, value in enumerate(column.to_pylist()) if value), len(column))
        assert rows, f"{name} has no leading null rows"
        nothing = pa.array(["s-one", "s-two"], column.type.value_type).slice(2, 0)
        nulls = pa.DictionaryArray.from_arrays(pa.nulls(rows, column.type.index_type), nothing)
        chunks = pa.chunked_array([nulls, column.slice(rows)], column.type)
        table = table.set_column(table.column_names.index(name), name, chunks)
    return table
