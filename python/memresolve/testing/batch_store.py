"""A seeded generator of realistic memory stores for the batch benchmarks, vectorised with numpy.

About 200 records per user (lognormal spread), 1-4 characters and 2-6
conversations per user with 0-3 scenes each, keys drawn Zipf-like from 2,000
slot names, correction chains of mean length 3 (most steps with
``supersedes``, some retries without, a few cross-key and dangling edges and
cycles), ~10% expired, ~3% future-dated, ~2% stored forgotten, 0.5% of users
with a tombstone, and one context per conversation (half of them in a scene).

Ids are 36-character UUIDs by default, as real stores have (record, user,
character, conversation, scene and context ids), derived from a number with
a seeded mix, so one id always names one thing; ``ids="short"`` gives the
short ``m123``-style ids instead. ``write_parquet`` writes a store of any size
chunk by chunk (each chunk its own users), in bounded memory.

Rows come owner by owner (``order="owner"``: each user's records together,
as a store exported user by user has them) or in the order the records
became valid (``order="time"``: users interleaved, as a store that appends
what it learns has them; within each chunk). The records are the same
either way; only the row order differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

NOW_US = 1_785_412_800_000_000  # 2026-07-30T12:00:00Z
DAY_US = 86_400_000_000
SLOTS = 2_000
_KINDS = np.array(["user", "character", "conversation", "scene"])
_STATUSES = np.array(["active", "superseded", "expired", "forgotten"])
_AUTHORITIES = np.array(["model-inferred", "rule-extracted", "user-confirmed", "user-corrected"])
ORDERS = ("owner", "time")


@dataclass(frozen=True)
class Store:
    records: pa.Table
    contexts: pa.Table
    tombstones: pa.Table


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# Where the 32 hex digits go among the 36 characters of a UUID.
_HEX_SLOTS = np.array([*range(8), *range(9, 13), *range(14, 18), *range(19, 23), *range(24, 36)])


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64 of each value: a bijection of 64-bit integers that looks random."""
    with np.errstate(over="ignore"):
        z = values + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _uuids(namespace: int, numbers: np.ndarray) -> np.ndarray:
    """A UUID-shaped string (``8-4-4-4-12`` hex) for each number, as ``S36`` bytes."""
    base = numbers.astype(np.uint64) * np.uint64(16) + np.uint64(namespace)
    halves = np.stack([_mix(base), _mix(base ^ np.uint64(0x5555_5555_5555_5555))], axis=1)
    nibbles = halves.view(np.uint8).reshape(-1, 16)
    digits = np.empty((len(numbers), 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[nibbles >> 4]
    digits[:, 1::2] = _HEX[nibbles & 15]
    text = np.full((len(numbers), 36), ord("-"), dtype=np.uint8)
    text[:, _HEX_SLOTS] = digits
    return text.view("S36").reshape(-1)


_NAMESPACES = {"m": 1, "u": 2, "c": 3, "k": 4, "s": 5, "ctx": 6, "missing": 7}


def _texts(prefix: str, numbers: np.ndarray, uuids: bool) -> pa.Array:
    if uuids and prefix in _NAMESPACES:
        return pa.array(_uuids(_NAMESPACES[prefix], numbers), pa.binary(36)).cast(pa.string())
    return pa.array(np.char.add(prefix, numbers.astype(str)).astype(object), pa.string())


def _ids(
    prefix: str, numbers: np.ndarray, present: np.ndarray | None = None, uuids: bool = False
) -> pa.Array:
    """The id of each number (``prefix`` + number, or a UUID); null where ``present`` is False."""
    texts = _texts(prefix, numbers, uuids)
    if present is None:
        return texts
    return pc.if_else(pa.array(present), texts, pa.nulls(len(texts), pa.string()))


@dataclass(frozen=True)
class _Offsets:
    """Where a chunk's numbering starts, so chunks of one store never share an id."""

    record: int = 0
    user: int = 0
    conversation: int = 0


#: Characters are personas shared by many users (a character scope is still per user).
_PERSONAS = 5_000


def generate(count: int, seed: int = 0, *, ids: str = "uuid", order: str = "owner") -> Store:
    """``count`` records (exactly) and their contexts and tombstones.

    ``ids="uuid"`` (the default) gives 36-character UUID ids, ``"short"`` the
    ``m123``-style ids of earlier benchmarks. ``order`` is ``"owner"`` (each
    user's records together) or ``"time"`` (by ``valid_from``, users interleaved).
    """
    _check_options(ids, order)
    return _in_order(_generate(count, seed, ids == "uuid", _Offsets()), order)


def _check_options(ids: str, order: str) -> None:
    if ids not in ("uuid", "short"):
        raise ValueError(f"ids: expected 'uuid' or 'short', got {ids!r}")
    if order not in ORDERS:
        raise ValueError(f"order: expected 'owner' or 'time', got {order!r}")


def _in_order(store: Store, order: str) -> Store:
    """The store with its records in ``order`` (generated owner by owner)."""
    if order == "owner":
        return store
    by_time = pc.sort_indices(store.records, [("valid_from", "ascending")])
    return Store(store.records.take(by_time), store.contexts, store.tombstones)


def _generate(count: int, seed: int, uuids: bool, at: _Offsets) -> Store:  # noqa: PLR0915
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
    # Half the users' stores fill user_id on conversation and scene rows (owned scopes).
    owns = rng.random(users) < 0.5

    # Each record's scope: user 30%, character 30%, conversation 25%, scene 15%.
    kind = rng.choice(4, size=count, p=[0.30, 0.30, 0.25, 0.15])
    character = rng.integers(0, 1 << 30, size=count) % characters[user_of]
    conversation = rng.integers(0, 1 << 30, size=count) % conversations[user_of]
    scene_counts = scenes[user_of, conversation]
    kind = np.where((kind == 3) & (scene_counts == 0), 2, kind)
    scene = rng.integers(0, 1 << 30, size=count) % np.maximum(scene_counts, 1)
    global_conversation = at.conversation + conversation_base[user_of] + conversation
    global_user = at.user + user_of

    def persona(user: np.ndarray, local: np.ndarray) -> np.ndarray:
        mixed = _mix((user.astype(np.uint64) << np.uint64(3)) + local.astype(np.uint64))
        return (mixed % np.uint64(_PERSONAS)).astype(np.int64)

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
    # A few cross-key edges (any record of the chunk), dangling ids and cycles.
    cross = rng.random(count) < 0.01
    supersedes = np.where(cross, rng.integers(0, count, size=count), supersedes)
    dangling = rng.random(count) < 0.005
    # A cycle: the earlier record points back at the later one.
    cycle_targets = np.flatnonzero((rng.random(count) < 0.002) & (previous >= 0))
    supersedes[previous[cycle_targets]] = cycle_targets

    start = NOW_US - rng.integers(0, 365 * DAY_US, size=count)
    future = rng.random(count) < 0.03
    valid_from = np.where(future, NOW_US + rng.integers(1, 30 * DAY_US, size=count), start)
    expired = rng.random(count) < 0.10
    valid_until = np.where(expired, start + rng.integers(0, 30 * DAY_US, size=count), 0)
    status = np.where(rng.random(count) < 0.02, 3, 0)
    authority = rng.choice(4, size=count, p=[0.5, 0.2, 0.2, 0.1])
    version = (previous >= 0).astype(np.int64) + rng.integers(1, 3, size=count)

    timestamp = pa.timestamp("us", tz="UTC")
    record_ids = _ids("m", at.record + np.arange(count), uuids=uuids)
    edges = pc.take(record_ids, pa.array(np.maximum(supersedes, 0)))
    edges = pc.if_else(pa.array(supersedes >= 0), edges, pa.nulls(count, pa.string()))
    missing = _ids("missing", at.record + np.arange(count), uuids=uuids)
    edges = pc.if_else(pa.array(dangling), missing, edges)
    owned = (kind >= 2) & owns[user_of]
    records = pa.table(
        {
            "id": record_ids,
            "key": _ids("slot.", key),
            "scope_kind": pa.array(_KINDS[kind].astype(object), pa.string()),
            "user_id": _ids("u", global_user, (kind <= 1) | owned, uuids),
            "character_id": _ids("c", persona(global_user, character), kind == 1, uuids),
            "conversation_id": _ids("k", global_conversation, kind >= 2, uuids),
            "scene_id": _ids("s", global_conversation * 4 + scene, kind == 3, uuids),
            "status": pa.array(_STATUSES[status].astype(object), pa.string()),
            "authority": pa.array(_AUTHORITIES[authority].astype(object), pa.string()),
            "confidence": pa.array(rng.random(count)),
            "valid_from": pa.array(valid_from, pa.int64()).cast(timestamp),
            "valid_until": pa.array(valid_until, pa.int64(), mask=~expired).cast(timestamp),
            "supersedes": edges,
            "version": pa.array(version, pa.int64()),
            "value": _ids("private value ", at.record + np.arange(count)),
        }
    )

    # One context per conversation; half of them in one of its scenes.
    conversation_user = np.repeat(np.arange(users), conversations)
    conversation_number = np.arange(len(conversation_user)) - conversation_base[conversation_user]
    scene_count = scenes[conversation_user, conversation_number]
    in_scene = (rng.random(len(conversation_user)) < 0.5) & (scene_count > 0)
    scene_pick = rng.integers(0, 1 << 30, size=len(conversation_user)) % np.maximum(scene_count, 1)
    context_conversation = at.conversation + np.arange(len(conversation_user))
    context_user = at.user + conversation_user
    local_character = (
        rng.integers(0, 1 << 30, size=len(conversation_user)) % characters[conversation_user]
    )
    contexts = pa.table(
        {
            "context_id": _ids("ctx", context_conversation, uuids=uuids),
            "now": pa.array(np.full(len(conversation_user), NOW_US), pa.int64()).cast(timestamp),
            "user_id": _ids("u", context_user, uuids=uuids),
            "character_id": _ids("c", persona(context_user, local_character), uuids=uuids),
            "conversation_id": _ids("k", context_conversation, uuids=uuids),
            "scene_id": _ids("s", context_conversation * 4 + scene_pick, in_scene, uuids),
        }
    )

    # Tombstones: 0.5% of users forget one frequent user-level key.
    forgetful = rng.choice(users, size=max(1, users // 200), replace=False)
    forgotten = pa.array(np.full(len(forgetful), NOW_US - 10 * DAY_US), pa.int64()).cast(timestamp)
    tombstones = pa.table(
        {
            "key": _ids("slot.", rng.integers(0, 20, size=len(forgetful))),
            "scope_kind": pa.array(["user"] * len(forgetful), pa.string()),
            "user_id": _ids("u", at.user + forgetful, uuids=uuids),
            "character_id": pa.nulls(len(forgetful), pa.string()),
            "conversation_id": pa.nulls(len(forgetful), pa.string()),
            "scene_id": pa.nulls(len(forgetful), pa.string()),
            "forgotten_at": forgotten,
            "blocks_sources_before": forgotten,
        }
    )
    return Store(records, contexts, tombstones)


@dataclass(frozen=True)
class Written:
    """Where ``write_parquet`` put a store, and how big it is."""

    records: str
    contexts: str
    tombstones: str
    record_count: int
    context_count: int
    tombstone_count: int


def write_parquet(
    directory: str | Path,
    count: int,
    seed: int = 0,
    *,
    chunk_records: int = 2_000_000,
    ids: str = "uuid",
    order: str = "owner",
) -> Written:
    """Writes a store of ``count`` records as three Parquet datasets under ``directory``.

    ``records/``, ``contexts/`` and ``tombstones/``, one file per chunk of
    ``chunk_records`` records (each chunk its own users and conversations), so
    a store of any size is written in the memory of one chunk. The same
    ``count``, ``seed`` and ``chunk_records`` always give the same store;
    ``order`` only orders each chunk's records (see the module's doc).
    """
    _check_options(ids, order)
    root = Path(directory)
    paths = {name: root / name for name in ("records", "contexts", "tombstones")}
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
    at = _Offsets()
    totals = dict.fromkeys(paths, 0)
    for chunk, first in enumerate(range(0, count, chunk_records)):
        size = min(chunk_records, count - first)
        store = _in_order(_generate(size, seed * 1_000_003 + chunk, ids == "uuid", at), order)
        for name, table in (
            ("records", store.records),
            ("contexts", store.contexts),
            ("tombstones", store.tombstones),
        ):
            pq.write_table(table, paths[name] / f"part-{chunk:05d}.parquet", row_group_size=262_144)
            totals[name] += table.num_rows
        at = _Offsets(
            record=at.record + size,
            user=at.user + _users_of(store),
            conversation=at.conversation + store.contexts.num_rows,
        )
    return Written(
        records=str(paths["records"]),
        contexts=str(paths["contexts"]),
        tombstones=str(paths["tombstones"]),
        record_count=totals["records"],
        context_count=totals["contexts"],
        tombstone_count=totals["tombstones"],
    )


def _users_of(store: Store) -> int:
    # Every user has at least two conversations, so the contexts name them all.
    return len(pc.unique(store.contexts.column("user_id")))


def main(argv: list[str] | None = None) -> int:
    """``python -m memresolve.testing.batch_store DIR --records N``: writes a store to Parquet."""
    import argparse  # noqa: PLC0415 - only the command needs it
    import json  # noqa: PLC0415

    parser = argparse.ArgumentParser(
        prog="python -m memresolve.testing.batch_store",
        description="Write a seeded memory store (records/, contexts/, tombstones/) as Parquet.",
    )
    parser.add_argument("directory", type=Path)
    parser.add_argument("--records", type=float, required=True, help="how many, e.g. 1e6")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ids", choices=("uuid", "short"), default="uuid")
    parser.add_argument("--chunk-records", type=int, default=2_000_000)
    parser.add_argument(
        "--order", choices=ORDERS, default="owner", help="rows owner by owner, or by valid_from"
    )
    args = parser.parse_args(argv)
    written = write_parquet(
        args.directory,
        int(args.records),
        args.seed,
        chunk_records=args.chunk_records,
        ids=args.ids,
        order=args.order,
    )
    print(json.dumps(written.__dict__))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
