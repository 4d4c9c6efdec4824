"""Two processes on one store file: one writes, one resolves, and every answer is checked
against the states the writer committed.

The writer plays an endless seeded sequence of writes (adds, corrections, forgets,
``erase_user``, ``normalize``) on a few users, and announces each in memory both
processes map (two counters, read without delay) before it starts (``started = N``)
and after it commits (``done = N``). The checker resolves the users' contexts through
its own ``MemoryStore`` of the file, as fast as it can; an answer that began when
``done`` was ``lo`` and ended when ``started`` was ``hi`` must equal the answer of one
committed state ``lo .. hi``. The expected answers come
from replaying the same writes on a store in memory, in this process, one state at a
time. A store that read a state's records and its tombstones in two snapshots would
answer with a state that never existed (``docs/store.md``).

``python -m memresolve.testing.store_race --turns 1000000`` runs it at length (the test
suite runs a short one).
"""

from __future__ import annotations

import argparse
import mmap
import random
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import memresolve as mr

__all__ = ["RaceReport", "race", "writes"]

_START = datetime(2026, 7, 1, tzinfo=UTC)
_KEYS = ("pet.name", "home.city", "food.likes")
_USERS = ("u-ada", "u-bo", "u-cy")


def _context(user: str) -> mr.RetrievalContext:
    return mr.RetrievalContext(
        now=_START + timedelta(days=400),
        user_id=user,
        character_id="c-1",
        conversation_id=f"k-{user}",
    )


CONTEXTS: tuple[mr.RetrievalContext, ...] = tuple(_context(user) for user in _USERS)


def writes(seed: int) -> Iterator[tuple[str, object]]:
    """The writer's endless sequence of writes, the same for a seed."""
    rng = random.Random(seed)
    serial = 0
    latest: dict[tuple[str, str], mr.MemoryRecord] = {}
    day = 0.0
    while True:
        day += 0.01
        roll = rng.random()
        user = rng.choice(_USERS)
        if roll < 0.6:
            batch = []
            for _ in range(rng.randrange(1, 4)):
                key = rng.choice(_KEYS)
                earlier = latest.get((user, key))
                serial += 1
                scope: mr.Scope = rng.choice((mr.UserScope(user), mr.CharacterScope(user, "c-1")))
                record = mr.MemoryRecord(
                    id=f"m{serial}",
                    key=key,
                    value=f"value {serial}",
                    scope=scope,
                    authority=rng.choice(("model-inferred", "user-corrected")),
                    confidence=rng.random(),
                    valid_from=_START + timedelta(days=day),
                    supersedes=None if earlier is None else earlier.id,
                    version=1 if earlier is None else earlier.version + 1,
                )
                latest[user, key] = record
                batch.append(record)
            yield "add", batch
        elif roll < 0.85:
            yield "forget_everywhere", (rng.choice(_KEYS), _context(user), day)
        elif roll < 0.95:
            for key in _KEYS:
                latest.pop((user, key), None)
            yield "erase_user", user
        else:
            yield "normalize", day


def _play(store: mr.MemoryStore, operation: str, argument: object) -> None:
    if operation == "add":
        store.add(cast("list[mr.MemoryRecord]", argument))
    elif operation == "forget_everywhere":
        key, context, day = cast("tuple[str, mr.RetrievalContext, float]", argument)
        store.forget_everywhere(key, context, at=_START + timedelta(days=day))
    elif operation == "erase_user":
        store.erase_user(cast("str", argument))
    else:
        store.normalize(_START + timedelta(days=cast("float", argument)))


class _Counters:
    """Two counters in a file both processes map: the last write started, the last done."""

    SIZE = 16

    def __init__(self, path: Path) -> None:
        self._file = path.open("r+b")
        self._map = mmap.mmap(self._file.fileno(), self.SIZE)

    @classmethod
    def create(cls, path: Path) -> _Counters:
        path.write_bytes(bytes(cls.SIZE))
        return cls(path)

    @property
    def started(self) -> int:
        value: int = struct.unpack_from("<q", self._map, 0)[0]
        return value

    @property
    def done(self) -> int:
        value: int = struct.unpack_from("<q", self._map, 8)[0]
        return value

    def start(self, number: int) -> None:
        struct.pack_into("<q", self._map, 0, number)

    def finish(self, number: int) -> None:
        struct.pack_into("<q", self._map, 8, number)

    def close(self) -> None:
        self._map.close()
        self._file.close()


def _writer(seed: int, path: str, counters_path: str) -> None:
    store = mr.MemoryStore(path)
    counters = _Counters(Path(counters_path))
    for number, (operation, argument) in enumerate(writes(seed), start=1):
        counters.start(number)
        _play(store, operation, argument)
        counters.finish(number)


def _answer(resolution: mr.Resolution) -> tuple[object, ...]:
    """What a resolution decides: the winners with their text, and each exclusion."""
    return (
        tuple((m.id, m.value) for m in resolution.active),
        tuple((e.id, e.reason.value) for e in resolution.excluded),
    )


class _Expected:
    """The answers of each committed state, replayed on a store in memory as needed."""

    def __init__(self, seed: int) -> None:
        self._writes = writes(seed)
        self._model = mr.MemoryStore()
        self._answers: dict[int, tuple[tuple[object, ...], ...]] = {0: self._now()}
        self._state = 0

    def _now(self) -> tuple[tuple[object, ...], ...]:
        return tuple(_answer(self._model.resolve(context)) for context in CONTEXTS)

    def answers(self, low: int, high: int, context: int) -> list[tuple[object, ...]]:
        while self._state < high:
            operation, argument = next(self._writes)
            _play(self._model, operation, argument)
            self._state += 1
            self._answers[self._state] = self._now()
        for old in [state for state in self._answers if state < low]:
            del self._answers[old]
        return [self._answers[state][context] for state in range(low, high + 1)]


@dataclass(frozen=True)
class RaceReport:
    """What a race saw: turns resolved, writes the writer committed meanwhile, and the turns
    whose answer matched no state committed while they ran (each with its window)."""

    turns: int
    states: int
    seconds: float
    wrong: tuple[tuple[int, int, int], ...]


def race(
    turns: int, *, seed: int = 0, min_states: int = 200, directory: Path | None = None
) -> RaceReport:
    """Resolves at least ``turns`` turns while another process writes, and more until it has
    committed ``min_states`` writes meanwhile (for at most a minute); see the module
    docstring."""
    with tempfile.TemporaryDirectory(dir=directory) as where:
        path = str(Path(where) / "race.db")
        mr.MemoryStore(path).close()  # created before either process opens it
        counters = _Counters.create(Path(where) / "counters")
        writer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memresolve.testing.store_race",
                "--write",
                path,
                str(seed),
                str(Path(where) / "counters"),
            ]
        )
        try:
            expected = _Expected(seed)
            deadline = time.monotonic() + 60
            while counters.done < 1 and writer.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)  # the writer is importing: race it, not its start-up
            store = mr.MemoryStore(path)
            wrong: list[tuple[int, int, int]] = []
            started = time.perf_counter()
            turn = 0
            first = counters.done
            # At least ``turns`` turns, and on, within a minute, until the writer has
            # committed ``min_states`` writes among them (a loaded machine slows it).
            deadline = time.monotonic() + 60
            while turn < turns or (
                counters.done - first < min_states and time.monotonic() < deadline
            ):
                turn += 1
                which = turn % len(CONTEXTS)
                low = counters.done
                answer = _answer(store.resolve(CONTEXTS[which]))
                high = counters.started
                if answer not in expected.answers(low, high, which):
                    wrong.append((turn, low, high))
            seconds = time.perf_counter() - started
            states = counters.done - first
            store.close()
        finally:
            writer.kill()
            writer.wait()
            counters.close()
    return RaceReport(turn, states, seconds, tuple(wrong))


def main(arguments: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memresolve.testing.store_race")
    parser.add_argument("--turns", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(arguments)
    if args.write:
        _writer(int(args.write[1]), args.write[0], args.write[2])
        return 0
    report = race(args.turns, seed=args.seed)
    print(
        f"{report.turns} turns in {report.seconds:.1f} s while {report.states} writes "
        f"committed; {len(report.wrong)} answers outside the committed states"
    )
    for turn, low, high in report.wrong[:10]:
        print(f"  turn {turn}: no state in {low}..{high} answers so")
    return 1 if report.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
