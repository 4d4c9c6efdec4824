"""The store's writes of records, inside a write transaction: what ``add``, ``retract`` and
``observe`` share."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from memresolve._model import (
    ForgetTombstone,
    MemoryRecord,
    Scope,
    ScopeKind,
    Subject,
    check_records,
    scope_id,
)
from memresolve._store import _blocking as blocking
from memresolve._store import _lifecycle as lifecycle
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve._store._cache import StoreCache
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["ERASED_TEXT", "add_checked", "check_owner", "erased", "retractions"]

#: What an erased record's ``value`` holds.
ERASED_TEXT: Final = blocking.ERASED_TEXT


#: The scopes whose owner is optional in the data model (``docs/spec.md`` §1.2).
_OWNABLE: Final = (ScopeKind.CONVERSATION, ScopeKind.SCENE)


def _how_to_own(scope: Scope) -> str:
    return (
        f"has no user_id: this store refuses {scope.kind.value} scopes without an owner "
        "(an unowned conversation is shared by every user who names it); give the scope "
        f"its user_id ({type(scope).__name__}(..., user_id=...)), or create the store with "
        "MemoryStore(path, shared_conversations=True) if conversations are shared"
    )


def check_owner(scope: Scope, subject: Subject, field: str) -> None:
    """Refuses an unowned conversation or scene ``scope`` (a store that fails closed)."""
    if scope.kind in _OWNABLE and scope.user_id is None:
        subject.fail(field, ErrorKind.MISSING, _how_to_own(scope))


def add_checked(
    connection: sqlite3.Connection,
    cache: StoreCache,
    checked: Sequence[MemoryRecord],
    *,
    owners: bool,
) -> int:
    """Adds checked records in the caller's write transaction; returns how many were new.

    With ``owners`` (a store that fails closed), a record of an unowned conversation or
    scene scope is refused (``missing``, naming the record and ``user_id``), retry or not.

    A record whose id the store holds with the same content (as first added) is a retry
    and changes nothing; with other content it is ``duplicate-id``. A record the forget
    sweep would purge is stored with its text erased (``forgotten`` when a tombstone's
    message hashes alone block it and it was ``active``); a record a tombstone's bound
    blocks brings its messages to that tombstone's hashes, and the records citing them are
    erased too (``_blocking``). The cache follows in the transaction (a failed commit
    drops it whole).
    """
    if owners:
        for index, record in enumerate(checked):
            if record.scope.kind in _OWNABLE and record.scope.user_id is None:
                raise InvalidInputError(
                    f"record {record.id!r}: field 'user_id' {_how_to_own(record.scope)}",
                    kind=ErrorKind.MISSING,
                    record_id=record.id,
                    field="user_id",
                    row=index,
                )
    rows = [schema.record_row(record) for record in checked]
    known = sql.known_hashes(connection, [row["id"] for row in rows])
    new: list[tuple[int, dict[str, Any]]] = []
    for index, row in enumerate(rows):
        stored = known.get(row["id"])
        if stored is None:
            new.append((index, row))
        elif stored.hash != (schema.erased_hash(row) if stored.erased else row["content_hash"]):
            raise InvalidInputError(
                f"record {row['id']!r}: field 'id' is already in the store with other content",
                kind=ErrorKind.DUPLICATE_ID,
                record_id=row["id"],
                field="id",
                row=index,
            )
    # The forget sweep's rule: text a tombstone blocks (by its bound or by a message it
    # holds), or of a record stored ``forgotten``, is never stored.
    fresh = tuple(checked[index] for index, _ in new)
    judged = blocking.judge(
        fresh,
        sql.tombstones_of(
            connection,
            [row["scope_id"] for _, row in new],
            [record.scope.user_id for record in fresh],
        ),
    )
    stored_records: list[tuple[str, MemoryRecord]] = []
    for index, row in new:
        record = checked[index]
        if row["id"] in judged.erased:
            forgotten = row["id"] in judged.forgotten
            row.update(value=ERASED_TEXT, source_message_ids="", erased=1)
            if forgotten:
                row["status"] = "forgotten"  # its erasure blanks the messages the rule read
            row["content_hash"] = schema.erased_hash(row)
            record = blocking.erased(record, forgotten=forgotten)
        stored_records.append((row["scope_id"], record))
    sql.insert_records(connection, [row for _, row in new])
    # In the transaction: a failed commit drops the cache whole.
    cache.append(stored_records)
    _join(connection, cache, judged.joins)
    return len(new)


def _join(
    connection: sqlite3.Connection,
    cache: StoreCache,
    joins: Mapping[ForgetTombstone, Collection[str]],
) -> None:
    """The messages of new records a stored tombstone's time rule blocks join its hashes,
    and the stored records of its key and reach that cite one of them are erased (the new
    ones just inserted among them): one step, no closure. The tombstone's scope (its row
    changed) and those of the records erased leave the cache."""
    changed: set[str] = set()
    for tombstone, message_ids in joins.items():
        grown, new = blocking.joined(tombstone, message_ids)
        if not new:
            continue
        blocking.save_sources(connection, grown)
        changed.add(scope_id(tombstone.scope))
        changed.update(
            scope_id(record.scope) for record in blocking.erase_citing(connection, grown, new)
        )
    if changed:
        cache.drop_scopes(changed)


def erased(record: MemoryRecord) -> MemoryRecord:
    """``record`` with its private text erased."""
    return blocking.erased(record)


def retractions(
    connection: sqlite3.Connection, key: str, scope: Scope, at: datetime
) -> tuple[MemoryRecord, ...]:
    """``MemoryStore.retract``'s records, read in its write transaction: a retraction at
    ``at`` of each record of the slot that could still be active then or later, each under
    an id derived from the record's id and ``at`` (checked, ready to add)."""
    where = scope_id(scope)
    slot = [schema.record_from_row(row) for row in sql.slot_rows(connection, where, key)]
    tombstones = sql.tombstones_of(connection, [where], [scope.user_id])
    return tuple(
        check_records(
            tuple(
                target.retracted(at=at, id=lifecycle.retraction_id(target.id, at))
                for target in lifecycle.retraction_targets(slot, tombstones, at)
            )
        )
    )
