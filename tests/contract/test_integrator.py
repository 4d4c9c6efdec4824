"""The integrator's API: owners, rows in and out, corrections, forgets in one call.

Every resolution runs on both backends (the ``resolve`` fixture).
"""

from __future__ import annotations

import inspect
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import memresolve as mr
from memresolve._backend import available_backends
from memresolve._engine._kernels import get_batch_resolver
from memresolve.testing import identifiers, memory_records, scopes, universes
from profiles import Resolve
from story import ADA, context, day, record

K = mr.ErrorKind


def _chat(user: str, conversation: str = "conv-1", scene: str | None = None) -> mr.RetrievalContext:
    return context(user_id=user, conversation_id=conversation, scene_id=scene)


# Owners: conversation ids minted per user never leak across users ----------------------


def test_an_owned_conversation_record_reaches_only_its_owner(resolve: Resolve) -> None:
    mine = record("mine", key="mood", scope=mr.ConversationScope("conv-1", user_id="u-ada"))
    theirs = record("theirs", key="mood", scope=mr.ConversationScope("conv-1", user_id="u-bob"))
    shared = record("shared", key="topic", scope=mr.ConversationScope("conv-1"))
    records = [mine, theirs, shared]
    ada = resolve(records, _chat("u-ada"))
    bob = resolve(records, _chat("u-bob"))
    assert [r.id for r in ada.active] == ["shared", "mine"]
    assert [r.id for r in bob.active] == ["shared", "theirs"]
    assert ada.reason_for("theirs") is mr.Reason.SCOPE
    assert bob.reason_for("mine") is mr.Reason.SCOPE


def test_an_owned_and_an_unowned_scope_are_different_groups_and_tombstones(
    resolve: Resolve,
) -> None:
    owned = mr.SceneScope("conv-1", "s1", user_id="u-ada")
    unowned = mr.SceneScope("conv-1", "s1")
    assert owned != unowned
    assert mr.scope_id(owned) == "scene:conv-1:s1::u-ada"
    assert mr.scope_id(unowned) == "scene:conv-1:s1"
    records = [
        record("owned", key="outfit", scope=owned, valid_from=day(2)),
        record("unowned", key="outfit", scope=unowned, valid_from=day(3), version=5),
    ]
    forget = mr.ForgetTombstone(key="outfit", scope=owned, forgotten_at=day(10))
    result = resolve(records, _chat("u-ada", scene="s1"), tombstones=[forget])
    assert [r.id for r in result.active] == ["unowned"]
    assert result.reason_for("owned") is mr.Reason.FORGOTTEN


def test_arrow_rows_with_user_id_on_conversation_rows_never_cross_users() -> None:
    # A store read from Arrow where every row carries its user: the conversation and
    # scene records become owned, and no user ever sees another user's.
    rows = []
    for user in ("u-ada", "u-bob"):
        rows.append(record(f"{user}-city", key="city", scope=mr.UserScope(user)).to_dict())
        for conversation in ("conv-1", "conv-2"):
            scope = mr.ConversationScope(conversation, user_id=user)
            rows.append(record(f"{user}-{conversation}", key="mood", scope=scope).to_dict())
        scene = mr.SceneScope("conv-1", "s1", user_id=user)
        rows.append(record(f"{user}-scene", key="outfit", scope=scene).to_dict())
    table = pa.Table.from_pylist(rows)
    contexts = mr.contexts_to_arrow(
        [
            (f"{user}/{conversation}", _chat(user, conversation, scene="s1"))
            for user in ("u-ada", "u-bob")
            for conversation in ("conv-1", "conv-2")
        ]
    )
    for backend in available_backends():
        result = get_batch_resolver(backend)(table, contexts, include_excluded=True)
        for row in result.to_pylist():
            user = row["context_id"].split("/")[0]
            assert row["record_id"].startswith(user), (backend, row)
        assert result.num_rows == 4 * 2 + 2  # city and mood per context, outfit in conv-1
    assert mr.records_from_arrow(table) == [mr.MemoryRecord.from_dict(row) for row in rows]


# Rows in and out ------------------------------------------------------------------------


@given(universes().flatmap(memory_records))
def test_records_round_trip_through_rows(memory: mr.MemoryRecord) -> None:
    row = memory.to_dict()
    assert list(row) == [
        "id", "key", "value", "scope_kind", "user_id", "character_id", "conversation_id",
        "scene_id", "status", "authority", "confidence", "valid_from", "valid_until",
        "source_message_ids", "supersedes", "version", "observed_at",
    ]  # fmt: skip
    assert mr.MemoryRecord.from_dict(row) == memory
    assert pa.Table.from_pylist([row]).column_names == list(row)


def test_rows_take_the_defaults_and_refuse_what_no_record_has() -> None:
    minimal = {
        "id": "m1",
        "key": "city",
        "value": "Lisbon",
        "scope_kind": "user",
        "user_id": "u-ada",
        "authority": "user-confirmed",
        "confidence": 1.0,
        "valid_from": day(1),
    }
    memory = mr.MemoryRecord.from_dict(minimal)
    assert (memory.status, memory.version, memory.source_message_ids) == (mr.Status.ACTIVE, 1, ())
    assert (memory.supersedes, memory.valid_until, memory.observed_at) == (None, None, None)
    cases: list[tuple[dict[str, Any], tuple[object, ...]]] = [
        ({**minimal, "colour": "blue"}, (K.UNKNOWN_FIELD, "colour", None, "m1")),
        ({**minimal, "character_id": "c-1"}, (K.INCONSISTENT, "character_id", None, "m1")),
        ({k: v for k, v in minimal.items() if k != "user_id"}, (K.MISSING, "user_id", None, "m1")),
        ({k: v for k, v in minimal.items() if k != "key"}, (K.MISSING, "key", None, "m1")),
        ({**minimal, "scope_kind": "team"}, (K.UNKNOWN_VALUE, "scope_kind", None, "m1")),
        ({**minimal, "user_id": ""}, (K.EMPTY, "user_id", None, "m1")),
    ]
    for row, expected in cases:
        with pytest.raises(mr.InvalidInputError) as caught:
            mr.MemoryRecord.from_dict(row)
        assert caught.value.where() == expected, row
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.MemoryRecord.from_dict([("id", "m1")])  # type: ignore[arg-type]
    assert caught.value.kind is K.WRONG_TYPE


def test_the_defaults_and_signature_read_the_same_on_either_storage() -> None:
    signature = str(inspect.signature(mr.MemoryRecord))
    assert "Ellipsis" not in signature
    assert "..." not in signature
    assert "status: 'Status | str' = <Status.ACTIVE: 'active'>" in signature
    assert "version: 'int' = 1" in signature
    assert signature.startswith("(*, id: 'str', key: 'str', value: 'str', scope: 'Scope'")
    with pytest.raises(mr.InvalidInputError, match="field 'value' is missing") as caught:
        mr.MemoryRecord(id="m1", key="city")  # type: ignore[call-arg]
    assert caught.value.where() == (K.MISSING, "value", None, "m1")


@given(universes().flatmap(scopes))
def test_scope_ids_read_back_into_their_scope(scope: mr.Scope) -> None:
    assert mr.scope_from_id(mr.scope_id(scope)) == scope


@given(st.lists(identifiers(3), min_size=1, max_size=3), st.none() | identifiers(3))
def test_scope_ids_of_every_kind_read_back(ids: list[str], owner: str | None) -> None:
    built: list[mr.Scope] = [mr.UserScope(ids[0]), mr.ConversationScope(ids[0], user_id=owner)]
    if len(ids) > 1:
        built += [mr.CharacterScope(ids[0], ids[1]), mr.SceneScope(ids[0], ids[1], user_id=owner)]
    for scope in built:
        assert mr.scope_from_id(mr.scope_id(scope)) == scope


@pytest.mark.parametrize(
    "text",
    [
        "",
        "user",
        "user:",
        "user:a:b",
        "team:a",
        "user:a::b",  # a user scope has no owner
        "character:a::b",
        "conversation:k::",
        "conversation:k:::x",
        "user:a%3a",  # escapes are upper case
        "user:a%",
        "scene:k",
    ],
)
def test_text_that_is_no_scope_id_is_refused(text: str) -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.scope_from_id(text)
    assert caught.value.kind in (K.MALFORMED, K.EMPTY)


# Corrections and forgets -----------------------------------------------------------------


def test_a_correction_supersedes_with_the_next_version(resolve: Resolve) -> None:
    old = record("m1", key="pet.name", value="Harbor", authority="model-inferred", version=3)
    new = old.corrected("Marlowe", at=day(5), id="m2")
    assert (new.key, new.scope, new.supersedes, new.version) == ("pet.name", ADA, "m1", 4)
    assert (new.valid_from, new.authority, new.confidence) == (
        day(5),
        mr.Authority.USER_CORRECTED,
        1.0,
    )
    assert new.value == "Marlowe"
    assert new.status is mr.Status.ACTIVE
    result = resolve([old, new], context())
    assert [m.value for m in result.prompt_memories()] == ["Marlowe"]
    assert result.reason_for("m1") is mr.Reason.SUPERSEDED
    top = record("top", version=2**63 - 1)
    with pytest.raises(mr.InvalidInputError) as caught:
        top.corrected("x", at=day(5), id="next")
    assert caught.value.where() == (K.OUT_OF_RANGE, "version", None, "next")


def test_forget_everywhere_covers_every_scope_the_user_sees(resolve: Resolve) -> None:
    here = _chat("u-ada", "conv-1", scene="s1")
    at = day(20)
    forgets = mr.forget_everywhere("city", here, at=at)
    assert [mr.scope_id(t.scope) for t in forgets] == [
        "user:u-ada",
        "character:u-ada:c-rowan",
        "conversation:conv-1",
        "conversation:conv-1::u-ada",
        "scene:conv-1:s1",
        "scene:conv-1:s1::u-ada",
    ]
    assert all(t.blocks_sources_before == t.forgotten_at == at for t in forgets)
    assert len(mr.forget_everywhere("city", _chat("u-ada"), at=at)) == 4
    seen = [
        record(f"city-{n}", key="city", scope=scope, valid_from=day(3))
        for n, scope in enumerate(here.scopes())
    ]
    bob = record("bob-city", key="city", scope=mr.ConversationScope("conv-1", user_id="u-bob"))
    retold = record("retold", key="city", valid_from=day(1), observed_at=day(21))
    result = resolve([*seen, bob, retold], here, tombstones=forgets)
    assert [r.id for r in result.active] == ["retold"]
    assert {e.id for e in result.excluded if e.reason is mr.Reason.FORGOTTEN} == {
        r.id for r in seen
    }
    assert result.reason_for("bob-city") is mr.Reason.SCOPE
    with pytest.raises(mr.InvalidInputError):
        mr.forget_everywhere("city", "u-ada", at=at)  # type: ignore[arg-type]


def test_owners_and_tombstone_defaults_in_json_lines() -> None:
    owned = record("m1", scope=mr.SceneScope("conv-1", "s1", user_id="u-ada"))
    out = io.StringIO()
    mr.write_records([owned], out)
    scope = '{"kind": "scene", "conversation_id": "conv-1", "scene_id": "s1", "user_id": "u-ada"}'
    assert f'"scope": {scope}' in out.getvalue()
    assert mr.read_records(io.StringIO(out.getvalue())) == [owned]
    line = (
        '{"key": "city", "scope": {"kind": "conversation", "conversation_id": "k", "user_id": "u"},'
        ' "forgotten_at": "2026-07-20T00:00:00Z"}'
    )
    (forget,) = mr.read_tombstones(io.StringIO(line))
    assert forget.blocks_sources_before == datetime(2026, 7, 20, tzinfo=UTC)
    minimal = (
        '{"id": "m", "key": "k", "value": "v", "scope": {"kind": "user", "user_id": "u"},'
        ' "authority": "user-confirmed", "confidence": 1, "valid_from": "2026-07-01T00:00:00Z"}'
    )
    (memory,) = mr.read_records(io.StringIO(minimal))
    assert (memory.status, memory.version) == (mr.Status.ACTIVE, 1)
    assert memory.valid_from + timedelta(0) == datetime(2026, 7, 1, tzinfo=UTC)


# The prompt ------------------------------------------------------------------------------


def test_prompt_memories_carry_their_scope_and_keep_the_most_specific_per_key(
    resolve: Resolve,
) -> None:
    here = _chat("u-ada", "conv-1", scene="s1")
    scopes_seen = here.scopes()  # user, character, conversation (+owned), scene (+owned)
    records = [
        record(f"nick-{n}", key="nickname", scope=scope, valid_from=day(2))
        for n, scope in enumerate(scopes_seen)
    ]
    records.append(record("city", key="city", valid_from=day(2)))
    records.append(
        record("mood", key="mood", scope=mr.ConversationScope("conv-1"), valid_from=day(2))
    )
    result = resolve(records, here)
    every = result.prompt_memories()
    assert [(m.key, m.scope) for m in every] == [(r.key, r.scope) for r in result.active]
    assert len([m for m in every if m.key == "nickname"]) == 6
    kept = result.prompt_memories(per_key="most-specific")
    assert [(m.key, mr.scope_id(m.scope)) for m in kept] == [
        ("mood", "conversation:conv-1"),
        ("nickname", "scene:conv-1:s1::u-ada"),
        ("city", "user:u-ada"),
    ]
    # Without the owned scene, the unowned one; without a scene, the owned conversation.
    no_owned_scene = [r for r in records if r.id != "nick-5"]
    kept = resolve(no_owned_scene, here).prompt_memories(per_key="most-specific")
    assert {mr.scope_id(m.scope) for m in kept if m.key == "nickname"} == {"scene:conv-1:s1"}
    kept = resolve(records, _chat("u-ada", "conv-1")).prompt_memories(per_key="most-specific")
    assert {mr.scope_id(m.scope) for m in kept if m.key == "nickname"} == {
        "conversation:conv-1::u-ada"
    }
    with pytest.raises(mr.InvalidInputError) as caught:
        result.prompt_memories(per_key="newest")  # type: ignore[arg-type]
    assert caught.value.where() == (K.UNKNOWN_VALUE, "per_key", None, None)
