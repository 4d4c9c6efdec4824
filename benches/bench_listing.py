"""What a profile page's reads, and forgetting a key for a user, cost in a MemoryStore file,
by store size (``docs/store.md``).

Run (from the repository, after ``make setup``)::

    .venv/bin/python benches/bench_listing.py --records 100000 1000000 [--keep DIR]

For each size, builds a store of generated records (UUID ids, about 200 records per user,
``memresolve.testing.batch_store``) with ``add_arrow`` (or reuses ``DIR/listing-N.db``),
then times, over ``--users`` of its users, ``records(user_id=)`` and ``keys(user_id=)``
(median and slowest, with the records listed per user), and once ``records(key=)``, which
reads the whole store; then ``forget_for_user`` of one of each user's keys (median and
slowest, with the records it erased), which writes a tombstone, erases the text in place and
empties the write-ahead log into the file before it returns. A user's reads and forgets go
through the index on ``records.user_id``: their cost should follow the user's records, not
the store's. A kept store (``--keep``) is forgotten into: rebuild it (delete the file) to
time the forgets again.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import memresolve as mr
from memresolve.testing.batch_store import generate


def _build(path: Path, records: int, seed: int) -> None:
    data = generate(records, seed=seed)
    # The generated store writes unowned conversations (shared, as in the batch form).
    with mr.MemoryStore(path, shared_conversations=True) as store:
        for offset in range(0, records, 100_000):
            store.add_arrow(data.records.slice(offset, 100_000))


def _timed(call: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def _listed(store: mr.MemoryStore, user: str) -> list[mr.MemoryRecord]:
    return list(store.records(user_id=user))


def _counted(store: mr.MemoryStore, key: str) -> int:
    return sum(1 for _ in store.records(key=key))


def _users(path: Path, count: int) -> list[str]:
    import sqlite3  # noqa: PLC0415 - only to pick users, outside the timed calls

    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT DISTINCT user_id FROM records WHERE user_id IS NOT NULL LIMIT ?", (count,)
        ).fetchall()
    return [row[0] for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--keep", type=Path, default=Path("target"))
    options = parser.parse_args()
    print(
        "| records | user's records (median) | `records(user_id=)` median, slowest |"
        " `keys(user_id=)` median, slowest | `records(key=)` (whole store) |"
        " `forget_for_user` median, slowest (records erased, median) |"
    )
    print("|---|---|---|---|---|---|")
    for size in options.records:
        path = options.keep / f"listing-{size}.db"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            _build(path, size, seed=size)
        users = _users(path, options.users)
        with mr.MemoryStore(path) as store:
            listed: list[float] = []
            counts: list[int] = []
            keyed: list[float] = []
            for user in users:
                seconds, found = _timed(partial(_listed, store, user))
                listed.append(seconds)
                counts.append(len(found))  # type: ignore[arg-type]
                keyed.append(_timed(partial(store.keys, user_id=user))[0])
            key = next(iter(store.records(user_id=users[0]))).key
            whole, _ = _timed(partial(_counted, store, key))
            forgets: list[float] = []
            erased: list[int] = []
            at = max(r.valid_from for r in store.records(user_id=users[0]))
            for user in users:
                user_key = next(iter(store.records(user_id=user))).key
                seconds, ids = _timed(partial(store.forget_for_user, user, user_key, at=at))
                forgets.append(seconds)
                erased.append(len(ids))  # type: ignore[arg-type]
        print(
            f"| {size:,} | {statistics.median(counts):.0f} "
            f"| {statistics.median(listed) * 1e3:.2f} ms, {max(listed) * 1e3:.2f} ms "
            f"| {statistics.median(keyed) * 1e3:.2f} ms, {max(keyed) * 1e3:.2f} ms "
            f"| {whole:.2f} s "
            f"| {statistics.median(forgets) * 1e3:.2f} ms, {max(forgets) * 1e3:.2f} ms "
            f"({statistics.median(erased):.0f}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
