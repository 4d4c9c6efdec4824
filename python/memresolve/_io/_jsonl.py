"""JSON Lines reading and writing of records, contexts and tombstones.

One JSON object per line, fields named as in the Python classes. A scope is
an object with its ``kind`` and that kind's ids; instants are ISO-8601 strings
with a UTC offset (``2026-07-30T12:00:00+00:00`` or ``...Z``). Reading is
strict: a missing or unknown field, a duplicate key, a naive instant or any
rule of ``docs/spec.md`` §1 raises ``InvalidInputError`` naming the line, the
record and the field. Blank lines are skipped. Files are read a line at a time, each
line at most ``MAX_LINE_BYTES`` (16 MiB; ``_lines``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import IO, Any, Literal, TypeAlias, TypeGuard, TypeVar, overload

from memresolve._io._lines import Source, numbered_lines
from memresolve._model import (
    RECORD_DEFAULTS,
    RECORD_FIELDS,
    ForgetTombstone,
    MemoryRecord,
    RetrievalContext,
    Subject,
    any_text,
    arguments,
    check,
    context_pairs,
    identified_contexts,
    json_type_name,
    positional_context_id,
    scope_from_json,
    scope_to_json,
)
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "context_from_json",
    "context_to_json",
    "read_contexts",
    "read_records",
    "read_tombstones",
    "record_from_json",
    "record_to_json",
    "tombstone_from_json",
    "tombstone_to_json",
    "write_contexts",
    "write_records",
    "write_tombstones",
]

JsonObject: TypeAlias = dict[str, Any]
T = TypeVar("T")

# The record's own tables: the fields with a default may be left out (and take it).
_RECORD_REQUIRED = tuple(name for name in RECORD_FIELDS if name not in RECORD_DEFAULTS)
_RECORD_OPTIONAL = tuple(name for name in RECORD_FIELDS if name in RECORD_DEFAULTS)
_INSTANT_FIELDS = ("valid_from", "valid_until", "observed_at")
_CONTEXT_REQUIRED = ("now", "user_id")
_CONTEXT_OPTIONAL = ("context_id", "character_id", "conversation_id", "scene_id")
_TOMBSTONE_REQUIRED = ("key", "scope", "forgotten_at")


# Objects <-> JSON values ------------------------------------------------------------------


def _instant_to_json(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _instant_from_json(value: object, subject: Subject, field: str) -> datetime:
    if not isinstance(value, str):
        subject.fail(
            field,
            ErrorKind.WRONG_TYPE,
            f"must be an ISO-8601 string with a UTC offset, got {json_type_name(value)}",
        )
    return check.instant_text(value, subject, field)


def _optional_instant_from_json(value: object, subject: Subject, field: str) -> datetime | None:
    return None if value is None else _instant_from_json(value, subject, field)


def _fields(
    obj: object, subject: Subject, required: Iterable[str], optional: Iterable[str] = ()
) -> Mapping[str, Any]:
    """The object's fields, after checking that none is missing and none is unknown."""
    if not isinstance(obj, dict):
        raise InvalidInputError(
            f"{subject.label}: expected a JSON object, got {json_type_name(obj)}",
            kind=ErrorKind.WRONG_TYPE,
            record_id=subject.record_id,
        )
    required = tuple(required)
    for name in required:
        if name not in obj:
            subject.fail(name, ErrorKind.MISSING, "is missing")
    known = {*required, *optional}
    for name in obj:
        if name not in known:
            subject.fail(
                name,
                ErrorKind.UNKNOWN_FIELD,
                f"is not a known field (expected: {', '.join(sorted(known))})",
            )
    return obj


def record_to_json(record: MemoryRecord) -> JsonObject:
    """The JSON object for ``record``; ``record_from_json`` reads it back equal."""
    return {
        "id": record.id,
        "key": record.key,
        "value": record.value,
        "scope": scope_to_json(record.scope),
        "status": record.status.value,
        "authority": record.authority.value,
        "confidence": record.confidence,
        "valid_from": _instant_to_json(record.valid_from),
        "valid_until": _instant_to_json(record.valid_until),
        "source_message_ids": list(record.source_message_ids),
        "supersedes": record.supersedes,
        "version": record.version,
        "observed_at": _instant_to_json(record.observed_at),
    }


def _is_valid_id(record_id: object) -> TypeGuard[str]:
    # An error names the record only by an id the record could have (docs/spec.md §5.1).
    if not isinstance(record_id, str) or not record_id:
        return False
    try:
        record_id.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def record_from_json(obj: object) -> MemoryRecord:
    """A ``MemoryRecord`` from a JSON object (strict: see the module docstring)."""
    record_id = obj.get("id") if isinstance(obj, dict) else None
    subject = (
        Subject(f"record {record_id!r}", record_id)
        if _is_valid_id(record_id)
        else Subject("record")
    )
    fields = dict(_fields(obj, subject, _RECORD_REQUIRED, _RECORD_OPTIONAL))
    source_ids = fields.get("source_message_ids", [])
    if not isinstance(source_ids, list):
        subject.fail(
            "source_message_ids",
            ErrorKind.WRONG_TYPE,
            f"must be an array, got {json_type_name(source_ids)}",
        )
    fields["scope"] = scope_from_json(fields["scope"], subject)
    for name in _INSTANT_FIELDS:
        if name in fields:
            fields[name] = _optional_instant_from_json(fields[name], subject, name)
    return MemoryRecord(**fields)


def context_to_json(context: RetrievalContext, context_id: str | None = None) -> JsonObject:
    """The context as a JSON object, with ``context_id`` first when it has one."""
    named: JsonObject = {} if context_id is None else {"context_id": context_id}
    return named | {
        "now": _instant_to_json(context.now),
        "user_id": context.user_id,
        "character_id": context.character_id,
        "conversation_id": context.conversation_id,
        "scene_id": context.scene_id,
    }


def context_from_json(obj: object) -> RetrievalContext:
    return context_pair_from_json(obj)[1]


def context_pair_from_json(obj: object) -> tuple[str | None, RetrievalContext]:
    """The context of a JSON object, with its ``context_id`` (None when it has none)."""
    subject = Subject("context")
    fields = _fields(obj, subject, _CONTEXT_REQUIRED, _CONTEXT_OPTIONAL)
    context_id = fields.get("context_id")
    if context_id is not None:
        context_id = any_text(context_id, subject, "context_id")
    return context_id, RetrievalContext(
        now=_instant_from_json(fields["now"], subject, "now"),
        user_id=fields["user_id"],
        # Absent or null: a context without that id (docs/spec.md §1.4).
        character_id=fields.get("character_id"),
        conversation_id=fields.get("conversation_id"),
        scene_id=fields.get("scene_id"),
    )


def tombstone_to_json(tombstone: ForgetTombstone) -> JsonObject:
    line: JsonObject = {
        "key": tombstone.key,
        "scope": scope_to_json(tombstone.scope),
        "forgotten_at": _instant_to_json(tombstone.forgotten_at),
        "blocks_sources_before": _instant_to_json(tombstone.blocks_sources_before),
    }
    # Only when true: a line without it reads the same in every version, and a
    # version that does not know the field refuses a user-wide line (unknown-field)
    # rather than reading it as a tombstone of the user scope alone.
    if tombstone.user_wide:
        line["user_wide"] = True
    # Likewise only when set: the salt, and the hashes sorted (a set has no order).
    if tombstone.source_salt is not None:
        line["source_salt"] = tombstone.source_salt
    if tombstone.blocked_sources:
        line["blocked_sources"] = sorted(tombstone.blocked_sources)
    return line


def tombstone_from_json(obj: object) -> ForgetTombstone:
    subject = Subject("tombstone")
    fields = _fields(
        obj,
        subject,
        _TOMBSTONE_REQUIRED,
        ("blocks_sources_before", "user_wide", "source_salt", "blocked_sources"),
    )
    # The array's shape first, as a record's ``source_message_ids`` (spec §5.2).
    hashes = _hash_list(fields.get("blocked_sources"), subject)
    return ForgetTombstone(
        key=fields["key"],
        scope=scope_from_json(fields["scope"], subject),
        forgotten_at=_instant_from_json(fields["forgotten_at"], subject, "forgotten_at"),
        blocks_sources_before=_optional_instant_from_json(  # type: ignore[arg-type]
            fields.get("blocks_sources_before"), subject, "blocks_sources_before"
        ),
        # Absent or null: false, as a null cell of the Arrow column.
        user_wide=False if fields.get("user_wide") is None else fields["user_wide"],
        # Absent or null: none.
        source_salt=fields.get("source_salt"),
        blocked_sources=hashes,  # type: ignore[arg-type]
    )


def _hash_list(value: object, subject: Subject) -> list[object]:
    """A tombstone's ``blocked_sources``: a JSON array (null: none); its items are checked
    by the tombstone, in the order of its fields."""
    if value is None:
        return []
    if not isinstance(value, list):
        subject.fail(
            "blocked_sources",
            ErrorKind.WRONG_TYPE,
            f"must be an array of strings, got {json_type_name(value)}",
        )
    return value


# Files ------------------------------------------------------------------------------------


@contextmanager
def _opened_for_writing(target: Source) -> Iterator[IO[str]]:
    if isinstance(target, str | os.PathLike):
        with arguments.path(target, "destination").open("w", encoding="utf-8", newline="\n") as f:
            yield f
    elif callable(getattr(target, "write", None)):
        yield target
    else:
        raise InvalidInputError(
            "destination: expected a path or a text stream with write(), got"
            f" {type(target).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="destination",
        )


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> JsonObject:
    obj: JsonObject = {}
    for name, value in pairs:
        if name in obj:
            raise InvalidInputError(
                f"field {name!r} appears twice in one object",
                kind=ErrorKind.DUPLICATE_FIELD,
                field=name,
            )
        obj[name] = value
    return obj


def _read(source: Source, parse: Callable[[object], T]) -> list[T]:
    return [
        _parse_line(line, parse, name, number)
        for name, number, line in numbered_lines(source)
        if line.strip()
    ]


def _parse_line(line: str, parse: Callable[[object], T], name: str, number: int) -> T:
    try:
        return parse(json.loads(line, object_pairs_hook=_reject_duplicate_keys))
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"{name} line {number}: {exc}",
            kind=exc.kind,
            record_id=exc.record_id,
            field=exc.field,
            line=number,
        ) from None
    except (ValueError, RecursionError) as exc:
        # Not JSON, or JSON Python will not hold: nesting too deep, a number too long.
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise InvalidInputError(
            f"{name} line {number}: not valid JSON ({problem})",
            kind=ErrorKind.MALFORMED,
            line=number,
        ) from None


def _write(
    items: Iterable[T],
    expected: type[T],
    field: str,
    destination: Source,
    to_json: Callable[[T], JsonObject],
) -> None:
    # Every item is checked before the destination is opened: nothing half-written.
    rows = arguments.items(items, expected, field)
    with _opened_for_writing(destination) as out:
        for item in rows:
            out.write(json.dumps(to_json(item), ensure_ascii=False, allow_nan=False))
            out.write("\n")


def read_records(source: Source) -> list[MemoryRecord]:
    """Every record of a JSON Lines file (a path or an open text stream)."""
    return _read(source, record_from_json)


def write_records(records: Iterable[MemoryRecord], destination: Source) -> None:
    """Write ``records`` as JSON Lines; ``read_records`` reads them back equal."""
    _write(records, MemoryRecord, "records", destination, record_to_json)


@overload
def read_contexts(
    source: Source, *, with_ids: Literal[False] = False
) -> list[RetrievalContext]: ...
@overload
def read_contexts(
    source: Source, *, with_ids: Literal[True]
) -> list[tuple[str, RetrievalContext]]: ...
def read_contexts(
    source: Source, *, with_ids: bool = False
) -> list[RetrievalContext] | list[tuple[str, RetrievalContext]]:
    """Every retrieval context of a JSON Lines file; with ``with_ids``, as
    ``(context_id, RetrievalContext)`` pairs, as ``contexts_from_arrow`` gives them.

    A line's ``context_id`` is optional: a context without one has its 1-based position
    among the file's contexts (``"1"``, ``"2"``...), as in ``contexts_to_arrow``. Ids are
    unique in a file (``duplicate-id`` at the later line), given or not.
    """
    pairs: list[tuple[str, RetrievalContext]] = []
    first_line_of: dict[str, int] = {}
    for name, number, line in numbered_lines(source):
        if not line.strip():
            continue
        given, context = _parse_line(line, context_pair_from_json, name, number)
        context_id = positional_context_id(len(pairs)) if given is None else given
        earlier = first_line_of.setdefault(context_id, number)
        if earlier != number:
            raise InvalidInputError(
                f"{name} line {number}: context {context_id!r:.60} repeats the context_id of"
                f" line {earlier}",
                kind=ErrorKind.DUPLICATE_ID,
                field="context_id",
                line=number,
            )
        pairs.append((context_id, context))
    if with_ids:
        return pairs
    return [context for _, context in pairs]


def write_contexts(
    contexts: Mapping[str, RetrievalContext]
    | Iterable[tuple[str, RetrievalContext] | RetrievalContext],
    destination: Source,
) -> None:
    """Write ``contexts`` as JSON Lines: bare contexts as they are, a mapping of
    ``context_id`` to context or ``(context_id, RetrievalContext)`` pairs with a
    ``context_id`` on each line. ``read_contexts`` reads them back equal."""
    # Every item is checked before the destination is opened: nothing half-written.
    pairs = context_pairs(contexts)
    identified_contexts(pairs)  # ids unique, given or positional: the file must read back
    with _opened_for_writing(destination) as out:
        for context_id, context in pairs:
            row = context_to_json(context, context_id)
            out.write(json.dumps(row, ensure_ascii=False, allow_nan=False))
            out.write("\n")


def read_tombstones(source: Source) -> list[ForgetTombstone]:
    """Every forget tombstone of a JSON Lines file."""
    return _read(source, tombstone_from_json)


def write_tombstones(tombstones: Iterable[ForgetTombstone], destination: Source) -> None:
    _write(tombstones, ForgetTombstone, "tombstones", destination, tombstone_to_json)
