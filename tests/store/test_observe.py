"""``MemoryStore.observe``: the extractor's one call, its outcomes, its ids, and its races."""

from __future__ import annotations

import multiprocessing
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve import reference
from memresolve.testing.strategies import Scenario, instants, scenarios
from profiles import PARITY_EXAMPLES
from store_cases import narrowest_context, store_of

ADA = mr.UserScope("u-ada")


def t(day: int) -> datetime:
    return datetime(2026, 7, day, tzinfo=UTC)


def _observe(store: mr.MemoryStore, value: str, day: int, **fields: object) -> mr.Observation:
    given: dict[str, object] = {"authority": "model-inferred", "confidence": 0.6}
    given.update(fields)
    scope = given.pop("scope", ADA)
    key = given.pop("key", "home.city")
    return store.observe(key, value, scope, at=t(day), **given)  # type: ignore[arg-type]


def _shown(store: mr.MemoryStore, day: int, **context: object) -> list[str]:
    turn = mr.RetrievalContext(now=t(day), user_id="u-ada", **context)  # type: ignore[arg-type]
    return [m.value for m in store.resolve(turn).prompt_memories()]


def test_each_outcome_and_what_it_stores() -> None:
    store = mr.MemoryStore()
    first = _observe(store, "Lisbon", 1)
    assert first.outcome is mr.ObserveOutcome.ADDED
    assert (first.record.supersedes, first.record.valid_from) == (None, t(1))
    # The same value again, from the same authority: the winner already says it.
    again = _observe(store, "Lisbon", 2)
    assert (again.outcome, again.record) == (mr.ObserveOutcome.UNCHANGED, first.record)
    # The user confirming the model's guess is a new record: a stronger authority.
    confirmed = _observe(store, "Lisbon", 3, authority="user-confirmed", confidence=1.0)
    assert confirmed.outcome is mr.ObserveOutcome.ADDED
    assert (confirmed.record.supersedes, confirmed.record.version) == (first.record.id, 2)
    # A model inference never silently replaces what the user said...
    guess = _observe(store, "Faro", 4)
    assert (guess.outcome, guess.record) == (mr.ObserveOutcome.REFUSED, confirmed.record)
    assert _shown(store, 5) == ["Lisbon"]
    # ...unless the caller asks for it.
    forced = _observe(store, "Faro", 4, over_stronger=True)
    assert forced.outcome is mr.ObserveOutcome.ADDED
    assert _shown(store, 5) == ["Faro"]
    assert len(store) == 3


def test_a_new_end_is_a_change_and_a_retry_is_a_no_op_even_after_a_newer_value() -> None:
    store = mr.MemoryStore()
    lisbon = _observe(store, "Lisbon", 1)
    until = _observe(store, "Lisbon", 2, valid_until=t(9))
    assert until.outcome is mr.ObserveOutcome.ADDED  # same value, a new end
    porto = _observe(store, "Porto", 3)
    assert porto.outcome is mr.ObserveOutcome.ADDED
    # A stale retry of the first call: recognised by its derived id before the winner is
    # read, so it neither adds Lisbon back nor refuses.
    stale = _observe(store, "Lisbon", 1)
    assert (stale.outcome, stale.record) == (mr.ObserveOutcome.UNCHANGED, lisbon.record)
    assert _shown(store, 4) == ["Porto"]
    assert len(store) == 3


def test_a_retry_is_a_no_op_after_normalize_and_after_a_forget() -> None:
    store = mr.MemoryStore()
    first = _observe(store, "Lisbon", 1)
    _observe(store, "Porto", 2)
    store.normalize(t(3))  # writes Lisbon's status: superseded
    retried = _observe(store, "Lisbon", 1)
    assert retried.outcome is mr.ObserveOutcome.UNCHANGED
    assert retried.record.id == first.record.id
    store.forget("home.city", ADA, at=t(4))  # erases both texts
    assert _observe(store, "Lisbon", 1).outcome is mr.ObserveOutcome.UNCHANGED
    assert _observe(store, "Porto", 2).outcome is mr.ObserveOutcome.UNCHANGED
    assert len(store) == 2


def test_an_observation_never_in_force_or_a_bad_flag_is_refused_by_name() -> None:
    store = mr.MemoryStore()
    cases: list[tuple[dict[str, object], mr.ErrorKind, str]] = [
        ({"valid_until": t(1)}, mr.ErrorKind.INCONSISTENT, "valid_until"),
        ({"over_stronger": "yes"}, mr.ErrorKind.WRONG_TYPE, "over_stronger"),
        ({"authority": "oracle"}, mr.ErrorKind.UNKNOWN_VALUE, "authority"),
        ({"idempotency_key": ""}, mr.ErrorKind.EMPTY, "idempotency_key"),
    ]
    for arguments, kind, field in cases:
        with pytest.raises(mr.InvalidInputError) as caught:
            _observe(store, "Lisbon", 1, **arguments)
        assert (caught.value.kind, caught.value.field) == (kind, field)
        assert str(caught.value).startswith("observe:")
    assert len(store) == 0


def test_two_observations_that_would_share_an_id_need_an_idempotency_key() -> None:
    store = mr.MemoryStore()
    _observe(store, "Lisbon", 1)
    with pytest.raises(mr.InvalidInputError) as caught:
        _observe(store, "Porto", 1)  # same key, scope, instant and authority: same id
    assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.DUPLICATE_ID, "id")
    assert "Porto" not in str(caught.value)
    added = _observe(store, "Porto", 1, idempotency_key="msg-2-extraction")
    assert added.outcome is mr.ObserveOutcome.ADDED
    assert _observe(store, "Porto", 1, idempotency_key="msg-2-extraction").outcome is (
        mr.ObserveOutcome.UNCHANGED
    )
    given = _observe(store, "Faro", 2, id="my-own-id")
    assert given.record.id == "my-own-id"


def test_the_id_is_derived_from_public_fields_never_the_value_or_messages() -> None:
    ids = {
        mr.MemoryStore()
        .observe(
            "home.city",
            value,
            ADA,
            at=t(1),
            authority="user-confirmed",
            confidence=1.0,
            source_message_ids=sources,
        )
        .record.id
        for value, sources in [("Lisbon", ()), ("Porto", ("msg-1",)), ("", ("msg-2",))]
    }
    assert len(ids) == 1


def test_the_slot_is_decided_in_the_narrowest_context_that_sees_the_scope() -> None:
    store = mr.MemoryStore(shared_conversations=True)
    rowan = mr.CharacterScope("u-ada", "c-rowan")
    _observe(store, "Ada", 1, key="nickname", authority="user-confirmed", confidence=1.0)
    # The user scope's nickname is not the character scope's slot: nothing to supersede.
    added = _observe(store, "Cap'n's mate", 2, key="nickname", scope=rowan)
    assert (added.outcome, added.record.supersedes) == (mr.ObserveOutcome.ADDED, None)
    # An owned conversation's slot, and the unowned one of the same id: two slots.
    owned = mr.ConversationScope("conv-1", user_id="u-ada")
    shared = mr.ConversationScope("conv-1")
    assert _observe(store, "blue", 1, key="mood", scope=owned).record.supersedes is None
    assert _observe(store, "red", 1, key="mood", scope=shared).record.supersedes is None
    again = _observe(store, "green", 2, key="mood", scope=shared)
    assert again.record.supersedes == _observe(store, "red", 1, key="mood", scope=shared).record.id
    assert sorted(_shown(store, 3, conversation_id="conv-1")) == ["Ada", "blue", "green"]


@settings(max_examples=PARITY_EXAMPLES // 4)
@given(scenario=scenarios(), data=st.data())
def test_an_added_observation_wins_its_slot_at_its_instant(
    scenario: Scenario, data: st.DataObject
) -> None:
    """The promise of ``added``: the new record wins (scope, key) at ``at`` in the narrowest
    context that sees the scope (unless it was forced over a stronger winner); elsewhere and
    later it is judged as any record."""
    assume(scenario.records)
    store = store_of(scenario.records, scenario.tombstones)
    slot = data.draw(st.sampled_from(scenario.records))
    at = data.draw(instants(scenario.context.now))
    authority = data.draw(st.sampled_from(list(mr.Authority)))
    until = data.draw(st.one_of(st.none(), instants(scenario.context.now)))
    if until is not None and until <= at:
        with pytest.raises(mr.InvalidInputError) as caught:
            store.observe(
                slot.key,
                "observed",
                slot.scope,
                at=at,
                authority=authority,
                confidence=0.5,
                valid_until=until,
            )
        assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.INCONSISTENT, "valid_until")
        return
    result = store.observe(
        slot.key,
        "observed",
        slot.scope,
        at=at,
        authority=authority,
        confidence=0.5,
        valid_until=until,
        over_stronger=data.draw(st.booleans()),
    )
    if result.outcome is not mr.ObserveOutcome.ADDED:
        return
    replaced = None if result.record.supersedes is None else store.get(result.record.supersedes)
    rank = list(mr.Authority).index
    if replaced is not None and rank(replaced.authority) > rank(authority):
        # over_stronger: it hides the winner, but a weaker record may lose to another one.
        return
    context = narrowest_context(slot.scope, at)
    # Any tombstone that reaches the slot: of its scope, or user-wide of its owner.
    blocked = reference.blocked_by_tombstone(result.record, store.tombstones())
    winners = [
        r for r in store.resolve(context).active if (r.key, r.scope) == (slot.key, slot.scope)
    ]
    # A forget whose bound is at or after ``at`` blocks the new evidence too: then nothing.
    assert winners == ([] if blocked else [result.record])


# Races: no slot forked ------------------------------------------------------------------


def _chain_ok(store: mr.MemoryStore) -> None:
    """Every observation of the slot at one instant saw the previous one as the winner:
    the edges form one chain (no record is superseded twice), with one head."""
    records = list(store.records(key="home.city"))
    targets = [r.supersedes for r in records if r.supersedes is not None]
    assert len(targets) == len(set(targets)), "two observations superseded one winner"
    assert len(records) - len(targets) == 1
    assert len(store.resolve(mr.RetrievalContext(now=t(2), user_id="u-ada")).active) == 1


def _observe_many(path: str, writer: int, count: int) -> None:
    with mr.MemoryStore(path) as store:
        for n in range(count):
            store.observe(
                "home.city",
                f"city {writer}-{n}",
                ADA,
                at=t(1),
                authority="model-inferred",
                confidence=0.5,
                idempotency_key=f"{writer}-{n}",
            )


def test_racing_threads_never_fork_a_slot(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    mr.MemoryStore(path).close()
    workers = [
        threading.Thread(target=_observe_many, args=(path, writer, 20)) for writer in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    with mr.MemoryStore(path) as store:
        assert len(store) == 80
        _chain_ok(store)


def test_racing_processes_never_fork_a_slot(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    mr.MemoryStore(path).close()
    spawn = multiprocessing.get_context("spawn")
    workers = [spawn.Process(target=_observe_many, args=(path, writer, 15)) for writer in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    with mr.MemoryStore(path) as store:
        assert len(store) == 45
        _chain_ok(store)
