"""The batch benchmark: resolve_batch against Polars and DuckDB on generated stores.

Run (from the repository, after ``make setup``)::

    .venv/bin/python benches/bench_batch.py                      # 100k and 1M records
    .venv/bin/python benches/bench_batch.py --sizes 10000000     # 10M (about 20 GB free RAM)

For each size the store (``memresolve.testing.batch_store.generate``) is written to Parquet once.
Each implementation then runs in its own process, limited to ``--threads``
threads (rayon, Polars and DuckDB alike): it loads the Parquet files into
Arrow (not timed), resolves every context (timed: best of ``--repeat`` runs),
and reports its time, its peak resident memory (the loaded input included) and
a digest of its winning rows. All digests must be equal before a line is
printed: the implementations are checked to produce identical rows in the same
run. The reference (``resolve`` per context, pure
Python; every context scans every record) runs on the sizes up to
``--reference-max``. Peak memory is the worker's own (``VmHWM``: not ``ru_maxrss``,
which would include this process's peak from generating the store; see
``memresolve.testing.peak_memory``); "above input" subtracts its resident memory once the
Parquet files are loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
IMPLEMENTATIONS = ("memresolve", "polars", "duckdb", "reference")


def _digest(table: Any) -> str:
    """Order-independent digest of the (context_id, record_id) winner rows."""
    import polars as pl  # noqa: PLC0415 - imported in the worker, after the thread limits

    frame = table if isinstance(table, pl.DataFrame) else pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    frame = frame.select(pl.col("context_id").cast(pl.String), pl.col("record_id").cast(pl.String))
    hashes = frame.hash_rows(seed=0).cast(pl.UInt64).to_list()
    return f"{frame.height}:{sum(hashes) % 2**64:016x}:{max(hashes, default=0):016x}"


def _worker(implementation: str, data: Path, repeat: int, threads: int) -> dict[str, Any]:
    import pyarrow.parquet as pq  # noqa: PLC0415

    records = pq.read_table(data / "records.parquet")
    contexts = pq.read_table(data / "contexts.parquet")
    tombstones = pq.read_table(data / "tombstones.parquet")
    from memresolve.testing.peak_memory import own_peak_bytes, resident_bytes  # noqa: PLC0415

    loaded_mb = resident_bytes() / 2**20  # the input is loaded: the baseline

    def run() -> Any:
        if implementation == "memresolve":
            import memresolve as mr  # noqa: PLC0415

            return mr.resolve_batch(records, contexts, tombstones=tombstones)
        if implementation == "reference":
            from memresolve import reference  # noqa: PLC0415

            return reference.resolve_batch(records, contexts, tombstones=tombstones)
        sys.path.insert(0, str(HERE))
        from memresolve.testing import rivals  # noqa: PLC0415

        if implementation == "polars":
            return rivals.polars_resolve(records, contexts, tombstones)
        return rivals.duckdb_resolve(records, contexts, tombstones, threads=threads)

    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    peak_mb = own_peak_bytes() / 2**20
    return {
        "seconds": best,
        "peak_mb": peak_mb,
        "input_mb": loaded_mb,
        "digest": _digest(result),
        "records": records.num_rows,
    }


def _run_worker(implementation: str, data: Path, repeat: int, threads: int) -> dict[str, Any]:
    environment = {
        **os.environ,
        "RAYON_NUM_THREADS": str(threads),
        "POLARS_MAX_THREADS": str(threads),
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            implementation,
            "--data",
            str(data),
            "--repeat",
            str(repeat),
            "--threads",
            str(threads),
        ],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{implementation} failed:\n{done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000, 1_000_000])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per implementation")
    parser.add_argument("--reference-max", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--order",
        choices=("owner", "time"),
        default="owner",
        help="the store's rows owner by owner, or by valid_from (users interleaved)",
    )
    parser.add_argument(
        "--implementations",
        nargs="+",
        choices=IMPLEMENTATIONS,
        default=list(IMPLEMENTATIONS),
        help="which to run (DuckDB needs about 22 GB at 10M records)",
    )
    parser.add_argument("--worker", choices=IMPLEMENTATIONS, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.worker:
        report = _worker(arguments.worker, arguments.data, arguments.repeat, arguments.threads)
        print(json.dumps(report))
        return 0

    sys.path.insert(0, str(HERE))
    import pyarrow.parquet as pq  # noqa: PLC0415

    from memresolve.testing import batch_store  # noqa: PLC0415

    print(
        f"threads={arguments.threads} seed={arguments.seed} repeat={arguments.repeat}"
        f" order={arguments.order}"
    )
    print("| records | implementation | seconds | records/s | peak RSS | RSS above input | rows |")
    print("|---|---|---|---|---|---|---|")
    for size in arguments.sizes:
        store = batch_store.generate(size, seed=arguments.seed, order=arguments.order)
        with tempfile.TemporaryDirectory() as directory:
            data = Path(directory)
            pq.write_table(store.records, data / "records.parquet")
            pq.write_table(store.contexts, data / "contexts.parquet")
            pq.write_table(store.tombstones, data / "tombstones.parquet")
            del store
            names = [
                n
                for n in arguments.implementations
                if n != "reference" or size <= arguments.reference_max
            ]
            reports = {
                name: _run_worker(
                    name, data, 1 if name == "reference" else arguments.repeat, arguments.threads
                )
                for name in names
            }
        digests = {report["digest"] for report in reports.values()}
        if len(digests) != 1:
            raise SystemExit(f"implementations disagree at {size} records: {reports}")
        for name, report in reports.items():
            rate = size / report["seconds"]
            print(
                f"| {size:,} | {name} | {report['seconds']:.3f} | {rate:,.0f} "
                f"| {report['peak_mb']:,.0f} MiB "
                f"| {report['peak_mb'] - report['input_mb']:,.0f} MiB "
                f"| {report['digest'].split(':')[0]} |"
            )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
