"""Valid arguments for every public callable, and a walk of every store method with them:
what the error-contract tests call, in process or in a child on a full disk."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import memresolve as mr
from memresolve import testing as mrt

T = datetime(2026, 7, 2, tzinfo=UTC)
RECORD = mr.MemoryRecord(
    id="m1",
    key="k",
    value="v",
    scope=mr.UserScope("u"),
    authority="model-inferred",
    confidence=0.5,
    valid_from=datetime(2026, 7, 1, tzinfo=UTC),
)
CONTEXT = mr.RetrievalContext(now=T, user_id="u", character_id="c", conversation_id="k")
TOMBSTONE = mr.ForgetTombstone(key="k", scope=mr.UserScope("u"), forgotten_at=T)


#: Arrow inputs for the functions that take tables.
TABLE_FUNCTIONS = {
    "resolve_batch",
    "resolve_dataset",
    "normalize_batch",
    "forget_sweep_batch",
    "normalize_dataset",
    "forget_sweep_dataset",
}


def valid_argument(function: str, parameter: inspect.Parameter, scratch: Path) -> object:
    """A valid value for ``parameter`` of ``function``."""
    name = parameter.name
    if function in TABLE_FUNCTIONS and name in ("records", "contexts", "tombstones"):
        return {
            "records": mr.records_to_arrow([RECORD]),
            "contexts": mr.contexts_to_arrow([("c1", CONTEXT)]),
            "tombstones": mr.tombstones_to_arrow([TOMBSTONE]),
        }[name]
    if name == "output":
        return scratch / f"out-{os.urandom(6).hex()}"
    if name == "source":
        path = scratch / f"{function}.jsonl"
        if not path.exists():
            if function == "read_records":
                mr.write_records([RECORD], path)
            elif function == "read_contexts":
                mr.write_contexts([CONTEXT], path)
            else:
                mr.write_tombstones([TOMBSTONE], path)
        return path
    valid: dict[str, object] = {
        "records": [RECORD],
        "contexts": [CONTEXT] if function == "write_contexts" else [("c1", CONTEXT)],
        "context": CONTEXT,
        "tombstones": [TOMBSTONE],
        "now": T,
        "at": T,
        # The store's forget stamps ``at``; ``forgotten_at`` is its deprecated alias.
        "forgotten_at": None if function in ("forget", "aforget") else T,
        "key": "k",
        "authority": "model-inferred",
        "confidence": 0.5,
        "scope": mr.UserScope("u"),
        "record": RECORD,
        "user_id": "u",
        "character_id": "c",
        "conversation_id": "k",
        "scene_id": "s",
        "destination": scratch / "written.jsonl",
        "data": mr.records_to_arrow([RECORD]),
        "table": mr.records_to_arrow([RECORD]),
        "text_id": "user:u",
        "record_id": "m1",
        "value": "v",
        "id": "m9",
        "row": RECORD.to_dict(),
        "path": None,
        "universe": mrt.Universe(("u",), ("c",), ("k",), ("s",), ("key",)),
    }
    if name in valid:
        return valid[name]
    return None if parameter.default is inspect.Parameter.empty else parameter.default


def store_methods(store: mr.MemoryStore) -> list[tuple[str, Callable[..., Any]]]:
    """Every public method of a store (its asyncio twins included), but ``close``."""
    return [
        (name, getattr(store, name))
        for name in dir(mr.MemoryStore)
        if not name.startswith("_") and name != "close" and callable(getattr(store, name))
    ]


def walk_store(store: mr.MemoryStore, scratch: Path) -> dict[str, str]:
    """Calls every public method with valid arguments; returns what raised outside the
    contract (``MemresolveError`` but ``InternalError``, ``OSError``), by method."""
    escapes: dict[str, str] = {}
    for name, method in store_methods(store):
        parameters = inspect.signature(method).parameters.values()
        short = name[1:] if name.startswith("a") and hasattr(mr.MemoryStore, name[1:]) else name
        kwargs = {p.name: valid_argument(short, p, scratch) for p in parameters}
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        if "contexts" in kwargs:
            kwargs["contexts"] = mr.contexts_to_arrow([("c1", CONTEXT)])
        try:
            result = method(**kwargs)
            if inspect.iscoroutine(result):
                asyncio.run(result)
            elif inspect.isgenerator(result):
                list(result)
        except mr.InternalError as exc:  # a bug, not a bad file: an SQLite error untranslated
            escapes[name] = f"InternalError: {exc}"
        except (mr.MemresolveError, OSError):
            pass
        except Exception as exc:
            escapes[name] = f"{type(exc).__name__}: {exc}"
    return escapes
