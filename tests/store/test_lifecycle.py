"""The store's lifecycle calls: retract ("that is no longer true")."""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve._model import Subject
from memresolve.testing.strategies import Scenario, instants, scenarios
from profiles import PARITY_EXAMPLES
from store_cases import CONTEXT, narrowest_context, record, store_of, t

_MICRO = timedelta(microseconds=1)


def _at(context: mr.RetrievalContext, now: datetime) -> mr.RetrievalContext:
    return dataclasses.replace(context, now=now)


def _decisions(result: mr.Resolution) -> dict[str, mr.Reason | None]:
    return {r.id: None for r in result.active} | {e.id: e.reason for e in result.excluded}


@settings(max_examples=PARITY_EXAMPLES // 4)
@given(scenario=scenarios(), data=st.data())
def test_a_retraction_empties_its_slot_from_its_instant_and_not_before(
    scenario: Scenario, data: st.DataObject
) -> None:
    assume(scenario.records)
    target = data.draw(st.sampled_from(scenario.records))
    at = data.draw(instants(scenario.context.now))
    slot = {r.id for r in scenario.records if (r.key, r.scope) == (target.key, target.scope)}
    # Every instant where something changes: the records' starts and ends, the retraction's.
    moments = {scenario.context.now, at - _MICRO, at, at + _MICRO, at + timedelta(days=400)}
    for r in scenario.records:
        moments |= {r.valid_from, r.valid_from - _MICRO}
        if r.valid_until is not None:
            moments |= {r.valid_until, r.valid_until - _MICRO}
    store = store_of(scenario.records, scenario.tombstones)
    before = {now: _decisions(store.resolve(_at(scenario.context, now))) for now in moments}
    retractions = store.retract(target.key, target.scope, at=at)
    assert all(r.status is mr.Status.RETRACTED and r.supersedes in slot for r in retractions)
    assert store.retract(target.key, target.scope, at=at) == ()  # a retry adds nothing
    new_ids = {r.id for r in retractions}
    for now in sorted(moments):
        after = _decisions(store.resolve(_at(scenario.context, now)))
        if now >= at:
            assert not [i for i in slot if after.get(i, "absent") is None], now
            # In every context that sees the slot: its narrowest one too.
            narrow = _decisions(store.resolve(narrowest_context(target.scope, now)))
            assert not [i for i in slot if narrow.get(i, "absent") is None], now
        else:
            # Before ``at`` only the retractions are new, and they are not yet in force.
            assert {i: after[i] for i in after if i not in new_ids} == before[now], now
            assert all(after[i] is mr.Reason.STATUS_OR_TIME for i in new_ids if i in after)


def test_a_retraction_hides_every_record_that_could_come_back() -> None:
    at = t(10)
    store = mr.MemoryStore()
    lisbon = record("m1", "Lisbon", authority="user-confirmed")
    retry = record("m1-retry", "Lisbon", authority="user-confirmed")  # a fresh id
    for_a_while = lisbon.corrected("Porto", at=t(5), id="m2")
    for_a_while = dataclasses.replace(for_a_while, valid_until=t(20))
    later = record("m3", "Faro", valid_from=t(15))  # held now, starts after the retract
    store.add([lisbon, retry, for_a_while, later])
    assert {r.supersedes for r in store.retract("pet.name", mr.UserScope("u1"), at=at)} == {
        "m1",
        "m1-retry",
        "m2",
        "m3",
    }
    for day in (10, 16, 25):
        assert store.resolve(_at(CONTEXT, t(day))).active == ()
    assert [m.value for m in store.resolve(_at(CONTEXT, t(9))).prompt_memories()] == ["Porto"]
    # History keeps every value; explain names the retraction.
    assert [r.value for r, _ in store.history("pet.name", mr.UserScope("u1"), CONTEXT)][:4] == [
        "Lisbon",
        "Lisbon",
        "Faro",
        "Porto",
    ]
    explanation = store.explain("m2", _at(CONTEXT, t(11)))
    assert explanation.outcome is mr.Reason.SUPERSEDED
    (by,) = explanation.superseded_by
    retraction = store.get(by)
    assert retraction is not None
    assert retraction.status is mr.Status.RETRACTED


def test_records_added_after_a_retraction_are_judged_as_usual() -> None:
    store = mr.MemoryStore()
    store.add([record("m1", "Lisbon")])
    store.retract("pet.name", mr.UserScope("u1"), at=t(10))
    store.add([record("m2", "Berlin", valid_from=t(12))])
    assert [m.value for m in store.resolve(CONTEXT).prompt_memories()] == ["Berlin"]
    # A retraction touches its own slot only.
    store.add([record("m3", "Rex", key="dog.name")])
    store.retract("pet.name", mr.UserScope("u1"), at=t(20))
    assert [m.value for m in store.resolve(CONTEXT).prompt_memories()] == ["Rex"]


def test_a_retraction_record_is_never_active_and_bears_its_edge_in_every_form() -> None:
    old = record("m1", "Lisbon")
    retraction = old.retracted(at=t(10), id="r1")
    assert (retraction.status, retraction.supersedes, retraction.value) == (
        mr.Status.RETRACTED,
        "m1",
        "",
    )
    assert (retraction.valid_from, retraction.version, retraction.valid_until) == (t(10), 2, None)
    assert mr.resolve([old, retraction], CONTEXT).active == ()
    assert [r.id for r in mr.resolve([old, retraction], _at(CONTEXT, t(9))).active] == ["m1"]
    row = mr.records_to_arrow([retraction])
    assert mr.records_from_arrow(row) == [retraction]
    assert mr.MemoryRecord.from_dict(retraction.to_dict()) == retraction
    last = record("m9", version=2**63 - 1)
    assert last.retracted(at=t(10), id="r9").version == 2**63 - 1


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"key": "", "scope": mr.UserScope("u1"), "at": t(1)}, "key"),
        ({"key": "k", "scope": "user:u1", "at": t(1)}, "scope"),
        ({"key": "k", "scope": mr.UserScope("u1"), "at": datetime(2026, 7, 1)}, "at"),
    ],
)
def test_a_bad_retract_names_its_field_and_writes_nothing(
    arguments: dict[str, object], field: str
) -> None:
    store = mr.MemoryStore()
    store.add([record("m1")])
    with pytest.raises(mr.InvalidInputError) as caught:
        store.retract(**arguments)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert len(store) == 1


def test_forget_stamps_at_and_keeps_forgotten_at_one_release_as_a_deprecated_alias() -> None:
    store = mr.MemoryStore()
    store.add([record("m1", "Lisbon"), record("m2", "Rex", key="dog.name")])
    assert store.forget("pet.name", mr.UserScope("u1"), at=t(5)) == ("m1",)
    with pytest.warns(DeprecationWarning, match=r"forget\(at=\.\.\.\)") as warned:
        assert store.forget("dog.name", mr.UserScope("u1"), forgotten_at=t(5)) == ("m2",)
    assert warned[0].filename == __file__  # the warning points at the caller's line
    assert {t.forgotten_at for t in store.tombstones()} == {t(5)}
    for arguments, kind, field in [
        ({}, mr.ErrorKind.MISSING, "at"),
        ({"at": t(5), "forgotten_at": t(5)}, mr.ErrorKind.INCONSISTENT, "forgotten_at"),
        ({"at": datetime(2026, 7, 5)}, mr.ErrorKind.NAIVE_TIME, "at"),
    ]:
        with pytest.raises(mr.InvalidInputError) as caught:
            store.forget("pet.name", mr.UserScope("u1"), **arguments)
        assert (caught.value.kind, caught.value.field) == (kind, field)


# Listing: a profile page's reads -------------------------------------------------------------

_ADA_SCOPES = [
    mr.UserScope("u-ada"),
    mr.CharacterScope("u-ada", "c-rowan"),
    mr.ConversationScope("conv-1", user_id="u-ada"),
    mr.SceneScope("conv-1", "s-1", user_id="u-ada"),
]


def _listed_store() -> mr.MemoryStore:
    store = mr.MemoryStore(shared_conversations=True)
    mine = [
        record(f"ada-{n}", "v", key=f"k{n % 2}", scope=scope) for n, scope in enumerate(_ADA_SCOPES)
    ]
    others = [
        record("bob-0", key="k0", scope=mr.UserScope("u-bob")),
        record("bob-1", key="k9", scope=mr.ConversationScope("conv-1", user_id="u-bob")),
        record("shared", key="k0", scope=mr.ConversationScope("conv-1")),
    ]
    store.add([*mine, *others])
    return store


def test_records_of_a_user_are_what_it_owns_and_never_a_shared_conversation() -> None:
    store = _listed_store()
    assert [r.id for r in store.records(user_id="u-ada")] == ["ada-0", "ada-1", "ada-2", "ada-3"]
    assert [r.id for r in store.records(user_id="u-ada", key="k1")] == ["ada-1", "ada-3"]
    assert [r.id for r in store.records(key="k0")] == ["ada-0", "ada-2", "bob-0", "shared"]
    scope = mr.ConversationScope("conv-1", user_id="u-ada")
    assert [r.id for r in store.records(user_id="u-ada", scope=scope)] == ["ada-2"]
    assert [r.id for r in store.records(scope=mr.ConversationScope("conv-1"))] == ["shared"]
    assert len(list(store.records())) == 7
    assert store.keys(user_id="u-ada") == ("k0", "k1")
    assert store.keys(user_id="u-nobody") == ()


def test_a_scope_that_is_not_the_users_is_inconsistent() -> None:
    store = _listed_store()
    for scope in (mr.UserScope("u-bob"), mr.ConversationScope("conv-1")):
        with pytest.raises(mr.InvalidInputError) as caught:
            list(store.records(user_id="u-ada", scope=scope))
        assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.INCONSISTENT, "scope")
    with pytest.raises(mr.InvalidInputError) as caught:
        store.keys(user_id="")
    assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.EMPTY, "user_id")


def test_keys_leave_out_a_key_whose_records_are_all_forgotten() -> None:
    store = _listed_store()
    store.forget("k1", mr.CharacterScope("u-ada", "c-rowan"), at=t(20))
    assert store.keys(user_id="u-ada") == ("k0", "k1")  # ada-3 still holds k1
    store.forget("k1", mr.SceneScope("conv-1", "s-1", user_id="u-ada"), at=t(20))
    assert store.keys(user_id="u-ada") == ("k0",)
    # The records stay listed, their text erased.
    assert [r.value for r in store.records(user_id="u-ada", key="k1")] == ["", ""]


def _plan(db: sqlite3.Connection, query: str, parameters: tuple[str, ...]) -> str:
    return " ".join(str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {query}", parameters))


def test_a_users_records_and_keys_are_read_through_an_index(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with mr.MemoryStore(path) as store:
        store.add([record("m1")])
    from memresolve._store import _lifecycle  # noqa: PLC0415 - the filter under test

    with closing(sqlite3.connect(path)) as db:
        for user, key, scope, index in [
            ("u1", None, None, "records_by_user"),
            ("u1", "k", None, "records_by_user"),
            (None, "k", mr.UserScope("u1"), "records_by_scope"),
        ]:
            where, parameters = _lifecycle.record_filter(user, key, scope, Subject("records"))
            plan = _plan(db, f"SELECT * FROM records {where}", parameters)
            assert f"USING INDEX {index}" in plan, plan
        assert "USING INDEX records_by_user" in _plan(db, _lifecycle.USER_KEYS, ("u1",))
