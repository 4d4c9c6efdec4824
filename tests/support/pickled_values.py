"""One value of every picklable public type, built by the public API alone.

``python tests/support/pickled_values.py FILE`` pickles them. ``tests/data/pickles-0.1.0.pickle``
was written so from a checkout of b722eb1, the last flat layout before the package moved into
wings (its Python; the compiled module of a later build, which computes the same values), and
names the private module paths of that layout (``memresolve._records``, ``memresolve._result``,
...): the pickle test loads it to prove that pickles of earlier releases still load.
"""

from __future__ import annotations

import pickle
import sys
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import memresolve as mr


def _day(day: int) -> datetime:
    return datetime(2026, 7, day, tzinfo=UTC)


def records() -> list[mr.MemoryRecord]:
    """One record of each scope kind, a supersession among them."""
    user = mr.UserScope("u1")
    conversation = mr.ConversationScope("k1", user_id="u1")
    return [
        mr.MemoryRecord(id="m1", key="pet.name", value="Harbor", scope=user, status="active",
                        authority="model-inferred", confidence=0.6, valid_from=_day(1),
                        version=1, source_message_ids=("msg-1",)),
        mr.MemoryRecord(id="m2", key="pet.name", value="Marlowe", scope=user, status="active",
                        authority="user-corrected", confidence=1.0, valid_from=_day(2),
                        supersedes="m1", version=2),
        mr.MemoryRecord(id="m3", key="mood", value="tense",
                        scope=mr.SceneScope("k1", "s1", user_id="u1"), status="active",
                        authority="rule-extracted", confidence=0.9, valid_from=_day(3),
                        valid_until=_day(20), version=1),
        mr.MemoryRecord(id="m4", key="c.name", value="Nyx", scope=mr.CharacterScope("u1", "c1"),
                        status="active", authority="user-confirmed", confidence=1.0,
                        valid_from=_day(1), version=1),
        mr.MemoryRecord(id="m5", key="topic", value="boats", scope=conversation,
                        status="expired", authority="model-inferred", confidence=0.5,
                        valid_from=_day(1), version=1),
    ]  # fmt: skip


CONTEXT = mr.RetrievalContext(
    now=_day(30), user_id="u1", character_id="c1", conversation_id="k1", scene_id="s1"
)
TOMBSTONE = mr.ForgetTombstone(
    key="topic", scope=mr.ConversationScope("k1", user_id="u1"), forgotten_at=_day(5)
)


def in_memory_values() -> dict[str, object]:
    """Values whose equality does not depend on files or clocks."""
    result = mr.resolve(records(), CONTEXT, tombstones=[TOMBSTONE])
    return {
        "records": records(),
        "scopes": [
            mr.UserScope("u1"),
            mr.CharacterScope("u1", "c1"),
            mr.ConversationScope("k1", user_id="u1"),
            mr.ConversationScope("k2"),
            mr.SceneScope("k1", "s1", user_id="u1"),
        ],
        "enums": [
            *mr.Status,
            *mr.Authority,
            *mr.Reason,
            *mr.Certainty,
            *mr.ScopeKind,
            *mr.PurgeCause,
        ],
        "context": CONTEXT,
        "tombstone": TOMBSTONE,
        "resolution": result,
        "prompt": result.prompt_memories(),
        "trace": result.trace,
        "exclusions": list(result.excluded),
        "normalization": mr.normalize(records(), now=_day(30)),
        "purge_plan": mr.forget_sweep(records(), [TOMBSTONE]),
        "error": mr.InvalidInputError(
            "bad", kind=mr.ErrorKind.INCONSISTENT, field="value", record_id="m1"
        ),
        "store_error": mr.StoreBusyError("the store is busy", path="/srv/memories.db"),
    }


def values_with_files(folder: Path) -> dict[str, object]:
    """The summaries and answers of the store and the file-to-file jobs, made in ``folder``."""
    store = mr.MemoryStore(folder / "store.db")
    try:
        store.add(records())
        explanation = store.explain("m1", CONTEXT)
        export = store.export_arrow()
        erased = store.erase_user("u9")
    finally:
        store.close()
    story = resources.files("memresolve") / "_data" / "story"
    dataset = mr.resolve_dataset(
        story / "records.parquet",
        story / "contexts.parquet",
        folder / "decisions",
        tombstones=story / "tombstones.parquet",
    )
    job = mr.normalize_dataset(story / "records.parquet", folder / "statuses", now=_day(30))
    return {
        "explanation": explanation,
        "erased_user": erased,
        "arrow_export": export,
        "dataset_summary": dataset,
        "job_summary": job,
    }


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        values = {**in_memory_values(), **values_with_files(Path(folder))}
        Path(sys.argv[1]).write_bytes(pickle.dumps(values, protocol=4))
