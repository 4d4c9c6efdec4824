"""``MemoryStore``: memories kept between turns, in SQLite, resolved per turn.

The file is the truth; the store keeps the records of the scopes it has resolved in
memory, as built ``MemoryRecord`` objects, so a turn reads no rows and builds no
objects for scopes it has seen. A turn reads the rows of at most six scopes (those of
its context, ``docs/spec.md`` §1.4): memory grows with the users served, not with the
file. Every write is one SQLite transaction; the cache follows each write of this
store, and is dropped whole when another connection has committed (SQLite's
``data_version``).

Forgetting erases: the transaction that stores a tombstone also overwrites the
``value`` and ``source_message_ids`` of every record it blocks, with SQLite's
``secure_delete`` on, and the write-ahead log is then checkpointed and truncated, so
the file no longer holds the text.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Any, Final

import pyarrow as pa

from memresolve import _arguments as arguments
from memresolve import _store_erasure as erasure
from memresolve import _store_schema as schema
from memresolve import _store_sql as sql
from memresolve._api import resolve_batch
from memresolve._arrow import records_from_arrow, records_to_arrow, tombstones_to_arrow
from memresolve._call import record_rows, resolve_prepared
from memresolve._explain import Explanation, explain_in
from memresolve._inputs import ForgetTombstone, RetrievalContext, forget_everywhere
from memresolve._jobs import Normalization, forget_sweep, normalize
from memresolve._kernels import SELECTED
from memresolve._records import MemoryRecord, check_records, check_scope
from memresolve._result import Resolution
from memresolve._scopes import Scope, scope_id
from memresolve._store_async import in_thread
from memresolve._store_cache import ScopeRows, StoreCache
from memresolve._types import Reason
from memresolve._validate import Subject, instant, text
from memresolve.errors import ErrorKind, InvalidInputError, MemresolveError

__all__ = ["ErasedUser", "MemoryStore"]

#: What an erased record's ``value`` holds.
_ERASED_TEXT: Final = ""
#: How long a call waits for a lock another connection holds.
_BUSY_SECONDS: Final = 30.0
#: How long wiping erased text from the file waits, at most, for reads of older
#: snapshots in other connections to end (a forget must not stall a turn for long).
WIPE_WAIT_SECONDS: float = 5.0


@dataclass(frozen=True, slots=True)
class ErasedUser:
    """What ``MemoryStore.erase_user`` deleted."""

    records: int
    tombstones: int


class MemoryStore:
    """Memory records and forget tombstones kept in SQLite, resolved per turn.

    ``MemoryStore()`` keeps them in memory for the life of the object;
    ``MemoryStore(path)`` in a SQLite file (created with mode 0600, in write-ahead
    log mode), which any number of stores, in this or other processes, may open.
    Safe to use from many threads: a call sees the store before or after a write,
    never half of it. Every write is atomic: bad input raises
    ``InvalidInputError`` and writes nothing.

    ``resolve(context)`` returns what ``memresolve.resolve`` returns over every record
    and tombstone of the store, less the ``scope`` exclusions: the records of the
    scopes the context cannot see are not candidates (as in the batch form,
    ``docs/spec.md`` §4).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._path = None if path is None else arguments.path(path, "path")
        self._lock = threading.RLock()
        self._cache = StoreCache(self._load_scopes, SELECTED.prepare)
        # True while erased text may remain in the file: a wipe could not finish, or a
        # migration rewrote rows (the old pages hold what it replaced).
        self._unwiped = False
        self._connection = self._open()
        if self._unwiped:
            self._wipe_or_warn()
        self._data_version = self._read_data_version()

    # -- opening ---------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        target = ":memory:" if self._path is None else str(self._path)
        if self._path is not None:
            sql.create_private(self._path)
        connection = sqlite3.connect(
            target, isolation_level=None, check_same_thread=False, timeout=_BUSY_SECONDS
        )
        connection.row_factory = sqlite3.Row
        try:
            connection.execute("PRAGMA secure_delete = ON")
            if self._path is not None:
                connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
            self._migrate(connection)
        except sqlite3.DatabaseError as error:
            connection.close()
            raise InvalidInputError(
                f"store: {target} is not a memresolve store ({error})",
                kind=ErrorKind.MALFORMED,
                field="path",
                file=target,
            ) from None
        except BaseException:
            connection.close()
            raise
        return connection

    def _migrate(self, connection: sqlite3.Connection) -> None:
        connection.execute("BEGIN IMMEDIATE")
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version > schema.SCHEMA_VERSION:
                raise MemresolveError(
                    f"store: {self._path} has schema version {version}; this memresolve "
                    f"reads versions up to {schema.SCHEMA_VERSION}: upgrade memresolve"
                )
            for step in schema.MIGRATIONS[version:]:
                step(connection)
            # From version 1 on, a step may rewrite rows: wipe what they held.
            self._unwiped = self._unwiped or 0 < version < schema.SCHEMA_VERSION
            connection.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Closes the file (further calls raise ``sqlite3.ProgrammingError``), wiping
        erased text a read kept in it until now (``wipe``)."""
        with self._lock:
            try:
                if self._unwiped:
                    self._wipe_or_warn(closing=True)
            finally:
                self._connection.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "memory" if self._path is None else str(self._path)
        return f"MemoryStore({where!r})"

    # -- the cache ---------------------------------------------------------------

    def _read_data_version(self) -> int:
        value: int = self._connection.execute("PRAGMA data_version").fetchone()[0]
        return value

    def _follow_other_writers(self) -> None:
        """Drops the cache when another connection has committed since the last call
        (no other connection can open a store in memory)."""
        if self._path is None:
            return
        version = self._read_data_version()
        if version != self._data_version:
            self._cache.clear()
            self._data_version = version

    def _load_scopes(self, scope_ids: Sequence[str]) -> dict[str, ScopeRows]:
        loaded = {sid: ScopeRows() for sid in scope_ids}
        for chunk in sql.chunks(scope_ids):
            marks = sql.marks(len(chunk))
            for row in self._connection.execute(
                f"SELECT * FROM records WHERE scope_id IN ({marks})",
                chunk,
            ):
                loaded[row["scope_id"]].records.append(schema.record_from_row(row))
            for row in self._connection.execute(
                f"SELECT * FROM tombstones WHERE scope_id IN ({marks})",
                chunk,
            ):
                loaded[row["scope_id"]].tombstones.append(schema.tombstone_from_row(row))
        return loaded

    @contextmanager
    def _transaction(self, *, erases: bool = False) -> Iterator[sqlite3.Connection]:
        """One write: committed whole, or rolled back whole (the cache too). A write
        that ``erases`` text then empties the write-ahead log."""
        with self._lock:
            connection = self._connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                # Under the write lock: another writer may have committed while this
                # one waited for it, so the cache is checked here, not before.
                self._follow_other_writers()
                yield connection
                # Read before this commit, which does not change this connection's
                # version; a commit by another writer after it will.
                version = self._read_data_version()
                connection.execute("COMMIT")
            except BaseException:
                # The cache first: a write may have applied itself to it already. SQLite
                # rolls some failed COMMITs back itself (a full disk, an I/O error), and
                # then there is no transaction left to roll back; the write's own error
                # is the one to raise.
                self._cache.clear()
                if connection.in_transaction:
                    with suppress(sqlite3.Error):
                        connection.execute("ROLLBACK")
                raise
            self._data_version = version
            if erases:
                self._wipe_or_warn()
            elif self._unwiped:
                # A wipe that could not finish earlier, retried without waiting: a plain
                # write must not stall behind another connection's read.
                with suppress(sqlite3.Error):
                    self._wipe_log(0.0)

    def wipe(self) -> bool:
        """Moves every committed page into the file and empties the write-ahead log, so
        that text ``forget`` and ``erase_user`` erased survives in neither (they wipe
        themselves; this retries after an ``ErasureDelayedWarning``).

        Returns False when a read of an older snapshot, open in another connection,
        still needs the pages that hold erased text (waited for up to
        ``WIPE_WAIT_SECONDS``); the store tries again at its next write and on ``close``.
        """
        with self._lock:
            return self._wipe_log(WIPE_WAIT_SECONDS)

    def _wipe_or_warn(self, *, closing: bool = False) -> None:
        """Wipes erased text from the file, or warns that it is still there. Runs after
        a commit: a failed wipe must not make a committed write look failed."""
        try:
            wiped = self._wipe_log(WIPE_WAIT_SECONDS)
        except sqlite3.Error:
            wiped = False
        if not wiped:
            erasure.warn_delayed(closing=closing)

    def _wipe_log(self, wait: float) -> bool:
        if self._path is None:
            return True  # in memory: secure_delete overwrites freed text, no file holds it
        connection = self._connection
        connection.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        try:
            busy = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            connection.execute(f"PRAGMA busy_timeout = {int(_BUSY_SECONDS * 1000)}")
        self._unwiped = bool(busy)
        return not busy

    # -- writes ----------------------------------------------------------------

    def add(self, records: Iterable[MemoryRecord]) -> int:
        """Adds ``records`` in one transaction; returns how many were new.

        A record whose id the store holds with the same content (as first added) is
        a retry, and changes nothing: not even the text a forget erased since, nor
        a status rewritten since. A record the forget sweep would purge (a tombstone the
        store holds blocks it, or it is stored ``forgotten``) is stored with its text
        erased.

        Raises:
            InvalidInputError: an item is not a ``MemoryRecord``; two share an id;
                or the store holds an id with other content (``duplicate-id``,
                naming the id and the row). Nothing is written.
        """
        checked = check_records(record_rows(records))
        rows = [schema.record_row(record) for record in checked]
        with self._transaction() as connection:
            known = sql.known_hashes(connection, [row["id"] for row in rows])
            new: list[tuple[int, dict[str, Any]]] = []
            for index, row in enumerate(rows):
                stored = known.get(row["id"])
                if stored is None:
                    new.append((index, row))
                elif stored.hash != (
                    schema.erased_hash(row) if stored.erased else row["content_hash"]
                ):
                    raise InvalidInputError(
                        f"record {row['id']!r}: field 'id' is already in the store with "
                        "other content",
                        kind=ErrorKind.DUPLICATE_ID,
                        record_id=row["id"],
                        field="id",
                        row=index,
                    )
            # The forget sweep's rule: text a tombstone blocks, or of a record stored
            # ``forgotten``, is never stored.
            purged = forget_sweep(
                [checked[index] for index, _ in new],
                sql.tombstones_of(connection, [row["scope_id"] for _, row in new]),
            ).record_ids
            stored_records: list[tuple[str, MemoryRecord]] = []
            for index, row in new:
                record = checked[index]
                if row["id"] in purged:
                    row.update(value=_ERASED_TEXT, source_message_ids="[]", erased=1)
                    row["content_hash"] = schema.erased_hash(row)
                    record = _erased(record)
                stored_records.append((row["scope_id"], record))
            columns = schema.RECORD_COLUMNS
            values = itemgetter(*columns)
            connection.executemany(
                f"INSERT INTO records ({','.join(columns)}) VALUES ({sql.marks(len(columns))})",
                [values(row) for _, row in new],
            )
            # In the transaction: a failed commit drops the cache whole.
            self._cache.append(stored_records)
        return len(new)

    def add_arrow(self, table: object) -> int:
        """``add`` of the records of an Arrow table (the columns of ``records_to_arrow``)."""
        return self.add(records_from_arrow(table))

    def forget(
        self,
        key: str,
        scope: Scope,
        *,
        forgotten_at: datetime,
        blocks_sources_before: datetime | None = None,
    ) -> tuple[str, ...]:
        """Stores the tombstone and erases the text of every record it blocks.

        ``blocks_sources_before`` defaults to ``forgotten_at`` (``docs/spec.md`` §1.5).
        Returns the ids of the records whose text was erased now, sorted.
        """
        tombstone = ForgetTombstone(
            key=key,
            scope=scope,
            forgotten_at=forgotten_at,
            blocks_sources_before=blocks_sources_before,  # type: ignore[arg-type]
        )
        return self._forget([tombstone])

    def forget_everywhere(
        self, key: str, context: RetrievalContext, *, at: datetime
    ) -> tuple[str, ...]:
        """``forget`` of ``key`` in every scope ``context`` sees (``memresolve.forget_everywhere``),
        in one transaction. Returns the ids erased, sorted."""
        return self._forget(forget_everywhere(key, context, at=at))

    def _forget(self, tombstones: Sequence[ForgetTombstone]) -> tuple[str, ...]:
        rows = [schema.tombstone_row(tombstone) for tombstone in tombstones]
        erased: list[str] = []
        with self._transaction(erases=True) as connection:
            columns = schema.TOMBSTONE_COLUMNS
            insert = (
                f"INSERT OR IGNORE INTO tombstones ({','.join(columns)}) "
                f"VALUES ({sql.marks(len(columns))})"
            )
            for row, tombstone in zip(rows, tombstones, strict=True):
                # The store may hold this tombstone already (a retried forget).
                new = connection.execute(insert, itemgetter(*columns)(row)).rowcount == 1
                found = connection.execute(
                    "SELECT * FROM records WHERE scope_id = ? AND key = ? AND erased = 0",
                    (row["scope_id"], row["key"]),
                ).fetchall()
                candidates = [schema.record_from_row(stored) for stored in found]
                blocked = {p.record_id for p in forget_sweep(candidates, [tombstone])}
                connection.executemany(
                    "UPDATE records SET value = ?, source_message_ids = '[]', erased = 1, "
                    "content_hash = ? WHERE id = ?",
                    [
                        (_ERASED_TEXT, schema.erased_hash(stored), stored["id"])
                        for stored in found
                        if stored["id"] in blocked
                    ],
                )
                erased.extend(blocked)
                # In the transaction: a failed commit drops the cache whole.
                self._cache.forget(
                    row["scope_id"],
                    tombstone if new else None,
                    [_erased(record) for record in candidates if record.id in blocked],
                )
        return tuple(sorted(erased))

    def normalize(self, now: datetime) -> Normalization:
        """Writes, in one transaction, the statuses ``memresolve.normalize`` gives for the
        whole store at ``now`` (``docs/spec.md`` §7.1), and returns them. No resolution at
        ``now`` or later changes its winners; the records keep their content hash, so a
        retry of one as first added is still a no-op.

        Raises:
            InvalidInputError: ``now`` is not an aware datetime.
        """
        moment = instant(now, Subject("normalize"), "now")
        with self._transaction() as connection:
            rows = connection.execute("SELECT * FROM records").fetchall()
            tombstones = [
                schema.tombstone_from_row(row)
                for row in connection.execute("SELECT * FROM tombstones")
            ]
            result = normalize(
                [schema.record_from_row(row) for row in rows], now=moment, tombstones=tombstones
            )
            connection.executemany(
                "UPDATE records SET status = ? WHERE id = ? AND status = 'active'",
                [(change.new_status.value, change.record_id) for change in result],
            )
            changed = {change.record_id for change in result}
            self._cache.drop_scopes({row["scope_id"] for row in rows if row["id"] in changed})
        return result

    def erase_user(self, user_id: str) -> ErasedUser:
        """Deletes every record and tombstone of ``user_id``: its user and character
        scopes, and the conversations and scenes it owns (``docs/spec.md`` §1.1).
        Unowned conversation and scene scopes belong to no user and are kept."""
        user = text(user_id, Subject("erase_user"), "user_id")
        with self._transaction(erases=True) as connection:
            records = connection.execute("DELETE FROM records WHERE user_id = ?", (user,)).rowcount
            tombstones = connection.execute(
                "DELETE FROM tombstones WHERE user_id = ?", (user,)
            ).rowcount
            self._cache.drop_user(user)
        return ErasedUser(records=records, tombstones=tombstones)

    # -- reads -----------------------------------------------------------------

    def resolve(self, context: RetrievalContext) -> Resolution:
        """``memresolve.resolve`` over the store's records and tombstones in the
        scopes ``context`` sees (every other record would be a ``scope`` exclusion)."""
        _check_context(context, "resolve")
        with self._lock:
            self._follow_other_writers()
            prepared = self._cache.candidates(context)
        return resolve_prepared(prepared, context)

    def explain(self, record_id: str, context: RetrievalContext) -> Explanation:
        """Why record ``record_id`` has its outcome in ``context``: the stage, and the
        records or tombstones that decided it.

        Raises:
            InvalidInputError: the store holds no record ``record_id``
                (``unknown-value``), or ``context`` is not a ``RetrievalContext``.
        """
        wanted = text(record_id, Subject("explain"), "record_id")
        _check_context(context, "explain")
        with self._lock:
            self._follow_other_writers()
            prepared = self._cache.candidates(context)
            candidates, tombstones = prepared.records, self._cache.tombstones(context)
            record = next((r for r in candidates if r.id == wanted), None) or self.get(wanted)
        if record is None:
            Subject("explain").fail(
                "record_id", ErrorKind.UNKNOWN_VALUE, f"names no record of the store: {wanted!r}"
            )
        if all(candidate.id != wanted for candidate in candidates):
            # Outside every scope the context sees: decided at stage 1.
            candidates = (*candidates, record)
        return explain_in(record, candidates, context, tombstones)

    def history(
        self, key: str, scope: Scope, context: RetrievalContext
    ) -> tuple[tuple[MemoryRecord, Reason | None], ...]:
        """Every record of ``key`` in ``scope``, oldest version first (then by
        ``valid_from`` and id), each with its outcome in ``context`` (``None``: the
        winner; ``scope`` for all of them when the context does not see ``scope``)."""
        subject = Subject("history")
        wanted_key = text(key, subject, "key")
        wanted_scope = scope_id(check_scope(scope, subject, "scope"))
        _check_context(context, "history")
        with self._lock:  # one snapshot: no write between the resolution and the rows
            resolution = self.resolve(context)
            rows = self._connection.execute(
                "SELECT * FROM records WHERE scope_id = ? AND key = ? "
                "ORDER BY version, valid_from, id",
                (wanted_scope, wanted_key),
            ).fetchall()
        versions = [schema.record_from_row(row) for row in rows]
        return tuple((record, _outcome(resolution, record.id)) for record in versions)

    def get(self, record_id: str) -> MemoryRecord | None:
        """The record with ``record_id`` (its text erased if a tombstone blocks it), or None."""
        wanted = text(record_id, Subject("get"), "record_id")
        with self._lock:
            row = self._connection.execute(
                "SELECT * FROM records WHERE id = ?", (wanted,)
            ).fetchone()
        return None if row is None else schema.record_from_row(row)

    def __len__(self) -> int:
        with self._lock:
            count: int = self._connection.execute("SELECT count(*) FROM records").fetchone()[0]
        return count

    def records(self) -> Iterator[MemoryRecord]:
        """Every record, by id (read in one snapshot)."""
        with self._lock:
            rows = self._connection.execute("SELECT * FROM records ORDER BY id").fetchall()
        return (schema.record_from_row(row) for row in rows)

    def tombstones(self) -> tuple[ForgetTombstone, ...]:
        """Every tombstone."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT * FROM tombstones ORDER BY scope_id, key, forgotten_at"
            ).fetchall()
        return tuple(schema.tombstone_from_row(row) for row in rows)

    def to_arrow(self) -> pa.Table:
        """Every record as an Arrow table (the columns of ``records_to_arrow``)."""
        return records_to_arrow(self.records())

    def resolve_batch(
        self, contexts: object, *, include_excluded: bool = False, with_values: bool = False
    ) -> pa.Table:
        """``memresolve.resolve_batch`` of ``contexts`` over the whole store."""
        with self._lock:
            records = self.to_arrow()
            tombstones = tombstones_to_arrow(self.tombstones())
        return resolve_batch(
            records,
            contexts,
            tombstones=tombstones,
            include_excluded=include_excluded,
            with_values=with_values,
        )

    # -- asyncio ----------------------------------------------------------------
    # Each runs its synchronous twin on a worker thread: SQLite and the resolver
    # never block the event loop.

    aresolve = in_thread(resolve)
    aresolve_batch = in_thread(resolve_batch)
    aexplain = in_thread(explain)
    ahistory = in_thread(history)
    aget = in_thread(get)
    ato_arrow = in_thread(to_arrow)
    aadd = in_thread(add)
    aadd_arrow = in_thread(add_arrow)
    aforget = in_thread(forget)
    aforget_everywhere = in_thread(forget_everywhere)
    anormalize = in_thread(normalize)
    aerase_user = in_thread(erase_user)
    awipe = in_thread(wipe)


def _outcome(resolution: Resolution, record_id: str) -> Reason | None:
    """A record's outcome in a store resolution, which holds only the in-scope ones."""
    try:
        return resolution.reason_for(record_id)
    except KeyError:
        return Reason.SCOPE


def _check_context(context: object, call: str) -> None:
    if not isinstance(context, RetrievalContext):
        Subject(call).fail(
            "context",
            ErrorKind.WRONG_TYPE,
            f"must be a RetrievalContext, got {type(context).__name__}",
        )


def _erased(record: MemoryRecord) -> MemoryRecord:
    """``record`` with its private text erased."""
    fields = record.to_dict()
    fields.update(value=_ERASED_TEXT, source_message_ids=[])
    return type(record).from_dict(fields)
