"""A seeded generator of realistic memory stores for the batch benchmarks, vectorised with numpy.

About 200 records per user (lognormal spread), 1-4 characters and 2-6
conversations per user with 0-3 scenes each, keys drawn Zipf-like from 2,000
slot names, correction chains of mean length 3 (most steps with
``supersedes``, some retries without, a few cross-key and dangling edges and
cycles), ~10% expired, ~3% future-dated, ~2% stored forgotten, 0.5% of users
with a tombstone, and one context per conversation (half of them in a scene).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

NOW_US = 1_785_412_800_000_000  # 2026-07-30T12:00:00Z
DAY_US = 86_400_000_000
SLOTS = 2_000
_KINDS = np.array(["user", "character", "conversation", "scene"])
_STATUSES = np.array(["active", "superseded", "expired", "forgotten"])
_AUTHORITIES = np.array(["model-inferred", "rule-extracted", "user-confirmed", "user-corrected"])


@dataclass(frozen=True)
class Store:
    records: pa.Table
    contexts: pa.Table
    tombstones: pa.Table


def _ids(prefix: str, numbers: np.ndarray, present: np.ndarray | None = None) -> pa.Array:
    """``prefix`` + each number, as strings; null where ``present`` is False."""
    texts = np.char.add(prefix, numbers.astype(str)).astype(object)
    return pa.array(texts, pa.string(), mask=None if present is None else ~present)


def generate(count: int, seed: int = 0) -> Store:  # noqa: PLR0915 - one recipe, top to bottom
    """``count`` records (exactly) and their contexts and tombstones."""
    rng = np.random.default_rng(seed)
    # Users: lognormal sizes around 200 records, until the store is full.
    sizes = np.maximum(1, rng.lognormal(mean=np.log(200) - 0.5, sigma=1.0, size=count // 50 + 10))
    sizes = sizes.astype(np.int64)
    ends = np.cumsum(sizes)
    users = int(np.searchsorted(ends, count)) + 1
    sizes = sizes[:users]
    sizes[-1] -= int(ends[users - 1] - count)
    user_of = np.repeat(np.arange(users), sizes)

    characters = rng.integers(1, 5, size=users)
    conversations = rng.integers(2, 7, size=users)
    scenes = rng.integers(0, 4, size=(users, 6))
    conversation_base = np.concatenate([[0], np.cumsum(conversations)[:-1]])

    # Each record's scope: user 30%, character 30%, conversation 25%, scene 15%.
    kind = rng.choice(4, size=count, p=[0.30, 0.30, 0.25, 0.15])
    character = rng.integers(0, 1 << 30, size=count) % characters[user_of]
    conversation = rng.integers(0, 1 << 30, size=count) % conversations[user_of]
    scene_counts = scenes[user_of, conversation]
    kind = np.where((kind == 3) & (scene_counts == 0), 2, kind)
    scene = rng.integers(0, 1 << 30, size=count) % np.maximum(scene_counts, 1)
    global_conversation = conversation_base[user_of] + conversation

    # Keys: Zipf-like over 2,000 slots.
    ranks = np.arange(1, SLOTS + 1, dtype=np.float64)
    weights = 1.0 / ranks**1.1
    key = rng.choice(SLOTS, size=count, p=weights / weights.sum())

    # Chains: a record supersedes the previous record of its group with p = 2/3
    # (mean chain length 3); 10% of steps are retries without an edge.
    group = (
        ((user_of.astype(np.int64) * 4 + kind) * 8 + np.where(kind == 1, character, 0)) * 8
        + np.where(kind >= 2, conversation, 0)
    ) * 4 + np.where(kind == 3, scene, 0)
    group = group * SLOTS + key
    order = np.lexsort((np.arange(count), group))
    previous = np.full(count, -1, dtype=np.int64)
    same = group[order][1:] == group[order][:-1]
    previous[order[1:][same]] = order[:-1][same]
    roll = rng.random(count)
    supersedes = np.where((previous >= 0) & (roll < 0.6), previous, -1)
    # A few cross-key edges (any record of the same user), dangling ids and cycles.
    cross = rng.random(count) < 0.01
    supersedes = np.where(cross, rng.integers(0, count, size=count), supersedes)
    dangling = rng.random(count) < 0.005
    cycle = (rng.random(count) < 0.002) & (previous >= 0)
    supersedes_id = np.char.add("m", supersedes.astype(str)).astype(object)
    supersedes_id[supersedes < 0] = None
    supersedes_id[dangling] = "missing"
    # A cycle: the earlier record points back at the later one.
    cycle_targets = np.flatnonzero(cycle)
    supersedes_id[previous[cycle_targets]] = np.char.add("m", cycle_targets.astype(str)).astype(
        object
    )

    start = NOW_US - rng.integers(0, 365 * DAY_US, size=count)
    future = rng.random(count) < 0.03
    valid_from = np.where(future, NOW_US + rng.integers(1, 30 * DAY_US, size=count), start)
    expired = rng.random(count) < 0.10
    valid_until = np.where(expired, start + rng.integers(0, 30 * DAY_US, size=count), 0)
    status = np.where(rng.random(count) < 0.02, 3, 0)
    authority = rng.choice(4, size=count, p=[0.5, 0.2, 0.2, 0.1])
    version = (previous >= 0).astype(np.int64) + rng.integers(1, 3, size=count)

    timestamp = pa.timestamp("us", tz="UTC")
    needs_character = kind == 1
    needs_conversation = kind >= 2
    records = pa.table(
        {
            "id": _ids("m", np.arange(count)),
            "key": _ids("slot.", key),
            "scope_kind": pa.array(_KINDS[kind].astype(object), pa.string()),
            "user_id": _ids("u", user_of, kind <= 1),
            "character_id": _ids("c", character, needs_character),
            "conversation_id": _ids("k", global_conversation, needs_conversation),
            "scene_id": _ids("s", scene, kind == 3),
            "status": pa.array(_STATUSES[status].astype(object), pa.string()),
            "authority": pa.array(_AUTHORITIES[authority].astype(object), pa.string()),
            "confidence": pa.array(rng.random(count)),
            "valid_from": pa.array(valid_from, pa.int64()).cast(timestamp),
            "valid_until": pa.array(valid_until, pa.int64(), mask=~expired).cast(timestamp),
            "supersedes": pa.array(supersedes_id, pa.string()),
            "version": pa.array(version, pa.int64()),
            "value": _ids("private value ", np.arange(count)),
        }
    )

    # One context per conversation; half of them in one of its scenes.
    conversation_user = np.repeat(np.arange(users), conversations)
    conversation_number = np.arange(len(conversation_user)) - conversation_base[conversation_user]
    scene_count = scenes[conversation_user, conversation_number]
    in_scene = (rng.random(len(conversation_user)) < 0.5) & (scene_count > 0)
    scene_pick = rng.integers(0, 1 << 30, size=len(conversation_user)) % np.maximum(scene_count, 1)
    contexts = pa.table(
        {
            "context_id": _ids("ctx", np.arange(len(conversation_user))),
            "now": pa.array(np.full(len(conversation_user), NOW_US), pa.int64()).cast(timestamp),
            "user_id": _ids("u", conversation_user),
            "character_id": _ids(
                "c",
                rng.integers(0, 1 << 30, size=len(conversation_user))
                % characters[conversation_user],
            ),
            "conversation_id": _ids("k", np.arange(len(conversation_user))),
            "scene_id": _ids("s", scene_pick, in_scene),
        }
    )

    # Tombstones: 0.5% of users forget one frequent user-level key.
    forgetful = rng.choice(users, size=max(1, users // 200), replace=False)
    tombstones = pa.table(
        {
            "key": _ids("slot.", rng.integers(0, 20, size=len(forgetful))),
            "scope_kind": pa.array(["user"] * len(forgetful), pa.string()),
            "user_id": _ids("u", forgetful),
            "character_id": pa.nulls(len(forgetful), pa.string()),
            "conversation_id": pa.nulls(len(forgetful), pa.string()),
            "scene_id": pa.nulls(len(forgetful), pa.string()),
            "forgotten_at": pa.array(
                np.full(len(forgetful), NOW_US - 10 * DAY_US), pa.int64()
            ).cast(timestamp),
            "blocks_sources_before": pa.array(
                np.full(len(forgetful), NOW_US - 10 * DAY_US), pa.int64()
            ).cast(timestamp),
        }
    )
    return Store(records, contexts, tombstones)
