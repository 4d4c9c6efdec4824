"""Taking Arrow input: any Arrow PyCapsule producer (or polars ``LazyFrame``) as a
pyarrow table whose column names and data are checked before anything reads them.

Both backends take their Arrow input through here, so a table the reference reads and
the table the native core is handed are the same table (``docs/spec.md`` §5.2).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from memresolve.errors import ErrorKind, InvalidInputError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "arrow_source",
    "as_table",
    "column_names",
    "mended",
    "native_input",
    "plain",
    "pyarrow_module",
    "stream_failed",
    "validated",
]


def pyarrow_module() -> Any:
    try:
        import pyarrow  # noqa: PLC0415 - optional dependency
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError(
            "memresolve's Arrow functions need pyarrow: pip install 'memresolve[arrow]'"
        ) from exc
    return pyarrow


def _is_lazy_frame(data: object) -> bool:
    # A polars LazyFrame: no Arrow interface of its own, but a stream of frames that have one.
    return not hasattr(data, "__arrow_c_stream__") and callable(
        getattr(data, "collect_batches", None)
    )


def arrow_source(data: object, what: str) -> object:
    """``data`` as something with the Arrow PyCapsule interface.

    A polars ``LazyFrame`` becomes a ``pyarrow.RecordBatchReader`` over its
    streaming engine's batches. Nothing runs until the reader is read, so
    inputs are still taken in order (a bad ``records`` is reported before a
    ``contexts`` query runs), and the query runs once. A query that fails is
    ``malformed``, as any Arrow stream that fails. Anything else is returned
    as it is.
    """
    if not _is_lazy_frame(data):
        return data
    pa = pyarrow_module()
    import polars  # noqa: PLC0415 - a LazyFrame was given, so polars is there

    try:
        schema = polars.DataFrame(schema=data.collect_schema()).to_arrow().schema  # type: ignore[attr-defined]
    except Exception as exc:  # any failure of the user's query
        raise stream_failed(what, exc) from exc

    def batches() -> Iterator[Any]:
        for frame in data.collect_batches():  # type: ignore[attr-defined]
            for batch in frame.to_arrow().to_batches():
                # Same types; only field metadata may differ from the empty frame's.
                yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


def stream_failed(what: str, exc: BaseException) -> BaseException:
    """What to raise for an Arrow stream that failed while it was read: what stopped its
    Python producer, when that was an interruption or an exit (Ctrl-C, a host's signal
    handler raising ``SystemExit``), else ``malformed`` input."""
    stopped = _stopped_producer(exc)
    if stopped is not None:
        return stopped
    return InvalidInputError(
        f"{what}: the Arrow stream failed: {type(exc).__name__}: {exc}",
        kind=ErrorKind.MALFORMED,
        field=what,
    )


#: The exception line of a ``KeyboardInterrupt`` (or a subclass, such as the command's
#: stop on a signal) or of a ``SystemExit``, with or without its message or code.
_STOP_LINE = re.compile(r"(?:[\w.]+\.)?(KeyboardInterrupt|Stopped|SystemExit)(?::\s*(.*))?")


def _stopped_producer(error: BaseException) -> BaseException | None:
    """The interruption or exit that stopped a stream's Python producer, if one did. The
    Arrow C stream reports it as an ``ArrowInvalid`` whose text holds the traceback, whose
    exception line (the first after its last indented frame line) names it."""
    if isinstance(error, KeyboardInterrupt | SystemExit):
        return error
    _, found, traceback = str(error).partition("Python exception:")
    lines = traceback.strip("\n").splitlines()
    frames = [index for index, line in enumerate(lines) if line.startswith(" ")]
    line = lines[frames[-1] + 1] if found and frames and frames[-1] + 1 < len(lines) else ""
    match = _STOP_LINE.fullmatch(line.strip())
    if match is None:
        return None
    if match.group(1) != "SystemExit":
        return KeyboardInterrupt()
    code = (match.group(2) or "").strip()
    return SystemExit(int(code) if code.lstrip("-").isdigit() else code or None)


def as_table(data: object, what: str) -> pa.Table:
    """Any Arrow PyCapsule producer (or polars ``LazyFrame``) as a pyarrow ``Table``.

    Something that is not an Arrow table, or whose producer refuses to give
    one, is ``wrong-type``; a stream that fails while it is read is
    ``malformed`` (as the native reader says).
    """
    pa = pyarrow_module()
    data = arrow_source(data, what)
    if isinstance(data, pa.Table):
        column_names(data, what)
        return validated(plain(mended(data), what), what)
    if isinstance(data, pa.RecordBatch):
        column_names(data, what)
        return validated(pa.Table.from_batches([plain(mended(data), what)]), what)
    try:
        if hasattr(data, "__arrow_c_stream__"):
            reader = pa.RecordBatchReader.from_stream(data)
        elif hasattr(data, "__arrow_c_array__"):
            return as_table(mended(pa.record_batch(data)), what)
        else:
            raise _not_arrow(what, type(data).__name__)
    except InvalidInputError:
        raise
    except Exception as exc:  # whatever the producer raised
        raise _not_arrow(what, f"{type(data).__name__} ({type(exc).__name__}: {exc})") from exc
    try:
        table = mended(reader.read_all())
    except Exception as exc:  # whatever the stream raised
        raise stream_failed(what, exc) from exc
    column_names(table, what)
    return validated(plain(table, what), what)


def mended(data: Any, *, to_spill: bool = False) -> Any:
    """``data``, a pyarrow table or batch (imported through the Arrow C data interface, by
    us or by the caller), with the defect pyarrow's importer adds to valid data mended.

    pyarrow (26.0.1 at least) imports an array of no rows at a non-zero offset with
    buffers too small for that offset (its values: none at all): an empty chunk of a column
    chunked anywhere, a sliced table of no rows, the empty dictionary of a chunk whose rows
    are all null. Valid where it was made, such an array of string views is then refused by
    pyarrow's own validation ("View buffer size ... isn't large enough"), and one of any
    type is written by its IPC writer as a file that cannot be read back (a negative buffer
    length). It holds no value: it is replaced by an empty array of its type. By default
    only string and binary views are mended (what validation refuses; the readers read the
    rest as it is); ``to_spill`` mends every type, for a batch the dataset jobs spill.
    Nothing else is touched, and nothing is rebuilt when no such array is there. Arrays
    nested in lists or structs are left as they are: no reader spills them, and pyarrow's
    validation of them passes.
    """
    pa = pyarrow_module()
    types = [field.type for field in data.schema]
    if not to_spill and not any(_holds_views(kind) for kind in types):
        return data  # the usual case: no column to look at, chunk by chunk
    if isinstance(data, pa.RecordBatch):
        arrays = _mended_arrays(data.columns, types, to_spill)
        return data if arrays is None else pa.RecordBatch.from_arrays(arrays, schema=data.schema)
    columns = list(data.columns)
    changed = False
    for position, (column, kind) in enumerate(zip(columns, types, strict=True)):
        chunks = _mended_arrays(column.chunks, [kind] * column.num_chunks, to_spill)
        if chunks is not None:
            columns[position] = pa.chunked_array(chunks, kind)
            changed = True
    return pa.Table.from_arrays(columns, schema=data.schema) if changed else data


def _mended_arrays(arrays: list[Any], types: list[Any], to_spill: bool) -> list[Any] | None:
    """``arrays`` (of ``types``), each mended by ``_mended_array``; None if none needed it."""
    mended_arrays = [
        _mended_array(array, kind, to_spill) for array, kind in zip(arrays, types, strict=True)
    ]
    if all(array is None for array in mended_arrays):
        return None
    return [old if new is None else new for new, old in zip(mended_arrays, arrays, strict=True)]


def _holds_views(kind: Any) -> bool:
    """Whether a column of ``kind`` is of string or binary views, or a dictionary of them."""
    pa = pyarrow_module()
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return any(
        getattr(pa.types, test, lambda _: False)(kind)
        for test in ("is_string_view", "is_binary_view")
    )


def _mended_array(array: Any, kind: Any, to_spill: bool) -> Any:
    """In place of ``array`` (of type ``kind``), the same rows in buffers of the right size
    when pyarrow's import gave it buffers sized for no offset (``mended``); else None."""
    pa = pyarrow_module()
    if not (to_spill or _holds_views(kind)):
        return None
    if not len(array) and array.offset:
        return pa.nulls(0, kind)  # ``pa.array([])`` has no converter for every type
    if pa.types.is_dictionary(kind):
        values = array.dictionary
        if not len(values) and values.offset:
            # No value, so every index is null: the same rows over an empty dictionary.
            # Not checked here (``safe=False``): a non-null index over no value is
            # reported by ``validated`` as bad data in its column.
            empty = pa.nulls(0, values.type)
            return pa.DictionaryArray.from_arrays(array.indices, empty, safe=False)
    return None


def validated(data: Any, what: str) -> Any:
    """``data`` (a pyarrow ``Table`` or ``RecordBatch``), its structure checked.

    Before the native core imports it: the Arrow C data interface carries no buffer sizes,
    so the importer takes them from the array's length and, for a string or binary column's
    values, from its last offset; data whose lengths or offsets a producer corrupted would
    be read out of bounds before any check could run (a fuzzer found it). pyarrow knows the
    real buffer sizes: its structural validation (every buffer as large as the length
    needs, first and last offsets within the values, recursively through lists and
    dictionaries) is what the import trusts. The rest (offsets in order, UTF-8, dictionary
    keys in range) the native reader checks in full on the columns it reads, in parallel;
    checking it here too made ``resolve_batch`` 15-22% slower at 1M and 10M records. Bad
    data is ``malformed`` naming the column, on either side. So is a column shorter or
    longer than its table: a producer of ``__arrow_c_array__`` can hand one over, and
    pyarrow's own export of such a table crashed the interpreter (a review found it).
    """
    column_names(data, what)
    try:
        data.validate()  # each column's structure, and every column as long as the table
    except pyarrow_module().ArrowException as exc:
        raise _malformed_column(data, what, exc) from None
    return data


def column_names(data: Any, what: str) -> list[str]:
    """The column names of a pyarrow table, batch or schema.

    A name that is not UTF-8 is ``malformed`` (pyarrow raises ``UnicodeDecodeError``
    reading it; a fuzzer found it), and so is a column whose type holds such a text (a
    timestamp's time zone, a nested field's name; a fuzzer found the time zone). A name
    given to two columns is ``duplicate-field``: which of the two a reader took would be
    an accident of the implementation.
    """
    schema = data if isinstance(data, pyarrow_module().Schema) else data.schema
    try:
        names: list[str] = schema.names
    except UnicodeDecodeError:
        raise InvalidInputError(
            f"{what}: a column name is not valid UTF-8",
            kind=ErrorKind.MALFORMED,
            field=what,
        ) from None
    for name, field in zip(names, schema, strict=True):
        _check_type_texts(field.type, what, name)
    if len(set(names)) < len(names):
        twice = next(name for n, name in enumerate(names) if name in names[:n])
        raise InvalidInputError(
            f"{what}: two columns are named {twice!r}",
            kind=ErrorKind.DUPLICATE_FIELD,
            field=twice,
        )
    return names


def _check_type_texts(kind: Any, what: str, column: str) -> None:
    """Every text inside a column's type, read once, so that no reader meets one that
    is not UTF-8 later, where pyarrow would raise ``UnicodeDecodeError``."""
    pa = pyarrow_module()
    try:
        if isinstance(kind, pa.BaseExtensionType):
            _check_type_texts(kind.storage_type, what, column)
        elif isinstance(kind, pa.TimestampType):
            kind.tz  # noqa: B018 - reading it is the check
        elif isinstance(kind, pa.DictionaryType):
            _check_type_texts(kind.value_type, what, column)
        for index in range(kind.num_fields):
            child = kind.field(index)
            child.name  # noqa: B018 - reading it is the check
            for text in (child.metadata or {}).items():
                text[0].decode()
                text[1].decode()
            _check_type_texts(child.type, what, column)
    except UnicodeDecodeError:
        raise InvalidInputError(
            f"{what}: column {column!r} has a type holding text that is not valid UTF-8"
            " (a time zone, or a nested field's name or metadata)",
            kind=ErrorKind.MALFORMED,
            field=column,
        ) from None


def plain(data: Any, what: str) -> Any:
    """A pyarrow table or batch as its readers take it: every field nullable, every
    extension column as its storage, and no field or schema metadata (ignored by every
    reader; the native import would decode it, and refuse it if it is not UTF-8).

    A producer may declare a column non-nullable and still hold nulls in it (the C data
    interface does not check); the Rust importer would then refuse the whole batch. Read
    as nullable, a null in a required column is reported as the readers report any null:
    ``missing``, naming the column and its first null row. An extension type travels
    through the C data interface as its storage type with a metadata tag, so the native
    reader sees the storage; the reference reads the same. Rebuilding checks each column's
    structure; a column whose offsets or lengths contradict its buffers is ``malformed``
    naming it (a fuzzer found one).
    """
    pa = pyarrow_module()
    if not data.schema.metadata and all(
        field.nullable and not field.metadata and not isinstance(field.type, pa.BaseExtensionType)
        for field in data.schema
    ):
        return data
    try:
        columns = [_storage(column) for column in data.columns]
        schema = pa.schema(
            [
                pa.field(field.name, column.type, True)
                for field, column in zip(data.schema, columns, strict=True)
            ]
        )
        if isinstance(data, pa.RecordBatch):
            return pa.RecordBatch.from_arrays(columns, schema=schema)
        return pa.Table.from_arrays(columns, schema=schema)
    except pa.ArrowException as exc:
        raise _malformed_column(data, what, exc) from None


def _malformed_column(data: Any, what: str, exc: Exception) -> InvalidInputError:
    """``malformed``, naming the first column whose structure pyarrow refuses."""
    pa = pyarrow_module()
    for name, column in zip(data.schema.names, data.columns, strict=True):
        if len(column) != data.num_rows:
            return InvalidInputError(
                f"{what}: column {name!r} has {len(column)} rows; its table has {data.num_rows}",
                kind=ErrorKind.MALFORMED,
                field=name,
            )
        try:
            column.validate()
        except pa.ArrowException as invalid:
            return InvalidInputError(
                f"{what}: column {name!r} is not valid Arrow data: {invalid}",
                kind=ErrorKind.MALFORMED,
                field=name,
            )
    return InvalidInputError(
        f"{what}: not valid Arrow data: {exc}", kind=ErrorKind.MALFORMED, field=what
    )


def _storage(column: Any) -> Any:
    pa = pyarrow_module()
    if not isinstance(column.type, pa.BaseExtensionType):
        return column
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([c.storage for c in column.chunks], column.type.storage_type)
    return column.storage


def native_input(data: object, what: str) -> Any:
    """Any Arrow input of the batch form, read into pyarrow and ``validated`` (by
    ``as_table``): what the native core is handed."""
    return as_table(data, what)


def _not_arrow(what: str, got: str) -> InvalidInputError:
    return InvalidInputError(
        f"{what}: expected an Arrow table (an object with __arrow_c_stream__ or"
        f" __arrow_c_array__), got {got}",
        kind=ErrorKind.WRONG_TYPE,
        field=what,
    )
