"""The batch job on an input that does not fit its memory limit in one part (resolved whole in
memory it peaks at about 870 MB; the limit is 700 MB): it splits the input, stays within the
limit, and its rows are those of ``resolve_batch`` on the whole input."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import memresolve as mr
from memresolve._backend import available_backends
from memresolve._dataset._limits import parse_size
from memresolve.testing.batch_store import write_parquet
from memresolve.testing.peak_memory import run_measured

pytestmark = [
    pytest.mark.skipif(
        "native" not in available_backends(), reason="the dataset job runs on the compiled core"
    ),
    pytest.mark.skipif(sys.platform != "linux", reason="peak memory is read from /proc"),
    # One worker runs the module: its store is generated once.
    pytest.mark.xdist_group("dataset-memory"),
]

LIMIT = "700MB"

_CHILD = """
import json, sys
import memresolve as mr
records, contexts, tombstones, out, limit = sys.argv[1:]
summary = mr.resolve_dataset(
    records, contexts, out, tombstones=tombstones, include_excluded=True, memory_limit=limit
)
print(json.dumps(summary.as_dict()))
"""


def _in_context_order(table: pa.Table) -> pa.Table:
    """``table``'s rows by context, each context's rows in the order they came."""
    numbered = table.append_column("order", pa.array(range(table.num_rows), pa.int64()))
    ordered = numbered.sort_by([("context_id", "ascending"), ("order", "ascending")])
    decision = pc.cast(ordered.column("decision"), pa.string())
    return pa.table(
        {
            "context_id": ordered.column("context_id"),
            "record_id": ordered.column("record_id"),
            "decision": decision,
        }
    )


def test_a_store_larger_than_the_limit_is_resolved_within_it(tmp_path: Path) -> None:
    # Users interleaved through every file (time order): each part takes rows of every batch.
    store = write_parquet(
        tmp_path / "store", 1_000_000, seed=13, chunk_records=250_000, order="time"
    )
    out = tmp_path / "out"
    run = run_measured(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(store.records),
            str(store.contexts),
            str(store.tombstones),
            str(out),
            LIMIT,
        ],
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    summary: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    limit = parse_size(LIMIT)
    # Resolved whole, the store takes more than the limit: it must be split to fit.
    assert summary["parts"] > 1
    assert summary["records"] == 1_000_000
    assert run.peak_bytes <= limit, f"peak {run.peak_bytes:,} bytes over the {limit:,} limit"

    files = sorted(out.glob("*.parquet"))
    written = pa.concat_tables([pq.read_table(path) for path in files])
    expected = mr.resolve_batch(
        ds.dataset(store.records).to_table(),
        ds.dataset(store.contexts).to_table(),
        tombstones=ds.dataset(store.tombstones).to_table(),
        include_excluded=True,
    )
    assert written.num_rows == expected.num_rows == sum(summary["rows"].values())
    assert _in_context_order(written).equals(_in_context_order(expected))
