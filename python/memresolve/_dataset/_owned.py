"""Directories a file-to-file job owns for its life, and the removal of those a dead job left.

A job writes its spill to ``memresolve-spill-<token>`` (in ``spill_directory`` or the
system's temporary directory) and its output to a hidden ``.<output>.partial-<token>``
beside ``output``; while it replaces an old output, that one waits as
``.<output>.old-<token>``. A job stopped by anything its ``finally`` sees (an exception,
Ctrl-C, a signal handler that raises) removes them; one killed outright (SIGKILL, the OOM
killer, a power cut) cannot. So each holds a lock file, ``LOCK_NAME``, locked with
``flock`` for the job's life: the kernel drops the lock when the process dies, however it
dies, and unlike a process id a lock cannot be mistaken for another process's (ids repeat
across containers that share a volume, and after a reboot). Every job starts by removing,
in the directories it writes to, the directories of this kind whose lock no process holds
(``sweep``): never one a live job holds, never one without memresolve's lock file.

The lock file is created under a temporary name, locked, and only then renamed to
``LOCK_NAME``, so that the name never shows an unlocked lock of a live job; a directory
is removed with its lock file last, so that a removal cut short is finished by the next
sweep. ``flock`` locks belong to the open file, not the process: a job in this process
cannot take the lock of another job running in it either.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LOCK_NAME",
    "OLD",
    "PARTIAL",
    "SPILL",
    "JobDirectories",
    "OwnedDirectory",
    "job_directories",
    "output_sibling",
    "remove_tree",
    "sweep",
]

#: The lock file inside every directory a job owns.
LOCK_NAME = ".memresolve-lock"
#: What the lock file says: a directory whose lock file says anything else is not ours.
LOCK_TEXT = (
    b"memresolve: this directory belongs to a running job;"
    b" once its lock is free, the next job removes it\n"
)
#: The names of the directories jobs own (the token: 12 hex digits).
SPILL = re.compile(r"memresolve-spill-[0-9a-f]{12}")
PARTIAL = re.compile(r"\.(?P<output>.+)\.partial-[0-9a-f]{12}")
OLD = re.compile(r"\.(?P<output>.+)\.old-[0-9a-f]{12}")
#: Errors of a file system that cannot lock: its directories are made, but never swept.
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})


def _token() -> str:
    return uuid.uuid4().hex[:12]


def output_sibling(target: Path, kind: str) -> Path:
    """A fresh hidden name beside ``target``: ``kind`` is ``partial`` or ``old``."""
    return target.parent / f".{target.name}.{kind}-{_token()}"


class OwnedDirectory:
    """A directory this job made, with its lock held until ``close``."""

    def __init__(self, path: Path, lock: int | None) -> None:
        self.path = path
        self._lock = lock

    @classmethod
    def create(cls, path: Path, *, private: bool) -> OwnedDirectory:
        """Makes ``path`` (mode 0700 when ``private``, else the umask's) and locks it."""
        os.mkdir(path, 0o700 if private else 0o777)
        try:
            return cls(path, _lock_inside(path))
        except BaseException:
            os.rmdir(path)  # nothing but the lock file's temporary name could be in it
            raise

    @classmethod
    def create_spill(cls, parent: Path) -> OwnedDirectory:
        """A new private spill directory in ``parent``."""
        while True:
            try:
                return cls.create(parent / f"memresolve-spill-{_token()}", private=True)
            except FileExistsError:  # pragma: no cover - 48 random bits taken
                continue

    @classmethod
    def adopt(cls, path: Path) -> OwnedDirectory:
        """Locks ``path``, an existing directory this job has taken (an old output moved
        aside): from now on a sweep may remove it once this job is gone."""
        return cls(path, _lock_inside(path))

    def unlock_name(self) -> None:
        """Removes the lock file's name but keeps the lock: the directory is about to stop
        being this job's (a partial output published). Sweeps skip it from now on."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path / LOCK_NAME)

    def close(self) -> None:
        """Releases the lock (again: no harm)."""
        lock, self._lock = self._lock, None
        if lock is not None:
            os.close(lock)

    def remove(self) -> None:
        """Removes the directory, lock file last, then releases the lock."""
        try:
            remove_tree(self.path)
        finally:
            self.close()


def _lock_inside(directory: Path) -> int | None:
    """Creates ``directory``'s lock file, locked; None where the file system cannot lock."""
    temporary = directory / f"{LOCK_NAME}-{_token()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(temporary, flags, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in _NO_LOCKS:
                raise
            os.close(descriptor)
            os.unlink(temporary)
            return None
        os.write(descriptor, LOCK_TEXT)
        os.rename(temporary, directory / LOCK_NAME)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return descriptor


def remove_tree(path: Path) -> None:
    """Removes the directory ``path`` (a missing one is no error), its lock file last:
    a removal cut short leaves a directory the next sweep still recognises."""
    try:
        with os.scandir(path) as listing:
            entries = list(listing)
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name == LOCK_NAME:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path / LOCK_NAME)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)


def sweep(parent: Path, pattern: re.Pattern[str]) -> list[Path]:
    """Removes the directories of ``parent`` named by ``pattern`` whose lock no live job
    holds; returns them. An old output (``OLD``) whose replacement never landed is put back
    in its place instead. Anything that is not a real directory of this user holding
    memresolve's lock file is left alone, and so is anything the sweep cannot read."""
    try:
        with os.scandir(parent) as listing:
            entries = [entry for entry in listing if pattern.fullmatch(entry.name)]
    except OSError:
        return []
    removed = []
    for entry in entries:
        with contextlib.suppress(OSError):
            if _sweep_one(Path(entry.path), pattern):
                removed.append(Path(entry.path))
    return removed


def _sweep_one(path: Path, pattern: re.Pattern[str]) -> bool:
    found = os.lstat(path)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
        return False
    directory = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(directory).st_ino != found.st_ino:
            return False  # replaced since it was listed
        lock = _abandoned_lock(directory)
        if lock is None:
            return False
        try:
            old = OLD.fullmatch(path.name) if pattern is OLD else None
            if old is not None and not os.path.lexists(path.parent / old["output"]):
                # The job died between moving the old output aside and putting the new one
                # in its place: the old one goes back.
                os.unlink(LOCK_NAME, dir_fd=directory)
                os.rename(path, path.parent / old["output"])
            else:
                remove_tree(path)
            return True
        finally:
            os.close(lock)
    finally:
        os.close(directory)


def _abandoned_lock(directory: int) -> int | None:
    """The lock file of the open ``directory``, locked by this call, when it is memresolve's
    and no live job holds it; else None."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    lock = os.open(LOCK_NAME, flags, dir_fd=directory)
    try:
        held = os.fstat(lock)
        if not stat.S_ISREG(held.st_mode) or os.read(lock, len(LOCK_TEXT) + 1) != LOCK_TEXT:
            raise _NotOurs
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _NotOurs from None  # a live job's
        # Still this directory's lock file? A job that published its partial output
        # removed the name before it let go of the lock.
        now = os.stat(LOCK_NAME, dir_fd=directory, follow_symlinks=False)
        if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            raise _NotOurs
    except (_NotOurs, OSError):
        os.close(lock)
        return None
    return lock


class _NotOurs(Exception):
    """A directory a sweep must leave alone."""


@dataclass(frozen=True)
class JobDirectories:
    """A job's spill directory and its partial output, each locked for the job's life."""

    spill: OwnedDirectory
    partial: OwnedDirectory


def job_directories(
    target: Path, spill_directory: Path | None, cleanup: ExitStack
) -> JobDirectories:
    """Removes what dead jobs left where this job writes (``sweep``), then makes this job's
    spill directory and partial output, which ``cleanup`` removes (the job's ``finally``)."""
    spill_parent = Path(tempfile.gettempdir()) if spill_directory is None else spill_directory
    sweep(spill_parent, SPILL)
    sweep(target.parent, PARTIAL)
    sweep(target.parent, OLD)
    spill = OwnedDirectory.create_spill(spill_parent)
    cleanup.callback(spill.remove)
    # The umask's mode, not 0700: the output is for others to read too.
    partial = OwnedDirectory.create(output_sibling(target, "partial"), private=False)
    cleanup.callback(partial.remove)
    return JobDirectories(spill, partial)
