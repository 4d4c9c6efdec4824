"""Dictionary-encoded string columns read exactly as plain ones.

The native reader checks and interns each value of a dictionary once, on the
first row that uses it, and keeps that work for later chunks that share the
dictionary (``src/arrow_input/text.rs``). These tests encode the columns the
way producers do and the ways they may: keys of every width, one dictionary
shared by slices or one per chunk, values repeated, values no row uses (so
many that the reader goes row by row), and a null kept as a dictionary value
rather than a null key. Every encoding must give the plain table's result,
or its error at the same row.
"""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from batch_cases import REJECTIONS, STORY
from batch_rows import arrow_tables
from memresolve._backend import available_backends
from memresolve._dataset._spill import compacted
from memresolve._engine._kernels import get_batch_resolver
from memresolve._io._canonical import read_columns
from memresolve._io._parquet_input import dictionary_names as _names
from memresolve.testing import Store, batch_store, stores
from profiles import PARITY_EXAMPLES

BACKENDS = available_backends()
_STRINGS = (pa.string(), pa.large_string())


def _encode(column: pa.ChunkedArray, data: st.DataObject) -> pa.ChunkedArray:
    """``column`` (strings) dictionary-encoded in a way drawn from ``data``."""
    texts: list[str | None] = column.to_pylist()
    rows = len(texts)
    if data.draw(st.booleans(), label="one dictionary for all chunks"):
        return pa.chunked_array(_pieces(_dictionary(texts, data), rows, data))
    pieces = []
    for start, stop in _bounds(rows, data):
        pieces.append(_dictionary(texts[start:stop], data))
    kinds = {piece.type for piece in pieces}
    if len(kinds) > 1:  # one type for the whole column: the widest keys drawn
        widest = max(kinds, key=lambda kind: kind.index_type.bit_width)
        pieces = [piece.cast(widest) for piece in pieces]
    return pa.chunked_array(pieces)


def _bounds(rows: int, data: st.DataObject) -> list[tuple[int, int]]:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, rows - 1)), max_size=3), label="cuts"))
    edges = [0, *(cut for cut in cuts if cut < rows), rows]
    return list(itertools.pairwise(edges))


def _pieces(array: pa.Array, rows: int, data: st.DataObject) -> list[pa.Array]:
    """Slices of one array: chunks that share its dictionary's buffers."""
    return [array.slice(start, stop - start) for start, stop in _bounds(rows, data)] or [array]


def _dictionary(texts: list[str | None], data: st.DataObject) -> pa.Array:
    values: list[str | None] = list(dict.fromkeys(t for t in texts if t is not None))
    values = data.draw(st.permutations(values), label="value order")
    values += (
        data.draw(st.lists(st.sampled_from(values), max_size=2), label="repeated") if values else []
    )
    if data.draw(st.booleans(), label="unused values"):
        many = data.draw(st.sampled_from([3, 3_000]), label="how many unused")
        values += [f"unused-{n}" for n in range(many)]
    null_value = data.draw(st.booleans(), label="null as a value")
    if null_value:
        values.append(None)
    positions: dict[str | None, list[int]] = {}
    for position, value in enumerate(values):
        positions.setdefault(value, []).append(position)
    # A null row is a null key, or (when the dictionary holds one) the null value.
    null_choices: list[int | None] = [None, *positions.get(None, [])]
    indices = [
        data.draw(st.sampled_from(null_choices if text is None else positions[text]), label="index")
        for text in texts
    ]
    widths = [pa.int16(), pa.int32(), pa.int64(), pa.uint16(), pa.uint32()]
    if len(values) < 128:
        widths += [pa.int8(), pa.uint8()]
    index_type = data.draw(st.sampled_from(widths), label="key type")
    value_type = data.draw(st.sampled_from(_STRINGS), label="value type")
    return pa.DictionaryArray.from_arrays(
        pa.array(indices, index_type), pa.array(values, value_type)
    )


def _encoded(table: Any, data: st.DataObject) -> Any:
    if not isinstance(table, pa.Table):  # None, or not a table at all: as it is
        return table
    for position, field in enumerate(table.schema):
        if field.type in _STRINGS and data.draw(st.booleans(), label=f"encode {field.name}"):
            table = table.set_column(position, field.name, _encode(table.column(position), data))
    return table


@settings(max_examples=max(50, PARITY_EXAMPLES // 4))
@given(stores(), st.data())
def test_dictionary_columns_resolve_as_plain_ones(store: Store, data: st.DataObject) -> None:
    records, contexts, tombstones = arrow_tables(store)
    expected = get_batch_resolver(BACKENDS[0])(
        records, contexts, tombstones=tombstones, include_excluded=True, with_values=True
    )
    encoded = [_encoded(table, data) for table in (records, contexts, tombstones)]
    for backend in BACKENDS:
        result = get_batch_resolver(backend)(
            encoded[0], encoded[1], tombstones=encoded[2], include_excluded=True, with_values=True
        )
        assert result.equals(expected), backend


@settings(max_examples=max(50, PARITY_EXAMPLES // 8))
@given(stores(), st.data())
def test_dictionary_columns_normalise_as_plain_ones(store: Store, data: st.DataObject) -> None:
    records, contexts, tombstones = arrow_tables(store)
    now = contexts.column("now").to_pylist()[0] if contexts.num_rows else None
    if now is None:
        return
    expected = mr.normalize_batch(records, now=now, tombstones=tombstones)
    result = mr.normalize_batch(
        _encoded(records, data), now=now, tombstones=_encoded(tombstones, data)
    )
    assert result.equals(expected)


def _where(records: Any, contexts: Any, tombstones: Any, backend: str) -> tuple[object, ...]:
    with pytest.raises(mr.InvalidInputError) as caught:
        get_batch_resolver(backend)(records, contexts, tombstones=tombstones)
    return caught.value.where()


@pytest.mark.parametrize("rule", list(REJECTIONS))
@settings(max_examples=10)
@given(data=st.data())
def test_a_rejection_names_the_same_row_whatever_the_encoding(
    rule: str, data: st.DataObject
) -> None:
    (records, contexts, tombstones), _ = REJECTIONS[rule]
    for backend in BACKENDS:
        plain = _where(records, contexts, tombstones, backend)
        encoded = _where(
            _encoded(records, data), _encoded(contexts, data), _encoded(tombstones, data), backend
        )
        assert encoded == plain, backend


@pytest.mark.parametrize(
    ("index_type", "keys", "values", "valid"),
    [
        (pa.int32(), [0, 5], ["k"], False),  # past the end
        (pa.int8(), [0, 1], ["k"], False),  # equal to the length
        (pa.int16(), [0, -1], ["k"], False),  # negative
        (pa.uint64(), [0, 2**63 + 1], ["k"], False),  # past i64::MAX
        (pa.int32(), [0, 7], [], False),  # a non-null key over an empty dictionary
        (pa.int64(), [0, 0], ["k"], True),
        (pa.uint8(), [0, None], ["k"], True),
    ],
)
def test_dictionary_keys_are_checked_before_they_are_read(
    index_type: pa.DataType, keys: list[int | None], values: list[str], valid: bool
) -> None:
    records, contexts, _ = arrow_tables(STORY)
    rows = records.num_rows
    column = pa.DictionaryArray.from_arrays(
        pa.array([0] * (rows - len(keys)) + keys, index_type),
        pa.array(values or [], pa.string()),
        safe=False,
    )
    broken = records.set_column(records.column_names.index("key"), "key", column)
    for backend in BACKENDS:
        if valid and None not in keys:
            get_batch_resolver(backend)(broken, contexts)  # reads as every key "k"
            continue
        with pytest.raises(mr.InvalidInputError) as caught:
            get_batch_resolver(backend)(broken, contexts)
        expected = (mr.ErrorKind.MISSING, "key") if valid else (mr.ErrorKind.MALFORMED, "key")
        assert (caught.value.kind, caught.value.field) == expected, backend


def test_a_null_or_empty_value_anywhere_comes_before_an_unknown_one() -> None:
    # status: an unknown value at row 1, an empty value first used at row 3, a null value at
    # row 5; the dictionary shared by two chunks that split between rows 2 and 3.
    records, contexts, _ = arrow_tables(STORY)
    rows = records.num_rows
    assert rows > 6
    dictionary = pa.array(["active", "nope", "", None])
    keys = [0, 1, 0, 2, 0, 3] + [0] * (rows - 6)
    shared = pa.DictionaryArray.from_arrays(pa.array(keys, pa.int32()), dictionary)
    plain = pa.array([dictionary[k].as_py() for k in keys], pa.string())
    position = records.column_names.index("status")
    for column in (plain, pa.chunked_array([shared.slice(0, 3), shared.slice(3)])):
        table = records.set_column(position, "status", column)
        for backend in BACKENDS:
            with pytest.raises(mr.InvalidInputError) as caught:
                get_batch_resolver(backend)(table, contexts)
            assert caught.value.where()[:3] == (mr.ErrorKind.EMPTY, "status", 3), backend


@settings(max_examples=50)
@given(
    st.lists(st.one_of(st.none(), st.sampled_from("abcdefgh")), min_size=1, max_size=40),
    st.data(),
)
def test_a_part_keeps_no_more_dictionary_values_than_rows(
    texts: list[str | None], data: st.DataObject
) -> None:
    column = _dictionary(texts, data)
    rows = data.draw(st.lists(st.integers(0, len(texts) - 1), max_size=len(texts)))
    taken = pa.RecordBatch.from_arrays([column], names=["n"]).take(pa.array(rows, pa.uint32()))
    kept = compacted(taken)
    assert kept.schema == taken.schema
    assert kept.column(0).to_pylist() == taken.column(0).to_pylist()
    if len(taken.column(0).dictionary) > len(rows):
        assert len(kept.column(0).dictionary) <= len(rows)
    else:
        assert kept.column(0).dictionary.equals(taken.column(0).dictionary)


def test_names_are_read_as_dictionaries_only_where_the_file_keeps_one(tmp_path: Path) -> None:
    import pyarrow.parquet as pq  # noqa: PLC0415

    rows = 50_000
    table = pa.table(
        {
            "key": [f"k{n % 20}" for n in range(rows)],
            "user_id": [str(uuid.UUID(int=n)) for n in range(rows)],  # all distinct
        }
    )
    path = tmp_path / "names.parquet"
    pq.write_table(table, path, dictionary_pagesize_limit=64 * 1024)  # user_id gives up
    assert _names(pq.ParquetFile(path).metadata, ["key", "user_id"]) == ["key"]
    plain = tmp_path / "plain.parquet"
    pq.write_table(table, plain, use_dictionary=False)
    assert _names(pq.ParquetFile(plain).metadata, ["key", "user_id"]) == []
    whole = tmp_path / "whole.parquet"
    pq.write_table(table, whole, dictionary_pagesize_limit=2**24)  # every id in its dictionary
    assert _names(pq.ParquetFile(whole).metadata, ["key", "user_id"]) == ["key", "user_id"]


def test_many_parts_of_a_store_of_distinct_names_spill_no_more_than_plain(
    tmp_path: Path,
) -> None:
    # Every record its own key: one batch's key dictionary is as long as the batch, and
    # each of 32 parts takes a thirty-second of its rows. Kept whole, every part would
    # spill the whole dictionary (about 30 times the keys); compacted, its own keys.
    import pyarrow.parquet as pq  # noqa: PLC0415

    store = batch_store.generate(5_000, seed=3)
    records = store.records.set_column(
        store.records.column_names.index("key"),
        "key",
        pa.array([f"key-{uuid.UUID(int=n)}" for n in range(store.records.num_rows)]),
    )
    tables = {"records": records, "contexts": store.contexts, "tombstones": store.tombstones}
    for name, table in tables.items():
        pq.write_table(table, tmp_path / f"{name}.parquet", dictionary_pagesize_limit=2**24)
    summary = mr.resolve_dataset(
        tmp_path / "records.parquet",
        tmp_path / "contexts.parquet",
        tmp_path / "out",
        tombstones=tmp_path / "tombstones.parquet",
        parts=32,
    )
    assert summary.parts > 1
    expected = mr.resolve_batch(records, store.contexts, tombstones=store.tombstones)
    assert pq.read_table(tmp_path / "out").num_rows == expected.num_rows
    read = [c for c in read_columns("records", False) if c in records.column_names]
    plain = records.select(read).nbytes + store.contexts.nbytes + store.tombstones.nbytes
    assert summary.peak_spill_bytes <= plain * 1.5, (summary.peak_spill_bytes, plain)
