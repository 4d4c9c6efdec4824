"""The SQLite file under a ``MemoryStore``: opening it, its transactions, and finishing
what its erasures leave to do.

An erasure is committed in one transaction; what it erased then still sits in two
places until the store finishes it:

- the write-ahead log, and the pages of the database file the log has not yet been
  copied over: a **wipe** (a ``TRUNCATE`` checkpoint) copies the log into the file and
  empties it. Every erasure needs one; a read of an older snapshot, open in another
  connection, holds it back until the read ends.
- for ``erase_user`` (and a migration), which delete or move rows: the stale cell
  bytes SQLite leaves in the pages it rebuilds. A **compaction** (``VACUUM``) rewrites
  the whole file: O(store) time, about the file's size in memory (temporary tables
  are kept in memory, never in a temporary file) and the file's size again in its log.

What is left to do is kept in the file (the ``erasures`` row), set in the erasing
transaction: counts of erasures committed, wiped, deleting rows and compacted. A crash
at any point leaves the counts behind, and whichever store next opens the file, writes
to it, or is asked to ``wipe()`` finishes it; a store also retries a wipe a read held
back on a thread of its own until it succeeds (``_wiper``). What a store has
finished is written to the file with its next write (or at open and close, if it can
take the write lock without waiting), not in a transaction of its own: a finished
erasure that is not yet recorded costs the next opener one checkpoint, not a wrong
promise.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memresolve._store import _errors as errors
from memresolve._store import _migrations as migrations
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve.errors import (
    ErrorKind,
    InvalidInputError,
    MemresolveError,
    StoreDamagedError,
    StoreError,
)

__all__ = ["BUSY_SECONDS", "MIN_SQLITE", "Erasures", "StoreFile", "private_path"]

#: How long a call waits for a lock another connection holds.
BUSY_SECONDS: Final = 30.0
#: The oldest SQLite the store's erasure is tested on: ``STRICT`` tables (3.37), and a
#: same-length row update written over its cell in place (``btreeOverwriteCell``, 3.23),
#: which ``tests/store/test_store_residue.py`` pins.
MIN_SQLITE: Final = (3, 37, 0)
#: What ``sqlite_schema`` lists for a file that holds a store.
_TABLES: Final = frozenset({"records", "record_text", "tombstones", "erasures", "store_policy"})
#: What it lists for a store of an older schema version.
_VERSION_1_TABLES: Final = frozenset({"records", "tombstones"})


@dataclass(frozen=True, slots=True)
class Erasures:
    """The erasures' durable state: how many were committed, and of them how many are
    known wiped; how many deleted rows, and of them how many are compacted."""

    committed: int
    wiped: int
    deleting: int
    compacted: int

    @property
    def unwiped(self) -> bool:
        return self.committed > self.wiped

    @property
    def uncompacted(self) -> bool:
        return self.deleting > self.compacted


def private_path(path: Path) -> Path:
    """The file ``path`` names (symlinks followed), created readable and writable by its
    owner only if it does not exist. SQLite gives its log and shared-memory index the
    database file's mode."""
    real = Path(os.path.realpath(path))
    try:
        descriptor = os.open(real, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return real
    os.close(descriptor)
    return real


class StoreFile:
    """One connection to a store's file (or to a store in memory, ``path`` None), and what
    its erasures leave to do. Not thread safe: the store's ``lock`` guards every call."""

    def __init__(
        self, path: Path | None, lock: threading.RLock, *, shared_conversations: bool | None
    ) -> None:
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            needed = ".".join(map(str, MIN_SQLITE))
            raise StoreError(
                f"store: needs SQLite {needed} or later; this Python's is {sqlite3.sqlite_version}"
            )
        self.path = None if path is None else private_path(path)
        self.lock = lock
        self.closed = False
        # Erasures this store finished (wiped; compacted) whose state the file does not
        # say yet: written by the next write transaction.
        self._finished = (0, 0)
        # Erasures that deleted rows whose compaction this store ran (finished once a
        # checkpoint has copied it into the file).
        self._vacuumed = 0
        # Whether the file was migrated by this open (and so needs compacting at once).
        self.migrated = False
        # Asked for by the caller (None: whatever the file says; a new file refuses).
        self._asked_shared = shared_conversations
        #: Whether records may have unowned conversation and scene scopes: the file's
        #: policy, fixed at its creation (read once: nothing changes it).
        self.shared_conversations = False
        self.connection = self._connect()

    # -- opening ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        target = ":memory:" if self.path is None else str(self.path)
        with errors.translating(self.path):
            connection = sqlite3.connect(
                target, isolation_level=None, check_same_thread=False, timeout=BUSY_SECONDS
            )
        connection.row_factory = sqlite3.Row
        try:
            connection.execute("PRAGMA secure_delete = ON")
            # Sorts and temporary tables (a VACUUM's copy of the file among them) in
            # memory: a temporary file would hold private text out of the store's reach.
            connection.execute("PRAGMA temp_store = MEMORY")
            connection.execute("PRAGMA synchronous = FULL")
            self._check_schema(connection)
        except sqlite3.DatabaseError as error:
            connection.close()
            if getattr(error, "sqlite_errorcode", None) == 26:  # SQLITE_NOTADB
                raise self._not_a_store(str(error)) from None
            raise errors.translated(error, self.path) from error
        except BaseException:
            connection.close()
            raise
        return connection

    def _not_a_store(self, why: str) -> InvalidInputError:
        target = str(self.path)
        return InvalidInputError(
            f"store: {target} is not a memresolve store ({why})",
            kind=ErrorKind.MALFORMED,
            field="path",
            file=target,
        )

    def _check_schema(self, connection: sqlite3.Connection) -> None:
        """Checks the file holds a store of this schema, migrating it (under the write
        lock) only when it must: a healthy store opens while another connection writes."""
        version = self._version(connection)
        if version == 0 and self._table_names(connection):
            # Another connection may have created the store between the two reads.
            version = self._version(connection)
            if version == 0:
                raise self._not_a_store("it holds tables of its own")
        # Whose file it is, and its policy, before anything changes it (write-ahead log
        # mode included).
        if version == schema.SCHEMA_VERSION:
            self._check_tables(connection, _TABLES)
            self._check_policy(connection)
        elif version > 0:
            self._check_tables(connection, _VERSION_1_TABLES)
            # A store of an older version keeps sharing conversations (the migration
            # says so): refused before the migration changes the file.
            self._check_policy(connection, stored=True)
        if self.path is not None:
            connection.execute("PRAGMA journal_mode = WAL")
        if version == schema.SCHEMA_VERSION:
            return
        connection.execute("BEGIN IMMEDIATE")
        try:
            version = self._version(connection)
            if version == 0 and self._table_names(connection):
                raise self._not_a_store("it holds tables of its own")
            if version < schema.SCHEMA_VERSION:
                self.migrated = migrations.migrate(
                    connection, version, shared_conversations=bool(self._asked_shared)
                )
                connection.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        # Another connection may have created the file, with its policy, meanwhile.
        self._check_policy(connection)

    def _check_policy(self, connection: sqlite3.Connection, stored: bool | None = None) -> None:
        """Reads the file's owners' policy (unless given), refusing a caller who asked
        for the other one: a store's policy is fixed at its creation."""
        if stored is None:
            row = connection.execute("SELECT shared_conversations FROM store_policy").fetchone()
            if row is None:
                raise StoreDamagedError(f"store: {self.path} has lost its owners' policy")
            stored = bool(row[0])
        asked = self._asked_shared
        if asked is not None and asked != stored:
            where = "in memory" if self.path is None else str(self.path)
            raise InvalidInputError(
                f"store: field 'shared_conversations' is {asked}, but the store {where} "
                f"has shared_conversations={stored}: a store's owners' policy is fixed "
                "when it is created, and a store older than the policy shares "
                '(docs/store.md, "Owners"); leave the argument out to open it as it is',
                kind=ErrorKind.INCONSISTENT,
                field="shared_conversations",
                file=None if self.path is None else str(self.path),
            )
        self.shared_conversations = stored

    def _version(self, connection: sqlite3.Connection) -> int:
        version: int = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > schema.SCHEMA_VERSION:
            raise MemresolveError(
                f"store: {self.path} has schema version {version}; this memresolve "
                f"reads versions up to {schema.SCHEMA_VERSION}: upgrade memresolve"
            )
        return version

    def _table_names(self, connection: sqlite3.Connection) -> set[str]:
        rows = connection.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
        return {row[0] for row in rows}

    def _check_tables(self, connection: sqlite3.Connection, tables: frozenset[str]) -> None:
        missing = tables - self._table_names(connection)
        if missing:
            raise self._not_a_store(f"it lacks the tables {', '.join(sorted(missing))}")

    def close(self) -> None:
        self.closed = True
        self.connection.close()

    # -- transactions ------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every statement inside sees the same committed state."""
        connection = self.connection
        connection.execute("BEGIN")
        try:
            yield connection
        except BaseException:
            with suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def data_version(self) -> int:
        """SQLite's ``data_version``: it changes when another connection commits. Inside a
        read transaction, reading it also starts the transaction's snapshot."""
        value: int = self.connection.execute("PRAGMA data_version").fetchone()[0]
        return value

    def erasures(self) -> Erasures:
        """The erasures' state: the file's, with what this store has finished since."""
        committed, wiped, deleting, compacted = self.connection.execute(
            "SELECT committed, wiped, deleting, compacted FROM erasures"
        ).fetchone()
        return Erasures(
            committed,
            max(wiped, self._finished[0]),
            deleting,
            max(compacted, self._finished[1]),
        )

    def note_erasure(self, connection: sqlite3.Connection, *, deleting: bool) -> None:
        """Records, inside the erasing transaction, that an erasure is to be finished."""
        connection.execute(
            "UPDATE erasures SET committed = committed + 1, deleting = deleting + ?",
            (int(deleting),),
        )

    def record_finished(self, connection: sqlite3.Connection) -> Erasures:
        """Inside a write transaction: writes what this store has finished since, and
        returns the state the transaction leaves."""
        wiped, compacted = self._finished
        if wiped or compacted:
            connection.execute(
                "UPDATE erasures SET wiped = max(wiped, ?), compacted = max(compacted, ?)",
                (wiped, compacted),
            )
            self._finished = (0, 0)
        return self.erasures()

    # -- finishing erasures ----------------------------------------------------------------

    def finish(self, wait: float, *, compact: bool) -> tuple[Erasures, str | None]:
        """Finishes what the file's erasures leave to do, waiting up to ``wait`` seconds
        for other connections; compacts only when ``compact``. Returns the state left and,
        when something is, why."""
        if self.path is None:
            # In memory: secure_delete zeroes freed cells, and no file holds a page.
            return Erasures(0, 0, 0, 0), None
        state = self.erasures()
        if compact and state.uncompacted and self._vacuumed < state.deleting:
            why = self._compact(wait)
            if why is not None:
                return state, why
            self._vacuumed = state.deleting
        if not state.unwiped and self._vacuumed <= state.compacted:
            return state, None
        # A compaction's pages are in the log until a checkpoint copies them: it is
        # finished only then, as an erasure is.
        why = self._checkpoint(wait)
        if why is not None:
            return state, why
        self._finished = (
            max(self._finished[0], state.committed),
            max(self._finished[1], self._vacuumed),
        )
        return self.erasures(), None

    def _with_busy_timeout(self, wait: float, statement: str) -> sqlite3.Row | None:
        connection = self.connection
        connection.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        try:
            row: sqlite3.Row | None = connection.execute(statement).fetchone()
            return row
        finally:
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_SECONDS * 1000)}")

    def _checkpoint(self, wait: float) -> str | None:
        """Copies the log into the file and empties it; None when done, else why not."""
        try:
            row = self._with_busy_timeout(wait, "PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError as error:
            return _why(error)
        if row is not None and row[0]:
            return (
                "another connection (a read of an older snapshot, or a write in progress) "
                "still uses the pages that hold it"
            )
        return None

    def _compact(self, wait: float) -> str | None:
        """Rebuilds ``record_text`` without what deletions left in it, then rewrites the
        file whole (``VACUUM``); None when done, else why not."""
        connection = self.connection
        try:
            self._with_busy_timeout(wait, "BEGIN IMMEDIATE")
            try:
                sql.rebuild_text(connection)
                connection.execute("COMMIT")
            except BaseException:
                with suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
                raise
            self._with_busy_timeout(wait, "VACUUM")
        except sqlite3.OperationalError as error:
            return _why(error)
        return None

    def record_outside_a_write(self) -> None:
        """Writes what this store has finished, if the write lock is free at once."""
        if self.path is None or self._finished == (0, 0):
            return
        with suppress(sqlite3.Error):
            self._with_busy_timeout(0.0, "BEGIN IMMEDIATE")
            try:
                self.record_finished(self.connection)
                self.connection.execute("COMMIT")
            except BaseException:
                with suppress(sqlite3.Error):
                    self.connection.execute("ROLLBACK")
                raise


def _why(error: sqlite3.OperationalError) -> str:
    """What an error of a wipe or compaction means for the caller."""
    code = (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF
    if code in (5, 6):  # SQLITE_BUSY, SQLITE_LOCKED
        return "another connection holds the file's write lock"
    if code == 13:  # SQLITE_FULL
        return "the disk is full"
    if code == 10:  # SQLITE_IOERR
        return f"an I/O error ({error})"
    if code == 11:  # SQLITE_CORRUPT
        raise StoreDamagedError(f"store: the file is damaged ({error})") from error
    return f"SQLite failed ({error})"
