"""One input through every form a user can call it in: the harness of
``tests/model/test_catalogue.py``.

A catalogue test states an input once and asks either for its decision or for its rejection;
the harness runs it per turn on each backend, in batch on each backend, through JSON Lines and
the ``memresolve resolve`` command, through a ``MemoryStore``, and through the file-to-file
dataset job, and fails unless every form gives the same answer.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import memresolve as mr
from memresolve import _backend
from memresolve._backend import available_backends
from memresolve._cli._main import main as command
from memresolve._engine._job_kernels import get_jobs
from memresolve._engine._kernels import get_backend, get_batch_resolver
from memresolve._model._call import resolve_with
from memresolve._model._records import RECORD_TYPES

BACKENDS = available_backends()
#: The dataset job runs on the compiled core only: not in a process forced to the reference.
HAS_DATASET_JOB = _backend.NATIVE is not None
CONTEXT_ID = "turn"
Where = tuple[mr.ErrorKind, str | None, int | None, str | None]


@dataclass(frozen=True)
class Decision:
    """What every form agrees on: the winners in order, and each other candidate's reason.

    Batch forms leave ``scope`` exclusions out (docs/spec.md §4.2), so a candidate in neither
    list was out of scope.
    """

    active: tuple[str, ...]
    excluded: Mapping[str, str]

    def reason(self, record_id: str) -> str:
        if record_id in self.active:
            return "active"
        return self.excluded.get(record_id, "scope")


def _from_resolution(result: mr.Resolution) -> Decision:
    return Decision(
        tuple(m.id for m in result.active),
        {e.id: e.reason.value for e in result.excluded if e.reason is not mr.Reason.SCOPE},
    )


def _from_table(table: pa.Table) -> Decision:
    rows = [r for r in table.to_pylist() if r["context_id"] == CONTEXT_ID]
    return Decision(
        tuple(r["record_id"] for r in rows if r["decision"] == "active"),
        {r["record_id"]: r["decision"] for r in rows if r["decision"] != "active"},
    )


def _contexts_table(context: mr.RetrievalContext) -> pa.Table:
    return mr.contexts_to_arrow([(CONTEXT_ID, context)])


def _agreed(answers: Mapping[str, Decision]) -> Decision:
    distinct = set(map(repr, answers.values()))
    assert len(distinct) == 1, "forms disagree:\n" + "\n".join(
        f"  {form}: {answer}" for form, answer in answers.items()
    )
    return next(iter(answers.values()))


# Decisions ----------------------------------------------------------------------------------


def decide(
    records: Iterable[mr.MemoryRecord],
    context: mr.RetrievalContext,
    tombstones: Iterable[mr.ForgetTombstone] = (),
) -> Decision:
    """The decision of every form, per turn and in batch, which must all agree."""
    records, tombstones = list(records), list(tombstones)
    answers: dict[str, Decision] = {}
    for backend in BACKENDS:
        kernel = get_backend(backend)
        answers[f"resolve/{backend}"] = _from_resolution(
            resolve_with(kernel.resolve_rows, records, context, tombstones)
        )
    answers["json-lines"] = _from_resolution(_through_json_lines(records, context, tombstones))
    answers["command"] = _through_command(records, context, tombstones)
    answers["store"] = _through_store(records, context, tombstones)
    answers.update(
        _arrow_answers(
            mr.records_to_arrow(records),
            context,
            mr.tombstones_to_arrow(tombstones),
            per_turn=False,
        )
    )
    return _agreed(answers)


def decide_arrow(
    records: pa.Table, context: mr.RetrievalContext, tombstones: pa.Table | None = None
) -> Decision:
    """The decision of every form that reads Arrow, which must all agree."""
    return _agreed(_arrow_answers(records, context, tombstones, per_turn=True))


def _arrow_answers(
    records: pa.Table, context: mr.RetrievalContext, tombstones: pa.Table | None, *, per_turn: bool
) -> dict[str, Decision]:
    contexts = _contexts_table(context)
    answers: dict[str, Decision] = {}
    for backend in BACKENDS:
        table = get_batch_resolver(backend)(
            records, contexts, tombstones=tombstones, include_excluded=True
        )
        answers[f"resolve_batch/{backend}"] = _from_table(table)
    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "decisions"
        if HAS_DATASET_JOB:
            mr.resolve_dataset(
                records, contexts, output, tombstones=tombstones, include_excluded=True
            )
            answers["resolve_dataset"] = _from_table(pq.read_table(output))
    if per_turn:
        read = mr.records_from_arrow(records)
        forgotten = [] if tombstones is None else mr.tombstones_from_arrow(tombstones)
        answers["records_from_arrow"] = _from_resolution(
            mr.resolve(read, context, tombstones=forgotten)
        )
        store = mr.MemoryStore(shared_conversations=True)
        store.add_arrow(records)
        for tombstone in forgotten:
            _forget_in(store, tombstone)
        answers["store.add_arrow"] = _from_resolution(store.resolve(context))
    return answers


def _through_json_lines(
    records: list[mr.MemoryRecord],
    context: mr.RetrievalContext,
    tombstones: list[mr.ForgetTombstone],
) -> mr.Resolution:
    lines = io.StringIO()
    mr.write_records(records, lines)
    forgets = io.StringIO()
    mr.write_tombstones(tombstones, forgets)
    contexts = io.StringIO()
    mr.write_contexts([context], contexts)
    (read_context,) = mr.read_contexts(io.StringIO(contexts.getvalue()))
    return mr.resolve(
        mr.read_records(io.StringIO(lines.getvalue())),
        read_context,
        tombstones=mr.read_tombstones(io.StringIO(forgets.getvalue())),
    )


def _through_command(
    records: list[mr.MemoryRecord],
    context: mr.RetrievalContext,
    tombstones: list[mr.ForgetTombstone],
) -> Decision:
    with tempfile.TemporaryDirectory() as scratch:
        paths = {name: Path(scratch) / f"{name}.jsonl" for name in ("r", "c", "t")}
        mr.write_records(records, paths["r"])
        mr.write_contexts([context], paths["c"])
        mr.write_tombstones(tombstones, paths["t"])
        argv = [str(paths["r"]), "--contexts", str(paths["c"]), "--tombstones", str(paths["t"])]
        status, out, _ = run_command(["resolve", *argv, "--json"])
    assert status == 0, out
    (answer,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    return Decision(
        tuple(m["id"] for m in answer["active"]),
        {e["id"]: e["reason"] for e in answer["excluded"] if e["reason"] != "scope"},
    )


def _forget_in(store: mr.MemoryStore, tombstone: mr.ForgetTombstone) -> None:
    if tombstone.user_wide:
        assert tombstone.scope.user_id is not None  # a user-wide tombstone is on a user scope
        store.forget_for_user(
            tombstone.scope.user_id,
            tombstone.key,
            at=tombstone.forgotten_at,
            blocks_sources_before=tombstone.blocks_sources_before,
        )
        return
    store.forget(
        tombstone.key,
        tombstone.scope,
        at=tombstone.forgotten_at,
        blocks_sources_before=tombstone.blocks_sources_before,
    )


def _through_store(
    records: list[mr.MemoryRecord],
    context: mr.RetrievalContext,
    tombstones: list[mr.ForgetTombstone],
) -> Decision:
    store = mr.MemoryStore(shared_conversations=True)
    store.add(records)
    for tombstone in tombstones:
        _forget_in(store, tombstone)
    return _from_resolution(store.resolve(context))


def run_command(argv: list[str]) -> tuple[int, str, str]:
    """``memresolve ARGV`` in this process: its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = command(argv)
    return status, out.getvalue(), err.getvalue()


# Rejections ---------------------------------------------------------------------------------


def _where(call: Callable[[], object]) -> Where:
    try:
        call()
    except mr.InvalidInputError as error:
        return error.where()
    raise AssertionError("accepted an input the contract rejects")


def _same(answers: Mapping[str, Where]) -> Where:
    assert len(set(answers.values())) == 1, "forms disagree:\n" + "\n".join(
        f"  {form}: {where}" for form, where in answers.items()
    )
    return next(iter(answers.values()))


def reject_record(**fields: Any) -> Where:
    """How every record storage's constructor and ``from_dict`` refuse these fields."""
    answers = {
        f"{storage.__name__}": _where(partial(storage, **fields)) for storage in RECORD_TYPES
    }
    row = dict(fields)
    scope = row.pop("scope", None)
    if isinstance(scope, mr.UserScope | mr.CharacterScope | mr.ConversationScope | mr.SceneScope):
        row.update(_flat_scope(scope))
    answers["from_dict"] = _where(lambda: mr.MemoryRecord.from_dict(row))
    return _same(answers)


def _flat_scope(scope: mr.Scope) -> dict[str, str | None]:
    return {
        "scope_kind": scope.kind.value,
        "user_id": getattr(scope, "user_id", None),
        "character_id": getattr(scope, "character_id", None),
        "conversation_id": getattr(scope, "conversation_id", None),
        "scene_id": getattr(scope, "scene_id", None),
    }


def reject_json_lines(line: str | bytes, *, what: str = "records") -> Where:
    """How the JSON Lines reader and ``memresolve resolve`` refuse a file of this one line.

    Returns the reader's ``(kind, field, line, record_id)``; the command must exit 2 and name
    the file and line.
    """
    data = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
    readers: dict[str, Callable[[Path], object]] = {
        "records": mr.read_records,
        "contexts": mr.read_contexts,
    }
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "input.jsonl"
        path.write_bytes(data + b"\n")
        try:
            readers[what](path)
        except mr.InvalidInputError as error:
            where = (error.kind, error.field, error.line, error.record_id)
        else:
            raise AssertionError("the JSON Lines reader accepted a line the contract rejects")
        if what == "records":
            argv = ["resolve", str(path), "--now", "2026-07-30T12:00Z", "--user", "u"]
        else:
            argv = ["resolve", str(path), "--contexts", str(path)]
            (Path(scratch) / "none.jsonl").write_text("")
            argv[1] = str(Path(scratch) / "none.jsonl")
        status, out, err = run_command(argv)
    assert status == 2, (status, out, err)
    assert "input.jsonl line 1" in err, err
    return where


def reject_arrow(
    records: pa.Table,
    contexts: pa.Table | None = None,
    tombstones: pa.Table | None = None,
) -> Where:
    """How every form that reads these Arrow tables refuses them, having written nothing.

    Batch resolution on each backend and the dataset job (which leaves no output) read all
    three; the converters, ``MemoryStore.add_arrow`` (the store stays empty), and the
    normaliser and forget sweep in batch read records and tombstones.
    """
    answers: dict[str, Where] = {}
    read_contexts = _DEFAULT_CONTEXTS if contexts is None else contexts
    for backend in BACKENDS:
        answers[f"resolve_batch/{backend}"] = _where(
            partial(get_batch_resolver(backend), records, read_contexts, tombstones=tombstones)
        )
    if HAS_DATASET_JOB:
        with tempfile.TemporaryDirectory() as scratch:
            output = Path(scratch) / "decisions"
            answers["resolve_dataset"] = _where(
                lambda: mr.resolve_dataset(records, read_contexts, output, tombstones=tombstones)
            )
            assert not output.exists(), "a refused dataset job left an output"
    if contexts is not None:
        answers["contexts_from_arrow"] = _where(lambda: mr.contexts_from_arrow(contexts))
        return _same(answers)
    if tombstones is None:
        answers["records_from_arrow"] = _where(lambda: mr.records_from_arrow(records))
        store = mr.MemoryStore(shared_conversations=True)
        answers["store.add_arrow"] = _where(lambda: store.add_arrow(records))
        assert store.to_arrow().num_rows == 0, "a refused bulk load wrote rows"
    else:
        answers["tombstones_from_arrow"] = _where(lambda: mr.tombstones_from_arrow(tombstones))
    for backend in BACKENDS:
        jobs = get_jobs(backend)
        answers[f"normalize_batch/{backend}"] = _where(
            partial(jobs.normalize_batch, records, now=A_NOW, tombstones=tombstones)
        )
        answers[f"forget_sweep_batch/{backend}"] = _where(
            partial(jobs.forget_sweep_batch, records, tombstones)
        )
    return _same(answers)


A_NOW = datetime(2026, 7, 30, 12, tzinfo=UTC)
_DEFAULT_CONTEXTS = _contexts_table(
    mr.RetrievalContext(now=A_NOW, user_id="u", character_id="c", conversation_id="k")
)
