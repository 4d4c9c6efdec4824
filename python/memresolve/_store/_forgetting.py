"""The store's forgets, inside their write transaction: each tombstone stored once, and
the text of every record it blocks erased in place (``_sql.erase_text``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memresolve._engine import purged_records
from memresolve._model import ForgetTombstone
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve._store import _writes as writes
from memresolve._store._cache import StoreCache

__all__ = ["store_tombstones"]


def store_tombstones(
    connection: sqlite3.Connection, cache: StoreCache, tombstones: Sequence[ForgetTombstone]
) -> tuple[str, ...]:
    """Stores ``tombstones`` (one already held is a retried forget, stored once) and erases
    the text of every record one blocks; returns the ids erased now, sorted. The cache
    follows in the transaction (a failed commit drops it whole)."""
    columns = schema.TOMBSTONE_COLUMNS
    insert = (
        f"INSERT OR IGNORE INTO tombstones ({','.join(columns)}) VALUES ({sql.marks(len(columns))})"
    )
    erased: list[str] = []
    for tombstone in tombstones:
        row = schema.tombstone_row(tombstone)
        new = connection.execute(insert, [row[c] for c in columns]).rowcount == 1
        found = sql.slot_rows(connection, row["scope_id"], row["key"], unerased=True)
        candidates = [schema.record_from_row(stored) for stored in found]
        blocked = {r.id for r, _ in purged_records(tuple(candidates), (tombstone,))}
        sql.erase_text(connection, [stored for stored in found if stored["id"] in blocked])
        erased.extend(blocked)
        cache.forget(
            row["scope_id"],
            tombstone if new else None,
            [writes.erased(record) for record in candidates if record.id in blocked],
        )
    return tuple(sorted(erased))
