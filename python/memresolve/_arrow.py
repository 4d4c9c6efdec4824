"""Arrow tables of records, contexts and tombstones: schema, converters, reference reader.

Any object implementing the Arrow PyCapsule interface (``__arrow_c_stream__`` or
``__arrow_c_array__``) is accepted: a pyarrow ``Table``/``RecordBatch``/
``RecordBatchReader``, a polars ``DataFrame``, a duckdb result. Needs pyarrow
(``pip install 'memresolve[arrow]'``).

Columns (SPEC §4: one per field, the scope flattened). Extra columns are ignored.

``records``: ``id``, ``key`` (non-empty strings); ``scope_kind`` (``user``,
``character``, ``conversation`` or ``scene``) and the ids the kind needs among
``user_id``, ``character_id``, ``conversation_id``, ``scene_id`` (nullable
strings); ``status``, ``authority`` (their string values); ``valid_from`` (a
timestamp with a time zone, any unit); ``version`` (signed integer, at most 64
bits). Optional: ``valid_until``, ``observed_at`` (nullable timestamps with a
time zone), ``supersedes`` (nullable string), ``confidence`` (float, finite,
0 to 1), ``value`` (string) and ``source_message_ids`` (list of strings), which
resolution never reads.

``contexts``: ``context_id`` (string), ``now`` (timestamp with a time zone),
``user_id``, ``character_id``, ``conversation_id`` (non-empty strings),
``scene_id`` (nullable string).

``tombstones``: ``key``, ``scope_kind`` and its ids as for records,
``blocks_sources_before`` (timestamp with a time zone); optional
``forgotten_at``.

Strings may be ``string``, ``large_string``, ``string_view`` or dictionary
encoded; input may be chunked or sliced. Instants are floored to microseconds
(SPEC §1). Each rule, in column order, then the scope ids row by row, then
unique record ids, rejects the first bad row with ``InvalidInputError`` naming
the column (``field``) and the row (``row``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memresolve._records import ForgetTombstone, MemoryRecord, RetrievalContext
from memresolve._scopes import CharacterScope, ConversationScope, SceneScope, Scope, UserScope
from memresolve._types import AUTHORITY_NAMES, SCOPE_KIND_NAMES, STATUS_NAMES
from memresolve._validate import to_micros
from memresolve.errors import InvalidInputError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "contexts_from_arrow",
    "contexts_to_arrow",
    "read_contexts_table",
    "read_records_table",
    "read_tombstones_table",
    "records_from_arrow",
    "records_to_arrow",
    "tombstones_from_arrow",
    "tombstones_to_arrow",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
#: The ids each scope kind needs, in order.
SCOPE_ID_COLUMNS = {
    "user": ("user_id",),
    "character": ("user_id", "character_id"),
    "conversation": ("conversation_id",),
    "scene": ("conversation_id", "scene_id"),
}
_ID_COLUMNS = ("user_id", "character_id", "conversation_id", "scene_id")


def _pyarrow() -> Any:
    try:
        import pyarrow  # noqa: PLC0415 - optional dependency
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError(
            "memresolve's Arrow functions need pyarrow: pip install 'memresolve[arrow]'"
        ) from exc
    return pyarrow


def as_table(data: object, what: str) -> pa.Table:
    """Any Arrow PyCapsule producer as a pyarrow ``Table``."""
    pa = _pyarrow()
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    if hasattr(data, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(data)])
    raise InvalidInputError(
        f"{what}: expected an Arrow table (an object with __arrow_c_stream__ or"
        f" __arrow_c_array__), got {type(data).__name__}",
        field=what,
    )


# Reading, column by column ----------------------------------------------------------------


@dataclass(frozen=True)
class _Reader:
    """The columns of one input table, read and checked by the rules of the module docstring."""

    table: pa.Table
    what: str

    def fail(self, column: str, problem: str, row: int | None = None) -> InvalidInputError:
        where = f"column {column!r}" if row is None else f"column {column!r} row {row}"
        return InvalidInputError(f"{self.what}: {where} {problem}", field=column, row=row)

    def has(self, column: str) -> bool:
        return column in self.table.column_names

    def _column(self, column: str) -> pa.ChunkedArray:
        if not self.has(column):
            raise self.fail(column, "is missing")
        return self.table.column(column)

    def text(self, column: str, *, required: bool, nonempty: bool = True) -> list[str | None]:
        pa = _pyarrow()
        values = self._column(column)
        kind = values.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (
            pa.types.is_string(kind) or pa.types.is_large_string(kind) or _is_string_view(kind)
        ):
            raise self.fail(column, f"must be a string column, got {values.type}")
        texts: list[str | None] = values.to_pylist()
        for row, text in enumerate(texts):
            if text is None:
                if required:
                    raise self.fail(column, "is null; a value is required", row)
            elif nonempty and not text:
                raise self.fail(column, "is empty; a non-empty string is required", row)
        return texts

    def enum(self, column: str, names: Sequence[str]) -> list[str]:
        texts = self.text(column, required=True)
        allowed = set(names)
        for row, text in enumerate(texts):
            if text not in allowed:
                # Quoted, not repr(): the native reader words it the same way.
                expected = ", ".join(f"'{name}'" for name in names)
                raise self.fail(
                    column, f"has unknown value '{text}'; expected one of {expected}", row
                )
        return texts  # type: ignore[return-value] # none is null

    def instants(self, column: str, *, required: bool) -> list[int | None]:
        """Microseconds since the epoch, floored (SPEC §1)."""
        pa = _pyarrow()
        values = self._column(column)
        kind = values.type
        if not pa.types.is_timestamp(kind):
            raise self.fail(column, f"must be a timestamp with a time zone, got {kind}")
        if kind.tz is None:
            raise self.fail(
                column,
                f"is a timestamp without a time zone ({kind}); memresolve never assumes one",
            )
        per_second = _PER_SECOND[kind.unit]
        ticks: list[int | None] = values.cast(pa.int64()).to_pylist()
        micros: list[int | None] = []
        for row, tick in enumerate(ticks):
            if tick is None:
                if required:
                    raise self.fail(column, "is null; a value is required", row)
                micros.append(None)
            else:
                micros.append(tick * 1_000_000 // per_second)
        return micros

    def integers(self, column: str) -> list[int]:
        pa = _pyarrow()
        values = self._column(column)
        kind = values.type
        if not (pa.types.is_signed_integer(kind) or kind in (pa.uint8(), pa.uint16(), pa.uint32())):
            raise self.fail(
                column, f"must be a signed integer column of at most 64 bits, got {kind}"
            )
        numbers: list[int | None] = values.to_pylist()
        for row, number in enumerate(numbers):
            if number is None:
                raise self.fail(column, "is null; a value is required", row)
        return numbers  # type: ignore[return-value] # none is null

    def confidences(self, column: str) -> list[float] | None:
        pa = _pyarrow()
        if not self.has(column):
            return None
        values = self._column(column)
        if not pa.types.is_floating(values.type):
            raise self.fail(column, f"must be a float column, got {values.type}")
        numbers: list[float | None] = values.to_pylist()
        for row, number in enumerate(numbers):
            if number is None:
                raise self.fail(column, "is null; a value is required", row)
            if not math.isfinite(number):
                raise self.fail(column, f"must be a finite number, got {number}", row)
            if not 0.0 <= number <= 1.0:
                raise self.fail(column, f"must be between 0 and 1, got {number}", row)
        return numbers  # type: ignore[return-value] # none is null

    def scopes(self, kinds: list[str]) -> list[Scope]:
        """Each row's scope; the ids its kind needs must be non-null and non-empty."""
        ids = {column: self.text(column, required=False, nonempty=False) for column in _ID_COLUMNS}
        scopes: list[Scope] = []
        for row, kind in enumerate(kinds):
            needed = SCOPE_ID_COLUMNS[kind]
            for column in needed:
                if ids[column][row] is None:
                    raise self.fail(column, f"is null; a {kind} scope needs it", row)
                if not ids[column][row]:
                    raise self.fail(column, f"is empty; a {kind} scope needs it", row)
            fields = [ids[column][row] for column in needed]
            scopes.append(_SCOPE_TYPES[kind](*fields))
        return scopes


def _is_string_view(kind: pa.DataType) -> bool:
    pa = _pyarrow()
    return bool(getattr(pa.types, "is_string_view", lambda _: False)(kind))


_SCOPE_TYPES: dict[str, Callable[..., Scope]] = {
    "user": UserScope,
    "character": CharacterScope,
    "conversation": ConversationScope,
    "scene": SceneScope,
}


def _instant(micros: int | None) -> datetime | None:
    return None if micros is None else _EPOCH + timedelta(microseconds=micros)


def read_records_table(data: object, *, with_values: bool) -> list[MemoryRecord]:
    """Every row of a records table as a ``MemoryRecord``, checked column by column.

    With ``with_values=False`` (resolution) ``value`` and ``source_message_ids``
    are not read; absent optional columns take neutral defaults.
    """
    reader = _Reader(as_table(data, "records"), "records")
    ids = reader.text("id", required=True)
    keys = reader.text("key", required=True)
    kinds = reader.enum("scope_kind", SCOPE_KIND_NAMES)
    for column in _ID_COLUMNS:
        reader.text(column, required=False, nonempty=False)
    statuses = reader.enum("status", STATUS_NAMES)
    authorities = reader.enum("authority", AUTHORITY_NAMES)
    valid_from = reader.instants("valid_from", required=True)
    valid_until = (
        reader.instants("valid_until", required=False)
        if reader.has("valid_until")
        else [None] * len(ids)
    )
    supersedes = (
        reader.text("supersedes", required=False) if reader.has("supersedes") else [None] * len(ids)
    )
    versions = reader.integers("version")
    observed_at = (
        reader.instants("observed_at", required=False)
        if reader.has("observed_at")
        else [None] * len(ids)
    )
    confidences = reader.confidences("confidence") or [0.0] * len(ids)
    scopes = reader.scopes(kinds)
    first_row_of: dict[str, int] = {}
    for row, record_id in enumerate(ids):
        earlier = first_row_of.setdefault(record_id, row)  # type: ignore[arg-type]
        if earlier != row:
            error = reader.fail("id", f"repeats the id of row {earlier}", row)
            error.record_id = record_id
            raise error
    values: list[str | None] = [""] * len(ids)
    sources: list[Any] = [()] * len(ids)
    if with_values:
        if reader.has("value"):
            values = reader.text("value", required=True, nonempty=False)
        if reader.has("source_message_ids"):
            sources = reader.table.column("source_message_ids").to_pylist()
    records = []
    for row in range(len(ids)):
        try:
            records.append(
                MemoryRecord(
                    id=ids[row],  # type: ignore[arg-type]
                    key=keys[row],  # type: ignore[arg-type]
                    value=values[row],  # type: ignore[arg-type]
                    scope=scopes[row],
                    status=statuses[row],
                    authority=authorities[row],
                    confidence=confidences[row],
                    valid_from=_instant(valid_from[row]),  # type: ignore[arg-type]
                    valid_until=_instant(valid_until[row]),
                    source_message_ids=() if sources[row] is None else sources[row],
                    supersedes=supersedes[row],
                    version=versions[row],
                    observed_at=_instant(observed_at[row]),
                )
            )
        except InvalidInputError as error:
            raise InvalidInputError(
                f"records: row {row}: {error}",
                record_id=error.record_id,
                field=error.field,
                row=row,
            ) from error
    return records


def read_contexts_table(data: object) -> list[tuple[str, RetrievalContext]]:
    """Every row of a contexts table as ``(context_id, RetrievalContext)``."""
    reader = _Reader(as_table(data, "contexts"), "contexts")
    context_ids = reader.text("context_id", required=True, nonempty=False)
    now = reader.instants("now", required=True)
    users = reader.text("user_id", required=True)
    characters = reader.text("character_id", required=True)
    conversations = reader.text("conversation_id", required=True)
    scenes = (
        reader.text("scene_id", required=False) if reader.has("scene_id") else [None] * len(now)
    )
    return [
        (
            context_ids[row],  # type: ignore[misc]
            RetrievalContext(
                now=_instant(now[row]),  # type: ignore[arg-type]
                user_id=users[row],  # type: ignore[arg-type]
                character_id=characters[row],  # type: ignore[arg-type]
                conversation_id=conversations[row],  # type: ignore[arg-type]
                scene_id=scenes[row],
            ),
        )
        for row in range(len(now))
    ]


def read_tombstones_table(data: object) -> list[ForgetTombstone]:
    """Every row of a tombstones table as a ``ForgetTombstone``."""
    reader = _Reader(as_table(data, "tombstones"), "tombstones")
    keys = reader.text("key", required=True)
    kinds = reader.enum("scope_kind", SCOPE_KIND_NAMES)
    for column in _ID_COLUMNS:
        reader.text(column, required=False, nonempty=False)
    bounds = reader.instants("blocks_sources_before", required=True)
    forgotten = (
        reader.instants("forgotten_at", required=False)
        if reader.has("forgotten_at")
        else [None] * len(keys)
    )
    scopes = reader.scopes(kinds)
    return [
        ForgetTombstone(
            key=keys[row],  # type: ignore[arg-type]
            scope=scopes[row],
            forgotten_at=_instant(bounds[row] if forgotten[row] is None else forgotten[row]),  # type: ignore[arg-type]
            blocks_sources_before=_instant(bounds[row]),  # type: ignore[arg-type]
        )
        for row in range(len(keys))
    ]


# Writing ----------------------------------------------------------------------------------


def _timestamp_type() -> Any:
    return _pyarrow().timestamp("us", tz="UTC")


def _scope_columns(scopes: Sequence[Scope]) -> dict[str, list[str | None]]:
    columns: dict[str, list[str | None]] = {"scope_kind": [s.kind for s in scopes]}
    for column in _ID_COLUMNS:
        columns[column] = [
            getattr(scope, column) if column in SCOPE_ID_COLUMNS[scope.kind] else None
            for scope in scopes
        ]
    return columns


def _micros(moment: datetime | None) -> int | None:
    return None if moment is None else to_micros(moment)


def records_to_arrow(records: Iterable[MemoryRecord]) -> pa.Table:
    """Records as a pyarrow ``Table`` with every column of the records schema.

    Instants are written in microseconds, UTC: the same instants (records
    compare equal after a round trip), not their original UTC offsets.
    """
    pa = _pyarrow()
    rows = list(records)
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


def contexts_to_arrow(contexts: Iterable[tuple[str, RetrievalContext]]) -> pa.Table:
    """``(context_id, RetrievalContext)`` pairs as a pyarrow ``Table``."""
    pa = _pyarrow()
    rows = list(contexts)
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


def contexts_from_arrow(data: object) -> list[tuple[str, RetrievalContext]]:
    """``(context_id, RetrievalContext)`` pairs from any Arrow table of the contexts schema."""
    return read_contexts_table(data)


def tombstones_to_arrow(tombstones: Iterable[ForgetTombstone]) -> pa.Table:
    """Tombstones as a pyarrow ``Table``."""
    pa = _pyarrow()
    rows = list(tombstones)
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
        }
    )


def tombstones_from_arrow(data: object) -> list[ForgetTombstone]:
    """Tombstones from any Arrow table of the tombstones schema."""
    return read_tombstones_table(data)


#: The values of the ``decision`` column, by code: ``active``, then each reason.
DECISIONS = ("active", "scope", "status-or-time", "forgotten", "superseded", "lower-precedence")


def decision_table(
    context_ids: Sequence[str], record_ids: Sequence[str], decisions: Sequence[int]
) -> pa.Table:
    """The batch result: ``context_id``, ``record_id``, ``decision`` (dictionary of int8)."""
    pa = _pyarrow()
    schema = pa.schema(
        [
            pa.field("context_id", pa.string(), nullable=False),
            pa.field("record_id", pa.string(), nullable=False),
            pa.field("decision", pa.dictionary(pa.int8(), pa.string()), nullable=False),
        ]
    )
    columns = [
        pa.array(context_ids, pa.string()),
        pa.array(record_ids, pa.string()),
        pa.DictionaryArray.from_arrays(
            pa.array(decisions, pa.int8()), pa.array(DECISIONS, pa.string())
        ),
    ]
    return pa.Table.from_arrays(columns, schema=schema)
