"""Two processes on one store file: every answer of the one that reads is the answer of a
state the other committed (``memresolve.testing.store_race``). The reader asks ``resolve``,
``history`` and ``export_arrow`` in turn. A store that read a scope's records and its
tombstones in two snapshots answered, 71 times in 10^6 turns here, with records from after a
forget and tombstones from before it: an erased record won with an empty value. The long run
is ``python -m memresolve.testing.store_race`` (10^6 turns by default)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import memresolve as mr
from memresolve.testing.store_race import race

TURNS = int(os.environ.get("MEMRESOLVE_RACE_TURNS", "40000"))


def test_every_answer_is_one_of_a_committed_state(tmp_path: Path) -> None:
    report = race(TURNS, seed=1, pause=0.001, directory=tmp_path)
    assert report.states >= 200, f"the writer committed only {report.states} writes"
    assert report.wrong == (), (
        f"{len(report.wrong)} of {report.turns} turns, {report.states} states"
    )


def test_the_race_sees_an_export_that_straddles_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness can fail: an export that reads the records and the tombstones in two
    snapshots (here with a pause between them, as a loaded machine would) is caught."""

    def straddling(store: mr.MemoryStore) -> mr.ArrowExport:
        records = store.to_arrow()
        time.sleep(0.003)
        return mr.ArrowExport(records, mr.tombstones_to_arrow(store.tombstones()))

    monkeypatch.setattr(mr.MemoryStore, "export_arrow", straddling)
    report = race(3000, seed=1, pause=0.001, directory=tmp_path)
    assert report.wrong, f"no wrong answer in {report.turns} turns, {report.states} states"
