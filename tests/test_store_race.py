"""Two processes on one store file: every answer of the one that resolves is the answer of
a state the other committed (``memresolve.testing.store_race``). A store that read a
scope's records and its tombstones in two snapshots answered, 71 times in 10^6 turns here,
with records from after a forget and tombstones from before it: an erased record won with an
empty value. The long run is ``python -m memresolve.testing.store_race`` (10^6
turns by default)."""

from __future__ import annotations

import os
from pathlib import Path

from memresolve.testing.store_race import race

TURNS = int(os.environ.get("MEMRESOLVE_RACE_TURNS", "40000"))


def test_every_answer_is_one_of_a_committed_state(tmp_path: Path) -> None:
    report = race(TURNS, seed=1, pause=0.001, directory=tmp_path)
    assert report.states >= 200, f"the writer committed only {report.states} writes"
    assert report.wrong == (), (
        f"{len(report.wrong)} of {report.turns} turns, {report.states} states"
    )
