"""Arrow tables of records, contexts and tombstones: the schema, and the converters.

Any object implementing the Arrow PyCapsule interface (``__arrow_c_stream__`` or
``__arrow_c_array__``) is accepted: a pyarrow ``Table``/``RecordBatch``/
``RecordBatchReader``, a polars ``DataFrame`` or ``LazyFrame``, a duckdb
relation. Needs pyarrow (``pip install 'memresolve[arrow]'``).

Columns (``docs/spec.md`` §4.1: one per field, the scope flattened). Extra columns are ignored.

``records``: ``id``, ``key`` (non-empty strings); ``scope_kind`` (``user``,
``character``, ``conversation`` or ``scene``) and the four id columns
``user_id``, ``character_id``, ``conversation_id``, ``scene_id`` (nullable
strings: the ids the kind needs are required; on a conversation or scene row
a non-null ``user_id`` is the scope's owner; any other id is an error);
``authority`` (its string value); ``valid_from`` (a timestamp with a time
zone, any unit). Optional: ``status`` (default ``active``), ``version``
(signed integer of at most 64 bits, default 1), ``valid_until``,
``observed_at`` (nullable timestamps with a time zone), ``supersedes``
(nullable string), ``confidence`` (float, finite, 0 to 1), ``value`` (string)
and ``source_message_ids`` (list of strings), which resolution reads only when a
tombstone carries hashes (and then after the tables, as the native reader does);
the converters (``records_from_arrow``) require ``value`` and ``confidence``.

``contexts``: ``context_id`` (string, unique), ``now`` (timestamp with a time
zone), ``user_id`` (non-empty string), ``character_id``, ``conversation_id``
(nullable non-empty strings: the columns must exist, a null is a context
without that id), ``scene_id`` (nullable string; a scene on a row without a
conversation is ``inconsistent``).

``tombstones``: ``key``, ``scope_kind`` and its ids as for records,
``forgotten_at`` and ``blocks_sources_before`` (timestamps with a time zone,
each optional but one per row; a missing one equals the other; the bound may
not be later than ``forgotten_at``), ``user_wide`` (optional bool, null
false; true only on a ``user`` scope), ``source_salt`` (optional string, lowercase
hex) and ``blocked_sources`` (optional list of strings, the salted hashes; not
empty only with a salt).

Strings may be ``string``, ``large_string``, ``string_view`` or dictionary
encoded; a column of the Arrow ``null`` type reads as all null; input may be
chunked or sliced. Instants are floored to microseconds (spec §1.6). Each
rule, in column order, then the scope ids row by row, then unique ids, rejects
the first bad row with ``InvalidInputError`` naming the column (``field``),
the row (``row``) and the problem (``kind``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from memresolve._io._arrow_input import as_table, pyarrow_module
from memresolve._io._arrow_reader import (
    read_contexts_table,
    read_records_table,
    read_tombstones_table,
    read_values_table,
    with_cited_messages,
)
from memresolve._model import (
    DECISION_NAMES,
    ID_COLUMNS,
    Certainty,
    ForgetTombstone,
    MemoryRecord,
    PurgeCause,
    RetrievalContext,
    Scope,
    Status,
    arguments,
    context_pairs,
    identified_contexts,
    scope_columns,
    to_micros,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "as_table",
    "contexts_from_arrow",
    "contexts_to_arrow",
    "decision_table",
    "purge_table",
    "read_contexts_table",
    "read_records_table",
    "read_tombstones_table",
    "read_values_table",
    "records_from_arrow",
    "records_to_arrow",
    "status_change_table",
    "tombstones_from_arrow",
    "tombstones_to_arrow",
    "with_cited_messages",
]


# Writing ----------------------------------------------------------------------------------


def _timestamp_type() -> Any:
    return pyarrow_module().timestamp("us", tz="UTC")


def _scope_columns(scopes: Sequence[Scope]) -> dict[str, list[str | None]]:
    """``scope_kind`` and the four id columns (an owner in ``user_id``), column by column."""
    rows = [scope_columns(scope) for scope in scopes]
    return {name: [row[name] for row in rows] for name in ("scope_kind", *ID_COLUMNS)}


def _micros(moment: datetime | None) -> int | None:
    return None if moment is None else to_micros(moment)


def records_to_arrow(records: Iterable[MemoryRecord]) -> pa.Table:
    """Records as a pyarrow ``Table`` with every column of the records schema.

    Instants are written in microseconds, UTC: the same instants (records
    compare equal after a round trip), not their original UTC offsets.
    """
    pa = pyarrow_module()
    rows = arguments.items(records, MemoryRecord, "records")
    string, timestamp = pa.string(), _timestamp_type()
    columns: dict[str, Any] = {
        "id": pa.array([r.id for r in rows], string),
        "key": pa.array([r.key for r in rows], string),
        **{
            name: pa.array(values, string)
            for name, values in _scope_columns([r.scope for r in rows]).items()
        },
        "status": pa.array([r.status.value for r in rows], string),
        "authority": pa.array([r.authority.value for r in rows], string),
        "confidence": pa.array([r.confidence for r in rows], pa.float64()),
        "valid_from": pa.array([_micros(r.valid_from) for r in rows], pa.int64()).cast(timestamp),
        "valid_until": pa.array([_micros(r.valid_until) for r in rows], pa.int64()).cast(timestamp),
        "supersedes": pa.array([r.supersedes for r in rows], string),
        "version": pa.array([r.version for r in rows], pa.int64()),
        "observed_at": pa.array([_micros(r.observed_at) for r in rows], pa.int64()).cast(timestamp),
        "value": pa.array([r.value for r in rows], string),
        "source_message_ids": pa.array(
            [list(r.source_message_ids) for r in rows], pa.list_(string)
        ),
    }
    return pa.table(columns)


def records_from_arrow(data: object) -> list[MemoryRecord]:
    """Records from any Arrow table of the records schema (values included)."""
    return read_records_table(data, with_values=True)


def contexts_to_arrow(
    contexts: Mapping[str, RetrievalContext]
    | Iterable[tuple[str, RetrievalContext] | RetrievalContext],
) -> pa.Table:
    """Contexts as a pyarrow ``Table``: a mapping of ``context_id`` to context, or
    ``(context_id, RetrievalContext)`` pairs, or bare contexts (each then has its 1-based
    position as its id, as in JSON Lines)."""
    pa = pyarrow_module()
    rows = _context_pairs(contexts)
    string = pa.string()
    return pa.table(
        {
            "context_id": pa.array([cid for cid, _ in rows], string),
            "now": pa.array([to_micros(c.now) for _, c in rows], pa.int64()).cast(
                _timestamp_type()
            ),
            "user_id": pa.array([c.user_id for _, c in rows], string),
            "character_id": pa.array([c.character_id for _, c in rows], string),
            "conversation_id": pa.array([c.conversation_id for _, c in rows], string),
            "scene_id": pa.array([c.scene_id for _, c in rows], string),
        }
    )


def _context_pairs(contexts: object) -> tuple[tuple[str, RetrievalContext], ...]:
    """The contexts of ``contexts_to_arrow``, checked, each with its id (its 1-based
    position when given without one)."""
    return identified_contexts(context_pairs(contexts))


def contexts_from_arrow(data: object) -> list[tuple[str, RetrievalContext]]:
    """``(context_id, RetrievalContext)`` pairs from any Arrow table of the contexts schema."""
    return read_contexts_table(data)


def tombstones_to_arrow(tombstones: Iterable[ForgetTombstone]) -> pa.Table:
    """Tombstones as a pyarrow ``Table``."""
    pa = pyarrow_module()
    rows = arguments.items(tombstones, ForgetTombstone, "tombstones")
    string, timestamp = pa.string(), _timestamp_type()
    return pa.table(
        {
            "key": pa.array([t.key for t in rows], string),
            **{
                name: pa.array(values, string)
                for name, values in _scope_columns([t.scope for t in rows]).items()
            },
            "forgotten_at": pa.array([to_micros(t.forgotten_at) for t in rows], pa.int64()).cast(
                timestamp
            ),
            "blocks_sources_before": pa.array(
                [to_micros(t.blocks_sources_before) for t in rows], pa.int64()
            ).cast(timestamp),
            "user_wide": pa.array([t.user_wide for t in rows], pa.bool_()),
            "source_salt": pa.array([t.source_salt for t in rows], string),
            "blocked_sources": pa.array(
                [sorted(t.blocked_sources) if t.blocked_sources else None for t in rows],
                pa.list_(string),
            ),
        }
    )


def tombstones_from_arrow(data: object) -> list[ForgetTombstone]:
    """Tombstones from any Arrow table of the tombstones schema."""
    return read_tombstones_table(data)


def decision_table(
    context_ids: Sequence[str],
    record_ids: Sequence[str],
    decisions: Sequence[int],
    winners: Sequence[tuple[str, str, int] | None] | None = None,
) -> pa.Table:
    """The batch result (``docs/spec.md`` §4.2): ``context_id``, ``record_id``,
    ``decision`` (dictionary of int8), and when ``winners`` is given (one
    ``(key, value, certainty code)`` per row, ``None`` for a row that does not
    win) ``key``, ``value`` and ``certainty`` (dictionary of int8).
    """
    pa = pyarrow_module()
    dictionary = pa.dictionary(pa.int8(), pa.string())
    fields = [
        pa.field("context_id", pa.string(), nullable=False),
        pa.field("record_id", pa.string(), nullable=False),
        pa.field("decision", dictionary, nullable=False),
    ]
    columns = [
        pa.array(context_ids, pa.string()),
        pa.array(record_ids, pa.string()),
        pa.DictionaryArray.from_arrays(
            pa.array(decisions, pa.int8()), pa.array(DECISION_NAMES, pa.string())
        ),
    ]
    if winners is not None:
        fields += [
            pa.field("key", pa.string()),
            pa.field("value", pa.string()),
            pa.field("certainty", dictionary),
        ]
        columns += [
            pa.array([None if w is None else w[0] for w in winners], pa.string()),
            pa.array([None if w is None else w[1] for w in winners], pa.string()),
            pa.DictionaryArray.from_arrays(
                pa.array([None if w is None else w[2] for w in winners], pa.int8()),
                pa.array([c.value for c in Certainty], pa.string()),
            ),
        ]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _codes(pa: Any, values: Sequence[StrEnum], vocabulary: type[StrEnum]) -> Any:
    """A ``dictionary<int8, string>`` column of enum members over the whole vocabulary."""
    code = {member: index for index, member in enumerate(vocabulary)}
    return pa.DictionaryArray.from_arrays(
        pa.array([code[value] for value in values], pa.int8()),
        pa.array([member.value for member in vocabulary], pa.string()),
    )


def status_change_table(record_ids: Sequence[str], statuses: Sequence[Status]) -> pa.Table:
    """``normalize_batch``'s result (``docs/spec.md`` §7.1): ``record_id``, ``old_status``
    (always ``active``: only active records change) and ``new_status``, both dictionaries
    of int8 over every status."""
    pa = pyarrow_module()
    dictionary = pa.dictionary(pa.int8(), pa.string())
    schema = pa.schema(
        [
            pa.field("record_id", pa.string(), nullable=False),
            pa.field("old_status", dictionary, nullable=False),
            pa.field("new_status", dictionary, nullable=False),
        ]
    )
    columns = [
        pa.array(record_ids, pa.string()),
        _codes(pa, [Status.ACTIVE] * len(statuses), Status),
        _codes(pa, statuses, Status),
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def purge_table(
    record_ids: Sequence[str],
    keys: Sequence[str],
    scope_ids: Sequence[str],
    causes: Sequence[PurgeCause],
) -> pa.Table:
    """``forget_sweep_batch``'s result (``docs/spec.md`` §7.2): ``record_id``, ``key``,
    ``scope_id`` and ``cause`` (dictionary of int8). Never a value."""
    pa = pyarrow_module()
    schema = pa.schema(
        [
            pa.field("record_id", pa.string(), nullable=False),
            pa.field("key", pa.string(), nullable=False),
            pa.field("scope_id", pa.string(), nullable=False),
            pa.field("cause", pa.dictionary(pa.int8(), pa.string()), nullable=False),
        ]
    )
    columns = [
        pa.array(record_ids, pa.string()),
        pa.array(keys, pa.string()),
        pa.array(scope_ids, pa.string()),
        _codes(pa, causes, PurgeCause),
    ]
    return pa.Table.from_arrays(columns, schema=schema)
