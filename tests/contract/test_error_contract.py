"""The error contract (docs/errors.md): every public callable, given hostile arguments of
every wrong type and shape, returns or raises a ``MemresolveError``, never an exception from
inside the package.

The walk fills every parameter with a valid value, then replaces one at a time with each
hostile value. Allowed besides ``MemresolveError``: ``OSError`` from the file system
(passed through unchanged), ``KeyError`` from a ``Resolution`` asked about an id that was
not a candidate (documented), and the caller's own exception raised by its own object.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from public_calls import CONTEXT, RECORD, TOMBSTONE, T
from public_calls import valid_argument as _valid
from public_calls import walk_store as _walk_store

import memresolve as mr
from memresolve import reference
from memresolve import testing as mrt
from small_disk import on_a_small_file_system


class CallerError(Exception):
    """What the caller's own hostile object raises: it passes through, as in any library."""


class Raising:
    def __getattr__(self, name: str) -> Any:
        raise CallerError(name)

    def __iter__(self) -> Iterator[Any]:
        raise CallerError("iter")

    def __len__(self) -> int:
        raise CallerError("len")


HOSTILE: list[object] = [
    None,
    0,
    -1,
    10**30,
    1.5,
    float("nan"),
    True,
    "",
    "x",
    "\ud800",
    "nul\x00path",
    b"x",
    [],
    [None],
    [1],
    ["\ud800"],
    {},
    object(),
    Raising(),
    [Raising()],
    datetime(2026, 7, 1),  # naive
    [RECORD, RECORD],
    pa.table({"a": [1]}),
    pa.Table.from_arrays([pa.array(["x"]), pa.array(["y"])], names=["id", "id"]),
]


def _public_callables() -> list[tuple[str, Callable[..., Any]]]:
    resolution = mr.resolve([RECORD], CONTEXT)
    store = mr.MemoryStore()
    store.add([RECORD])
    found: list[tuple[str, Callable[..., Any]]] = [
        (name, getattr(mr, name))
        for name in mr.__all__
        if callable(getattr(mr, name))
        and (not inspect.isclass(getattr(mr, name)) or name in CONSTRUCTED)
    ]
    found += [(f"reference.{name}", getattr(reference, name)) for name in REFERENCE_ENTRY_POINTS]
    found += [
        (f"MemoryStore.{name}", getattr(store, name))
        for name in (
            "add",
            "add_arrow",
            "forget",
            "forget_everywhere",
            "erase_user",
            "normalize",
            "resolve",
            "explain",
            "history",
            "get",
            "resolve_batch",
            "to_arrow",
            # The async twins: their coroutines are run to the end.
            "aadd",
            "aadd_arrow",
            "aforget",
            "aforget_everywhere",
            "aerase_user",
            "anormalize",
            "aresolve",
            "aget",
        )
    ]
    found += [
        ("MemoryRecord.corrected", RECORD.corrected),
        ("MemoryRecord.from_dict", mr.MemoryRecord.from_dict),
        ("Resolution.reason_for", resolution.reason_for),
        ("Resolution.is_active", resolution.is_active),
        ("Resolution.prompt_memories", resolution.prompt_memories),
        ("Normalization.apply", mr.normalize([RECORD], now=T).apply),
        ("Normalization.new_status", mr.normalize([RECORD], now=T).new_status),
        ("PurgePlan.apply", mr.forget_sweep([RECORD], [TOMBSTONE]).apply),
    ]
    found += [
        (f"testing.{name}", getattr(mrt, name))
        for name in mrt.__all__
        if callable(getattr(mrt, name)) and not inspect.isclass(getattr(mrt, name))
    ]
    return found


#: Classes called with hostile arguments (the scope classes take ids as ordinary parameters
#: and a call of the wrong shape is Python's TypeError, docs/spec.md §1.3).
CONSTRUCTED = {"MemoryRecord", "RetrievalContext", "ForgetTombstone", "MemoryStore"}
#: The reference's entry points. Its stage functions (``in_validity_interval``, ``covers``,
#: ...) take values the entry points have checked, as the spec's prose does, and are left out.
REFERENCE_ENTRY_POINTS = (
    "resolve",
    "resolve_batch",
    "resolve_rows",
    "normalize_batch",
    "normalize_rows",
    "forget_sweep_batch",
    "purge_rows",
    "scope_id",
)


def _calls(
    name: str, function: Callable[..., Any], scratch: Path
) -> Iterator[tuple[str, object, list[object], dict[str, object]]]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    parameters = [
        p for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    short = name.rsplit(".", 1)[-1]
    for target in parameters:
        for hostile in HOSTILE:
            args: list[object] = []
            kwargs: dict[str, object] = {}
            for parameter in parameters:
                value = hostile if parameter is target else _valid(short, parameter, scratch)
                positional = parameter.kind == parameter.POSITIONAL_ONLY or (
                    parameter.kind == parameter.POSITIONAL_OR_KEYWORD
                    and parameter.default is inspect.Parameter.empty
                )
                if positional:
                    args.append(value)
                else:
                    kwargs[parameter.name] = value
            yield target.name, hostile, args, kwargs


def test_no_public_callable_raises_outside_the_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hostile str is also a relative path (write_tombstones(..., "x") writes ./x): run
    # where such files cannot land in the checkout.
    monkeypatch.chdir(tmp_path)
    escapes: list[str] = []
    calls = 0
    for name, function in _public_callables():
        for parameter, hostile, args, kwargs in _calls(name, function, tmp_path):
            calls += 1
            try:
                result = function(*args, **kwargs)
                if inspect.iscoroutine(result):
                    result = asyncio.run(result)
                if isinstance(result, mr.MemoryStore):
                    result.close()
            except (mr.MemresolveError, OSError, CallerError):
                pass
            except KeyError:
                if not name.startswith("Resolution."):
                    escapes.append(f"{name}({parameter}={hostile!r}): KeyError")
            except Exception as exc:
                escapes.append(f"{name}({parameter}={hostile!r:.40}): {type(exc).__name__}: {exc}")
    assert calls > 3_000
    assert escapes == [], f"{len(escapes)} escapes:\n" + "\n".join(escapes[:40])


@pytest.mark.parametrize(
    "argv",
    [
        ["resolve", "{missing}"],
        ["resolve", "{records}", "--now", "2026-07-30T12:00"],
        ["resolve", "{records}", "--now", "not a time", "--user", "u"],
        ["resolve", "{records}", "--user", "\udcff"],
        ["batch", "{missing}", "{missing}", "--out", "{out}"],
        ["batch", "{records}", "{records}", "--out", "{out}", "--memory-limit", "lots"],
        ["batch", "{records}", "{records}", "--out", "{out}", "--threads", "99999999999"],
        ["batch", "{records}", "{records}", "--out", "{records}", "--overwrite"],
        ["normalize", "{scratch}", "--now", "2026-07-30T12:00Z", "--out", "{scratch}"],
        ["normalize", "{missing}", "--now", "2026-07-30T12:00Z", "--out", "{out}"],
        ["normalize", "{records}", "--now", "2026-07-30T12:00Z", "--out", "{out}"],
        ["forget-sweep", "{missing}", "--tombstones", "{missing}", "--out", "{out}"],
        ["demo", "--store", "{scratch}"],
    ],
)
def test_the_command_answers_bad_input_with_a_message_and_status(
    argv: list[str], tmp_path: Path
) -> None:
    (tmp_path / "records.jsonl").write_text("{not json\n", encoding="utf-8")
    places = {
        "missing": str(tmp_path / "missing"),
        "records": str(tmp_path / "records.jsonl"),
        "out": str(tmp_path / "out"),
        "scratch": str(tmp_path),
    }
    command = [part.format(**places) if "{" in part else part for part in argv]
    done = subprocess.run(
        [sys.executable, "-m", "memresolve", *command],
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        timeout=120,
    )
    assert done.returncode in (1, 2), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip()


# Outputs the jobs must refuse: every spelling of an input, and what no job wrote ----------


def _job_calls(root: Path) -> dict[str, Callable[..., object]]:
    store = root / "store"
    return {
        "resolve_dataset": lambda output, **kw: mr.resolve_dataset(
            store / "records.parquet", store / "contexts.parquet", output, **kw
        ),
        "normalize_dataset": lambda output, **kw: mr.normalize_dataset(
            store / "records.parquet", output, now=T, **kw
        ),
        "forget_sweep_dataset": lambda output, **kw: mr.forget_sweep_dataset(
            store / "records.parquet", output, tombstones=store / "tombstones.parquet", **kw
        ),
    }


@pytest.mark.skipif(mr.backend_name() != "native", reason="the dataset jobs run on the core")
def test_no_job_output_outside_the_contract_and_no_input_destroyed(tmp_path: Path) -> None:
    """The walk above gives outputs of every wrong type; these are paths of the right type
    that name what a job must not replace (issue 35, finding 3)."""
    store = tmp_path / "store"
    store.mkdir()
    pq.write_table(mr.records_to_arrow([RECORD]), store / "records.parquet")
    pq.write_table(mr.contexts_to_arrow([("c1", CONTEXT)]), store / "contexts.parquet")
    pq.write_table(mr.tombstones_to_arrow([TOMBSTONE]), store / "tombstones.parquet")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mine.txt").write_text("mine")
    (tmp_path / "file.txt").write_text("mine")
    (tmp_path / "link").symlink_to(store)
    hostile_outputs = [
        store,
        store / "records.parquet",
        store / "tombstones.parquet",
        store / "records.parquet" / "sub",
        tmp_path,
        tmp_path / "link",
        tmp_path / "link" / ".." / "store",
        tmp_path / "data",
        tmp_path / "file.txt",
        str(store) + "\x00",
    ]
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    escapes = []
    for name, call in _job_calls(tmp_path).items():
        for output in hostile_outputs:
            for overwrite in (False, True):
                try:
                    call(output, overwrite=overwrite)
                    escapes.append(f"{name}({output!r}, overwrite={overwrite}) returned")
                except (mr.InvalidInputError, FileExistsError):
                    pass
                except Exception as exc:
                    escapes.append(f"{name}({output!r}): {type(exc).__name__}: {exc}")
    assert escapes == []
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


# Invalid UTF-8 in an Arrow string column: one rule on both backends and every reader -------


def _with_bytes(table: pa.Table, column: str, raw: bytes) -> pa.Table:
    offsets = pa.py_buffer(b"\x00\x00\x00\x00" + len(raw).to_bytes(4, "little"))
    broken = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(raw)])
    return table.set_column(table.schema.get_field_index(column), column, broken)


@pytest.mark.parametrize("column", ["id", "key", "user_id", "supersedes", "value"])
@pytest.mark.parametrize(
    "raw",
    [b"\xed\xa0\x80", b"\xff", b"\xc3", b"\xc0\x80"],
    ids=["surrogate", "ff", "truncated", "overlong"],
)
def test_invalid_utf8_is_malformed_naming_the_column_everywhere(column: str, raw: bytes) -> None:
    records = _with_bytes(mr.records_to_arrow([RECORD]), column, raw)
    contexts = mr.contexts_to_arrow([("c1", CONTEXT)])
    calls: list[Callable[[], object]] = [
        lambda: mr.records_from_arrow(records),
        lambda: reference.resolve_batch(records, contexts, with_values=True),
        lambda: reference.normalize_batch(records, now=T),
    ]
    if mr.backend_name() == "native":
        calls += [
            lambda: mr.resolve_batch(records, contexts, with_values=True),
            lambda: mr.normalize_batch(records, now=T),
            lambda: mr.forget_sweep_batch(records),
        ]
    for call in calls:
        if column == "value" and call in calls[2:3] + calls[4:]:
            continue  # value is read only by the converters and with_values
        with pytest.raises(mr.InvalidInputError) as caught:
            call()
        assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.MALFORMED, column)


# File-backed stores: damaged, locked, closed, full -----------------------------------------


def _a_store_file(path: Path) -> None:
    with mr.MemoryStore(path) as store:
        store.add([RECORD, *(RECORD.corrected(f"v{n}", at=T, id=f"m{n + 2}") for n in range(50))])


def test_no_store_call_raises_outside_the_contract_on_a_bad_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memresolve._store import _file as _store_file  # noqa: PLC0415 - its busy timeout, made short

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_store_file, "BUSY_SECONDS", 0.2)
    # Damaged under an open store: every b-tree page's header broken.
    damaged = tmp_path / "damaged.db"
    _a_store_file(damaged)
    store = mr.MemoryStore(damaged)
    data = bytearray(damaged.read_bytes())
    for start in range(4096, len(data), 4096):
        data[start] = 0x42
    damaged.write_bytes(bytes(data))
    assert _walk_store(store, tmp_path) == {}
    # Locked by another process's long write.
    locked = tmp_path / "locked.db"
    _a_store_file(locked)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            " c.execute('BEGIN IMMEDIATE'); c.execute('UPDATE erasures SET wiped = wiped');"
            " print('holding', flush=True); time.sleep(600)",
            str(locked),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        store = mr.MemoryStore(locked)
        assert _walk_store(store, tmp_path) == {}
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    store.close()
    # Closed.
    closed = mr.MemoryStore(tmp_path / "closed.db")
    closed.close()
    assert _walk_store(closed, tmp_path) == {}


def test_no_store_call_raises_outside_the_contract_on_a_full_disk() -> None:
    done = on_a_small_file_system(
        """
        import sys
        from pathlib import Path
        sys.path.insert(0, "tests/support")
        import memresolve as mr
        from public_calls import RECORD, T, walk_store

        store = mr.MemoryStore("/mnt/small/m.db")
        try:
            for n in range(10_000):
                store.add([RECORD.corrected("x" * 20_000, at=T, id=f"f{n}")])
        except OSError:
            pass
        print("escapes", walk_store(store, Path("/mnt/small")))
        """,
        size="600k",
    )
    assert done.returncode == 0, done.stderr
    assert "escapes {}" in done.stdout, done.stdout


def test_a_call_of_the_wrong_shape_is_a_type_error_naming_only_public_names() -> None:
    """A wrong keyword or a missing argument is Python's ``TypeError``, as in any library
    (docs/errors.md); its message names the public callable, never a private class."""
    named: dict[str, str] = {}
    for name, function in _public_callables():
        try:
            result = function(memresolve_no_such_argument=1)
            if inspect.iscoroutine(result):
                result.close()
        except TypeError as exc:
            named[name] = str(exc)
        except Exception:
            continue
    assert len(named) > 50
    # A private class before a method's name (``_RecordMethods.corrected()``).
    private = {
        name: message
        for name, message in named.items()
        if re.search(r"(?<![\w.])_[A-Za-z]\w*\.", message)
    }
    assert private == {}
