"""The decisions of the store's lifecycle calls, apart from SQL and transactions.

``MemoryStore.retract`` reads a slot's records and tombstones in its write transaction
and asks this module which records its retractions must name and under which ids.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from memresolve._engine import purged_records
from memresolve._model import (
    CharacterScope,
    ForgetTombstone,
    MemoryRecord,
    Scope,
    Status,
    Subject,
    UserScope,
    check,
    check_scope,
    instant,
    scope_id,
    scope_owner,
    to_micros,
)
from memresolve.errors import ErrorKind

__all__ = [
    "USER_KEYS",
    "instant_argument",
    "record_filter",
    "retraction_id",
    "retraction_targets",
]

#: The keys a user's records hold but for keys whose every record is erased, through the
#: index on ``records.user_id``.
USER_KEYS: Final = "SELECT DISTINCT key FROM records WHERE user_id = ? AND erased = 0 ORDER BY key"

#: The namespace of retraction ids (UUID version 5): a retried ``retract`` derives the
#: same id for the same record and instant.
_RETRACTIONS: Final = uuid.UUID("5b0f7f3e-4d0a-5c1e-9a57-6d656d726573")


def retraction_id(target_id: str, at: datetime) -> str:
    """The id of the retraction of record ``target_id`` at ``at``: derived from public
    fields only (ids outlive erasure; a value never goes into one)."""
    return str(uuid.uuid5(_RETRACTIONS, f"{target_id}\x00{to_micros(at)}"))


def retraction_targets(
    slot: Sequence[MemoryRecord], tombstones: Sequence[ForgetTombstone], at: datetime
) -> list[MemoryRecord]:
    """The records of one (scope, key) slot that could still be active at ``at`` or later,
    and so need a retraction for the slot to show nothing from ``at`` on; by id.

    A record can never be active again when it is stored other than ``active`` (a
    normaliser wrote ``superseded`` or ``expired`` for good; ``forgotten`` and
    ``retracted`` are never active), when its interval has ended by ``at``, when a
    tombstone blocks it (at every instant), or when a retraction of the slot already names
    it from ``at`` or earlier (a retraction bears its edge from its start on, for ever).
    Every other record is a target, whether it wins at ``at`` or not: a runner-up, a retry
    stored under a fresh id, a record hidden by an edge that may end, or one that starts
    later would otherwise show an older value after ``at``.
    """
    blocked = {record.id for record, _ in purged_records(tuple(slot), tuple(tombstones))}
    retracted = {
        record.supersedes
        for record in slot
        if record.status is Status.RETRACTED
        and record.supersedes is not None
        and record.valid_from <= at
        and record.valid_until is None
    }
    return sorted(
        (
            record
            for record in slot
            if record.status is Status.ACTIVE
            and (record.valid_until is None or record.valid_until > at)
            and record.id not in blocked
            and record.id not in retracted
        ),
        key=lambda record: record.id,
    )


def instant_argument(at: datetime | None, forgotten_at: datetime | None, call: str) -> datetime:
    """The instant a write stamps, checked: ``at``, or the deprecated ``forgotten_at`` it
    replaced (an error names the argument the caller gave).

    Every write that stamps an instant names it ``at`` (``observe``, ``retract``,
    ``forget_everywhere``, ``record.corrected``); ``forget`` called it ``forgotten_at``
    before 0.2.
    """
    subject = Subject(call)
    if forgotten_at is None:
        if at is None:
            subject.fail("at", ErrorKind.MISSING, "is missing")
        return instant(at, subject, "at")
    if at is not None:
        subject.fail(
            "forgotten_at", ErrorKind.INCONSISTENT, "is the old name of at: give one of them"
        )
    warnings.warn(
        f"{call}(forgotten_at=...) is deprecated: call {call}(at=...)",
        DeprecationWarning,
        stacklevel=4,
    )
    return instant(forgotten_at, subject, "forgotten_at")


def record_filter(
    user_id: object, key: object, scope: object, subject: Subject
) -> tuple[str, tuple[str, ...]]:
    """The ``WHERE`` clause (empty for no filter) and parameters of ``records``' filters,
    checked. Each is served by an index but ``key`` alone: ``records.user_id`` holds the
    user of a user or character scope and the owner of an owned one (null when unowned),
    and ``records_by_scope`` is on (scope_id, key)."""
    user = check.optional_text(user_id, subject, "user_id")
    wanted_key = check.optional_text(key, subject, "key")
    wanted_scope: Scope | None = None if scope is None else check_scope(scope, subject, "scope")
    clauses: list[str] = []
    parameters: list[str] = []
    if wanted_scope is not None:
        owner = _owner_of(wanted_scope)
        if user is not None and owner != user:
            subject.fail(
                "scope",
                ErrorKind.INCONSISTENT,
                "is not owned by user_id"
                + (" (an unowned scope is nobody's)" if owner is None else " but by another user"),
            )
        clauses.append("records.scope_id = ?")
        parameters.append(scope_id(wanted_scope))
    elif user is not None:
        clauses.append("records.user_id = ?")
        parameters.append(user)
    if wanted_key is not None:
        clauses.append("records.key = ?")
        parameters.append(wanted_key)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    return where, tuple(parameters)


def _owner_of(scope: Scope) -> str | None:
    """The user a scope belongs to: a user or character scope's user, an owned
    conversation or scene's owner; None for an unowned one (``docs/spec.md`` §4.3)."""
    if isinstance(scope, UserScope | CharacterScope):
        return scope.user_id
    return scope_owner(scope)
