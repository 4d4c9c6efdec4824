"""A forget blocks the messages the forgotten value came from (``docs/store.md``,
"Forgetting: the messages too"): every tombstone a forget stores gets a fresh salt and the
salted hashes of the messages cited by the records its time rule erased; records of the key
in a scope it reaches that cite one of them are erased too, whatever their times, and stored
``forgotten`` if they were ``active``. A late record the time rule blocks brings its
messages. The store's answer stays the reference's over every record it was given, with its
tombstones."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import pytest

import memresolve as mr
from memresolve import reference
from memresolve._store import _schema as schema
from store_cases import file_bytes, record, t

ADA = mr.UserScope("u-ada")
CHAT = mr.ConversationScope("conv-1", user_id="u-ada")
TURN = mr.RetrievalContext(now=t(30), user_id="u-ada", conversation_id="conv-1")
SECRET = "canary-5d1c-rua-augusta"


def _home(record_id: str, value: str = SECRET, **fields: object) -> mr.MemoryRecord:
    given: dict[str, object] = {"key": "home", "scope": ADA, "authority": "user-confirmed"}
    given.update(fields)
    return record(record_id, value, **given)


def _as_reference(
    store: mr.MemoryStore, records: Iterable[mr.MemoryRecord], context: mr.RetrievalContext
) -> None:
    """The store answers as the reference over every record it was given (as given, text
    and all), with the store's tombstones (salts and hashes), less scope exclusions."""
    expected = reference.resolve(list(records), context, tombstones=store.tombstones())
    got = store.resolve(context)
    assert [r.id for r in got.active] == [r.id for r in expected.active]
    assert {e.id: e.reason for e in got.excluded} == {
        e.id: e.reason for e in expected.excluded if e.reason is not mr.Reason.SCOPE
    }


def _hashes(tombstone: mr.ForgetTombstone, messages: Iterable[str]) -> frozenset[str]:
    assert tombstone.source_salt is not None
    return frozenset(mr.source_hash(tombstone.source_salt, m) for m in messages)


def test_a_summary_written_after_the_forget_from_the_same_message_stays_forgotten(
    tmp_path: Path,
) -> None:
    store = mr.MemoryStore(tmp_path / "m.db")
    told = _home("told", source_message_ids=["msg-1"])
    store.add([told])
    assert store.forget("home", ADA, at=t(5)) == ("told",)
    (tombstone,) = store.tombstones()
    assert tombstone.blocked_sources == _hashes(tombstone, ["msg-1"])
    # A summary job runs on day 9 over the old conversation; it gives no observed_at.
    summary = _home("summary", f"lives at {SECRET}", valid_from=t(9), source_message_ids=["msg-1"])
    assert store.add([summary]) == 1
    stored = store.get("summary")
    assert stored is not None
    assert (stored.value, stored.source_message_ids) == ("", ())
    assert stored.status is mr.Status.FORGOTTEN
    assert store.resolve(TURN).reason_for("summary") is mr.Reason.FORGOTTEN
    assert store.explain("summary", TURN).outcome is mr.Reason.FORGOTTEN
    _as_reference(store, [told, summary], TURN)
    assert store.add([summary]) == 0  # a retry as first added is a retry
    store.close()
    raw = file_bytes(tmp_path)
    assert SECRET.encode() not in raw
    assert b"msg-1" not in raw  # never in clear: not in the records, not in the tombstone


def test_a_record_added_before_the_forget_citing_the_message_is_erased_and_forgotten() -> None:
    store = mr.MemoryStore()
    told = _home("told", source_message_ids=["msg-1"])
    later = _home("later", valid_from=t(8), source_message_ids=["msg-1", "msg-7"])
    over = _home("over", valid_from=t(8), status="superseded", source_message_ids=["msg-1"])
    store.add([told, later, over])
    assert store.resolve(TURN).active[0].id == "later"  # warms the cache
    assert store.forget("home", ADA, at=t(5)) == ("later", "over", "told")
    held = {r.id: r for r in store.records()}
    assert {i: (r.value, r.status.value) for i, r in held.items()} == {
        "told": ("", "active"),  # the time rule's: excluded by the tombstone's bound
        "later": ("", "forgotten"),  # the message rule's: its messages are gone
        "over": ("", "superseded"),  # excluded at stage 2 whatever happens
    }
    # The warm context is not served stale.
    assert store.resolve(TURN).active == ()
    assert store.resolve(TURN).reason_for("later") is mr.Reason.FORGOTTEN
    _as_reference(store, [told, later, over], TURN)


def test_no_closure_a_message_rule_erasure_brings_no_messages() -> None:
    store = mr.MemoryStore()
    told = _home("told", source_message_ids=["msg-1"])
    summary = _home("summary", valid_from=t(8), source_message_ids=["msg-1", "msg-2"])
    other = _home("other", "elsewhere", valid_from=t(9), source_message_ids=["msg-2"])
    store.add([told, summary, other])
    assert store.forget("home", ADA, at=t(5)) == ("summary", "told")
    assert store.get("other") == other
    (tombstone,) = store.tombstones()
    assert tombstone.blocked_sources == _hashes(tombstone, ["msg-1"])
    _as_reference(store, [told, summary, other], TURN)


def test_a_fact_told_again_in_a_new_message_is_not_blocked() -> None:
    store = mr.MemoryStore()
    store.add([_home("told", source_message_ids=["msg-1"])])
    store.forget("home", ADA, at=t(5))
    again = _home("again", "Porto", valid_from=t(9), source_message_ids=["msg-9"])
    store.add([again])
    assert store.get("again") == again
    assert [r.id for r in store.resolve(TURN).active] == ["again"]


def test_a_forget_without_messages_still_draws_a_salt_and_a_retry_keeps_it() -> None:
    store = mr.MemoryStore()
    store.add([_home("told")])
    store.forget("home", ADA, at=t(5))
    (first,) = store.tombstones()
    assert first.source_salt is not None
    assert first.blocked_sources == frozenset()
    # A record the bound blocks arrives; the forget is then retried: one row, one salt.
    late = _home("late", valid_from=t(8), observed_at=t(3), source_message_ids=["msg-3"])
    store.add([late])
    assert store.forget("home", ADA, at=t(5)) == ()
    (again,) = store.tombstones()
    assert again.source_salt == first.source_salt
    assert again.blocked_sources == _hashes(first, ["msg-3"])
    # Another forget call is another tombstone, with a salt of its own.
    store.forget("home", ADA, at=t(6))
    salts = {x.source_salt for x in store.tombstones()}
    assert len(salts) == 2


def test_forget_everywhere_gives_each_tombstone_the_union_under_its_own_salt() -> None:
    store = mr.MemoryStore()
    in_profile = _home("profile", source_message_ids=["msg-1"])
    in_chat = _home("chat", scope=CHAT, source_message_ids=["msg-2"])
    # Cites the message of a record of another scope the call forgets: erased too.
    restated = _home("restated", scope=CHAT, valid_from=t(9), source_message_ids=["msg-1"])
    records = [in_profile, in_chat, restated]
    store.add(records)
    assert store.forget_everywhere("home", TURN, at=t(5)) == ("chat", "profile", "restated")
    stored = store.tombstones()
    assert len(stored) == 3  # the user's, the conversation unowned and owned
    assert len({x.source_salt for x in stored}) == 3
    for tombstone in stored:
        assert tombstone.blocked_sources == _hashes(tombstone, ["msg-1", "msg-2"])
    assert store.get("restated").status is mr.Status.FORGOTTEN  # type: ignore[union-attr]
    _as_reference(store, records, TURN)


def test_forget_for_user_blocks_the_messages_in_every_conversation_the_user_owns() -> None:
    store = mr.MemoryStore()
    first = _home("first", scope=CHAT, source_message_ids=["msg-1"])
    # Another conversation re-states it later from the same message; one of Bob's too.
    other_chat = mr.ConversationScope("conv-2", user_id="u-ada")
    restated = _home("restated", scope=other_chat, valid_from=t(9), source_message_ids=["msg-1"])
    bobs = _home("bobs", scope=mr.UserScope("u-bob"), valid_from=t(9), source_message_ids=["msg-1"])
    records = [first, restated, bobs]
    store.add(records)
    assert store.forget_for_user("u-ada", "home", at=t(5)) == ("first", "restated")
    assert store.get("bobs") == bobs
    # A third conversation, started after the forget, is reached too.
    third = _home(
        "third",
        scope=mr.ConversationScope("conv-3", user_id="u-ada"),
        valid_from=t(12),
        source_message_ids=["msg-1"],
    )
    store.add([third])
    assert store.get("third").status is mr.Status.FORGOTTEN  # type: ignore[union-attr]
    records.append(third)
    for conversation in ("conv-1", "conv-2", "conv-3"):
        turn = mr.RetrievalContext(now=t(30), user_id="u-ada", conversation_id=conversation)
        assert store.resolve(turn).active == ()
        _as_reference(store, records, turn)
    _as_reference(store, records, mr.RetrievalContext(now=t(30), user_id="u-bob"))


def test_a_late_record_the_bound_blocks_brings_its_messages() -> None:
    store = mr.MemoryStore()
    store.add([_home("told", source_message_ids=["msg-1"])])
    store.forget("home", ADA, at=t(5))
    # A record whose evidence is from before the forget, cited by a summary the store
    # already holds (written after the bound, from the same late-extracted message).
    summary = _home("summary", valid_from=t(10), source_message_ids=["msg-4"])
    store.add([summary])
    assert store.get("summary") == summary
    assert [r.id for r in store.resolve(TURN).active] == ["summary"]  # warm
    late = _home("late", valid_from=t(11), observed_at=t(2), source_message_ids=["msg-4", "msg-5"])
    # In the same batch, a record citing the late one's message, told after the bound.
    twin = _home("twin", valid_from=t(12), source_message_ids=["msg-5"])
    assert store.add([late, twin]) == 2
    held = {r.id: r for r in store.records()}
    assert {i: (r.value, r.status.value) for i, r in held.items()} == {
        "told": ("", "active"),
        "summary": ("", "forgotten"),
        "late": ("", "active"),
        "twin": ("", "forgotten"),
    }
    (tombstone,) = store.tombstones()
    assert tombstone.blocked_sources == _hashes(tombstone, ["msg-1", "msg-4", "msg-5"])
    assert store.resolve(TURN).active == ()  # the warm context is not served stale
    all_records = [_home("told", source_message_ids=["msg-1"]), summary, late, twin]
    _as_reference(store, all_records, TURN)


def test_an_observed_re_statement_is_forgotten() -> None:
    store = mr.MemoryStore()
    told = {"authority": "user-confirmed", "confidence": 1.0, "source_message_ids": ["msg-1"]}
    store.observe("home", SECRET, ADA, at=t(1), **told)  # type: ignore[arg-type]
    store.forget("home", ADA, at=t(5))
    observed = store.observe(
        "home",
        SECRET,
        ADA,
        at=t(9),
        authority="model-inferred",
        confidence=0.4,
        source_message_ids=["msg-1"],
    )
    assert observed.outcome is mr.ObserveOutcome.ADDED
    stored = store.get(observed.record.id)
    assert stored is not None
    assert stored.value == ""
    assert store.resolve(TURN).active == ()


def test_the_async_twins_block_the_messages_too() -> None:
    async def play(store: mr.MemoryStore) -> None:
        await store.aadd([_home("told", source_message_ids=["msg-1"])])
        assert await store.aforget_everywhere("home", TURN, at=t(5)) == ("told",)
        await store.aadd([_home("summary", valid_from=t(9), source_message_ids=["msg-1"])])
        assert (await store.aget("summary")).value == ""  # type: ignore[union-attr]
        assert (await store.aresolve(TURN)).active == ()
        assert await store.aforget_for_user("u-ada", "home", at=t(5)) == ()

    asyncio.run(play(mr.MemoryStore()))


def test_erase_user_leaves_no_hash_of_the_users_messages(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = mr.MemoryStore(path)
    store.add(
        [
            _home("profile", source_message_ids=["msg-ada-1"]),
            _home("chat", scope=CHAT, source_message_ids=["msg-ada-2"]),
            _home("bob", scope=mr.UserScope("u-bob"), source_message_ids=["msg-bob-1"]),
        ]
    )
    store.forget_everywhere("home", TURN, at=t(5))  # the unowned conv-1 gets the union too
    store.forget("home", mr.UserScope("u-bob"), at=t(5))
    ada_hashes = [
        h.encode()
        for x in store.tombstones()
        if x.source_salt is not None
        for h in _hashes(x, ["msg-ada-1", "msg-ada-2"]) & x.blocked_sources
    ]
    assert len(ada_hashes) == 6  # two messages under each of three salts
    (bobs,) = [x for x in store.tombstones() if x.scope.user_id == "u-bob"]
    assert store.erase_user("u-ada") == mr.ErasedUser(records=2, tombstones=2)
    raw = file_bytes(tmp_path)
    assert [h for h in ada_hashes if h in raw] == []
    # The unowned conversation's tombstone is kept (it is nobody's), its hashes emptied;
    # Bob's keeps his.
    kept = {x.scope: x for x in store.tombstones()}
    assert kept[mr.ConversationScope("conv-1")].blocked_sources == frozenset()
    assert kept[mr.UserScope("u-bob")] == bobs
    assert next(iter(bobs.blocked_sources)).encode() in raw
    store.close()


def _as_version_5(path: Path) -> None:
    """Makes a current store file what schema version 5 wrote: tombstones without a salt
    and hashes."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("ALTER TABLE tombstones DROP COLUMN source_salt")
    connection.execute("ALTER TABLE tombstones DROP COLUMN blocked_sources")
    connection.execute("PRAGMA user_version = 5")
    connection.close()


def test_a_version_5_file_is_migrated_with_tombstones_that_block_by_their_bound(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v5.db"
    told = _home("told", source_message_ids=["msg-1"])
    with mr.MemoryStore(path) as store:
        store.add([told])
        store.forget("home", ADA, at=t(5))
        store.forget_for_user("u-ada", "pet", at=t(6))
    _as_version_5(path)
    with mr.MemoryStore(path) as store:
        assert sorted((x.key, x.source_salt, x.blocked_sources) for x in store.tombstones()) == [
            ("home", None, frozenset()),
            ("pet", None, frozenset()),
        ]
        # The message of the record erased before the migration is gone: not blocked.
        summary = _home("summary", valid_from=t(9), source_message_ids=["msg-1"])
        store.add([summary])
        assert store.get("summary") == summary
        # A late record the bound blocks brings its messages: a salt is drawn for them.
        late = _home("late", valid_from=t(10), observed_at=t(2), source_message_ids=["msg-1"])
        store.add([late])
        (home,) = [x for x in store.tombstones() if x.key == "home"]
        assert home.blocked_sources == _hashes(home, ["msg-1"])
        assert store.get("summary").status is mr.Status.FORGOTTEN  # type: ignore[union-attr]
        _as_reference(store, [told, summary, late], TURN)
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION == 6
    columns = [row[1] for row in connection.execute("PRAGMA table_info(tombstones)")]
    assert columns[-2:] == ["source_salt", "blocked_sources"]
    connection.close()


def test_a_stored_tombstone_row_edited_outside_the_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with mr.MemoryStore(path) as store:
        store.add([_home("told", source_message_ids=["msg-1"])])
        store.forget("home", ADA, at=t(5))
    for edit in ("blocked_sources = '{'", "blocked_sources = '[\"msg-1\"]'", "source_salt = NULL"):
        connection = sqlite3.connect(path, isolation_level=None)
        before = connection.execute(
            "SELECT source_salt, blocked_sources FROM tombstones"
        ).fetchone()
        connection.execute(f"UPDATE tombstones SET {edit}")
        connection.close()
        with mr.MemoryStore(path) as store, pytest.raises(mr.InvalidInputError):
            store.tombstones()
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("UPDATE tombstones SET source_salt = ?, blocked_sources = ?", before)
        connection.close()


def test_the_stored_tombstones_carry_their_hashes_to_every_reader() -> None:
    store = mr.MemoryStore()
    store.add([_home("told", source_message_ids=["msg-1"])])
    store.forget("home", ADA, at=t(5))
    (tombstone,) = store.tombstones()
    assert tombstone.blocked_sources
    assert store.explain("told", TURN).forgotten_by == (tombstone,)
    assert store.export_arrow().tombstones.num_rows == 1
