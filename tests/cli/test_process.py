"""Process-level behaviour (issue: hostile input, reliability catalogue §4.8): many threads on
shared inputs, a fork after first use, Ctrl-C during a long native call, a panic inside the
core, and inputs deep or wide enough to find recursion or quadratic work.

The heavy cases run in a child process with a generous timeout: a hang or a crash fails the
test without taking the test run down, and no test asserts a speed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

import memresolve as mr
from memresolve.testing.batch_store import generate

NATIVE = mr.backend_name() == "native"
needs_native = pytest.mark.skipif(not NATIVE, reason="the native core is not built")
T = datetime(2026, 7, 30, tzinfo=UTC)


def _child(code: str, *, timeout: float = 300, env: dict[str, str] | None = None) -> str:
    """Runs ``code`` in a fresh interpreter; returns its stdout, failing on error or hang."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@needs_native
def test_sixteen_threads_on_shared_inputs_get_the_serial_answers() -> None:
    store = generate(3_000, seed=7)
    records = mr.records_from_arrow(store.records)
    contexts = [context for _, context in mr.contexts_from_arrow(store.contexts)][:40]
    tombstones = mr.tombstones_from_arrow(store.tombstones)
    now = max(c.now for c in contexts)

    def one_round(index: int) -> tuple[object, ...]:
        context = contexts[index % len(contexts)]
        resolution = mr.resolve(records, context, tombstones=tombstones)
        batch = mr.resolve_batch(store.records, store.contexts, tombstones=store.tombstones)
        normalised = mr.normalize_batch(store.records, now=now, tombstones=store.tombstones)
        swept = mr.forget_sweep(records, tombstones)
        return (
            [r.id for r in resolution.active],
            [(e.id, e.reason) for e in resolution.excluded],
            batch.num_rows,
            normalised.column("record_id").to_pylist(),
            sorted(swept.record_ids),
        )

    serial = [one_round(index) for index in range(16)]
    start = threading.Barrier(16)

    def worker(index: int) -> tuple[object, ...]:
        start.wait()
        return one_round(index)

    with ThreadPoolExecutor(max_workers=16) as pool:
        parallel = list(pool.map(worker, range(16)))
    assert parallel == serial


@needs_native
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_fork_after_first_use_resolves_in_the_child() -> None:
    # In a child interpreter: forking the test runner itself would copy its threads.
    out = _child(
        """
        import os, sys
        import memresolve as mr
        from memresolve.testing.batch_store import generate
        store = generate(20_000, seed=1)
        before = mr.resolve_batch(store.records, store.contexts).num_rows  # rayon pool started
        pid = os.fork()
        if pid == 0:
            rows = mr.resolve_batch(store.records, store.contexts).num_rows
            changes = mr.normalize_batch(store.records, now=store.contexts["now"][0].as_py())
            os._exit(0 if rows == before and changes.num_rows >= 0 else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        """,
        timeout=240,
    )
    assert out.strip() == "child 0"


@needs_native
def test_ctrl_c_during_a_long_native_call_is_a_keyboard_interrupt_when_it_returns() -> None:
    """A native call runs with the interpreter released and is not interrupted midway: the
    KeyboardInterrupt is raised when it returns (docs/errors.md). The process neither hangs
    nor crashes."""
    code = textwrap.dedent(
        """
        import sys, time
        import memresolve as mr
        from memresolve.testing.batch_store import generate
        store = generate(400_000, seed=2)
        print("ready", flush=True)
        for _ in range(20):
            mr.resolve_batch(store.records, store.contexts, include_excluded=True)
        time.sleep(60)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    threading.Event().wait(0.5)  # inside one of the calls, most likely
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode != 0
    assert "KeyboardInterrupt" in stderr
    assert "panicked" not in stderr
    assert "Segmentation" not in stderr


@needs_native
def test_a_panic_in_the_core_is_an_internal_error_and_the_process_goes_on() -> None:
    from memresolve import _native  # noqa: PLC0415 - the native module, present here

    for _ in range(3):
        with pytest.raises(mr.InternalError, match="panic in the native core"):
            _native._panic_for_tests()
    record = mr.MemoryRecord(
        id="m1",
        key="k",
        value="v",
        scope=mr.UserScope("u"),
        authority="model-inferred",
        confidence=0.5,
        valid_from=T,
    )
    context = mr.RetrievalContext(now=T, user_id="u", character_id="c", conversation_id="k")
    assert [r.id for r in mr.resolve([record], context).active] == ["m1"]


@needs_native
def test_a_ten_million_long_supersession_chain_and_a_million_tombstones() -> None:
    """No recursion and no quadratic work: a chain of 10^7 records (each superseding the
    previous) and a million tombstones resolve and normalise in a child process."""
    out = _child(
        """
        import pyarrow as pa, pyarrow.compute as pc
        from datetime import datetime, timezone
        import memresolve as mr
        n = 10_000_000
        now = datetime(2026, 7, 30, tzinfo=timezone.utc)
        def named(prefix, numbers):
            return pc.binary_join_element_wise(prefix, pc.cast(numbers, pa.string()), "")
        ids = named("m", pa.array(range(n), pa.int64()))
        previous = named("m", pa.array(range(-1, n - 1), pa.int64()))
        records = pa.table({
            "id": ids,
            "key": pa.repeat("k", n),
            "scope_kind": pa.repeat("user", n),
            "user_id": pa.repeat("u", n),
            "character_id": pa.nulls(n, pa.string()),
            "conversation_id": pa.nulls(n, pa.string()),
            "scene_id": pa.nulls(n, pa.string()),
            "authority": pa.repeat("model-inferred", n),
            "confidence": pa.repeat(0.5, n),
            "valid_from": pa.repeat(0, n).cast(pa.timestamp("us", tz="UTC")),
            "supersedes": previous,
        })
        contexts = mr.contexts_to_arrow([("c", mr.RetrievalContext(
            now=now, user_id="u", character_id="c", conversation_id="k"))])
        winners = mr.resolve_batch(records, contexts)
        print("winners", winners.column("record_id").to_pylist())
        changes = mr.normalize_batch(records, now=now)
        print("superseded", changes.num_rows)
        del records
        m = 1_000_000
        tombstones = pa.table({
            "key": named("k", pa.array(range(m), pa.int64())),
            "scope_kind": pa.repeat("user", m),
            "user_id": pa.repeat("u", m),
            "character_id": pa.nulls(m, pa.string()),
            "conversation_id": pa.nulls(m, pa.string()),
            "scene_id": pa.nulls(m, pa.string()),
            "forgotten_at": pa.repeat(1, m).cast(pa.timestamp("us", tz="UTC")),
        })
        epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        few = mr.records_to_arrow([mr.MemoryRecord(
            id=f"r{i}", key=f"k{i}", value="v", scope=mr.UserScope("u"),
            authority="model-inferred", confidence=0.5, valid_from=epoch,
        ) for i in range(1000)])
        decided = mr.resolve_batch(few, contexts, tombstones=tombstones, include_excluded=True)
        decisions = decided["decision"].cast(pa.string())
        print("forgotten", pc.sum(pc.equal(decisions, "forgotten")).as_py())
        print("purged", mr.forget_sweep_batch(few, tombstones).num_rows)
        """,
        timeout=900,
    )
    assert "winners ['m9999999']" in out
    assert f"superseded {10_000_000 - 1}" in out
    assert "forgotten 1000" in out
    assert "purged 1000" in out


def test_deep_chains_in_the_reference_need_no_recursion() -> None:
    """The reference decides stage 4 by set membership, not a walk: 20,000 links resolve
    under Python's default recursion limit."""
    n = 20_000
    records = [
        mr.MemoryRecord(
            id=f"m{i}",
            key="k",
            value="v",
            scope=mr.UserScope("u"),
            authority="model-inferred",
            confidence=0.5,
            valid_from=T - timedelta(days=1),
            supersedes=None if i == 0 else f"m{i - 1}",
        )
        for i in range(n)
    ]
    context = mr.RetrievalContext(now=T, user_id="u", character_id="c", conversation_id="k")
    from memresolve import reference  # noqa: PLC0415

    assert [r.id for r in reference.resolve(records, context).active] == [f"m{n - 1}"]
    assert len(reference.normalize_rows(tuple(records), (), T)) == n - 1
    table = mr.records_to_arrow(records[:10])
    assert isinstance(table, pa.Table)
