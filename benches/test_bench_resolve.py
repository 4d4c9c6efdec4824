"""Per-turn resolution: records already built as Python objects -> Resolution.

Run: ``.venv/bin/python -m pytest benches --benchmark-only``. Each case first
checks that the backend agrees with the reference on its input, then times.
"""

from __future__ import annotations

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from memresolve._api import resolve_with
from memresolve._backend import available_backends, get_backend
from workload import CONTEXT, candidates


@pytest.mark.parametrize("size", [20, 200, 2_000])
@pytest.mark.parametrize("backend", available_backends())
def test_resolve_per_turn(benchmark: BenchmarkFixture, backend: str, size: int) -> None:
    records, tombstones = candidates(size)
    kernel = get_backend(backend)
    expected = resolve_with(get_backend("reference"), records, CONTEXT, tombstones)
    assert resolve_with(kernel, records, CONTEXT, tombstones) == expected
    benchmark.extra_info["active"] = len(expected.active)
    benchmark(resolve_with, kernel, records, CONTEXT, tombstones)


@pytest.mark.parametrize("size", [200])
def test_construct_records(benchmark: BenchmarkFixture, size: int) -> None:
    """The cost of building and validating ``size`` records through the public constructor."""
    benchmark(candidates, size)
