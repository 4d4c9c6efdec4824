"""The background jobs over files (``docs/spec.md`` §7.3): ``normalize_dataset`` here, and
what it shares with ``forget_sweep_dataset`` (``_sweep_job``): Parquet in, Parquet out,
in bounded memory.

Normalisation needs one join, ``supersedes`` to ``id``. Its records are split
into parts by the hash of their id (the native ``route_by_id``), and each
lasting correction (valid by ``now``, open-ended, not stored ``expired``: the
only edges that can normalise) is also copied to the part of the id it names.
A part then holds every record it decides and every edge that can decide one,
so ``normalize_batch`` on it alone, with every tombstone, gives that part's
changes exactly; the copies' own changes are their home part's to write.
Parts stay in memory when one is enough, else spill as Arrow IPC (uncompressed unless
the job asks).

Every rule of the batch form holds for the whole input (a record id repeated
in another file is an error), and the output directory appears only when the
whole job succeeds. Tombstones are read whole: a store has far fewer of them
than records; more than the memory limit allows is an error.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memresolve import _backend
from memresolve._dataset._limits import (
    BASELINE_BYTES,
    MIN_BUDGET_BYTES,
    STREAM_PARTS,
    Progress,
    allow_open_files,
    check_spill_room,
    checked_compression,
    checked_parts,
    checked_progress,
    parse_size,
    shown_bytes,
)
from memresolve._dataset._output import write_parquet
from memresolve._dataset._output_paths import check_output, input_path
from memresolve._dataset._owned import OwnedDirectory, job_directories
from memresolve._dataset._publish import publish
from memresolve._dataset._sources import Source
from memresolve._dataset._spill import IdBuckets, Parts
from memresolve._io import (
    canonical,
    canonical_schema,
    lists_an_item,
    pyarrow_module,
    read_columns,
)
from memresolve._model import arguments, check
from memresolve.errors import (
    BackendUnavailableError,
    MemoryLimitError,
)

__all__ = ["JobSummary", "normalize_dataset"]

#: What a part costs in memory while it is normalised, as a multiple of its
#: Arrow bytes: the part's table, the native store built from it, the output.
NORMALIZE_FACTOR = 4
#: The share of the budget the tombstones may take (every part reads them all).
TOMBSTONE_SHARE = 4


@dataclass(frozen=True)
class JobSummary:
    """What a file-to-file job did: counts and sizes, never ids or values.

    ``rows`` counts the output rows by new status (normalisation) or by cause
    (the sweep); ``parts`` is how many parts were decided (batches for the sweep).
    """

    job: str
    output: str
    records: int
    tombstones: int
    parts: int
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    peak_spill_bytes: int = 0

    def as_dict(self) -> dict[str, object]:
        """Every field, for ``--json`` and logs."""
        return {
            "job": self.job,
            "output": self.output,
            "records": self.records,
            "tombstones": self.tombstones,
            "parts": self.parts,
            "rows": dict(self.rows),
            "seconds": round(self.seconds, 3),
            "peak_spill_bytes": self.peak_spill_bytes,
        }


@dataclass
class _Run:
    """What every file job shares: the native module, the budget, the output and spill."""

    native: Any
    budget: int
    spill: Path
    partial: OwnedDirectory
    progress: Progress | None
    cleanup: ExitStack
    started: float = field(default_factory=time.perf_counter)
    written: int = 0
    peak_spill: int = 0
    rows: dict[str, int] = field(default_factory=dict)

    def report(self, stage: str, done: int, total: int | None = None) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)

    def write(self, table: Any, column: str) -> None:
        """Writes one output file, and counts its rows by ``column``."""
        write_parquet(table, self.partial.path / f"part-{self.written:05d}.parquet")
        self.written += 1
        pc = __import__("pyarrow.compute", fromlist=["value_counts"])
        for entry in pc.value_counts(table.column(column).cast("string")).to_pylist():
            self.rows[entry["values"]] = self.rows.get(entry["values"], 0) + entry["counts"]

    def note_spill(self) -> None:
        spilled = sum(p.stat().st_size for p in self.spill.rglob("*") if p.is_file())
        self.peak_spill = max(self.peak_spill, spilled)


def start(
    output: str | os.PathLike[str],
    *,
    memory_limit: int | str,
    overwrite: bool,
    spill_directory: str | os.PathLike[str] | None,
    progress: Progress | None,
    cleanup: ExitStack,
    job: str,
    inputs: dict[str, Path | None],
) -> tuple[_Run, Path]:
    limit = parse_size(memory_limit)
    budget = limit - BASELINE_BYTES
    if budget < MIN_BUDGET_BYTES:
        raise MemoryLimitError(
            f"memory_limit {shown_bytes(limit)} is below what the job needs to run at all"
            f" (about {shown_bytes(BASELINE_BYTES + MIN_BUDGET_BYTES)}); raise memory_limit"
        )
    target = arguments.path(output, "output")
    overwrite = check.flag(overwrite, "overwrite")
    spill_directory = (
        None if spill_directory is None else arguments.path(spill_directory, "spill_directory")
    )
    check_output(target, inputs, spill_directory, overwrite=overwrite)
    native = _backend.NATIVE
    if native is None:
        raise BackendUnavailableError(
            f"{job} runs on the compiled core, and this process uses the reference"
            f" backend ({_backend.ENV_VAR}=reference, or the extension is not built)"
        )
    owned = job_directories(target, spill_directory, cleanup)
    return _Run(native, budget, owned.spill.path, owned.partial, progress, cleanup), target


def read_tombstones(run: _Run, tombstones: object | None) -> tuple[Any, int]:
    """Every tombstone, checked, as one table in the canonical schema."""
    pa = pyarrow_module()
    schema = canonical_schema("tombstones", False)
    if tombstones is None:
        return pa.Table.from_batches([], schema=schema), 0
    source = Source(tombstones, "tombstones", read_columns("tombstones", False))
    checker = run.native.Router(1, 0, False)
    batches = []
    read = 0
    for _, batch, _ in source.checked(checker.tombstones):
        batches.append(canonical(batch, "tombstones", False))
        read += batch.num_rows
        run.report("tombstones", read)
        if sum(b.nbytes for b in batches) * TOMBSTONE_SHARE > run.budget:
            raise MemoryLimitError(
                f"the tombstones alone need more than a {TOMBSTONE_SHARE}th of what the memory"
                f" limit leaves ({shown_bytes(run.budget)}); raise memory_limit"
            )
    return pa.Table.from_batches(batches, schema=schema), read


def normalize_dataset(
    records: object,
    output: str | os.PathLike[str],
    *,
    now: datetime,
    tombstones: object | None = None,
    memory_limit: int | str = "2GB",
    parts: int | None = None,
    overwrite: bool = False,
    spill_directory: str | os.PathLike[str] | None = None,
    spill_compression: str = "none",
    progress: Progress | None = None,
) -> JobSummary:
    """``normalize_batch`` from files to files, in bounded memory (``docs/spec.md`` §7.3).

    ``records`` and ``tombstones`` are each a Parquet file, a directory of Parquet
    files, or an Arrow table or stream, read batch by batch (tombstones whole). The
    changes, with ``normalize_batch``'s columns (``record_id``, ``old_status``,
    ``new_status``), are written to the Parquet dataset ``output`` in no particular
    order; it appears only when the job succeeds. Memory stays within ``memory_limit``:
    the records are split into parts by id (``parts`` forces their number) and spilled
    to ``spill_directory`` (never ``value``; compressed as ``spill_compression`` says,
    as for ``resolve_dataset``), removed whatever happens.

    Raises:
        InvalidInputError: bad input; ``file`` and ``row`` say where.
        MemoryLimitError: the tombstones, or one part, need more than the limit.
        BackendUnavailableError: the compiled core is not in use.
        FileExistsError: ``output`` exists and ``overwrite`` is not set.
    """
    moment = check.instant(now, check.Subject("argument"), "now")
    micros = check.to_micros(moment)
    parts = checked_parts(parts)
    progress = checked_progress(progress)
    compression = checked_compression(spill_compression)
    with ExitStack() as cleanup:
        run, target = start(
            output,
            memory_limit=memory_limit,
            overwrite=overwrite,
            spill_directory=spill_directory,
            progress=progress,
            cleanup=cleanup,
            job="normalize",
            inputs={
                "records": input_path(records, "records"),
                "tombstones": input_path(tombstones, "tombstones"),
            },
        )
        forgets, n_tombstones = read_tombstones(run, tombstones)
        cited = lists_an_item(forgets.column("blocked_sources"))
        source = Source(records, "records", read_columns("records", False, cited=cited))
        estimate = source.estimated_bytes()
        count = _normalize_parts(estimate, parts, run)
        check_spill_room(run.spill, estimate, compression, count)
        home, copies, read = _split_by_id(source, count, micros, run, compression)
        _normalize_each(home, copies, micros=micros, forgets=forgets, run=run, cited=cited)
        if run.written == 0:
            schema = canonical_schema("records", False)
            empty = run.native.normalize_batch(
                pyarrow_module().Table.from_batches([], schema=schema), now=micros
            )
            run.write(empty, "new_status")
        publish(run.partial, target, overwrite, "normalize")
    return JobSummary(
        job="normalize",
        output=str(target),
        records=read,
        tombstones=n_tombstones,
        parts=count,
        rows=run.rows,
        seconds=time.perf_counter() - run.started,
        peak_spill_bytes=run.peak_spill,
    )


def _normalize_parts(estimate: int | None, parts: int | None, run: _Run) -> int:
    """How many parts the records (``estimate`` bytes in Arrow; None: unknown) are split
    into: ``parts``, or enough for the budget."""
    if parts is not None:
        return max(1, parts)
    if estimate is None:
        return STREAM_PARTS
    return max(1, math.ceil(estimate * NORMALIZE_FACTOR / run.budget))


def _split_by_id(
    source: Source, count: int, micros: int, run: _Run, compression: str | None
) -> tuple[Parts, Parts, int]:
    """Reads, checks and splits the records by id (see the module docstring): each part's
    own records, the lasting corrections copied to it, and the rows read."""
    allow_open_files(count)
    directory = run.spill if count > 1 else None
    home = Parts("records", count, directory, compression=compression)
    copies = Parts("copies", count, directory, compression=compression)
    run.cleanup.callback(home.close, discard=True)
    run.cleanup.callback(copies.close, discard=True)
    ids = IdBuckets("records", run.spill)
    run.cleanup.callback(ids.close)
    read = 0

    def route(batch: Any, offset: int) -> Any:
        return run.native.route_by_id(batch, offset, count, micros)

    for _, batch, routed in source.checked(route):
        rows = canonical(batch, "records", False, cited=source.reads("source_message_ids"))
        home.add_routed(rows, routed[0], routed[1])
        copies.add_routed(rows, routed[2], routed[3])
        ids.add(routed[4], read)
        read += batch.num_rows
        run.report("records", read)
    home.close()
    copies.close()
    run.note_spill()
    source.refuse_repeats(ids.first_repeat(), "id")
    return home, copies, read


def _normalize_each(
    home: Parts, copies: Parts, *, micros: int, forgets: Any, run: _Run, cited: bool
) -> None:
    """Normalises part after part, writing each part's own changes."""
    pa = pyarrow_module()
    schema = canonical_schema("records", False, cited=cited)
    count = home.parts
    for part in range(count):
        own = home.table(part, schema)
        size = (own.nbytes + copies.bytes[part]) * NORMALIZE_FACTOR
        if size > run.budget:
            raise MemoryLimitError(
                f"a part of the store needs about {shown_bytes(size)} to normalise, more"
                f" than the memory limit leaves ({shown_bytes(run.budget)});"
                " raise memory_limit or parts"
            )
        whole = own
        if copies.rows[part]:
            whole = pa.concat_tables([own, copies.table(part, schema)])
        changes = run.native.normalize_batch(whole, now=micros, tombstones=forgets, with_rows=True)
        mine = changes.filter(_below(changes.column("row"), own.num_rows))
        if mine.num_rows:
            run.write(mine.drop_columns(["row"]), "new_status")
        home.remove(part)
        copies.remove(part)
        run.report("parts", part + 1, count)


def _below(rows: Any, limit: int) -> Any:
    pc = __import__("pyarrow.compute", fromlist=["less"])
    return pc.less(rows, limit)
