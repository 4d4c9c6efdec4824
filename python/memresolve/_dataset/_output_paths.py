"""Where a file-to-file job may write: never onto, around or into what it reads.

``check_output`` runs before a job reads anything. It refuses an ``output`` that is an
input, contains one (replacing it would delete the input) or lies inside one (an input
directory, read recursively, would read the output of an earlier run), and the same with
the spill directory. Paths are compared as the file system sees them, not as written:
each is resolved (symbolic links, ``..``, relative paths, a symbolic link among its
parents), then directories are compared by device and inode, so that two names of one
directory (a bind mount, a case-insensitive file system) are one directory.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from memresolve._dataset._publish import check_replaceable
from memresolve._model import arguments
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["check_output", "input_path"]

_Identity = tuple[int, int]


def input_path(data: object, what: str) -> Path | None:
    """The path an input was given as (checked as a path), or None for Arrow data."""
    if isinstance(data, str | os.PathLike):
        return arguments.path(data, what)
    return None


def _identity(path: str) -> _Identity | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _lineage(path: str) -> list[_Identity]:
    """The identities of ``path`` and of each of its parents, those that exist."""
    found = []
    while True:
        identity = _identity(path)
        if identity is not None:
            found.append(identity)
        parent = os.path.dirname(path)
        if parent == path:
            return found
        path = parent


def _conflict(output: str, other: str, *, inside_too: bool) -> str | None:
    """How the resolved ``output`` and ``other`` overlap, or None."""
    mine, theirs = _identity(output), _identity(other)
    if theirs is None:  # a path that does not exist: only its text can tell
        relations = (
            ("is", output == other),
            ("contains", other.startswith(output.rstrip(os.sep) + os.sep)),
            ("lies inside", inside_too and output.startswith(other.rstrip(os.sep) + os.sep)),
        )
    else:
        relations = (
            ("is", mine is not None and mine == theirs),
            ("contains", mine is not None and mine in _lineage(other)),
            ("lies inside", inside_too and theirs in _lineage(output)),
        )
    return next((relation for relation, holds in relations if holds), None)


def check_output(
    output: Path,
    inputs: Mapping[str, Path | None],
    spill_directory: Path | None,
    *,
    overwrite: bool,
) -> None:
    """Refuses an ``output`` the job must not write (module docstring), and an existing
    one it must not replace: ``FileExistsError`` without ``overwrite``; with it, anything
    but an output a memresolve job wrote (``_publish.check_replaceable``)."""
    resolved = os.path.realpath(output)
    places = [(f"the {what} input", path, True) for what, path in inputs.items() if path]
    if spill_directory is not None:
        places.append(("the spill directory", spill_directory, True))
    else:
        # The default spill directory is the system's temporary one, where outputs may
        # live; only an output that is it, or holds it, would destroy spills.
        places.append(("the temporary directory (the spill's)", Path(tempfile.gettempdir()), False))
    for name, path, inside_too in places:
        relation = _conflict(resolved, os.path.realpath(path), inside_too=inside_too)
        if relation is not None:
            raise InvalidInputError(
                f"output: {output} {relation} {name} ({path}); a job never writes onto,"
                " around or into what it reads: give another output",
                kind=ErrorKind.INCONSISTENT,
                field="output",
            )
    if os.path.lexists(output):
        if not overwrite:
            raise FileExistsError(f"output {output} exists; pass overwrite=True to replace it")
        check_replaceable(output)
