"""Taking a ``MemoryStore`` file to the current schema (``_schema.SCHEMA_VERSION``).

A new file gets the current tables at once. An older one is taken a version at a time:
``STEPS[n]`` takes a file from version ``n`` to ``n + 1``. A step that moves rows leaves
what it moved in the pages it freed or rebuilt, so a file migrated from a version that
held rows needs the store's compaction (``docs/store.md``), which the store runs as soon
as the migration commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Final

from memresolve._store import _schema as schema

__all__ = ["STEPS", "create", "create_version_1", "migrate"]

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

#: The columns of version 1 and 2's ``records``, in insertion order.
VERSION_2_RECORD_COLUMNS: Final = (
    *(name for name in schema.RECORD_COLUMNS if name != "erased"),
    "value",
    "source_message_ids",
    "content_hash",
    "erased",
)


#: The columns of version 1 to 4's ``tombstones``.
_VERSION_4_TOMBSTONE_COLUMNS: Final = schema.TOMBSTONE_COLUMNS[
    : schema.TOMBSTONE_COLUMNS.index("user_wide")
]


def _run(connection: sqlite3.Connection, script: str) -> None:
    # Statement by statement: ``executescript`` would commit the migration's transaction.
    for statement in script.split(";"):
        if statement.strip():
            connection.execute(statement)


def create(connection: sqlite3.Connection, *, shared_conversations: bool) -> None:
    """The current tables, in a new file, with its owners' policy."""
    _run(connection, schema.TABLES)
    _create_policy(connection, shared_conversations=shared_conversations)


def _create_policy(connection: sqlite3.Connection, *, shared_conversations: bool) -> None:
    connection.execute(schema.POLICY_TABLE)
    connection.execute("INSERT INTO store_policy VALUES (1, ?)", (int(shared_conversations),))


def create_version_1(connection: sqlite3.Connection) -> None:
    """The tables of schema version 1 (kept to test the migrations from it)."""
    _run(connection, _VERSION_1)


def _hash_erased_records_publicly(connection: sqlite3.Connection) -> bool:
    """Version 2: an erased record's hash no longer covers its erased text."""
    cursor = connection.execute("SELECT * FROM records WHERE erased = 1")
    names = [column[0] for column in cursor.description]
    rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    connection.executemany(
        "UPDATE records SET content_hash = ? WHERE id = ?",
        [(schema.erased_hash(row), row["id"]) for row in rows],
    )
    return bool(rows)


def _split_private_text(connection: sqlite3.Connection) -> bool:
    """Version 3: each record's private text in ``record_text``, apart from its other
    fields, and the erasures' durable state in ``erasures``."""
    connection.execute("ALTER TABLE records RENAME TO records_version_2")
    connection.execute("DROP INDEX records_by_scope")
    connection.execute("DROP INDEX records_by_user")
    # Every current table but the tombstones, which keep their version 1 table.
    _run(connection, schema.TABLES.split("CREATE TABLE tombstones")[0])
    _run(connection, "CREATE TABLE erasures" + schema.TABLES.split("CREATE TABLE erasures")[1])
    public = ",".join(name for name in schema.RECORD_COLUMNS)
    connection.execute(
        f"INSERT INTO records (row, {public}) "
        f"SELECT rowid, {public} FROM records_version_2 ORDER BY rowid"
    )
    connection.execute(
        "INSERT INTO record_text (row, value, source_message_ids, content_hash) "
        "SELECT rowid, CAST(value AS BLOB), CAST(source_message_ids AS BLOB), content_hash "
        "FROM records_version_2 ORDER BY rowid"
    )
    moved = connection.execute("SELECT count(*) FROM records").fetchone()[0] > 0
    connection.execute("DROP TABLE records_version_2")
    return bool(moved)


def _keep_first_public_hashes(connection: sqlite3.Connection) -> bool:
    """Version 4: ``records.public_hash``, null in every row. A record of a version 3 file
    whose edge ``erase_user`` removed before the migration, and that a forget erases after
    it, is judged by its fields as they stand (without the edge): its hash as first added
    was never kept, and cannot be made now (the id it named is gone)."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(records)")}
    # A file from before version 3 got the current ``records`` table in step 2.
    if "public_hash" not in columns:
        connection.execute("ALTER TABLE records ADD COLUMN public_hash BLOB")
    return False


def _keep_sharing_conversations(connection: sqlite3.Connection) -> bool:
    """Version 5: the owners' policy, stored in the file, and user-wide tombstones.

    A store created before it accepted unowned conversation and scene scopes, and keeps
    accepting them: its records may hold them, and its users' code may write them.
    ``tombstones`` gains ``user_wide`` (0 in every row), part of its primary key (a
    user-wide tombstone and the plain one of the same user scope, key and instants are
    two): SQLite cannot change a primary key, so the table is rebuilt, and the file
    needs compacting when it held rows (the old table's pages held them)."""
    _create_policy(connection, shared_conversations=True)
    connection.execute("ALTER TABLE tombstones RENAME TO tombstones_version_4")
    connection.execute("DROP INDEX tombstones_by_user")
    _run(
        connection,
        "CREATE TABLE tombstones"
        + schema.TABLES.split("CREATE TABLE tombstones")[1].split("CREATE TABLE erasures")[0],
    )
    kept = ",".join(_VERSION_4_TOMBSTONE_COLUMNS)
    connection.execute(
        f"INSERT INTO tombstones ({kept}, user_wide) SELECT {kept}, 0 FROM tombstones_version_4"
    )
    moved = connection.execute("SELECT count(*) FROM tombstones").fetchone()[0] > 0
    connection.execute("DROP TABLE tombstones_version_4")
    return bool(moved)


def _add_source_hashes(connection: sqlite3.Connection) -> bool:
    """Version 6: each tombstone's salt and its salted hashes of the message ids it blocks
    (``tombstones.source_salt``, ``blocked_sources``). A tombstone of an older file has
    none (salt null, no hashes): it blocks by its bound alone, as it did; the messages of
    records erased before the migration are gone and cannot be hashed now. Adding columns
    moves no row."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(tombstones)")}
    # A file from before version 5 got the current ``tombstones`` table in step 4.
    if "source_salt" not in columns:
        connection.execute("ALTER TABLE tombstones ADD COLUMN source_salt TEXT")
        connection.execute(
            "ALTER TABLE tombstones ADD COLUMN blocked_sources TEXT NOT NULL DEFAULT '[]'"
        )
    return False


#: ``STEPS[n]`` takes a file from schema version ``n`` to ``n + 1``; each returns whether
#: it moved or rewrote rows (the file then needs compacting).
STEPS: Final[Mapping[int, Callable[[sqlite3.Connection], bool]]] = {
    1: _hash_erased_records_publicly,
    2: _split_private_text,
    3: _keep_first_public_hashes,
    4: _keep_sharing_conversations,
    5: _add_source_hashes,
}
assert sorted(STEPS) == list(range(1, schema.SCHEMA_VERSION))


def migrate(connection: sqlite3.Connection, version: int, *, shared_conversations: bool) -> bool:
    """Takes the file, at schema ``version`` (0: new, created with the owners' policy
    ``shared_conversations``), to the current one, inside the caller's transaction.
    Returns whether the file now needs compacting: rows were moved or rewritten, and the
    pages they left hold what they held."""
    if version == 0:
        create(connection, shared_conversations=shared_conversations)
        return False
    rewrote = False
    for step in range(version, schema.SCHEMA_VERSION):
        rewrote = STEPS[step](connection) or rewrote
    if rewrote:
        connection.execute("UPDATE erasures SET deleting = deleting + 1")
    return rewrote
