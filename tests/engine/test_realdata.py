"""Real facts that change over time (Wikidata, CC0): who governed, where the capital was."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import memresolve as mr
from profiles import Resolve
from wikidata import on, statements

US, DOUGLAS_ADAMS = "Q30", "Q42"
HEAD_OF_GOVERNMENT, CAPITAL, POPULATION, SPOUSE = "P6", "P36", "P1082", "P26"


def _winner(result: mr.Resolution) -> str | None:
    assert len(result.active) <= 1
    return result.active[0].value if result.active else None


@pytest.mark.parametrize(
    ("moment", "president"),
    [
        (datetime(1789, 1, 1, tzinfo=UTC), None),  # before the first term
        (datetime(1789, 4, 30, tzinfo=UTC), "Q23"),  # George Washington, first day
        (datetime(1865, 4, 14, tzinfo=UTC), "Q91"),  # Abraham Lincoln
        (datetime(1887, 1, 1, tzinfo=UTC), "Q35171"),  # Grover Cleveland, first term
        (datetime(1895, 1, 1, tzinfo=UTC), "Q35171"),  # ...and his second, non-consecutive
        (datetime(1995, 6, 1, tzinfo=UTC), "Q1124"),  # Bill Clinton
        (datetime(2018, 6, 26, tzinfo=UTC), "Q22686"),  # the preferred, open-ended statement
    ],
)
def test_head_of_government_on_a_date(
    resolve: Resolve, moment: datetime, president: str | None
) -> None:
    assert _winner(resolve(statements(US, HEAD_OF_GOVERNMENT), on(US, moment))) == president


def test_terms_hand_over_at_one_instant(resolve: Resolve) -> None:
    # Clinton's term ends at the very instant Bush's begins: validity is half-open.
    handover = datetime(2001, 1, 20, tzinfo=UTC)
    records = statements(US, HEAD_OF_GOVERNMENT)
    before = resolve(records, on(US, handover - timedelta(microseconds=1)))
    at = resolve(records, on(US, handover))
    assert (_winner(before), _winner(at)) == ("Q1124", "Q207")
    assert at.trace.memory_active == 1
    assert at.trace.excluded_expired == len(records) - 1


def test_exactly_one_head_of_government_every_year_since_1790(resolve: Resolve) -> None:
    records = statements(US, HEAD_OF_GOVERNMENT)
    for year in range(1790, 2019):
        assert len(resolve(records, on(US, datetime(year, 7, 4, tzinfo=UTC))).active) == 1


@pytest.mark.parametrize(
    ("moment", "capital"),
    [
        (datetime(1786, 1, 1, tzinfo=UTC), "Q60"),  # New York City
        (datetime(1795, 1, 1, tzinfo=UTC), "Q1345"),  # Philadelphia
        (datetime(1800, 8, 1, tzinfo=UTC), None),  # the move: no statement covers the summer
        (datetime(1801, 1, 1, tzinfo=UTC), "Q61"),  # Washington, D.C.
    ],
)
def test_capital_on_a_date(resolve: Resolve, moment: datetime, capital: str | None) -> None:
    assert _winner(resolve(statements(US, CAPITAL), on(US, moment))) == capital


def test_population_is_the_latest_figure_known_at_the_time(resolve: Resolve) -> None:
    records = statements(US, POPULATION)
    assert _winner(resolve(records, on(US, datetime(1995, 1, 1, tzinfo=UTC)))) == "+248709873"
    # The preferred-rank 2016 estimate wins once it exists.
    assert _winner(resolve(records, on(US, datetime(2018, 1, 1, tzinfo=UTC)))) == "+323952889"


def test_two_sources_disagreeing_on_one_census_pick_one_winner_deterministically(
    resolve: Resolve,
) -> None:
    records = statements(US, POPULATION)
    census_1840 = [r for r in records if r.valid_from == datetime(1840, 1, 1, tzinfo=UTC)]
    assert len({r.value for r in census_1840}) == 2
    result = resolve(records, on(US, datetime(1841, 1, 1, tzinfo=UTC)))
    assert result.active[0].id == min(r.id for r in census_1840)
    assert resolve(records[::-1], on(US, datetime(1841, 1, 1, tzinfo=UTC))) == result


def test_spouse_while_married(resolve: Resolve) -> None:
    records = statements(DOUGLAS_ADAMS, SPOUSE)
    assert _winner(resolve(records, on(DOUGLAS_ADAMS, datetime(1995, 1, 1, tzinfo=UTC))))
    assert _winner(resolve(records, on(DOUGLAS_ADAMS, datetime(1985, 1, 1, tzinfo=UTC)))) is None


def test_real_statements_round_trip_through_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "statements.jsonl"
    records = statements(US, HEAD_OF_GOVERNMENT) + statements(US, POPULATION)
    mr.write_records(records, path)
    assert mr.read_records(path) == records
