"""The batch jobs' other threads: order, failures where they belong, nothing left running.

``read_ahead`` decodes the next Parquet batches while the job routes one;
``InOrder`` writes spill batches behind it; ``resolve_dataset`` reads the
next part and writes the last output while a part resolves. A failure on
any of those threads must reach the caller as if there were no thread, and
a failed job must leave no output, spill or thread behind.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import memresolve as mr
from memresolve._dataset import _output as _dataset_output
from memresolve._dataset import _resolve_job as _dataset
from memresolve._dataset import _sources, _spill
from memresolve._dataset._background import InOrder, read_ahead
from memresolve._io._canonical import read_columns
from memresolve.testing.batch_store import Written, write_parquet

# One worker runs the module: its store is generated once, by a module fixture.
pytestmark = pytest.mark.xdist_group("background")


def _our_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("memresolve-")]


def test_read_ahead_gives_every_item_in_order() -> None:
    with read_ahead(iter(range(100)), depth=3) as items:
        assert list(items) == list(range(100))
    assert _our_threads() == []


def test_read_ahead_raises_a_failure_after_the_items_before_it() -> None:
    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("third")

    seen: list[int] = []
    with pytest.raises(ValueError, match="third"), read_ahead(failing()) as items:
        seen.extend(items)
    assert seen == [1, 2]


def test_leaving_read_ahead_early_closes_the_items_on_this_thread() -> None:
    closed_on: list[str] = []

    def items() -> Iterator[int]:
        try:
            yield from range(1_000)
        finally:
            closed_on.append(threading.current_thread().name)

    with read_ahead(items(), depth=2) as ahead:
        assert next(ahead) == 0
    assert closed_on == [threading.current_thread().name]
    assert _our_threads() == []


def test_in_order_runs_calls_in_order_and_waits_for_them() -> None:
    done: list[int] = []

    def call(n: int) -> None:
        time.sleep(0.001)
        done.append(n)

    background = InOrder("test", depth=2)
    for n in range(20):
        background.submit(call, n)
    background.wait()
    background.close()
    assert done == list(range(20))
    assert _our_threads() == []


def test_in_order_raises_the_first_failure_and_drops_what_follows() -> None:
    ran: list[int] = []

    def call(n: int) -> None:
        if n == 3:
            raise OSError("disk full")
        ran.append(n)

    background = InOrder("test", depth=50)
    # The failure surfaces at the first submit after it is done, or at wait: which one
    # depends on the worker thread's timing, so both are awaited under one raises.
    with pytest.raises(OSError, match="disk full"):  # noqa: PT012 - either call may raise
        for n in range(10):
            background.submit(call, n)
        background.wait()
    background.wait()  # raised once: nothing is left to raise
    background.close()
    assert ran[:3] == [0, 1, 2]
    assert 3 not in ran


@pytest.fixture(scope="module")
def store_files(tmp_path_factory: pytest.TempPathFactory) -> Written:
    return write_parquet(tmp_path_factory.mktemp("store"), 20_000, seed=5, chunk_records=5_000)


def _job(store: Written, out: Path, spill: Path) -> Any:
    return mr.resolve_dataset(
        store.records,
        store.contexts,
        out,
        tombstones=store.tombstones,
        parts=4,
        spill_directory=spill,
    )


def test_a_spill_write_that_fails_fails_the_job_and_leaves_nothing(
    store_files: Written, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = _spill.Parts._write
    writes = 0

    def failing_write(self: Any, part: int, batch: Any) -> None:
        nonlocal writes
        writes += 1
        if writes == 5:
            raise OSError(28, "No space left on device")
        real_write(self, part, batch)

    monkeypatch.setattr(_spill.Parts, "_write", failing_write)
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(OSError, match="No space left"):
        _job(store_files, tmp_path / "out", spill)
    assert list(spill.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spill"]
    assert _our_threads() == []


def test_an_output_write_that_fails_fails_the_job_and_leaves_nothing(
    store_files: Written, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = _dataset_output._write_parquet
    writes = 0

    def failing_write(table: Any, path: Path) -> None:
        nonlocal writes
        writes += 1
        if writes == 2:
            raise OSError(28, "No space left on device")
        real_write(table, path)

    monkeypatch.setattr(_dataset_output, "_write_parquet", failing_write)
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(OSError, match="No space left"):
        _job(store_files, tmp_path / "out", spill)
    assert writes >= 2
    assert list(spill.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spill"]
    assert _our_threads() == []


def test_an_interrupt_while_waiting_for_a_thread_still_waits_and_is_raised_after() -> None:
    """A second Ctrl-C while cleanup waits for a writer must not abandon the writer:
    it would go on writing into a directory being removed."""
    finished = threading.Event()
    executor = InOrder("slow")

    def slow() -> None:
        time.sleep(0.2)
        finished.set()

    executor.submit(slow)
    real_shutdown = executor._executor.shutdown
    calls = 0

    def interrupted_once(wait: bool = True, *, cancel_futures: bool = False) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise KeyboardInterrupt
        real_shutdown(wait=wait, cancel_futures=cancel_futures)

    executor._executor.shutdown = interrupted_once  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        executor.close()
    assert calls == 2
    assert finished.is_set(), "the running call finished before close returned"
    assert _our_threads() == []


def test_a_job_whose_cleanup_is_interrupted_still_leaves_nothing(
    store_files: Written, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the middle of the job, and again while its threads are stopped: the
    spill and the partial output are removed all the same, and no thread is left."""
    real_write = _dataset_output._write_parquet
    real_stop = _dataset._Job.stop

    def interrupting_write(table: Any, path: Path) -> None:
        real_write(table, path)
        raise KeyboardInterrupt

    def interrupted_stop(self: Any) -> None:
        real_stop(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(_dataset_output, "_write_parquet", interrupting_write)
    monkeypatch.setattr(_dataset._Job, "stop", interrupted_stop)
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(KeyboardInterrupt):
        _job(store_files, tmp_path / "out", spill)
    assert list(spill.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spill"]
    assert _our_threads() == []


def test_a_job_with_overlapped_parts_equals_one_without(
    store_files: Written, tmp_path: Path
) -> None:
    """Reading a part ahead and writing the last behind change nothing in the output."""
    spill = tmp_path / "spill"
    spill.mkdir()
    summary = _job(store_files, tmp_path / "out", spill)
    assert summary.parts >= 2
    whole = mr.resolve_batch(
        pq.read_table(store_files.records),
        pq.read_table(store_files.contexts),
        tombstones=pq.read_table(store_files.tombstones),
    )
    written = pq.read_table(tmp_path / "out")
    assert sorted(written.to_pylist(), key=str) == sorted(whole.to_pylist(), key=str)
    assert _our_threads() == []


def test_in_order_holds_at_most_its_weight_waiting() -> None:
    """``submit`` waits for older calls once the weight they keep alive would pass the
    limit, yet always takes one call, however heavy."""
    gate = threading.Event()
    started: list[int] = []
    work = InOrder("weighed", depth=8, max_weight=100)

    def call(n: int) -> None:
        started.append(n)
        gate.wait(5)

    work.submit(call, 0, weight=60)
    work.submit(call, 1, weight=40)
    blocked = threading.Thread(target=work.submit, args=(call, 2), kwargs={"weight": 30})
    blocked.start()
    time.sleep(0.2)
    assert blocked.is_alive(), "a third call would hold 130 of at most 100"
    gate.set()
    blocked.join(5)
    assert not blocked.is_alive()
    work.submit(call, 3, weight=500)
    work.wait()
    assert started == [0, 1, 2, 3]
    work.close()
    assert _our_threads() == []


def test_wide_rows_are_read_in_fewer_rows_per_batch_and_the_job_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches decoded ahead hold at most about ``BATCH_BYTES`` each, whatever the values'
    size: every row still comes once, in order, with its offset in its file; and the
    job's output (values included) equals the in-memory form's."""
    store = write_parquet(tmp_path / "store", 3_000, seed=9, chunk_records=3_000)
    records = pq.read_table(store.records)
    wide = records.set_column(
        records.schema.get_field_index("value"),
        "value",
        pa.array([f"{v}:{'x' * 2_000}" for v in records.column("value").to_pylist()]),
    )
    wide_file = tmp_path / "wide.parquet"
    pq.write_table(wide, wide_file)
    monkeypatch.setattr(_sources, "BATCH_BYTES", 400_000)
    monkeypatch.setattr(_sources, "MIN_BATCH_ROWS", 16)
    source = _sources.Source(wide_file, "records", read_columns("records", True))
    assert 16 <= source.batch_rows() <= 200
    seen = 0
    for _, offset, batch in source.batches():
        assert offset == seen
        assert batch.num_rows <= source.batch_rows()
        seen += batch.num_rows
    assert seen == wide.num_rows
    out = tmp_path / "out"
    mr.resolve_dataset(wide_file, store.contexts, out, with_values=True, parts=3)
    whole = mr.resolve_batch(wide, pq.read_table(store.contexts), with_values=True)
    written = pq.read_table(out)
    assert sorted(written.to_pylist(), key=str) == sorted(whole.to_pylist(), key=str)
