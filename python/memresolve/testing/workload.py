"""A seeded generator of realistic per-turn candidate sets, shared by the benchmarks.

The mix a chat backend sees after its vector search: several scopes of one
user (some of them another character's or conversation's, so out of scope),
correction chains, retries, expired and future-dated records, forgotten ones.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import memresolve as mr

NOW = datetime(2026, 7, 30, 12, 0, tzinfo=UTC)
CONTEXT = mr.RetrievalContext(
    now=NOW, user_id="u-1", character_id="c-1", conversation_id="k-1", scene_id="s-1"
)
_SCOPES: tuple[mr.Scope, ...] = (
    mr.UserScope("u-1"),
    mr.CharacterScope("u-1", "c-1"),
    mr.CharacterScope("u-1", "c-2"),  # another character: out of scope
    mr.ConversationScope("k-1"),
    mr.ConversationScope("k-0"),  # an earlier conversation: out of scope
    mr.SceneScope("k-1", "s-1"),
    mr.SceneScope("k-1", "s-0"),  # a scene that ended: out of scope
)
#: The scopes of ``_SCOPES`` that ``CONTEXT`` sees: a store serves a context only these.
IN_SCOPE: tuple[mr.Scope, ...] = tuple(
    scope for scope in _SCOPES if mr.scope_id(scope) in set(map(mr.scope_id, CONTEXT.scopes()))
)
_AUTHORITIES = tuple(mr.Authority)


def record_arguments(
    count: int, seed: int = 0, scopes: tuple[mr.Scope, ...] = _SCOPES
) -> tuple[list[dict[str, Any]], list[mr.ForgetTombstone]]:
    """Keyword arguments of ``count`` records in chains of about three, and a few tombstones.

    The records' scopes are drawn from ``scopes``: by default seven, four of them
    ``CONTEXT``'s; ``IN_SCOPE`` draws only those four.
    """
    rng = random.Random(seed)
    keys = [f"slot.{n}" for n in range(max(1, count // 3))]
    arguments: list[dict[str, Any]] = []
    previous: dict[tuple[mr.Scope, str], str] = {}
    for n in range(count):
        scope = rng.choice(scopes)
        key = rng.choice(keys)
        start = NOW - timedelta(days=rng.uniform(0, 90))
        ends = rng.random() < 0.1
        future = rng.random() < 0.03
        link = previous.get((scope, key))
        record_id = f"mem-{n:06d}"
        arguments.append(
            {
                "id": record_id,
                "key": key,
                "value": f"value {n}",
                "scope": scope,
                "status": "forgotten" if rng.random() < 0.02 else "active",
                "authority": rng.choice(_AUTHORITIES),
                "confidence": rng.random(),
                "valid_from": NOW + timedelta(days=1) if future else start,
                "valid_until": start + timedelta(days=rng.uniform(0, 60)) if ends else None,
                "source_message_ids": (f"msg-{n}",),
                "supersedes": link if link is not None and rng.random() < 0.8 else None,
                "version": rng.randint(1, 4),
            }
        )
        previous[(scope, key)] = record_id
    tombstones = [
        mr.ForgetTombstone(
            key=rng.choice(keys),
            scope=rng.choice(scopes),
            forgotten_at=NOW - timedelta(days=5),
            blocks_sources_before=NOW - timedelta(days=rng.uniform(10, 80)),
        )
        for _ in range(max(1, count // 100))
    ]
    return arguments, tombstones


def build(
    arguments: list[dict[str, Any]], record_class: type[mr.MemoryRecord] = mr.MemoryRecord
) -> list[mr.MemoryRecord]:
    """The records, built through ``record_class``'s constructor (validation included)."""
    return [record_class(**fields) for fields in arguments]


def build_with_fresh_scopes(
    arguments: list[dict[str, Any]], record_class: type[mr.MemoryRecord] = mr.MemoryRecord
) -> list[mr.MemoryRecord]:
    """The records, each with a scope built for it, as a loader reading rows does."""
    records = []
    for fields in arguments:
        scope = fields["scope"]  # the workload's scopes are unowned: their ids rebuild them
        records.append(record_class(**{**fields, "scope": type(scope)(*scope.fields)}))
    return records


def candidates(
    count: int, seed: int = 0, record_class: type[mr.MemoryRecord] = mr.MemoryRecord
) -> tuple[list[mr.MemoryRecord], list[mr.ForgetTombstone]]:
    """``count`` records in chains of about three, and a few tombstones."""
    arguments, tombstones = record_arguments(count, seed)
    return build(arguments, record_class), tombstones
