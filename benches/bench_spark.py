"""The batch job on Spark ``local[N]``, file to file: ``memresolve.spark.resolve`` against the
same job in plain Spark SQL (joins and window functions, no Python UDFs).

Run (from the repository, after ``make setup``), on a store written by the generator::

    .venv/bin/python benches/bench_spark.py /var/tmp/store-10m --threads 2 --driver-memory 8g

Both run in one Spark session (``local[threads]``, ``--shuffle-partitions``), Parquet in and
Parquet out, winners only; each is timed from reading to the written output (best of
``--repeat``), after one warm-up job. Then the same job without Spark, ``memresolve batch``
(``resolve_dataset``) with the same threads and ``--memory-limit``, timed as a whole process
(interpreter start included): what Spark's own work costs on one machine. The outputs are
checked equal (row count and an order-independent hash, by DuckDB) before a line is printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memresolve.testing import rivals

# The DuckDB formulation (memresolve.testing.rivals) in Spark's SQL dialect.
SPARK_SQL = rivals.RESOLVE_SQL.replace("GROUP BY ALL", "GROUP BY 1, 2, 3, 4, 5")


def _memresolve(spark: Any, store: Path, output: Path) -> None:
    from memresolve import spark as mrs  # noqa: PLC0415

    frames = [
        spark.read.parquet(str(store / name)) for name in ("records", "contexts", "tombstones")
    ]
    mrs.resolve(*frames).select("context_id", "record_id").write.parquet(str(output))


def _plain(spark: Any, store: Path, output: Path) -> None:
    for name in ("records", "contexts", "tombstones"):
        spark.read.parquet(str(store / name)).createOrReplaceTempView(f"{name}_in")
    columns = spark.table("records_in").columns
    observed = "observed_at" if "observed_at" in columns else "CAST(NULL AS TIMESTAMP)"
    forgets = spark.table("tombstones_in").columns
    user_wide = "coalesce(user_wide, false)" if "user_wide" in forgets else "false"
    query = SPARK_SQL.format(observed=observed, user_wide=user_wide)
    spark.sql(query).write.parquet(str(output))


def _command(threads: int, memory_limit: str) -> Any:
    """``memresolve batch`` on the store, in a process of its own, as a job of this table."""

    def run(_spark: Any, store: Path, output: Path) -> None:
        argv = [sys.executable, "-m", "memresolve", "batch", str(store / "records")]
        argv += [str(store / "contexts"), "--tombstones", str(store / "tombstones")]
        argv += ["--out", str(output), "--threads", str(threads), "--memory-limit", memory_limit]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"memresolve batch failed ({done.returncode}): {done.stderr}")

    return run


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    """Runs the benchmark; in ``spark`` when given (a test's session, left running)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--scratch", type=Path, default=None)
    parser.add_argument("--memory-limit", default="4GB", help="for memresolve batch")
    arguments = parser.parse_args(argv)

    from pyspark.sql import SparkSession  # noqa: PLC0415

    own = spark is None
    if own:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        spark = (
            SparkSession.builder.master(f"local[{arguments.threads}]")
            .config("spark.driver.memory", arguments.driver_memory)
            .config("spark.sql.shuffle.partitions", str(arguments.shuffle_partitions))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.range(10).count()
    print(
        f"store={arguments.store} local[{arguments.threads}] driver={arguments.driver_memory}"
        f" shuffle.partitions={arguments.shuffle_partitions}"
    )
    print("| implementation | seconds | rows |")
    print("|---|---|---|")
    digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory(dir=arguments.scratch) as directory:
        jobs = (
            ("memresolve.spark", _memresolve),
            ("plain Spark SQL", _plain),
            ("memresolve batch (no Spark)", _command(arguments.threads, arguments.memory_limit)),
        )
        for name, job in jobs:
            best = float("inf")
            for attempt in range(arguments.repeat):
                output = Path(directory) / f"{name}-{attempt}"
                started = time.perf_counter()
                job(spark, arguments.store, output)
                best = min(best, time.perf_counter() - started)
                digests[name] = rivals.parquet_digest(output)
                shutil.rmtree(output)
            if len(set(digests.values())) > 1:
                raise SystemExit(f"the implementations disagree: {digests}")
            print(f"| {name} | {best:.1f} | {digests[name].split(':')[0]} |")
            sys.stdout.flush()
    if own:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
