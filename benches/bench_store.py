"""MemoryStore ingest and cold start, on a generated store with UUID ids.

Run (from the repository, after ``make setup``)::

    .venv/bin/python benches/bench_store.py --records 1000000

Generates ``--records`` records (``memresolve.testing.batch_store``), loads them into a
new store file with ``add_arrow`` in batches of ``--batch`` (one transaction each) and
reports records per second; then ``add`` of already built records into a second file;
then reopens the first file in a fresh process and times the first resolve of a context
(cold: its scopes are read from the file) and the second (warm: served from memory).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_COLD = """
import json, sys, time
import memresolve as mr
import pyarrow.parquet as pq
path, contexts_file = sys.argv[1], sys.argv[2]
contexts = [c for _, c in mr.contexts_from_arrow(pq.read_table(contexts_file))][:50]
started = time.perf_counter()
store = mr.MemoryStore(path, shared_conversations=True)
opened = time.perf_counter() - started
cold, warm = [], []
for context in contexts:
    started = time.perf_counter()
    first = store.resolve(context)
    cold.append(time.perf_counter() - started)
    started = time.perf_counter()
    second = store.resolve(context)
    warm.append(time.perf_counter() - started)
    assert second.active == first.active
cold.sort()
warm.sort()
print(json.dumps({"open_s": opened, "cold_median_s": cold[len(cold) // 2],
                  "warm_median_s": warm[len(warm) // 2],
                  "candidates": first.trace.memory_candidates}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import pyarrow.parquet as pq  # noqa: PLC0415 - after argument parsing

    import memresolve as mr  # noqa: PLC0415
    from memresolve.testing.batch_store import generate  # noqa: PLC0415

    store_data = generate(args.records, seed=args.seed)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "memories.db"
        store = mr.MemoryStore(path, shared_conversations=True)
        started = time.perf_counter()
        for offset in range(0, args.records, args.batch):
            store.add_arrow(store_data.records.slice(offset, args.batch))
        arrow_seconds = time.perf_counter() - started
        store.close()

        built = mr.records_from_arrow(store_data.records.slice(0, min(args.batch, args.records)))
        second = mr.MemoryStore(Path(directory) / "built.db", shared_conversations=True)
        started = time.perf_counter()
        second.add(built)
        add_seconds = time.perf_counter() - started
        second.close()

        contexts_file = Path(directory) / "contexts.parquet"
        pq.write_table(store_data.contexts, contexts_file)
        cold = json.loads(
            subprocess.run(
                [sys.executable, "-c", _COLD, str(path), str(contexts_file)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        size = path.stat().st_size
    print(f"records: {args.records:,}, file: {size / 1e6:,.0f} MB")
    print(
        f"add_arrow: {args.records / arrow_seconds:,.0f} records/s "
        f"({arrow_seconds:.1f} s, batches of {args.batch:,})"
    )
    print(f"add (records already built): {len(built) / add_seconds:,.0f} records/s")
    print(
        f"open: {cold['open_s'] * 1e3:.1f} ms; first resolve of a context (cold): "
        f"{cold['cold_median_s'] * 1e6:,.0f} us; second (warm): "
        f"{cold['warm_median_s'] * 1e6:,.0f} us (median of 50 contexts, "
        f"last had {cold['candidates']} candidates)"
    )


if __name__ == "__main__":
    main()
