"""Finding the compiled ``memresolve._native``: importable, and built from these sources.

The only module that imports ``_native``; ``_backend`` decides whether it is used.
"""

from __future__ import annotations

import os
from types import ModuleType

from memresolve._version import __version__
from memresolve.errors import BackendUnavailableError

ENV_VAR = "MEMRESOLVE_BACKEND"
CHOICES = ("auto", "native", "reference")


class StaleBuildError(BackendUnavailableError):
    """The compiled module was built from another version of the sources."""


def requested() -> str:
    """The backend asked for in the environment (``auto`` when unset)."""
    choice = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        raise BackendUnavailableError(
            f"{ENV_VAR}={choice!r} is not one of {', '.join(map(repr, CHOICES))}"
        )
    return choice


def load() -> ModuleType:
    """The compiled module, or ``BackendUnavailableError`` saying why it cannot be used."""
    try:
        from memresolve import _native  # noqa: PLC0415 - optional compiled module
    except ImportError as exc:
        raise BackendUnavailableError(
            "memresolve._native is not built: install the package with pip (maturin builds it)"
            f" or use {ENV_VAR}=reference ({exc})"
        ) from exc
    if _native.__version__ != __version__:
        raise StaleBuildError(
            f"memresolve._native was built from version {_native.__version__} but the package"
            f" is {__version__}: rebuild it (pip install -e .)"
        )
    if not all(hasattr(_native, name) for name in ("resolve_rows", "RecordCore", "resolve_batch")):
        raise StaleBuildError(
            f"memresolve._native {_native.__version__} has no resolver: it was built from older"
            " sources; rebuild it (pip install -e .)"
        )
    return _native


def module_or_none() -> ModuleType | None:
    """The compiled module if it is usable, else ``None``."""
    try:
        return load()
    except BackendUnavailableError:
        return None
