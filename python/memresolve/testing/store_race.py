"""Two processes on one store file: one writes, one resolves, and every answer is checked
against the states the writer committed.

The checker asks, in turn, ``resolve`` of each user's context, the ``history`` of one of
its keys and the whole store's ``export_arrow`` (what ``resolve_batch`` reads): each a
read that must form one answer. The writer plays an endless seeded sequence of writes
(adds, corrections, forgets, ``erase_user``, ``normalize``) on a few users, and announces
each in memory both processes share (two counters, read without delay) before it starts
(``started = N``) and after it commits (``done = N``). The checker asks through its own
``MemoryStore`` of the file, as fast as it can; an answer that began when ``done`` was
``lo`` and ended when ``started`` was ``hi`` must equal the answer of one committed state
``lo .. hi``. The expected answers come from replaying the same writes on a store in
memory, in this process, one state at a time. A store that read a state's records and its
tombstones in two snapshots would answer with a state that never existed
(``docs/store.md``).

``python -m memresolve.testing.store_race --turns 1000000`` runs it at length (the test
suite runs a short one).
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

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
        elif roll < 0.80:
            scope = rng.choice((mr.UserScope(user), mr.CharacterScope(user, "c-1")))
            yield "forget", (rng.choice(_KEYS), scope, day)
        elif roll < 0.85:
            # One of ten days: the tombstones of the unowned conversation, which no
            # erase_user deletes, are then at most ten per key, and the store stays small.
            yield "forget_everywhere", (rng.choice(_KEYS), _context(user), float(int(day) % 10))
        elif roll < 0.95:
            for key in _KEYS:
                latest.pop((user, key), None)
            yield "erase_user", user
        else:
            yield "normalize", day


def _play(store: mr.MemoryStore, operation: str, argument: object) -> None:
    if operation == "add":
        store.add(cast("list[mr.MemoryRecord]", argument))
    elif operation == "forget":
        key, scope, day = cast("tuple[str, mr.Scope, float]", argument)
        store.forget(key, scope, at=_START + timedelta(days=day))
    elif operation == "forget_everywhere":
        key, context, day = cast("tuple[str, mr.RetrievalContext, float]", argument)
        store.forget_everywhere(key, context, at=_START + timedelta(days=day))
    elif operation == "erase_user":
        store.erase_user(cast("str", argument))
    else:
        store.normalize(_START + timedelta(days=cast("float", argument)))


def _writer(seed: int, path: str, started: Any, done: Any, pause: float) -> None:
    store = mr.MemoryStore(path, shared_conversations=True)
    rng = random.Random(seed)
    for number, (operation, argument) in enumerate(writes(seed), start=1):
        started.value = number
        _play(store, operation, argument)
        done.value = number
        if pause:
            time.sleep(rng.uniform(0, 2 * pause))


def _resolution(resolution: mr.Resolution) -> tuple[object, ...]:
    """What a resolution decides: the winners with their text, and each exclusion."""
    return (
        tuple((m.id, m.value) for m in resolution.active),
        tuple((e.id, e.reason.value) for e in resolution.excluded),
    )


def _ask(store: mr.MemoryStore, question: int) -> tuple[object, ...]:
    """The answer to ``QUESTIONS[question]``, each a read that forms one answer."""
    kind, which = QUESTIONS[question]
    context = CONTEXTS[which]
    if kind == "resolve":
        return _resolution(store.resolve(context))
    if kind == "history":
        versions = store.history(_KEYS[0], mr.UserScope(context.user_id), context)
        return tuple((r.id, r.value, None if o is None else o.value) for r, o in versions)
    export = store.export_arrow()
    records = export.records.select(["id", "value", "status", "supersedes"]).to_pylist()
    tombstones = export.tombstones.select(["key", "user_id", "forgotten_at"]).to_pylist()
    return (
        tuple(sorted(tuple(row.values()) for row in records)),
        tuple(sorted(str(tuple(row.values())) for row in tombstones)),
    )


#: What the checker asks, in turn: mostly resolve (the per-turn read), then each user's
#: history of one key, then the whole store's export (``resolve_batch`` reads the same).
QUESTIONS: tuple[tuple[str, int], ...] = (
    *(("resolve", which) for which in range(len(CONTEXTS)) for _ in range(3)),
    *(("history", which) for which in range(len(CONTEXTS))),
    ("export", 0),
)


class _Expected:
    """The answers to some of the questions in each committed state, replayed on a store in
    memory. A turn's window never starts before an earlier turn's (``done`` only grows), so
    the replay answers only the states inside the windows it is asked about: a state it
    passes on the way is never asked again. (Answering every state was slower than the
    writer's pace: an export of the model takes milliseconds, and a checker that falls
    behind has ever more states to replay per turn.)"""

    def __init__(self, seed: int, questions: tuple[int, ...]) -> None:
        self._writes = writes(seed)
        self._model = mr.MemoryStore(shared_conversations=True)
        self._questions = questions
        self._answers: dict[int, dict[int, tuple[object, ...]]] = {}
        self._state = 0

    def _now(self) -> dict[int, tuple[object, ...]]:
        return {question: _ask(self._model, question) for question in self._questions}

    def answers(self, low: int, high: int, question: int) -> list[tuple[object, ...]]:
        for state in [state for state in self._answers if state < low]:
            del self._answers[state]  # states no later turn can see
        if self._state >= low and self._state not in self._answers:
            self._answers[self._state] = self._now()
        while self._state < high:
            operation, argument = next(self._writes)
            _play(self._model, operation, argument)
            self._state += 1
            if self._state >= low:
                self._answers[self._state] = self._now()
        return [self._answers[state][question] for state in range(low, high + 1)]


@dataclass(frozen=True)
class RaceReport:
    """What a race saw: turns resolved, writes the writer committed meanwhile, and the turns
    whose answer matched no state committed while they ran (each with its window)."""

    turns: int
    states: int
    seconds: float
    wrong: tuple[tuple[int, int, int], ...]


def race(
    turns: int,
    *,
    seed: int = 0,
    min_states: int = 200,
    pause: float = 0.0,
    directory: Path | None = None,
) -> RaceReport:
    """Resolves at least ``turns`` turns while another process writes, and more until it has
    committed ``min_states`` writes meanwhile (for at most a minute); the writer pauses
    between writes for ``pause`` seconds on average (0: it writes as fast as it can, and
    nearly every turn reads the file); see the module docstring."""
    processes = multiprocessing.get_context("spawn")
    started, done = processes.Value("q", 0), processes.Value("q", 0)
    with tempfile.TemporaryDirectory(dir=directory) as where:
        path = str(Path(where) / "race.db")
        mr.MemoryStore(
            path, shared_conversations=True
        ).close()  # created before either process opens it
        writer = processes.Process(
            target=_writer, args=(seed, path, started, done, pause), daemon=True
        )
        writer.start()
        try:
            # The export is asked once a cycle and costs milliseconds: its own replay
            # answers it only in its own turns' windows.
            exports = tuple(q for q, (kind, _) in enumerate(QUESTIONS) if kind == "export")
            others = tuple(q for q in range(len(QUESTIONS)) if q not in exports)
            replays = dict.fromkeys(exports, _Expected(seed, exports))
            replays |= dict.fromkeys(others, _Expected(seed, others))
            deadline = time.monotonic() + 60
            while done.value < 1 and writer.is_alive() and time.monotonic() < deadline:
                time.sleep(0.01)  # the writer is importing: race it, not its start-up
            store = mr.MemoryStore(path, shared_conversations=True)
            wrong: list[tuple[int, int, int]] = []
            started_at = time.perf_counter()
            turn = 0
            first = done.value
            # At least ``turns`` turns, and on, within a minute, until the writer has
            # committed ``min_states`` writes among them (a loaded machine slows it).
            deadline = time.monotonic() + 60
            while turn < turns or (done.value - first < min_states and time.monotonic() < deadline):
                turn += 1
                question = turn % len(QUESTIONS)
                low = done.value
                answer = _ask(store, question)
                high = started.value
                if answer not in replays[question].answers(low, high, question):
                    wrong.append((turn, low, high))
            seconds = time.perf_counter() - started_at
            states = done.value - first
            store.close()
        finally:
            writer.kill()
            writer.join()
    return RaceReport(turn, states, seconds, tuple(wrong))


def main(arguments: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memresolve.testing.store_race")
    parser.add_argument("--turns", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--pause",
        type=float,
        default=0.001,
        help="the writer's average pause between writes, in seconds (default 0.001)",
    )
    args = parser.parse_args(arguments)
    report = race(args.turns, seed=args.seed, pause=args.pause)
    print(
        f"{report.turns} turns in {report.seconds:.1f} s while {report.states} writes "
        f"committed; {len(report.wrong)} answers outside the committed states"
    )
    for turn, low, high in report.wrong[:10]:
        print(f"  turn {turn}: no state in {low}..{high} answers so")
    return 1 if report.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
