"""What an erasure costs in a MemoryStore file, by store size (``docs/store.md``).

Run (from the repository, after ``make setup``)::

    .venv/bin/python benches/bench_erasure.py --records 1000000 [--keep /var/tmp/store-1m.db]

Builds a store of ``--records`` generated records (UUID ids, about 200 records per user,
``memresolve.testing.batch_store``) with ``add_arrow`` (or reuses the file ``--keep``
names, building it first if absent), then in one process times:

- ``forget`` of one key in one user's scope, on ``--forgets`` users: each erases the
  records the tombstone blocks, in place, and checkpoints the log (median and slowest);
- ``forget_everywhere`` of one key in a context, likewise;
- ``erase_user`` of ``--erasures`` users: the deleting transaction, then the compaction
  (``VACUUM``) that rewrites the file, timed apart;
- the process's peak memory (``VmHWM``) before and after the compactions, and the file's
  size.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import memresolve as mr
from memresolve._store._file import Erasures
from memresolve.testing.batch_store import generate
from memresolve.testing.peak_memory import own_peak_bytes


def _build(path: Path, records: int, batch: int, seed: int) -> None:
    data = generate(records, seed=seed)
    with mr.MemoryStore(path, shared_conversations=True) as store:
        for offset in range(0, records, batch):
            store.add_arrow(data.records.slice(offset, batch))


def _users(store: mr.MemoryStore, count: int) -> list[tuple[str, str, str]]:
    """``count`` users of the store, each with a key of its user scope and a conversation."""
    rows = store._core.connection.execute(
        "SELECT user_id, key, conversation_id FROM records WHERE scope_kind = 'user' "
        "AND erased = 0 GROUP BY user_id LIMIT ?",
        (count * 3,),
    ).fetchall()
    return [(row[0], row[1], row[2] or "k") for row in rows]


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--forgets", type=int, default=50)
    parser.add_argument("--erasures", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="the store file to use (built if absent)")
    args = parser.parse_args()

    path = args.keep or Path(f"target/bench-erasure-{args.records}.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        started = time.perf_counter()
        _build(path, args.records, args.batch, args.seed)
        print(f"built {args.records:,} records in {time.perf_counter() - started:.0f} s")
    store = mr.MemoryStore(path, shared_conversations=True)
    size = path.stat().st_size
    users = _users(store, args.forgets + args.forgets + args.erasures)
    at = datetime(2027, 1, 1, tzinfo=UTC)  # after every generated record

    forgets, erased = [], 0
    for user, key, _ in users[: args.forgets]:
        started = time.perf_counter()
        erased += len(store.forget(key, mr.UserScope(user), at=at))
        forgets.append(time.perf_counter() - started)
    everywhere = []
    for user, key, conversation in users[args.forgets : 2 * args.forgets]:
        context = mr.RetrievalContext(
            now=at, user_id=user, character_id="c-1", conversation_id=conversation
        )
        everywhere.append(_timed(partial(store.forget_everywhere, key, context, at=at)))
    peak_before = own_peak_bytes()
    deleting, compacting, deleted = [], [], 0
    # The deleting transaction alone, then the compaction: erase_user runs both; here the
    # compaction is held back (as a crash would) and wipe(), the named step, runs it.
    file = store._core.file
    finish = file.finish

    def without_compaction(wait: float, *, compact: bool) -> tuple[Erasures, str | None]:
        return finish(wait, compact=False)

    for user, _, _ in users[2 * args.forgets : 2 * args.forgets + args.erasures]:
        setattr(file, "finish", without_compaction)  # noqa: B010 - shadows the method
        started = time.perf_counter()
        deleted += store.erase_user(user).records
        deleting.append(time.perf_counter() - started)
        delattr(file, "finish")
        compacting.append(_timed(store.wipe))
    store.close()
    peak_after = own_peak_bytes()

    def ms(seconds: list[float]) -> str:
        return (
            f"median {statistics.median(seconds) * 1e3:.2f} ms, slowest {max(seconds) * 1e3:.2f} ms"
        )

    print(f"records: {args.records:,}; file {size / 1e6:,.0f} MB")
    print(f"forget: {ms(forgets)} ({erased / len(forgets):.1f} records erased each)")
    print(f"forget_everywhere: {ms(everywhere)}")
    print(
        f"erase_user: deleting {ms(deleting)} ({deleted / max(1, len(deleting)):.0f} records "
        f"each); compaction {ms(compacting)}"
    )
    print(
        f"peak memory: {peak_before / 2**20:,.0f} MiB before the compactions, "
        f"{peak_after / 2**20:,.0f} MiB after"
    )


if __name__ == "__main__":
    main()
