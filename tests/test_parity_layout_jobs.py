"""Parity on every valid Arrow layout, for the readers that run as jobs (issue 35, finding 8):
the dataset jobs, given tables in memory (read as a stream). Each gives on a laid-out input
what it gives on the same data laid out plainly: the same rows, or the same error (kind,
field, row, record id). The in-memory readers are in ``test_parity_layouts.py``.

These readers run on the compiled core only.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import memresolve as mr
from batch_rows import (
    Outcome,
    after_an_empty_chunk,
    by_context,
    outcome,
    over_an_empty_dictionary,
    story_tables,
)
from memresolve._backend import available_backends
from memresolve.testing import BASE_NOW
from memresolve.testing.layouts import Tables

pytestmark = pytest.mark.skipif(
    "native" not in available_backends(),
    reason="the dataset jobs and the Spark executors run on the compiled core",
)

# The dataset jobs --------------------------------------------------------------------------


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
