"""Erased means gone from every byte of every file of a store (``docs/store.md``).

Each test plants unique canaries in every column ``_schema.PRIVATE_COLUMNS``
registers, runs workloads that split and merge pages (adds interleaved across users,
``normalize``, ``erase_user``), and scans every byte of the database, its log and its
index for the canaries of what was erased: after each erasure returns, after a crash at
a random point and a reopening, and after the compaction ``wipe()`` finishes.

More seeds: ``make store-stress`` (``MEMRESOLVE_RESIDUE_SEEDS`` and
``MEMRESOLVE_CRASH_SEEDS``, with the 10^6-turn race after them).
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import subprocess
import sys
import time
import warnings
from collections import Counter
from collections.abc import Collection
from pathlib import Path

import pytest

import memresolve as mr
from memresolve._store import _schema as schema
from store_workload import (
    CANARY,
    User,
    canaries_of_record,
    canaries_of_user,
    plan,
    play,
    store_bytes,
    store_canaries,
)

SEEDS = int(os.environ.get("MEMRESOLVE_RESIDUE_SEEDS", "3"))
CRASH_SEEDS = int(os.environ.get("MEMRESOLVE_CRASH_SEEDS", "6"))
WORKLOAD = Path(__file__).parents[1] / "support" / "store_workload.py"
#: The canaries of private text (values and source message ids).
TEXT_CANARY = re.compile(rb"(?:VAL|SRC)[0-9a-f]{20}")

pytestmark = pytest.mark.xdist_group("store-residue")


def _registered() -> set[tuple[str, str]]:
    return {
        (table, column) for table, columns in schema.PRIVATE_COLUMNS.items() for column in columns
    }


def _text_columns() -> set[tuple[str, str]]:
    return {
        (table, column)
        for table, columns in schema.PRIVATE_COLUMNS.items()
        for column, kind in columns.items()
        if kind is schema.Private.TEXT
    }


def test_every_registered_column_gets_a_canary() -> None:
    """The residue tests plant a canary in every registered column: a column registered
    later must be planted here too, or this fails."""
    workload = plan(0, users=2, records=20)
    planted: set[tuple[str, str]] = set()
    for user in workload.users:
        planted |= {column for column, found in canaries_of_user(user).items() if found}
        for record in user.records:
            planted |= {column for column, found in canaries_of_record(record).items() if found}
    missing = _registered() - planted
    assert not missing, f"registered columns the workload plants no canary in: {missing}"


def test_every_column_of_the_store_is_classified(tmp_path: Path) -> None:
    """Each column of every table is private or identifying (``PRIVATE_COLUMNS``, which the
    residue tests plant canaries in) or public (``PUBLIC_COLUMNS``), never both, never
    neither: a column a later feature adds must be classified before this passes."""
    mr.MemoryStore(tmp_path / "m.db").close()
    connection = sqlite3.connect(tmp_path / "m.db")
    tables = [
        row[0] for row in connection.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
    ]
    for table in tables:
        columns = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        private = set(schema.PRIVATE_COLUMNS.get(table, {}))
        public = set(schema.PUBLIC_COLUMNS.get(table, frozenset()))
        assert not private & public, (table, private & public)
        assert columns == private | public, (table, columns ^ (private | public))
    connection.close()


class _Gone:
    """What must be absent from the store's files now: canaries, and content hashes (raw
    bytes, which no pattern finds)."""

    def __init__(self) -> None:
        self.canaries: set[bytes] = set()
        self.hashes: set[bytes] = set()

    def add(
        self, planted: dict[tuple[str, str], set[bytes]], columns: set[tuple[str, str]]
    ) -> None:
        for column in columns:
            found = planted.get(column, set())
            if column == _HASHES:
                continue  # message ids, whose salted hashes ``source_hashes`` finds
            if column == ("record_text", "content_hash"):
                self.hashes |= found
            else:
                self.canaries |= found

    def left_in(self, directory: Path) -> list[str]:
        """What of it the files still hold (an empty list when nothing)."""
        left = sorted(c.decode() for c in self.canaries & store_canaries(directory))
        if self.hashes:
            raw = store_bytes(directory)
            left += [f"content hash {h.hex()}" for h in self.hashes if h in raw]
        return left


#: The tombstones' salted hashes of message ids (``_schema.PRIVATE_COLUMNS``).
_HASHES = ("tombstones", "blocked_sources")
#: A salted hash as the store keeps it: 64 lowercase hex digits, in a JSON array.
_HASH = re.compile(rb'"([0-9a-f]{64})"')


def _source_hashes(store: mr.MemoryStore, user: User) -> set[bytes]:
    """The hashes the store's tombstones hold of the messages ``user``'s owned records
    cite (read before ``erase_user``, which must leave none of them)."""
    messages = {
        m for r in user.records if r.scope.user_id is not None for m in r.source_message_ids
    }
    found: set[bytes] = set()
    for tombstone in store.tombstones():
        if tombstone.source_salt is None:
            continue
        hashes = {mr.source_hash(tombstone.source_salt, m) for m in messages}
        found |= {h.encode() for h in hashes & tombstone.blocked_sources}
    return found


def _unheld_hashes(directory: Path, store: mr.MemoryStore) -> list[str]:
    """Salted hashes the store's files hold that no tombstone holds now: a stale copy. (A
    tombstone's set only grows, but for ``erase_user``, which compacts the file.)"""
    held = {h.encode() for t in store.tombstones() for h in t.blocked_sources}
    return sorted(h.decode() for h in set(_HASH.findall(store_bytes(directory))) - held)


def _forget_text(gone: _Gone, records: list[mr.MemoryRecord]) -> None:
    for record in records:
        gone.add(canaries_of_record(record), _text_columns())


def _forget_user(
    gone: _Gone,
    user: User,
    columns: set[tuple[str, str]],
    store: mr.MemoryStore,
    stored: Collection[str],
) -> None:
    """What ``erase_user`` must leave no byte of: everything of the user's records the
    store held, but those in unowned scopes, which are nobody's and kept (``docs/spec.md``
    §1.1). (A record never added may still be named by a kept record's ``supersedes``:
    the application wrote that id, the store never held the record.)"""
    gone.add(canaries_of_user(user), columns)
    for record in user.records:
        if record.scope.user_id is not None and record.id in stored:
            gone.add(canaries_of_record(record), columns)
    # A kept row of an unowned scope still names the conversation (and scene) it is in: a
    # record written there, or a tombstone forget_everywhere wrote there.
    kept = [t.scope for t in store.tombstones()] + [r.scope for r in store.records()]
    for scope in kept:
        if scope.user_id is None:
            gone.canaries -= set(CANARY.findall(mr.scope_id(scope).encode()))


@pytest.mark.parametrize("seed", range(SEEDS))
def test_nothing_erased_survives_in_any_file_once_the_call_returns(
    tmp_path: Path, seed: int
) -> None:
    """A workload of 40 users of 50 records: after every erasure the store's files hold
    no byte of any text it erased (whatever pages the workload split or merged), and
    after ``erase_user`` no id of the user or its records either."""
    workload = plan(seed)
    by_id = {record.id: record for user in workload.users for record in user.records}
    users = {user.user_id: user for user in workload.users}
    path = tmp_path / "m.db"
    store = mr.MemoryStore(path, shared_conversations=True)
    gone = _Gone()
    erasures = 0
    with warnings.catch_warnings():
        # No other connection holds the file: every erasure finishes before it returns.
        warnings.simplefilter("error", mr.ErasureDelayedWarning)
        for number, (operation, argument) in enumerate(workload.operations):
            if operation == "reopen":
                store.close()
                store = mr.MemoryStore(path, shared_conversations=True)
                continue
            held = {r.id for r in store.records()} if operation == "erase_user" else set()
            hashes = _source_hashes(store, users[argument]) if operation == "erase_user" else set()
            result = play(store, operation, argument)
            if operation in ("add", "add_arrow"):
                # Stored without text (stored ``forgotten``, or a tombstone blocks it).
                stored = [store.get(record.id) for record in argument]
                _forget_text(
                    gone, [r for r, s in zip(argument, stored, strict=True) if s and not s.value]
                )
                # A record added now that names an erased record writes that id again: the
                # application's data, not something the store kept.
                gone.canaries -= {r.supersedes.encode() for r in argument if r.supersedes}
                continue
            if operation in ("forget", "forget_everywhere", "forget_for_user"):
                _forget_text(gone, [by_id[record_id] for record_id in result])
            elif operation == "erase_user":
                _forget_user(gone, users[argument], _registered(), store, held)
                gone.hashes |= hashes  # of its messages, under every salt (seeds 1, 2 hold some)
                unheld = _unheld_hashes(tmp_path, store)
                assert not unheld, f"after operation {number} (erase_user): {unheld[:5]}"
            else:
                continue
            erasures += 1
            left = gone.left_in(tmp_path)
            assert not left, f"after operation {number} ({operation}): {left[:5]}"
            copied = _text_copied(path, store)
            assert not copied, f"after operation {number} ({operation}): copies of {copied[:5]}"
    store.close()
    assert erasures > 10
    assert not gone.left_in(tmp_path)


def _text_copied(path: Path, store: mr.MemoryStore) -> list[str]:
    """Text the database file holds more copies of than its live records do: a page
    rebuild copied it, and a later erasure of it would leave the copy behind. (Checked
    right after an erasure, when the log is empty and the file is all there is.)"""
    found = Counter(TEXT_CANARY.findall(path.read_bytes()))
    expected: Counter[bytes] = Counter()
    for record in store.records():
        expected.update(TEXT_CANARY.findall(record.value.encode()))
        expected.update(m.encode() for m in record.source_message_ids)
    return sorted(c.decode() for c, n in found.items() if n > expected[c])


@pytest.mark.parametrize("seed", range(CRASH_SEEDS))
def test_a_crash_at_any_point_leaves_nothing_erased_once_reopened(
    tmp_path: Path, seed: int
) -> None:
    """The workload in a process killed (SIGKILL) at a random point: reopening the file
    finishes every erasure that committed (the pending state is in the file) without
    any call, and ``wipe()`` the compaction of an interrupted ``erase_user``."""
    rng = random.Random(seed)
    users, records = 20, 40
    workload = plan(seed, users, records)
    path = tmp_path / "m.db"
    child = subprocess.Popen(
        [sys.executable, str(WORKLOAD), str(seed), str(path), str(users), str(records)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    target = rng.randrange(len(workload.operations))
    announced: list[str] = []
    for line in child.stdout:
        announced.append(line)
        if line.startswith("done") or int(line.split()[0]) >= target:
            break
    time.sleep(rng.uniform(0, 0.05))
    child.kill()
    announced += child.stdout.readlines()
    child.wait()
    child.stdout.close()
    started_erasing = {line.split()[2] for line in announced if " erase_user " in line}
    # When each record was added and each user erased, by operation: a record added after
    # the erasure of the record it names wrote that id again (the application's data).
    added_at = {
        record.id: number
        for number, (operation, argument) in enumerate(workload.operations)
        if operation in ("add", "add_arrow")
        for record in argument
    }
    erased_at = {
        argument: number
        for number, (operation, argument) in enumerate(workload.operations)
        if operation == "erase_user"
    }

    with warnings.catch_warnings():
        warnings.simplefilter("error", mr.ErasureDelayedWarning)
        store = mr.MemoryStore(
            path, shared_conversations=True
        )  # finishes the pending wipe: nobody else holds the file
    text_gone, ids_gone = _Gone(), _Gone()
    for user in workload.users:
        held = [store.get(record.id) for record in user.records]
        owned = [s for r, s in zip(user.records, held, strict=True) if r.scope.user_id]
        if user.user_id in started_erasing and not any(owned):
            erased = erased_at[user.user_id]
            stored = {r.id for r in user.records if added_at.get(r.id, erased) < erased}
            _forget_user(text_gone, user, _text_columns(), store, stored)
            _forget_user(ids_gone, user, _registered(), store, stored)
        _forget_text(
            text_gone, [r for r, s in zip(user.records, held, strict=True) if s and not s.value]
        )
    owner = {r.id: u.user_id for u in workload.users for r in u.records if r.scope.user_id}
    for kept in store.records():
        named = kept.supersedes
        if named in owner and added_at[kept.id] > erased_at.get(owner[named], len(added_at)):
            ids_gone.canaries.discard(named.encode())  # written again after the erasure
    left = text_gone.left_in(tmp_path)
    assert not left, f"killed at operation {target}; text left after reopening: {left[:5]}"
    assert store.wipe() is True
    unheld = _unheld_hashes(tmp_path, store)
    assert not unheld, f"killed at operation {target}; hashes left after wipe(): {unheld[:5]}"
    store.close()
    left = ids_gone.left_in(tmp_path)
    assert not left, f"killed at operation {target}; left after wipe(): {left[:5]}"


# -- what the design relies on in SQLite ------------------------------------------------


def _sqlite(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA secure_delete = ON")
    connection.execute("PRAGMA journal_mode = WAL")
    return connection


@pytest.mark.parametrize("length", [40, 3_000, 20_000])
def test_sqlite_writes_a_same_length_update_over_the_old_cell(tmp_path: Path, length: int) -> None:
    """The erasure's mechanism, pinned (``_file.MIN_SQLITE``): a row updated to zero
    bytes of the same length is written over its old cell, and over its overflow pages
    when it has them, in place: the file does not grow and the old bytes are gone."""
    connection = _sqlite(tmp_path / "t.db")
    connection.execute("CREATE TABLE t (row INTEGER PRIMARY KEY, value BLOB NOT NULL) STRICT")
    rng = random.Random(length)
    canaries = [f"VAL{rng.getrandbits(80):020x}".encode() for _ in range(300)]
    for n, canary in enumerate(canaries, start=1):
        connection.execute("INSERT INTO t VALUES (?, ?)", (n, canary + b"x" * length + canary))
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = (tmp_path / "t.db").stat().st_size
    erased = canaries[::3]
    connection.executemany(
        "UPDATE t SET value = zeroblob(length(value)) WHERE row = ?",
        [(n,) for n in range(1, len(canaries) + 1, 3)],
    )
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = (tmp_path / "t.db").read_bytes()
    assert len(raw) == before
    assert not [c for c in erased if c in raw]
    assert all(c in raw for c in canaries[1::3])
    connection.close()


def test_sqlite_leaves_stale_cells_in_pages_it_rebuilds(tmp_path: Path) -> None:
    """Why the text has a table of its own: in a table whose rows grow and are deleted,
    SQLite rebuilds pages and leaves copies of cells it moved in the space it does not
    reuse; ``secure_delete`` zeroes only the cells it frees. (If a later SQLite stops
    doing this, this test fails, and the design could be simpler.)"""
    connection = _sqlite(tmp_path / "t.db")
    connection.execute("CREATE TABLE t (row INTEGER PRIMARY KEY, value TEXT, status TEXT)")
    rng = random.Random(1)
    canaries = [f"VAL{rng.getrandbits(80):020x}" for _ in range(3_000)]
    for canary in canaries:
        connection.execute(
            "INSERT INTO t (value, status) VALUES (?, 'active')",
            (canary + "x" * rng.randrange(300),),
        )
    connection.execute("UPDATE t SET status = 'superseded' WHERE row % 2 = 0")
    connection.execute("DELETE FROM t WHERE row % 7 = 0")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = (tmp_path / "t.db").read_bytes()
    copies = sum(raw.count(c.encode()) > 1 for c in canaries)
    deleted_left = sum(c.encode() in raw for n, c in enumerate(canaries, start=1) if n % 7 == 0)
    assert copies + deleted_left > 0
    connection.close()
