"""Shared fixtures: the ``backend`` fixture every resolution test uses (Hypothesis profiles:
``tests/support/profiles.py``, loaded here)."""

from __future__ import annotations

import os
from collections.abc import Iterable

import pytest

from memresolve import ForgetTombstone, MemoryRecord, Resolution, RetrievalContext
from memresolve._backend import available_backends
from memresolve._engine._kernels import get_backend
from profiles import Resolve


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
