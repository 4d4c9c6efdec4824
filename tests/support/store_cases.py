"""The store tests' shared cases: a day of July 2026, a record with defaults, the context of
user u1, and every byte a store's directory holds (for canary scans)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import memresolve as mr


def t(day: int) -> datetime:
    return datetime(2026, 7, day, tzinfo=UTC)


def record(record_id: str, value: str = "v", **fields: Any) -> mr.MemoryRecord:
    given: dict[str, Any] = {
        "key": "pet.name",
        "scope": mr.UserScope("u1"),
        "authority": "model-inferred",
        "confidence": 0.5,
        "valid_from": t(1),
    }
    given.update(fields)
    return mr.MemoryRecord(id=record_id, value=value, **given)


CONTEXT = mr.RetrievalContext(now=t(30), user_id="u1", character_id="c1", conversation_id="k1")


def file_bytes(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in directory.iterdir() if p.is_file())


def store_of(
    records: Iterable[mr.MemoryRecord], tombstones: Iterable[mr.ForgetTombstone]
) -> mr.MemoryStore:
    """A store in memory holding ``records``, with each tombstone stored (``forget_in``):
    created to share conversations, since drawn records may leave owners out."""
    store = mr.MemoryStore(shared_conversations=True)
    store.add(records)
    for tombstone in tombstones:
        forget_in(store, tombstone)
    return store


def forget_in(store: mr.MemoryStore, tombstone: mr.ForgetTombstone) -> tuple[str, ...]:
    """Stores ``tombstone`` through the store's own call: ``forget_for_user`` for a
    user-wide one, else ``forget``; returns the ids erased."""
    if tombstone.user_wide:
        assert tombstone.scope.user_id is not None  # a user-wide tombstone is on a user scope
        return store.forget_for_user(
            tombstone.scope.user_id,
            tombstone.key,
            at=tombstone.forgotten_at,
            blocks_sources_before=tombstone.blocks_sources_before,
        )
    return store.forget(
        tombstone.key,
        tombstone.scope,
        at=tombstone.forgotten_at,
        blocks_sources_before=tombstone.blocks_sources_before,
    )


def narrowest_context(scope: mr.Scope, at: datetime) -> mr.RetrievalContext:
    """The narrowest context that sees ``scope`` at ``at`` (an unowned scope: of a user that
    owns nothing), as ``observe`` decides a slot."""
    match scope:
        case mr.UserScope(user_id=user):
            return mr.RetrievalContext(now=at, user_id=user)
        case mr.CharacterScope(user_id=user, character_id=character):
            return mr.RetrievalContext(now=at, user_id=user, character_id=character)
        case mr.ConversationScope(conversation_id=conversation, user_id=owner):
            return mr.RetrievalContext(
                now=at, user_id=owner or "nobody", conversation_id=conversation
            )
        case mr.SceneScope(conversation_id=conversation, scene_id=scene, user_id=owner):
            return mr.RetrievalContext(
                now=at, user_id=owner or "nobody", conversation_id=conversation, scene_id=scene
            )
    raise AssertionError(scope)
