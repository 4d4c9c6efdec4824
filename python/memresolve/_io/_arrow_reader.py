"""Reading Arrow tables of records, contexts and tombstones, checking every rule.

The reference reader (``memresolve._io._arrow`` documents the columns): each
rule, in column order, then the scope ids row by row, then unique record ids,
rejects the first bad row with ``InvalidInputError`` naming the column, the
row and the kind of problem, as the native reader does (``docs/spec.md`` §5.2).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memresolve._io._arrow_input import as_table, pyarrow_module
from memresolve._model import (
    ID_COLUMNS,
    INSTANT_MAX,
    INSTANT_MIN,
    INSTANT_RANGE_PROBLEM,
    RECORD_DEFAULTS,
    SCOPE_ID_COLUMNS,
    SCOPE_OWNER_COLUMN,
    Authority,
    ForgetTombstone,
    MemoryRecord,
    RetrievalContext,
    Scope,
    ScopeKind,
    Status,
    Subject,
    check_blocked_sources,
    check_source_salt,
    from_micros,
    make_scope,
)
from memresolve.errors import ErrorKind, InvalidInputError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "read_contexts_table",
    "read_records_table",
    "read_tombstones_table",
    "read_values_table",
    "with_cited_messages",
]

_REQUIRED = "is null; a value is required"
_NON_EMPTY = "is empty; a non-empty string is required"
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


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

    @property
    def rows(self) -> int:
        return int(self.table.num_rows)

    def has(self, column: str) -> bool:
        return column in self.table.column_names

    def _column(self, column: str) -> pa.ChunkedArray:
        if not self.has(column):
            raise self.fail(column, ErrorKind.MISSING_COLUMN, "is missing")
        return self.table.column(column)

    def validated(self, column: str, values: pa.ChunkedArray) -> pa.ChunkedArray:
        """``values``, fully validated (offsets, UTF-8) before a row is read, as the native
        reader validates each chunk: invalid data is ``malformed``, never a decoding error."""
        pa = pyarrow_module()
        try:
            values.validate(full=True)
        except (pa.ArrowInvalid, pa.ArrowException) as exc:
            raise self.fail(
                column, ErrorKind.MALFORMED, f"is not valid Arrow data: {exc}"
            ) from None
        return values

    def _all_null(self, column: str, *, required: bool) -> list[Any]:
        """A column of the Arrow ``null`` type: every row null."""
        if required and self.rows:
            raise self.fail(column, ErrorKind.MISSING, _REQUIRED, 0)
        return [None] * self.rows

    def text(self, column: str, *, required: bool, nonempty: bool = True) -> list[str | None]:
        pa = pyarrow_module()
        values = self._column(column)
        kind = values.type
        if pa.types.is_null(kind):
            return self._all_null(column, required=required)
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (
            pa.types.is_string(kind) or pa.types.is_large_string(kind) or _is_string_view(kind)
        ):
            raise self.fail(
                column, ErrorKind.WRONG_TYPE, f"must be a string column, got {values.type}"
            )
        texts: list[str | None] = self.validated(column, values).to_pylist()
        for row, text in enumerate(texts):
            if text is None:
                if required:
                    raise self.fail(column, ErrorKind.MISSING, _REQUIRED, row)
            elif nonempty and not text:
                raise self.fail(column, ErrorKind.EMPTY, _NON_EMPTY, row)
        return texts

    def optional_text(self, column: str) -> list[str | None]:
        """An optional, non-empty string column (all null when absent)."""
        return self.text(column, required=False) if self.has(column) else [None] * self.rows

    def enum(self, column: str, names: Sequence[str]) -> list[str]:
        texts = self.text(column, required=True)
        allowed = set(names)
        for row, text in enumerate(texts):
            if text not in allowed:
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
        if pa.types.is_null(kind):
            return self._all_null(column, required=required)
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
        ticks: list[int | None] = self.validated(column, values).cast(pa.int64()).to_pylist()
        micros: list[int | None] = []
        for row, tick in enumerate(ticks):
            if tick is None:
                if required:
                    raise self.fail(column, ErrorKind.MISSING, _REQUIRED, row)
                micros.append(None)
                continue
            instant = tick * 1_000_000 // per_second
            if not INSTANT_MIN <= instant <= INSTANT_MAX:
                raise self.fail(column, ErrorKind.OUT_OF_RANGE, INSTANT_RANGE_PROBLEM, row)
            micros.append(instant)
        return micros

    def optional_instants(self, column: str) -> list[int | None]:
        """An optional timestamp column (all null when absent)."""
        return self.instants(column, required=False) if self.has(column) else [None] * self.rows

    def optional_bools(self, column: str) -> list[bool | None]:
        """An optional bool column (all null when absent, or of the null type)."""
        pa = pyarrow_module()
        if not self.has(column):
            return [None] * self.rows
        values = self._column(column)
        if pa.types.is_null(values.type):
            return [None] * self.rows
        if not pa.types.is_boolean(values.type):
            raise self.fail(
                column, ErrorKind.WRONG_TYPE, f"must be a bool column, got {values.type}"
            )
        bools: list[bool | None] = values.to_pylist()
        return bools

    def text_lists(self, column: str) -> list[tuple[str, ...]]:
        """An optional column of string lists, one tuple per row (a null row, or an absent
        column, reads as empty); a null or empty string in a list names its row."""
        pa = pyarrow_module()
        if not self.has(column):
            return [()] * self.rows
        values = self._column(column)
        kind = values.type
        if pa.types.is_null(kind):
            return [()] * self.rows
        item = kind.value_type if pa.types.is_list(kind) or pa.types.is_large_list(kind) else None
        if item is None or not (
            pa.types.is_string(item)
            or pa.types.is_large_string(item)
            or _is_string_view(item)
            or pa.types.is_null(item)
        ):
            raise self.fail(
                column, ErrorKind.WRONG_TYPE, f"must be a list of strings column, got {kind}"
            )
        lists: list[tuple[str, ...]] = []
        for row, items in enumerate(self.validated(column, values).to_pylist()):
            if items is None:
                lists.append(())
                continue
            for item_text in items:
                if item_text is None:
                    raise self.fail(column, ErrorKind.MALFORMED, "holds a null item", row)
                if not item_text:
                    raise self.fail(
                        column,
                        ErrorKind.EMPTY,
                        "holds an empty string; items are non-empty strings",
                        row,
                    )
            lists.append(tuple(items))
        return lists

    def integers(self, column: str) -> list[int]:
        pa = pyarrow_module()
        values = self._column(column)
        kind = values.type
        if pa.types.is_null(kind):
            return self._all_null(column, required=True)
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

    def confidences(self, column: str) -> list[float]:
        pa = pyarrow_module()
        values = self._column(column)
        if pa.types.is_null(values.type):
            return self._all_null(column, required=True)
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

    def scope_id_columns(self) -> dict[str, list[str | None]]:
        """The four scope id columns, type checked; their rows are checked by ``scopes``."""
        return {column: self.text(column, required=False, nonempty=False) for column in ID_COLUMNS}

    def scopes(self, kinds: list[str], ids: dict[str, list[str | None]]) -> list[Scope]:
        """Each row's scope, row by row (``docs/spec.md`` §4.1): the ids its kind needs,
        non-null and non-empty; no id the kind does not use; an owner (a
        conversation or scene row's ``user_id``) null or non-empty.
        """
        scopes: list[Scope] = []
        for row, kind_name in enumerate(kinds):
            kind = ScopeKind(kind_name)
            needed = SCOPE_ID_COLUMNS[kind]
            owner_column = SCOPE_OWNER_COLUMN[kind]
            for column in needed:
                if ids[column][row] is None:
                    raise self.fail(
                        column, ErrorKind.MISSING, f"is null; a {kind} scope needs it", row
                    )
                if not ids[column][row]:
                    raise self.fail(
                        column, ErrorKind.EMPTY, f"is empty; a {kind} scope needs it", row
                    )
            for column in ID_COLUMNS:
                if column not in needed and column != owner_column and ids[column][row] is not None:
                    raise self.fail(
                        column,
                        ErrorKind.INCONSISTENT,
                        f"is set, but a {kind} scope has no {column}",
                        row,
                    )
            owner = None if owner_column is None else ids[owner_column][row]
            if owner_column is not None and owner == "":
                raise self.fail(
                    owner_column,
                    ErrorKind.EMPTY,
                    f"is empty; on a {kind} row it is the owner, null or a non-empty id",
                    row,
                )
            scopes.append(make_scope(kind, [ids[column][row] for column in needed], owner))
        return scopes


def _is_string_view(kind: pa.DataType) -> bool:
    pa = pyarrow_module()
    return bool(getattr(pa.types, "is_string_view", lambda _: False)(kind))


def _instant(micros: int | None) -> datetime | None:
    return None if micros is None else from_micros(micros)


#: Rows are numbered in 32 bits, one value kept for "no row" (as the native store does).
_MAX_ROWS = 2**32 - 1


def read_records_table(data: object, *, with_values: bool) -> list[MemoryRecord]:
    """Every row of a records table as a ``MemoryRecord``, checked column by column.

    With ``with_values=False`` (resolution) ``value`` and ``source_message_ids``
    are not read and ``confidence`` may be absent (resolution never reads it;
    the records then hold 0.0, which nothing shows). With ``with_values=True``
    (the converters) ``value`` and ``confidence`` are required: a record
    without them is not the record that was stored. ``status`` and
    ``version``, when absent, take the record defaults.
    """
    reader = _Reader(as_table(data, "records"), "records")
    if reader.rows >= _MAX_ROWS:
        raise reader.fail(
            "id",
            ErrorKind.OUT_OF_RANGE,
            f"has {reader.rows} rows; a store holds fewer than {_MAX_ROWS}",
        )
    rows = reader.rows
    ids = reader.text("id", required=True)
    keys = reader.text("key", required=True)
    kinds = reader.enum("scope_kind", tuple(ScopeKind))
    scope_ids = reader.scope_id_columns()
    statuses = (
        reader.enum("status", tuple(Status))
        if reader.has("status")
        else [RECORD_DEFAULTS["status"]] * rows
    )
    authorities = reader.enum("authority", tuple(Authority))
    valid_from = reader.instants("valid_from", required=True)
    valid_until = reader.optional_instants("valid_until")
    supersedes = reader.optional_text("supersedes")
    versions = (
        reader.integers("version") if reader.has("version") else [RECORD_DEFAULTS["version"]] * rows
    )
    observed_at = reader.optional_instants("observed_at")
    if with_values or reader.has("confidence"):
        confidences = reader.confidences("confidence")
    else:
        confidences = [0.0] * rows
    scopes = reader.scopes(kinds, scope_ids)
    first_row_of: dict[str, int] = {}
    for row, record_id in enumerate(ids):
        earlier = first_row_of.setdefault(record_id, row)  # type: ignore[arg-type]
        if earlier != row:
            error = reader.fail(
                "id", ErrorKind.DUPLICATE_ID, f"repeats the id of row {earlier}", row
            )
            error.record_id = record_id
            raise error
    values: list[str | None] = [""] * rows
    sources: list[Any] = [()] * rows
    if with_values:
        values = reader.text("value", required=True, nonempty=False)
        if reader.has("source_message_ids"):
            column = reader.table.column("source_message_ids")
            sources = reader.validated("source_message_ids", column).to_pylist()
    records = []
    for row in range(rows):
        try:
            records.append(
                MemoryRecord(
                    id=ids[row],  # type: ignore[arg-type]
                    key=keys[row],  # type: ignore[arg-type]
                    value=values[row],  # type: ignore[arg-type]
                    scope=scopes[row],
                    status=statuses[row],  # type: ignore[arg-type]
                    authority=authorities[row],  # type: ignore[arg-type]
                    confidence=confidences[row],
                    valid_from=_instant(valid_from[row]),  # type: ignore[arg-type]
                    valid_until=_instant(valid_until[row]),
                    source_message_ids=() if sources[row] is None else sources[row],
                    supersedes=supersedes[row],
                    version=versions[row],  # type: ignore[arg-type]
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
    """Every row of a contexts table as ``(context_id, RetrievalContext)``.

    A ``context_id`` that repeats an earlier row's is ``duplicate-id``: the
    two contexts' rows of a batch result could not be told apart.
    """
    reader = _Reader(as_table(data, "contexts"), "contexts")
    context_ids = reader.text("context_id", required=True, nonempty=False)
    now = reader.instants("now", required=True)
    users = reader.text("user_id", required=True)
    # The columns must exist (a table without them is likelier a mistake than
    # a table of profile pages); a null is a context without that id.
    characters = reader.text("character_id", required=False)
    conversations = reader.text("conversation_id", required=False)
    scenes = reader.optional_text("scene_id")
    for row, (scene, conversation) in enumerate(zip(scenes, conversations, strict=True)):
        if scene is not None and conversation is None:
            raise reader.fail(
                "scene_id",
                ErrorKind.INCONSISTENT,
                "names a scene but conversation_id is null (a scene belongs to one conversation)",
                row,
            )
    first_row_of: dict[str, int] = {}
    for row, context_id in enumerate(context_ids):
        earlier = first_row_of.setdefault(context_id, row)  # type: ignore[arg-type]
        if earlier != row:
            raise reader.fail(
                "context_id",
                ErrorKind.DUPLICATE_ID,
                f"repeats the context_id of row {earlier}",
                row,
            )
    return [
        (
            context_ids[row],  # type: ignore[misc]
            RetrievalContext(
                now=_instant(now[row]),  # type: ignore[arg-type]
                user_id=users[row],  # type: ignore[arg-type]
                character_id=characters[row],
                conversation_id=conversations[row],
                scene_id=scenes[row],
            ),
        )
        for row in range(len(now))
    ]


def read_tombstones_table(data: object) -> list[ForgetTombstone]:
    """Every row of a tombstones table as a ``ForgetTombstone`` (``docs/spec.md`` §1.5).

    ``forgotten_at`` and ``blocks_sources_before`` are each optional, but a row
    needs one of them; a missing one equals the other.
    """
    reader = _Reader(as_table(data, "tombstones"), "tombstones")
    keys = reader.text("key", required=True)
    kinds = reader.enum("scope_kind", tuple(ScopeKind))
    scope_ids = reader.scope_id_columns()
    if not reader.has(_BOUND) and not reader.has(_FORGOTTEN):
        raise reader.fail(
            _BOUND,
            ErrorKind.MISSING_COLUMN,
            "is missing, and so is forgotten_at: a tombstone needs one of them",
        )
    bounds = reader.optional_instants(_BOUND)
    forgotten = reader.optional_instants(_FORGOTTEN)
    user_wide = reader.optional_bools(_USER_WIDE)
    salts = (
        reader.text(_SALT, required=False, nonempty=False)
        if reader.has(_SALT)
        else [None] * reader.rows
    )
    hashes = reader.text_lists(_HASHES)
    scopes = reader.scopes(kinds, scope_ids)
    tombstones = []
    for row, (key, scope, bound, at, wide, salt, listed) in enumerate(
        zip(keys, scopes, bounds, forgotten, user_wide, salts, hashes, strict=True)
    ):
        if bound is not None and at is not None and bound > at:
            raise reader.fail(
                _BOUND,
                ErrorKind.INCONSISTENT,
                "is later than forgotten_at; it would block a fact re-told after the forget",
                row,
            )
        if bound is None and at is None:
            raise reader.fail(
                _BOUND,
                ErrorKind.MISSING,
                "is null, and so is forgotten_at; a tombstone needs one of them",
                row,
            )
        if wide and scope.kind is not ScopeKind.USER:
            raise reader.fail(
                _USER_WIDE,
                ErrorKind.INCONSISTENT,
                "is true on a tombstone whose scope is not a user scope; a user-wide "
                "tombstone is on the user's scope",
                row,
            )
        _check_sources(reader, row, salt, listed)
        tombstones.append(
            ForgetTombstone(
                key=key,
                scope=scope,
                forgotten_at=_instant(bound if at is None else at),  # type: ignore[arg-type]
                blocks_sources_before=_instant(at if bound is None else bound),  # type: ignore[arg-type]
                user_wide=bool(wide),
                source_salt=salt if listed or salt is not None else None,
                blocked_sources=frozenset(listed),
            )
        )
    return tombstones


def _check_sources(reader: _Reader, row: int, salt: str | None, listed: tuple[str, ...]) -> None:
    """A row's salt and hashes, by the rules of the Python fields and in their order (the
    salt, the hashes, then hashes without a salt), reported as the native reader does."""
    subject = Subject("tombstones")
    if salt is not None:
        try:
            check_source_salt(salt, subject)
        except InvalidInputError:
            raise reader.fail(
                _SALT,
                ErrorKind.MALFORMED,
                "must be 16 to 64 bytes as lowercase hex (32 to 128 digits)",
                row,
            ) from None
    try:
        check_blocked_sources(listed, subject)
    except InvalidInputError:
        raise reader.fail(
            _HASHES,
            ErrorKind.MALFORMED,
            "must hold SHA-256 digests as 64 lowercase hex digits",
            row,
        ) from None
    if listed and salt is None:
        raise reader.fail(
            _SALT,
            ErrorKind.MISSING,
            "is null but blocked_sources is not empty (the hashes were made with a salt)",
            row,
        )


def with_cited_messages(records: list[MemoryRecord], data: object) -> list[MemoryRecord]:
    """``records`` (read without their sources) with the ``source_message_ids`` of the
    records table ``data``: read only when a tombstone carries hashes (``docs/spec.md``
    §4.1), after the tables, as the native reader reads it."""
    reader = _Reader(as_table(data, "records"), "records")
    cited = reader.text_lists("source_message_ids")
    return [
        record if not messages else dataclasses.replace(record, source_message_ids=messages)
        for record, messages in zip(records, cited, strict=True)
    ]


def read_values_table(data: object) -> tuple[list[str], list[float]]:
    """The ``value`` and ``confidence`` of every row of a records table already read (the
    winners' values of ``resolve_batch(..., with_values=True)``), checked as the native
    reader checks them: ``value`` present and never null, then ``confidence`` present.
    """
    reader = _Reader(as_table(data, "records"), "records")
    values = reader.text("value", required=True, nonempty=False)
    if not reader.has("confidence"):
        raise reader.fail(
            "confidence",
            ErrorKind.MISSING_COLUMN,
            "is missing; the certainty of a winner needs it",
        )
    return values, reader.confidences("confidence")  # type: ignore[return-value]


_BOUND = "blocks_sources_before"
_FORGOTTEN = "forgotten_at"
_USER_WIDE = "user_wide"
_SALT = "source_salt"
_HASHES = "blocked_sources"
