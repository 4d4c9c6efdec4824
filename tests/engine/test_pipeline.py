"""Each pipeline stage at its boundaries, the canonical order, the trace and the projection."""

from __future__ import annotations

import dataclasses

import pytest

import memresolve as mr
from profiles import Resolve
from story import (
    ADA,
    HARBOR_NIGHTS,
    MICROSECOND,
    NOW,
    RAINCOAT_SCENE,
    ROWAN,
    context,
    day,
    forget,
    record,
)

# Stage 1: scope ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "visible"),
    [
        (mr.UserScope("u-ada"), True),
        (mr.UserScope("u-bob"), False),
        (mr.CharacterScope("u-ada", "c-rowan"), True),
        (mr.CharacterScope("u-ada", "c-iris"), False),
        (mr.CharacterScope("u-bob", "c-rowan"), False),
        (mr.ConversationScope("k-harbor-nights"), True),
        (mr.ConversationScope("k-other"), False),
        (mr.SceneScope("k-harbor-nights", "s-raincoat"), True),
        (mr.SceneScope("k-harbor-nights", "s-other"), False),
        (mr.SceneScope("k-other", "s-raincoat"), False),
    ],
)
def test_scope_matches_the_context_field_by_field(
    resolve: Resolve, scope: mr.Scope, visible: bool
) -> None:
    result = resolve([record("m", scope=scope)], context())
    assert result.is_active("m") is visible
    assert result.reason_for("m") is (None if visible else mr.Reason.SCOPE)


def test_scene_records_are_invisible_without_a_current_scene(resolve: Resolve) -> None:
    result = resolve([record("m", scope=RAINCOAT_SCENE)], context(scene_id=None))
    assert result.reason_for("m") is mr.Reason.SCOPE


# Stage 2: status and time -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("valid_from", "valid_until", "eligible"),
    [
        (NOW, None, True),
        (NOW + MICROSECOND, None, False),
        (NOW - MICROSECOND, NOW, False),
        (NOW - MICROSECOND, NOW + MICROSECOND, True),
        (day(1), day(1), False),  # empty interval: never eligible
        (day(2), day(1), False),  # ends before it starts: never eligible
    ],
)
def test_validity_is_half_open_to_the_microsecond(
    resolve: Resolve, valid_from: object, valid_until: object, eligible: bool
) -> None:
    result = resolve([record("m", valid_from=valid_from, valid_until=valid_until)], context())
    assert result.reason_for("m") is (None if eligible else mr.Reason.STATUS_OR_TIME)


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("active", None),
        ("superseded", mr.Reason.STATUS_OR_TIME),
        ("expired", mr.Reason.STATUS_OR_TIME),
        ("forgotten", mr.Reason.FORGOTTEN),
    ],
)
def test_stored_status_decides_at_its_stage(
    resolve: Resolve, status: str, reason: mr.Reason | None
) -> None:
    assert resolve([record("m", status=status)], context()).reason_for("m") is reason


def test_the_first_stage_that_excludes_names_the_reason(resolve: Resolve) -> None:
    records = [
        record("out-of-scope-and-expired", scope=mr.UserScope("u-bob"), valid_until=day(2)),
        record("forgotten-and-expired", status="forgotten", valid_until=day(2)),
        record("tombstoned-and-superseded", key="k"),
        record("superseder", key="k", supersedes="tombstoned-and-superseded"),
    ]
    result = resolve(records, context(), tombstones=[forget("k", ADA, day(5))])
    assert result.reason_for("out-of-scope-and-expired") is mr.Reason.SCOPE
    assert result.reason_for("forgotten-and-expired") is mr.Reason.STATUS_OR_TIME
    assert result.reason_for("tombstoned-and-superseded") is mr.Reason.FORGOTTEN


# Stage 3: forgetting ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "forgotten"), [(day(20), True), (day(20) + MICROSECOND, False), (day(3), True)]
)
def test_tombstone_bound_is_inclusive(resolve: Resolve, evidence: object, forgotten: bool) -> None:
    result = resolve(
        [record("m", valid_from=day(1), observed_at=evidence)],
        context(),
        tombstones=[forget("pet.name", ADA, day(20))],
    )
    assert result.reason_for("m") is (mr.Reason.FORGOTTEN if forgotten else None)


def test_tombstones_apply_whatever_now_is(resolve: Resolve) -> None:
    # Replaying an older time does not undo a forget made later.
    tombstone = mr.ForgetTombstone(
        key="pet.name", scope=ADA, forgotten_at=day(29), blocks_sources_before=day(20)
    )
    result = resolve([record("m", valid_from=day(1))], context(now=day(2)), tombstones=[tombstone])
    assert result.reason_for("m") is mr.Reason.FORGOTTEN


@pytest.mark.parametrize(
    ("key", "scope"),
    [("pet.other", ADA), ("pet.name", ROWAN), ("pet.name", mr.ConversationScope("u-ada"))],
)
def test_tombstone_needs_the_same_key_and_an_equal_scope(
    resolve: Resolve, key: str, scope: mr.Scope
) -> None:
    result = resolve(
        [record("m")], context(conversation_id="u-ada"), tombstones=[forget(key, scope, day(20))]
    )
    assert result.is_active("m")


# Stage 4: supersession --------------------------------------------------------------------


def test_a_cycle_excludes_every_member(resolve: Resolve) -> None:
    records = [
        record("a", supersedes="c"),
        record("b", supersedes="a"),
        record("c", supersedes="b"),
        record("bystander", key="other"),
    ]
    result = resolve(records, context())
    assert [r.id for r in result.active] == ["bystander"]
    assert {e.reason for e in result.excluded} == {mr.Reason.SUPERSEDED}


def test_a_record_superseding_itself_is_a_cycle_of_one(resolve: Resolve) -> None:
    assert resolve([record("m", supersedes="m")], context()).reason_for("m") is (
        mr.Reason.SUPERSEDED
    )


def test_a_dangling_edge_does_nothing(resolve: Resolve) -> None:
    assert resolve([record("m", supersedes="not-here")], context()).is_active("m")


def test_edges_cross_keys_and_scopes_when_both_ends_are_in_scope(resolve: Resolve) -> None:
    old = record("old", key="pet.nickname", scope=ADA)
    new = record("new", key="pet.name", scope=ROWAN, supersedes="old")
    assert resolve([old, new], context()).reason_for("old") is mr.Reason.SUPERSEDED
    # Out of scope, the correction carries no edge: the original comes back.
    elsewhere = resolve([old, new], context(character_id="c-iris"))
    assert elsewhere.is_active("old")
    assert elsewhere.reason_for("new") is mr.Reason.SCOPE


def test_a_correction_that_has_not_started_yet_hides_nothing(resolve: Resolve) -> None:
    old = record("old")
    future = record("future", valid_from=NOW + MICROSECOND, supersedes="old")
    result = resolve([old, future], context())
    assert result.is_active("old")
    assert result.reason_for("future") is mr.Reason.STATUS_OR_TIME


# Stage 5: precedence ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("winner", "loser"),
    [
        (
            {"authority": "user-corrected", "version": 1},
            {"authority": "user-confirmed", "version": 9},
        ),
        ({"authority": "user-confirmed"}, {"authority": "rule-extracted"}),
        ({"authority": "rule-extracted"}, {"authority": "model-inferred"}),
        ({"version": 2, "valid_from": day(1)}, {"version": 1, "valid_from": day(9)}),
        ({"version": -5, "valid_from": day(9)}, {"version": -5, "valid_from": day(1)}),
    ],
)
def test_precedence_order(
    resolve: Resolve, winner: dict[str, object], loser: dict[str, object]
) -> None:
    # "z-winner" sorts after "a-loser", so the id tie-break cannot explain the result.
    records = [record("z-winner", **winner), record("a-loser", **loser)]
    result = resolve(records, context())
    assert [r.id for r in result.active] == ["z-winner"]
    assert result.reason_for("a-loser") is mr.Reason.LOWER_PRECEDENCE


def test_confidence_does_not_decide_precedence(resolve: Resolve) -> None:
    records = [record("a", confidence=0.1), record("b", confidence=1.0)]
    assert [r.id for r in resolve(records, context()).active] == ["a"]


# Result -----------------------------------------------------------------------------------


def test_active_is_ordered_by_scope_id_then_key(resolve: Resolve) -> None:
    records = [
        record("1", key="b", scope=ADA),
        record("2", key="a", scope=ADA),
        record("3", key="z", scope=HARBOR_NIGHTS),
        record("4", key="a", scope=ROWAN),
        record("5", key="a", scope=RAINCOAT_SCENE),
    ]
    result = resolve(records, context())
    assert [(mr.scope_id(r.scope), r.key) for r in result.active] == [
        ("character:u-ada:c-rowan", "a"),
        ("conversation:k-harbor-nights", "z"),
        ("scene:k-harbor-nights:s-raincoat", "a"),
        ("user:u-ada", "a"),
        ("user:u-ada", "b"),
    ]


def test_trace_counts_every_reason(resolve: Resolve) -> None:
    records = [
        record("scope", scope=mr.UserScope("u-bob")),
        record("time", valid_until=day(2)),
        record("forgotten", status="forgotten"),
        record("old", key="k"),
        record("new", key="k", supersedes="old"),
        record("loser", key="k", version=0),
    ]
    trace = resolve(records, context()).trace
    assert trace.as_dict() == {
        "memory_candidates": 6,
        "memory_active": 1,
        "excluded_scope": 1,
        "excluded_expired": 1,
        "excluded_forgotten": 1,
        "excluded_superseded": 1,
        "excluded_precedence": 1,
        "resolver_version": mr.RESOLVER_VERSION,
    }
    assert trace.as_log_line().startswith("memory_candidates=6 memory_active=1 excluded_scope=1")


def test_trace_and_reprs_never_contain_values(resolve: Resolve) -> None:
    secret = "my-secret-address-42"
    result = resolve([record("m", value=secret), record("n", value=secret, version=0)], context())
    for text in (repr(result), result.trace.as_log_line(), repr(result.prompt_memories())):
        assert secret not in text
    assert result.prompt_memories()[0].value == secret


def test_empty_input_gives_an_empty_resolution(resolve: Resolve) -> None:
    result = resolve([], context())
    assert (result.active, result.excluded) == ((), ())
    assert result.trace.memory_candidates == 0


def test_reason_for_an_unknown_id_raises_key_error(resolve: Resolve) -> None:
    result = resolve([record("m")], context())
    with pytest.raises(KeyError):
        result.reason_for("not-a-candidate")


def test_records_and_tombstones_may_be_any_iterable(resolve: Resolve) -> None:
    result = resolve(
        (r for r in [record("m")]), context(), tombstones=iter([forget("x", ADA, day(1))])
    )
    assert result.is_active("m")


# Prompt projection ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authority", "confidence", "certainty"),
    [
        ("user-corrected", 0.0, mr.Certainty.CONFIRMED),
        ("user-confirmed", 0.1, mr.Certainty.CONFIRMED),
        ("rule-extracted", 0.85, mr.Certainty.LIKELY),
        ("model-inferred", 1.0, mr.Certainty.LIKELY),
        ("rule-extracted", 0.8499999999999999, mr.Certainty.UNCERTAIN),
        ("model-inferred", 0.0, mr.Certainty.UNCERTAIN),
    ],
)
def test_certainty(authority: str, confidence: float, certainty: mr.Certainty) -> None:
    memory = mr.to_prompt_memory(record("m", authority=authority, confidence=confidence))
    assert memory == mr.PromptMemory("pet.name", "value of m", certainty, ADA, "m")


def test_a_prompt_memory_carries_its_winners_id_for_the_application(resolve: Resolve) -> None:
    old = record("m1")
    result = resolve([old, old.corrected("Marlowe", at=day(2), id="m2")], context())
    (memory,) = result.prompt_memories()
    assert memory.record_id == "m2"
    assert "m2" not in repr(memory).replace("record_id='m2'", "")  # only as its own field
    # Built by hand with four fields, as before: no id, and not equal to the projection.
    by_hand = mr.PromptMemory(memory.key, memory.value, memory.certainty, memory.scope)
    assert by_hand.record_id is None
    assert by_hand != memory


def test_prompt_memories_follow_active_order(resolve: Resolve) -> None:
    result = resolve([record("m", key="b"), record("n", key="a")], context())
    assert [m.key for m in result.prompt_memories()] == ["a", "b"]


def test_records_are_immutable_and_hashable() -> None:
    m = record("m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.version = 2  # type: ignore[misc]
    assert len({m, record("m")}) == 1


def test_forgetting_the_winner_uncovers_a_runner_up_with_newer_evidence(
    resolve: Resolve,
) -> None:
    # A forget blocks old evidence, not the key: a weaker record observed after
    # the forget is a legitimate candidate and wins once the old winner is gone.
    strong_old = record("strong", authority="user-confirmed", valid_from=day(1))
    weak_new = record("weak", authority="model-inferred", valid_from=day(25))
    before = resolve([strong_old, weak_new], context())
    after = resolve(
        [strong_old, weak_new], context(), tombstones=[forget("pet.name", ADA, day(20))]
    )
    assert before.reason_for("weak") is mr.Reason.LOWER_PRECEDENCE
    assert [r.id for r in after.active] == ["weak"]
    assert after.reason_for("strong") is mr.Reason.FORGOTTEN
