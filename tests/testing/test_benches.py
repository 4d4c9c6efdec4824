"""The batch benchmarks run end to end on a small store, so they cannot rot: each checks
that every implementation wrote the same rows before it prints a line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memresolve.testing.batch_store import write_parquet

BENCHES = Path(__file__).parents[2] / "benches"


def test_the_file_to_file_benchmark_runs(tmp_path: Path) -> None:
    write_parquet(tmp_path / "store", 30_000, seed=2, chunk_records=10_000)
    done = subprocess.run(
        [
            *(sys.executable, str(BENCHES / "bench_dataset.py"), str(tmp_path / "store")),
            *("--threads", "2", "--memory-limit", "1GB", "--scratch", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert [line.split(" | ")[0] for line in table] == ["| memresolve", "| duckdb", "| polars"]
    assert len({line.split(" | ")[-1] for line in table}) == 1  # the same rows


def test_the_normalisation_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHES / "bench_normalize.py"), "--sizes", "20000", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stdout.splitlines() if line.startswith("| 20,000")]
    assert [line.split(" | ")[1] for line in table] == ["memresolve", "polars", "duckdb"]
    assert len({line.split(" | ")[-1] for line in table}) == 1  # the same number of rows
    assert "reach at 20,000" in done.stdout


def test_the_erasure_benchmark_runs(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    done = subprocess.run(
        [
            *(sys.executable, str(BENCHES / "bench_erasure.py"), "--records", "5000"),
            *("--forgets", "5", "--erasures", "1", "--keep", str(store)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "forget: median" in done.stdout
    assert "compaction median" in done.stdout
