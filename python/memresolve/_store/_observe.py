"""``MemoryStore.observe``: the extractor's one call, decided inside its write transaction.

The slot's winner needs a context (edges cross scopes); the one used is fixed by the
observed scope: the narrowest context that sees it (``narrowest``).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from memresolve._engine import resolve
from memresolve._model import (
    INT64_MAX,
    Authority,
    AuthorityName,
    CharacterScope,
    ConversationScope,
    MemoryRecord,
    RetrievalContext,
    SceneScope,
    Scope,
    Subject,
    UserScope,
    check,
    check_scope,
    scope_id,
    scope_owner,
    to_micros,
)
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "Observation",
    "ObserveOutcome",
    "build",
    "decide",
    "observation_id",
    "observe_in",
    "slot_winner",
    "stored_retry",
]

#: The namespace of derived observation ids (UUID version 5).
_OBSERVATIONS: Final = uuid.UUID("0c7e3a4b-9d2f-5b8a-8e61-6f6273657276")

#: The user of the context that decides an unowned scope's slot: it sees only the
#: slot's unowned scopes, so which user it names does not matter (no record of that
#: user's is read).
_ANY_USER: Final = "memresolve:observe"


class ObserveOutcome(StrEnum):
    """What ``MemoryStore.observe`` did."""

    ADDED = "added"
    """A new record was stored; it supersedes the slot's winner, if there was one."""
    UNCHANGED = "unchanged"
    """Nothing was stored: the winner already says it, or the call is a retry."""
    REFUSED = "refused"
    """Nothing was stored: the winner has a stronger authority than the observation."""


@dataclass(frozen=True, slots=True)
class Observation:
    """The outcome of ``observe``, and its record: the one added; for ``unchanged``, the
    winner that already says it (or the record a retry stored first); for ``refused``,
    the stronger winner."""

    outcome: ObserveOutcome
    record: MemoryRecord


def observation_id(
    key: str,
    scope: Scope,
    *,
    at: datetime,
    authority: Authority,
    observed_at: datetime | None,
    valid_until: datetime | None,
    idempotency_key: str | None,
) -> str:
    """The id an observation gets when the caller gives none: derived from public fields
    only (ids outlive erasure, and a hash of a short value or a message id would not be
    safe to keep), so a retried call derives the same id."""
    parts = (
        key,
        scope_id(scope),
        str(to_micros(at)),
        authority.value,
        "" if observed_at is None else str(to_micros(observed_at)),
        "" if valid_until is None else str(to_micros(valid_until)),
        "" if idempotency_key is None else f"k{idempotency_key}",
    )
    return str(uuid.uuid5(_OBSERVATIONS, "\x00".join(parts)))


def narrowest(scope: Scope, at: datetime) -> tuple[RetrievalContext, list[str]]:
    """The narrowest context that sees ``scope`` at ``at``, and the ids of the scopes whose
    records it reads: for a user scope the user alone; a character scope user and
    character; an owned conversation user and conversation (with its unowned twin); an
    owned scene, its conversation too. An unowned scope belongs to no user: its slot is
    decided over the unowned conversation (and scene) alone."""
    conversation: str | None = None
    scene: str | None = None
    character: str | None = None
    owner: str | None
    match scope:
        case UserScope(user_id=user):
            owner = user
        case CharacterScope(user_id=user, character_id=character):
            owner = user
        case ConversationScope(conversation_id=conversation):
            owner = scope_owner(scope)
        case SceneScope(conversation_id=conversation, scene_id=scene):
            owner = scope_owner(scope)
    context = RetrievalContext(
        now=at,
        user_id=_ANY_USER if owner is None else owner,
        character_id=character,
        conversation_id=conversation,
        scene_id=scene,
    )
    seen = context.scopes()
    if owner is None:
        seen = tuple(
            s for s in seen if s.kind.value in ("conversation", "scene") and scope_owner(s) is None
        )
    return context, [scope_id(s) for s in seen]


def slot_winner(
    connection: sqlite3.Connection, key: str, scope: Scope, at: datetime
) -> MemoryRecord | None:
    """The winner of (``scope``, ``key``) at ``at`` in the narrowest context that sees
    ``scope``, over what the store holds now (in the caller's transaction)."""
    context, seen = narrowest(scope, at)
    records, tombstones = [], []
    for kind, row in sql.rows_of_scopes(connection, seen):
        if kind == "record":
            records.append(schema.record_from_row(row))
        else:
            tombstones.append(schema.tombstone_from_row(row))
    result = resolve(records, context, tombstones=tombstones)
    return next((r for r in result.active if r.key == key and r.scope == scope), None)


def decide(
    observed: MemoryRecord, winner: MemoryRecord | None, *, over_stronger: bool
) -> tuple[ObserveOutcome, MemoryRecord]:
    """What to do with ``observed`` (not yet superseding anything) against the slot's
    ``winner``: the outcome, and the record to store (``added``) or the winner."""
    if winner is None:
        return ObserveOutcome.ADDED, observed
    rank = list(Authority).index
    if (
        winner.value == observed.value
        and winner.valid_until == observed.valid_until
        and rank(winner.authority) >= rank(observed.authority)
    ):
        return ObserveOutcome.UNCHANGED, winner
    if rank(observed.authority) < rank(winner.authority) and not over_stronger:
        return ObserveOutcome.REFUSED, winner
    fields = observed.to_dict() | {
        "supersedes": winner.id,
        "version": min(winner.version + 1, INT64_MAX),
    }
    return ObserveOutcome.ADDED, type(observed).from_dict(fields)


#: The fields a retry must repeat. Not ``supersedes`` and ``version``, which came from the
#: winner of the first call; not ``status``, which ``normalize`` or a forget may have
#: rewritten since (a retry is judged against the record as first added, as ``add``
#: judges it); and not an erased record's text, which is gone.
_PUBLIC: Final = ("key", "scope", "authority", "valid_from", "valid_until", "observed_at")


def stored_retry(connection: sqlite3.Connection, observed: MemoryRecord) -> MemoryRecord | None:
    """The record the store holds under ``observed``'s id, when the call is a retry of the
    observation that stored it; None when the id is new.

    Raises:
        InvalidInputError: the store holds the id with other content (``duplicate-id``):
            two observations that differ only in their value or sources derive one id;
            give ``idempotency_key`` (or ``id``) to tell them apart.
    """
    row = connection.execute("SELECT erased FROM records WHERE id = ?", (observed.id,)).fetchone()
    if row is None:
        return None
    stored = sql.get_record(connection, observed.id)
    assert stored is not None  # the same transaction just read its row
    same = all(getattr(stored, name) == getattr(observed, name) for name in _PUBLIC) and (
        bool(row[0])  # erased: its text cannot be compared, and must not be
        or (
            stored.value == observed.value
            and stored.source_message_ids == observed.source_message_ids
            and stored.confidence == observed.confidence
        )
    )
    if not same:
        raise InvalidInputError(
            f"observe: record {observed.id!r}: field 'id' is already in the store with other"
            " content (an observation of this slot at this instant, with this authority; give"
            " idempotency_key or id to tell two observations apart)",
            kind=ErrorKind.DUPLICATE_ID,
            record_id=observed.id,
            field="id",
        )
    return stored


def build(
    key: str,
    value: str,
    scope: Scope,
    *,
    at: datetime,
    authority: Authority | AuthorityName,
    confidence: float,
    source_message_ids: Iterable[str],
    observed_at: datetime | None,
    valid_until: datetime | None,
    id: str | None,
    idempotency_key: str | None,
) -> MemoryRecord:
    """The observed record, valid from ``at``, superseding nothing yet, checked; its id
    derived when none is given (the fields the id derives from are checked first, under
    ``observe``, so an error never names a record by an id it would not have)."""
    subject = Subject("observe")
    checked_key = check.text(key, subject, "key")
    checked_scope = check_scope(scope, subject, "scope")
    start = check.instant(at, subject, "at")
    rank = check.enum_member(authority, Authority, subject, "authority")
    seen = check.optional_instant(observed_at, subject, "observed_at")
    until = check.optional_instant(valid_until, subject, "valid_until")
    given_key = check.optional_text(idempotency_key, subject, "idempotency_key")
    if until is not None and until <= start:
        # Never in force: it could supersede the winner and yet never show (spec §1.6).
        subject.fail(
            "valid_until",
            ErrorKind.INCONSISTENT,
            "is at or before at: the observation would never be in force",
        )
    record_id = (
        observation_id(
            checked_key,
            checked_scope,
            at=start,
            authority=rank,
            observed_at=seen,
            valid_until=until,
            idempotency_key=given_key,
        )
        if id is None
        else check.text(id, subject, "id")
    )
    return MemoryRecord(
        id=record_id,
        key=checked_key,
        value=value,
        scope=checked_scope,
        authority=rank,
        confidence=confidence,
        valid_from=start,
        valid_until=until,
        observed_at=seen,
        source_message_ids=source_message_ids,
    )


def observe_in(
    connection: sqlite3.Connection,
    observed: MemoryRecord,
    *,
    over_stronger: bool,
    add: Callable[[sqlite3.Connection, Sequence[MemoryRecord]], int],
) -> Observation:
    """``MemoryStore.observe`` inside its write transaction: a stored retry is
    ``unchanged`` (looked up before the winner: a stale retry changes nothing); else the
    observation is decided against the slot's winner at its ``valid_from`` and, when
    ``added``, written by ``add``."""
    stored = stored_retry(connection, observed)
    if stored is not None:
        return Observation(ObserveOutcome.UNCHANGED, stored)
    winner = slot_winner(connection, observed.key, observed.scope, observed.valid_from)
    outcome, record = decide(observed, winner, over_stronger=over_stronger)
    if outcome is ObserveOutcome.ADDED:
        add(connection, (record,))
    return Observation(outcome, record)
