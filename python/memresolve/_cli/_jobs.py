"""``memresolve normalize`` and ``memresolve forget-sweep``: the background jobs
(``normalize_dataset``, ``forget_sweep_dataset``) as commands, Parquet to Parquet.

Progress bars and exit codes as ``memresolve batch``: 0 done, 2 bad input or
usage, 1 anything else (a full disk, the memory limit, Ctrl-C, SIGTERM, SIGHUP).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from memresolve._cli._batch import (
    Bars,
    add_spill_compression,
    add_threads,
    failure,
    use_threads,
)
from memresolve._model import instant_from_text
from memresolve.errors import MemresolveError

__all__ = ["COMMANDS", "add_parsers", "run"]

COMMANDS = ("normalize", "forget-sweep")


def _common(command: Any) -> None:
    command.add_argument("records", type=Path, help="records: a Parquet file or directory")
    command.add_argument("--out", type=Path, required=True, help="the output directory to create")
    command.add_argument(
        "--memory-limit", default="2GB", help="the most memory to use, such as 4GB (default 2GB)"
    )
    add_threads(command)
    command.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    command.add_argument("--spill-directory", type=Path, help="where to spill (default: $TMPDIR)")
    command.add_argument("--json", action="store_true", help="print the summary as JSON")


def add_parsers(commands: Any) -> None:
    """Adds ``normalize`` and ``forget-sweep`` to the ``memresolve`` parser."""
    normalize = commands.add_parser(
        "normalize",
        help="the statuses a worker may write at --now, Parquet to Parquet",
        description="Write to the Parquet dataset --out the status changes (record_id,"
        " old_status, new_status) that normalise RECORDS at --now without changing any later"
        " resolution. RECORDS and --tombstones are Parquet files or directories of them.",
    )
    _common(normalize)
    normalize.add_argument(
        "--now", required=True, help="the instant, ISO-8601 with an offset (2026-07-30T12:00Z)"
    )
    normalize.add_argument("--tombstones", type=Path, help="forget tombstones (Parquet)")
    add_spill_compression(normalize)
    sweep = commands.add_parser(
        "forget-sweep",
        help="the records whose private text must be erased, Parquet to Parquet",
        description="Write to the Parquet dataset --out the records (record_id, key, scope_id,"
        " cause) whose value and embeddings must be erased from every copy: those a tombstone"
        " blocks and those stored forgotten. Never a value.",
    )
    _common(sweep)
    sweep.add_argument("--tombstones", type=Path, required=True, help="tombstones (Parquet)")


def _summary_text(summary: Any) -> str:
    rows = ", ".join(f"{count:,} {name}" for name, count in summary.rows.items()) or "no rows"
    return (
        f"memresolve {summary.job}: {summary.records:,} records, {summary.tombstones:,}"
        f" tombstones in {summary.parts} part(s), {summary.seconds:.1f} s\n"
        f"  wrote {summary.output}: {rows}\n"
        f"  peak spill {summary.peak_spill_bytes / 2**20:.1f} MiB\n"
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Runs the job ``args`` describes; returns the exit status."""
    if args.threads is not None:
        use_threads(args.threads)
    from memresolve._dataset import (  # noqa: PLC0415 - after the threads are set
        forget_sweep_dataset,
        normalize_dataset,
    )

    bars = Bars(err) if err.isatty() and not args.json else None
    options: dict[str, Any] = {
        "tombstones": args.tombstones,
        "memory_limit": args.memory_limit,
        "overwrite": args.overwrite,
        "spill_directory": args.spill_directory,
        "progress": bars,
    }
    try:
        if args.command == "normalize":
            now = instant_from_text(args.now, "now")
            summary = normalize_dataset(
                args.records,
                args.out,
                now=now,
                spill_compression=args.spill_compression,
                **options,
            )
        else:
            summary = forget_sweep_dataset(args.records, args.out, **options)
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
