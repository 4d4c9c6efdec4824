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

__all__ = ["UNCOMPACTED", "outside_the_package", "warn_delayed"]

#: The package's directory: a warning names the first caller outside it.
_PACKAGE: Final = os.path.dirname(os.path.abspath(__file__))


#: Why a store closes with erasures unfinished when only a compaction is left.
UNCOMPACTED: Final = (
    "an erase_user's compaction did not finish (the process stopped, or another "
    "connection held the write lock)"
)


def warn_delayed(why: str, *, closing: bool) -> None:
    """Warns, at the caller's line, that what an erasure erased is still in the store's
    files, and ``why``."""
    if closing:
        message = (
            f"store: closed with erased data still in its files: {why}; open it again "
            "and call wipe() (any later open also retries the wipe)"
        )
    else:
        message = (
            f"store: the erasure is committed, but erased data is still in the store's "
            f"files: {why}; the store finishes it in the background, at its next write, "
            "wipe() or close()"
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
