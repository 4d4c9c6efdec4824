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
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_parity_batch import REJECTIONS, STORY

import memresolve as mr
from batch_rows import arrow_tables
from conftest import PARITY_EXAMPLES
from memresolve._backend import available_backends
from memresolve._kernels import get_batch_resolver
from memresolve.testing import Store, stores

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
    indices = [
        None if text is None and not null_value
        else data.draw(st.sampled_from(positions[text]), label="index")
        for text in texts
    ]  # fmt: skip
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


def test_a_key_past_the_dictionary_is_malformed_not_read() -> None:
    records, contexts, _ = arrow_tables(STORY)
    keys = pa.DictionaryArray.from_arrays(
        pa.array([0] * (records.num_rows - 1) + [5], pa.int32()), pa.array(["k"]), safe=False
    )
    broken = records.set_column(records.column_names.index("key"), "key", keys)
    for backend in BACKENDS:
        with pytest.raises(mr.InvalidInputError) as caught:
            get_batch_resolver(backend)(broken, contexts)
        assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.MALFORMED, "key"), backend
