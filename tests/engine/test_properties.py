"""Properties of the contract over generated inputs (``memresolve.testing`` strategies)."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from datetime import timedelta, timezone

from hypothesis import event, given
from hypothesis import strategies as st

import memresolve as mr
from memresolve._io._jsonl import (
    record_from_json,
    record_to_json,
    tombstone_from_json,
    tombstone_to_json,
)
from memresolve.reference import precedence_key
from memresolve.testing import Scenario, Universe, memory_records, scenarios, scopes, tombstones
from profiles import Resolve
from story import reexpressed


def _resolve(resolve: Resolve, scenario: Scenario) -> mr.Resolution:
    return resolve(scenario.records, scenario.context, tombstones=scenario.tombstones)


@given(scenario=scenarios())
def test_every_candidate_appears_exactly_once(resolve: Resolve, scenario: Scenario) -> None:
    result = _resolve(resolve, scenario)
    accounted = [r.id for r in result.active] + [e.id for e in result.excluded]
    assert sorted(accounted) == sorted(r.id for r in scenario.records)
    assert result.trace.memory_candidates == len(scenario.records)
    assert result.trace.memory_active == len(result.active)
    event(f"active: {min(len(result.active), 3)}+")


@given(scenario=scenarios())
def test_exactly_one_winner_per_scoped_key_among_survivors(
    resolve: Resolve, scenario: Scenario
) -> None:
    result = _resolve(resolve, scenario)
    by_id = {r.id: r for r in scenario.records}
    survivors: defaultdict[tuple[mr.Scope, str], list[mr.MemoryRecord]] = defaultdict(list)
    for candidate in result.active:
        survivors[(candidate.scope, candidate.key)].append(candidate)
    for exclusion in result.excluded:
        if exclusion.reason is mr.Reason.LOWER_PRECEDENCE:
            loser = by_id[exclusion.id]
            survivors[(loser.scope, loser.key)].append(loser)
    active_ids = {r.id for r in result.active}
    for group in survivors.values():
        winners = [r for r in group if r.id in active_ids]
        assert len(winners) == 1
        assert winners[0] == min(group, key=precedence_key)
    if any(len(group) > 1 for group in survivors.values()):
        event("a group with a lower-precedence loser")


@given(scenario=scenarios(), shuffle=st.randoms(use_true_random=False))
def test_result_does_not_depend_on_input_order(
    resolve: Resolve,
    scenario: Scenario,
    shuffle: st.Random,  # type: ignore[name-defined]
) -> None:
    records = list(scenario.records)
    forgets = list(scenario.tombstones)
    shuffle.shuffle(records)
    shuffle.shuffle(forgets)
    assert resolve(records, scenario.context, tombstones=forgets) == _resolve(resolve, scenario)


_OUTSIDE = Universe(
    user_ids=("~u",),
    character_ids=("~c",),
    conversation_ids=("~k",),
    scene_ids=("~s",),
    keys=("~key",),
)


@given(data=st.data(), scenario=scenarios())
def test_out_of_scope_records_never_change_the_winners(
    resolve: Resolve, data: st.DataObject, scenario: Scenario
) -> None:
    # Records in scopes no context of this scenario can name, some with edges
    # aimed at the real candidates: out of scope, they carry no edge.
    targets = [r.id for r in scenario.records] or ["nothing"]
    extra = data.draw(
        st.lists(
            memory_records(
                dataclasses.replace(
                    _OUTSIDE, keys=tuple({*_OUTSIDE.keys, *(r.key for r in scenario.records)})
                ),
                record_id=st.text("~xyz", min_size=2, max_size=4).map(lambda s: "~" + s),
                supersedes=st.none() | st.sampled_from(targets),
            ),
            max_size=4,
            unique_by=lambda r: r.id,
        )
    )
    before = _resolve(resolve, scenario)
    after = resolve([*scenario.records, *extra], scenario.context, tombstones=scenario.tombstones)
    assert after.active == before.active
    assert set(before.excluded) <= set(after.excluded)
    assert {e.reason for e in set(after.excluded) - set(before.excluded)} <= {mr.Reason.SCOPE}


@given(data=st.data(), scenario=scenarios())
def test_a_new_tombstone_never_adds_a_winner_it_did_not_uncover(
    resolve: Resolve, data: st.DataObject, scenario: Scenario
) -> None:
    # A tombstone can only remove candidates. It never lets a new (scope, key)
    # into the prompt; a record can newly win only inside a group that the
    # tombstone names, as the runner-up of a winner it forgot (newer evidence
    # than the forget is not blocked: see test_pipeline's runner-up test).
    keys = tuple({r.key for r in scenario.records} | {"k"})
    users = (scenario.context.user_id,)
    universe = Universe(
        users,
        (scenario.context.character_id or "c",),
        (scenario.context.conversation_id or "k",),
        (scenario.context.scene_id or "s",),
        keys,
    )
    extra = data.draw(tombstones(universe))
    before = _resolve(resolve, scenario)
    after = resolve(scenario.records, scenario.context, tombstones=[*scenario.tombstones, extra])
    groups_before = {(r.scope, r.key) for r in before.active}
    assert {(r.scope, r.key) for r in after.active} <= groups_before
    assert len(after.active) <= len(before.active)
    newly_active = {r.id for r in after.active} - {r.id for r in before.active}
    for record in (r for r in after.active if r.id in newly_active):
        assert (record.key, record.scope) == (extra.key, extra.scope)
        assert before.reason_for(record.id) is mr.Reason.LOWER_PRECEDENCE
        (old_winner,) = (r for r in before.active if (r.scope, r.key) == (record.scope, record.key))
        assert after.reason_for(old_winner.id) is mr.Reason.FORGOTTEN
        event("a runner-up uncovered by a tombstone")
    for exclusion in before.excluded:
        if exclusion.reason in (mr.Reason.SCOPE, mr.Reason.STATUS_OR_TIME):
            assert after.reason_for(exclusion.id) is exclusion.reason
        elif exclusion.reason is not mr.Reason.LOWER_PRECEDENCE:
            # forgetting is checked before supersession, so "superseded" may become "forgotten"
            assert after.reason_for(exclusion.id) in (mr.Reason.FORGOTTEN, exclusion.reason)


@given(scenario=scenarios())
def test_resolving_the_winners_again_changes_nothing(resolve: Resolve, scenario: Scenario) -> None:
    first = _resolve(resolve, scenario)
    again = resolve(first.active, scenario.context, tombstones=scenario.tombstones)
    assert again.active == first.active
    assert again.excluded == ()


@given(scenario=scenarios(), hours=st.integers(-12, 14))
def test_migration_through_json_and_other_offsets_changes_nothing(
    resolve: Resolve, scenario: Scenario, hours: int
) -> None:
    zone = timezone(timedelta(hours=hours))

    def moved(record: mr.MemoryRecord) -> mr.MemoryRecord:
        return record_from_json(json.loads(json.dumps(record_to_json(reexpressed(record, zone)))))

    records = [moved(r) for r in scenario.records]
    forgets = [
        tombstone_from_json(json.loads(json.dumps(tombstone_to_json(t))))
        for t in scenario.tombstones
    ]
    assert records == list(scenario.records)
    assert resolve(records, scenario.context, tombstones=forgets) == _resolve(resolve, scenario)


@given(data=st.data())
def test_scope_id_is_injective(data: st.DataObject) -> None:
    universe = Universe(("a", ":", "a:"), ("b", ":b", "%3A"), ("a", "a:b"), ("b", ":"), ("k",))
    left = data.draw(scopes(universe))
    right = data.draw(scopes(universe))
    assert (mr.scope_id(left) == mr.scope_id(right)) == (left == right)
