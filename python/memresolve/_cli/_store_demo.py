"""``memresolve demo --store FILE``: the bundled story kept in a ``MemoryStore`` file.

Loads the story's records, resolves its three contexts, forgets what the story's
tombstone forgets, shows which records had their text erased and that the file no
longer holds that text, and resolves again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

from memresolve._model import ForgetTombstone, MemoryRecord, Resolution, RetrievalContext, arguments
from memresolve._store import MemoryStore
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["run_store_demo"]


def _file_holds(path: Path, text: str) -> bool:
    """Whether the store file or its write-ahead log holds ``text`` (UTF-8)."""
    wanted = text.encode()
    return any(
        wanted in candidate.read_bytes()
        for candidate in (path, path.with_name(path.name + "-wal"))
        if candidate.exists()
    )


#: The tables a store file holds, at any schema version.
_STORE_TABLES: Final = frozenset(
    {"records", "record_text", "tombstones", "erasures", "store_policy"}
)


def _check_demo_store(path: Path, story: set[str]) -> None:
    """Refuses ``path`` unless it is the demo's own earlier output: a store file (no table
    but a store's) holding exactly the story's records and nothing else. The demo replaces
    that, never a file of the user's (an empty store included)."""
    ours = False
    if path.is_file() and not path.is_symlink():
        try:
            # Read-only, and not through MemoryStore, which would migrate an older file.
            connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                tables = {
                    row[0]
                    for row in connection.execute(
                        "SELECT name FROM sqlite_schema WHERE type = 'table'"
                    )
                }
                held = {row[0] for row in connection.execute("SELECT id FROM records")}
                ours = tables <= _STORE_TABLES and held == story
            finally:
                connection.close()
        except sqlite3.Error:
            ours = False
    if not ours:
        raise InvalidInputError(
            f"store: {path} exists and is not a store the demo wrote; it is left as it is "
            "(give another path, or remove it)",
            kind=ErrorKind.INCONSISTENT,
            field="store",
            file=str(path),
        )


def _show(out: TextIO, contexts: Sequence[RetrievalContext], results: list[Resolution]) -> None:
    for number, (context, result) in enumerate(zip(contexts, results, strict=True), start=1):
        out.write(
            f"  context {number} ({context.user_id}, {context.character_id}, "
            f"{context.conversation_id}, {context.scene_id or 'no scene'}, "
            f"{context.now.isoformat()}):\n"
        )
        for memory in result.prompt_memories():
            out.write(f"    {memory.key:<24} {memory.certainty:<10} {memory.value!r}\n")


def run_store_demo(
    path: Path,
    records: Sequence[MemoryRecord],
    contexts: Sequence[RetrievalContext],
    tombstones: Sequence[ForgetTombstone],
    out: TextIO,
) -> None:
    """The demo on a store at ``path``, replaced if it exists and is an earlier run's.

    Raises:
        InvalidInputError: ``path`` exists and is not a store the demo wrote (``store``):
            nothing is removed.
    """
    path = arguments.path(path, "store")  # checked before anything is removed
    if path.exists() or path.is_symlink():
        _check_demo_store(path, {record.id for record in records})
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    # The story's conversation id is unique across its users: its unowned conversation and
    # scene records are shared by design (docs/store.md, "Owners: a store fails closed").
    with MemoryStore(path, shared_conversations=True) as store:
        added = store.add(records)
        out.write(f"Stored {added} records in {path} (mode {path.stat().st_mode & 0o777:o}).\n")
        out.write("Before any forget, the prompt of each context holds:\n")
        _show(out, contexts, [store.resolve(context) for context in contexts])
        by_id = {record.id: record for record in records}
        for tombstone in tombstones:
            erased = store.forget(
                tombstone.key,
                tombstone.scope,
                at=tombstone.forgotten_at,
                blocks_sources_before=tombstone.blocks_sources_before,
            )
            out.write(
                f"\nForget {tombstone.key!r} in {tombstone.scope} "
                f"(evidence up to {tombstone.blocks_sources_before.isoformat()}): "
                f"erased the text of {', '.join(erased) or 'no record'}.\n"
            )
            for record_id in erased:
                held = _file_holds(path, by_id[record_id].value)
                out.write(
                    f"  the file still holds the text of {record_id}: {'YES' if held else 'no'}\n"
                )
        out.write("\nAfter the forget, the prompt of each context holds:\n")
        _show(out, contexts, [store.resolve(context) for context in contexts])
