"""A store workload for the residue tests: what an ordinary chat backend does to a store,
with a unique canary in every private or identifying field (``_schema``'s registry).

A ``Plan`` is drawn from a seed: users, each with records over a few keys in its user,
character, owned-conversation and owned-scene scopes (corrections superseding earlier
values, some records stored ``forgotten``, some long enough to need overflow pages),
and a sequence of operations: adds (as objects and as Arrow, retries among them),
``normalize`` (statuses grow: pages split), ``forget``, ``forget_everywhere``,
``erase_user`` (rows deleted: pages merge) and reopening. Records of a user are added
in many small batches interleaved with other users', as turns arrive.

Run as a script, it plays a plan on a store file, printing each operation before it
starts: the crash test kills it at a random moment.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import memresolve as mr
from memresolve._store import _schema as schema

#: Every canary: a tag, then 20 hex digits (23 bytes, unique per seed and field).
CANARY = re.compile(rb"(?:VAL|SRC|RID|USR|CNV|SCN)[0-9a-f]{20}")
_START = datetime(2026, 7, 1, tzinfo=UTC)
_KEYS = ("pet.name", "home.city", "trip.plan", "food.likes", "work.role")


def _day(days: float) -> datetime:
    return _START + timedelta(days=days)


@dataclass
class User:
    user_id: str
    conversation_id: str
    scene_id: str
    character_id: str
    records: list[mr.MemoryRecord] = field(default_factory=list)

    def context(self, day: float) -> mr.RetrievalContext:
        return mr.RetrievalContext(
            now=_day(day),
            user_id=self.user_id,
            character_id=self.character_id,
            conversation_id=self.conversation_id,
            scene_id=self.scene_id,
        )

    def scopes(self) -> tuple[mr.Scope, ...]:
        return (
            mr.UserScope(self.user_id),
            mr.CharacterScope(self.user_id, self.character_id),
            mr.ConversationScope(self.conversation_id, user_id=self.user_id),
            mr.SceneScope(self.conversation_id, self.scene_id, user_id=self.user_id),
        )


@dataclass
class Plan:
    users: list[User]
    operations: list[tuple[str, Any]]


def canaries_of_record(record: mr.MemoryRecord) -> dict[tuple[str, str], set[bytes]]:
    """The canaries ``record`` plants, by registered ``(table, column)``."""
    row = schema.record_row(record)
    scope_text = row["scope_id"].encode()
    owned = {
        "conversation_id": row["conversation_id"],
        "scene_id": row["scene_id"],
    }
    planted: dict[tuple[str, str], set[bytes]] = {
        ("record_text", "value"): _tokens(record.value.encode()),
        ("record_text", "source_message_ids"): {m.encode() for m in record.source_message_ids},
        ("record_text", "content_hash"): {row["content_hash"]},
        ("records", "id"): {record.id.encode()},
        ("records", "user_id"): set() if row["user_id"] is None else {row["user_id"].encode()},
        ("records", "supersedes"): set()
        if record.supersedes is None
        else {record.supersedes.encode()},
        ("records", "scope_id"): _tokens(scope_text),
        # A tombstone holds salted hashes of message ids, never a canary: the residue
        # tests hash these ids with the salts the store drew and scan for the hashes.
        ("tombstones", "blocked_sources"): {m.encode() for m in record.source_message_ids},
    }
    for name, value in owned.items():
        planted["records", name] = set() if value is None else _tokens(value.encode())
    return planted


def canaries_of_user(user: User) -> dict[tuple[str, str], set[bytes]]:
    """What ``user``'s scopes and tombstones plant besides its records' canaries."""
    ids = {
        "user_id": {user.user_id.encode()},
        "conversation_id": {user.conversation_id.encode()},
        "scene_id": {user.scene_id.encode()},
        "scope_id": {user.user_id.encode(), user.conversation_id.encode()},
    }
    return {("tombstones", name): values for name, values in ids.items()}


def _tokens(data: bytes) -> set[bytes]:
    return set(CANARY.findall(data))


def store_canaries(directory: Path) -> set[bytes]:
    """Every canary in every file of a store's directory (database, log, index, journal)."""
    found: set[bytes] = set()
    for path in directory.iterdir():
        if path.is_file():
            found |= _tokens(path.read_bytes())
    return found


def store_bytes(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file())


def _hex(rng: random.Random, tag: str) -> str:
    return f"{tag}{rng.getrandbits(80):020x}"


def plan(seed: int, users: int = 40, records: int = 50) -> Plan:
    """The workload of ``seed``: ``users`` users of about ``records`` records each."""
    rng = random.Random(seed)
    people = [
        User(_hex(rng, "USR"), _hex(rng, "CNV"), _hex(rng, "SCN"), f"c-{rng.randrange(3)}")
        for _ in range(users)
    ]
    day = 0.0
    for user in people:
        latest: dict[tuple[str, str], mr.MemoryRecord] = {}
        for _ in range(records):
            scope = rng.choice(user.scopes())
            key = rng.choice(_KEYS)
            earlier = latest.get((mr.scope_id(scope), key))
            canary = _hex(rng, "VAL")
            filler = "x" * rng.choice((0, 10, 200, 900, 2500, 6000))
            day += rng.random() / records
            record = mr.MemoryRecord(
                id=_hex(rng, "RID"),
                key=key,
                value=f"{canary} {filler} {canary}",
                scope=scope,
                status="forgotten" if rng.random() < 0.03 else "active",
                authority=rng.choice(("model-inferred", "user-confirmed", "user-corrected")),
                confidence=rng.random(),
                valid_from=_day(day),
                valid_until=_day(day + rng.uniform(1, 40)) if rng.random() < 0.3 else None,
                source_message_ids=[_hex(rng, "SRC") for _ in range(rng.randrange(3))],
                supersedes=None if earlier is None or rng.random() < 0.3 else earlier.id,
                version=1 if earlier is None else earlier.version + 1,
            )
            latest[mr.scope_id(scope), key] = record
            user.records.append(record)
    # Records written into a user's conversation left unowned, some superseding another
    # user's record: erase_user keeps them (they are nobody's) but must drop the edge to a
    # record it deletes, whose id must not stay in the file.
    for number, user in enumerate(people):
        for _ in range(rng.randrange(3) if len(people) > 1 else 0):
            other = people[(number + 1) % len(people)]
            target = rng.choice(other.records)
            day += 0.01
            user.records.append(
                mr.MemoryRecord(
                    id=_hex(rng, "RID"),
                    key=target.key,
                    value=f"{_hex(rng, 'VAL')} shared",
                    scope=mr.ConversationScope(user.conversation_id),
                    authority="model-inferred",
                    confidence=0.3,
                    valid_from=_day(day),
                    supersedes=target.id,
                )
            )
    return Plan(people, list(_operations(rng, people)))


def _forget(rng: random.Random, user: User, roll: float, day: float) -> tuple[str, Any]:
    """A forget of a key of ``user``: in one of its scopes, everywhere a turn of it sees,
    or everywhere it owns."""
    key, at = rng.choice(_KEYS), _day(day)
    if roll < 0.15:
        return "forget", (key, rng.choice(user.scopes()), at)
    if roll < 0.22:
        return "forget_everywhere", (key, user.context(day), at)
    return "forget_for_user", (user.user_id, key, at)


def _operations(rng: random.Random, users: list[User]) -> Iterator[tuple[str, Any]]:
    """Adds in small interleaved batches, with erasures, normalising and reopening among
    them; a user once erased is never written again."""
    pending = {user.user_id: list(user.records) for user in users}
    added: dict[str, list[mr.MemoryRecord]] = {user.user_id: [] for user in users}
    erased: set[str] = set()
    by_id = {user.user_id: user for user in users}
    day = 60.0
    while any(pending.values()):
        batch: list[mr.MemoryRecord] = []
        for _ in range(rng.randrange(1, 6)):
            owners = [u for u, left in pending.items() if left]
            if not owners:
                break
            owner = rng.choice(owners)
            take = rng.randrange(1, 8)
            batch += pending[owner][:take]
            added[owner] += pending[owner][:take]
            del pending[owner][:take]
        retriable = [u for u, done in added.items() if done and u not in erased]
        if rng.random() < 0.2 and retriable:
            retried = rng.choice(retriable)
            batch += rng.sample(added[retried], min(2, len(added[retried])))
            batch = list({r.id: r for r in batch}.values())
        yield ("add_arrow" if rng.random() < 0.3 else "add"), batch
        roll = rng.random()
        live = [u for u, done in added.items() if done and u not in erased]
        if roll < 0.25 and live:
            yield _forget(rng, by_id[rng.choice(live)], roll, day)
        elif roll < 0.29 and live:
            victim = rng.choice(live)
            erased.add(victim)
            pending[victim] = []
            yield "erase_user", victim
        elif roll < 0.33:
            yield "normalize", _day(day)
        elif roll < 0.36:
            yield "reopen", None
        day += 0.5


#: Each operation of a plan, but ``reopen`` (the caller's), as a call on a store.
_CALLS: dict[str, Callable[[mr.MemoryStore, Any], Any]] = {
    "add": lambda store, records: store.add(records),
    "add_arrow": lambda store, records: store.add_arrow(mr.records_to_arrow(records)),
    "forget": lambda store, a: store.forget(a[0], a[1], at=a[2]),
    "forget_everywhere": lambda store, a: store.forget_everywhere(a[0], a[1], at=a[2]),
    "forget_for_user": lambda store, a: store.forget_for_user(a[0], a[1], at=a[2]),
    "erase_user": lambda store, user_id: store.erase_user(user_id),
    "normalize": lambda store, now: store.normalize(now),
}


def play(store: mr.MemoryStore, operation: str, argument: Any) -> Any:
    """Runs one operation of a plan on ``store`` (``reopen`` is the caller's)."""
    if operation not in _CALLS:
        raise ValueError(operation)
    return _CALLS[operation](store, argument)


def main(arguments: list[str]) -> None:
    """``store_workload.py SEED PATH [USERS RECORDS]``: plays the plan, announcing each step."""
    seed, path = int(arguments[0]), Path(arguments[1])
    sizes = [int(n) for n in arguments[2:4]]
    workload = plan(seed, *sizes)
    store = mr.MemoryStore(path, shared_conversations=True)
    for number, (operation, argument) in enumerate(workload.operations):
        print(number, operation, argument if operation == "erase_user" else "", flush=True)
        if operation == "reopen":
            store.close()
            store = mr.MemoryStore(path, shared_conversations=True)
        else:
            play(store, operation, argument)
    store.close()
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
