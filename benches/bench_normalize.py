"""The normalisation benchmark: ``normalize_batch`` against Polars and DuckDB.

Run (from the repository, after ``make setup``)::

    .venv/bin/python benches/bench_normalize.py                     # 100k and 1M records
    .venv/bin/python benches/bench_normalize.py --sizes 10000000    # 10M

For each size the store (``memresolve.testing.batch_store.generate``: UUID ids,
corrections, expiring records, tombstones) is written to Parquet once, or read
from ``--data DIR/<size>`` (the layout ``batch_store``'s command writes). The
instant is the latest ``now`` of the store's contexts: a nightly job normalises
at the end of the day. Each implementation runs in its own process, limited to
``--threads`` threads: it loads the Parquet files into Arrow (not timed),
computes the changes (timed, best of ``--repeat``), and reports its time, its own
peak resident memory (``memresolve.testing.peak_memory``) and a digest of its
(record id, new status) rows. All digests must be equal before a line is
printed. The last table says how far the normaliser reaches on the store: what
it writes, by status, and what it cannot write yet (records that end later;
records a correction names that does not qualify).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

IMPLEMENTATIONS = ("memresolve", "polars", "duckdb")


def _digest(table: Any) -> str:
    import polars as pl  # noqa: PLC0415 - imported in the worker, after the thread limits

    frame = table if isinstance(table, pl.DataFrame) else pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    frame = frame.select(pl.col("record_id").cast(pl.String), pl.col("new_status").cast(pl.String))
    hashes = frame.hash_rows(seed=0).cast(pl.UInt64).to_list()
    return f"{frame.height}:{sum(hashes) % 2**64:016x}"


def _load(data: Path, name: str) -> Any:
    import pyarrow.dataset as ds  # noqa: PLC0415

    path = data / name
    source = path if path.is_dir() else data / f"{name}.parquet"
    return ds.dataset(source).to_table()


def _worker(implementation: str, data: Path, repeat: int, threads: int) -> dict[str, Any]:
    import pyarrow.compute as pc  # noqa: PLC0415

    records = _load(data, "records").drop_columns(["value"])
    tombstones = _load(data, "tombstones")
    now: datetime = pc.max(_load(data, "contexts")["now"]).as_py()
    from memresolve.testing.peak_memory import own_peak_bytes, resident_bytes  # noqa: PLC0415

    loaded_mb = resident_bytes() / 2**20  # the input is loaded: the baseline

    def run() -> Any:
        if implementation == "memresolve":
            import memresolve as mr  # noqa: PLC0415

            return mr.normalize_batch(records, now=now, tombstones=tombstones)
        from memresolve.testing import normalize_rivals  # noqa: PLC0415

        if implementation == "polars":
            return normalize_rivals.polars_normalize(records, tombstones, now)
        return normalize_rivals.duckdb_normalize(records, tombstones, now, threads=threads)

    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    peak_mb = own_peak_bytes() / 2**20
    report: dict[str, Any] = {
        "seconds": best,
        "peak_mb": peak_mb,
        "input_mb": loaded_mb,
        "digest": _digest(result),
        "records": records.num_rows,
    }
    if implementation == "memresolve":
        report["reach"] = _reach(records, tombstones, now, result)
    return report


def _reach(records: Any, tombstones: Any, now: datetime, changes: Any) -> dict[str, int]:
    """What the normaliser writes, and what it leaves for later or cannot write."""
    import polars as pl  # noqa: PLC0415

    frame = pl.from_arrow(records)
    written = pl.from_arrow(changes)
    assert isinstance(frame, pl.DataFrame)
    assert isinstance(written, pl.DataFrame)
    counts = dict(written.group_by("new_status").len().iter_rows())
    changed = written.get_column("record_id")
    active = frame.filter(pl.col("status") == "active")
    left = active.filter(~pl.col("id").is_in(changed.implode()))
    named = frame.get_column("supersedes").drop_nulls().unique()
    return {
        "records": frame.height,
        "active": active.height,
        **{f"written_{status}": int(n) for status, n in counts.items()},
        "active_left_ending_later": left.filter(pl.col("valid_until").is_not_null()).height,
        "active_left_named_by_a_correction": left.filter(
            pl.col("id").is_in(named.implode())
        ).height,
    }


def _run_worker(implementation: str, data: Path, repeat: int, threads: int) -> dict[str, Any]:
    environment = {
        **os.environ,
        "RAYON_NUM_THREADS": str(threads),
        "POLARS_MAX_THREADS": str(threads),
        "OMP_NUM_THREADS": "1",
    }
    command = [sys.executable, __file__, "--worker", implementation, "--data", str(data)]
    command += ["--repeat", str(repeat), "--threads", str(threads)]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{implementation} failed:\n{done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _measure(size: int, data: Path, arguments: argparse.Namespace) -> None:
    reports = {
        name: _run_worker(name, data, arguments.repeat, arguments.threads)
        for name in IMPLEMENTATIONS
    }
    digests = {report["digest"] for report in reports.values()}
    if len(digests) != 1:
        raise SystemExit(f"implementations disagree at {size} records: {reports}")
    for name, report in reports.items():
        rate = size / report["seconds"]
        print(
            f"| {size:,} | {name} | {report['seconds']:.3f} | {rate:,.0f} "
            f"| {report['peak_mb']:,.0f} MiB | {report['peak_mb'] - report['input_mb']:,.0f} MiB "
            f"| {report['digest'].split(':')[0]} |"
        )
    print(f"reach at {size:,}: {json.dumps(reports['memresolve']['reach'])}")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per implementation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, help="a directory of stores, one per size")
    parser.add_argument("--worker", choices=IMPLEMENTATIONS, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.worker:
        report = _worker(arguments.worker, arguments.data, arguments.repeat, arguments.threads)
        print(json.dumps(report))
        return 0

    import pyarrow.parquet as pq  # noqa: PLC0415

    from memresolve.testing import batch_store  # noqa: PLC0415

    print(f"threads={arguments.threads} seed={arguments.seed} repeat={arguments.repeat}")
    print("| records | implementation | seconds | records/s | peak RSS | RSS above input | rows |")
    print("|---|---|---|---|---|---|---|")
    for size in arguments.sizes:
        if arguments.data is not None and (arguments.data / str(size)).is_dir():
            _measure(size, arguments.data / str(size), arguments)
            continue
        store = batch_store.generate(size, seed=arguments.seed)
        with tempfile.TemporaryDirectory() as directory:
            data = Path(directory)
            pq.write_table(store.records, data / "records.parquet")
            pq.write_table(store.contexts, data / "contexts.parquet")
            pq.write_table(store.tombstones, data / "tombstones.parquet")
            del store
            _measure(size, data, arguments)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
