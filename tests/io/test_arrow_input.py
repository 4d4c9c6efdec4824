"""Arrow input whose structure or type text lies, found by review after the fuzz runs: every
reader refuses it alike (``malformed`` naming the column), or ignores what no reader reads.

The Arrow C data interface carries no buffer sizes and no promise that a batch's columns
are as long as the batch; ``memresolve._io._arrow_input`` checks both before anything reads.
"""

from __future__ import annotations

import ctypes
import io
import itertools
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from pyarrow import ipc

import memresolve as mr
from memresolve import reference
from profiles import PARITY_EXAMPLES

NOW = datetime(2026, 7, 30, tzinfo=UTC)
CONTEXTS = mr.contexts_to_arrow(
    [("c", mr.RetrievalContext(now=NOW, user_id="u", character_id="c", conversation_id="k"))]
)
FINDINGS = Path(__file__).resolve().parents[2] / "fuzz" / "findings" / "arrow"


def _records() -> pa.Table:
    return mr.records_to_arrow(
        [
            mr.MemoryRecord(
                id=f"m{n}",
                key="k",
                value="v",
                scope=mr.UserScope("u"),
                authority="model-inferred",
                confidence=0.5,
                valid_from=datetime(2026, 7, n + 1, tzinfo=UTC),
            )
            for n in range(3)
        ]
    )


def _resolve_dataset(records: object) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "out"
        mr.resolve_dataset(records, CONTEXTS, output, include_excluded=True)
        rows: list[dict[str, Any]] = pq.read_table(output).to_pylist()
        return rows


READERS: dict[str, Callable[[Any], object]] = {
    "resolve_batch": lambda t: mr.resolve_batch(t, CONTEXTS, include_excluded=True).to_pylist(),
    "reference.resolve_batch": lambda t: reference.resolve_batch(
        t, CONTEXTS, include_excluded=True
    ).to_pylist(),
    "records_from_arrow": lambda t: [r.id for r in mr.records_from_arrow(t)],
    "MemoryStore.add_arrow": lambda t: mr.MemoryStore().add_arrow(t),
    "normalize_batch": lambda t: mr.normalize_batch(t, now=NOW).to_pylist(),
    "resolve_dataset": _resolve_dataset,
}


def _refusals(table: object) -> set[tuple[mr.ErrorKind, str | None]]:
    refusals = set()
    for read in READERS.values():
        with pytest.raises(mr.InvalidInputError) as caught:
            read(table)
        refusals.add((caught.value.kind, caught.value.field))
    return refusals


# The C ArrowArray struct, to hand over a batch whose column is shorter than the batch, as a
# producer of __arrow_c_array__ can (pyarrow's own constructors refuse to build one).
class _ArrowArray(ctypes.Structure):
    pass


_ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(_ArrowArray))),
    ("dictionary", ctypes.POINTER(_ArrowArray)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class _ArrowSchema(ctypes.Structure):
    _fields_ = [("fields", ctypes.c_void_p * 9)]


def _with_short_column(batch: pa.RecordBatch, column: int, length: int) -> pa.RecordBatch:
    struct = pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
    array, schema = _ArrowArray(), _ArrowSchema()
    struct._export_to_c(ctypes.addressof(array), ctypes.addressof(schema))
    array.children[column].contents.length = length
    imported: pa.RecordBatch = pa.RecordBatch._import_from_c(
        ctypes.addressof(array), ctypes.addressof(schema)
    )
    return imported


@pytest.mark.parametrize("column", ["key", "notes"])
def test_a_column_shorter_than_its_batch_is_malformed_naming_it(column: str) -> None:
    # pyarrow's export of such a table as a stream crashed the interpreter (native path);
    # the Python readers raised IndexError.
    batch = _records().append_column("notes", pa.array(["x", "y", "z"])).to_batches()[0]
    short = _with_short_column(batch, batch.schema.get_field_index(column), 1)
    assert [len(c) for c in short.columns].count(1) == 1
    assert _refusals(short) == {(mr.ErrorKind.MALFORMED, column)}


def _time_zone_not_utf8() -> pa.DataType:
    data = (FINDINGS / "timestamp-time-zone-not-utf8").read_bytes()
    kind: pa.DataType = (
        ipc.open_stream(io.BytesIO(data[1:])).read_all().schema.field("valid_from").type
    )
    return kind


def test_a_bad_time_zone_inside_an_extension_type_is_malformed() -> None:
    records = _records()
    bad = _time_zone_not_utf8()
    opaque = pa.opaque(bad, "t", "v")
    valid_from = records["valid_from"].combine_chunks().cast(bad)
    wrapped = records.set_column(
        records.schema.get_field_index("valid_from"),
        "valid_from",
        pa.ExtensionArray.from_storage(opaque, valid_from),
    )
    assert _refusals(wrapped) == {(mr.ErrorKind.MALFORMED, "valid_from")}
    # Nested in a column no reader needs: still refused, since the native import decodes
    # every column's type (it panicked on this one).
    storage = pa.array([[1], [2], [3]], pa.list_(pa.int64())).cast(pa.list_(bad))
    nested = pa.Array.from_buffers(
        pa.list_(opaque),
        3,
        storage.buffers()[:2],
        children=[pa.ExtensionArray.from_storage(opaque, storage.values)],
    )
    assert _refusals(records.append_column("notes", nested)) == {(mr.ErrorKind.MALFORMED, "notes")}


def test_metadata_that_is_not_utf8_is_ignored_by_every_reader() -> None:
    records = _records()
    expected = {name: read(records) for name, read in READERS.items()}
    field = pa.field("notes", pa.string(), metadata={b"\xff": b"\xfe"})
    with_field_metadata = pa.Table.from_arrays(
        [*records.columns, pa.array(["a", "b", "c"])], schema=pa.schema([*records.schema, field])
    )
    with_schema_metadata = records.replace_schema_metadata({b"\xff": b"\xfe"})
    for table in (with_field_metadata, with_schema_metadata):
        assert {name: read(table) for name, read in READERS.items()} == expected


def _string_column(
    offsets: list[int], data: bytes, valid: list[bool], large: bool, skip: int
) -> pa.Array:
    """A string array of these offsets, bytes and validity, built without any check, less
    ``skip`` rows."""
    width = np.int64 if large else np.int32
    rows = len(offsets) - 1
    validity = pa.py_buffer(np.packbits(np.array(valid[:rows], dtype=bool), bitorder="little"))
    array = pa.Array.from_buffers(
        pa.large_string() if large else pa.string(),
        rows,
        [validity, pa.py_buffer(np.array(offsets, dtype=width).tobytes()), pa.py_buffer(data)],
    )
    return array.slice(skip)


def _each_string_is_utf8(offsets: list[int], data: bytes) -> bool:
    """The rule reads need, over every slot, null or not (as arrow-rs checks; pyarrow's full
    validation skips the bytes of null slots)."""
    if any(o < 0 or o > len(data) for o in offsets):
        return False
    for start, end in itertools.pairwise(offsets):
        if start > end:
            return False
        try:
            data[start:end].decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


_BYTES = st.sampled_from(
    [b"a", b"b", "é".encode(), "€".encode(), "😀".encode(), "¿".encode(), b"\xff", b"\x80"]
)


@settings(max_examples=PARITY_EXAMPLES, deadline=None)
@given(
    pieces=st.lists(_BYTES, max_size=8),
    steps=st.lists(st.integers(-1, 5), min_size=2, max_size=6),
    valid=st.lists(st.booleans(), min_size=5, max_size=5),
    large=st.booleans(),
    skip=st.integers(0, 5),
)
def test_a_string_column_is_refused_exactly_when_a_string_is_not_utf8(
    pieces: list[bytes], steps: list[int], valid: list[bool], large: bool, skip: int
) -> None:
    """The native reader's own check of string columns (offsets, then UTF-8 over the bytes
    they span) refuses a column exactly when an offset is out of order or a string is not
    UTF-8: with nulls, sliced or not, empty, in both widths. Where pyarrow's full validation
    reads the same bytes (no nulls), it agrees."""
    data = b"".join(pieces)
    offsets = list(itertools.accumulate(steps[1:], initial=steps[0]))
    skip = min(skip, len(offsets) - 1)
    try:
        column = _string_column(offsets, data, valid, large, skip)
    except pa.ArrowInvalid:
        reject()  # pyarrow will not build it (offsets past the bytes): the Rust tests cover those
    readable = _each_string_is_utf8(offsets[skip:], data)
    if column.null_count == 0:
        try:
            column.validate(full=True)
            assert readable
        except pa.ArrowInvalid:
            assert not readable
    rows = len(column)
    records = _records().slice(0, 1).take([0] * rows) if rows else _records().slice(0, 0)
    records = records.set_column(0, "id", pa.array([f"m{n}" for n in range(rows)], pa.string()))
    table = records.set_column(records.schema.get_field_index("supersedes"), "supersedes", column)
    try:
        mr.resolve_batch(table, CONTEXTS)
        refused = None
    except mr.InvalidInputError as error:
        refused = (error.kind, error.field)
    if readable:  # it may still break another rule (an empty id is `empty`), never this one
        assert refused is None or refused[0] is not mr.ErrorKind.MALFORMED
    else:
        assert refused == (mr.ErrorKind.MALFORMED, "supersedes")
