"""Per-turn resolution, as a chat backend runs it: a few to a few thousand candidates.

Run: ``make bench`` (``pytest benches --benchmark-only``). Groups:

* ``resolve``: records already built -> ``Resolution``, per backend (its whole call,
  ``Kernel.resolve``, as ``memresolve.resolve`` makes it when that backend is selected). The
  reference resolves records on the pure-Python storage, as an install
  without the extension would; every case first checks that both backends
  agree on its input.
* ``resolve+excluded``: the same, then reading ``Resolution.excluded`` (one
  ``Exclusion`` object per excluded candidate, built on first access).
* ``construct``: building the records through the public constructor
  (validation included), on the native storage and on the pure-Python twin.
* ``construct-fresh-scopes``: the same, with a scope built for every record,
  as a loader reading rows does.
* ``total``: construct + resolve, per backend: the whole per-turn cost.
"""

from __future__ import annotations

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import memresolve as mr
from memresolve._backend import available_backends
from memresolve._engine._kernels import get_backend
from memresolve._model._call import resolve_with
from memresolve._model._records import PurePythonMemoryRecord
from memresolve.testing.workload import CONTEXT, build, build_with_fresh_scopes, record_arguments

SIZES = [20, 200, 2_000]
BACKENDS = available_backends()
_RECORD_CLASS = {"reference": PurePythonMemoryRecord, "native": mr.MemoryRecord}


def _inputs(backend: str, size: int) -> tuple[list[mr.MemoryRecord], list[mr.ForgetTombstone]]:
    arguments, tombstones = record_arguments(size, seed=size)
    records = build(arguments, _RECORD_CLASS[backend])
    reference = resolve_with(get_backend("reference").resolve_rows, records, CONTEXT, tombstones)
    for other in BACKENDS:
        for result in (
            resolve_with(get_backend(other).resolve_rows, records, CONTEXT, tombstones),
            get_backend(other).resolve(records, CONTEXT, tombstones),
        ):
            assert [r.id for r in result.active] == [r.id for r in reference.active]
            assert result.excluded == reference.excluded
            assert result.trace == reference.trace
    return records, tombstones


@pytest.mark.benchmark(group="resolve")
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_resolve(benchmark: BenchmarkFixture, backend: str, size: int) -> None:
    records, tombstones = _inputs(backend, size)
    kernel = get_backend(backend)
    result = benchmark(kernel.resolve, records, CONTEXT, tombstones)
    benchmark.extra_info["active"] = len(result.active)


@pytest.mark.benchmark(group="resolve+excluded")
@pytest.mark.parametrize("size", [200, 2_000])
@pytest.mark.parametrize("backend", BACKENDS)
def test_resolve_and_read_exclusions(benchmark: BenchmarkFixture, backend: str, size: int) -> None:
    records, tombstones = _inputs(backend, size)
    kernel = get_backend(backend)

    def resolve_and_read() -> int:
        return len(kernel.resolve(records, CONTEXT, tombstones).excluded)

    assert benchmark(resolve_and_read) > 0


@pytest.mark.benchmark(group="construct")
@pytest.mark.parametrize("size", [200, 2_000])
@pytest.mark.parametrize("storage", ["native", "reference"])
def test_construct(benchmark: BenchmarkFixture, storage: str, size: int) -> None:
    if storage not in BACKENDS:
        pytest.skip("memresolve._native is not built")
    arguments, _ = record_arguments(size, seed=size)
    records = benchmark(build, arguments, _RECORD_CLASS[storage])
    assert len(records) == size


@pytest.mark.benchmark(group="construct-fresh-scopes")
@pytest.mark.parametrize("size", [200])
@pytest.mark.parametrize("storage", ["native", "reference"])
def test_construct_with_a_fresh_scope_per_row(
    benchmark: BenchmarkFixture, storage: str, size: int
) -> None:
    if storage not in BACKENDS:
        pytest.skip("memresolve._native is not built")
    arguments, _ = record_arguments(size, seed=size)
    records = benchmark(build_with_fresh_scopes, arguments, _RECORD_CLASS[storage])
    assert len(records) == size


@pytest.mark.benchmark(group="total")
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_per_turn_total(benchmark: BenchmarkFixture, backend: str, size: int) -> None:
    arguments, tombstones = record_arguments(size, seed=size)
    _inputs(backend, size)  # the agreement check
    kernel, record_class = get_backend(backend), _RECORD_CLASS[backend]

    def turn() -> mr.Resolution:
        return kernel.resolve(build(arguments, record_class), CONTEXT, tombstones)

    assert benchmark(turn).trace.memory_candidates == size
