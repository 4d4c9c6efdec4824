"""Input and output: Arrow tables, Parquet inputs, JSON Lines, in the forms both backends read.

This is the wing's face: what other wings and the package use of it. Its modules are
private to it."""

from memresolve._io import _arrow as arrow
from memresolve._io._arrow import (
    contexts_from_arrow,
    contexts_to_arrow,
    records_from_arrow,
    records_to_arrow,
    tombstones_from_arrow,
    tombstones_to_arrow,
)
from memresolve._io._arrow_input import (
    arrow_source,
    column_names,
    mended,
    native_input,
    plain,
    pyarrow_module,
    stream_failed,
    validated,
)
from memresolve._io._canonical import canonical, canonical_schema, lists_an_item, read_columns
from memresolve._io._jsonl import (
    context_to_json,
    read_contexts,
    read_records,
    read_tombstones,
    write_contexts,
    write_records,
    write_tombstones,
)
from memresolve._io._parquet_input import ParquetInput, parquet_files

__all__ = [
    "ParquetInput",
    "arrow",
    "arrow_source",
    "canonical",
    "canonical_schema",
    "column_names",
    "context_to_json",
    "contexts_from_arrow",
    "contexts_to_arrow",
    "lists_an_item",
    "mended",
    "native_input",
    "parquet_files",
    "plain",
    "pyarrow_module",
    "read_columns",
    "read_contexts",
    "read_records",
    "read_tombstones",
    "records_from_arrow",
    "records_to_arrow",
    "stream_failed",
    "tombstones_from_arrow",
    "tombstones_to_arrow",
    "validated",
    "write_contexts",
    "write_records",
    "write_tombstones",
]
