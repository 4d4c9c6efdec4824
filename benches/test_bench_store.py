"""Per-turn cost as a chat backend pays it, against the plain Python port of the tutorial.

Run: ``make bench`` (``pytest benches --benchmark-only``), group ``turn-<size>``. Each
turn starts from the candidates a vector search returned (``memresolve.testing.workload``:
seven scopes, four of them the context's) and ends with the winners:

* ``tutorial``: build the port's dataclasses from flat storage rows, then ``resolve_memory``
  (``memresolve.testing.tutorial``);
* ``build+resolve``: build ``MemoryRecord`` objects from the rows, then ``mr.resolve``;
* ``resolve``: ``mr.resolve`` on records built once, before the turn;
* ``store``/``store-file``: ``MemoryStore.resolve`` on a store holding the same records
  (in memory, and in a SQLite file), which reads only the context's scopes.

Group ``in-scope-<size>`` draws every candidate from the context's scopes (``IN_SCOPE``),
so that ``store.resolve`` serves exactly ``size`` candidates: the figure to set beside the
Rust core's ``core_resolve_in_scope`` criterion bench (``cargo bench --bench core``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import memresolve as mr
from memresolve.testing.tutorial import Context, Tombstone, memory_from_row, resolve_memory
from memresolve.testing.workload import CONTEXT, IN_SCOPE, build, record_arguments

SIZES = [20, 200, 2_000]
WAYS = ["tutorial", "build+resolve", "resolve", "store", "store-file"]


def _store(
    records: list[mr.MemoryRecord], tombstones: list[mr.ForgetTombstone], path: Path | None
) -> mr.MemoryStore:
    store = mr.MemoryStore(path, shared_conversations=True)
    store.add(records)
    for t in tombstones:
        store.forget(
            t.key,
            t.scope,
            at=t.forgotten_at,
            blocks_sources_before=t.blocks_sources_before,
        )
    return store


def _turn(way: str, size: int, directory: Path, *, in_scope: bool = False) -> Callable[[], Any]:
    if in_scope:
        arguments, tombstones = record_arguments(size, seed=size, scopes=IN_SCOPE)
    else:
        arguments, tombstones = record_arguments(size, seed=size)
    records = build(arguments)
    if way == "tutorial":
        # The tutorial's contexts always name a character and a conversation.
        assert CONTEXT.character_id is not None and CONTEXT.conversation_id is not None  # noqa: PT018
        context = Context(
            CONTEXT.now,
            CONTEXT.user_id,
            CONTEXT.character_id,
            CONTEXT.conversation_id,
            CONTEXT.scene_id,
        )
        forgets = [
            Tombstone(t.key, mr.scope_id(t.scope), t.forgotten_at, t.blocks_sources_before)
            for t in tombstones
        ]
        rows = [record.to_dict() for record in records]  # as the backend's storage holds them
        return lambda: resolve_memory([memory_from_row(row) for row in rows], context, forgets)
    if way == "build+resolve":
        return lambda: mr.resolve(build(arguments), CONTEXT, tombstones=tombstones)
    if way == "resolve":
        return lambda: mr.resolve(records, CONTEXT, tombstones=tombstones)
    store = _store(records, tombstones, directory / "m.db" if way == "store-file" else None)
    expected = mr.resolve(records, CONTEXT, tombstones=tombstones)
    got = store.resolve(CONTEXT)
    assert [r.id for r in got.active] == [r.id for r in expected.active]
    return lambda: store.resolve(CONTEXT)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("way", WAYS)
def test_turn(benchmark: BenchmarkFixture, tmp_path: Path, way: str, size: int) -> None:
    benchmark.group = f"turn-{size}"
    turn = _turn(way, size, tmp_path)
    result = benchmark(turn)
    assert len(result.active) > 0


@pytest.mark.parametrize("size", [200, 2_000])
@pytest.mark.parametrize("way", ["resolve", "store", "store-file"])
def test_turn_in_scope(benchmark: BenchmarkFixture, tmp_path: Path, way: str, size: int) -> None:
    benchmark.group = f"in-scope-{size}"
    turn = _turn(way, size, tmp_path, in_scope=True)
    result = benchmark(turn)
    assert len(result.active) > 0
    assert len(result.active) + len(result.excluded) == size, "every candidate is in scope"


@pytest.mark.parametrize("size", [200, 2_000])
@pytest.mark.parametrize("way", ["store", "store-file"])
def test_turn_with_a_write(
    benchmark: BenchmarkFixture, tmp_path: Path, way: str, size: int
) -> None:
    """A chat turn as a backend runs it: one new memory added to the context's scopes,
    then the context resolved. 100 rounds, so the candidates grow from ``size`` by 101."""
    benchmark.group = f"write-turn-{size}"
    arguments, tombstones = record_arguments(size, seed=size, scopes=IN_SCOPE)
    store = _store(build(arguments), tombstones, tmp_path / "m.db" if way == "store-file" else None)
    store.resolve(CONTEXT)
    turns = iter(range(1_000_000))
    added: list[int] = []

    def turn() -> mr.Resolution:
        n = next(turns)
        added.append(n)
        store.add(
            [
                mr.MemoryRecord(
                    id=f"turn-{n}",
                    key=f"slot.{n % 50}",
                    value=f"said at turn {n}",
                    scope=IN_SCOPE[n % len(IN_SCOPE)],
                    authority="user-confirmed",
                    confidence=0.9,
                    valid_from=CONTEXT.now - timedelta(minutes=1),
                )
            ]
        )
        return store.resolve(CONTEXT)

    result = benchmark.pedantic(turn, rounds=100, iterations=1, warmup_rounds=1)  # type: ignore[no-untyped-call]
    # 100 rounds and a warm-up when timed; one call when benchmarks are disabled.
    assert len(result.active) + len(result.excluded) == size + len(added)


@pytest.mark.parametrize("size", [200, 2_000])
@pytest.mark.parametrize("way", ["store", "store-file"])
def test_turn_with_a_forget(
    benchmark: BenchmarkFixture, tmp_path: Path, way: str, size: int
) -> None:
    """A turn where the user asks to forget something: one ``forget`` in the context's
    scopes (a key not forgotten before), then the context resolved."""
    benchmark.group = f"forget-turn-{size}"
    arguments, tombstones = record_arguments(size, seed=size, scopes=IN_SCOPE)
    store = _store(build(arguments), tombstones, tmp_path / "m.db" if way == "store-file" else None)
    store.resolve(CONTEXT)
    keys = max(1, size // 3)
    turns = iter(range(keys * len(IN_SCOPE)))
    forgotten: list[int] = []

    def turn() -> mr.Resolution:
        n = next(turns)
        store.forget(f"slot.{n % keys}", IN_SCOPE[n // keys], at=CONTEXT.now - timedelta(days=1))
        forgotten.append(n)
        return store.resolve(CONTEXT)

    result = benchmark.pedantic(turn, rounds=100, iterations=1, warmup_rounds=1)  # type: ignore[no-untyped-call]
    assert len(store.tombstones()) == len(tombstones) + len(forgotten)
    assert len(result.active) + len(result.excluded) == size
