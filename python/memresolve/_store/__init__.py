"""MemoryStore: memories kept between turns in one SQLite file."""

from memresolve._store._memory_store import ErasedUser

__all__ = ["ErasedUser"]
