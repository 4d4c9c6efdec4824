"""Which kernel resolves: the one place that chooses, once, at import.

``MEMRESOLVE_BACKEND`` = ``auto`` (default: native when it is usable, else the
reference), ``native`` (an error if it is not usable) or ``reference``. A
stale build is never used silently: under ``auto`` it is a warning and the
reference runs; forced, it is an error.
"""

from __future__ import annotations

import warnings
from typing import Any, Final, Protocol

from memresolve import _native_loader, reference
from memresolve._native_loader import CHOICES, ENV_VAR, StaleBuildError
from memresolve._records import ForgetTombstone, RetrievalContext
from memresolve._result import RawResolution
from memresolve.errors import BackendUnavailableError

__all__ = [
    "CHOICES",
    "ENV_VAR",
    "SELECTED",
    "SELECTED_BATCH",
    "BatchResolver",
    "Kernel",
    "available_backends",
    "backend_name",
    "get_backend",
    "get_batch_resolver",
]


class Kernel(Protocol):
    """What a backend provides.

    ``records`` are not checked yet: the kernel rejects a candidate that is not
    a ``MemoryRecord``, and two that share an id, with the errors of
    ``memresolve._records`` (``not_a_record_error``, ``duplicate_id_error``).
    The context and tombstones arrive checked.
    """

    @property
    def NAME(self) -> str: ...

    def resolve_rows(
        self,
        records: tuple[object, ...],
        context: RetrievalContext,
        tombstones: tuple[ForgetTombstone, ...],
    ) -> RawResolution: ...


_reference_kernel: Kernel = reference  # mypy checks the reference against the protocol here


class BatchResolver(Protocol):
    """``resolve_batch`` of a backend (see ``memresolve.resolve_batch``)."""

    def __call__(
        self,
        records: object,
        contexts: object,
        *,
        tombstones: object | None = None,
        include_excluded: bool = False,
    ) -> Any: ...


class NativeKernel:
    """The Rust kernel, ``memresolve._native.resolve_rows``, as a ``Kernel``."""

    NAME: Final = "native"

    def __init__(self) -> None:
        self._resolve_rows = _native_loader.load().resolve_rows

    def resolve_rows(
        self,
        records: tuple[object, ...],
        context: RetrievalContext,
        tombstones: tuple[ForgetTombstone, ...],
    ) -> RawResolution:
        active, excluded_rows, excluded_codes = self._resolve_rows(records, context, tombstones)
        return RawResolution(active, memoryview(excluded_rows).cast("I"), excluded_codes)


def get_batch_resolver(name: str) -> BatchResolver:
    """The ``resolve_batch`` of the backend called ``name``, for tests and benchmarks."""
    if name == "reference":
        return reference.resolve_batch
    if name == "native":
        batch: BatchResolver = _native_loader.load().resolve_batch
        return batch
    raise BackendUnavailableError(f"unknown backend {name!r}; expected 'native' or 'reference'")


def get_backend(name: str) -> Kernel:
    """The kernel called ``name`` (``native`` or ``reference``), for tests and benchmarks."""
    if name == "reference":
        return _reference_kernel
    if name == "native":
        return NativeKernel()
    raise BackendUnavailableError(f"unknown backend {name!r}; expected 'native' or 'reference'")


def available_backends() -> tuple[str, ...]:
    """Names of the backends usable in this installation, reference first."""
    if _native_loader.module_or_none() is None:
        return ("reference",)
    return ("reference", "native")


def _select() -> Kernel:
    choice = _native_loader.requested()
    if choice != "auto":
        return get_backend(choice)
    try:
        return NativeKernel()
    except StaleBuildError as exc:
        # A stale build must never run silently: say so, then fall back.
        warnings.warn(f"{exc}; using the reference backend", RuntimeWarning, stacklevel=2)
    except BackendUnavailableError:
        pass
    return _reference_kernel


SELECTED: Kernel = _select()
SELECTED_BATCH: BatchResolver = get_batch_resolver(SELECTED.NAME)


def backend_name() -> str:
    """Which backend ``memresolve.resolve`` uses in this process: ``native`` or ``reference``."""
    return SELECTED.NAME
