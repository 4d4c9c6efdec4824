"""What ``MemoryStore`` keeps in memory between turns: the records and tombstones of the
scopes it has read, as objects, and each context's candidates ready to resolve.

A chat backend resolves the same few contexts turn after turn while the store changes
by a few records: a turn that finds its context here reads no rows, builds no objects,
computes no scope ids, and resolves candidates the backend has already read and checked
(``Kernel.prepare``: for the native backend, a ``PreparedSet`` in Rust). New records are
added to the ready candidates of the contexts that see their scope (``Prepared.extended``:
the native set grows by the new rows, it is not prepared again), unless there are so many
that preparing again costs less. A forget is applied the same way (``Prepared.forgotten``:
the tombstone raises its group's bound, and the records it erased take their stored
records' places); a forget or add that stores a record ``forgotten`` by a tombstone's
message hashes, or grows the hashes of a stored tombstone, drops the scopes it changed
instead (``_forgetting``, ``_writes``). An erasure drops only what its user's contexts
see, ``normalize`` only the scopes whose statuses it wrote (and the contexts that see
them): other users' turns stay ready. Another process's commit clears everything (this
process cannot tell what it changed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Final

from memresolve._model import (
    ForgetTombstone,
    MemoryRecord,
    Prepared,
    RetrievalContext,
    seen_scope_ids,
)

__all__ = ["ScopeRows", "StoreCache"]

#: A context's identity for the cache: its user, character, conversation and scene.
_TurnKey = tuple[str, str | None, str | None, str | None]
#: Scopes held at most; past it, the half read longest ago are let go.
MAX_SCOPES: Final = 200_000
#: Contexts whose candidates are held at most.
MAX_TURNS: Final = 20_000
#: New records a context's ready candidates grow by at once, at most (or an eighth of
#: them, if more): past that, preparing them again costs less than growing them.
GROW_AT_MOST: Final = 64


@dataclass(slots=True)
class ScopeRows:
    """One scope's records and tombstones."""

    records: list[MemoryRecord] = field(default_factory=list)
    tombstones: list[ForgetTombstone] = field(default_factory=list)


Loader = Callable[[Sequence[str]], dict[str, ScopeRows]]
#: Checks candidates and tombstones once for the selected backend (``Kernel.prepare``).
Preparer = Callable[[tuple[MemoryRecord, ...], tuple[ForgetTombstone, ...]], Prepared]


class StoreCache:
    """Scopes by scope id, and candidates by context. Not thread safe: the store's lock
    guards every call."""

    def __init__(self, load: Loader, prepare: Preparer) -> None:
        self._load = load
        self._prepare = prepare
        self._scopes: dict[str, ScopeRows] = {}
        # Each context's ready candidates, with the ids of the scopes they come from.
        self._turns: dict[_TurnKey, tuple[Prepared, frozenset[str]]] = {}

    def clear(self) -> None:
        self._scopes.clear()
        self._turns.clear()

    def drop_scopes(self, changed: set[str]) -> None:
        """Forgets what is held of the ``changed`` scopes, and the ready candidates of
        every context that sees one of them (read and prepared again on next use)."""
        for scope in changed:
            self._scopes.pop(scope, None)
        for key in [k for k, (_, scopes) in self._turns.items() if not scopes.isdisjoint(changed)]:
            del self._turns[key]

    def drop_user(self, user_id: str) -> None:
        """Forgets the scopes ``user_id`` owns and the ready candidates of its contexts:
        the only contexts that see a scope a user owns are that user's (``docs/spec.md``
        §4.3), and an unowned scope holds none of its rows."""
        for scope, rows in list(self._scopes.items()):
            # Every scope has ``user_id``: the user, or the owner (None when unowned).
            scopes = [r.scope for r in rows.records] + [t.scope for t in rows.tombstones]
            if any(scope.user_id == user_id for scope in scopes):
                del self._scopes[scope]
        for key in [key for key in self._turns if key[0] == user_id]:
            del self._turns[key]

    def append(self, added: Sequence[tuple[str, MemoryRecord]]) -> None:
        """Adds new records (each with its scope id) to their scopes if held, and to the
        ready candidates of every context that sees them."""
        for scope, record in added:
            rows = self._scopes.get(scope)
            if rows is not None:
                rows.records.append(record)
        touched = {scope for scope, _ in added}
        for key, (ready, scopes) in list(self._turns.items()):
            if scopes.isdisjoint(touched):
                continue
            mine = tuple(record for scope, record in added if scope in scopes)
            if len(mine) > max(GROW_AT_MOST, len(ready.records) // 8):
                del self._turns[key]  # prepared again on its next turn
            else:
                self._turns[key] = (ready.extended(mine), scopes)

    def forget(
        self,
        scope: str,
        tombstone: ForgetTombstone | None,
        erased: Sequence[MemoryRecord],
    ) -> None:
        """Applies a forget in ``scope``: its new ``tombstone`` (None when the store held
        it already) and the records it ``erased`` (each in place of its stored self, its
        text erased), to the scope if held and to the ready candidates of every context
        that sees it."""
        if tombstone is None and not erased:
            return
        told = () if tombstone is None else (tombstone,)
        stand_ins = {record.id: record for record in erased}
        rows = self._scopes.get(scope)
        if rows is not None:
            rows.tombstones.extend(told)
            rows.records = [stand_ins.get(record.id, record) for record in rows.records]
        erased_now = tuple(erased)
        for key, (ready, scopes) in list(self._turns.items()):
            if scope in scopes:
                self._turns[key] = (ready.forgotten(told, erased_now), scopes)

    def ready(self, context: RetrievalContext) -> Prepared | None:
        """The candidates of ``context`` if they are held ready, else None (nothing read)."""
        turn = self._turns.get(_turn_key(context))
        return None if turn is None else turn[0]

    def candidates(self, context: RetrievalContext) -> Prepared:
        """The records and tombstones of the scopes ``context`` sees, checked by the
        backend once (and grown by the records added to them since)."""
        key = _turn_key(context)
        turn = self._turns.get(key)
        if turn is not None:
            return turn[0]
        wanted = _seen(context)
        rows = self._rows(wanted)
        ready = self._prepare(
            tuple(record for scope in rows for record in scope.records),
            tuple(tombstone for scope in rows for tombstone in scope.tombstones),
        )
        if len(self._turns) >= MAX_TURNS:
            self._turns.clear()
        self._turns[key] = (ready, frozenset(wanted))
        return ready

    def tombstones(self, context: RetrievalContext) -> tuple[ForgetTombstone, ...]:
        """The tombstones of the scopes ``context`` sees."""
        wanted = _seen(context)
        return tuple(tombstone for rows in self._rows(wanted) for tombstone in rows.tombstones)

    def _rows(self, wanted: Sequence[str]) -> list[ScopeRows]:
        """The rows of the scopes ``wanted``, read if not held (a context's ready
        candidates may outlive the scopes they were built from)."""
        missing = [scope for scope in wanted if scope not in self._scopes]
        if missing:
            if len(self._scopes) + len(missing) > MAX_SCOPES:
                # The half read longest ago, less those wanted now.
                for old in list(islice(self._scopes, len(self._scopes) // 2)):
                    if old not in wanted:
                        del self._scopes[old]
            self._scopes.update(self._load(missing))
        return [self._scopes[scope] for scope in wanted]


def _seen(context: RetrievalContext) -> list[str]:
    """The ids of the scopes ``context`` sees, each once (an id may repeat another's: a
    conversation id equal to its owner's user id is still two scopes)."""
    ids = seen_scope_ids(
        context.user_id, context.character_id, context.conversation_id, context.scene_id
    )
    return list(dict.fromkeys(ids))


def _turn_key(context: RetrievalContext) -> _TurnKey:
    return (context.user_id, context.character_id, context.conversation_id, context.scene_id)
