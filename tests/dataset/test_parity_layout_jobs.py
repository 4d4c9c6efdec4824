"""Parity on every valid Arrow layout, for the readers that run as jobs (issue 35, finding 8):
the dataset jobs, given tables in memory (read as a stream) and Parquet files written from
them, and the Spark executors, given a partition's batches. Each gives on a laid-out input
what it gives on the same data laid out plainly: the same rows, or the same error (kind,
field, row, record id). The in-memory readers are in ``test_parity_layouts.py``.

These readers run on the compiled core only.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from batch_rows import (
    Outcome,
    after_an_empty_chunk,
    by_context,
    outcome,
    over_an_empty_dictionary,
    story_tables,
)
from memresolve._io._canonical import read_columns
from memresolve._model._validate import to_micros
from memresolve._spark._jobs import _normalize_partitions, _sweep_partitions
from memresolve.spark import _KINDS as SPARK_KINDS
from memresolve.spark import _resolve_partitions
from memresolve.testing import BASE_NOW
from memresolve.testing.layouts import StoreLayout, Tables, layouts, store_layouts
from profiles import PARITY_EXAMPLES

pytestmark = pytest.mark.skipif(
    mr.backend_name() != "native",
    reason="the dataset jobs and the Spark executors run on the compiled core",
)

JOB_EXAMPLES = max(30, PARITY_EXAMPLES // 50)
NAMES = ("records", "contexts", "tombstones")


# The dataset jobs --------------------------------------------------------------------------


def _writable(table: pa.Table) -> pa.Table:
    """``table`` with its dictionary columns decoded, chunk by chunk (the chunks kept as they
    are): pyarrow's Parquet writer refuses some dictionaries the readers take (of string
    views, or holding a null value), and writes its own dictionary pages of every string
    column anyway."""
    columns = []
    for column in table.columns:
        kind = column.type
        if pa.types.is_dictionary(kind):
            chunks = [pa.array(chunk.to_pylist(), pa.string()) for chunk in column.chunks]
            columns.append(pa.chunked_array(chunks, pa.string()))
        else:
            columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def _written(tables: Tables, directory: Path, row_group_rows: int) -> Tables:
    """Each table as a Parquet file in ``directory``, in row groups of ``row_group_rows``."""
    directory.mkdir()
    paths = []
    for name, table in zip(NAMES, tables, strict=True):
        path = directory / f"{name}.parquet"
        pq.write_table(_writable(table), path, row_group_size=row_group_rows)
        paths.append(path)
    return Tables(*paths)


def _sorted_rows(output: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(output).to_pylist()
    return sorted(rows, key=repr)


def _dataset_jobs(inputs: Tables, workspace: Path, with_values: bool) -> list[Outcome]:
    """What each dataset job gave on ``inputs`` (tables or files), its output in
    ``workspace``: resolution by context, the other jobs' rows sorted (they have no order)."""

    def resolved(output: Path) -> object:
        mr.resolve_dataset(
            inputs.records,
            inputs.contexts,
            output,
            tombstones=inputs.tombstones,
            include_excluded=True,
            with_values=with_values,
            memory_limit="1GB",
        )
        return by_context(pq.read_table(output))

    def normalized(output: Path) -> object:
        mr.normalize_dataset(
            inputs.records, output, now=BASE_NOW, tombstones=inputs.tombstones, memory_limit="1GB"
        )
        return _sorted_rows(output)

    def swept(output: Path) -> object:
        mr.forget_sweep_dataset(
            inputs.records, output, tombstones=inputs.tombstones, memory_limit="1GB"
        )
        return _sorted_rows(output)

    workspace.mkdir()
    jobs: dict[str, Callable[[Path], object]] = {
        "resolve": resolved,
        "normalize": normalized,
        "forget_sweep": swept,
    }
    return [outcome(job, workspace / name) for name, job in jobs.items()]


@settings(max_examples=JOB_EXAMPLES)
# Lossless variants: the job checks its input batch by batch, so with several faults in one
# input it reports the first in reading order, which a layout may change (docs/spec.md
# §4.4); a coarser time unit can add a fault (a bound past its forget), a lossless one not.
@given(store_layouts(lossless=True), st.booleans(), st.integers(1, 6))
def test_parity_the_dataset_jobs_on_every_layout(
    layout: StoreLayout, with_values: bool, row_group_rows: int
) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        workspace = Path(temporary)
        plain_answers = _dataset_jobs(layout.plain, workspace / "plain", with_values)
        # The tables themselves: read by the job as a stream, batch by batch.
        laid_answers = _dataset_jobs(layout.laid, workspace / "laid", with_values)
        assert laid_answers == plain_answers
        # Parquet files written from each: every reader of the job's files.
        plain_files = _written(layout.plain, workspace / "plain-files", row_group_rows)
        laid_files = _written(layout.laid, workspace / "laid-files", row_group_rows)
        from_plain = _dataset_jobs(plain_files, workspace / "plain-files-out", with_values)
        from_laid = _dataset_jobs(laid_files, workspace / "laid-files-out", with_values)
        assert from_laid == from_plain


# The Spark executors -----------------------------------------------------------------------


def _struct(table: pa.Table, columns: tuple[str, ...]) -> pa.StructArray:
    """The columns of ``table`` the job reads, packed in one struct column as the plan
    packs a row (``memresolve.spark``, step 2)."""
    present = [name for name in columns if name in table.column_names]
    arrays = [table.column(name).combine_chunks() for name in present]
    return pa.StructArray.from_arrays(arrays, fields=[table.field(name) for name in present])


def _resolve_partition(tables: Tables, with_values: bool) -> pa.Table:
    """The three tables as one partition of ``spark.resolve``'s plan: ``_kind``, ``_owner``,
    ``_row``, and one struct column per input, null on the other inputs' rows."""
    parts = []
    for kind, name in enumerate(SPARK_KINDS):
        table = getattr(tables, name)
        rows = table.num_rows
        parts.append(
            pa.table(
                {
                    "_kind": pa.array([kind] * rows, pa.int32()),
                    "_owner": pa.array([""] * rows, pa.string()),
                    "_row": pa.array(range(rows), pa.int64()),
                    name: _struct(table, read_columns(name, with_values)),
                }
            )
        )
    return pa.concat_tables(parts, promote_options="default")


def _normalize_partition(records: pa.Table) -> pa.Table:
    """The records as one partition of ``normalize``'s plan: each row at home, no copy."""
    rows = records.num_rows
    struct = _struct(records, read_columns("records", False))
    return pa.table(
        {
            "_part": records.column("id").combine_chunks().cast(pa.string()),
            "_copy": pa.array([False] * rows),
            "_row": pa.array(range(rows), pa.int64()),
            "records": struct,
        }
    )


def _handed(batches: Iterator[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [row for batch in batches for row in batch.to_pylist()]


def _spark_executors(
    partitions: dict[str, pa.Table], tables: Tables, with_values: bool, batch_rows: int
) -> list[Outcome]:
    """What each executor made of its partition, handed over in batches of ``batch_rows``."""
    options = {"include_excluded": True, "with_values": with_values}
    tombstones = tables.tombstones.select(
        [n for n in read_columns("tombstones", False) if n in tables.tombstones.column_names]
    )

    def batches(name: str) -> Iterator[pa.RecordBatch]:
        return iter(partitions[name].to_batches(max_chunksize=batch_rows))

    return [
        outcome(
            lambda: _handed(
                _resolve_partitions(batches("resolve"), options=options, tombstones=True)
            )
        ),
        outcome(
            lambda: sorted(
                _handed(
                    _normalize_partitions(
                        batches("normalize"), micros=to_micros(BASE_NOW), tombstones=tombstones
                    )
                ),
                key=repr,
            )
        ),
        outcome(
            lambda: sorted(
                _handed(_sweep_partitions(batches("sweep"), tombstones=tombstones)), key=repr
            )
        ),
    ]


@settings(max_examples=JOB_EXAMPLES)
@given(store_layouts(variants=False), st.booleans(), st.integers(1, 6), st.data())
def test_parity_the_spark_executors_on_every_layout(
    layout: StoreLayout, with_values: bool, batch_rows: int, data: st.DataObject
) -> None:
    # Spark hands a partition over as Arrow batches of its own types (strings, int64,
    # double, microseconds): the layouts vary, the types do not.
    answers = []
    for tables, relaid in ((layout.plain, False), (layout.laid, True)):
        partitions = {
            "resolve": _resolve_partition(tables, with_values),
            "normalize": _normalize_partition(tables.records),
            "sweep": tables.records.select(
                [n for n in read_columns("records", False) if n in tables.records.column_names]
            ),
        }
        if relaid:
            partitions = {name: data.draw(layouts(table)) for name, table in partitions.items()}
        answers.append(_spark_executors(partitions, tables, with_values, batch_rows))
    assert answers[1] == answers[0]
    # One partition holding every owner resolves as resolve_batch does.
    plain = layout.plain
    expected = outcome(
        lambda: mr.resolve_batch(
            plain.records,
            plain.contexts,
            tombstones=plain.tombstones,
            include_excluded=True,
            with_values=with_values,
        ).to_pylist()
    )
    if expected.error is None:
        assert answers[0][0] == expected


# The layouts that failed, by name ---------------------------------------------------------


def test_regression_a_stream_of_chunks_over_nothing_spills_parts_the_job_can_read() -> None:
    # pyarrow's C data importer sizes an empty array at a non-zero offset (here the empty
    # dictionary of a chunk of null rows) as if its offset were 0; its IPC writer then wrote
    # a spill file it could not read back ("Negative length for reading buffer"): an
    # ArrowInvalid from every dataset job given such a table, outside the error contract.
    # The dictionaries are of the type the job spills as they are (int32 over strings).
    names = pa.dictionary(pa.int32(), pa.string())
    plain = story_tables({"scene_id": names, "supersedes": names})
    laid = Tables(
        over_an_empty_dictionary(after_an_empty_chunk(plain.records), ("scene_id", "supersedes")),
        after_an_empty_chunk(plain.contexts),
        after_an_empty_chunk(plain.tombstones),
    )
    for with_values in (False, True):
        with tempfile.TemporaryDirectory() as temporary:
            workspace = Path(temporary)
            expected = _dataset_jobs(plain, workspace / "plain", with_values)
            assert all(answer.error is None for answer in expected)
            assert _dataset_jobs(laid, workspace / "laid", with_values) == expected


def test_regression_an_empty_input_of_dictionary_string_views_is_checked_by_the_dataset_jobs() -> (
    None
):
    # A table without rows is checked on an empty batch of its columns, which was built
    # with from_pylist([]): pyarrow has no converter from Python for a dictionary of string
    # views, and the jobs raised ArrowNotImplementedError where resolve_batch answers.
    views = pa.dictionary(pa.uint16(), pa.string_view())
    tables = story_tables({"key": views, "scope_kind": views, "user_id": views})
    empty = Tables(tables.records.slice(0, 0), tables.contexts, tables.tombstones.slice(0, 0))
    with tempfile.TemporaryDirectory() as temporary:
        answers = _dataset_jobs(empty, Path(temporary) / "jobs", with_values=False)
    assert answers[0] == Outcome(answer={})
    assert answers[1:] == [Outcome(answer=[]), Outcome(answer=[])]
