"""Hypothesis strategies that lay the same Arrow data out in every way Arrow allows.

A reader must give the same answer on a table however it is laid out (``docs/spec.md``
§4.1): a column may be chunked anywhere, empty chunks included, each chunk a slice at
any offset of a larger array, each column chunked its own way; a table may be a slice
of a larger one; strings may be plain, large, views or dictionary-encoded (a dictionary
per chunk, with any index width, values no row uses, values twice, null values, and
itself a slice). These strategies take a table and draw such forms of it:

- ``type_variants(table)``: each column in another type the contract accepts for it
  (string encodings, dictionaries of every index and value type, every timestamp unit
  and some time zones, every accepted integer and float width, the ``null`` type for a
  column of nulls). A narrowing cast changes the data (seconds drop the microseconds,
  ``int8`` wraps a large version), so compare a layout with its own variant, not with
  the table it came from;
- ``layouts(table)``: the same values and types, re-laid out;
- ``faults(table)``: the table with one cell made bad (a null, an empty or unknown
  string, a repeated value, a number out of range), for the error to compare;
- ``store_layouts()``: a generated store's three tables (sometimes with one bad cell),
  typed by ``type_variants``, plainly (one chunk per column) and laid out by ``layouts``.

Every table drawn passes ``validate(full=True)``. Needs ``hypothesis`` and ``pyarrow``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from hypothesis import strategies as st

from memresolve._io import contexts_to_arrow, pyarrow_module, records_to_arrow, tombstones_to_arrow
from memresolve.testing.strategies import Store, stores

__all__ = ["StoreLayout", "Tables", "faults", "layouts", "store_layouts", "type_variants"]

#: Rows of padding drawn around a chunk, or a sliced table: enough to put an offset
#: anywhere in a short table, few enough to keep a draw cheap.
_MAX_PADDING = 3
#: Cuts drawn in a column: up to this many chunks and more, with empty ones among them.
_MAX_CUTS = 4


def _text_types() -> tuple[Any, ...]:
    pa = pyarrow_module()
    return (pa.string(), pa.large_string(), pa.string_view())


def _index_types() -> tuple[Any, ...]:
    pa = pyarrow_module()
    return (
        *(pa.int8(), pa.int16(), pa.int32(), pa.int64()),
        *(pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()),
    )


def _is_text(kind: Any) -> bool:
    pa = pyarrow_module()
    return bool(
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    )


def _holds(kind: Any, column: Any) -> bool:
    """Whether every value of the integer ``column`` fits the integer type ``kind``."""
    pa = pyarrow_module()
    values = [value for value in column.to_pylist() if value is not None]
    bits = kind.bit_width
    if pa.types.is_unsigned_integer(kind):
        low, high = 0, 2**bits - 1
    else:
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return all(low <= value <= high for value in values)


def _variant_types(column: Any, *, lossless: bool) -> list[Any]:
    """The types ``column`` may take for the same values (``docs/spec.md`` §4.1); with
    ``lossless``, only those that keep every value exactly."""
    pa = pyarrow_module()
    kind = column.type
    if _is_text(kind) or (pa.types.is_dictionary(kind) and _is_text(kind.value_type)):
        texts = list(_text_types())
        return texts + [pa.dictionary(i, v) for i in _index_types() for v in texts]
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        zones = dict.fromkeys((kind.tz, "UTC", "+05:30", "America/New_York"))
        units = ("us", "ns") if lossless else ("s", "ms", "us", "ns")
        return [pa.timestamp(unit, tz) for unit in units for tz in zones]
    if pa.types.is_integer(kind):
        signed = (pa.int8(), pa.int16(), pa.int32(), pa.int64())
        widths = [*signed, pa.uint8(), pa.uint16(), pa.uint32()]
        return [w for w in widths if _holds(w, column)] if lossless else widths
    if pa.types.is_floating(kind):
        return [pa.float64()] if lossless else [pa.float16(), pa.float32(), pa.float64()]
    return [kind]


def _dictionary(values: list[str | None], kind: Any) -> Any:
    """``values`` as one dictionary array of ``kind``: each distinct value once."""
    pa = pyarrow_module()
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    position = {value: index for index, value in enumerate(distinct)}
    indices = pa.array([None if v is None else position[v] for v in values], kind.index_type)
    return pa.DictionaryArray.from_arrays(indices, pa.array(distinct, kind.value_type))


def _decoded(array: Any) -> Any:
    """``array`` with its dictionary decoded (pyarrow cannot cast every dictionary to its
    values: not one of string views)."""
    pa = pyarrow_module()
    if not pa.types.is_dictionary(array.type):
        return array
    return pa.array(array.to_pylist(), array.type.value_type)


def _cast(column: Any, kind: Any) -> Any:
    """``column`` as one chunk of ``kind`` (a narrowing cast wraps or truncates)."""
    pa = pyarrow_module()
    whole = _decoded(column.combine_chunks())
    if pa.types.is_null(kind):
        array = pa.nulls(len(whole), kind)
    elif pa.types.is_dictionary(kind):
        array = _dictionary(whole.to_pylist(), kind)
    else:
        array = whole.cast(kind, safe=False)
    return pa.chunked_array([array], kind)


@st.composite
def type_variants(draw: st.DrawFn, table: Any, *, lossless: bool = False) -> Any:
    """``table`` with each column in a type drawn from those it may take, one chunk each;
    with ``lossless``, only types that keep every value exactly (no coarser time unit,
    no narrower number), so that the variant holds no fault the table did not."""
    pa = pyarrow_module()
    columns = []
    for column in table.columns:
        kinds = _variant_types(column, lossless=lossless)
        if len(column) and column.null_count == len(column):
            kinds.append(pa.null())  # what producers make of a column they saw only nulls in
        columns.append(_cast(column, draw(st.sampled_from(kinds))))
    return pa.Table.from_arrays(columns, names=table.column_names)


def _filler(draw: st.DrawFn, values: Any, rows: int) -> Any:
    """``rows`` rows to pad around a chunk: repeats of the array's own rows, or nulls, or
    (around strings) text, so that an empty slice after it starts past some bytes."""
    pa = pyarrow_module()
    if _is_text(values.type) and draw(st.booleans()):
        return pa.array(["padding"] * rows, values.type)
    if not len(values) or draw(st.booleans()):
        return pa.nulls(rows, values.type)
    # Slices, not ``take``: pyarrow has no take kernel for every type (string views).
    start, pieces = draw(st.integers(0, len(values) - 1)), []
    while rows:
        piece = values.slice(start, rows)
        pieces.append(piece)
        rows -= len(piece)
        start = 0
    return pa.concat_arrays(pieces) if pieces else pa.nulls(0, values.type)


def _padded_slice(draw: st.DrawFn, values: Any) -> Any:
    """``values`` as a slice at a drawn offset of a larger array (its buffers hold rows
    before and after it)."""
    pa = pyarrow_module()
    before, after = (draw(st.integers(0, _MAX_PADDING)) for _ in range(2))
    if before == after == 0:
        return values
    pieces = [_filler(draw, values, before), values, _filler(draw, values, after)]
    return pa.concat_arrays(pieces).slice(before, len(values))


def _dictionary_chunk(draw: st.DrawFn, values: list[str | None], kind: Any) -> Any:
    """``values`` as a dictionary array of ``kind`` with a dictionary of its own: values
    no row uses, a value twice, a null value (rows may point at it for a null), in a
    drawn order, and the dictionary and the indices each a slice of a larger array."""
    pa = pyarrow_module()
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    unused = draw(st.lists(st.sampled_from(["", "unused", "\U0001d518" * 5]), max_size=2))
    twice = draw(st.lists(st.sampled_from(distinct), max_size=1)) if distinct else []
    entries: list[str | None] = [*distinct, *unused, *twice]
    if draw(st.booleans()):
        entries.append(None)
    entries = draw(st.permutations(entries))
    positions: dict[str | None, list[int]] = {}
    for index, entry in enumerate(entries):
        positions.setdefault(entry, []).append(index)
    indices: list[int | None] = []
    for value in values:
        choices = positions.get(value, [])
        # A null row: a null index, or the index of a null value (read alike).
        indices.append(draw(st.sampled_from([*choices, None] if value is None else choices)))
    return pa.DictionaryArray.from_arrays(
        _padded_slice(draw, pa.array(indices, kind.index_type)),
        _padded_slice(draw, pa.array(entries, kind.value_type)),
    )


def _cuts(draw: st.DrawFn, rows: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk of ``rows`` rows: anywhere, empty ones included
    (at the start, between two others, at the end, or the only chunk of no rows)."""
    cuts = sorted(draw(st.lists(st.integers(0, rows), max_size=_MAX_CUTS)))
    bounds = [0, *cuts, rows]
    return list(itertools.pairwise(bounds))


def _relaid(draw: st.DrawFn, column: Any) -> Any:
    """``column`` re-chunked: each chunk a slice at its own offset of its own array."""
    pa = pyarrow_module()
    whole = column.combine_chunks()
    chunks = []
    for start, stop in _cuts(draw, len(whole)):
        piece = whole.slice(start, stop - start)
        if pa.types.is_dictionary(whole.type):
            chunks.append(_dictionary_chunk(draw, piece.to_pylist(), whole.type))
        else:
            chunks.append(_padded_slice(draw, piece))
    if not chunks or draw(st.booleans()):
        # No chunk at all, or one more empty chunk anywhere (offset drawn in its array).
        empty = _padded_slice(draw, whole.slice(0, 0))
        chunks.insert(draw(st.integers(0, len(chunks))), empty)
    return pa.chunked_array(chunks, whole.type)


@st.composite
def layouts(draw: st.DrawFn, table: Any) -> Any:
    """``table``'s values and types, laid out anew: every column chunked its own way
    (``_relaid``), and sometimes the whole table a slice of a larger one."""
    pa = pyarrow_module()
    before = draw(st.integers(0, _MAX_PADDING))
    after = draw(st.integers(0, _MAX_PADDING))
    columns = []
    for column in table.columns:
        whole = column.combine_chunks()
        if before or after:
            # Rows the table slice cuts away (dictionaries are rebuilt per chunk anyway).
            plain = _decoded(whole)
            padding = [_filler(draw, plain, before), plain, _filler(draw, plain, after)]
            whole = pa.concat_arrays(padding)
            if pa.types.is_dictionary(column.type):
                whole = _dictionary(whole.to_pylist(), column.type)
        columns.append(_relaid(draw, pa.chunked_array([whole], column.type)))
    laid = pa.Table.from_arrays(columns, schema=table.schema)
    return laid.slice(before, table.num_rows)


def _bad_values(kind: Any, column: Any, row: int) -> list[object]:
    """Values that break a rule in a column of ``kind`` (or none, where nothing does)."""
    pa = pyarrow_module()
    if _is_text(kind):
        others = [v for n, v in enumerate(column.to_pylist()) if n != row and v is not None]
        return [None, "", "bogus", *others[:1]]  # a repeat: a duplicate id where ids are
    if pa.types.is_floating(kind):
        return [None, math.nan, math.inf, 1.5, -0.5]
    if pa.types.is_timestamp(kind) or pa.types.is_integer(kind):
        return [None]
    return []


@st.composite
def faults(draw: st.DrawFn, table: Any) -> Any:
    """``table`` (of plain types, as ``records_to_arrow`` writes) with one cell replaced
    by a value that breaks a rule of its column (unchanged when it has no rows)."""
    pa = pyarrow_module()
    if not table.num_rows:
        return table
    row = draw(st.integers(0, table.num_rows - 1))
    position = draw(st.integers(0, table.num_columns - 1))
    column = table.column(position)
    bad = _bad_values(column.type, column, row)
    if not bad:
        return table
    values = column.to_pylist()
    values[row] = draw(st.sampled_from(bad))
    replaced = pa.array(values, column.type)
    return table.set_column(position, table.field(position), replaced)


class Tables(NamedTuple):
    """The three input tables of the batch form."""

    records: Any
    contexts: Any
    tombstones: Any


@dataclass(frozen=True)
class StoreLayout:
    """One store's tables twice: ``plain`` (one chunk per column, at offset 0) and ``laid``
    (the same data laid out by ``layouts``). Every reader must answer both alike."""

    plain: Tables
    laid: Tables


@st.composite
def store_layouts(
    draw: st.DrawFn,
    *,
    max_records: int = 12,
    variants: bool = True,
    lossless: bool = False,
    broken: bool = True,
) -> StoreLayout:
    """A store from ``stores`` as Arrow tables; with ``broken``, half the time one of them
    has a bad cell (``faults``); with ``variants``, each column in a type drawn by
    ``type_variants`` (``lossless`` or not; else the converters' types); then laid out
    by ``layouts``."""
    store: Store = draw(stores(max_records=max_records, max_contexts=3, max_tombstones=3))
    tables = [
        records_to_arrow(store.records),
        contexts_to_arrow(store.contexts),
        tombstones_to_arrow(store.tombstones),
    ]
    if broken and draw(st.booleans()):
        which = draw(st.integers(0, 2))
        tables[which] = draw(faults(tables[which]))
    if variants:
        tables = [draw(type_variants(table, lossless=lossless)) for table in tables]
    plain = Tables(*tables)
    return StoreLayout(plain, Tables(*(draw(layouts(table)) for table in plain)))
