"""One schema per input table for the batch job's spilled parts.

The files of one input may differ in how they encode the same columns (``string`` or
``large_string`` or dictionary, a timestamp's unit and zone, an integer's width, a column
of the Arrow ``null`` type) and in which optional columns they have. Each batch is first
checked as it is, with its own types, by the native router (so a fault is reported in its
file's terms); only then is it brought to this one schema, without changing what it
means: names (``NAME_COLUMNS``: keys, scope ids, vocabulary columns, whose values repeat
from row to row) become ``dictionary<int32, string>``, other strings ``large_string``,
instants ``timestamp[us, UTC]`` floored to the microsecond (``docs/spec.md`` §1.6),
integers ``int64``, floats ``float64``, and an absent optional column its default
(``status`` active, ``version`` 1, a missing tombstone bound the other one, anything else
null; a null ``user_wide`` means false, as absent). ``confidence`` is kept only with
values: resolution never reads it (it is checked all the same, by the router). A
record's ``source_message_ids`` (``list<large_string>``) is kept only when a tombstone
carries hashes (``cited``): only then does resolution read it.

Names are dictionary-encoded because the job reads Parquet that way (``_sources``: a
Parquet writer stores them dictionary-encoded, so they are decoded without building a
string per row), spills a fraction of their bytes, and the native reader checks and
interns a dictionary's values once each rather than once per row.
"""

from __future__ import annotations

from typing import Any

from memresolve._io._arrow_input import pyarrow_module
from memresolve._model import ID_COLUMNS

__all__ = ["NAME_COLUMNS", "canonical", "canonical_schema", "lists_an_item", "read_columns"]

_TEXT = "text"
_NAME = "name"
_INSTANT = "instant"
_INTEGER = "integer"
_FLOAT = "float"
_BOOL = "bool"
_LIST = "list"

_RECORDS: dict[str, str] = {
    "id": _TEXT,
    "key": _NAME,
    "scope_kind": _NAME,
    **dict.fromkeys(ID_COLUMNS, _NAME),
    "status": _NAME,
    "authority": _NAME,
    "valid_from": _INSTANT,
    "valid_until": _INSTANT,
    "supersedes": _TEXT,
    "version": _INTEGER,
    "observed_at": _INSTANT,
}
_VALUES: dict[str, str] = {"value": _TEXT, "confidence": _FLOAT}
_CONTEXTS: dict[str, str] = {
    "context_id": _TEXT,
    "now": _INSTANT,
    **dict.fromkeys(ID_COLUMNS, _NAME),
}
_TOMBSTONES: dict[str, str] = {
    "key": _NAME,
    "scope_kind": _NAME,
    **dict.fromkeys(ID_COLUMNS, _NAME),
    "forgotten_at": _INSTANT,
    "blocks_sources_before": _INSTANT,
    "user_wide": _BOOL,
    "source_salt": _TEXT,
    "blocked_sources": _LIST,
}
_CITED: dict[str, str] = {"source_message_ids": _LIST}
#: The value of an absent optional column that is not null.
_DEFAULTS: dict[str, object] = {"status": "active", "version": 1}
#: The string columns whose values repeat from row to row, in any input.
NAME_COLUMNS: frozenset[str] = frozenset(
    name
    for table in (_RECORDS, _CONTEXTS, _TOMBSTONES)
    for name, kind in table.items()
    if kind == _NAME
)
#: A tombstone's missing bound equals the other one.
_OTHER_BOUND = {"forgotten_at": "blocks_sources_before", "blocks_sources_before": "forgotten_at"}


def _columns(what: str, with_values: bool, cited: bool = False) -> dict[str, str]:
    if what == "records":
        return {**_RECORDS, **(_VALUES if with_values else {}), **(_CITED if cited else {})}
    return _CONTEXTS if what == "contexts" else _TOMBSTONES


def read_columns(what: str, with_values: bool, *, cited: bool = False) -> tuple[str, ...]:
    """The columns of the input ``what`` the batch job reads and checks: the canonical
    ones, and ``confidence`` of records even without values (checked, never carried);
    with ``cited``, a record's ``source_message_ids``."""
    columns = tuple(_columns(what, with_values, cited))
    if what == "records" and not with_values:
        columns += ("confidence",)
    return columns


def _arrow_type(kind: str) -> Any:
    pa = pyarrow_module()
    return {
        _TEXT: pa.large_string(),
        _NAME: pa.dictionary(pa.int32(), pa.string()),
        _INSTANT: pa.timestamp("us", tz="UTC"),
        _INTEGER: pa.int64(),
        _FLOAT: pa.float64(),
        _BOOL: pa.bool_(),
        _LIST: pa.list_(pa.large_string()),
    }[kind]


def canonical_schema(what: str, with_values: bool, *, cited: bool = False) -> Any:
    """The schema every part of the input ``what`` is spilled and resolved in."""
    pa = pyarrow_module()
    return pa.schema(
        [(name, _arrow_type(kind)) for name, kind in _columns(what, with_values, cited).items()]
    )


def canonical(batch: Any, what: str, with_values: bool, *, cited: bool = False) -> Any:
    """``batch``, already checked by the router, in ``canonical_schema(what, with_values,
    cited=cited)``."""
    pa = pyarrow_module()
    columns = []
    for name, kind in _columns(what, with_values, cited).items():
        target = _arrow_type(kind)
        if name in batch.schema.names:
            columns.append(_converted(batch.column(name), kind, target))
        elif name in _OTHER_BOUND and _OTHER_BOUND[name] in batch.schema.names:
            columns.append(_converted(batch.column(_OTHER_BOUND[name]), kind, target))
        elif name in _DEFAULTS:
            columns.append(pa.array([_DEFAULTS[name]] * batch.num_rows, target))
        else:
            columns.append(pa.nulls(batch.num_rows, target))
    return pa.RecordBatch.from_arrays(
        columns, schema=canonical_schema(what, with_values, cited=cited)
    )


def _converted(column: Any, kind: str, target: Any) -> Any:
    pa = pyarrow_module()
    if column.type == target:
        return column
    if pa.types.is_dictionary(column.type) and pa.types.is_string_view(column.type.value_type):
        # Arrow has no cast (nor take) for these: the dictionary's values are cast alone.
        values = column.dictionary.cast(pa.large_string())
        column = pa.DictionaryArray.from_arrays(column.indices, values)
    if pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())  # no direct cast to a dictionary
    if kind == _LIST and not pa.types.is_null(column.type):
        column = _list_of_large_strings(column)
    if kind == _INSTANT and pa.types.is_timestamp(column.type) and column.type.unit == "ns":
        return _floored_to_microseconds(column).cast(target)
    return column.cast(target)


def _floored_to_microseconds(column: Any) -> Any:
    """A nanosecond timestamp column as whole microseconds (``int64``), floored.

    On the integers, not with ``floor_temporal``: that floors in the column's local time,
    which fails where a zone repeats an hour or is unknown to Arrow, and wraps within a
    microsecond of the smallest ``int64``.
    """
    pa = pyarrow_module()
    np = __import__("numpy")
    nanoseconds = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    mask = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
    return pa.array(np.floor_divide(nanoseconds, 1_000), pa.int64(), mask=mask)


def _list_of_large_strings(column: Any) -> Any:
    """A list column (``list`` or ``large_list`` of any string layout) as
    ``list<large_string>``: cast, or where Arrow has no cast (string views, dictionaries
    of items), rebuilt from its items cast alone."""
    pa = pyarrow_module()
    target = pa.list_(pa.large_string())
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([_list_of_large_strings(chunk) for chunk in column.chunks], target)
    try:
        return column.cast(target)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        pass
    compute = __import__("pyarrow.compute", fromlist=["subtract"])
    first, last = column.offsets[0].as_py(), column.offsets[-1].as_py()
    items = column.values.slice(first, last - first)
    if pa.types.is_dictionary(items.type):
        items = items.dictionary_decode()
    if pa.types.is_null(items.type):
        items = pa.nulls(len(items), pa.large_string())
    else:
        items = items.cast(pa.large_string())
    # Offsets of their own (not a slice's): Arrow builds no list from a slice with nulls.
    offsets = compute.subtract(column.offsets.cast(pa.int64()), first).cast(pa.int32())
    return pa.ListArray.from_arrays(offsets, items, mask=column.is_null())


def lists_an_item(column: Any) -> bool:
    """Whether a column of lists (of any layout, or of the ``null`` type) holds an item."""
    pa = pyarrow_module()
    if pa.types.is_null(column.type) or not (
        pa.types.is_list(column.type) or pa.types.is_large_list(column.type)
    ):
        # A column of another type holds no list: its type is refused when it is read.
        return not pa.types.is_null(column.type)
    compute = __import__("pyarrow.compute", fromlist=["max"])
    return bool(compute.max(compute.list_value_length(column)).as_py() or 0)
