"""Which kernel resolves: the one place that chooses, once, at import.

``MEMRESOLVE_BACKEND`` = ``auto`` (default: native when it is usable, else the
reference), ``native`` (an error if it is not usable) or ``reference``. This is
the only module that imports the compiled ``memresolve._native``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Protocol

from memresolve import reference
from memresolve._records import ForgetTombstone, MemoryRecord, RetrievalContext
from memresolve._result import RawResolution
from memresolve._version import __version__
from memresolve.errors import BackendUnavailableError

ENV_VAR = "MEMRESOLVE_BACKEND"
CHOICES = ("auto", "native", "reference")


class Kernel(Protocol):
    """What a backend module provides. Inputs arrive validated; see ``RawResolution``."""

    @property
    def NAME(self) -> str: ...

    def resolve_rows(
        self,
        records: Sequence[MemoryRecord],
        context: RetrievalContext,
        tombstones: Sequence[ForgetTombstone],
    ) -> RawResolution: ...


_reference_kernel: Kernel = reference  # mypy checks the reference against the protocol here


class _StaleBuildError(BackendUnavailableError):
    """The compiled module was built from another version of the sources."""


def native_module() -> ModuleType | None:
    """The compiled module if it is importable and current, else ``None`` (for tests)."""
    try:
        return _load_native_module()
    except BackendUnavailableError:
        return None


def _load_native_module() -> ModuleType:
    try:
        from memresolve import _native  # noqa: PLC0415 - optional compiled module
    except ImportError as exc:
        raise BackendUnavailableError(
            "memresolve._native is not built: install the package with pip (maturin builds it)"
            f" or use MEMRESOLVE_BACKEND=reference ({exc})"
        ) from exc
    if _native.__version__ != __version__:
        raise _StaleBuildError(
            f"memresolve._native was built from version {_native.__version__} but the package"
            f" is {__version__}: rebuild it (pip install -e .)"
        )
    return _native


def _native_kernel() -> Kernel:
    native = _load_native_module()
    if not hasattr(native, "resolve_rows"):
        raise BackendUnavailableError(
            f"memresolve._native {native.__version__} does not implement the resolver yet;"
            " this release resolves with the reference implementation"
        )
    kernel: Kernel = native
    return kernel


def get_backend(name: str) -> Kernel:
    """The kernel called ``name`` (``native`` or ``reference``), for tests and benchmarks."""
    if name == "reference":
        return _reference_kernel
    if name == "native":
        return _native_kernel()
    raise BackendUnavailableError(f"unknown backend {name!r}; expected 'native' or 'reference'")


def available_backends() -> tuple[str, ...]:
    """Names of the backends usable in this installation, reference first."""
    names = ["reference"]
    try:
        _native_kernel()
    except BackendUnavailableError:
        pass
    else:
        names.append("native")
    return tuple(names)


def _select() -> Kernel:
    choice = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        raise BackendUnavailableError(
            f"{ENV_VAR}={choice!r} is not one of {', '.join(map(repr, CHOICES))}"
        )
    if choice != "auto":
        return get_backend(choice)
    try:
        return _native_kernel()
    except _StaleBuildError as exc:
        # A stale build must never run silently: say so, then fall back.
        warnings.warn(f"{exc}; using the reference backend", RuntimeWarning, stacklevel=2)
    except BackendUnavailableError:
        pass
    return _reference_kernel


SELECTED: Kernel = _select()


def backend_name() -> str:
    """Which backend ``memresolve.resolve`` uses in this process: ``native`` or ``reference``."""
    return SELECTED.NAME
