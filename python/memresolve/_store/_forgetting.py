"""The store's forgets, inside their write transaction: each tombstone stored once, and
the text of every record it blocks erased in place (``_sql.erase_text``)."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from memresolve._model import (
    ForgetTombstone,
    MemoryRecord,
    Subject,
    UserScope,
    instant,
    new_source_salt,
    scope_id,
    text,
)
from memresolve._store import _blocking as blocking
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve._store._cache import StoreCache

__all__ = ["store_tombstones", "user_wide"]


def _insert(connection: sqlite3.Connection, tombstone: ForgetTombstone) -> None:
    """Stores ``tombstone``, which the store does not hold."""
    columns = schema.TOMBSTONE_COLUMNS
    row = schema.tombstone_row(tombstone)
    insert = f"INSERT INTO tombstones ({','.join(columns)}) VALUES ({sql.marks(len(columns))})"
    connection.execute(insert, [row[c] for c in columns])


def store_tombstones(
    connection: sqlite3.Connection, cache: StoreCache, tombstones: Sequence[ForgetTombstone]
) -> tuple[str, ...]:
    """Stores the tombstones of one forget call and erases the text of every record they
    block; returns the ids erased now, sorted. The cache follows in the transaction (a
    failed commit drops it whole).

    Each new tombstone gets a fresh salt; one the store holds already (a retried forget)
    keeps its row and salt. The messages cited by the records the call's time rules erase
    join the hashes of every tombstone of the call, and the records of their keys in the
    scopes they reach that cite one of those messages are erased too (``_blocking``).
    """
    unique = {blocking.identity(t): t for t in tombstones}
    # Each tombstone as the call has it, as stored (or None), and the records not yet
    # erased it reaches, as read.
    calls: list[
        tuple[ForgetTombstone, ForgetTombstone | None, list[tuple[sqlite3.Row, MemoryRecord]]]
    ] = []
    erased: set[str] = set()
    cited: set[str] = set()
    stand_ins: dict[str, list[MemoryRecord]] = {}
    for tombstone in unique.values():
        stored = blocking.held(connection, tombstone)
        base = (
            stored
            if stored is not None
            else dataclasses.replace(
                tombstone, source_salt=new_source_salt(), blocked_sources=frozenset()
            )
        )
        found = [
            (row, schema.record_from_row(row)) for row in blocking.reach_rows(connection, base)
        ]
        blocked = {r.id for r in blocking.time_blocked([record for _, record in found], base)}
        sql.erase_text(connection, [row for row, record in found if record.id in blocked])
        for _, record in found:
            if record.id in blocked:
                cited.update(record.source_message_ids)
                stand_ins.setdefault(scope_id(record.scope), []).append(blocking.erased(record))
        erased |= blocked
        calls.append((base, stored, found))
    grown_calls: list[tuple[ForgetTombstone, ForgetTombstone | None]] = []
    swept: list[MemoryRecord] = []
    for base, stored, unerased in calls:
        grown = base.blocking_sources(cited) if cited else base
        if stored is None:
            _insert(connection, grown)
        elif grown != stored:
            blocking.save_sources(connection, grown)
        grown_calls.append((grown, stored))
        # The message rule: every record of the key in a reached scope not yet erased that
        # cites one of the messages (none cites a message the tombstone held before: the
        # store's invariant, ``_blocking``).
        done = erased | {record.id for record in swept}
        left = [(row, record) for row, record in unerased if record.id not in done]
        swept += blocking.erase_citing(connection, grown, cited, left)
    _follow(cache, grown_calls, stand_ins, swept)
    return tuple(sorted(erased | {record.id for record in swept}))


def _follow(
    cache: StoreCache,
    calls: Sequence[tuple[ForgetTombstone, ForgetTombstone | None]],
    stand_ins: dict[str, list[MemoryRecord]],
    swept: Sequence[MemoryRecord],
) -> None:
    """The cache after a forget. A plain tombstone's scope takes its new tombstone and the
    records its time rule erased (stand-ins that read as their stored selves for
    resolution). A user-wide one drops its user's scopes (the next turn reads them
    again), and so does a tombstone whose stored row changed (the cache holds its old
    hashes), and the scopes of records the message rule erased (one stored ``forgotten``
    now reads otherwise, which a stand-in may not)."""
    dropped: set[str] = {scope_id(record.scope) for record in swept}
    for tombstone, stored in calls:
        where = scope_id(tombstone.scope)
        if tombstone.user_wide:
            user = tombstone.scope.user_id
            if user is not None:
                # The user's scopes that hold its rows, and its user scope, which holds
                # the tombstone even when the cache holds it empty: every turn of the
                # user sees it.
                cache.drop_user(user)
            dropped.add(where)
        elif stored is not None and tombstone != stored:
            dropped.add(where)
        else:
            cache.forget(where, tombstone if stored is None else None, stand_ins.get(where, []))
    if dropped:
        cache.drop_scopes(dropped)


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
