"""The shipped strategies reach every corner they promise (``hypothesis.find`` proves each)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from hypothesis import given, settings

import memresolve as mr
from memresolve.testing import BASE_NOW, Scenario, scenarios


def _edges(scenario: Scenario) -> dict[str, str]:
    return {r.id: r.supersedes for r in scenario.records if r.supersedes is not None}


def _has_chain_of_three(scenario: Scenario) -> bool:
    edges = _edges(scenario)
    return any(edges.get(target) in edges for target in edges.values())


def _has_cycle_of_two_or_more(scenario: Scenario) -> bool:
    edges = _edges(scenario)
    return any(target != start and edges.get(target) == start for start, target in edges.items())


def _instants(scenario: Scenario) -> list[datetime]:
    return [r.valid_from for r in scenario.records] + [
        r.valid_until for r in scenario.records if r.valid_until is not None
    ]


CORNERS: dict[str, Callable[[Scenario], bool]] = {
    "an id with ':'": lambda s: any(":" in r.id for r in s.records),
    "an id with '%'": lambda s: any("%" in r.id for r in s.records),
    "a non-BMP id": lambda s: any(max(map(ord, r.id)) > 0xFFFF for r in s.records),
    "a scope id that needs escaping": lambda s: any(
        "%3A" in mr.scope_id(r.scope) for r in s.records
    ),
    "equal valid_from and version, other ids": lambda s: (
        len({(r.valid_from, r.version) for r in s.records}) < len(s.records)
    ),
    "an instant exactly at now": lambda s: s.context.now in _instants(s),
    "an instant one microsecond after now": lambda s: (
        s.context.now + timedelta(microseconds=1) in _instants(s)
    ),
    "an instant one microsecond before now": lambda s: (
        s.context.now - timedelta(microseconds=1) in _instants(s)
    ),
    "an instant in a non-UTC offset": lambda s: any(
        r.valid_from.utcoffset() != timedelta(0) for r in s.records
    ),
    "a chain of three": _has_chain_of_three,
    "a cycle of two or more": _has_cycle_of_two_or_more,
    "a self-reference": lambda s: any(r.supersedes == r.id for r in s.records),
    "a dangling edge": lambda s: any(
        r.supersedes is not None and r.supersedes not in {x.id for x in s.records}
        for r in s.records
    ),
    "a context with a scene": lambda s: s.context.scene_id is not None,
    "a context without a scene": lambda s: s.context.scene_id is None,
    "observed_at set": lambda s: any(r.observed_at is not None for r in s.records),
    "a tombstone that forgets something": lambda s: (
        mr.Reason.FORGOTTEN
        in {
            e.reason
            for e in mr.reference.resolve(s.records, s.context, tombstones=s.tombstones).excluded
        }
    ),
    "a lower-precedence loser": lambda s: (
        mr.Reason.LOWER_PRECEDENCE
        in {
            e.reason
            for e in mr.reference.resolve(s.records, s.context, tombstones=s.tombstones).excluded
        }
    ),
    "the empty candidate set": lambda s: not s.records,
}


def test_scenarios_reach_every_promised_corner() -> None:
    # One derandomized pass; every corner must turn up at least once in it.
    seen: set[str] = set()

    @settings(max_examples=500, database=None, derandomize=True, deadline=None)
    @given(scenarios())
    def sample(scenario: Scenario) -> None:
        seen.update(name for name, holds in CORNERS.items() if name not in seen and holds(scenario))

    sample()
    assert sorted(set(CORNERS) - seen) == []


def test_default_now_is_the_documented_one() -> None:
    @settings(max_examples=20, database=None)
    @given(scenarios())
    def check(scenario: Scenario) -> None:
        assert scenario.context.now == BASE_NOW

    check()
