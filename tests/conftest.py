"""Shared fixtures: Hypothesis profiles and the ``backend`` fixture every resolution test uses."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

import pytest
from hypothesis import HealthCheck, settings

from memresolve import ForgetTombstone, MemoryRecord, Resolution, RetrievalContext
from memresolve._backend import available_backends
from memresolve._engine._kernels import get_backend

# dev: quick local runs. ci: what .ci/run uses, reproducible. deep: nightly or by hand.
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=300,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep", max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROFILE = os.environ.get("MEMRESOLVE_HYPOTHESIS_PROFILE", "dev")
settings.load_profile(PROFILE)

# The differential tests (tests/test_parity*.py) run more examples than the
# rest: they are the proof that both backends agree. deep = 100,000 per test.
PARITY_EXAMPLES = {"dev": 300, "ci": 2_000, "deep": 100_000}.get(PROFILE, 300)


def pytest_sessionstart(session: pytest.Session) -> None:
    """With ``MEMRESOLVE_REQUIRE_NATIVE=1`` (the main run of ``make test``, so CI), a missing
    compiled core fails the run: without it the differential tests would compare the
    reference with itself and the native-only modules (the dataset job, its privacy and row
    tests) would skip."""
    if os.environ.get("MEMRESOLVE_REQUIRE_NATIVE") == "1" and "native" not in available_backends():
        raise pytest.UsageError(
            "MEMRESOLVE_REQUIRE_NATIVE=1 but memresolve._native is not importable: build it"
            " (maturin develop --release --features python, or make setup)"
        )


Resolve = Callable[..., Resolution]


@pytest.fixture(scope="session", params=available_backends())
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend usable in this installation; tests taking it run once per backend."""
    name: str = request.param
    return name


@pytest.fixture(scope="session")
def resolve(backend: str) -> Resolve:
    """``memresolve.resolve`` run by the backend under test."""
    kernel = get_backend(backend)

    def run(
        records: Iterable[MemoryRecord],
        context: RetrievalContext,
        *,
        tombstones: Iterable[ForgetTombstone] = (),
    ) -> Resolution:
        # The backend's whole call, as ``memresolve.resolve`` makes it when that backend
        # is selected (the native one checks its arguments in its own, flattened code).
        return kernel.resolve(records, context, tombstones)

    return run


@pytest.fixture
def spill_codecs(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The codec of every spill (``Parts``) a batch job makes during the test, each still
    made and used for real."""
    from memresolve._dataset import _spill  # noqa: PLC0415 - only the batch-job tests need it

    codecs: list[str | None] = []
    make = _spill.Parts.__init__

    def recording(self: _spill.Parts, *args: object, **kwargs: object) -> None:
        make(self, *args, **kwargs)  # type: ignore[arg-type]
        codecs.append(self.compression)

    monkeypatch.setattr(_spill.Parts, "__init__", recording)
    return codecs
