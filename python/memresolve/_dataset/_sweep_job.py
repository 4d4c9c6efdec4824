"""The forget sweep over files (``docs/spec.md`` §7.3): ``forget_sweep_dataset``, Parquet in,
Parquet out, in bounded memory.

The sweep decides each record alone, given the tombstones: it reads the records batch by
batch, checks them, and writes each batch's purges as it goes. It shares its start (the
output's checks, the owned spill and partial output), its tombstones (read whole) and its
summary with ``normalize_dataset`` (``_record_jobs``).
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from typing import Any

from memresolve._dataset._limits import Progress, checked_progress
from memresolve._dataset._output_paths import input_path
from memresolve._dataset._publish import publish
from memresolve._dataset._record_jobs import JobSummary, read_tombstones, start
from memresolve._dataset._sources import Source, in_file
from memresolve._dataset._spill import IdBuckets
from memresolve._io import (
    canonical,
    canonical_schema,
    lists_an_item,
    pyarrow_module,
    read_columns,
)
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["forget_sweep_dataset"]


def forget_sweep_dataset(
    records: object,
    output: str | os.PathLike[str],
    *,
    tombstones: object | None = None,
    memory_limit: int | str = "2GB",
    overwrite: bool = False,
    spill_directory: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> JobSummary:
    """``forget_sweep_batch`` from files to files, in bounded memory (``docs/spec.md`` §7.3).

    Reads ``records`` batch by batch (a Parquet file or directory, or an Arrow table or
    stream) and writes each batch's purges (``record_id``, ``key``, ``scope_id``,
    ``cause``) to the Parquet dataset ``output``, which appears only when the whole
    input has been read and its ids found unique.

    Raises:
        InvalidInputError: bad input; ``file`` and ``row`` say where.
        MemoryLimitError: the tombstones need more than the limit allows.
        BackendUnavailableError: the compiled core is not in use.
        FileExistsError: ``output`` exists and ``overwrite`` is not set.
    """
    progress = checked_progress(progress)
    with ExitStack() as cleanup:
        run, target = start(
            output,
            memory_limit=memory_limit,
            overwrite=overwrite,
            spill_directory=spill_directory,
            progress=progress,
            cleanup=cleanup,
            job="forget-sweep",
            inputs={
                "records": input_path(records, "records"),
                "tombstones": input_path(tombstones, "tombstones"),
            },
        )
        forgets, n_tombstones = read_tombstones(run, tombstones)
        cited = lists_an_item(forgets.column("blocked_sources"))
        source = Source(records, "records", read_columns("records", False, cited=cited))
        ids = IdBuckets("records", run.spill)
        cleanup.callback(ids.close)
        read = batches = 0

        def route(batch: Any, offset: int) -> Any:
            return run.native.route_by_id(batch, offset, 1, 0)

        for name, batch, routed in source.checked(route):
            ids.add(routed[4], read)
            try:
                rows = canonical(batch, "records", False, cited=cited)
                purged = run.native.forget_sweep_batch(rows, forgets)
            except InvalidInputError as error:
                # The router checked every rule but uniqueness, which the sweep checks within
                # the batch: the whole input's check below names the file and the row in it.
                if error.kind is not ErrorKind.DUPLICATE_ID:
                    raise in_file(name, error) from None
                purged = None
            if purged is not None and purged.num_rows:
                run.write(purged, "cause")
            read += batch.num_rows
            batches += 1
            run.report("records", read)
        source.refuse_repeats(ids.first_repeat(), "id")
        if run.written == 0:
            empty = pyarrow_module().Table.from_batches(
                [], schema=canonical_schema("records", False, cited=cited)
            )
            run.write(run.native.forget_sweep_batch(empty, forgets), "cause")
        run.note_spill()
        publish(run.partial, target, overwrite, "forget-sweep")
    return JobSummary(
        job="forget-sweep",
        output=str(target),
        records=read,
        tombstones=n_tombstones,
        parts=batches,
        rows=run.rows,
        seconds=time.perf_counter() - run.started,
        peak_spill_bytes=run.peak_spill,
    )
