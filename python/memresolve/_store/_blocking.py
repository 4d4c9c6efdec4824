"""Message blocking in the store (``docs/store.md``, "Forgetting"): what joins a
tombstone's salted hashes, and the records the messages they name then erase.

A tombstone blocks a record by its bound (the *time rule*: same key, a scope it
reaches, evidence at or before ``blocks_sources_before``) or by its hashes (the
*message rule*: same key, a scope it reaches, a cited message whose salted hash it
holds). The messages of the records the store erases by the time rule join the
hashes: a forget's own, and those of a record added later that a stored tombstone's
time rule blocks. Every stored record the message rule blocks is erased in the same
transaction, and one stored ``active`` is stored ``forgotten``: its erasure blanks the
message ids the rule read, and the status keeps it excluded at stage 3 (bearing its
edge, as an active record does). A record erased by the message rule adds nothing to
the hashes: one step, no closure.

The store's invariant, which every write keeps: no record that a stored tombstone
blocks keeps its text. So a stored record not yet erased cites no message a stored
tombstone of its key and reach holds, and only new hashes need a sweep.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from memresolve._engine import purged_records
from memresolve._model import (
    ForgetTombstone,
    MemoryRecord,
    PurgeCause,
    Status,
    hashes_of,
    scope_id,
)
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve.reference import cites_blocked_source, evidence_time, reaches

__all__ = [
    "ERASED_TEXT",
    "Judged",
    "erase_citing",
    "erased",
    "held",
    "identity",
    "joined",
    "judge",
    "reach_rows",
    "save_sources",
    "time_blocked",
]

#: What an erased record's ``value`` holds.
ERASED_TEXT: Final = ""
#: The columns of a tombstone's primary key, in its order.
_KEY_COLUMNS: Final = ("scope_id", "key", "user_wide", "forgotten_at", "blocks_sources_before")


def erased(record: MemoryRecord, *, forgotten: bool = False) -> MemoryRecord:
    """``record`` with its private text erased (and stored ``forgotten`` if asked)."""
    fields = record.to_dict()
    fields.update(value=ERASED_TEXT, source_message_ids=[])
    if forgotten:
        fields["status"] = Status.FORGOTTEN.value
    return type(record).from_dict(fields)


def time_blocked(
    candidates: Sequence[MemoryRecord], tombstone: ForgetTombstone
) -> list[MemoryRecord]:
    """The candidates ``tombstone``'s time rule blocks: the forget sweep's rule
    (``purged_records``) with the tombstone's hashes left out."""
    hashless = dataclasses.replace(tombstone, source_salt=None, blocked_sources=frozenset())
    return [
        record
        for record, cause in purged_records(tuple(candidates), (hashless,))
        if cause is PurgeCause.TOMBSTONE
    ]


def identity(tombstone: ForgetTombstone) -> tuple[object, ...]:
    """``tombstone``'s primary key in the store: a retried forget stores it once."""
    row = schema.tombstone_row(tombstone)
    return tuple(row[c] for c in _KEY_COLUMNS)


def held(connection: sqlite3.Connection, tombstone: ForgetTombstone) -> ForgetTombstone | None:
    """The tombstone the store holds under ``tombstone``'s primary key (its salt and
    hashes as stored), or None."""
    found = connection.execute(
        f"SELECT * FROM tombstones WHERE {' AND '.join(f'{c} = ?' for c in _KEY_COLUMNS)}",
        identity(tombstone),
    ).fetchone()
    return None if found is None else schema.tombstone_from_row(found)


def save_sources(connection: sqlite3.Connection, tombstone: ForgetTombstone) -> None:
    """Writes ``tombstone``'s salt and hashes over those of its stored row."""
    row = schema.tombstone_row(tombstone)
    connection.execute(
        "UPDATE tombstones SET source_salt = ?, blocked_sources = ? WHERE "
        + " AND ".join(f"{c} = ?" for c in _KEY_COLUMNS),
        [row["source_salt"], row["blocked_sources"], *(row[c] for c in _KEY_COLUMNS)],
    )


def reach_rows(connection: sqlite3.Connection, tombstone: ForgetTombstone) -> list[sqlite3.Row]:
    """The rows (``SELECT_RECORDS``) not yet erased with ``tombstone``'s key in the scopes
    it reaches: its own scope's slot (``records_by_scope``), or for a user-wide one every
    scope its user owns (``records_by_user``: an unowned scope's rows have no user)."""
    if not tombstone.user_wide:
        return sql.slot_rows(connection, scope_id(tombstone.scope), tombstone.key, unerased=True)
    return connection.execute(
        f"{schema.SELECT_RECORDS} WHERE records.user_id = ? AND records.key = ? "
        "AND records.erased = 0",
        (tombstone.scope.user_id, tombstone.key),
    ).fetchall()


def erase_citing(
    connection: sqlite3.Connection,
    tombstone: ForgetTombstone,
    message_ids: Collection[str],
    unerased: Sequence[tuple[sqlite3.Row, MemoryRecord]] | None = None,
) -> list[MemoryRecord]:
    """Erases every record not yet erased with ``tombstone``'s key, in a scope it reaches,
    that cites one of ``message_ids`` (the message rule, for hashes ``tombstone`` has just
    gained); one stored ``active`` is stored ``forgotten``. Returns them as now stored.
    ``unerased``: those records (rows and records), when the caller has read them in this
    transaction and nothing erased them since."""
    if not message_ids:
        return []
    if unerased is None:
        unerased = [(row, schema.record_from_row(row)) for row in reach_rows(connection, tombstone)]
    hit: list[sqlite3.Row] = []
    records: list[MemoryRecord] = []
    for row, record in unerased:
        if not set(record.source_message_ids).isdisjoint(message_ids):
            hit.append(row)
            records.append(erased(record, forgotten=record.status is Status.ACTIVE))
    sql.erase_text(connection, hit)
    connection.executemany(
        "UPDATE records SET status = 'forgotten' WHERE row = ? AND status = 'active'",
        [(row["row"],) for row in hit],
    )
    return records


@dataclass(slots=True)
class Judged:
    """What the stored tombstones do to new records: the ids to store erased, those of
    them to store ``forgotten`` (stored ``active``, blocked by the message rule alone),
    and the messages each tombstone's time rule brings (the records it blocks cite them)."""

    erased: set[str] = field(default_factory=set)
    forgotten: set[str] = field(default_factory=set)
    joins: dict[ForgetTombstone, set[str]] = field(default_factory=dict)


def judge(records: Sequence[MemoryRecord], tombstones: Iterable[ForgetTombstone]) -> Judged:
    """The forget sweep's rule for new ``records`` against the stored ``tombstones`` (those
    that may reach them), each rule told apart."""
    stored = tuple(tombstones)
    judged = Judged(erased={record.id for record, _ in purged_records(tuple(records), stored)})
    by_key: dict[str, list[ForgetTombstone]] = {}
    for tombstone in stored:
        by_key.setdefault(tombstone.key, []).append(tombstone)
    for record in records:
        in_time = by_message = False
        for tombstone in by_key.get(record.key, ()):
            if not reaches(tombstone, record.scope):
                continue
            if evidence_time(record) <= tombstone.blocks_sources_before:
                in_time = True
                if record.source_message_ids:
                    judged.joins.setdefault(tombstone, set()).update(record.source_message_ids)
            elif cites_blocked_source(record, tombstone):
                by_message = True
        if in_time or by_message:
            judged.erased.add(record.id)
        if by_message and not in_time and record.status is Status.ACTIVE:
            judged.forgotten.add(record.id)
    return judged


def joined(
    tombstone: ForgetTombstone, message_ids: Collection[str]
) -> tuple[ForgetTombstone, set[str]]:
    """``tombstone`` with ``message_ids`` joined to its hashes (a salt drawn if it has
    none), and those of the ids it did not block yet."""
    grown = tombstone.blocking_sources(message_ids)
    assert grown.source_salt is not None  # blocking_sources draws one
    new = {
        message
        for message in message_ids
        if next(iter(hashes_of(grown.source_salt, (message,)))) not in tombstone.blocked_sources
    }
    return grown, new
