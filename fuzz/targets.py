"""The fuzz targets: each takes arbitrary bytes and must return, or raise nothing but a
``MemresolveError``; a crash, a hang or any other exception is a finding.

Plain functions with no fuzzer import, so that ``tests/engine/test_fuzz_findings.py`` replays the
committed corpora and findings through them in every test run; ``fuzz/run.py`` drives them
with atheris (coverage-guided, the native extension built with sanitizer coverage).

- ``arrow``: the bytes (after a role byte) as an Arrow IPC stream, fed to every Arrow reader
  as records, contexts or tombstones, on both backends.
- ``jsonl``: the bytes as a JSON Lines file of records, contexts or tombstones.
- ``pipeline``: the bytes choose records, a context and tombstones from small pools; both
  backends must agree, and the result must keep the pipeline's invariants.
- ``record``: the bytes choose a value of an arbitrary type for each constructor argument;
  both record storages must accept or refuse it alike.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from pyarrow import ipc

import memresolve as mr
from memresolve import reference
from memresolve._engine._kernels import get_backend
from memresolve._model import _records
from memresolve._model._call import resolve_prepared, resolve_with

NOW = datetime(2026, 7, 30, tzinfo=UTC)
_RECORD = mr.MemoryRecord(
    id="m1",
    key="k",
    value="v",
    scope=mr.UserScope("u"),
    authority="model-inferred",
    confidence=0.5,
    valid_from=datetime(2026, 7, 1, tzinfo=UTC),
)
_CONTEXT = mr.RetrievalContext(now=NOW, user_id="u", character_id="c", conversation_id="k")
RECORDS = mr.records_to_arrow([_RECORD])
CONTEXTS = mr.contexts_to_arrow([("c", _CONTEXT)])
TOMBSTONES = mr.tombstones_to_arrow(
    [mr.ForgetTombstone(key="k", scope=mr.UserScope("u"), forgotten_at=NOW)]
)
NATIVE = mr.backend_name() == "native"


def _each(calls: list[Callable[[], object]]) -> None:
    for call in calls:
        with contextlib.suppress(mr.MemresolveError):
            call()


def arrow(data: bytes) -> None:
    if not data:
        return
    try:
        table = ipc.open_stream(io.BytesIO(data[1:])).read_all()
    except Exception:
        return
    role = data[0] % 3
    calls: list[Callable[[], object]]
    if role == 0:
        calls = [
            lambda: mr.records_from_arrow(table),
            lambda: reference.resolve_batch(table, CONTEXTS, tombstones=TOMBSTONES),
            lambda: reference.normalize_batch(table, now=NOW, tombstones=TOMBSTONES),
        ]
        if NATIVE:
            calls += [
                lambda: mr.resolve_batch(table, CONTEXTS, tombstones=TOMBSTONES, with_values=True),
                lambda: mr.normalize_batch(table, now=NOW, tombstones=TOMBSTONES),
                lambda: mr.forget_sweep_batch(table, TOMBSTONES),
            ]
    elif role == 1:
        calls = [
            lambda: mr.contexts_from_arrow(table),
            lambda: reference.resolve_batch(RECORDS, table),
        ]
        if NATIVE:
            calls.append(lambda: mr.resolve_batch(RECORDS, table))
    else:
        calls = [
            lambda: mr.tombstones_from_arrow(table),
            lambda: reference.resolve_batch(RECORDS, CONTEXTS, tombstones=table),
        ]
        if NATIVE:
            calls += [
                lambda: mr.resolve_batch(RECORDS, CONTEXTS, tombstones=table),
                lambda: mr.normalize_batch(RECORDS, now=NOW, tombstones=table),
            ]
    _each(calls)


def jsonl(data: bytes) -> None:
    for read in (mr.read_records, mr.read_contexts, mr.read_tombstones):
        _each([lambda read=read: read(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))])  # type: ignore[misc]


class _Bytes:
    """Draws small choices from the input, then zeros once it is used up."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def byte(self) -> int:
        value = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return value

    def pick(self, items: list[Any] | tuple[Any, ...]) -> Any:
        return items[self.byte() % len(items)]


_SCOPES = (
    mr.UserScope("u"),
    mr.UserScope("v"),
    mr.CharacterScope("u", "c"),
    mr.CharacterScope("u", "d"),
    mr.ConversationScope("k"),
    mr.ConversationScope("k", user_id="u"),
    mr.SceneScope("k", "s"),
    mr.SceneScope("k", "s", user_id="v"),
)
_TIMES = tuple(NOW + timedelta(days=d) for d in (-9, -1, 0, 1, 9))


def pipeline(data: bytes) -> None:
    draw = _Bytes(data)
    ids = ["a", "b", "c", "d", "e", "f"][: 1 + draw.byte() % 6]
    records = [
        mr.MemoryRecord(
            id=record_id,
            key=draw.pick(("k", "k", "j")),
            value="v",
            scope=draw.pick(_SCOPES),
            status=draw.pick(("active", "active", "superseded", "expired", "forgotten")),
            authority=draw.pick(("model-inferred", "rule-extracted", "user-confirmed")),
            confidence=0.5,
            valid_from=draw.pick(_TIMES),
            valid_until=draw.pick((None, None, *_TIMES)),
            supersedes=draw.pick((None, None, "a", "b", "c", "z")),
            version=draw.byte() % 3,
            observed_at=draw.pick((None, *_TIMES)),
        )
        for record_id in ids
    ]
    context = mr.RetrievalContext(
        now=draw.pick(_TIMES),
        user_id=draw.pick(("u", "v")),
        character_id=draw.pick(("c", "d")),
        conversation_id="k",
        scene_id=draw.pick((None, "s")),
    )
    tombstones = [
        mr.ForgetTombstone(
            key=draw.pick(("k", "j")), scope=draw.pick(_SCOPES), forgotten_at=draw.pick(_TIMES)
        )
        for _ in range(draw.byte() % 3)
    ]
    results = [
        resolve_with(get_backend(name).resolve_rows, records, context, tombstones)
        for name in (("reference", "native") if NATIVE else ("reference",))
    ]
    if NATIVE:  # what MemoryStore serves: the candidates prepared once, in Rust
        native = get_backend("native")
        prepared = native.prepare(tuple(records), tuple(tombstones))
        results.append(resolve_prepared(prepared, context))
        # As a store's turns leave them: grown by records, then told tombstones with
        # the first record's text erased.
        split, told = draw.byte() % (len(records) + 1), draw.byte() % (len(tombstones) + 1)
        erased = records[0].to_dict() | {"value": "", "source_message_ids": []}
        updated = (
            native.prepare(tuple(records[:split]), tuple(tombstones[:told]))
            .extended(tuple(records[split:]))
            .forgotten(tuple(tombstones[told:]), (mr.MemoryRecord.from_dict(erased),))
        )
        results.append(resolve_prepared(updated, context))
    first = results[0]
    for other in results[1:]:
        assert [r.id for r in other.active] == [r.id for r in first.active]
        assert other.excluded == first.excluded
        assert other.trace == first.trace
    groups = [(mr.scope_id(r.scope), r.key) for r in first.active]
    assert len(groups) == len(set(groups)), "two winners for one (scope, key)"
    for winner in first.active:
        assert reference.scope_matches(winner.scope, context)
        assert reference.in_validity_interval(winner, context.now)
        assert not reference.blocked_by_tombstone(winner, tombstones)
    assert len(first.active) + len(first.excluded) == len(records)
    changes = mr.normalize(records, now=context.now, tombstones=tombstones)
    assert reference.normalize_rows(tuple(records), tuple(tombstones), context.now) == [
        (ids.index(c.record_id), c.new_status)
        for c in sorted(changes, key=lambda c: ids.index(c.record_id))
    ]


_VALUES: tuple[object, ...] = (
    None, "", "x", "\ud800", b"x", 0, 1, -1, 2**63, 1.5, float("nan"), True, [], ["a"], ("a",),
    mr.UserScope("u"), mr.ConversationScope("k", user_id="u"), "active", "forgotten",
    "user-corrected", datetime(2026, 7, 1), datetime(2026, 7, 1, tzinfo=UTC),
    datetime(9999, 12, 31, 23, tzinfo=timezone(-timedelta(hours=23))), object(),
)  # fmt: skip


def record(data: bytes) -> None:
    draw = _Bytes(data)
    arguments = {name: draw.pick(_VALUES) for name in _records.RECORD_FIELDS if draw.byte() % 4}
    outcomes = []
    for storage in _records.RECORD_TYPES:
        try:
            built = storage(**arguments)
            outcomes.append(("built", built.to_dict()))
        except mr.InvalidInputError as error:
            outcomes.append(("refused", (error.kind, error.field, error.record_id)))
    assert all(outcome == outcomes[0] for outcome in outcomes), outcomes


TARGETS: dict[str, Callable[[bytes], None]] = {
    "arrow": arrow,
    "jsonl": jsonl,
    "pipeline": pipeline,
    "record": record,
}
