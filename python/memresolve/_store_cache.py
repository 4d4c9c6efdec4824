"""What ``MemoryStore`` keeps in memory between turns: the records and tombstones of the
scopes it has read, as objects, and each context's candidates ready to resolve.

A chat backend resolves the same few contexts turn after turn while the store changes
by a few records: a turn that finds its context here reads no rows, builds no objects,
computes no scope ids, and resolves candidates the backend has already read and checked
(``Kernel.prepare``: for the native backend, their Rust storage and unique ids). Any
change to a scope drops the ready candidates of every context (they are rebuilt from
the scopes on the next turn); the scopes themselves are dropped only when their rows
change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Final

from memresolve._call import Prepared
from memresolve._inputs import ForgetTombstone, RetrievalContext
from memresolve._records import MemoryRecord
from memresolve._scopes import scope_id

__all__ = ["ScopeRows", "StoreCache"]

#: A context's identity for the cache: its user, character, conversation and scene.
_TurnKey = tuple[str, str, str, str | None]
#: Scopes held at most; past it, the half read longest ago are let go.
MAX_SCOPES: Final = 200_000
#: Contexts whose candidates are held at most.
MAX_TURNS: Final = 20_000


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
        self._turns: dict[_TurnKey, Prepared] = {}

    def clear(self) -> None:
        self._scopes.clear()
        self._turns.clear()

    def drop(self, scope: str) -> None:
        """Forgets what is held of ``scope`` (read again on next use)."""
        self._scopes.pop(scope, None)
        self._turns.clear()

    def append(self, scope: str, record: MemoryRecord) -> None:
        """Adds a new record to ``scope`` if it is held."""
        rows = self._scopes.get(scope)
        if rows is not None:
            rows.records.append(record)
            self._turns.clear()

    def candidates(self, context: RetrievalContext) -> Prepared:
        """The records and tombstones of the scopes ``context`` sees, checked by the
        backend once (until one of those scopes changes)."""
        key = (context.user_id, context.character_id, context.conversation_id, context.scene_id)
        ready = self._turns.get(key)
        if ready is None:
            wanted = list(dict.fromkeys(scope_id(scope) for scope in context.scopes()))
            missing = [scope for scope in wanted if scope not in self._scopes]
            if missing:
                if len(self._scopes) + len(missing) > MAX_SCOPES:
                    for old in list(islice(self._scopes, len(self._scopes) // 2)):
                        del self._scopes[old]
                self._scopes.update(self._load(missing))
            rows = [self._scopes[scope] for scope in wanted]
            ready = self._prepare(
                tuple(record for scope in rows for record in scope.records),
                tuple(tombstone for scope in rows for tombstone in scope.tombstones),
            )
            if len(self._turns) >= MAX_TURNS:
                self._turns.clear()
            self._turns[key] = ready
        return ready

    def tombstones(self, context: RetrievalContext) -> tuple[ForgetTombstone, ...]:
        """The tombstones of the scopes ``context`` sees."""
        self.candidates(context)  # reads the scopes not held yet
        wanted = dict.fromkeys(scope_id(scope) for scope in context.scopes())
        return tuple(tombstone for scope in wanted for tombstone in self._scopes[scope].tombstones)
