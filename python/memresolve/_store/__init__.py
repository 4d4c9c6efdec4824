"""MemoryStore: memories kept between turns in one SQLite file.

This is the wing's face: what other wings and the package use of it. Its modules are
private to it."""

from memresolve._store._memory_store import ArrowExport, ErasedUser, MemoryStore
from memresolve._store._observe import Observation, ObserveOutcome

__all__ = [
    "ArrowExport",
    "ErasedUser",
    "MemoryStore",
    "Observation",
    "ObserveOutcome",
]
