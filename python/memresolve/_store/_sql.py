"""The SQL ``MemoryStore`` runs: lookups by many ids or scope ids at once (in chunks
SQLite's parameter limit allows), and the statements that write records and erase them
(``_schema`` says why the text is kept apart and only ever overwritten in place)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any, Final, NamedTuple

from memresolve._model import ForgetTombstone, MemoryRecord
from memresolve._store import _schema as schema

__all__ = [
    "Known",
    "all_tombstone_rows",
    "chunks",
    "delete_user",
    "erase_text",
    "get_record",
    "insert_records",
    "known_hashes",
    "marks",
    "rebuild_text",
    "rows_of_scopes",
    "slot_rows",
    "tombstones_of",
]

#: Parameters per statement, well under SQLite's limit.
CHUNK: Final = 500

_RECORD_VALUES: Final = itemgetter(*schema.RECORD_COLUMNS)
_INSERT_RECORD: Final = (
    f"INSERT INTO records (row, {','.join(schema.RECORD_COLUMNS)}) "
    f"VALUES (?, {','.join('?' * len(schema.RECORD_COLUMNS))})"
)
_INSERT_TEXT: Final = (
    "INSERT INTO record_text (row, value, source_message_ids, content_hash) VALUES (?, ?, ?, ?)"
)
# Zero bytes as long as what they replace: SQLite writes a row of the same size over its
# old cell (and overflow pages), where a shorter one would be a new cell in a page it may
# rebuild. The erased hash is 32 bytes, as the content hash it replaces.
_ERASE_TEXT: Final = (
    "UPDATE record_text SET value = zeroblob(length(value)), "
    "source_message_ids = zeroblob(length(source_message_ids)), content_hash = ? "
    "WHERE row = ?"
)


class Known(NamedTuple):
    """What the store holds of a record id: its hash, and whether its text was erased."""

    hash: bytes
    erased: bool


def chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def marks(count: int) -> str:
    """``count`` parameter marks, comma-separated."""
    return ",".join("?" * count)


def known_hashes(connection: sqlite3.Connection, ids: Sequence[str]) -> dict[str, Known]:
    """The hash and erasure of each of ``ids`` the store holds."""
    known: dict[str, Known] = {}
    for chunk in chunks(ids):
        for row in connection.execute(
            "SELECT records.id, record_text.content_hash, records.erased FROM records "
            "JOIN record_text ON record_text.row = records.row "
            f"WHERE records.id IN ({marks(len(chunk))})",
            chunk,
        ):
            known[row[0]] = Known(row[1], bool(row[2]))
    return known


def tombstones_of(
    connection: sqlite3.Connection, scope_ids: Sequence[str], owners: Iterable[str | None] = ()
) -> list[ForgetTombstone]:
    """The tombstones of the scopes ``scope_ids``, and the user-wide tombstones of the
    users ``owners`` (those that can reach a record of a scope they own); each once."""
    found: dict[tuple[Any, ...], ForgetTombstone] = {}
    queries = (
        ("scope_id", list(dict.fromkeys(scope_ids)), ""),
        ("user_id", list(dict.fromkeys(o for o in owners if o is not None)), " AND user_wide = 1"),
    )
    for column, values, only in queries:
        for chunk in chunks(values):
            for row in connection.execute(
                f"SELECT * FROM tombstones WHERE {column} IN ({marks(len(chunk))}){only}", chunk
            ):
                found[tuple(row)] = schema.tombstone_from_row(row)
    return list(found.values())


def rows_of_scopes(
    connection: sqlite3.Connection, scope_ids: Sequence[str]
) -> Iterator[tuple[str, sqlite3.Row]]:
    """Every record row (``SELECT_RECORDS``) and tombstone row of the scopes ``scope_ids``,
    tagged ``"record"`` or ``"tombstone"``."""
    for chunk in chunks(scope_ids):
        where = f"scope_id IN ({marks(len(chunk))})"
        for row in connection.execute(f"{schema.SELECT_RECORDS} WHERE records.{where}", chunk):
            yield "record", row
        for row in connection.execute(f"SELECT * FROM tombstones WHERE {where}", chunk):
            yield "tombstone", row


def insert_records(connection: sqlite3.Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Inserts records' rows (``schema.record_row``, its text as ``str``), each numbered
    after every row ``record_text`` holds: appended, in order, so that no page of
    ``record_text`` is ever rebuilt by an insert."""
    last = connection.execute("SELECT max(row) FROM record_text").fetchone()[0] or 0
    numbered = list(enumerate(rows, start=last + 1))
    connection.executemany(_INSERT_RECORD, [(n, *_RECORD_VALUES(row)) for n, row in numbered])
    connection.executemany(
        _INSERT_TEXT,
        [
            (
                n,
                row["value"].encode(),
                row["source_message_ids"].encode(),
                row["content_hash"],
            )
            for n, row in numbered
        ],
    )


def erase_text(connection: sqlite3.Connection, erased: Iterable[sqlite3.Row]) -> None:
    """Erases the text of records (rows of ``SELECT_RECORDS``) in place: zero bytes over
    their text, their content hash replaced by their erased hash."""
    rows = list(erased)
    connection.executemany(
        "UPDATE records SET erased = 1 WHERE row = ?", [(row["row"],) for row in rows]
    )
    # As first added: a record whose edge erase_user removed kept that hash (delete_user).
    connection.executemany(
        _ERASE_TEXT,
        [(row["public_hash"] or schema.erased_hash(dict(row)), row["row"]) for row in rows],
    )


def delete_user(connection: sqlite3.Connection, user_id: str) -> tuple[int, int, set[str]]:
    """Deletes every record and tombstone of ``user_id``'s scopes; returns how many of
    each, and the scope ids of kept records and tombstones it changed.

    Its text is zeroed in place and its ``record_text`` rows are kept (as zero bytes):
    deleting them would merge pages of ``record_text`` and leave stale copies of other
    records' text there, which a later forget must not leave behind. The compaction that
    follows rebuilds ``record_text`` without them (``compact``). A kept record (of an
    unowned scope, or of another user) whose ``supersedes`` names a deleted record has
    that edge removed: it named nothing any more (an edge to no candidate does nothing,
    ``docs/spec.md`` §2.4), and the id must not stay in the file. Its content hash as
    first added is kept, so a retry of it is still a no-op; so is, for one not yet erased,
    the hash of its public fields as first added (``public_hash``), which its erasure
    stores in place of the content hash, as for any record. The hashes of the user's
    messages go with its tombstones, and from the unowned tombstones a
    ``forget_everywhere`` of the user wrote beside them (``_empty_unowned_twins``)."""
    deleted = connection.execute(
        "SELECT row, id FROM records WHERE user_id = ?", (user_id,)
    ).fetchall()
    connection.executemany(
        "UPDATE record_text SET value = zeroblob(length(value)), "
        "source_message_ids = zeroblob(length(source_message_ids)), "
        "content_hash = zeroblob(length(content_hash)) WHERE row = ?",
        [(row[0],) for row in deleted],
    )
    records = connection.execute("DELETE FROM records WHERE user_id = ?", (user_id,)).rowcount
    changed = _empty_unowned_twins(connection, user_id)
    tombstones = connection.execute("DELETE FROM tombstones WHERE user_id = ?", (user_id,)).rowcount
    for chunk in chunks([row[1] for row in deleted]):
        naming = connection.execute(
            "SELECT * FROM records WHERE supersedes IS NOT NULL "
            f"AND supersedes IN ({marks(len(chunk))})",
            chunk,
        ).fetchall()
        connection.executemany(
            "UPDATE records SET supersedes = NULL, public_hash = ? WHERE row = ?",
            [
                (None if row["erased"] else schema.erased_hash(dict(row)), row["row"])
                for row in naming
            ],
        )
        changed.update(row["scope_id"] for row in naming)
    return records, tombstones, changed


def _empty_unowned_twins(connection: sqlite3.Connection, user_id: str) -> set[str]:
    """Empties the hashes (and salt) of the kept tombstones that may hold hashes of
    ``user_id``'s messages; returns their scope ids.

    A tombstone's hashes come from the records its own call erased by time, and from
    records added later in a scope it reaches. Only ``forget_everywhere`` puts records of
    one scope into another's tombstone (each of its tombstones gets the union), and the
    only scopes of its call that ``erase_user`` keeps are the unowned conversation and
    scene it forgot beside the user's own conversation: their tombstones have the key,
    the conversation id and the instants of the user's conversation tombstone of the
    same call. Their hashes cannot be told apart (hashes of other messages may be among
    them, which go too): all are emptied. The records they erased stay erased (a stored
    ``forgotten`` stays); a record added there later citing one of those messages is no
    longer blocked by it."""
    twins = connection.execute(
        "SELECT DISTINCT key, conversation_id, forgotten_at, blocks_sources_before "
        "FROM tombstones WHERE user_id = ? AND conversation_id IS NOT NULL",
        (user_id,),
    ).fetchall()
    changed: set[str] = set()
    for twin in twins:
        emptied = connection.execute(
            "UPDATE tombstones SET source_salt = NULL, blocked_sources = '[]' "
            "WHERE user_id IS NULL AND key = ? AND conversation_id = ? AND forgotten_at = ? "
            "AND blocks_sources_before = ? AND blocked_sources != '[]' RETURNING scope_id",
            tuple(twin),
        ).fetchall()
        changed.update(row[0] for row in emptied)
    return changed


#: ``record_text`` as rebuilt by a compaction: its live rows, in row order, an erased
#: record's text emptied (its length goes too), a deleted record's row left out.
_REBUILT_TEXT: Final = (
    "INSERT INTO record_text_compacted (row, value, source_message_ids, content_hash) "
    "SELECT record_text.row, "
    "CASE WHEN records.erased THEN x'' ELSE record_text.value END, "
    "CASE WHEN records.erased THEN x'' ELSE record_text.source_message_ids END, "
    "record_text.content_hash "
    "FROM record_text JOIN records ON records.row = record_text.row ORDER BY record_text.row"
)


def rebuild_text(connection: sqlite3.Connection) -> None:
    """Inside a transaction: ``record_text`` rebuilt without the rows of deleted records
    and with erased records' zero bytes gone. The new table is filled by appending in row
    order and the old one's pages are freed (``secure_delete`` zeroes freed pages), so the
    rebuild leaves no stale copy of anything, unlike deleting the rows would."""
    definition = schema.TABLES.split("CREATE TABLE record_text")[1].split(";")[0]
    connection.execute(f"CREATE TABLE record_text_compacted{definition}")
    connection.execute(_REBUILT_TEXT)
    connection.execute("DROP TABLE record_text")
    connection.execute("ALTER TABLE record_text_compacted RENAME TO record_text")


def slot_rows(
    connection: sqlite3.Connection,
    scope_id: str,
    key: str,
    *,
    unerased: bool = False,
    in_version_order: bool = False,
) -> list[sqlite3.Row]:
    """The rows (``SELECT_RECORDS``) of one (scope, key) slot, through ``records_by_scope``:
    only those not erased with ``unerased``; by version, then start, then id with
    ``in_version_order`` (else in no promised order)."""
    where = " AND records.erased = 0" if unerased else ""
    order = " ORDER BY records.version, records.valid_from, records.id" if in_version_order else ""
    return connection.execute(
        f"{schema.SELECT_RECORDS} WHERE records.scope_id = ? AND records.key = ?{where}{order}",
        (scope_id, key),
    ).fetchall()


def get_record(connection: sqlite3.Connection, record_id: str) -> MemoryRecord | None:
    """The record ``record_id`` as stored (its text erased if it was), or None."""
    row = connection.execute(
        f"{schema.SELECT_RECORDS} WHERE records.id = ?", (record_id,)
    ).fetchone()
    return None if row is None else schema.record_from_row(row)


def all_tombstone_rows(connection: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every tombstone's row, in the store's order."""
    return connection.execute(
        "SELECT * FROM tombstones ORDER BY scope_id, key, forgotten_at"
    ).fetchall()
