"""Owners fail closed (``docs/store.md``, "Owners: a store fails closed"): a store refuses
records of unowned conversation and scene scopes unless created to share them; the policy is
stored in the file, fixed at creation, and an older file keeps sharing."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve._store import _schema as schema
from memresolve.testing.strategies import Universe, contexts, memory_records, universes
from store_cases import CONTEXT, record, t

_UNOWNED = (mr.ConversationScope("k1"), mr.SceneScope("k1", "s1"))
_OWNED = (mr.ConversationScope("k1", user_id="u1"), mr.SceneScope("k1", "s1", user_id="u1"))


def _unowned(scope: mr.Scope) -> bool:
    return scope.kind in (mr.ScopeKind.CONVERSATION, mr.ScopeKind.SCENE) and (scope.user_id is None)


def _policy_row(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        value: int = connection.execute("SELECT shared_conversations FROM store_policy").fetchone()[
            0
        ]
        return value
    finally:
        connection.close()


@pytest.mark.parametrize("scope", _UNOWNED, ids=lambda scope: scope.kind.value)
def test_a_new_store_refuses_an_unowned_record_naming_it_and_writes_nothing(
    scope: mr.Scope,
) -> None:
    store = mr.MemoryStore()
    assert store.shared_conversations is False
    batch = [record("fine", scope=mr.UserScope("u1")), record("leak", scope=scope)]
    with pytest.raises(mr.InvalidInputError) as raised:
        store.add(batch)
    error = raised.value
    assert (error.kind, error.record_id, error.field, error.row) == (
        mr.ErrorKind.MISSING,
        "leak",
        "user_id",
        1,
    )
    message = str(error)
    assert "user_id=" in message
    assert "shared_conversations=True" in message
    assert len(store) == 0  # the owned record of the batch is not written either
    with pytest.raises(mr.InvalidInputError):
        store.add_arrow(mr.records_to_arrow(batch))
    assert len(store) == 0


@pytest.mark.parametrize("scope", _UNOWNED, ids=lambda scope: scope.kind.value)
def test_observe_and_retract_refuse_an_unowned_scope_before_reading_anything(
    scope: mr.Scope,
) -> None:
    store = mr.MemoryStore()
    with pytest.raises(mr.InvalidInputError) as raised:
        store.observe("mood", "calm", scope, at=t(2), authority="model-inferred", confidence=0.5)
    assert (raised.value.kind, raised.value.field) == (mr.ErrorKind.MISSING, "scope")
    with pytest.raises(mr.InvalidInputError) as raised:
        store.retract("mood", scope, at=t(2))
    assert (raised.value.kind, raised.value.field) == (mr.ErrorKind.MISSING, "scope")
    assert len(store) == 0


@pytest.mark.parametrize("scope", _OWNED, ids=lambda scope: scope.kind.value)
def test_owned_scopes_tombstones_and_reads_are_never_refused(scope: mr.Scope) -> None:
    store = mr.MemoryStore()
    assert store.add([record("mine", scope=scope)]) == 1
    observed = store.observe(
        "mood", "calm", scope, at=t(2), authority="model-inferred", confidence=0.5
    )
    assert observed.outcome is mr.ObserveOutcome.ADDED
    assert len(store.retract("mood", scope, at=t(3))) == 1
    # A forget of an unowned scope is a tombstone: stored, though it holds nothing here.
    for unowned in _UNOWNED:
        assert store.forget("pet.name", unowned, at=t(4)) == ()
    in_scene = mr.RetrievalContext(
        now=t(30), user_id="u1", character_id="c1", conversation_id="k1", scene_id="s1"
    )
    assert store.forget_everywhere("pet.name", in_scene, at=t(5)) == ("mine",)
    assert {tombstone.scope for tombstone in store.tombstones()} >= set(_UNOWNED)
    assert store.resolve(CONTEXT).active == ()


@pytest.mark.parametrize("scope", _UNOWNED, ids=lambda scope: scope.kind.value)
def test_a_store_created_to_share_accepts_unowned_records(scope: mr.Scope) -> None:
    store = mr.MemoryStore(shared_conversations=True)
    assert store.shared_conversations is True
    assert store.add([record("ours", scope=scope)]) == 1
    observed = store.observe(
        "mood", "calm", scope, at=t(2), authority="user-confirmed", confidence=1.0
    )
    assert observed.outcome is mr.ObserveOutcome.ADDED
    assert len(store.retract("mood", scope, at=t(3))) == 1


def test_the_policy_is_stored_at_creation_and_fixed(tmp_path: Path) -> None:
    closed, shared = tmp_path / "closed.db", tmp_path / "shared.db"
    mr.MemoryStore(closed).close()
    with mr.MemoryStore(shared, shared_conversations=True) as store:
        store.add([record("ours", scope=_UNOWNED[0])])
    assert (_policy_row(closed), _policy_row(shared)) == (0, 1)
    # Left out, the argument opens a store as it was created.
    with mr.MemoryStore(closed) as store:
        assert store.shared_conversations is False
    with mr.MemoryStore(shared) as store, mr.MemoryStore(shared, shared_conversations=True) as same:
        assert store.shared_conversations
        assert same.shared_conversations
        assert store.add([record("more", scope=_UNOWNED[1])]) == 1
    for path, other in ((closed, True), (shared, False)):
        before = path.read_bytes()
        with pytest.raises(mr.InvalidInputError) as raised:
            mr.MemoryStore(path, shared_conversations=other)
        error = raised.value
        assert (error.kind, error.field, error.file) == (
            mr.ErrorKind.INCONSISTENT,
            "shared_conversations",
            str(path),
        )
        assert f"has shared_conversations={not other}" in str(error)
        assert path.read_bytes() == before
    with mr.MemoryStore(shared) as store:
        assert len(store) == 2


@pytest.mark.parametrize("given_value", ["yes", 1, 0.0])
def test_the_policy_must_be_a_bool_or_none(given_value: object) -> None:
    with pytest.raises(mr.InvalidInputError) as raised:
        mr.MemoryStore(shared_conversations=given_value)  # type: ignore[arg-type]
    assert (raised.value.kind, raised.value.field) == (
        mr.ErrorKind.WRONG_TYPE,
        "shared_conversations",
    )


def _as_version_4(path: Path) -> None:
    """Makes a current store file what schema version 4 wrote: the same tables but
    ``store_policy``, which version 5 added."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("DROP TABLE store_policy")
    connection.execute("PRAGMA user_version = 4")
    connection.close()


def test_an_older_store_keeps_sharing_conversations(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    unowned = record("ours", scope=_UNOWNED[0])
    with mr.MemoryStore(path, shared_conversations=True) as store:
        store.add([unowned])
    _as_version_4(path)
    # Asked to fail closed, it is refused before the migration changes the file.
    with pytest.raises(mr.InvalidInputError) as raised:
        mr.MemoryStore(path, shared_conversations=False)
    assert raised.value.field == "shared_conversations"
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == 4
    connection.close()
    with mr.MemoryStore(path) as store:
        assert store.shared_conversations is True
        assert store.get("ours") == unowned
        assert store.add([unowned, record("more", scope=_UNOWNED[1])]) == 1
    assert _policy_row(path) == 1
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    connection.close()


def test_two_stores_creating_one_file_with_different_policies_cannot_both_open_it(
    tmp_path: Path,
) -> None:
    """Whoever creates the file fixes its policy; the other finds it and is refused."""
    for attempt in range(5):
        path = tmp_path / f"race-{attempt}.db"
        start = threading.Barrier(2)
        opened: dict[bool, object] = {}

        def open_store(
            shared: bool,
            path: Path = path,
            start: threading.Barrier = start,
            opened: dict[bool, object] = opened,
        ) -> None:
            start.wait()
            try:
                store = mr.MemoryStore(path, shared_conversations=shared)
            except mr.InvalidInputError as error:
                opened[shared] = error
            else:
                opened[shared] = store.shared_conversations
                store.close()

        threads = [threading.Thread(target=open_store, args=(shared,)) for shared in (False, True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        refused = [shared for shared, got in opened.items() if isinstance(got, Exception)]
        assert len(refused) == 1, opened
        winner = not refused[0]
        assert opened[winner] is winner
        assert _policy_row(path) == int(winner)


@settings(max_examples=200)
@given(st.data(), universes())
def test_a_closed_store_holds_what_a_sharing_one_does_or_refuses_the_whole_batch(
    data: st.DataObject, universe: Universe
) -> None:
    records = data.draw(st.lists(memory_records(universe), max_size=6, unique_by=lambda r: r.id))
    closed, shared = mr.MemoryStore(), mr.MemoryStore(shared_conversations=True)
    assert shared.add(records) == len(records)
    leaks = [index for index, candidate in enumerate(records) if _unowned(candidate.scope)]
    if leaks:
        with pytest.raises(mr.InvalidInputError) as raised:
            closed.add(records)
        assert raised.value.row == leaks[0]
        assert raised.value.record_id == records[leaks[0]].id
        assert len(closed) == 0
    else:
        assert closed.add(records) == len(records)
        assert list(closed.records()) == list(shared.records())
        context = data.draw(contexts(universe))
        assert closed.resolve(context) == shared.resolve(context)


def test_an_arrow_load_names_the_row_of_the_unowned_record() -> None:
    rows = [record(f"m{index}", scope=mr.UserScope("u1")) for index in range(3)]
    rows.append(record("leak", scope=_UNOWNED[1]))
    table = mr.records_to_arrow(rows)
    assert isinstance(table, pa.Table)
    store = mr.MemoryStore()
    with pytest.raises(mr.InvalidInputError) as raised:
        store.add_arrow(table)
    assert (raised.value.record_id, raised.value.row) == ("leak", 3)
    assert len(store) == 0
