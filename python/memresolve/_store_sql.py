"""The SQL ``MemoryStore`` runs: lookups by many ids or scope ids at once (in chunks
SQLite's parameter limit allows), and the statements that write records and erase them
(``_store_schema`` says why the text is kept apart and only ever overwritten in place)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any, Final, NamedTuple

from memresolve import _store_schema as schema
from memresolve._inputs import ForgetTombstone

__all__ = [
    "Known",
    "chunks",
    "delete_user",
    "erase_text",
    "insert_records",
    "known_hashes",
    "marks",
    "rows_of_scopes",
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
    connection: sqlite3.Connection, scope_ids: Sequence[str]
) -> list[ForgetTombstone]:
    """The tombstones of the scopes ``scope_ids``."""
    found: list[ForgetTombstone] = []
    for chunk in chunks(list(dict.fromkeys(scope_ids))):
        found.extend(
            schema.tombstone_from_row(row)
            for row in connection.execute(
                f"SELECT * FROM tombstones WHERE scope_id IN ({marks(len(chunk))})", chunk
            )
        )
    return found


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
    connection.executemany(
        _ERASE_TEXT,
        [(schema.erased_hash(dict(row)), row["row"]) for row in rows],
    )


def delete_user(connection: sqlite3.Connection, user_id: str) -> tuple[int, int]:
    """Deletes every record and tombstone of ``user_id``'s scopes; returns how many of
    each. Its text is zeroed in place first: the pages the deletion merges then move
    only zero bytes of it (the compaction that follows removes the rest)."""
    rows = [
        row[0]
        for row in connection.execute("SELECT row FROM records WHERE user_id = ?", (user_id,))
    ]
    connection.executemany(
        "UPDATE record_text SET value = zeroblob(length(value)), "
        "source_message_ids = zeroblob(length(source_message_ids)), "
        "content_hash = zeroblob(length(content_hash)) WHERE row = ?",
        [(row,) for row in rows],
    )
    connection.executemany("DELETE FROM record_text WHERE row = ?", [(row,) for row in rows])
    records = connection.execute("DELETE FROM records WHERE user_id = ?", (user_id,)).rowcount
    tombstones = connection.execute("DELETE FROM tombstones WHERE user_id = ?", (user_id,)).rowcount
    return records, tombstones
