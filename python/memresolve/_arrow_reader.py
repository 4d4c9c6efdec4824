"""Reading Arrow tables of records, contexts and tombstones, checking every rule.

The reference reader (``memresolve._arrow`` documents the columns): each
rule, in column order, then the scope ids row by row, then unique record ids,
rejects the first bad row with ``InvalidInputError`` naming the column, the
row and the kind of problem, as the native reader does (``docs/spec.md`` §5.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memresolve._records import ForgetTombstone, MemoryRecord, RetrievalContext
from memresolve._scopes import CharacterScope, ConversationScope, SceneScope, Scope, UserScope
from memresolve._types import ID_COLUMNS, SCOPE_ID_COLUMNS, Authority, ScopeKind, Status
from memresolve.errors import ErrorKind, InvalidInputError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "as_table",
    "pyarrow_module",
    "read_contexts_table",
    "read_records_table",
    "read_tombstones_table",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_REQUIRED = "is null; a value is required"
_NON_EMPTY = "is empty; a non-empty string is required"
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def pyarrow_module() -> Any:
    try:
        import pyarrow  # noqa: PLC0415 - optional dependency
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError(
            "memresolve's Arrow functions need pyarrow: pip install 'memresolve[arrow]'"
        ) from exc
    return pyarrow


def as_table(data: object, what: str) -> pa.Table:
    """Any Arrow PyCapsule producer as a pyarrow ``Table``."""
    pa = pyarrow_module()
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
        kind=ErrorKind.WRONG_TYPE,
        field=what,
    )


# Reading, column by column ----------------------------------------------------------------


@dataclass(frozen=True)
class _Reader:
    """The columns of one input table, read and checked by the rules of the module docstring."""

    table: pa.Table
    what: str

    def fail(
        self, column: str, kind: ErrorKind, problem: str, row: int | None = None
    ) -> InvalidInputError:
        where = f"column {column!r}" if row is None else f"column {column!r} row {row}"
        return InvalidInputError(
            f"{self.what}: {where} {problem}", kind=kind, field=column, row=row
        )

    def has(self, column: str) -> bool:
        return column in self.table.column_names

    def _column(self, column: str) -> pa.ChunkedArray:
        if not self.has(column):
            raise self.fail(column, ErrorKind.MISSING_COLUMN, "is missing")
        return self.table.column(column)

    def text(self, column: str, *, required: bool, nonempty: bool = True) -> list[str | None]:
        pa = pyarrow_module()
        values = self._column(column)
        kind = values.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (
            pa.types.is_string(kind) or pa.types.is_large_string(kind) or _is_string_view(kind)
        ):
            raise self.fail(
                column, ErrorKind.WRONG_TYPE, f"must be a string column, got {values.type}"
            )
        texts: list[str | None] = values.to_pylist()
        for row, text in enumerate(texts):
            if text is None:
                if required:
                    raise self.fail(column, ErrorKind.MISSING, _REQUIRED, row)
            elif nonempty and not text:
                raise self.fail(column, ErrorKind.EMPTY, _NON_EMPTY, row)
        return texts

    def enum(self, column: str, names: Sequence[str]) -> list[str]:
        texts = self.text(column, required=True)
        allowed = set(names)
        for row, text in enumerate(texts):
            if text not in allowed:
                # Quoted, not repr(): the native reader words it the same way.
                expected = ", ".join(f"'{name}'" for name in names)
                raise self.fail(
                    column,
                    ErrorKind.UNKNOWN_VALUE,
                    f"has unknown value '{text}'; expected one of {expected}",
                    row,
                )
        return texts  # type: ignore[return-value] # none is null

    def instants(self, column: str, *, required: bool) -> list[int | None]:
        """Microseconds since the epoch, floored (spec §1.6)."""
        pa = pyarrow_module()
        values = self._column(column)
        kind = values.type
        if not pa.types.is_timestamp(kind):
            raise self.fail(
                column, ErrorKind.WRONG_TYPE, f"must be a timestamp with a time zone, got {kind}"
            )
        if kind.tz is None:
            raise self.fail(
                column,
                ErrorKind.NAIVE_TIME,
                f"is a timestamp without a time zone ({kind}); memresolve never assumes one",
            )
        per_second = _PER_SECOND[kind.unit]
        ticks: list[int | None] = values.cast(pa.int64()).to_pylist()
        micros: list[int | None] = []
        for row, tick in enumerate(ticks):
            if tick is None:
                if required:
                    raise self.fail(column, ErrorKind.MISSING, _REQUIRED, row)
                micros.append(None)
            else:
                micros.append(tick * 1_000_000 // per_second)
        return micros

    def integers(self, column: str) -> list[int]:
        pa = pyarrow_module()
        values = self._column(column)
        kind = values.type
        if not (pa.types.is_signed_integer(kind) or kind in (pa.uint8(), pa.uint16(), pa.uint32())):
            raise self.fail(
                column,
                ErrorKind.WRONG_TYPE,
                f"must be a signed integer column of at most 64 bits, got {kind}",
            )
        numbers: list[int | None] = values.to_pylist()
        for row, number in enumerate(numbers):
            if number is None:
                raise self.fail(column, ErrorKind.MISSING, _REQUIRED, row)
        return numbers  # type: ignore[return-value] # none is null

    def confidences(self, column: str) -> list[float] | None:
        pa = pyarrow_module()
        if not self.has(column):
            return None
        values = self._column(column)
        if not pa.types.is_floating(values.type):
            raise self.fail(
                column, ErrorKind.WRONG_TYPE, f"must be a float column, got {values.type}"
            )
        numbers: list[float | None] = values.to_pylist()
        for row, number in enumerate(numbers):
            if number is None:
                raise self.fail(column, ErrorKind.MISSING, _REQUIRED, row)
            if not math.isfinite(number):
                raise self.fail(
                    column, ErrorKind.NOT_FINITE, f"must be a finite number, got {number}", row
                )
            if not 0.0 <= number <= 1.0:
                raise self.fail(
                    column, ErrorKind.OUT_OF_RANGE, f"must be between 0 and 1, got {number}", row
                )
        return numbers  # type: ignore[return-value] # none is null

    def scopes(self, kinds: list[str]) -> list[Scope]:
        """Each row's scope; the ids its kind needs must be non-null and non-empty."""
        ids = {column: self.text(column, required=False, nonempty=False) for column in ID_COLUMNS}
        scopes: list[Scope] = []
        for row, kind in enumerate(kinds):
            needed = SCOPE_ID_COLUMNS[ScopeKind(kind)]
            for column in needed:
                if ids[column][row] is None:
                    raise self.fail(
                        column, ErrorKind.MISSING, f"is null; a {kind} scope needs it", row
                    )
                if not ids[column][row]:
                    raise self.fail(
                        column, ErrorKind.EMPTY, f"is empty; a {kind} scope needs it", row
                    )
            fields = [ids[column][row] for column in needed]
            scopes.append(_SCOPE_TYPES[kind](*fields))
        return scopes


def _is_string_view(kind: pa.DataType) -> bool:
    pa = pyarrow_module()
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
    kinds = reader.enum("scope_kind", tuple(ScopeKind))
    for column in ID_COLUMNS:
        reader.text(column, required=False, nonempty=False)
    statuses = reader.enum("status", tuple(Status))
    authorities = reader.enum("authority", tuple(Authority))
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
            error = reader.fail(
                "id", ErrorKind.DUPLICATE_ID, f"repeats the id of row {earlier}", row
            )
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
                kind=error.kind,
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
    kinds = reader.enum("scope_kind", tuple(ScopeKind))
    for column in ID_COLUMNS:
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
