"""Builders for readable tests: the tutorial's characters and a record factory with defaults."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import memresolve as mr

ADA = mr.UserScope("u-ada")
ROWAN = mr.CharacterScope("u-ada", "c-rowan")
HARBOR_NIGHTS = mr.ConversationScope("k-harbor-nights")
RAINCOAT_SCENE = mr.SceneScope("k-harbor-nights", "s-raincoat")
NOW = datetime(2026, 7, 30, 12, 0, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def day(n: int, hour: int = 0) -> datetime:
    """Midnight (or ``hour``) UTC on July ``n``, 2026."""
    return datetime(2026, 7, n, hour, tzinfo=UTC)


def record(record_id: str, **fields: Any) -> mr.MemoryRecord:
    """A valid, active, user-scoped ``pet.name`` record; ``fields`` override any default."""
    defaults: dict[str, Any] = {
        "key": "pet.name",
        "value": f"value of {record_id}",
        "scope": ADA,
        "status": "active",
        "authority": "rule-extracted",
        "confidence": 0.9,
        "valid_from": day(1),
        "version": 1,
    }
    return mr.MemoryRecord(id=record_id, **{**defaults, **fields})


def context(**fields: Any) -> mr.RetrievalContext:
    """Ada talking to Captain Rowan in the raincoat scene, at ``NOW``, unless overridden."""
    defaults: dict[str, Any] = {
        "now": NOW,
        "user_id": "u-ada",
        "character_id": "c-rowan",
        "conversation_id": "k-harbor-nights",
        "scene_id": "s-raincoat",
    }
    return mr.RetrievalContext(**{**defaults, **fields})


def forget(key: str, scope: mr.Scope, at: datetime) -> mr.ForgetTombstone:
    """The user's "forget that", blocking evidence up to the moment it was said."""
    return mr.ForgetTombstone(key=key, scope=scope, forgotten_at=at, blocks_sources_before=at)


# The tutorial's records.
inferred_harbor = record(
    "mem-pet-1", value="Harbor", authority="model-inferred", confidence=0.62, valid_from=day(1)
)
corrected_marlowe = record(
    "mem-pet-2",
    value="Marlowe",
    authority="user-corrected",
    confidence=1.0,
    valid_from=day(2),
    supersedes="mem-pet-1",
    version=2,
)
raincoat_scene = record(
    "mem-raincoat",
    key="scene.raincoat",
    value="the yellow raincoat is dripping by the door",
    scope=RAINCOAT_SCENE,
    valid_from=day(29, 20),
    valid_until=day(31),
)
captain_rowan = record(
    "mem-rowan",
    key="character.title",
    value="Captain Rowan of the Meridian",
    scope=ROWAN,
    authority="user-confirmed",
    confidence=1.0,
    valid_from=day(5),
)


def reexpressed(original: mr.MemoryRecord, zone: tzinfo) -> mr.MemoryRecord:
    """The same record with every instant written in ``zone``, as another store might return it."""
    return dataclasses.replace(
        original,
        valid_from=original.valid_from.astimezone(zone),
        valid_until=original.valid_until and original.valid_until.astimezone(zone),
        observed_at=original.observed_at and original.observed_at.astimezone(zone),
    )
