"""The store's forgets, inside their write transaction: each tombstone stored once, and
the text of every record it blocks erased in place (``_sql.erase_text``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from memresolve._engine import purged_records
from memresolve._model import ForgetTombstone, Subject, UserScope, instant, scope_id, text
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve._store import _writes as writes
from memresolve._store._cache import StoreCache

__all__ = ["store_tombstones", "store_user_wide", "user_wide"]


def _insert(connection: sqlite3.Connection, tombstone: ForgetTombstone) -> bool:
    """Stores ``tombstone`` unless the store holds it (a retried forget); whether it was
    new."""
    columns = schema.TOMBSTONE_COLUMNS
    row = schema.tombstone_row(tombstone)
    insert = (
        f"INSERT OR IGNORE INTO tombstones ({','.join(columns)}) VALUES ({sql.marks(len(columns))})"
    )
    return bool(connection.execute(insert, [row[c] for c in columns]).rowcount == 1)


def store_tombstones(
    connection: sqlite3.Connection, cache: StoreCache, tombstones: Sequence[ForgetTombstone]
) -> tuple[str, ...]:
    """Stores ``tombstones`` (one already held is a retried forget, stored once) and erases
    the text of every record one blocks; returns the ids erased now, sorted. The cache
    follows in the transaction (a failed commit drops it whole)."""
    erased: list[str] = []
    for tombstone in tombstones:
        new = _insert(connection, tombstone)
        where = scope_id(tombstone.scope)
        found = sql.slot_rows(connection, where, tombstone.key, unerased=True)
        candidates = [schema.record_from_row(stored) for stored in found]
        blocked = {r.id for r, _ in purged_records(tuple(candidates), (tombstone,))}
        sql.erase_text(connection, [stored for stored in found if stored["id"] in blocked])
        erased.extend(blocked)
        cache.forget(
            where,
            tombstone if new else None,
            [writes.erased(record) for record in candidates if record.id in blocked],
        )
    return tuple(sorted(erased))


def user_wide(
    user_id: str, key: str, at: datetime, blocks_sources_before: datetime | None
) -> ForgetTombstone:
    """``forget_for_user``'s tombstone, its arguments checked under the call's name."""
    subject = Subject("forget_for_user")
    return ForgetTombstone(
        key=text(key, subject, "key"),
        scope=UserScope(text(user_id, subject, "user_id")),
        forgotten_at=instant(at, subject, "at"),
        blocks_sources_before=blocks_sources_before,  # type: ignore[arg-type]
        user_wide=True,
    )


def store_user_wide(
    connection: sqlite3.Connection, cache: StoreCache, tombstone: ForgetTombstone
) -> tuple[str, ...]:
    """Stores a user-wide tombstone and erases the text of every record of its user it
    blocks, read through the index on ``records.user_id`` (every scope the user owns, and
    only those: an unowned scope's rows have no ``user_id``); returns the ids erased now,
    sorted. The user's scopes leave the cache (the next turn reads them again)."""
    user = tombstone.scope.user_id
    _insert(connection, tombstone)
    found = connection.execute(
        f"{schema.SELECT_RECORDS} WHERE records.user_id = ? AND records.key = ? "
        "AND records.erased = 0",
        (user, tombstone.key),
    ).fetchall()
    candidates = tuple(schema.record_from_row(stored) for stored in found)
    blocked = {record.id for record, _ in purged_records(candidates, (tombstone,))}
    sql.erase_text(connection, [stored for stored in found if stored["id"] in blocked])
    if user is not None:
        # The user's scopes that hold its rows, and its user scope, which holds the new
        # tombstone even when the cache holds it empty: every turn of the user sees it.
        cache.drop_user(user)
        cache.drop_scopes({scope_id(tombstone.scope)})
    return tuple(sorted(blocked))
