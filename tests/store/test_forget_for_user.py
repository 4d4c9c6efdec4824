"""``MemoryStore.forget_for_user``: one user-wide tombstone reaches every scope the user
owns, those created later included, and erases the key's text there (``docs/store.md``,
"Forgetting for a user")."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve import reference
from memresolve._store import _schema as schema
from memresolve.testing.strategies import Scenario, scenarios
from store_cases import file_bytes, record, store_of, t

ADA_OWNS: tuple[mr.Scope, ...] = (
    mr.UserScope("u-ada"),
    mr.CharacterScope("u-ada", "c-rowan"),
    mr.ConversationScope("conv-1", user_id="u-ada"),
    mr.SceneScope("conv-1", "s-1", user_id="u-ada"),
)
NOT_ADAS: tuple[mr.Scope, ...] = (
    mr.UserScope("u-bob"),
    mr.ConversationScope("conv-1", user_id="u-bob"),
    mr.ConversationScope("conv-1"),  # unowned: nobody's to forget
    mr.SceneScope("conv-1", "s-1"),
)
CANARY = "canary-7f3e-rua-augusta"


def _home(record_id: str, scope: mr.Scope, **fields: object) -> mr.MemoryRecord:
    return record(record_id, CANARY, key="home", scope=scope, **fields)


def _hashless(tombstone: mr.ForgetTombstone) -> mr.ForgetTombstone:
    return dataclasses.replace(tombstone, source_salt=None, blocked_sources=frozenset())


def test_it_erases_the_key_in_every_scope_the_user_owns_and_nowhere_else() -> None:
    store = mr.MemoryStore(shared_conversations=True)
    mine = [_home(f"ada-{n}", scope) for n, scope in enumerate(ADA_OWNS)]
    others = [_home(f"other-{n}", scope) for n, scope in enumerate(NOT_ADAS)]
    other_key = record("ada-pet", "Harbor", scope=ADA_OWNS[2])
    retold = _home("ada-retold", ADA_OWNS[1], valid_from=t(9))  # told again after the forget
    store.add([*mine, *others, other_key, retold])
    erased = store.forget_for_user("u-ada", "home", at=t(5))
    assert erased == tuple(sorted(r.id for r in mine))
    for kept in [*others, other_key, retold]:
        assert store.get(kept.id) == kept
    (stored,) = store.tombstones()
    assert stored.source_salt is not None  # drawn for it; no message to block here
    assert _hashless(stored) == mr.ForgetTombstone(
        key="home", scope=mr.UserScope("u-ada"), forgotten_at=t(5), user_wide=True
    )
    turn = mr.RetrievalContext(
        now=t(30), user_id="u-ada", character_id="c-rowan", conversation_id="conv-1", scene_id="s-1"
    )
    shown = {r.id for r in store.resolve(turn).active}
    assert shown & {r.id for r in mine} == set()
    assert {
        "other-2",
        "other-3",
        "ada-retold",
    } <= shown  # unowned ones stay, as does the re-told fact
    # A retry erases nothing more and stores no second tombstone.
    assert store.forget_for_user("u-ada", "home", at=t(5)) == ()
    assert len(store.tombstones()) == 1


def test_regression_a_warm_turn_sees_the_forget_of_a_user_whose_user_scope_is_empty() -> None:
    """The cache held the user's user scope empty (the user's records were all in a
    conversation); the new tombstone is stored on that scope, which must be read again."""
    store = mr.MemoryStore()
    store.add([_home("r1", mr.ConversationScope("conv-1", user_id="u"))])
    turn = mr.RetrievalContext(now=t(30), user_id="u", character_id="c", conversation_id="conv-1")
    assert [r.id for r in store.resolve(turn).active] == ["r1"]  # warms the cache
    assert store.forget_for_user("u", "home", at=t(5)) == ("r1",)
    assert store.resolve(turn).active == ()
    assert store.explain("r1", turn).outcome is mr.Reason.FORGOTTEN
    store.add([_home("r2", mr.CharacterScope("u", "c"))])
    assert store.resolve(turn).active == ()


def test_a_scope_created_after_the_forget_is_reached() -> None:
    store = mr.MemoryStore()
    store.forget_for_user("u-ada", "home", at=t(5))
    old_evidence = _home(
        "summary",
        mr.SceneScope("conv-9", "s-2", user_id="u-ada"),
        valid_from=t(8),
        observed_at=t(2),
    )
    new_fact = _home("moved", mr.ConversationScope("conv-9", user_id="u-ada"), valid_from=t(6))
    store.add([old_evidence, new_fact])
    assert store.get("summary") is not None
    assert store.get("summary").value == ""  # type: ignore[union-attr]
    assert store.get("moved") == new_fact
    turn = mr.RetrievalContext(now=t(30), user_id="u-ada", conversation_id="conv-9", scene_id="s-2")
    explained = store.explain("summary", turn)
    assert explained.outcome is mr.Reason.FORGOTTEN
    assert [x.user_wide for x in explained.forgotten_by] == [True]
    assert [r.id for r in store.resolve(turn).active] == ["moved"]


def test_a_user_wide_and_a_plain_tombstone_of_one_scope_and_instant_are_two() -> None:
    store = mr.MemoryStore()
    store.forget("home", mr.UserScope("u-ada"), at=t(5))
    store.forget_for_user("u-ada", "home", at=t(5))
    assert sorted(tombstone.user_wide for tombstone in store.tombstones()) == [False, True]
    store.add([_home("rowan", ADA_OWNS[1])])
    assert store.get("rowan").value == ""  # type: ignore[union-attr]


def test_bad_arguments_write_nothing() -> None:
    store = mr.MemoryStore()
    arguments: tuple[tuple[object, object], ...] = (("", "home"), ("u-ada", ""), (None, "home"))
    for user, key in arguments:
        with pytest.raises(mr.InvalidInputError):
            store.forget_for_user(user, key, at=t(5))  # type: ignore[arg-type]
    with pytest.raises(mr.InvalidInputError) as raised:
        store.forget_for_user("u-ada", "home", at=t(5).replace(tzinfo=None))
    assert raised.value.field == "at"
    assert store.tombstones() == ()


def test_a_user_wide_tombstone_needs_a_user_scope_and_a_bool() -> None:
    with pytest.raises(mr.InvalidInputError) as raised:
        mr.ForgetTombstone(key="home", scope=ADA_OWNS[1], forgotten_at=t(5), user_wide=True)
    assert (raised.value.kind, raised.value.field) == (mr.ErrorKind.INCONSISTENT, "user_wide")
    with pytest.raises(mr.InvalidInputError) as raised:
        mr.ForgetTombstone(key="home", scope=ADA_OWNS[0], forgotten_at=t(5), user_wide=1)  # type: ignore[arg-type]
    assert (raised.value.kind, raised.value.field) == (mr.ErrorKind.WRONG_TYPE, "user_wide")


@settings(max_examples=150)
@given(scenarios(), st.data())
def test_the_store_answers_as_the_reference_after_a_forget_for_a_user(
    scenario: Scenario, data: st.DataObject
) -> None:
    assume(scenario.records)
    store = store_of(scenario.records, scenario.tombstones)
    target = data.draw(st.sampled_from(scenario.records))
    user = data.draw(
        st.sampled_from(
            [target.scope.user_id or scenario.context.user_id, scenario.context.user_id]
        )
    )
    at = scenario.context.now - timedelta(hours=data.draw(st.integers(-30, 30)))
    erased = store.forget_for_user(user, target.key, at=at)
    forget = mr.ForgetTombstone(
        key=target.key, scope=mr.UserScope(user), forgotten_at=at, user_wide=True
    )
    # The store's tombstones: the forget's, with its salt and the hashes of the messages
    # it erased, and the scenario's as the store stored them (drawn hashes are not
    # stored: a forget draws its own salt).
    tombstones = store.tombstones()
    (forget,) = [x for x in tombstones if _hashless(x) == forget]
    expected = reference.resolve(list(scenario.records), scenario.context, tombstones=tombstones)
    got = store.resolve(scenario.context)
    assert [r.id for r in got.active] == [r.id for r in expected.active]
    assert {e.id: e.reason for e in got.excluded} == {
        e.id: e.reason for e in expected.excluded if e.reason is not mr.Reason.SCOPE
    }
    # Exactly the user's records the tombstone blocks, and no other, lost their text now.
    blocked = {
        r.id
        for r in scenario.records
        if r.key == target.key
        and r.scope.user_id == user
        and reference.blocked_by_tombstone(r, (forget,))
        and store.get(r.id) is not None
    }
    assert set(erased) <= blocked
    for candidate in scenario.records:
        if candidate.id in blocked:
            assert store.get(candidate.id).value == ""  # type: ignore[union-attr]


def test_no_byte_of_the_forgotten_text_is_left_in_the_files(tmp_path: Path) -> None:
    """Many users' records (so that SQLite splits and rebuilds pages) around the user's
    records of the key, in every scope it owns; after the call, no file of the store holds
    the text."""
    path = tmp_path / "m.db"
    store = mr.MemoryStore(path)
    filler = [
        record(
            f"fill-{n:05d}",
            f"filler text {n} " * 4,
            key=f"k{n % 17}",
            scope=mr.UserScope(f"u-{n % 97}"),
        )
        for n in range(4000)
    ]
    mine = [_home(f"ada-{n}", ADA_OWNS[n % 4], valid_from=t(1 + n % 4)) for n in range(12)]
    for start in range(0, len(filler), 500):
        store.add(filler[start : start + 500])
        store.add(mine[start // 500 :: 8])
    assert CANARY.encode() in file_bytes(tmp_path)
    erased = store.forget_for_user("u-ada", "home", at=t(20))
    assert set(erased) == {r.id for r in mine}
    assert CANARY.encode() not in file_bytes(tmp_path)
    store.close()
    assert CANARY.encode() not in file_bytes(tmp_path)
    with mr.MemoryStore(path) as reopened:
        assert reopened.erase_user("u-ada").tombstones == 1
        assert reopened.tombstones() == ()


def test_a_version_4_file_keeps_its_tombstones_and_is_compacted(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    with mr.MemoryStore(path, shared_conversations=True) as store:
        store.add([_home("ada", ADA_OWNS[0])])
        store.forget("home", ADA_OWNS[2], at=t(5))
        store.forget("pet", ADA_OWNS[0], at=t(6), blocks_sources_before=t(4))
    connection = sqlite3.connect(path, isolation_level=None)
    # What version 4 held: its tombstones table, without user_wide, and no store_policy.
    connection.execute("DROP TABLE store_policy")
    connection.execute("ALTER TABLE tombstones RENAME TO t5")
    connection.execute("DROP INDEX tombstones_by_user")
    connection.execute(
        "CREATE TABLE tombstones (key TEXT NOT NULL, scope_kind TEXT NOT NULL, user_id TEXT, "
        "character_id TEXT, conversation_id TEXT, scene_id TEXT, scope_id TEXT NOT NULL, "
        "forgotten_at INTEGER NOT NULL, blocks_sources_before INTEGER NOT NULL, "
        "PRIMARY KEY (scope_id, key, forgotten_at, blocks_sources_before)) STRICT"
    )
    connection.execute("CREATE INDEX tombstones_by_user ON tombstones (user_id)")
    kept = ",".join(schema.TOMBSTONE_COLUMNS[: schema.TOMBSTONE_COLUMNS.index("user_wide")])
    connection.execute(f"INSERT INTO tombstones SELECT {kept} FROM t5")
    connection.execute("DROP TABLE t5")
    connection.execute("PRAGMA user_version = 4")
    connection.close()
    with mr.MemoryStore(path) as store:
        assert store.shared_conversations
        assert sorted((x.key, x.user_wide) for x in store.tombstones()) == [
            ("home", False),
            ("pet", False),
        ]
        assert store.forget_for_user("u-ada", "home", at=t(7)) == ("ada",)
        assert len(store.tombstones()) == 3
