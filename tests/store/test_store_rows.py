"""The ``MemoryStore`` row of a record, built natively, equals the row the pure-Python
storage builds, byte for byte: its canonical JSON and content hash (which judge retries
in a file either backend may have written), its scope id and its message-id JSON."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve import _backend
from memresolve._store import _schema as schema
from memresolve.testing.strategies import memory_records, universes
from profiles import PARITY_EXAMPLES

pytestmark = pytest.mark.skipif(_backend.NATIVE is None, reason="memresolve._native is not in use")

# Any code point but lone surrogates (which no record accepts): quotes, backslashes,
# control characters, non-BMP characters, U+2028.
_TEXT = st.text(min_size=1, max_size=10)
_OWNER = st.none() | _TEXT
_SCOPES = st.one_of(
    st.builds(mr.UserScope, _TEXT),
    st.builds(mr.CharacterScope, _TEXT, _TEXT),
    st.builds(mr.ConversationScope, _TEXT, user_id=_OWNER),
    st.builds(mr.SceneScope, _TEXT, _TEXT, user_id=_OWNER),
)
_ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)
_INSTANTS = st.datetimes(
    # Naive bounds, as the strategy wants them; every instant drawn is zoned.
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=_ZONES,
)
_CONFIDENCES = st.floats(min_value=0.0, max_value=1.0) | st.sampled_from(
    [0.0, -0.0, 1.0, 1e-05, 5e-324]
)


@st.composite
def _hostile_records(draw: st.DrawFn) -> mr.MemoryRecord:
    try:
        return mr.MemoryRecord(
            id=draw(_TEXT),
            key=draw(_TEXT),
            value=draw(st.text(max_size=40)),
            scope=draw(_SCOPES),
            status=draw(st.sampled_from(list(mr.Status))),
            authority=draw(st.sampled_from(list(mr.Authority))),
            confidence=draw(_CONFIDENCES),
            valid_from=draw(_INSTANTS),
            valid_until=draw(st.none() | _INSTANTS),
            source_message_ids=tuple(draw(st.lists(_TEXT, max_size=3))),
            supersedes=draw(st.none() | _TEXT),
            version=draw(st.integers(-(2**63), 2**63 - 1)),
            observed_at=draw(st.none() | _INSTANTS),
        )
    except mr.InvalidInputError:
        reject()


def _assert_same_row(record: mr.MemoryRecord) -> None:
    assert isinstance(record, _backend.NATIVE.RecordCore)  # type: ignore[union-attr]
    native = schema.record_row(record)
    python = schema.python_record_row(record)
    assert native == python
    assert [type(v) for v in native.values()] == [type(python[k]) for k in native]


@settings(max_examples=PARITY_EXAMPLES)
@given(_hostile_records())
def test_a_hostile_records_row_is_the_pythons(record: mr.MemoryRecord) -> None:
    _assert_same_row(record)


@settings(max_examples=PARITY_EXAMPLES // 4)
@given(universes().flatmap(memory_records))
def test_a_generated_records_row_is_the_pythons(record: mr.MemoryRecord) -> None:
    _assert_same_row(record)


_RECORD = """
from datetime import datetime, timedelta, timezone
import memresolve as mr
record = mr.MemoryRecord(
    id='m"1\\\\', key="pet\\nname", value="Tab\\t\\x01 é 😀 \\u2028",
    scope=mr.SceneScope("k:1", "s%1", user_id="u1"), authority="user-confirmed",
    confidence=1e-05, valid_from=datetime(2026, 7, 1, tzinfo=timezone(timedelta(hours=2))),
    source_message_ids=("a", 'b"'), version=-3,
)
"""


def test_a_file_written_by_one_backend_judges_the_others_retries(tmp_path: Path) -> None:
    """The pure-Python storage writes the record into a file; a retry through the
    native storage is a no-op, and the other way round."""
    namespace: dict[str, Any] = {}
    exec(_RECORD, namespace)  # the very source the child runs
    record = namespace["record"]
    for order, path in (("python first", tmp_path / "a.db"), ("native first", tmp_path / "b.db")):
        adding = _RECORD + "import sys; print(mr.MemoryStore(sys.argv[1]).add([record]))"
        environment = {**os.environ, "MEMRESOLVE_BACKEND": "reference"}
        if order == "native first":
            assert mr.MemoryStore(path).add([record]) == 1
        child = subprocess.run(
            [sys.executable, "-c", adding, str(path)],
            env=environment,
            capture_output=True,
            text=True,
            check=True,
        )
        assert child.stdout.strip() == ("1" if order == "python first" else "0"), order
        if order == "python first":
            assert mr.MemoryStore(path).add([record]) == 0
