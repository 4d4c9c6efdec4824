"""``MemoryStore``'s guarantees beyond its answers: what an erasure leaves in the file
(no text, no hash of it, even while another connection reads), schema migrations, every
write refusing bad input whole, asyncio twins that leave the event loop free, and writes
racing reads across threads and processes."""

from __future__ import annotations

import asyncio
import inspect
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import memresolve as mr
from memresolve._store import _core as _store_core
from memresolve._store import _migrations as migrations
from memresolve._store import _schema as schema
from store_cases import CONTEXT
from store_cases import file_bytes as _file_bytes
from store_cases import record as _record
from store_cases import t as _t

CANARY = "CANARY-51c2-private"


# -- erasure and the file ------------------------------------------------------------


def _open_read(path: Path, *, any_thread: bool = False) -> sqlite3.Connection:
    """A second connection inside a read transaction: it holds the file's snapshot (and so
    the WAL pages an erasure must wipe) until it commits or closes."""
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=not any_thread)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM records").fetchone()
    return reader


def test_an_erasure_an_open_read_holds_back_warns_and_is_wiped_when_the_read_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store_core, "WIPE_WAIT_SECONDS", 0.05)
    store = mr.MemoryStore(tmp_path / "m.db")
    store.add([_record("m1", CANARY)])
    reader = _open_read(tmp_path / "m.db")
    assert reader.execute("SELECT count(*) FROM records").fetchone() == (1,)
    with pytest.warns(mr.ErasureDelayedWarning) as warned:
        assert store.forget("pet.name", mr.UserScope("u1"), at=_t(5)) == ("m1",)
    assert CANARY not in str(warned[0].message)
    assert warned[0].filename == __file__  # the caller's line, not the store's
    # The read's snapshot still needs the text: it stays until the read ends.
    assert CANARY.encode() in _file_bytes(tmp_path)
    assert store.wipe() is False
    # A plain write retries the wipe without waiting for the read (which would stall it
    # for the whole wait, under the store's lock).
    monkeypatch.setattr(_store_core, "WIPE_WAIT_SECONDS", 30.0)
    started = time.monotonic()
    assert store.add([_record("m3", key="trip")]) == 1
    assert time.monotonic() - started < 10
    monkeypatch.setattr(_store_core, "WIPE_WAIT_SECONDS", 0.05)
    reader.execute("COMMIT")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.add([_record("m2", key="home")]) == 1  # the next write wipes it
    assert CANARY.encode() not in _file_bytes(tmp_path)
    assert store.wipe() is True
    reader.close()
    store.close()


def test_closing_wipes_what_a_read_held_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store_core, "WIPE_WAIT_SECONDS", 0.05)
    store = mr.MemoryStore(tmp_path / "m.db")
    store.add([_record("m1", CANARY, scope=mr.UserScope("u9"))])
    reader = _open_read(tmp_path / "m.db")
    with pytest.warns(mr.ErasureDelayedWarning) as warned:
        assert store.erase_user("u9") == mr.ErasedUser(records=1, tombstones=0)
    assert warned[0].filename == __file__
    reader.execute("COMMIT")
    reader.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.close()
    assert CANARY.encode() not in _file_bytes(tmp_path)


def test_a_store_closed_while_a_read_holds_erased_text_says_how_to_wipe_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store_core, "WIPE_WAIT_SECONDS", 0.05)
    store = mr.MemoryStore(tmp_path / "m.db")
    store.add([_record("m1", CANARY)])
    reader = _open_read(tmp_path / "m.db")
    with pytest.warns(mr.ErasureDelayedWarning) as warned:
        store.forget_everywhere("pet.name", CONTEXT, at=_t(5))
    assert warned[0].filename == __file__
    with pytest.warns(mr.ErasureDelayedWarning, match="open it again and call wipe") as warned:
        store.close()
    assert warned[0].filename == __file__
    with pytest.raises(mr.StoreClosedError):
        store.resolve(CONTEXT)  # closed, even though the wipe could not finish
    reader.execute("COMMIT")
    reader.close()
    again = mr.MemoryStore(tmp_path / "m.db")
    assert again.wipe() is True
    assert CANARY.encode() not in _file_bytes(tmp_path)
    again.close()


def test_an_erasure_waits_for_a_short_read_to_end(tmp_path: Path) -> None:
    store = mr.MemoryStore(tmp_path / "m.db")
    store.add([_record("m1", CANARY)])
    reader = _open_read(tmp_path / "m.db", any_thread=True)
    ending = threading.Timer(0.5, lambda: reader.execute("COMMIT"))
    ending.start()
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.forget("pet.name", mr.UserScope("u1"), at=_t(5)) == ("m1",)
    assert time.monotonic() - started >= 0.3, "the forget did not wait for the read"
    ending.join()
    assert CANARY.encode() not in _file_bytes(tmp_path)
    reader.close()
    store.close()


def test_an_erased_record_keeps_no_hash_of_its_text(tmp_path: Path) -> None:
    """A hash over the erased text would let anyone holding the file confirm a guess."""
    store = mr.MemoryStore(tmp_path / "m.db")
    guess = _record("m1", CANARY, source_message_ids=["msg-1"])
    store.add([guess])
    store.forget("pet.name", mr.UserScope("u1"), at=_t(5))
    # Blocked when added: stored erased from the start, with the same kind of hash.
    blocked = _record("m2", CANARY, valid_from=_t(2))
    store.add([blocked])
    store.close()
    raw = _file_bytes(tmp_path)
    for record in (guess, blocked):
        row = schema.record_row(record)
        assert row["content_hash"] not in raw
        assert schema.erased_hash(row) in raw
    assert CANARY.encode() not in raw


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_file_is_migrated_compacted_and_its_erased_hashes_replaced(
    tmp_path: Path, version: int
) -> None:
    """A file of schema version 1 or 2 (text beside every other field, in one table) is
    taken to the current version (text in ``record_text`` since 3), and compacted at once:
    the pages the migration freed held the old rows, and version 1 kept an erased record's
    text hash."""
    path = tmp_path / "old.db"
    connection = sqlite3.connect(path, isolation_level=None)
    migrations.create_version_1(connection)
    kept = schema.record_row(_record("kept", "Harbor"))
    erased = schema.record_row(_record("gone", CANARY, key="home"))
    text_hash = erased["content_hash"]
    # What versions 1 and 2 wrote for a forgotten record: the text gone, a hash kept
    # (of the text in version 1, of the public fields in version 2).
    erased.update(value="", source_message_ids="[]", erased=1)
    if version == 2:
        erased["content_hash"] = schema.erased_hash(erased)
    # What a record forgotten under version 2 left: its text in a page the deletion of its
    # old cell did not clear (a stale copy, as page rebuilds leave them).
    stale = schema.record_row(_record("stale", CANARY + "-stale", key="trip"))
    columns = migrations.VERSION_2_RECORD_COLUMNS
    connection.executemany(
        f"INSERT INTO records ({','.join(columns)}) VALUES ({','.join('?' * len(columns))})",
        [[row[c] for c in columns] for row in (kept, erased, stale)],
    )
    connection.execute("PRAGMA secure_delete = OFF")  # Debian's SQLite has it on by default
    connection.execute("DELETE FROM records WHERE id = 'stale'")
    connection.execute(f"PRAGMA user_version = {version}")
    connection.close()
    assert (CANARY + "-stale").encode() in _file_bytes(tmp_path)
    # Open throughout, having read in write-ahead-log mode: the stores that close are
    # then not the file's last connection, and SQLite does not checkpoint for them.
    idle = sqlite3.connect(path, isolation_level=None)
    idle.execute("PRAGMA journal_mode = WAL")
    idle.execute("SELECT count(*) FROM records").fetchone()
    # Opened by several processes at once: one migrates, the others find it done.
    opening = "import sys, memresolve as mr; mr.MemoryStore(sys.argv[1]).close()"
    children = [subprocess.Popen([sys.executable, "-c", opening, str(path)]) for _ in range(3)]
    assert [child.wait(timeout=60) for child in children] == [0, 0, 0]

    store = mr.MemoryStore(path)
    hashes = dict(
        store._core.file.connection.execute(
            "SELECT records.id, content_hash FROM records JOIN record_text USING (row)"
        ).fetchall()
    )
    assert hashes == {"kept": kept["content_hash"], "gone": schema.erased_hash(erased)}
    version_now = store._core.file.connection.execute("PRAGMA user_version").fetchone()[0]
    assert version_now == schema.SCHEMA_VERSION
    assert store.get("kept") == _record("kept", "Harbor")
    assert store.add([_record("gone", CANARY, key="home"), _record("kept", "Harbor")]) == 0
    with pytest.raises(mr.InvalidInputError):
        store.add([_record("gone", CANARY, key="elsewhere")])
    with pytest.raises(mr.InvalidInputError):
        store.add([_record("kept", "Marlowe")])
    raw = _file_bytes(tmp_path)
    assert text_hash not in raw
    assert CANARY.encode() not in raw  # the stale copy too: the migration compacted
    store.close()
    idle.close()


# -- bad input writes nothing ----------------------------------------------------------

NAIVE = datetime(2026, 7, 5)  # the bad input under test: no time zone

_BAD_WRITES: dict[str, Any] = {
    "forget, empty key": lambda s: s.forget("", mr.UserScope("u1"), at=_t(5)),
    "forget, a scope as text": lambda s: s.forget("pet.name", "user:u1", at=_t(5)),
    "forget, a naive instant": lambda s: s.forget("pet.name", mr.UserScope("u1"), at=NAIVE),
    "forget, a bound after the forget": lambda s: s.forget(
        "pet.name", mr.UserScope("u1"), at=_t(5), blocks_sources_before=_t(6)
    ),
    "forget_everywhere, no context": lambda s: s.forget_everywhere("pet.name", "u1", at=_t(5)),
    "forget_everywhere, a naive instant": lambda s: s.forget_everywhere(
        "pet.name", CONTEXT, at=NAIVE
    ),
    "forget_everywhere, empty key": lambda s: s.forget_everywhere("", CONTEXT, at=_t(5)),
    "erase_user, empty": lambda s: s.erase_user(""),
    "erase_user, not text": lambda s: s.erase_user(42),
    "normalize, naive": lambda s: s.normalize(NAIVE),
    "normalize, not an instant": lambda s: s.normalize("2026-07-05"),
    "add, a repeated id": lambda s: s.add([_record("n1"), _record("n1", "other")]),
    "add_arrow, a repeated id": lambda s: s.add_arrow(
        mr.records_to_arrow([_record("n1"), _record("n1", "other")])
    ),
    "add_arrow, not a table": lambda s: s.add_arrow([_record("n1")]),
    "add_arrow, a column missing": lambda s: s.add_arrow(
        mr.records_to_arrow([_record("n1")]).drop_columns(["key"])
    ),
}


@pytest.mark.parametrize("write", list(_BAD_WRITES), ids=list(_BAD_WRITES))
def test_every_write_refuses_bad_input_whole(tmp_path: Path, write: str) -> None:
    store = mr.MemoryStore(tmp_path / "m.db")
    store.add(
        [
            _record("m1", "Harbor"),
            _record("m2", "Marlowe", valid_from=_t(2), supersedes="m1"),
            _record("t1", "Lisbon", key="trip", valid_until=_t(3)),
        ]
    )
    store.forget("home", mr.UserScope("u1"), at=_t(4))
    before = ([r.to_dict() for r in store.records()], store.tombstones())
    answer = store.resolve(CONTEXT)
    with pytest.raises(mr.InvalidInputError):
        _BAD_WRITES[write](store)
    assert ([r.to_dict() for r in store.records()], store.tombstones()) == before
    assert store.resolve(CONTEXT) == answer
    reopened = mr.MemoryStore(tmp_path / "m.db")
    assert reopened.resolve(CONTEXT) == answer
    store.close()
    reopened.close()


# -- asyncio -----------------------------------------------------------------------------

_METHODS = (
    "add",
    "add_arrow",
    "forget",
    "forget_everywhere",
    "normalize",
    "erase_user",
    "resolve",
    "resolve_batch",
    "explain",
    "history",
    "get",
    "to_arrow",
    "wipe",
)


def test_every_call_has_an_asyncio_twin_that_answers_as_it_does() -> None:
    for name in _METHODS:
        twin = getattr(mr.MemoryStore, f"a{name}")
        assert inspect.iscoroutinefunction(twin), name
        # Made from its synchronous call, whose signature it shows.
        assert twin.__wrapped__ is getattr(mr.MemoryStore, name), name

    async def reads(store: mr.MemoryStore) -> tuple[object, ...]:
        contexts = mr.contexts_to_arrow([("turn", CONTEXT)])
        return (
            await store.aresolve(CONTEXT),
            await store.aresolve_batch(contexts, include_excluded=True),
            await store.aexplain("m1", CONTEXT),
            await store.ahistory("pet.name", mr.UserScope("u1"), CONTEXT),
            await store.aget("m2"),
            await store.ato_arrow(),
            await store.awipe(),
        )

    store = mr.MemoryStore()
    store.add(
        [_record("m1", "Harbor"), _record("m2", "Marlowe", valid_from=_t(2), supersedes="m1")]
    )
    contexts = mr.contexts_to_arrow([("turn", CONTEXT)])
    assert asyncio.run(reads(store)) == (
        store.resolve(CONTEXT),
        store.resolve_batch(contexts, include_excluded=True),
        store.explain("m1", CONTEXT),
        store.history("pet.name", mr.UserScope("u1"), CONTEXT),
        store.get("m2"),
        store.to_arrow(),
        True,
    )


def test_an_asyncio_write_leaves_the_event_loop_running() -> None:
    """The records are read on the thread that writes them: they wait until the event
    loop has run something else, which it can only do if the write does not block it."""

    def records(loop_ran: threading.Event, wait: float) -> Iterator[mr.MemoryRecord]:
        assert loop_ran.wait(timeout=wait), "the event loop was blocked by the write"
        yield _record("m1")

    async def write(asynchronously: bool, wait: float) -> int:
        loop_ran = threading.Event()
        store = mr.MemoryStore()
        if asynchronously:
            adding = asyncio.ensure_future(store.aadd(records(loop_ran, wait)))
        else:

            async def blocking() -> int:
                return store.add(records(loop_ran, wait))

            adding = asyncio.ensure_future(blocking())
        await asyncio.sleep(0)  # the write starts
        loop_ran.set()
        return await adding

    assert asyncio.run(write(asynchronously=True, wait=30)) == 1
    # The test can fail: a synchronous add in a coroutine holds the loop.
    with pytest.raises(AssertionError, match="blocked"):
        asyncio.run(write(asynchronously=False, wait=0.2))


# -- threads and processes ---------------------------------------------------------------


def test_forgets_and_erasures_are_never_seen_half_done(tmp_path: Path) -> None:
    """A writer adds pairs (a record and its correction), forgets each pair's key, and
    adds then erases another user's ten records; readers must see every write whole."""
    store = mr.MemoryStore(tmp_path / "m.db")
    other = mr.RetrievalContext(now=_t(30), user_id="u2", character_id="c1", conversation_id="k2")
    stop = threading.Event()
    failures: list[str] = []

    def write() -> None:
        try:
            for n in range(60):
                first = _record(f"a{n}", CANARY, key=f"k{n}")
                store.add([first, first.corrected(CANARY, at=_t(2), id=f"b{n}")])
                store.forget(f"k{n}", mr.UserScope("u1"), at=_t(5))
                if n % 10 == 0:
                    store.add(
                        [
                            _record(f"u2-{n}-{i}", scope=mr.UserScope("u2"), key=f"k{i}")
                            for i in range(10)
                        ]
                    )
                    store.erase_user("u2")
        finally:
            stop.set()

    def read() -> None:
        while not stop.is_set():
            failures.extend(_half_done(store.resolve(CONTEXT), store.resolve(other)))

    threads = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(2))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    final = store.resolve(CONTEXT)
    assert (final.active, final.trace.excluded_forgotten) == ((), 120)
    store.close()
    assert CANARY.encode() not in _file_bytes(tmp_path)


def _half_done(mine: mr.Resolution, theirs: mr.Resolution) -> list[str]:
    """What a reader would see of a write not seen whole: a pair is added whole and
    forgotten whole, its text never shows once forgotten, and the other user's ten
    records are all there or none."""
    seen = []
    if mine.trace.memory_candidates % 2 or mine.trace.excluded_forgotten % 2:
        seen.append(repr(mine.trace))
    if any(record.value == "" for record in mine.active):
        seen.append("an erased record won")
    if theirs.trace.memory_candidates not in (0, 10):
        seen.append(repr(theirs.trace))
    return seen


_FOLLOWER = textwrap.dedent(
    """
    import sys
    from datetime import datetime, timezone
    import memresolve as mr
    store = mr.MemoryStore(sys.argv[1])
    context = mr.RetrievalContext(now=datetime(2026, 7, 30, tzinfo=timezone.utc),
        user_id="u1", character_id="c1", conversation_id="k1")
    for line in sys.stdin:
        print(",".join(r.id for r in store.resolve(context).active) or "-", flush=True)
    """
)


def test_another_process_sees_each_commit_on_its_next_call(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = mr.MemoryStore(path)
    store.add([_record("m1", "Harbor")])
    follower = subprocess.Popen(
        [sys.executable, "-c", _FOLLOWER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follower.stdin is not None
    assert follower.stdout is not None

    def seen() -> str:
        assert follower.stdin is not None
        assert follower.stdout is not None
        follower.stdin.write("\n")
        follower.stdin.flush()
        return follower.stdout.readline().strip()

    try:
        assert seen() == "m1"
        assert seen() == "m1"  # served from the follower's memory
        store.add([_record("m2", "Marlowe", valid_from=_t(2), supersedes="m1")])
        assert seen() == "m2"
        store.forget("pet.name", mr.UserScope("u1"), at=_t(3))
        assert seen() == "-"
        store.add([_record("m3", "Max", valid_from=_t(4))])
        assert seen() == "m3"
        store.erase_user("u1")
        assert seen() == "-"
    finally:
        follower.stdin.close()
        assert follower.wait(timeout=60) == 0
        follower.stdout.close()
    store.close()


def test_a_row_edited_outside_the_store_is_refused_not_resolved(tmp_path: Path) -> None:
    store = mr.MemoryStore(tmp_path / "m.db")
    store.add([_record("m1", "Harbor")])
    store.close()
    editor = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    editor.execute("UPDATE records SET status = 'dormant', confidence = 2.0 WHERE id = 'm1'")
    editor.close()
    store = mr.MemoryStore(tmp_path / "m.db")
    with pytest.raises(mr.InvalidInputError) as raised:
        store.resolve(CONTEXT)
    assert (raised.value.record_id, raised.value.field) == ("m1", "status")
    store.close()


def test_a_retry_of_a_forgotten_record_with_a_negative_zero_confidence_is_a_retry(
    tmp_path: Path,
) -> None:
    """SQLite reads a stored -0.0 back as 0.0: the erased hash must not tell them apart."""
    record = _record("m1", CANARY, confidence=-0.0)
    store = mr.MemoryStore(tmp_path / "m.db")
    store.add([record])
    store.forget("pet.name", mr.UserScope("u1"), at=_t(5))
    assert store.add([record]) == 0
    store.close()
    reopened = mr.MemoryStore(tmp_path / "m.db")
    assert reopened.add([record]) == 0
    reopened.close()


def test_a_wipe_a_read_held_back_finishes_in_the_background_without_another_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process forgets while another connection reads, and dies before the read ends; a
    store opened meanwhile cannot wipe either (the read still holds the pages), and wipes
    on its own thread once the read ends: no call of the application is needed."""
    path = tmp_path / "m.db"
    with mr.MemoryStore(path) as store:
        store.add([_record("m1", CANARY)])
    reader = _open_read(path, any_thread=True)
    forgetting = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import os, signal, sys, warnings
                from datetime import UTC, datetime
                import memresolve as mr
                from memresolve._store import _core as _store_core
                _store_core.WIPE_WAIT_SECONDS = 0.05
                warnings.simplefilter("ignore")
                store = mr.MemoryStore(sys.argv[1])
                store.forget("pet.name", mr.UserScope("u1"),
                             at=datetime(2026, 7, 5, tzinfo=UTC))
                os.kill(os.getpid(), signal.SIGKILL)  # no close(): its retries die with it
                """
            ),
            str(path),
        ],
        check=False,
        timeout=60,
    )
    assert forgetting.returncode == -9
    assert CANARY.encode() in _file_bytes(tmp_path)
    opened = mr.MemoryStore(path)  # the pending wipe is in the file; the read blocks it
    assert CANARY.encode() in _file_bytes(tmp_path)
    reader.execute("COMMIT")
    deadline = time.monotonic() + 10
    while CANARY.encode() in _file_bytes(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert CANARY.encode() not in _file_bytes(tmp_path)
    assert opened.get("m1") == _record("m1", "", source_message_ids=[])
    reader.close()
    opened.close()


def _shared_record_superseding_ada() -> tuple[mr.MemoryRecord, mr.MemoryRecord]:
    """Ada's city, and a record of an unowned conversation (nobody's: erase_user keeps it)
    that supersedes it."""
    ada_city = _record("RID-ada-city-0001", "Lisbon", key="home.city", scope=mr.UserScope("u-ada"))
    shared = _record(
        "shared-city",
        "Porto",
        key="home.city",
        scope=mr.ConversationScope("k-shared"),
        valid_from=_t(2),
        supersedes=ada_city.id,
    )
    return ada_city, shared


@pytest.mark.parametrize("order", ["forget-then-erase", "erase-then-forget"])
def test_regression_a_kept_record_erased_after_its_edge_was_dropped_retries_as_first_added(
    tmp_path: Path, order: str
) -> None:
    """A kept record whose edge ``erase_user`` removed, and whose text a forget erased, is
    judged by the hash of its public fields as first added (``docs/store.md``, retries),
    whichever came first: a retry as first added is a no-op, and the record as the store
    now shows it (no edge) is ``duplicate-id``. The erasure after the removal hashed the
    edgeless row, so the retry as first added was refused and the edgeless one accepted."""
    ada_city, shared = _shared_record_superseding_ada()
    edgeless = mr.MemoryRecord.from_dict({**shared.to_dict(), "supersedes": None})
    with mr.MemoryStore(tmp_path / "m.db", shared_conversations=True) as store:
        store.add([ada_city, shared])

        def forget() -> None:
            erased = store.forget("home.city", mr.ConversationScope("k-shared"), at=_t(3))
            assert erased == ("shared-city",)

        def erase() -> None:
            assert store.erase_user("u-ada") == mr.ErasedUser(records=1, tombstones=0)

        for step in (forget, erase) if order == "forget-then-erase" else (erase, forget):
            step()
        assert store.get("shared-city") == mr.MemoryRecord.from_dict(
            {**edgeless.to_dict(), "value": "", "source_message_ids": ()}
        )
        assert store.add([shared]) == 0  # a retry as first added
        other_text = mr.MemoryRecord.from_dict({**shared.to_dict(), "value": "Braga"})
        assert store.add([other_text]) == 0  # erased: its text is no longer compared
        with pytest.raises(mr.InvalidInputError) as raised:
            store.add([edgeless])
        assert raised.value.kind is mr.ErrorKind.DUPLICATE_ID
    assert ada_city.id.encode() not in _file_bytes(tmp_path)


def test_a_version_3_file_is_migrated_to_keep_first_public_hashes(tmp_path: Path) -> None:
    """Version 4 adds ``records.public_hash``; a version 3 file keeps every row and answer."""
    path = tmp_path / "v3.db"
    records = [_record("a", "Harbor"), _record("b", "Porto", key="home", supersedes="a")]
    with mr.MemoryStore(path) as store:
        store.add(records)
        before = store.resolve(CONTEXT)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("ALTER TABLE records DROP COLUMN public_hash")
    connection.execute("DROP TABLE store_policy")  # version 5's
    connection.execute("PRAGMA user_version = 3")
    connection.close()
    with mr.MemoryStore(path) as store:
        file = store._core.file.connection
        assert file.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
        columns = [row[1] for row in file.execute("PRAGMA table_info(records)")]
        assert columns[-1] == "public_hash"
        assert (
            file.execute("SELECT count(*) FROM records WHERE public_hash IS NOT NULL").fetchone()[0]
            == 0
        )
        assert list(store.records()) == sorted(records, key=lambda record: record.id)
        assert store.resolve(CONTEXT) == before
        assert store.add(records) == 0


def test_regression_erase_user_leaves_no_id_of_its_records_in_a_kept_record(
    tmp_path: Path,
) -> None:
    """A record of an unowned conversation (kept: it is nobody's) superseded a record of the
    erased user; its ``supersedes`` kept that id in the file. The edge is dropped (it named
    nothing any more), and a retry of the kept record as first added is still a no-op."""
    path = tmp_path / "m.db"
    ada_city, shared = _shared_record_superseding_ada()
    with mr.MemoryStore(path, shared_conversations=True) as store:
        store.add([ada_city, shared])
        assert store.erase_user("u-ada") == mr.ErasedUser(records=1, tombstones=0)
        assert ada_city.id.encode() not in _file_bytes(tmp_path)
        kept = store.get("shared-city")
        assert kept is not None
        assert (kept.supersedes, kept.value) == (None, "Porto")
        assert store.add([shared]) == 0  # a retry, judged by the record as first added
        bob = mr.RetrievalContext(
            now=_t(30), user_id="u-bob", character_id="c1", conversation_id="k-shared"
        )
        assert [m.id for m in store.resolve(bob).active] == ["shared-city"]
    assert ada_city.id.encode() not in _file_bytes(tmp_path)
