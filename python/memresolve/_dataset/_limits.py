"""What the file-to-file jobs share about their limits: memory, parts, open files, progress."""

from __future__ import annotations

import errno
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "BASELINE_BYTES",
    "MAX_PARTS",
    "MIN_BUDGET_BYTES",
    "SPILL_COMPRESSIONS",
    "STREAM_PARTS",
    "Progress",
    "allow_open_files",
    "check_spill_room",
    "checked_compression",
    "checked_parts",
    "checked_progress",
    "parse_size",
    "shown_bytes",
]

#: Memory the process needs whatever the input: the interpreter, pyarrow and
#: numpy, the routing tables, and the batches in flight.
BASELINE_BYTES = 512 * 2**20
#: The least memory worth resolving parts in, beyond the baseline.
MIN_BUDGET_BYTES = 64 * 2**20
#: ``progress(stage, done, total)``: rows read of ``records``, ``contexts``,
#: ``tombstones`` (``total``: the input's rows, None for an Arrow stream), then parts
#: resolved of ``parts``.
Progress = Callable[[str, int, "int | None"], None]


def parse_size(size: int | str) -> int:
    """Bytes from an int or a size such as ``"2GB"``, ``"512MiB"``, ``"4G"``."""
    if isinstance(size, int) and not isinstance(size, bool):
        if size <= 0:
            raise _bad_limit(size)
        return size
    if not isinstance(size, str):
        raise _bad_limit(size)
    text = size.strip().upper().replace(" ", "")
    units = {"": 1, "B": 1, "K": 10**3, "KB": 10**3, "KIB": 2**10, "M": 10**6, "MB": 10**6}
    units |= {"MIB": 2**20, "G": 10**9, "GB": 10**9, "GIB": 2**30, "T": 10**12, "TB": 10**12}
    units |= {"TIB": 2**40}
    number = text.rstrip("KMGTIB")
    try:
        value = float(number) * units[text[len(number) :]]
    except (KeyError, ValueError):
        raise _bad_limit(size) from None
    if not math.isfinite(value) or value < 1:
        raise _bad_limit(size)
    return int(value)


def _bad_limit(size: object) -> InvalidInputError:
    return InvalidInputError(
        f"memory_limit: expected a positive number of bytes or a size such as '2GB', got {size!r}",
        kind=ErrorKind.MALFORMED,
        field="memory_limit",
    )


def shown_bytes(size: float) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


#: Files the job keeps open besides its parts' spill files (id buckets, inputs, output).
OTHER_OPEN_FILES = 256


def allow_open_files(parts: int) -> None:
    """Raises the soft limit on open files to what ``parts`` parts need (three spill files
    each, all open while the inputs are read), up to the hard limit."""
    import resource  # noqa: PLC0415 - POSIX, and only the batch job needs it

    needed = 3 * parts + OTHER_OPEN_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise OSError(
            f"the job needs about {needed} open files for its {parts} parts and the limit is"
            f" {hard}: raise memory_limit (fewer, larger parts) or the open-file limit (ulimit -n)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


#: The most parts a job may be asked for: each is up to three open spill files.
MAX_PARTS = 65_536
#: Parts of an input whose size is unknown (an Arrow stream) until it is read.
STREAM_PARTS = 16


def checked_parts(parts: object) -> int | None:
    """``parts`` as given to a job: None, or a whole number from 1 to ``MAX_PARTS``."""
    if parts is None:
        return None
    if not isinstance(parts, int) or isinstance(parts, bool):
        raise InvalidInputError(
            f"parts: expected a positive int or None, got {type(parts).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="parts",
        )
    if not 1 <= parts <= MAX_PARTS:
        raise InvalidInputError(
            f"parts: expected 1 to {MAX_PARTS:,}, got {parts}",
            kind=ErrorKind.OUT_OF_RANGE,
            field="parts",
        )
    return parts


def checked_progress(progress: object) -> Progress | None:
    """``progress`` as given to a job: None, or a callable."""
    if progress is not None and not callable(progress):
        raise InvalidInputError(
            f"progress: expected a callable or None, got {type(progress).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="progress",
        )
    return progress


#: How spill files may be compressed. none: fastest (a spilled part is mapped back in
#: place, not decoded) but four times zstd's bytes; zstd: smallest, about 1.5 times the
#: job's time; lz4: between them in size, and no faster than zstd on these columns.
SPILL_COMPRESSIONS = ("none", "lz4", "zstd")


def checked_compression(compression: object) -> str | None:
    """``spill_compression`` as given to a job: the Arrow IPC codec, or None for none."""
    if not isinstance(compression, str) or compression not in SPILL_COMPRESSIONS:
        raise InvalidInputError(
            f"spill_compression: expected one of {', '.join(map(repr, SPILL_COMPRESSIONS))},"
            f" got {compression!r}",
            kind=ErrorKind.UNKNOWN_VALUE if isinstance(compression, str) else ErrorKind.WRONG_TYPE,
            field="spill_compression",
        )
    return None if compression == "none" else compression


def check_spill_room(
    directory: Path | None, estimate: int | None, compression: str | None, parts: int
) -> None:
    """Refuses, before anything is read, a job whose uncompressed spill cannot fit on the
    disk of ``directory`` (None: the temporary directory).

    ``estimate`` is the input's estimated size in Arrow, which the spill files exceed
    (they also hold the id buckets and conversations copied to several owners), so an
    estimate above the free space is a job that would fill the disk after reading most of
    its input. Compressed spills are not checked: their size depends on the data.
    """
    if parts <= 1 or estimate is None or compression is not None:
        return
    where = Path(tempfile.gettempdir()) if directory is None else directory
    free = shutil.disk_usage(where).free
    if estimate > free:
        raise OSError(
            errno.ENOSPC,
            f"not enough room to spill: about {shown_bytes(estimate)} or more uncompressed,"
            f" {shown_bytes(free)} free in {where}; spill to a bigger disk, or compress the"
            " spill (zstd: about a quarter of the bytes)",
        )
