"""What keeps a ``MemoryStore``'s file and its memory in step: the lock, the read and write
transactions (the cache checked against each one's snapshot), and the finishing of
erasures after their commit, at open and at close.

The cache is never a mix of two commits: it is filled only inside a read or write
transaction whose snapshot it was checked against (SQLite's ``data_version``, read as
the transaction's first statement, changes with every commit of another connection),
and a write applies itself to it inside its own transaction.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from memresolve._engine import SELECTED
from memresolve._store import _erasure as erasure
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve._store._cache import ScopeRows, StoreCache
from memresolve._store._file import BUSY_SECONDS, StoreFile
from memresolve._store._wiper import Wiper

__all__ = ["WIPE_WAIT_SECONDS", "StoreCore"]

#: How long an erasure waits, at most, for reads of older snapshots in other connections
#: to end before it warns (a forget must not stall a turn for long).
WIPE_WAIT_SECONDS: float = 5.0


class StoreCore:
    """One store's file, its cache and its background wipe, under one lock."""

    def __init__(self, path: Path | None, *, shared_conversations: bool | None) -> None:
        self.lock = threading.RLock()
        self.cache = StoreCache(self._load_scopes, SELECTED.prepare)
        self.file = StoreFile(path, self.lock, shared_conversations=shared_conversations)
        self._wiper = Wiper(self.file)
        # This store's last erasure, and its last that deleted rows, as the file numbers
        # them: close() warns about these, not about other connections' (which finish them).
        self._own = (0, 0)
        try:
            self._data_version = self.file.data_version()
            self._finish_at_open()
        except BaseException:
            self.file.close()
            raise

    @property
    def connection(self) -> sqlite3.Connection:
        return self.file.connection

    # -- the cache ---------------------------------------------------------------

    def follow_other_writers(self) -> None:
        """Drops the cache when another connection has committed since the last call
        (no other connection can open a store in memory). Inside a read transaction,
        this also starts the transaction's snapshot."""
        if self.file.path is None:
            return
        version = self.file.data_version()
        if version != self._data_version:
            self.cache.clear()
            self._data_version = version

    def _load_scopes(self, scope_ids: Sequence[str]) -> dict[str, ScopeRows]:
        loaded = {sid: ScopeRows() for sid in scope_ids}
        for kind, row in sql.rows_of_scopes(self.file.connection, scope_ids):
            if kind == "record":
                loaded[row["scope_id"]].records.append(schema.record_from_row(row))
            else:
                loaded[row["scope_id"]].tombstones.append(schema.tombstone_from_row(row))
        return loaded

    # -- transactions ------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """One read transaction, the cache checked against its snapshot."""
        with self.lock, self.file.reading() as connection:
            self.follow_other_writers()
            yield connection

    @contextmanager
    def writing(
        self, *, erases: bool = False, deletes: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """One write: committed whole, or rolled back whole (the cache too). A write that
        ``erases`` (or ``deletes`` rows) notes it in the file in the same transaction, and
        then finishes it: the log emptied into the file (and the file compacted)."""
        with self.lock:
            connection = self.file.connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                # Under the write lock: another writer may have committed while this
                # one waited for it, so the cache is checked here, not before.
                self.follow_other_writers()
                yield connection
                if erases:
                    self.file.note_erasure(connection, deleting=deletes)
                state = self.file.record_finished(connection)
                # Read before this commit, which does not change this connection's
                # version; a commit by another writer after it will.
                version = self.file.data_version()
                connection.execute("COMMIT")
            except BaseException:
                # The cache first: a write may have applied itself to it already. SQLite
                # rolls some failed COMMITs back itself (a full disk, an I/O error), and
                # then there is no transaction left to roll back; the write's own error
                # is the one to raise.
                self.cache.clear()
                if connection.in_transaction:
                    with suppress(sqlite3.Error):
                        connection.execute("ROLLBACK")
                raise
            self._data_version = version
            if erases:
                self._own = (state.committed, state.deleting if deletes else self._own[1])
            try:
                self._finish_after_write(erases=erases, deletes=deletes, unwiped=state.unwiped)
            except BaseException as error:
                error.add_note(
                    "memresolve: the write committed; what it erased is wiped by the store's "
                    "next write, wipe(), close() or the next open of the file"
                )
                raise

    # -- finishing erasures --------------------------------------------------------------

    def _finish_after_write(self, *, erases: bool, deletes: bool, unwiped: bool) -> None:
        if self.file.path is None:
            return
        if erases:
            # A forget's text never sits where a deletion left stale copies (deletions keep
            # record_text's rows as zero bytes until a compaction rebuilds it): its wipe is
            # all it needs. Only a deleting erasure (erase_user) compacts.
            left, why = self.file.finish(WIPE_WAIT_SECONDS, compact=deletes)
            if why is not None:
                if left.unwiped:
                    self._wiper.start()
                erasure.warn_delayed(why, closing=False)
        elif unwiped:
            # An erasure left unwiped earlier (here or by another connection), retried
            # without waiting: a plain write must not stall behind another connection's read.
            with suppress(sqlite3.Error):
                self.file.finish(0.0, compact=False)

    def _finish_at_open(self) -> None:
        """Finishes what earlier erasures left to do: a migration's compaction at once
        (it needs the write lock the migration already waited for), a pending wipe without
        waiting for any lock (retried in the background)."""
        if self.file.path is None:
            return
        if self.file.migrated:
            _, why = self.file.finish(BUSY_SECONDS, compact=True)
            if why is not None:
                erasure.warn_delayed(why, closing=False)
            self.file.record_outside_a_write()
            return
        state = self.file.erasures()
        if state.unwiped:
            state, _ = self.file.finish(0.0, compact=False)
            self.file.record_outside_a_write()
        if state.unwiped or state.uncompacted:
            # A wipe a read holds back, or the compaction of an erase_user a crash
            # interrupted: the background step finishes them, without waiting for locks.
            self._wiper.start()

    def wipe(self) -> bool:
        """``MemoryStore.wipe``."""
        with self.lock:
            if self.file.path is None:
                return True
            left, _ = self.file.finish(WIPE_WAIT_SECONDS, compact=True)
            self.file.record_outside_a_write()
            if left.unwiped:
                self._wiper.start()
            return not (left.unwiped or left.uncompacted)

    def close(self) -> None:
        """Closes the file, first finishing what erasures left to do if it can: warns
        when something is left."""
        self._wiper.stop()
        with self.lock:
            if self.file.closed:
                return
            try:
                self._finish_at_close()
            finally:
                self.file.close()

    def _finish_at_close(self) -> None:
        if self.file.path is None:
            return
        left, why = self.file.erasures(), None
        if left.unwiped:
            left, why = self.file.finish(WIPE_WAIT_SECONDS, compact=False)
        self.file.record_outside_a_write()
        # Only this store's own erasures: another live connection finishes its own, and
        # one a crash interrupted is finished by the next open, write or wipe().
        if left.wiped < self._own[0] or left.compacted < self._own[1]:
            erasure.warn_delayed(why or erasure.UNCOMPACTED, closing=True)
