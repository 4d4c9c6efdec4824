"""The tutorial's resolver ported to plain Python, as a user would write it: the rival of
the per-turn benchmark (``benches/test_bench_store.py``), shipped so that users can time
their own turn against it.

A faithful, idiomatic port (slotted dataclasses, one function per step, tombstones on
``valid_from`` as the tutorial has them), written for speed where that costs no
clarity: scope ids computed once per record, a dict of groups, ``min`` instead of
sorting each group, and no precedence key for a group of one. It is not memresolve's
contract (the tutorial lets a superseded-but-excluded record's edge drop, keys
tombstones on ``valid_from``, and knows no owners), so the benchmark compares costs,
not answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

AUTHORITY_RANK = {
    "model-inferred": 0,
    "rule-extracted": 1,
    "user-confirmed": 2,
    "user-corrected": 3,
}


@dataclass(slots=True)
class Scope:
    kind: str
    user_id: str | None = None
    character_id: str | None = None
    conversation_id: str | None = None
    scene_id: str | None = None


@dataclass(slots=True)
class Memory:
    id: str
    key: str
    value: str
    scope: Scope
    status: str
    authority: str
    confidence: float
    valid_from: datetime
    valid_until: datetime | None = None
    source_message_ids: tuple[str, ...] = ()
    supersedes: str | None = None
    version: int = 1


@dataclass(slots=True)
class Context:
    now: datetime
    user_id: str
    character_id: str
    conversation_id: str
    scene_id: str | None = None


@dataclass(slots=True)
class Tombstone:
    key: str
    scope_id: str
    forgotten_at: datetime
    blocks_sources_before: datetime


@dataclass(slots=True)
class Resolution:
    active: list[Memory]
    excluded: list[tuple[str, str]] = field(default_factory=list)


def scope_matches(scope: Scope, context: Context) -> bool:
    kind = scope.kind
    if kind == "user":
        return scope.user_id == context.user_id
    if kind == "character":
        return scope.user_id == context.user_id and scope.character_id == context.character_id
    if kind == "conversation":
        return scope.conversation_id == context.conversation_id
    return scope.conversation_id == context.conversation_id and scope.scene_id == context.scene_id


def scope_id(scope: Scope) -> str:
    kind = scope.kind
    if kind == "user":
        return f"user:{scope.user_id}"
    if kind == "character":
        return f"character:{scope.user_id}:{scope.character_id}"
    if kind == "conversation":
        return f"conversation:{scope.conversation_id}"
    return f"scene:{scope.conversation_id}:{scope.scene_id}"


def is_time_eligible(memory: Memory, now: datetime) -> bool:
    if memory.status != "active" or memory.valid_from > now:
        return False
    return memory.valid_until is None or now < memory.valid_until


def blocked_by_tombstone(memory: Memory, memory_scope: str, tombstones: list[Tombstone]) -> bool:
    return any(
        t.key == memory.key
        and t.scope_id == memory_scope
        and memory.valid_from <= t.blocks_sources_before
        for t in tombstones
    )


def _precedence(memory: Memory) -> tuple[int, int, float, str]:
    return (
        -AUTHORITY_RANK[memory.authority],
        -memory.version,
        -memory.valid_from.timestamp(),
        memory.id,
    )


def resolve_memory(
    memories: list[Memory], context: Context, tombstones: list[Tombstone]
) -> Resolution:
    excluded: list[tuple[str, str]] = []
    timed: list[tuple[Memory, str]] = []
    for memory in memories:
        if not scope_matches(memory.scope, context):
            excluded.append((memory.id, "scope"))
            continue
        if not is_time_eligible(memory, context.now):
            excluded.append((memory.id, "status-or-time"))
            continue
        memory_scope = scope_id(memory.scope)
        if tombstones and blocked_by_tombstone(memory, memory_scope, tombstones):
            excluded.append((memory.id, "forgotten"))
            continue
        timed.append((memory, memory_scope))
    superseded = {m.supersedes for m, _ in timed if m.supersedes is not None}
    groups: dict[tuple[str, str], list[Memory]] = {}
    for memory, memory_scope in timed:
        if memory.id in superseded:
            excluded.append((memory.id, "superseded"))
        else:
            groups.setdefault((memory_scope, memory.key), []).append(memory)
    active: list[Memory] = []
    for group in groups.values():
        if len(group) == 1:
            active.append(group[0])
            continue
        winner = min(group, key=_precedence)
        active.append(winner)
        excluded.extend((m.id, "lower-precedence") for m in group if m is not winner)
    return Resolution(active, excluded)


def memory_from_row(row: dict[str, Any]) -> Memory:
    """A ``Memory`` from a flat storage row (``MemoryRecord.to_dict``'s names)."""
    return Memory(
        id=row["id"],
        key=row["key"],
        value=row["value"],
        scope=Scope(
            row["scope_kind"],
            row["user_id"],
            row["character_id"],
            row["conversation_id"],
            row["scene_id"],
        ),
        status=row["status"],
        authority=row["authority"],
        confidence=row["confidence"],
        valid_from=row["valid_from"],
        valid_until=row["valid_until"],
        source_message_ids=tuple(row["source_message_ids"]),
        supersedes=row["supersedes"],
        version=row["version"],
    )
