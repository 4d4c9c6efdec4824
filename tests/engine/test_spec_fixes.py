"""Each fix of docs/spec.md §3: a case the tutorial's code gets wrong, and what the spec says."""

from __future__ import annotations

import dataclasses

import memresolve as mr
from profiles import Resolve
from story import ADA, ROWAN, context, day, forget, record


def _tutorial_scope_id(user_id: str, character_id: str) -> str:
    return f"character:{user_id}:{character_id}"  # the tutorial's plain join


def test_colliding_scope_strings_stay_separate_groups(resolve: Resolve) -> None:
    left = mr.CharacterScope("a:b", "c")
    right = mr.CharacterScope("a", "b:c")
    assert _tutorial_scope_id("a:b", "c") == _tutorial_scope_id("a", "b:c")  # the bug
    assert mr.scope_id(left) != mr.scope_id(right)

    # Both scopes match a context only when it names them; here both are
    # resolved in turn with the same two records and one tombstone.
    records = [
        record("left", scope=left, valid_from=day(2)),
        record("right", scope=right, authority="user-corrected", valid_from=day(3)),
    ]
    tombstones = [forget("pet.name", right, day(10))]
    seen_from_left = resolve(
        records, context(user_id="a:b", character_id="c"), tombstones=tombstones
    )
    assert [r.id for r in seen_from_left.active] == ["left"]  # not outranked, not forgotten
    assert seen_from_left.reason_for("right") is mr.Reason.SCOPE


def test_colliding_scopes_in_one_context_do_not_compete(resolve: Resolve) -> None:
    # A user scope and a conversation scope with the same id never share a group.
    records = [
        record("in-user", scope=mr.UserScope("x"), authority="user-corrected"),
        record("in-conversation", scope=mr.ConversationScope("x")),
    ]
    result = resolve(records, context(user_id="x", conversation_id="x"))
    assert sorted(r.id for r in result.active) == ["in-conversation", "in-user"]


def test_tombstone_does_not_forget_a_colliding_scope(resolve: Resolve) -> None:
    victim_scope = mr.CharacterScope("a", "b:c")
    tombstone_scope = mr.CharacterScope("a:b", "c")
    result = resolve(
        [record("kept", scope=victim_scope)],
        context(user_id="a", character_id="b:c"),
        tombstones=[forget("pet.name", tombstone_scope, day(20))],
    )
    assert [r.id for r in result.active] == ["kept"]


def test_ties_break_by_code_point_not_locale(resolve: Resolve) -> None:
    # Under locale collation "apple" < "Banana"; by code point "B" (66) < "a" (97).
    twins = [record("apple", valid_from=day(3)), record("Banana", valid_from=day(3))]
    assert sorted(["apple", "Banana"], key=str.casefold) == ["apple", "Banana"]  # the locale view
    assert [r.id for r in resolve(twins, context()).active] == ["Banana"]


def test_ties_break_by_code_point_beyond_the_bmp(resolve: Resolve) -> None:
    fullwidth_a = "\uff21"  # U+FF21: one UTF-16 unit, 0xFF21
    fraktur_u = "\U0001d518"  # U+1D518: surrogate pair, first unit 0xD835 < 0xFF21
    # JavaScript's string order (UTF-16 units) would put the Fraktur letter first.
    assert fraktur_u.encode("utf-16-be") < fullwidth_a.encode("utf-16-be")
    twins = [record(fraktur_u, valid_from=day(3)), record(fullwidth_a, valid_from=day(3))]
    result = resolve(twins, context())
    assert [r.id for r in result.active] == [fullwidth_a]
    assert [e.id for e in result.excluded] == [fraktur_u]


def test_excluded_and_active_are_sorted_by_code_point(resolve: Resolve) -> None:
    ids = ["b", "B", "\U0001d518", "\uff21", "é", "e"]
    records = [record(i, key=f"k{n}" if n % 2 else "shared") for n, i in enumerate(ids)]
    result = resolve(records, context(now=day(1) - (day(2) - day(1))))  # all before valid_from
    assert [e.id for e in result.excluded] == sorted(ids)
    assert sorted(ids) == ["B", "b", "e", "é", "\uff21", "\U0001d518"]


def test_a_summary_written_after_the_forget_from_old_evidence_stays_forgotten(
    resolve: Resolve,
) -> None:
    summary = record("summary", valid_from=day(25), observed_at=day(3))
    tombstone = forget("pet.name", ADA, day(20))
    # The tutorial's rule, valid_from <= blocks_sources_before, lets it through:
    assert not summary.valid_from <= tombstone.blocks_sources_before
    result = resolve([summary], context(), tombstones=[tombstone])
    assert result.reason_for("summary") is mr.Reason.FORGOTTEN


def test_a_fact_retold_after_the_forget_is_not_blocked_forever(resolve: Resolve) -> None:
    # "My dog has been called Max since 2020", said after the forget.
    retold = record("retold", value="Max", valid_from=day(1), observed_at=day(22))
    tombstone = forget("pet.name", ADA, day(20))
    # The tutorial's rule would block it, because its validity starts early:
    assert retold.valid_from <= tombstone.blocks_sources_before
    result = resolve([retold], context(), tombstones=[tombstone])
    assert [r.value for r in result.active] == ["Max"]


def test_without_observed_at_forgetting_behaves_exactly_as_the_tutorial(resolve: Resolve) -> None:
    tombstone = forget("pet.name", ADA, day(20))
    old = record("old", valid_from=day(20))
    new = record("new", valid_from=day(20, 1))
    result = resolve([old, new], context(), tombstones=[tombstone])
    assert result.reason_for("old") is mr.Reason.FORGOTTEN
    assert result.is_active("new")


def test_a_worker_marking_the_middle_link_superseded_does_not_resurrect_the_first(
    resolve: Resolve,
) -> None:
    chain = [
        record("v1", value="lit", valid_from=day(10)),
        record("v2", value="dimmed", status="superseded", valid_from=day(15), supersedes="v1"),
        record("v3", value="shattered", valid_from=day(20), supersedes="v2", version=0),
    ]
    result = resolve(chain, context())
    assert [r.value for r in result.active] == ["shattered"]
    assert result.reason_for("v1") is mr.Reason.SUPERSEDED
    assert result.reason_for("v2") is mr.Reason.STATUS_OR_TIME


def test_forgetting_a_correction_does_not_bring_back_what_it_replaced(resolve: Resolve) -> None:
    old = record("old", value="Harbor", valid_from=day(1))
    correction = record("fix", value="Marlowe", valid_from=day(2), supersedes="old", version=2)
    result = resolve([old, dataclasses.replace(correction, status=mr.Status.FORGOTTEN)], context())
    assert result.active == ()
    assert result.reason_for("old") is mr.Reason.SUPERSEDED
    assert result.reason_for("fix") is mr.Reason.FORGOTTEN


def test_a_correction_forgotten_by_tombstone_still_hides_what_it_replaced(
    resolve: Resolve,
) -> None:
    # The correction lives in the character scope; the forget names that scope
    # only, so the user-scope original is hidden by the edge, not by the forget.
    old = record("old", value="Harbor", scope=ADA, valid_from=day(1))
    correction = record("fix", scope=ROWAN, valid_from=day(2), supersedes="old", version=2)
    result = resolve([old, correction], context(), tombstones=[forget("pet.name", ROWAN, day(2))])
    assert result.active == ()
    assert result.reason_for("old") is mr.Reason.SUPERSEDED
    assert result.reason_for("fix") is mr.Reason.FORGOTTEN
