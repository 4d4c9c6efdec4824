"""The SQLite schema of ``MemoryStore``: tables, migrations, and records to rows and back.

One table per kind of fact: ``records`` (one row per record, the scope flattened into
the columns of the batch form, ``docs/spec.md`` §4.1, instants as integer microseconds
since the epoch, §1.6) and ``tombstones``. Each row also keeps its scope id
(``scope_id``, §1.2), which is what a retrieval looks rows up by, and each record the
hash of its content as first added, which is what makes a retried ``add`` a no-op
even after a forget erased the record's text. An erased record keeps a hash of its
public fields only (``erased_hash``): a hash over the erased text would let anyone who
holds the file confirm a guess of that text.

The schema version is SQLite's ``user_version``; ``MIGRATIONS[n]`` takes a file from
version ``n`` to ``n + 1``. A file written by a newer memresolve is refused, never
guessed at.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from memresolve import _backend
from memresolve._inputs import ForgetTombstone
from memresolve._records import RECORD_FIELDS, MemoryRecord
from memresolve._rows import ROW_FIELDS, scope_columns, scope_from_columns, to_row
from memresolve._scopes import scope_id
from memresolve._types import ID_COLUMNS
from memresolve._validate import Subject, from_micros, to_micros

__all__ = [
    "MIGRATIONS",
    "RECORD_COLUMNS",
    "SCHEMA_VERSION",
    "TOMBSTONE_COLUMNS",
    "content_hash",
    "erased_hash",
    "python_record_row",
    "record_from_row",
    "record_row",
    "tombstone_from_row",
    "tombstone_row",
]

_INSTANTS: Final = ("valid_from", "valid_until", "observed_at")
#: The native record storage and its row builder, when the compiled core is in use.
_NATIVE_ROW: Final = (
    None if _backend.NATIVE is None else (_backend.NATIVE.RecordCore, _backend.NATIVE.store_row)
)

#: The columns of ``records``, in insertion order: the record's row fields, its scope
#: id, the content hash, and whether its text was erased.
RECORD_COLUMNS: Final = (*ROW_FIELDS, "scope_id", "content_hash", "erased")
#: The columns of ``tombstones``, in insertion order.
TOMBSTONE_COLUMNS: Final = (
    "key",
    "scope_kind",
    *ID_COLUMNS,
    "scope_id",
    "forgotten_at",
    "blocks_sources_before",
)

_VERSION_1: Final = """
CREATE TABLE records (
    id TEXT PRIMARY KEY NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    scope_kind TEXT NOT NULL,
    user_id TEXT,
    character_id TEXT,
    conversation_id TEXT,
    scene_id TEXT,
    status TEXT NOT NULL,
    authority TEXT NOT NULL,
    confidence REAL NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_until INTEGER,
    source_message_ids TEXT NOT NULL,
    supersedes TEXT,
    version INTEGER NOT NULL,
    observed_at INTEGER,
    scope_id TEXT NOT NULL,
    content_hash BLOB NOT NULL,
    erased INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX records_by_scope ON records (scope_id, key);
CREATE INDEX records_by_user ON records (user_id);
CREATE TABLE tombstones (
    key TEXT NOT NULL,
    scope_kind TEXT NOT NULL,
    user_id TEXT,
    character_id TEXT,
    conversation_id TEXT,
    scene_id TEXT,
    scope_id TEXT NOT NULL,
    forgotten_at INTEGER NOT NULL,
    blocks_sources_before INTEGER NOT NULL,
    PRIMARY KEY (scope_id, key, forgotten_at, blocks_sources_before)
) STRICT;
CREATE INDEX tombstones_by_user ON tombstones (user_id);
"""


def _create_version_1(connection: sqlite3.Connection) -> None:
    for statement in _VERSION_1.split(";"):
        if statement.strip():
            connection.execute(statement)


def _hash_erased_records_publicly(connection: sqlite3.Connection) -> None:
    """Version 2: an erased record's hash no longer covers its erased text."""
    cursor = connection.execute("SELECT * FROM records WHERE erased = 1")
    names = [column[0] for column in cursor.description]
    rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    connection.executemany(
        "UPDATE records SET content_hash = ? WHERE id = ?",
        [(erased_hash(row), row["id"]) for row in rows],
    )


#: ``MIGRATIONS[n]`` takes a file from schema version ``n`` to ``n + 1``.
MIGRATIONS: Final[Sequence[Callable[[sqlite3.Connection], None]]] = (
    _create_version_1,
    _hash_erased_records_publicly,
)
SCHEMA_VERSION: Final = len(MIGRATIONS)


#: ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, built once: ``dumps``
#: with options builds an encoder per call, a third of what hashing a record costs.
_COMPACT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
#: ``json.dumps(..., ensure_ascii=False)``, built once.
_JSON: Final = json.JSONEncoder(ensure_ascii=False)


def _canonical(row: dict[str, Any]) -> bytes:
    return _COMPACT.encode(row).encode()


def record_row(record: MemoryRecord) -> dict[str, Any]:
    """The ``records`` row of ``record`` (``erased`` false): built natively for a record
    the compiled core stores (the same dict, byte for byte), else in Python."""
    if _NATIVE_ROW is not None and isinstance(record, _NATIVE_ROW[0]):
        row: dict[str, Any] = _NATIVE_ROW[1](record)
        return row
    return python_record_row(record)


def python_record_row(record: MemoryRecord) -> dict[str, Any]:
    """``record_row`` in Python: the definition the native row is tested against."""
    row = to_row({name: getattr(record, name) for name in RECORD_FIELDS})
    for name in _INSTANTS:
        if row[name] is not None:
            row[name] = to_micros(row[name])
    row["content_hash"] = content_hash(row)
    row["source_message_ids"] = _JSON.encode(row["source_message_ids"])
    row["scope_id"] = scope_id(record.scope)
    row["erased"] = 0
    return row


def content_hash(row: dict[str, Any]) -> bytes:
    """The hash of a record's row fields (instants as microseconds): equal records,
    whatever the time zones they were written in, have equal hashes."""
    return hashlib.sha256(_canonical({name: row[name] for name in ROW_FIELDS})).digest()


#: What an erased record's hash covers: its fields less its private text (erased) and its
#: status (which ``normalize`` may have rewritten since the record was added).
_PUBLIC_FIELDS: Final = tuple(
    name for name in ROW_FIELDS if name not in {"value", "source_message_ids", "status"}
)


def erased_hash(row: Mapping[str, Any]) -> bytes:
    """The hash an erased record keeps in place of its content hash: of its public
    fields, as first added (nothing rewrites them), tagged so that it never equals a
    content hash. A retry of an erased record is judged by it: the store can no longer
    tell which text the record had, and must not be able to."""
    public = {name: row[name] for name in _PUBLIC_FIELDS}
    # SQLite reads a stored -0.0 back as 0.0: hash the zero the file holds.
    public["confidence"] += 0.0
    return hashlib.sha256(b"erased\0" + _canonical(public)).digest()


#: The fields of a row a record is built from, besides its scope columns.
_FIELDS_BUT_SCOPE: Final = tuple(name for name in RECORD_FIELDS if name != "scope")


def record_from_row(row: sqlite3.Row) -> MemoryRecord:
    """The record a ``records`` row holds (instants back in UTC). Built through the
    constructor, which checks every field: a row edited outside the store is refused
    (``InvalidInputError``), never resolved."""
    fields: dict[str, Any] = {name: row[name] for name in _FIELDS_BUT_SCOPE}
    for name in _INSTANTS:
        if fields[name] is not None:
            fields[name] = from_micros(fields[name])
    fields["source_message_ids"] = tuple(json.loads(fields["source_message_ids"]))
    columns = {name: row[name] for name in ("scope_kind", *ID_COLUMNS)}
    scope = scope_from_columns(columns, Subject(f"record {row['id']!r}", row["id"]))
    return MemoryRecord(scope=scope, **fields)


def tombstone_row(tombstone: ForgetTombstone) -> dict[str, Any]:
    """The ``tombstones`` row of ``tombstone``."""
    return {
        "key": tombstone.key,
        **scope_columns(tombstone.scope),
        "scope_id": scope_id(tombstone.scope),
        "forgotten_at": to_micros(tombstone.forgotten_at),
        "blocks_sources_before": to_micros(tombstone.blocks_sources_before),
    }


def tombstone_from_row(row: sqlite3.Row) -> ForgetTombstone:
    """The tombstone a ``tombstones`` row holds."""
    scope = scope_from_columns(dict(row), Subject(f"tombstone for key {row['key']!r}"))
    return ForgetTombstone(
        key=row["key"],
        scope=scope,
        forgotten_at=from_micros(row["forgotten_at"]),
        blocks_sources_before=from_micros(row["blocks_sources_before"]),
    )
