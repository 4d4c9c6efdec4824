"""The SQL ``MemoryStore`` runs besides its writes: lookups by many ids or scope ids at
once (in chunks SQLite's parameter limit allows), and the creation of a private file."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from memresolve import _store_schema as schema
from memresolve._inputs import ForgetTombstone

__all__ = ["Known", "chunks", "create_private", "known_hashes", "marks", "tombstones_of"]

#: Parameters per statement, well under SQLite's limit.
CHUNK: Final = 500


class Known(NamedTuple):
    """What the store holds of a record id: its hash, and whether its text was erased."""

    hash: bytes
    erased: bool


def chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def marks(count: int) -> str:
    """``count`` parameter marks, comma-separated."""
    return ",".join("?" * count)


def create_private(path: Path) -> None:
    """Creates ``path`` readable and writable by its owner only (SQLite gives its
    journal and write-ahead log the same mode)."""
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(descriptor)


def known_hashes(connection: sqlite3.Connection, ids: Sequence[str]) -> dict[str, Known]:
    """The hash and erasure of each of ``ids`` the store holds."""
    known: dict[str, Known] = {}
    for chunk in chunks(ids):
        for row in connection.execute(
            f"SELECT id, content_hash, erased FROM records WHERE id IN ({marks(len(chunk))})",
            chunk,
        ):
            known[row["id"]] = Known(row["content_hash"], bool(row["erased"]))
    return known


def tombstones_of(
    connection: sqlite3.Connection, scope_ids: Sequence[str]
) -> list[ForgetTombstone]:
    """The tombstones of the scopes ``scope_ids``."""
    found: list[ForgetTombstone] = []
    for chunk in chunks(list(dict.fromkeys(scope_ids))):
        found.extend(
            schema.tombstone_from_row(row)
            for row in connection.execute(
                f"SELECT * FROM tombstones WHERE scope_id IN ({marks(len(chunk))})", chunk
            )
        )
    return found
