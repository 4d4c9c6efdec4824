"""How ``MemoryStore`` tells its caller that erased text is still in the file: the
``ErasureDelayedWarning``, issued at the caller's line (the first frame outside the
package), whatever path inside the store raised it."""

from __future__ import annotations

import contextlib
import inspect
import os
import warnings
from typing import Final

from memresolve.errors import ErasureDelayedWarning

__all__ = ["outside_the_package", "warn_delayed"]

#: The package's directory: a warning names the first caller outside it.
_PACKAGE: Final = os.path.dirname(os.path.abspath(__file__))


def warn_delayed(*, closing: bool) -> None:
    why = (
        "another connection (an open read of an older snapshot, or a write in progress) "
        "keeps the erased text in the file"
    )
    if closing:
        message = f"store: closed while {why}; open it again and call wipe() once that ends"
    else:
        message = (
            f"store: the erasure is committed, but {why}; the store wipes it at its next "
            "write, wipe() or close() once that ends"
        )
    warnings.warn(message, ErasureDelayedWarning, stacklevel=outside_the_package())


def outside_the_package() -> int:
    """The ``stacklevel`` of the first frame outside memresolve (and ``contextlib``, which
    runs the store's transactions) for a warning issued by the caller of this function."""
    level, frame = 1, inspect.currentframe()
    frame = frame.f_back if frame is not None else None  # the warning's issuer: level 1
    while frame is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE)
        or frame.f_code.co_filename == contextlib.__file__
    ):
        level += 1
        frame = frame.f_back
    return level
