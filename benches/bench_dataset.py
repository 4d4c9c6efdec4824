"""The batch job file to file: ``memresolve batch`` against DuckDB and Polars, Parquet in and out.

Run (from the repository, after ``make setup``), on a store written by the generator::

    .venv/bin/python -m memresolve.testing.batch_store /var/tmp/store-10m --records 1e7
    .venv/bin/python benches/bench_dataset.py /var/tmp/store-10m --memory-limit 4GB --threads 2

Each implementation runs in its own process with the same threads and memory limit: memresolve
as its command (``memresolve batch ... --memory-limit``), DuckDB as one SQL statement
(``memresolve.testing.rivals``: ``COPY (...) TO`` with ``memory_limit`` and a spill
directory), Polars as the same query on its streaming engine (``sink_parquet``; Polars has no
memory limit of its own, so ``--address-space`` can cap its process). Every implementation
writes the winners of every context; time is wall clock for the whole process (interpreter
start included), peak memory is the process's maximum resident set (``wait4``), started from
a small launcher so that none of this process's memory counts
(``memresolve.testing.peak_memory``). The outputs
are then checked equal (row count and an order-independent hash of the rows, by DuckDB) before
a line is printed. An implementation that fails or passes ``--timeout`` is reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from memresolve.testing import rivals
from memresolve.testing.peak_memory import run_measured

IMPLEMENTATIONS = ("memresolve", "duckdb", "polars")


def _worker(implementation: str, store: Path, output: Path, arguments: argparse.Namespace) -> None:

    paths = (store / "records", store / "contexts", store / "tombstones")
    if implementation == "duckdb":
        spill = output.parent / "duckdb-spill"
        spill.mkdir()
        rivals.duckdb_file_to_file(
            *paths,
            output,
            threads=arguments.threads,
            memory_limit=arguments.memory_limit,
            spill=spill,
        )
    else:
        rivals.polars_file_to_file(*paths, output)


def _command(
    implementation: str, store: Path, output: Path, arguments: argparse.Namespace
) -> list[str]:
    if implementation == "memresolve":
        return [
            sys.executable,
            "-m",
            "memresolve",
            "batch",
            str(store / "records"),
            str(store / "contexts"),
            "--tombstones",
            str(store / "tombstones"),
            "--out",
            str(output),
            "--memory-limit",
            arguments.memory_limit,
            "--threads",
            str(arguments.threads),
            "--json",
        ]
    return [
        sys.executable,
        __file__,
        str(store),
        "--worker",
        implementation,
        "--output",
        str(output),
        "--threads",
        str(arguments.threads),
        "--memory-limit",
        arguments.memory_limit,
    ]


def _run(
    implementation: str, store: Path, scratch: Path, arguments: argparse.Namespace
) -> dict[str, Any]:
    output = scratch / implementation / "out"
    output.parent.mkdir()
    threads = str(arguments.threads)
    environment = {
        **os.environ,
        "RAYON_NUM_THREADS": threads,
        "POLARS_MAX_THREADS": threads,
        "OMP_NUM_THREADS": "1",
        "TMPDIR": str(output.parent),
    }
    measured = run_measured(
        _command(implementation, store, output, arguments),
        env=environment,
        timeout=arguments.timeout,
        address_space=arguments.address_space if implementation == "polars" else 0,
    )
    report: dict[str, Any] = {"seconds": measured.seconds, "peak_mb": measured.peak_bytes / 2**20}
    if measured.timed_out:
        report["status"] = f"stopped after {arguments.timeout:.0f} s"
        return report
    if measured.returncode != 0:
        last = measured.stderr.strip().splitlines()[-1:] or ""
        report["status"] = f"failed (exit {measured.returncode}): {last}"
        return report
    report["status"] = "ok"
    report["digest"] = rivals.parquet_digest(output)
    report["spill_mb"] = _peak_spill(implementation, measured.stdout)
    shutil.rmtree(output.parent, ignore_errors=True)
    return report


def _peak_spill(implementation: str, stdout: str) -> float | None:
    if implementation != "memresolve":
        return None
    summary = json.loads(stdout.strip().splitlines()[-1])
    return float(summary["peak_spill_bytes"]) / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "store", type=Path, help="a store written by memresolve.testing.batch_store"
    )
    parser.add_argument(
        "--implementations", nargs="+", choices=IMPLEMENTATIONS, default=list(IMPLEMENTATIONS)
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--address-space", type=int, default=0, help="RLIMIT_AS for Polars, bytes")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--scratch", type=Path, default=None, help="where outputs and spills go")
    parser.add_argument("--worker", choices=IMPLEMENTATIONS[1:], help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.worker:
        _worker(arguments.worker, arguments.store, arguments.output, arguments)
        return 0

    records = sum(1 for _ in (arguments.store / "records").iterdir())
    print(
        f"store={arguments.store} ({records} record files) threads={arguments.threads}"
        f" memory_limit={arguments.memory_limit}"
    )
    print("| implementation | seconds | peak RSS | spill | result |")
    print("|---|---|---|---|---|")
    reports: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(dir=arguments.scratch) as directory:
        for name in arguments.implementations:
            reports[name] = report = _run(name, arguments.store, Path(directory), arguments)
            digests = {r["digest"] for r in reports.values() if "digest" in r}
            if len(digests) > 1:
                raise SystemExit(f"implementations disagree: {reports}")
            seconds = f"{report['seconds']:.1f}" if "seconds" in report else "-"
            spill = f"{report['spill_mb']:,.0f} MiB" if report.get("spill_mb") is not None else "-"
            result = (
                report.get("digest", "").split(":")[0] + " rows"
                if "digest" in report
                else report["status"]
            )
            print(f"| {name} | {seconds} | {report['peak_mb']:,.0f} MiB | {spill} | {result} |")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
