"""The SQLite schema of ``MemoryStore``: tables, the registry of private columns, and
records to rows and back.

Private text lives apart from everything else. ``record_text`` holds each record's
``value``, ``source_message_ids`` and content hash, one row per record, keyed by the
record's ``row``; nothing else of the record is in it. ``records`` holds the record's
other fields (the scope flattened into the columns of the batch form, ``docs/spec.md``
§4.1, instants as integer microseconds since the epoch, §1.6), its scope id (what a
retrieval looks rows up by) and whether its text was erased; ``tombstones`` the
forget tombstones.

Why the split: SQLite rebuilds a b-tree page from its end when it rebalances it (a
page splits as its cells grow, or merges as rows are deleted) and leaves the bytes of
the old cells in the gap it does not reuse; ``secure_delete`` zeroes only a cell it
frees. Text in a table whose pages are ever rebalanced can survive its erasure there,
out of SQLite's reach. ``record_text`` is never rebalanced: its rows are appended in
``row`` order (an append to an integer-keyed table adds a page, it never rebuilds one),
never resized (an erasure overwrites a row in place with zero bytes of the same
length, which SQLite writes over the old cell), and deleted only by ``erase_user``,
whose compaction (a ``VACUUM``) then rewrites the whole file. See ``docs/store.md``.

The schema version is SQLite's ``user_version``; ``_migrations`` takes a file to
``SCHEMA_VERSION``. A file written by a newer memresolve is refused, never guessed at.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from enum import Enum
from typing import Any, Final

from memresolve import _backend
from memresolve._model import (
    ID_COLUMNS,
    RECORD_FIELDS,
    ROW_FIELDS,
    ForgetTombstone,
    MemoryRecord,
    Subject,
    from_micros,
    scope_columns,
    scope_from_columns,
    scope_id,
    to_micros,
    to_row,
)
from memresolve.errors import ErrorKind

__all__ = [
    "POLICY_TABLE",
    "PRIVATE_COLUMNS",
    "PUBLIC_COLUMNS",
    "RECORD_COLUMNS",
    "SCHEMA_VERSION",
    "SELECT_RECORDS",
    "TABLES",
    "TEXT_COLUMNS",
    "TOMBSTONE_COLUMNS",
    "Private",
    "content_hash",
    "erased_hash",
    "python_record_row",
    "record_from_row",
    "record_row",
    "tombstone_from_row",
    "tombstone_row",
]

SCHEMA_VERSION: Final = 6

_INSTANTS: Final = ("valid_from", "valid_until", "observed_at")
#: The native record storage and its row builder, when the compiled core is in use.
_NATIVE_ROW: Final = (
    None if _backend.NATIVE is None else (_backend.NATIVE.RecordCore, _backend.NATIVE.store_row)
)

#: What the store keeps of a record's private text, in ``record_text``.
TEXT_COLUMNS: Final = ("value", "source_message_ids", "content_hash")
#: The columns of ``records``, in insertion order: the record's row fields but its
#: private text, its scope id, and whether its text was erased (besides ``row``).
RECORD_COLUMNS: Final = (
    *(name for name in ROW_FIELDS if name not in TEXT_COLUMNS),
    "scope_id",
    "erased",
)
#: The columns of ``tombstones``, in insertion order.
TOMBSTONE_COLUMNS: Final = (
    "key",
    "scope_kind",
    *ID_COLUMNS,
    "scope_id",
    "forgotten_at",
    "blocks_sources_before",
    "user_wide",
    "source_salt",
    "blocked_sources",
)

#: The tables of the current schema, as created. ``records.row`` is an explicit
#: INTEGER PRIMARY KEY so that ``VACUUM`` keeps it: it names the record's
#: ``record_text`` row. ``records.public_hash`` is null but on a record not yet erased
#: whose ``supersedes`` ``erase_user`` removed: it holds that record's ``erased_hash`` as
#: first added (the edge included), which the row can no longer give and its erasure
#: stores (a retry is judged as first added). ``tombstones.source_salt`` and
#: ``blocked_sources`` are the tombstone's salt (null: none drawn) and its salted hashes
#: of message ids, a sorted JSON array: columns of the row, not a child table, since a
#: tombstone is always read whole (every read of tombstones reads its hashes), the set
#: only ever grows by a forget or an add that writes the row anyway, and a child table
#: would have to repeat the five-column key (``VACUUM`` renumbers the rowids of a table
#: without an INTEGER PRIMARY KEY). Stale copies a growing row leaves in a rebuilt page
#: are of hashes the row still holds; ``erase_user``'s compaction rewrites the file.
TABLES: Final = """
CREATE TABLE records (
    row INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    key TEXT NOT NULL,
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
    supersedes TEXT,
    version INTEGER NOT NULL,
    observed_at INTEGER,
    scope_id TEXT NOT NULL,
    erased INTEGER NOT NULL,
    public_hash BLOB
) STRICT;
CREATE INDEX records_by_scope ON records (scope_id, key);
CREATE INDEX records_by_user ON records (user_id);
CREATE INDEX records_by_supersedes ON records (supersedes) WHERE supersedes IS NOT NULL;
CREATE TABLE record_text (
    row INTEGER PRIMARY KEY,
    value BLOB NOT NULL,
    source_message_ids BLOB NOT NULL,
    content_hash BLOB NOT NULL
) STRICT;
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
    user_wide INTEGER NOT NULL,
    source_salt TEXT,
    blocked_sources TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (scope_id, key, user_wide, forgotten_at, blocks_sources_before)
) STRICT;
CREATE INDEX tombstones_by_user ON tombstones (user_id);
CREATE TABLE erasures (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    committed INTEGER NOT NULL,
    wiped INTEGER NOT NULL,
    deleting INTEGER NOT NULL,
    compacted INTEGER NOT NULL
) STRICT;
INSERT INTO erasures VALUES (1, 0, 0, 0, 0);
"""

#: The store's policy, fixed when the file is created (one row): whether records may
#: have conversation and scene scopes without an owner (``docs/store.md``, "Owners").
#: Apart from ``TABLES``, whose text the migrations of older versions reuse.
POLICY_TABLE: Final = """
CREATE TABLE store_policy (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    shared_conversations INTEGER NOT NULL CHECK (shared_conversations IN (0, 1))
) STRICT
"""

#: A record's row with its text: what every read of records selects.
SELECT_RECORDS: Final = (
    "SELECT records.*, record_text.value, record_text.source_message_ids "
    "FROM records JOIN record_text ON record_text.row = records.row"
)


class Private(Enum):
    """What a registered column holds."""

    TEXT = "text"
    """A user's private text, or a hash of it: gone from every file once erased."""
    IDENTIFYING = "identifying"
    """Names a user or one of its records: gone from every file once ``erase_user``
    (and its compaction) has deleted the row."""


#: Every column of the store that holds private text or identifies a user, by table.
#: One list, read by the residue tests (``tests/store/test_store_residue.py``): a later
#: feature that stores private or identifying data (metadata, message hashes, change
#: feeds, logs) registers its columns here, and the tests then plant canaries in them
#: and scan every byte of every file of the store for them after each erasure.
PRIVATE_COLUMNS: Final[Mapping[str, Mapping[str, Private]]] = {
    "record_text": {
        "value": Private.TEXT,
        "source_message_ids": Private.TEXT,
        "content_hash": Private.TEXT,
    },
    "records": {
        "id": Private.IDENTIFYING,
        "user_id": Private.IDENTIFYING,
        "conversation_id": Private.IDENTIFYING,
        "scene_id": Private.IDENTIFYING,
        "supersedes": Private.IDENTIFYING,
        "scope_id": Private.IDENTIFYING,
    },
    "tombstones": {
        "user_id": Private.IDENTIFYING,
        "conversation_id": Private.IDENTIFYING,
        "scene_id": Private.IDENTIFYING,
        "scope_id": Private.IDENTIFYING,
        # Salted hashes of the message ids a forgotten value came from: personal data
        # that outlives the forget (it is what blocks a re-statement), gone with the
        # user's tombstones (``erase_user``), which also empties the sets of the unowned
        # twins ``forget_everywhere`` wrote beside them (``_sql.delete_user``).
        "blocked_sources": Private.IDENTIFYING,
    },
}


#: Every other column of the store's tables: neither private nor identifying. Each column
#: of every table is in exactly one of the two lists (a test reads the tables' columns),
#: so that a column added later must be classified.
PUBLIC_COLUMNS: Final[Mapping[str, frozenset[str]]] = {
    "record_text": frozenset({"row"}),
    "records": frozenset(
        {
            "row",
            "key",
            "scope_kind",
            "character_id",
            "status",
            "authority",
            "confidence",
            "valid_from",
            "valid_until",
            "version",
            "observed_at",
            "erased",
            # A hash of public fields (as content_hash, which also covers the text).
            "public_hash",
        }
    ),
    "tombstones": frozenset(
        {
            "key",
            "scope_kind",
            "character_id",
            "forgotten_at",
            "blocks_sources_before",
            "user_wide",
            # Random bytes, one per tombstone: identify nothing without the hashes.
            "source_salt",
        }
    ),
    "erasures": frozenset({"one", "committed", "wiped", "deleting", "compacted"}),
    "store_policy": frozenset({"one", "shared_conversations"}),
}


#: ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, built once: ``dumps``
#: with options builds an encoder per call, a third of what hashing a record costs.
_COMPACT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
#: ``json.dumps(..., ensure_ascii=False)``, built once.
_JSON: Final = json.JSONEncoder(ensure_ascii=False)


def _canonical(row: dict[str, Any]) -> bytes:
    return _COMPACT.encode(row).encode()


def record_row(record: MemoryRecord) -> dict[str, Any]:
    """The row of ``record`` (``erased`` false), its text as ``str``: built natively for a
    record the compiled core stores (the same dict, byte for byte), else in Python."""
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


#: The fields of a row a record is built from, besides its scope columns and its text.
_PUBLIC_RECORD_FIELDS: Final = tuple(
    name for name in RECORD_FIELDS if name not in {"scope", "value", "source_message_ids"}
)


def record_from_row(row: sqlite3.Row) -> MemoryRecord:
    """The record a row of ``SELECT_RECORDS`` holds (instants back in UTC; an erased
    record's text empty). Built through the constructor, which checks every field: a
    row edited outside the store is refused (``InvalidInputError``), never resolved."""
    fields: dict[str, Any] = {name: row[name] for name in _PUBLIC_RECORD_FIELDS}
    for name in _INSTANTS:
        if fields[name] is not None:
            fields[name] = from_micros(fields[name])
    subject = Subject(f"record {row['id']!r}", row["id"])
    if row["erased"]:
        fields["value"], fields["source_message_ids"] = "", ()
    else:
        fields["value"] = _text(row["value"], subject, "value")
        fields["source_message_ids"] = tuple(
            json.loads(_text(row["source_message_ids"], subject, "source_message_ids"))
        )
    columns = {name: row[name] for name in ("scope_kind", *ID_COLUMNS)}
    scope = scope_from_columns(columns, subject)
    return MemoryRecord(scope=scope, **fields)


def _text(stored: Any, subject: Subject, field: str) -> Any:
    """Text ``record_text`` holds as UTF-8 bytes, as ``str`` (anything else is handed to the
    constructor as it is, which refuses it)."""
    if not isinstance(stored, bytes):
        return stored
    try:
        return stored.decode()
    except UnicodeDecodeError:
        subject.fail(field, ErrorKind.INVALID_UNICODE, "is not UTF-8 in the store file")


def tombstone_row(tombstone: ForgetTombstone) -> dict[str, Any]:
    """The ``tombstones`` row of ``tombstone``."""
    return {
        "key": tombstone.key,
        **scope_columns(tombstone.scope),
        "scope_id": scope_id(tombstone.scope),
        "forgotten_at": to_micros(tombstone.forgotten_at),
        "blocks_sources_before": to_micros(tombstone.blocks_sources_before),
        "user_wide": int(tombstone.user_wide),
        "source_salt": tombstone.source_salt,
        "blocked_sources": _sources_json(tombstone.blocked_sources),
    }


def _sources_json(hashes: frozenset[str]) -> str:
    """A tombstone's hashes as stored: a sorted, compact JSON array."""
    return _COMPACT.encode(sorted(hashes))


def tombstone_from_row(row: sqlite3.Row) -> ForgetTombstone:
    """The tombstone a ``tombstones`` row holds."""
    subject = Subject(f"tombstone for key {row['key']!r}")
    scope = scope_from_columns(dict(row), subject)
    try:
        hashes = json.loads(row["blocked_sources"])
    except (TypeError, ValueError):
        subject.fail("blocked_sources", ErrorKind.MALFORMED, "is not a JSON array in the store")
    if not isinstance(hashes, list):
        subject.fail("blocked_sources", ErrorKind.MALFORMED, "is not a JSON array in the store")
    # The constructor checks the salt and each hash (a row edited outside the store is
    # refused, never resolved).
    return ForgetTombstone(
        key=row["key"],
        scope=scope,
        forgotten_at=from_micros(row["forgotten_at"]),
        blocks_sources_before=from_micros(row["blocks_sources_before"]),
        user_wide=bool(row["user_wide"]),
        source_salt=row["source_salt"],
        blocked_sources=hashes,  # type: ignore[arg-type]  # any iterable: made a frozenset
    )
