"""The privacy canary (reliability catalogue §5-6): a unique value planted in records,
forgotten or not, never appears in an exception message, a repr, a trace, a log record at any
level, or the output of the command and of the native core (its panic output included).
Values of active records do appear where the contract shows them: the prompt and the
``resolve`` command's answer.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

import memresolve as mr
from memresolve import reference

CANARY = "CANARY-5d1f7e-PRIVATE"
T = datetime(2026, 7, 30, tzinfo=UTC)
USER = mr.UserScope("u")
CONTEXT = mr.RetrievalContext(now=T, user_id="u", character_id="c", conversation_id="k")


def _record(record_id: str, **fields: object) -> mr.MemoryRecord:
    base: dict[str, object] = {
        "key": "pet.name",
        "value": f"{CANARY} {record_id}",
        "scope": USER,
        "authority": "model-inferred",
        "confidence": 0.5,
        "valid_from": datetime(2026, 7, 1, tzinfo=UTC),
        "source_message_ids": [f"{CANARY}-msg"],
    }
    return mr.MemoryRecord(id=record_id, **{**base, **fields})  # type: ignore[arg-type]


RECORDS = [
    _record("m1"),
    _record("m2", supersedes="m1", valid_from=datetime(2026, 7, 2, tzinfo=UTC)),
    _record("m3", key="home", status="forgotten"),
    _record("m4", key="trip", valid_until=datetime(2026, 7, 10, tzinfo=UTC)),
]
FORGET = mr.ForgetTombstone(
    key="pet.name", scope=USER, forgotten_at=datetime(2026, 7, 20, tzinfo=UTC)
)


def _errors() -> list[Callable[[], object]]:
    """Calls that fail on inputs holding the canary."""
    table = mr.records_to_arrow(RECORDS)
    bad_status = table.set_column(
        table.schema.get_field_index("status"), "status", pa.array(["active", "??", "active", "x"])
    )
    contexts = mr.contexts_to_arrow([("c", CONTEXT)])
    line = json.dumps({"id": "m9", "key": "k", "value": CANARY, "confidence": 7})
    return [
        lambda: mr.resolve([*RECORDS, RECORDS[0]], CONTEXT),
        lambda: mr.normalize([*RECORDS, RECORDS[0]], now=T),
        lambda: mr.forget_sweep([*RECORDS, RECORDS[0]], []),
        lambda: _record("bad", confidence=2.0),
        lambda: _record("bad", valid_from=datetime(2026, 7, 1)),
        lambda: mr.resolve_batch(bad_status, contexts),
        lambda: reference.resolve_batch(bad_status, contexts),
        lambda: mr.normalize_batch(bad_status, now=T),
        lambda: mr.records_from_arrow(bad_status),
        lambda: mr.read_records(io.StringIO(line + "\n")),
        lambda: mr.MemoryRecord.from_dict({**RECORDS[0].to_dict(), "version": "x"}),
    ]


def test_error_messages_never_hold_the_canary(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for call in _errors():
        with pytest.raises(mr.InvalidInputError) as caught:
            call()
        assert CANARY not in str(caught.value)
        assert CANARY not in repr(caught.value)
        assert CANARY not in repr(vars(caught.value))
    assert CANARY not in caplog.text


def test_reprs_traces_and_logs_never_hold_the_canary(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    resolution = mr.resolve(RECORDS, CONTEXT, tombstones=[FORGET])
    shown = [
        repr(RECORDS),
        str(RECORDS[0]),
        repr(resolution),
        repr(resolution.excluded),
        repr(resolution.trace),
        resolution.trace.as_log_line(),
        repr(mr.normalize(RECORDS, now=T, tombstones=[FORGET])),
        repr(mr.forget_sweep(RECORDS, [FORGET])),
        repr(mr.forget_sweep_batch(mr.records_to_arrow(RECORDS), mr.tombstones_to_arrow([FORGET]))),
        repr(mr.normalize_batch(mr.records_to_arrow(RECORDS), now=T)),
    ]
    with mr.MemoryStore() as store:
        store.add(RECORDS)
        store.forget("pet.name", USER, at=datetime(2026, 7, 20, tzinfo=UTC))
        shown += [
            repr(store),
            repr(store.explain("m1", CONTEXT)),
            repr(store.history("pet.name", USER, CONTEXT)),
            repr(store.normalize(T)),
        ]
        forgotten = store.get("m1")
        assert forgotten is not None
        assert CANARY not in forgotten.value
    for text in shown:
        assert CANARY not in text
    assert CANARY not in caplog.text
    # What the contract does show: an active record's value, in the prompt.
    unforgotten = mr.resolve(RECORDS, CONTEXT)
    assert any(CANARY in m.value for m in unforgotten.prompt_memories())


def test_the_command_never_prints_forgotten_text(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    forgotten = [
        _record("f1", key="home", status="forgotten"),
        _record("f2", key="pet.name"),
    ]
    mr.write_records(forgotten, records)
    mr.write_tombstones([FORGET], tmp_path / "tombstones.jsonl")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "memresolve", "resolve", str(records)),
            *("--tombstones", str(tmp_path / "tombstones.jsonl"), "--now", "2026-07-30T00:00Z"),
            *("--user", "u", "--json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert CANARY not in done.stdout + done.stderr
    (tmp_path / "bad.jsonl").write_text(
        json.dumps({**json.loads(records.read_text().splitlines()[0]), "confidence": 9}) + "\n"
    )
    failed = subprocess.run(
        [sys.executable, "-m", "memresolve", "resolve", str(tmp_path / "bad.jsonl"), "--user", "u"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert failed.returncode == 2
    assert CANARY not in failed.stdout + failed.stderr


@pytest.mark.skipif(mr.backend_name() != "native", reason="the native core is not built")
def test_native_output_never_holds_the_canary(capfd: pytest.CaptureFixture[str]) -> None:
    from memresolve import _native  # noqa: PLC0415

    mr.resolve(RECORDS, CONTEXT, tombstones=[FORGET])
    mr.resolve_batch(mr.records_to_arrow(RECORDS), mr.contexts_to_arrow([("c", CONTEXT)]))
    with pytest.raises(mr.InternalError):
        _native._panic_for_tests()
    with pytest.raises(mr.InvalidInputError):
        mr.resolve([*RECORDS, RECORDS[0]], CONTEXT)
    out, err = capfd.readouterr()
    assert CANARY not in out + err
