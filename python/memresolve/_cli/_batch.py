"""``memresolve batch``: the file-to-file batch job (``resolve_dataset``) as a command.

A progress bar (tqdm) on a terminal; otherwise only the summary. Exit codes:
0 done, 2 bad input or usage (the message names the file, column and row),
1 anything else (a full disk, the memory limit, Ctrl-C, SIGTERM, SIGHUP: ``_stops``).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from memresolve._dataset import SPILL_COMPRESSIONS
from memresolve.errors import InvalidInputError, MemresolveError

__all__ = ["add_parser", "add_spill_compression", "add_threads", "available_cpus", "run"]


def add_parser(commands: Any) -> None:
    """Adds the ``batch`` command to the ``memresolve`` parser."""
    batch = commands.add_parser(
        "batch",
        help="resolve every context of a store, Parquet to Parquet, in bounded memory",
        description="Resolve every context of CONTEXTS over the store RECORDS and write the"
        " decisions to the Parquet dataset --out. RECORDS, CONTEXTS and --tombstones are"
        " Parquet files or directories of them; they are read in batches, never whole.",
    )
    batch.add_argument("records", type=Path, help="records: a Parquet file or directory")
    batch.add_argument("contexts", type=Path, help="contexts: a Parquet file or directory")
    batch.add_argument("--out", type=Path, required=True, help="the output directory to create")
    batch.add_argument("--tombstones", type=Path, help="forget tombstones (Parquet)")
    batch.add_argument(
        "--include-excluded", action="store_true", help="also write each excluded candidate"
    )
    batch.add_argument(
        "--with-values", action="store_true", help="add key, value and certainty to active rows"
    )
    batch.add_argument(
        "--memory-limit", default="2GB", help="the most memory to use, such as 4GB (default 2GB)"
    )
    add_threads(batch)
    batch.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    batch.add_argument("--spill-directory", type=Path, help="where to spill (default: $TMPDIR)")
    add_spill_compression(batch)
    batch.add_argument("--json", action="store_true", help="print the summary as JSON")


class Bars:
    """One tqdm bar per stage, on standard error: rows read, then parts resolved."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._stage: str | None = None
        self._bar: Any = None

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if stage != self._stage:
            self.close()
            from tqdm import tqdm  # type: ignore[import-untyped]  # noqa: PLC0415 - a terminal's

            unit = "part" if stage == "parts" else "row"
            label = "resolving" if stage == "parts" else f"reading {stage}"
            self._bar = tqdm(
                total=total, desc=label, unit=unit, unit_scale=unit == "row", file=self._out
            )
            self._stage = stage
        if total is not None and self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: a container's or ``taskset``'s
    limit), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 1


#: ``--threads`` at most this many times the CPUs available: more only adds switching (and
#: each thread its stack); 100,000 threads stalled the machine.
THREADS_PER_CPU = 4


def _thread_count(text: str) -> int:
    """``--threads``: a whole number from 1 to ``THREADS_PER_CPU`` times the CPUs."""
    cpus = available_cpus()
    most = THREADS_PER_CPU * cpus
    try:
        threads = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= threads <= most:
        raise argparse.ArgumentTypeError(
            f"must be from 1 to {most} ({THREADS_PER_CPU} times the {cpus} CPUs this process"
            f" may use), got {threads}"
        )
    return threads


def add_threads(command: Any) -> None:
    """The ``--threads`` option of the jobs, bounded (``_thread_count``)."""
    command.add_argument(
        "--threads",
        type=_thread_count,
        help=f"threads to use, 1 to {THREADS_PER_CPU} times the CPUs (default: every CPU)",
    )


def _summary_text(summary: Any) -> str:
    decided = ", ".join(f"{rows:,} {name}" for name, rows in summary.rows.items()) or "no rows"
    return (
        f"memresolve batch: {summary.records:,} records, {summary.contexts:,} contexts,"
        f" {summary.tombstones:,} tombstones in {summary.parts} part(s), {summary.seconds:.1f} s\n"
        f"  wrote {summary.output}: {decided}\n"
        f"  peak spill {summary.peak_spill_bytes / 2**20:.1f} MiB\n"
    )


def add_spill_compression(command: Any) -> None:
    """The ``--spill-compression`` option, for the commands whose jobs spill parts."""
    command.add_argument(
        "--spill-compression",
        choices=SPILL_COMPRESSIONS,
        default="none",
        help="compress spill files: a quarter of the disk, a slower job (default none)",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Runs the job ``args`` describes; returns the exit status."""
    if args.threads is not None:
        use_threads(args.threads)
    from memresolve._dataset import resolve_dataset  # noqa: PLC0415 - after the thread setting

    bars = Bars(err) if err.isatty() and not args.json else None
    try:
        summary = resolve_dataset(
            args.records,
            args.contexts,
            args.out,
            tombstones=args.tombstones,
            include_excluded=args.include_excluded,
            with_values=args.with_values,
            memory_limit=args.memory_limit,
            overwrite=args.overwrite,
            spill_directory=args.spill_directory,
            spill_compression=args.spill_compression,
            progress=bars,
        )
    except (MemresolveError, OSError, KeyboardInterrupt) as exc:
        if bars is not None:
            bars.close()
        message, status = failure(exc, args)
        err.write(f"memresolve: {message}\n")
        return status
    if bars is not None:
        bars.close()
    out.write(json.dumps(summary.as_dict()) + "\n" if args.json else _summary_text(summary))
    return 0


def failure(exc: BaseException, args: argparse.Namespace) -> tuple[str, int]:
    """What to say of a failed job, and its exit status (see the module docstring)."""
    if isinstance(exc, InvalidInputError):
        return f"invalid input: {exc}", 2
    if isinstance(exc, FileExistsError):
        return f"{args.out} exists; pass --overwrite to replace it", 2
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return str(exc), 2
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or a stop signal (``_stops``)
        return f"{str(exc) or 'interrupted'}; nothing was written", 1
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
        return f"{type(exc).__name__}: {exc}{_disk_hint(args)}", 1
    return f"{type(exc).__name__}: {exc}", 1


#: The errors of a write that found no room (a full disk, a quota, a file-size limit).
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _disk_hint(args: argparse.Namespace) -> str:
    """What a user whose disk filled up can change."""
    hint = "; if the spill filled it, give --spill-directory (default $TMPDIR) on a bigger disk"
    if getattr(args, "spill_compression", None) == "none":
        hint += ", or --spill-compression zstd (about a quarter of the bytes, slower)"
    return hint


def use_threads(threads: int) -> None:
    # Read when each pool first starts, which is after this in a fresh process.
    os.environ["RAYON_NUM_THREADS"] = str(threads)
    pa = sys.modules.get("pyarrow") or __import__("pyarrow")
    pa.set_cpu_count(threads)
    pa.set_io_thread_count(max(threads, 2))
