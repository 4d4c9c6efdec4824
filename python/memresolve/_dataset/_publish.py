"""How the file-to-file jobs make their output appear: all at once, or not at all; and what
``overwrite`` may replace: only an output a memresolve job wrote, never anything else.

Every output directory a job publishes holds ``MARKER``, a Parquet file with the output's
columns and no rows, whose metadata (``MANIFEST_KEY``) names each file the job wrote and
its size. ``overwrite=True`` replaces an existing ``output`` only when it is a real
directory (not a symbolic link) whose manifest lists every entry it holds, at its size;
anything else (a user's data directory, a file, an output of a memresolve older than the
manifest, an output someone added a file to) is refused and left as it is. A Parquet file
with no rows is invisible to every reader of the dataset: pyarrow, Spark and Hive skip a
name starting with ``_`` (as Spark's ``_SUCCESS``), and polars and DuckDB, which read
every ``*.parquet`` of a directory (polars refuses a directory holding another
extension), read no rows from it.

The check runs twice: before the job reads anything, so a refused job costs nothing, and on
the directory actually replaced, after it is renamed aside, so that a path swapped in the
meantime (for a symbolic link, another directory) is put back rather than deleted. The old
output is then removed by the names its manifest lists, entry by entry of that directory.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

from memresolve._dataset._owned import LOCK_NAME, OwnedDirectory, output_sibling
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["MANIFEST_KEY", "MARKER", "check_replaceable", "publish", "write_marker"]

#: The marker inside every output a job publishes.
MARKER = "_memresolve_output.parquet"
#: The key of the marker's metadata that holds the manifest.
MANIFEST_KEY = b"memresolve.output"
#: What the manifest's ``format`` says: the version of its layout.
_FORMAT = "memresolve-output-1"
#: The largest marker read (a manifest of 100,000 files is about 4 MB).
_MARKER_BYTES = 64 * 2**20


def _parquet() -> Any:
    return __import__("pyarrow.parquet", fromlist=["write_table"])


def write_marker(partial: Path, job: str) -> None:
    """Writes the marker of the finished output in ``partial``: its columns (those of its
    first file) and the manifest of every file in it."""
    pq = _parquet()
    with os.scandir(partial) as entries:
        files = {
            entry.name: entry.stat(follow_symlinks=False).st_size
            for entry in entries
            if entry.is_file(follow_symlinks=False) and not entry.name.startswith(".")
        }
    schema = pq.read_schema(partial / min(files))
    manifest = json.dumps({"format": _FORMAT, "job": job, "files": files}, sort_keys=True)
    metadata = {**(schema.metadata or {}), MANIFEST_KEY: manifest.encode()}
    empty = schema.empty_table().replace_schema_metadata(metadata)
    pq.write_table(empty, partial / MARKER)


def _refusal(target: Path, problem: str) -> InvalidInputError:
    return InvalidInputError(
        f"output: {target} {problem}; overwrite replaces only an output a memresolve job wrote"
        f" (a directory whose {MARKER} lists all it holds), so it was left as it is. Give"
        " another output or, if it is an output of an older memresolve or otherwise yours to"
        f" drop, remove it by hand (rm -r {shlex.quote(str(target))}) and run the job again",
        kind=ErrorKind.INCONSISTENT,
        field="output",
    )


def _manifest(target: Path, directory: int) -> dict[str, int]:
    """The files ``MARKER`` lists (name: size), read through the open ``directory``."""
    try:
        marker = os.open(MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    except FileNotFoundError:
        raise _refusal(target, f"holds no {MARKER}") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _refusal(target, f"has a {MARKER} that is a symbolic link") from None
        raise
    with os.fdopen(marker, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise _refusal(target, f"has a {MARKER} that is not a file")
        data = file.read(_MARKER_BYTES)
    pa = __import__("pyarrow")
    try:
        metadata = _parquet().read_metadata(pa.BufferReader(data)).metadata
        manifest = json.loads(metadata[MANIFEST_KEY])
    except Exception:  # anything pyarrow or json make of bytes memresolve did not write
        manifest = None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != _FORMAT
        or not isinstance(files, dict)
        or not all(_plain_name(name) and type(size) is int for name, size in files.items())
    ):
        raise _refusal(target, f"has a {MARKER} memresolve did not write")
    return files


def _plain_name(name: object) -> bool:
    """A name of a file in the directory itself: no path, no parent."""
    return isinstance(name, str) and name not in ("", ".", "..") and not {"/", "\x00"} & set(name)


def check_replaceable(target: Path) -> None:
    """Refuses (``InvalidInputError`` on ``output``) to replace ``target`` unless it is an
    output a memresolve job wrote, unchanged but for files removed (module docstring)."""
    found = os.lstat(target)
    if stat.S_ISLNK(found.st_mode):
        raise _refusal(target, "is a symbolic link")
    if not stat.S_ISDIR(found.st_mode):
        raise _refusal(target, "is a file, not an output directory")
    try:
        directory = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refusal(target, "changed while it was checked") from None
        raise
    try:
        files = _manifest(target, directory)
        with os.scandir(directory) as entries:
            held = list(entries)
        for entry in held:
            if entry.name == MARKER:
                continue
            if (
                entry.name not in files
                or not entry.is_file(follow_symlinks=False)
                or entry.stat(follow_symlinks=False).st_size != files[entry.name]
            ):
                raise _refusal(target, f"holds {entry.name!r}, which memresolve did not write")
    finally:
        os.close(directory)


def _remove_output(old: Path) -> None:
    """Removes an old output checked by ``check_replaceable``: the files its manifest lists,
    the manifest, the lock file ``publish`` put in it (last: a removal cut short is the
    next sweep's), then the directory, left if anything else appeared in it meanwhile."""
    directory = os.open(old, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        listed = _manifest(old, directory)
        # Entries of this very directory, by name: nothing a manifest says reaches outside it.
        with os.scandir(directory) as entries:
            found = list(entries)
        for entry in found:
            if entry.name in listed or entry.name == MARKER:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.name, dir_fd=directory)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(LOCK_NAME, dir_fd=directory)
    finally:
        os.close(directory)
    with contextlib.suppress(OSError):
        os.rmdir(old)


def publish(partial: OwnedDirectory, target: Path, overwrite: bool, job: str) -> None:
    """Moves the finished output into place, replacing an old one only when asked and only
    when it is an output a memresolve job wrote."""
    write_marker(partial.path, job)
    partial.unlock_name()  # the published output holds no lock file
    if not os.path.lexists(target):
        os.rename(partial.path, target)
        return
    if not overwrite:
        raise FileExistsError(f"output {target} exists; pass overwrite=True to replace it")
    old = output_sibling(target, "old")
    os.rename(target, old)  # whatever ``target`` is now: checked below, where it cannot change
    try:
        check_replaceable(old)
        aside = OwnedDirectory.adopt(old)  # a job killed from here on: the next one tidies up
    except BaseException:
        os.rename(old, target)
        raise
    try:
        try:
            os.rename(partial.path, target)
        except BaseException:
            os.unlink(old / LOCK_NAME)
            os.rename(old, target)  # the old output stays whole when the new one cannot land
            raise
        _remove_output(old)
    finally:
        aside.close()
