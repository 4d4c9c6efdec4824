"""The batch job over files: ``resolve_dataset``, streamed, in bounded memory.

Every input is read batch by batch (``_sources``), checked by every rule of the batch
form, and routed to the part of its owner (``docs/spec.md`` §4.3; the native ``Router``):
contexts first, as the route of an unowned conversation's records depends on which users'
contexts name it. Parts are kept in memory when one is enough, else spilled (``_spill``).
Then each part is resolved alone by ``resolve_batch`` and written to the output as it is
done; a part too big for the memory limit is split again by owner first.
The output directory appears only when the whole job succeeds.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memresolve import _backend
from memresolve._dataset._background import shut_down
from memresolve._dataset._limits import (
    BASELINE_BYTES,
    MAX_PARTS,
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
from memresolve._dataset._output import OutputWriter
from memresolve._dataset._output_paths import check_output, input_path
from memresolve._dataset._owned import job_directories
from memresolve._dataset._part_cost import part_cost
from memresolve._dataset._part_order import by_owner
from memresolve._dataset._publish import publish
from memresolve._dataset._sources import Source
from memresolve._dataset._spill import IdBuckets, Parts
from memresolve._engine import kernels
from memresolve._io import canonical, canonical_schema, pyarrow_module, read_columns
from memresolve._model import DECISION_NAMES, arguments, check
from memresolve.errors import (
    BackendUnavailableError,
    MemoryLimitError,
)

__all__ = [
    "MAX_PARTS",
    "DatasetSummary",
    "Progress",
    "checked_parts",
    "checked_progress",
    "parse_size",
    "resolve_dataset",
]


#: What resolving costs in memory as a multiple of the input's Arrow bytes, for the
#: first estimate of how many parts it needs (a part's cost is then counted by its
#: rows: ``_part_cost``). Measured on the benchmark stores: about 2; 4 leaves room.
RESOLVE_FACTOR = 4
#: Headroom in the first estimate of how many parts the input needs.
PART_MARGIN = 1.25
#: A part's output is handed over in pieces of about the budget over this (at least
#: ``OUTPUT_BYTES_MIN``) of Arrow, one file each, written while the next is built.
OUTPUT_SHARE = 16
OUTPUT_BYTES_MIN, OUTPUT_BYTES_MAX = 1 << 20, 1 << 30
#: How often a part too big for the limit is split again by owner.
MAX_SPLITS = 4


@dataclass(frozen=True)
class DatasetSummary:
    """What a ``resolve_dataset`` job did: counts and sizes, never ids or values.

    ``rows`` counts the output rows per decision (``active``, and with
    ``include_excluded`` each reason); ``parts`` is how many parts were
    resolved, splits included; ``peak_spill_bytes`` the most the spill
    directory held (0 when everything stayed in memory).
    """

    output: str
    records: int
    contexts: int
    tombstones: int
    parts: int
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    peak_spill_bytes: int = 0

    def as_dict(self) -> dict[str, object]:
        """Every field, for ``--json`` and logs."""
        return {**asdict(self), "seconds": round(self.seconds, 3)}


@dataclass
class _PartSet:
    """The three inputs split into the same parts by one ``Router``."""

    router: Any
    contexts: Parts
    records: Parts
    tombstones: Parts

    @classmethod
    def make(
        cls,
        native: Any,
        count: int,
        seed: int,
        directory: Path | None,
        cleanup: ExitStack,
        *,
        with_values: bool,
        compression: str | None,
    ) -> _PartSet:
        made = cls(
            native.Router(count, seed, with_values),
            *(
                Parts(name, count, directory, seed, compression=compression)
                for name in ("contexts", "records", "tombstones")
            ),
        )
        cleanup.callback(made.close, discard=True)  # closed whatever happens
        return made

    def close(self, *, discard: bool = False) -> None:
        for parts in (self.contexts, self.records, self.tombstones):
            parts.close(discard=discard)

    def size(self, part: int) -> int:
        return sum(p.bytes[part] for p in (self.contexts, self.records, self.tombstones))

    def cost(self, part: int, piece_bytes: int) -> int:
        """What resolving ``part`` holds in memory (``_part_cost``)."""
        records, contexts, tombstones = (
            p.rows[part] for p in (self.records, self.contexts, self.tombstones)
        )
        return part_cost(self.size(part), records, contexts, tombstones, piece_bytes)

    def remove(self, part: int) -> None:
        for parts in (self.contexts, self.records, self.tombstones):
            parts.remove(part)

    def route(self, parts: Parts, batch: Any, routed: tuple[bytes, ...]) -> None:
        if self.router.parts == 1:  # every row of the input resolves together
            parts.add(0, batch)
            return
        parts.add_routed(batch, routed[0], routed[1])


#: A part's records, contexts and tombstones (None: the job has none).
_Tables = tuple[Any, Any, Any]


def _thread(name: str) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"memresolve-{name}")


@dataclass
class _Job:
    """One run of ``resolve_dataset``."""

    native: Any
    budget: int
    spill: Path
    output: Path
    options: dict[str, bool]
    progress: Progress | None
    cleanup: ExitStack
    #: How spill files are compressed (None: not at all).
    compression: str | None
    #: Whether records carry ``source_message_ids``: a tombstone may carry hashes.
    cited: bool = False
    schemas: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DECISION_NAMES, 0))
    resolved: int = 0
    #: Parts resolved (those split are not: their own parts are).
    parts_resolved: int = 0
    total_parts: int = 0
    peak_spill: int = 0
    #: The next part's tables are read on this thread, the output written by ``writer``.
    reader: ThreadPoolExecutor = field(default_factory=lambda: _thread("read-part"))
    writer: OutputWriter = field(init=False)
    #: What the job holds while a part resolves, beside the output being written.
    resolving: int = 0

    def __post_init__(self) -> None:
        self.writer = OutputWriter(self.output, self.budget)

    @property
    def output_bytes(self) -> int:
        """The Arrow bytes of one piece of a part's output (a file once written)."""
        return min(OUTPUT_BYTES_MAX, max(OUTPUT_BYTES_MIN, self.budget // OUTPUT_SHARE))

    def report(self, stage: str, done: int, total: int | None = None) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)

    def note_spill(self) -> None:
        self.peak_spill = max(self.peak_spill, _directory_bytes(self.spill))

    # Reading the inputs ---------------------------------------------------------------

    def read(self, source: Source, parts: _PartSet, target: Parts, ids: IdBuckets | None) -> int:
        """Reads, checks and routes every batch of ``source``; returns its rows."""
        with_values, cited = self.options["with_values"], self.cited
        self.schemas[source.what] = canonical_schema(source.what, with_values, cited=cited)
        read = 0
        total = source.total_rows()
        for _, batch, routed in source.checked(getattr(parts.router, source.what)):
            parts.route(target, canonical(batch, source.what, with_values, cited=cited), routed)
            if ids is not None:
                ids.add(routed[2], read)
            read += batch.num_rows
            self.report(source.what, read, total)
        return read

    # Resolving the parts ----------------------------------------------------------------

    def resolve_all(self, parts: _PartSet, depth: int) -> None:
        """Resolves every part of ``parts``, splitting those too big for the budget.

        While a part resolves, the next one's tables are read and the last
        one's output is written, on other threads, when the memory limit
        leaves room for them beside it.
        """
        ahead: tuple[int, Future[_Tables]] | None = None
        for part in range(parts.router.parts):
            if parts.contexts.rows[part]:
                cost = parts.cost(part, self.output_bytes)
                if cost > self.budget:
                    self._split(parts, part, depth)
                else:
                    if ahead is not None and ahead[0] == part:
                        tables = ahead[1].result()
                    else:
                        tables = self._tables(parts, part)
                    ahead = self._read_ahead(parts, part, cost)
                    # The next part's tables, read meanwhile, are held beside this one.
                    held = cost + (parts.size(ahead[0]) if ahead is not None else 0)
                    self._resolve(tables, cost, held)
                    del tables
            parts.remove(part)
            self.resolved += 1
            self.report("parts", self.resolved, self.total_parts)

    def _tables(self, parts: _PartSet, part: int) -> _Tables:
        tombstones = (
            None
            if "tombstones" not in self.schemas
            else parts.tombstones.table(part, self.schemas["tombstones"])
        )
        return (
            parts.records.table(part, self.schemas["records"]),
            by_owner(parts.contexts.table(part, self.schemas["contexts"])),
            tombstones,
        )

    def _read_ahead(
        self, parts: _PartSet, part: int, cost: int
    ) -> tuple[int, Future[_Tables]] | None:
        """Starts reading the part after ``part`` if it resolves whole and fits beside it."""
        following = next(
            (p for p in range(part + 1, parts.router.parts) if parts.contexts.rows[p]), None
        )
        if following is None or parts.cost(following, self.output_bytes) > self.budget:
            return None
        if cost + parts.size(following) + self.writer.writing_bytes() > self.budget:
            return None
        return following, self.reader.submit(self._tables, parts, following)

    def _resolve(self, tables: _Tables, cost: int, held: int) -> None:
        """Resolves a part (``cost``: its own memory; ``held``: all the job holds meanwhile),
        writing its output as it is built: it can be far larger than the part's records."""
        if cost + self.writer.writing_bytes() > self.budget:
            self.writer.wait()  # no room for the last output beside this part
        records, contexts, tombstones = tables
        self.parts_resolved += 1
        self.resolving = held
        kernels.SELECTED_STREAMED_BATCH(
            records,
            contexts,
            self._hand_over,
            tombstones=tombstones,
            max_bytes=self.output_bytes,
            **self.options,
        )
        self.resolving = 0

    def _hand_over(self, result: Any) -> None:
        if result.num_rows:  # no file of nothing: a part whose contexts see no record
            # What the core holds meanwhile is within the part's cost (``_part_cost``).
            self.writer.write(result, reserved=self.resolving)
            _count_decisions(result, self.rows)

    def stop(self) -> None:
        """Stops the reader and writer threads (the job is over, whatever its outcome)."""
        try:
            shut_down(self.reader)
        finally:
            self.writer.stop()

    def finish(self) -> None:
        """Writes one file with no rows when nothing else was, so the output has its columns."""
        if self.writer.written == 0:
            empty = {what: _empty_table(schema) for what, schema in self.schemas.items()}
            self.writer.write(
                kernels.SELECTED_BATCH(
                    empty["records"],
                    empty["contexts"],
                    tombstones=empty.get("tombstones"),
                    **self.options,
                )
            )
        self.writer.wait()

    def _split(self, parts: _PartSet, part: int, depth: int) -> None:
        """Splits one part in several by owner (a new seed), then resolves those."""
        # Reading the part's tables to split it may take the whole budget: the last
        # output must be written first, not held beside them.
        self.writer.wait()
        contexts = parts.contexts.table(part, self.schemas["contexts"])
        # As strings: a dictionary may hold one value twice, or chunks their own dictionaries.
        owners = contexts.column("user_id").cast(pyarrow_module().string()).unique()
        if len(owners) == 1 or depth >= MAX_SPLITS:
            raise self._too_big(parts, part)
        del contexts, owners  # mapped from the spill file: its space is freed once removed
        count = math.ceil(parts.cost(part, self.output_bytes) / self.budget) + 1
        allow_open_files(count)
        smaller = _PartSet.make(
            self.native,
            count,
            depth + 1,
            self.spill,
            self.cleanup,
            with_values=self.options["with_values"],
            compression=self.compression,
        )
        for stage, target, source in (
            ("contexts", smaller.contexts, parts.contexts),
            ("records", smaller.records, parts.records),
            ("tombstones", smaller.tombstones, parts.tombstones),
        ):
            route = getattr(smaller.router, stage)
            for batch in source.batches(part):
                smaller.route(target, batch, route(batch, 0))
        smaller.close()
        parts.remove(part)
        self.note_spill()
        self.total_parts += count - 1
        self.resolve_all(smaller, depth + 1)
        self.resolved -= 1  # the split part counts once, as its pieces

    def _too_big(self, parts: _PartSet, part: int) -> MemoryLimitError:
        pc = __import__("pyarrow.compute", fromlist=["value_counts"])
        records = parts.records.table(part, self.schemas["records"])
        counts = pc.value_counts(records.column("user_id").cast("string").drop_null())
        biggest = max(counts.to_pylist(), key=lambda entry: entry["counts"], default=None)
        owner = "?" if biggest is None else biggest["values"]
        size = parts.cost(part, self.output_bytes)
        return MemoryLimitError(
            f"one owner's part of the store needs about {shown_bytes(size)} to resolve, more"
            f" than the memory limit leaves ({shown_bytes(self.budget)}): user {owner!r}"
            f" ({biggest['counts'] if biggest else 0} records); raise memory_limit"
        )


def _estimated_bytes(*sources: Source | None) -> int | None:
    """The inputs' estimated size in Arrow (None: a stream among them, size unknown)."""
    estimates = [source.estimated_bytes() for source in sources if source is not None]
    return None if None in estimates else sum(e for e in estimates if e is not None)


def _part_count(total: int | None, budget: int, parts: int | None) -> int:
    if parts is not None:
        return max(1, parts)
    if total is None:
        return STREAM_PARTS  # a stream: its size is unknown; oversized parts are split later
    # Owners differ in size, and shared conversations are copied to each of their
    # owners' parts: room for both, so that no part needs splitting again.
    return max(1, math.ceil(total * RESOLVE_FACTOR * PART_MARGIN / budget))


def resolve_dataset(
    records: object,
    contexts: object,
    output: str | os.PathLike[str],
    *,
    tombstones: object | None = None,
    include_excluded: bool = False,
    with_values: bool = False,
    memory_limit: int | str = "2GB",
    parts: int | None = None,
    overwrite: bool = False,
    spill_directory: str | os.PathLike[str] | None = None,
    spill_compression: str = "none",
    progress: Progress | None = None,
) -> DatasetSummary:
    """``resolve_batch`` from files to files, in bounded memory (``docs/spec.md`` §4.3).

    ``records``, ``contexts`` and ``tombstones`` are each a Parquet file, a
    directory of Parquet files, or anything ``resolve_batch`` takes (an Arrow
    table or stream, a polars ``LazyFrame``, a DuckDB result), read batch by
    batch, never whole. The result, with ``resolve_batch``'s columns and the
    same options, is written to the Parquet dataset ``output`` (a directory
    of ``part-NNNNN.parquet`` files). Each context has exactly the rows
    ``resolve_batch`` gives it, in the same order; contexts may come in
    another order. ``output`` appears only when the job succeeds, all at
    once; an existing one is an error unless ``overwrite``.

    Memory stays within ``memory_limit`` (bytes, or a size such as
    ``"4GB"``): the job splits the store into parts of whole owners that
    resolve alone (``parts`` forces their number), spilling them to
    ``spill_directory`` (default: the system's temporary directory) as Arrow
    IPC holding only the columns resolution reads (``value`` only with
    ``with_values``), uncompressed unless ``spill_compression`` is ``"lz4"``
    or ``"zstd"`` (a quarter of the disk, a slower job). The spill is removed
    whatever happens, Ctrl-C included. A part's output, which can be far
    larger than its input, is built and written a piece at a time (a file
    each, of about a sixteenth of what the limit leaves beside the job's own
    baseline). Every rule of the batch form holds for
    the whole input: a record id repeated in another file is an error.

    ``progress(stage, done, total)`` is called as rows are read (stages
    ``contexts``, ``records``, ``tombstones``) and parts resolved (``parts``).

    Raises:
        InvalidInputError: bad input; ``file`` and ``row`` say where (the row
            within that file), the message too.
        MemoryLimitError: one owner's part alone needs more than the limit.
        BackendUnavailableError: the compiled core is not in use.
        FileExistsError: ``output`` exists and ``overwrite`` is not set.
        OSError: from the file system (a full disk), unchanged; or ``ENOSPC`` before
            anything is read, when an uncompressed spill cannot fit (see ``spill_compression``).
    """
    started = time.perf_counter()
    parts, progress, overwrite = (
        checked_parts(parts),
        checked_progress(progress),
        check.flag(overwrite, "overwrite"),
    )
    compression = checked_compression(spill_compression)
    options = {
        "include_excluded": check.flag(include_excluded, "include_excluded"),
        "with_values": check.flag(with_values, "with_values"),
    }
    limit = parse_size(memory_limit)
    budget = limit - BASELINE_BYTES
    if budget < max(MIN_BUDGET_BYTES, 1):
        raise MemoryLimitError(
            f"memory_limit {shown_bytes(limit)} is below what the job needs to run at all"
            f" (about {shown_bytes(BASELINE_BYTES + MIN_BUDGET_BYTES)}); raise memory_limit"
        )
    target = arguments.path(output, "output")
    spill_directory = (
        None if spill_directory is None else arguments.path(spill_directory, "spill_directory")
    )
    inputs = {"records": records, "contexts": contexts, "tombstones": tombstones}
    check_output(
        target,
        {what: input_path(data, what) for what, data in inputs.items()},
        spill_directory,
        overwrite=overwrite,
    )
    native = _backend.NATIVE
    if native is None:
        raise BackendUnavailableError(
            "resolve_dataset runs on the compiled core, and this process uses the reference"
            f" backend ({_backend.ENV_VAR}=reference, or the extension is not built)"
        )
    record_source, context_source, tombstone_source = _sources(
        records, contexts, tombstones, with_values=options["with_values"]
    )
    estimate = _estimated_bytes(record_source, context_source, tombstone_source)
    count = _part_count(estimate, budget, parts)
    check_spill_room(spill_directory, estimate, compression, count)

    cleanup = ExitStack()
    try:
        # Registered first, so run last, whatever the callbacks after them raise.
        owned = job_directories(target, spill_directory, cleanup)
        spill, partial = owned.spill.path, owned.partial
        job = _Job(
            native,
            budget,
            spill,
            partial.path,
            options,
            progress,
            cleanup,
            compression,
            cited=record_source.reads("source_message_ids"),  # the tombstones' hashes decided
            total_parts=count,
        )
        cleanup.callback(job.stop)  # before the partial output is removed
        allow_open_files(count)
        split = _PartSet.make(
            native,
            count,
            0,
            spill if count > 1 else None,
            cleanup,
            with_values=options["with_values"],
            compression=compression,
        )
        context_ids = IdBuckets("contexts", spill)
        cleanup.callback(context_ids.close)
        record_ids = IdBuckets("records", spill)
        cleanup.callback(record_ids.close)
        n_contexts = job.read(context_source, split, split.contexts, context_ids)
        n_records = job.read(record_source, split, split.records, record_ids)
        n_tombstones = 0
        if tombstone_source is not None:
            n_tombstones = job.read(tombstone_source, split, split.tombstones, None)
        split.close()
        job.note_spill()
        record_source.refuse_repeats(record_ids.first_repeat(), "id")
        context_source.refuse_repeats(context_ids.first_repeat(), "context_id")
        job.resolve_all(split, 0)
        job.finish()
        publish(partial, target, overwrite, "batch")
    finally:
        cleanup.close()
    return DatasetSummary(
        output=str(target),
        records=n_records,
        contexts=n_contexts,
        tombstones=n_tombstones,
        parts=max(1, job.parts_resolved),
        rows={name: rows for name, rows in job.rows.items() if rows},
        seconds=time.perf_counter() - started,
        peak_spill_bytes=job.peak_spill,
    )


def _sources(
    records: object, contexts: object, tombstones: object | None, *, with_values: bool
) -> tuple[Source, Source, Source | None]:
    """The three inputs. Records carry ``source_message_ids`` only when a tombstone may
    carry hashes (``Source.may_list``): resolution reads them only then."""
    forgets = (
        None
        if tombstones is None
        else Source(tombstones, "tombstones", read_columns("tombstones", with_values))
    )
    cited = forgets is not None and forgets.may_list("blocked_sources")
    return (
        Source(records, "records", read_columns("records", with_values, cited=cited)),
        Source(contexts, "contexts", read_columns("contexts", with_values)),
        forgets,
    )


def _empty_table(schema: Any) -> Any:
    return pyarrow_module().Table.from_batches([], schema=schema)


def _directory_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def _count_decisions(table: Any, rows: dict[str, int]) -> None:
    np = __import__("numpy")  # the batch job's optional dependency
    for chunk in table.column("decision").chunks:
        codes = chunk.indices.to_numpy(zero_copy_only=False)
        counts = np.bincount(codes, minlength=len(DECISION_NAMES))
        for name, count in zip(DECISION_NAMES, counts, strict=True):
            rows[name] += int(count)
