"""Which backend runs: the one place that chooses, once, at import.

``MEMRESOLVE_BACKEND`` = ``auto`` (default: native when it is usable, else the
reference), ``native`` (an error if it is not usable) or ``reference`` (pure
Python throughout). The choice covers everything a backend provides: the
kernel ``memresolve.resolve`` runs, the batch resolver, and the storage of
``MemoryRecord``. A stale build is never used silently: under ``auto`` it is
a warning and the reference runs; forced, it is an error.

A leaf module: it imports nothing of the package but the loader and the
errors, so every other module can read the choice without an import cycle.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Final

from memresolve import _native_loader
from memresolve._native_loader import CHOICES, ENV_VAR, StaleBuildError
from memresolve.errors import BackendUnavailableError

__all__ = ["CHOICES", "ENV_VAR", "NAME", "NATIVE", "available_backends", "backend_name"]


def _choose() -> ModuleType | None:
    choice = _native_loader.requested()
    if choice == "reference":
        return None
    if choice == "native":
        return _native_loader.load()  # raises BackendUnavailableError, saying why
    try:
        return _native_loader.load()
    except StaleBuildError as exc:
        # A stale build must never run silently: say so, then fall back.
        warnings.warn(f"{exc}; using the reference backend", RuntimeWarning, stacklevel=3)
    except BackendUnavailableError:
        pass
    return None


#: The compiled module this process uses, or ``None`` for pure Python throughout.
NATIVE: Final[ModuleType | None] = _choose()
#: The backend's name: ``native`` or ``reference``.
NAME: Final[str] = "reference" if NATIVE is None else "native"


def backend_name() -> str:
    """Which backend ``memresolve.resolve`` uses in this process: ``native`` or ``reference``."""
    return NAME


def available_backends() -> tuple[str, ...]:
    """Names of the backends usable in this installation, reference first."""
    if _native_loader.module_or_none() is None:
        return ("reference",)
    return ("reference", "native")
