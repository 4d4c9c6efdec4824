"""``MemoryStore``: memories kept between turns, in SQLite, resolved per turn.

The file is the truth; the store keeps the records of the scopes it has resolved in
memory, as built ``MemoryRecord`` objects, so a turn reads no rows and builds no
objects for scopes it has seen. A turn reads the rows of at most six scopes (those of
its context, ``docs/spec.md`` §1.4): memory grows with the users served, not with the
file. Every write is one SQLite transaction; the cache follows each write of this
store, and is dropped whole when another connection has committed (SQLite's
``data_version``). Every read that forms one answer runs in one read transaction, so
it sees one committed state, and the cache never mixes two.

Forgetting erases: the transaction that stores a tombstone overwrites, in place, the
text of every record it blocks (``_schema`` says why in place), and the store
then empties the write-ahead log into the file (``_file``), so that no file of
the store holds the text when the call returns.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Concatenate, ParamSpec, TypeVar

import pyarrow as pa

from memresolve._engine import (
    Explanation,
    Normalization,
    explain_in,
    normalize,
    resolve_batch,
)
from memresolve._io import records_from_arrow, records_to_arrow, tombstones_to_arrow
from memresolve._model import (
    Authority,
    AuthorityName,
    ForgetTombstone,
    MemoryRecord,
    Reason,
    Resolution,
    RetrievalContext,
    Scope,
    Subject,
    arguments,
    check_records,
    check_scope,
    forget_everywhere,
    instant,
    record_rows,
    resolve_prepared,
    scope_id,
    text,
)
from memresolve._store import _errors as errors
from memresolve._store import _forgetting as forgetting
from memresolve._store import _lifecycle as lifecycle
from memresolve._store import _observe as observation
from memresolve._store import _schema as schema
from memresolve._store import _sql as sql
from memresolve._store import _writes as writes
from memresolve._store._async import in_thread
from memresolve._store._core import StoreCore
from memresolve._store._lifecycle import instant_argument
from memresolve._store._observe import Observation
from memresolve.errors import ErrorKind, StoreClosedError

__all__ = ["ArrowExport", "ErasedUser", "MemoryStore"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True, slots=True)
class ErasedUser:
    """What ``MemoryStore.erase_user`` deleted."""

    records: int
    tombstones: int


@dataclass(frozen=True, slots=True)
class ArrowExport:
    """The whole store at one committed state, as the batch form's inputs
    (``memresolve.resolve_batch``, ``resolve_dataset``): ``records`` in the columns of
    ``records_to_arrow``, ``tombstones`` in those of ``tombstones_to_arrow``."""

    records: pa.Table
    tombstones: pa.Table


def _guarded(
    method: Callable[Concatenate[MemoryStore, _P], _R],
) -> Callable[Concatenate[MemoryStore, _P], _R]:
    """A public method inside the contract: a closed store raises ``StoreClosedError``, and
    SQLite's errors are raised as ``docs/errors.md`` states them (``_errors``)."""

    @functools.wraps(method)
    def call(self: MemoryStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        file = self._core.file
        if file.closed:
            raise self._closed_error()
        try:
            with errors.translating(file.path):
                return method(self, *args, **kwargs)
        except Exception:
            if file.closed:  # closed by another thread while this call waited for it
                raise self._closed_error() from None
            raise

    return call


class MemoryStore:
    """Memory records and forget tombstones kept in SQLite, resolved per turn.

    ``MemoryStore()`` (or ``MemoryStore(":memory:")``) keeps them in memory for the life
    of the object; ``MemoryStore(path)`` in a SQLite file (created with mode 0600, in
    write-ahead log mode), which any number of stores, in this or other processes, may
    open. Safe to use from many threads: a call sees the store before or after a write,
    never half of it. Every write is atomic: bad input raises ``InvalidInputError`` and
    writes nothing.

    Owners fail closed: a new store refuses records whose conversation or scene scope
    has no ``user_id`` (an unowned conversation is shared by every user who names it);
    ``shared_conversations=True`` creates one that accepts them. The policy is stored in
    the file; ``None`` opens a store as it was created (stores created before 0.2 share).

    ``resolve(context)`` returns what ``memresolve.resolve`` returns over every record
    and tombstone of the store, less the ``scope`` exclusions: the records of the
    scopes the context cannot see are not candidates (as in the batch form,
    ``docs/spec.md`` §4).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        shared_conversations: bool | None = None,
    ) -> None:
        where = None if path is None else arguments.path(path, "path")
        if where is not None and str(where) == ":memory:":
            where = None  # SQLite's name for a database in memory, as sqlite3.connect reads it
        if shared_conversations is not None and not isinstance(shared_conversations, bool):
            Subject("MemoryStore").fail(
                "shared_conversations", ErrorKind.WRONG_TYPE, "must be True, False or None"
            )
        with errors.translating(where):
            self._core = StoreCore(where, shared_conversations=shared_conversations)

    @property
    def shared_conversations(self) -> bool:
        """Whether the store accepts records of conversation and scene scopes without an
        owner (``user_id``): fixed when the store was created (``docs/store.md``,
        "Owners")."""
        return self._core.file.shared_conversations

    def _closed_error(self) -> StoreClosedError:
        path = self._core.file.path
        return StoreClosedError(f"{self!r} is closed", path=None if path is None else str(path))

    def close(self) -> None:
        """Closes the file (further calls raise ``StoreClosedError``; closing again does
        nothing), first finishing what erasures left to do if it can (``wipe``): a store
        closed with erased data still in its files warns and says how to finish it."""
        with errors.translating(self._core.file.path):
            self._core.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        path = self._core.file.path
        return f"MemoryStore({'memory' if path is None else str(path)!r})"

    @_guarded
    def wipe(self) -> bool:
        """Finishes what erasures left to do: copies the write-ahead log into the file and
        empties it, and runs a compaction an ``erase_user`` could not finish (``VACUUM``:
        O(store) time), so that nothing ``forget``, ``forget_everywhere`` and
        ``erase_user`` erased survives in any file of the store. They do this themselves;
        call it after an ``ErasureDelayedWarning``, or at start-up after a crash.

        Returns False when something is still left (a read of an older snapshot, open in
        another connection, still needs the pages, waited for up to 5 s,
        ``memresolve._store._core.WIPE_WAIT_SECONDS``;
        or another connection holds the write lock); the store retries the wipe in the
        background, at its next write and on ``close``.
        """
        return self._core.wipe()

    # -- writes ----------------------------------------------------------------

    @_guarded
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
        with self._core.writing() as connection:
            return self._add_checked(connection, checked)

    def _add_checked(self, connection: sqlite3.Connection, checked: Sequence[MemoryRecord]) -> int:
        """``add`` of checked records inside a write transaction."""
        owners = not self.shared_conversations
        return writes.add_checked(connection, self._core.cache, checked, owners=owners)

    @_guarded
    def observe(
        self,
        key: str,
        value: str,
        scope: Scope,
        *,
        at: datetime,
        authority: Authority | AuthorityName,
        confidence: float,
        source_message_ids: Iterable[str] = (),
        observed_at: datetime | None = None,
        valid_until: datetime | None = None,
        id: str | None = None,
        idempotency_key: str | None = None,
        over_stronger: bool = False,
    ) -> Observation:
        """The extractor's one call: ``value`` is what ``key`` holds in ``scope`` from ``at``
        on, decided against the slot's winner at ``at`` in the narrowest context that sees
        ``scope``, read and written in one transaction (``docs/store.md``, "Observing"):
        ``unchanged`` when the winner already says it with at least this authority;
        ``refused`` when the winner's authority is stronger (``over_stronger=True`` asks
        anyway); else ``added``, superseding the winner. With no ``id`` the id derives
        from public fields (never the value or message ids), so a retry changes nothing.

        Raises:
            InvalidInputError: an argument breaks a record's rule (naming the field), or
                the id is stored with other content (``duplicate-id``).
        """
        observed = observation.build(
            key,
            value,
            scope,
            at=at,
            authority=authority,
            confidence=confidence,
            source_message_ids=source_message_ids,
            observed_at=observed_at,
            valid_until=valid_until,
            id=id,
            idempotency_key=idempotency_key,
        )
        if not isinstance(over_stronger, bool):
            Subject("observe").fail("over_stronger", ErrorKind.WRONG_TYPE, "must be True or False")
        if not self.shared_conversations:
            writes.check_owner(observed.scope, Subject("observe"), "scope")
        with self._core.writing() as connection:
            return observation.observe_in(
                connection, observed, over_stronger=over_stronger, add=self._add_checked
            )

    @_guarded
    def retract(self, key: str, scope: Scope, *, at: datetime) -> tuple[MemoryRecord, ...]:
        """ "That is no longer true": from ``at`` on, no record the store now holds in
        ``scope`` for ``key`` is active, in any context; before ``at`` they resolve as
        before, and ``history`` keeps them. Records added later are judged as usual.

        Adds, in one transaction, a retraction (``MemoryRecord.retracted``) of every record
        of the slot that could still be active at ``at`` or later: not only the winner at
        ``at`` but a runner-up, a retry under a fresh id, a record whose correction may end,
        one that starts later. Each retraction's id is derived from the record's id and
        ``at``, so a retried call adds nothing. Other scopes are not touched: with
        ``per_key="most-specific"`` a turn may still show the key from another scope.
        Returns the retractions added, by the id of the record each names.
        """
        subject = Subject("retract")
        wanted_key = text(key, subject, "key")
        wanted_scope = check_scope(scope, subject, "scope")
        moment = instant(at, subject, "at")
        if not self.shared_conversations:
            # No record of it can be here: the caller has left its owner out.
            writes.check_owner(wanted_scope, subject, "scope")
        with self._core.writing() as connection:
            retractions = writes.retractions(connection, wanted_key, wanted_scope, moment)
            self._add_checked(connection, retractions)
        return retractions

    @_guarded
    def add_arrow(self, table: object) -> int:
        """``add`` of the records of an Arrow table (the columns of ``records_to_arrow``)."""
        return self.add(records_from_arrow(table))

    @_guarded
    def forget(
        self,
        key: str,
        scope: Scope,
        *,
        at: datetime | None = None,
        blocks_sources_before: datetime | None = None,
        forgotten_at: datetime | None = None,
    ) -> tuple[str, ...]:
        """Stores the tombstone of a forget at ``at`` and erases the text of every record
        it blocks.

        ``blocks_sources_before`` defaults to ``at`` (``docs/spec.md`` §1.5).
        ``forgotten_at=`` is the name ``at`` had before 0.2, kept for one release
        (``DeprecationWarning``). Returns the ids of the records whose text was erased
        now, sorted.
        """
        moment = instant_argument(at, forgotten_at, "forget")
        tombstone = ForgetTombstone(
            key=key,
            scope=scope,
            forgotten_at=moment,
            blocks_sources_before=blocks_sources_before,  # type: ignore[arg-type]
        )
        return self._forget([tombstone])

    @_guarded
    def forget_everywhere(
        self, key: str, context: RetrievalContext, *, at: datetime
    ) -> tuple[str, ...]:
        """``forget`` of ``key`` in every scope ``context`` sees (``memresolve.forget_everywhere``),
        in one transaction. Returns the ids erased, sorted."""
        return self._forget(forget_everywhere(key, context, at=at))

    @_guarded
    def forget_for_user(
        self, user_id: str, key: str, *, at: datetime, blocks_sources_before: datetime | None = None
    ) -> tuple[str, ...]:
        """ "Forget my address": erases ``key``'s text in every scope ``user_id`` owns (user,
        characters, owned conversations and scenes) and blocks it there, in scopes created
        later too: one user-wide tombstone (``docs/spec.md`` §1.5). Unowned (shared)
        conversations are not the user's, and are not touched. ``blocks_sources_before`` as
        for ``forget``. Cost: the user's records (through an index), not the store's.
        Returns the ids erased now, sorted."""
        tombstone = forgetting.user_wide(user_id, key, at, blocks_sources_before)
        with self._core.writing(erases=True) as connection:
            return forgetting.store_tombstones(connection, self._core.cache, (tombstone,))

    def _forget(self, tombstones: Sequence[ForgetTombstone]) -> tuple[str, ...]:
        with self._core.writing(erases=True) as connection:
            return forgetting.store_tombstones(connection, self._core.cache, tombstones)

    @_guarded
    def normalize(self, now: datetime) -> Normalization:
        """Writes, in one transaction, the statuses ``memresolve.normalize`` gives for the
        whole store at ``now`` (``docs/spec.md`` §7.1), and returns them. No resolution at
        ``now`` or later changes its winners; the records keep their content hash, so a
        retry of one as first added is still a no-op.

        Raises:
            InvalidInputError: ``now`` is not an aware datetime.
        """
        moment = instant(now, Subject("normalize"), "now")
        with self._core.writing() as connection:
            rows = connection.execute(schema.SELECT_RECORDS).fetchall()
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
            self._core.cache.drop_scopes({row["scope_id"] for row in rows if row["id"] in changed})
        return result

    @_guarded
    def erase_user(self, user_id: str) -> ErasedUser:
        """Deletes every record and tombstone of ``user_id``: its user and character
        scopes, and the conversations and scenes it owns (``docs/spec.md`` §1.1).
        Unowned conversation and scene scopes belong to no user and are kept.

        Its text is zeroed in place, and the store then compacts the file (it rebuilds
        the text table and runs ``VACUUM``: O(store)), so that when the call returns no
        byte of the user's text, id or records' ids is in any file of the store
        (``docs/store.md``). A kept record whose ``supersedes`` named one of the deleted
        records has that edge removed (it named nothing any more)."""
        user = text(user_id, Subject("erase_user"), "user_id")
        with self._core.writing(erases=True, deletes=True) as connection:
            records, tombstones, changed = sql.delete_user(connection, user)
            self._core.cache.drop_user(user)
            self._core.cache.drop_scopes(changed)
        return ErasedUser(records=records, tombstones=tombstones)

    # -- reads -----------------------------------------------------------------

    @_guarded
    def resolve(self, context: RetrievalContext) -> Resolution:
        """``memresolve.resolve`` over the store's records and tombstones in the
        scopes ``context`` sees (every other record would be a ``scope`` exclusion)."""
        _check_context(context, "resolve")
        with self._core.lock:
            # A warm turn reads only data_version: with no commit elsewhere since, what
            # the cache holds is the file's current state.
            self._core.follow_other_writers()
            prepared = self._core.cache.ready(context)
            if prepared is None:
                with self._core.reading():
                    prepared = self._core.cache.candidates(context)
        return resolve_prepared(prepared, context)

    @_guarded
    def explain(self, record_id: str, context: RetrievalContext) -> Explanation:
        """Why record ``record_id`` has its outcome in ``context``: the stage, and the
        records or tombstones that decided it.

        Raises:
            InvalidInputError: the store holds no record ``record_id``
                (``unknown-value``), or ``context`` is not a ``RetrievalContext``.
        """
        wanted = text(record_id, Subject("explain"), "record_id")
        _check_context(context, "explain")
        with self._core.reading() as connection:
            prepared = self._core.cache.candidates(context)
            candidates, tombstones = prepared.records, self._core.cache.tombstones(context)
            record = next((r for r in candidates if r.id == wanted), None) or sql.get_record(
                connection, wanted
            )
        if record is None:
            Subject("explain").fail(
                "record_id", ErrorKind.UNKNOWN_VALUE, f"names no record of the store: {wanted!r}"
            )
        if all(candidate.id != wanted for candidate in candidates):
            # Outside every scope the context sees: decided at stage 1.
            candidates = (*candidates, record)
        return explain_in(record, candidates, context, tombstones)

    @_guarded
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
        with self._core.reading() as connection:  # the resolution and the rows: one snapshot
            prepared = self._core.cache.candidates(context)
            rows = sql.slot_rows(connection, wanted_scope, wanted_key, in_version_order=True)
        resolution = resolve_prepared(prepared, context)
        versions = [schema.record_from_row(row) for row in rows]
        return tuple((record, _outcome(resolution, record.id)) for record in versions)

    @_guarded
    def get(self, record_id: str) -> MemoryRecord | None:
        """The record with ``record_id`` (its text erased if a tombstone blocks it), or None."""
        wanted = text(record_id, Subject("get"), "record_id")
        with self._core.lock:
            return sql.get_record(self._core.connection, wanted)

    @_guarded
    def __len__(self) -> int:
        with self._core.lock:
            count: int = self._core.connection.execute("SELECT count(*) FROM records").fetchone()[0]
        return count

    @_guarded
    def records(
        self, *, user_id: str | None = None, key: str | None = None, scope: Scope | None = None
    ) -> Iterator[MemoryRecord]:
        """The records that match every filter given (all of them with none), by id, read
        in one snapshot; erased records come with their text erased.

        ``user_id``: the records the user owns (its user and character scopes, the
        conversations and scenes it owns), read through an index: the cost follows the
        user's records, not the store's. Unowned conversations are nobody's. ``scope``:
        that scope's records, through an index (with ``key`` too). ``key`` alone reads every
        record of the store (no index serves it: an index on keys alone would cost every
        write for an administrator's query).

        Raises:
            InvalidInputError: a filter breaks a rule, or ``scope`` is not ``user_id``'s
                (``inconsistent``: an unowned scope, or another user's).
        """
        where, parameters = lifecycle.record_filter(user_id, key, scope, Subject("records"))
        with self._core.reading() as connection:
            rows = connection.execute(
                f"{schema.SELECT_RECORDS} {where} ORDER BY records.id", parameters
            ).fetchall()
        return (schema.record_from_row(row) for row in rows)

    @_guarded
    def keys(self, *, user_id: str) -> tuple[str, ...]:
        """The keys of the records ``user_id`` owns, sorted, read through an index: what a
        profile page ("what do you remember about me?") lists. A key whose every record
        was erased (forgotten) is left out: the user asked to forget it."""
        user = text(user_id, Subject("keys"), "user_id")
        with self._core.reading() as connection:
            found = connection.execute(lifecycle.USER_KEYS, (user,)).fetchall()
        return tuple(row[0] for row in found)

    @_guarded
    def tombstones(self) -> tuple[ForgetTombstone, ...]:
        """Every tombstone."""
        with self._core.lock:
            rows = sql.all_tombstone_rows(self._core.connection)
        return tuple(schema.tombstone_from_row(row) for row in rows)

    @_guarded
    def to_arrow(self) -> pa.Table:
        """Every record as an Arrow table (the columns of ``records_to_arrow``)."""
        return records_to_arrow(self.records())

    @_guarded
    def export_arrow(self) -> ArrowExport:
        """Every record and every tombstone, read in one snapshot, as Arrow tables: the
        inputs of ``memresolve.resolve_batch`` or ``resolve_dataset`` for the whole store
        (``to_arrow()`` then ``tombstones()`` could straddle another connection's write)."""
        with self._core.reading() as connection:
            rows = connection.execute(f"{schema.SELECT_RECORDS} ORDER BY records.id").fetchall()
            tombstone_rows = sql.all_tombstone_rows(connection)
        return ArrowExport(
            records=records_to_arrow(schema.record_from_row(row) for row in rows),
            tombstones=tombstones_to_arrow(
                schema.tombstone_from_row(row) for row in tombstone_rows
            ),
        )

    @_guarded
    def resolve_batch(
        self, contexts: object, *, include_excluded: bool = False, with_values: bool = False
    ) -> pa.Table:
        """``memresolve.resolve_batch`` of ``contexts`` over the whole store, read in one
        snapshot."""
        export = self.export_arrow()
        return resolve_batch(
            export.records,
            contexts,
            tombstones=export.tombstones,
            include_excluded=include_excluded,
            with_values=with_values,
        )

    # -- asyncio ----------------------------------------------------------------
    # Each runs its synchronous twin on a worker thread: SQLite and the resolver
    # never block the event loop (``_async`` says what cancelling one does).

    aresolve = in_thread(resolve)
    aresolve_batch = in_thread(resolve_batch)
    aexplain = in_thread(explain)
    ahistory = in_thread(history)
    aget = in_thread(get)
    ato_arrow = in_thread(to_arrow)
    aexport_arrow = in_thread(export_arrow)
    aadd = in_thread(add)
    aadd_arrow = in_thread(add_arrow)
    aretract = in_thread(retract)
    aobserve = in_thread(observe)
    arecords = in_thread(records)
    akeys = in_thread(keys)
    aforget = in_thread(forget)
    aforget_everywhere = in_thread(forget_everywhere)
    aforget_for_user = in_thread(forget_for_user)
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
