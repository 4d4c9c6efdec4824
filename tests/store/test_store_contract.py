"""``MemoryStore`` inside the error contract (``docs/errors.md``), on files as they are in
production: full, failing, locked by a long write elsewhere, damaged, closed; its files'
modes; what a store in memory leaves (nothing); interrupts and cancelled awaits."""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memresolve as mr
from memresolve._store import _file as _store_file
from memresolve._store._file import StoreFile
from small_disk import on_a_small_file_system
from store_cases import CONTEXT
from store_cases import file_bytes as _file_bytes
from store_cases import record as _record
from store_cases import t as _t

CANARY = "CANARY-contract-9c1e"


def _run(code: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        **kwargs,
    )


# -- a full disk, a failing one ---------------------------------------------------------


def test_a_full_disk_is_enospc_and_writes_nothing() -> None:
    done = on_a_small_file_system(
        f"""
        import errno
        from datetime import UTC, datetime
        import memresolve as mr

        def record(n):
            return mr.MemoryRecord(
                id=f"m{{n}}", key=f"k{{n}}", value="{CANARY}" + "x" * 20_000,
                scope=mr.UserScope("u"), authority="model-inferred", confidence=0.5,
                valid_from=datetime(2026, 7, 1, tzinfo=UTC))

        store = mr.MemoryStore("/mnt/small/m.db")
        added = 0
        for n in range(1_000):
            try:
                store.add([record(n)])
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
                assert "full" in str(error)
                break
            added += 1
        else:
            raise AssertionError("the disk never filled")
        assert len(store) == added > 0  # nothing half-written, the rest still readable
        assert store.get(f"m{{added}}") is None
        context = mr.RetrievalContext(
            now=datetime(2026, 7, 30, tzinfo=UTC), user_id="u", character_id="c",
            conversation_id="k")
        assert len(store.resolve(context).active) == added
        print("full after", added)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "full after" in done.stdout


def test_an_io_error_is_eio() -> None:
    """A write the operating system refuses (here past a file-size limit) is
    ``OSError(EIO)``: SQLite gives no errno, and a program reacts to EIO as to any file's."""
    done = _run(
        f"""
        import errno, resource, tempfile
        from datetime import UTC, datetime
        import memresolve as mr

        path = tempfile.mkdtemp() + "/m.db"
        store = mr.MemoryStore(path)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        try:
            for n in range(100):
                store.add([mr.MemoryRecord(
                    id=f"m{{n}}", key=f"k{{n}}", value="{CANARY}" + "x" * 20_000,
                    scope=mr.UserScope("u"), authority="model-inferred", confidence=0.5,
                    valid_from=datetime(2026, 7, 1, tzinfo=UTC))])
        except OSError as error:
            assert error.errno in (errno.EIO, errno.ENOSPC), error
            print("refused", errno.errorcode[error.errno])
        else:
            raise AssertionError("the limit was never reached")
        """
    )
    assert done.returncode == 0, done.stderr
    assert "refused" in done.stdout


# -- locks ---------------------------------------------------------------------------------


def _hold_the_write_lock(path: Path) -> subprocess.Popen[str]:
    """Another process in a long write: it holds the file's write lock until killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sqlite3, sys, time
                connection = sqlite3.connect(sys.argv[1], isolation_level=None)
                connection.execute("BEGIN IMMEDIATE")
                connection.execute("UPDATE erasures SET committed = committed")
                print("holding", flush=True)
                time.sleep(600)
                """
            ),
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "holding"
    return holder


def test_a_long_write_elsewhere_never_stops_an_open_and_a_write_is_store_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a healthy store takes no write lock (it used to, and then called the file
    "not a memresolve store" after 30 s); a write that cannot get the lock in time is
    ``StoreBusyError`` and writes nothing."""
    path = tmp_path / "m.db"
    with mr.MemoryStore(path) as store:
        store.add([_record("m1", "Rex")])
    holder = _hold_the_write_lock(path)
    try:
        monkeypatch.setattr(_store_file, "BUSY_SECONDS", 0.3)
        started = time.monotonic()
        store = mr.MemoryStore(path)
        assert time.monotonic() - started < 0.3
        assert [m.value for m in store.resolve(CONTEXT).active] == ["Rex"]
        with pytest.raises(mr.StoreBusyError) as raised:
            store.add([_record("m2", "Max", key="other")])
        assert raised.value.path == str(path)
        assert isinstance(raised.value, mr.MemresolveError)
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert store.get("m2") is None
    assert store.add([_record("m2", "Max", key="other")]) == 1
    store.close()


# -- damaged, closed, not a file ----------------------------------------------------------


def _damage(path: Path) -> None:
    """Breaks the header of every b-tree page but the first: SQLite reads any of them as
    corrupt."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for start in range(page, len(data), page):
        data[start] = 0x42  # not a page type
    path.write_bytes(bytes(data))


def _store_calls(store: mr.MemoryStore) -> dict[str, Callable[[], object]]:
    """A call of every public method with valid arguments."""
    contexts = mr.contexts_to_arrow([("c1", CONTEXT)])
    return {
        "add": lambda: store.add([_record("n1", "new", key="new")]),
        "add_arrow": lambda: store.add_arrow(mr.records_to_arrow([_record("n2", key="n")])),
        "forget": lambda: store.forget("pet.name", mr.UserScope("u1"), at=_t(5)),
        "forget_everywhere": lambda: store.forget_everywhere("pet.name", CONTEXT, at=_t(5)),
        "normalize": lambda: store.normalize(_t(20)),
        "erase_user": lambda: store.erase_user("u1"),
        "wipe": store.wipe,
        "resolve": lambda: store.resolve(CONTEXT),
        "explain": lambda: store.explain("m1", CONTEXT),
        "history": lambda: store.history("pet.name", mr.UserScope("u1"), CONTEXT),
        "get": lambda: store.get("m1"),
        "len": lambda: len(store),
        "records": lambda: list(store.records()),
        "tombstones": store.tombstones,
        "to_arrow": store.to_arrow,
        "export_arrow": store.export_arrow,
        "resolve_batch": lambda: store.resolve_batch(contexts),
        "aresolve": lambda: asyncio.run(store.aresolve(CONTEXT)),
        "aadd": lambda: asyncio.run(store.aadd([_record("n3", key="n3")])),
    }


def test_a_damaged_file_is_one_named_error_on_every_call(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with mr.MemoryStore(path) as store:
        store.add([_record(f"m{n}", "Rex", key=f"k{n}") for n in range(300)])
    store = mr.MemoryStore(path)  # opened healthy; the file is damaged under it
    _damage(path)
    failures: dict[str, str] = {}
    for name, call in _store_calls(store).items():
        try:
            call()
        except mr.StoreDamagedError as error:
            if error.path != str(path):
                failures[name] = f"names {error.path}"
            continue
        except Exception as error:
            failures[name] = f"{type(error).__name__}: {error}"
            continue
        if name != "wipe":  # nothing was left to finish: it reads no page
            failures[name] = "no error"
    assert not failures, failures
    with pytest.raises(mr.StoreDamagedError):  # at open too
        mr.MemoryStore(path).resolve(CONTEXT)


def test_every_call_on_a_closed_store_is_store_closed_error(tmp_path: Path) -> None:
    for where in (tmp_path / "m.db", None):
        store = mr.MemoryStore(where)
        store.add([_record("m1", "Rex")])
        store.close()
        store.close()  # closing again does nothing
        for name, call in _store_calls(store).items():
            with pytest.raises(mr.StoreClosedError):
                call()
            assert name


def test_a_store_closed_by_another_thread_mid_call_is_store_closed_error(
    tmp_path: Path,
) -> None:
    store = mr.MemoryStore(tmp_path / "m.db")
    store.add([_record("m1", "Rex")])
    core = store._core
    with core.lock:  # a call waits for the lock while another thread closes the store
        waiting = concurrent.futures.ThreadPoolExecutor(1).submit(store.get, "m1")
        time.sleep(0.1)
        core.file.closed = True
        core.file.connection.close()
    with pytest.raises(mr.StoreClosedError):
        waiting.result(timeout=10)


def test_a_directory_as_path_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError) as raised:
        mr.MemoryStore(tmp_path)
    assert raised.value.errno == errno.EISDIR


def test_a_sqlite_file_that_is_not_a_store_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE mine (x)")
    connection.commit()
    connection.close()
    before = path.read_bytes()
    with pytest.raises(mr.InvalidInputError) as raised:
        mr.MemoryStore(path)
    assert (raised.value.kind, raised.value.field) == (mr.ErrorKind.MALFORMED, "path")
    assert path.read_bytes() == before


# -- files and modes ------------------------------------------------------------------------


def test_memory_names_a_store_in_memory_and_creates_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = mr.MemoryStore(":memory:")
    store.add([_record("m1", "Rex")])
    assert [m.value for m in store.resolve(CONTEXT).active] == ["Rex"]
    assert repr(store) == "MemoryStore('memory')"
    store.close()
    assert list(tmp_path.iterdir()) == []


def test_a_dangling_symlink_gets_a_private_target(tmp_path: Path) -> None:
    target = tmp_path / "data" / "m.db"
    target.parent.mkdir()
    link = tmp_path / "link.db"
    link.symlink_to(target)
    old_umask = os.umask(0o022)
    try:
        store = mr.MemoryStore(link)
        store.add([_record("m1", "Rex")])
        created = sorted(target.parent.iterdir())
        assert [p.name for p in created] == ["m.db", "m.db-shm", "m.db-wal"]
        for path in created:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        store.close()
    finally:
        os.umask(old_umask)


# -- interrupts and cancellation --------------------------------------------------------


def test_an_interrupt_after_an_erasure_committed_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    store = mr.MemoryStore(path)
    store.add([_record("m1", CANARY)])

    def interrupted(self: StoreFile, wait: float, *, compact: bool) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(StoreFile, "finish", interrupted)
        with pytest.raises(KeyboardInterrupt) as raised:
            store.forget("pet.name", mr.UserScope("u1"), at=_t(5))
    assert any("committed" in note for note in raised.value.__notes__)
    assert store.get("m1") == _record("m1", "", source_message_ids=[])  # it did commit
    store.close()  # and close() finished the wipe the interrupt cut short
    assert CANARY.encode() not in _file_bytes(tmp_path)


def test_regression_a_process_killed_between_an_erasure_and_its_wipe_is_wiped_at_open(
    tmp_path: Path,
) -> None:
    """The pending wipe lived only in the dead process: nothing ever wiped the text again.
    Killed (SIGKILL) right after the forget's commit, before its checkpoint: the text is
    still in the log; the next open, alone, with no other call, wipes it."""
    path = tmp_path / "m.db"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import os, signal, sys
                from datetime import UTC, datetime
                import memresolve as mr
                from memresolve._store._file import StoreFile

                store = mr.MemoryStore(sys.argv[1])
                store.add([mr.MemoryRecord(
                    id="m1", key="pet.name", value="{CANARY}", scope=mr.UserScope("u1"),
                    authority="model-inferred", confidence=0.5,
                    valid_from=datetime(2026, 7, 1, tzinfo=UTC))])
                def killed(self, wait, *, compact):  # committed: die before the wipe
                    os.kill(os.getpid(), signal.SIGKILL)
                StoreFile.finish = killed
                store.forget("pet.name", mr.UserScope("u1"),
                             at=datetime(2026, 7, 5, tzinfo=UTC))
                """
            ),
            str(path),
        ],
        check=False,
        timeout=60,
    )
    assert done.returncode == -9
    assert CANARY.encode() in _file_bytes(tmp_path)  # committed, not wiped: the crash's state
    reopened = mr.MemoryStore(path)
    assert CANARY.encode() not in _file_bytes(tmp_path)  # before any other call
    assert reopened.get("m1") == _record("m1", "", source_message_ids=[])
    reopened.close()


def test_a_cancelled_await_never_leaves_a_write_in_flight() -> None:
    """Cancelled while its worker runs, a write ends (commits) before the cancellation
    reaches the caller; cancelled before its worker started, it never runs."""
    store = mr.MemoryStore()

    async def cancel_while_running() -> None:
        held, release = threading.Event(), threading.Event()

        def hold_the_store() -> None:  # the worker will wait for the store inside the call
            with store._core.lock:
                held.set()
                release.wait()

        holder = threading.Thread(target=hold_the_store)
        holder.start()
        held.wait()
        task = asyncio.create_task(store.aadd([_record("m1", "Rex")]))
        await asyncio.sleep(0.1)
        task.cancel()
        threading.Timer(0.3, release.set).start()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - started >= 0.2, "the cancellation did not wait for the write"
        assert store.get("m1") is not None  # it ran to its end: committed
        holder.join()

    async def cancel_while_queued() -> None:
        loop = asyncio.get_running_loop()
        executor = concurrent.futures.ThreadPoolExecutor(1)
        loop.set_default_executor(executor)
        gate = threading.Event()
        blocker = loop.run_in_executor(None, gate.wait)
        task = asyncio.create_task(store.aadd([_record("m2", "Max", key="other")]))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.set()
        await blocker
        await loop.run_in_executor(None, lambda: None)  # the queued call has had its turn
        assert store.get("m2") is None  # it never ran

    asyncio.run(cancel_while_running())
    asyncio.run(cancel_while_queued())
    store.close()


def test_an_older_sqlite_than_the_erasure_was_tested_on_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The erasure relies on STRICT tables and on SQLite writing a same-length row over its
    cell (``tests/store/test_store_residue.py`` pins it): an older SQLite is refused by name."""
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 36, 0))
    with pytest.raises(mr.StoreError, match=r"needs SQLite 3\.37\.0 or later"):
        mr.MemoryStore(tmp_path / "m.db")
    assert not (tmp_path / "m.db").exists()


def test_an_erasure_a_full_disk_holds_back_says_so_and_finishes_once_there_is_room() -> None:
    """The forget commits (its log frames fit) but copying the log into the file needs room
    the disk lacks: the warning names the full disk (it blamed "another connection"), and a
    wipe once there is room finishes it."""
    done = on_a_small_file_system(
        f"""
        import os, warnings
        from datetime import UTC, datetime
        import memresolve as mr

        def record(n, value):
            return mr.MemoryRecord(
                id=f"m{{n}}", key=f"k{{n % 7}}", value=value, scope=mr.UserScope("u"),
                authority="model-inferred", confidence=0.5,
                valid_from=datetime(2026, 7, 1, tzinfo=UTC))

        store = mr.MemoryStore("/mnt/small/m.db")
        # About 2 MB in the log, not yet copied into the file (under SQLite's 1,000 pages).
        store.add([record(n, "{CANARY}" + "x" * 3_000) for n in range(600)])
        filler = os.open("/mnt/small/filler", os.O_CREAT | os.O_WRONLY, 0o600)
        try:
            while True:
                os.write(filler, bytes(65_536))
        except OSError:
            pass
        os.ftruncate(filler, os.fstat(filler).st_size - 1_000_000)  # leave about 1 MB
        os.close(filler)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            erased = store.forget("k0", mr.UserScope("u"),
                                  at=datetime(2026, 7, 5, tzinfo=UTC))
        assert erased, "the forget committed"
        messages = [str(w.message) for w in caught if w.category is mr.ErasureDelayedWarning]
        assert messages and "the disk is full" in messages[0], messages
        assert "another connection" not in messages[0]
        os.remove("/mnt/small/filler")
        assert store.wipe() is True
        raw = b"".join(open(p, "rb").read() for p in
                       ("/mnt/small/m.db", "/mnt/small/m.db-wal") if os.path.exists(p))
        kept = raw.count(b"{CANARY}")
        assert kept == 600 - len(erased), (kept, len(erased))
        store.close()
        print("ok")
        """,
        size="8m",
    )
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout
