"""The background jobs on Spark (``docs/spec.md`` §7.3): ``normalize`` and ``forget_sweep``,
exported by ``memresolve.spark``.

``forget_sweep`` decides each record alone given the tombstones, so it runs on the
records' own partitions with no shuffle. ``normalize`` needs one join, ``supersedes`` to
``id``: every record is repartitioned by its id, and each lasting correction (valid by
``now``, open-ended, not stored ``expired``: the only edges that can normalise) is also
sent, as a copy, to the partition of the id it names. A partition then holds every
record it decides and every edge that can decide one; one ``normalize_batch`` call
decides it, and only the changes of its own (not copied) records are kept.

Tombstones are collected to the driver and shipped with the task: a store has far fewer
of them than records. Record ids must be unique across the whole input: the check of
``memresolve.spark.resolve`` runs with the job.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memresolve._io import lists_an_item, read_columns
from memresolve._model import check
from memresolve._spark._plan import (
    checked_partitions,
    dataframe,
    empty_table,
    plain,
    present,
    raise_repeats,
    repeated_ids,
    with_id,
)
from memresolve.errors import InvalidInputError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["forget_sweep", "forget_sweep_schema", "normalize", "normalize_schema"]


def normalize_schema() -> Any:
    """The Spark schema of ``normalize``: ``normalize_batch``'s columns, as strings."""
    from pyspark.sql import types as T  # noqa: PLC0415 - pyspark is an optional extra

    names = ("record_id", "old_status", "new_status")
    return T.StructType([T.StructField(name, T.StringType(), nullable=False) for name in names])


def forget_sweep_schema() -> Any:
    """The Spark schema of ``forget_sweep``: ``forget_sweep_batch``'s columns, as strings."""
    from pyspark.sql import types as T  # noqa: PLC0415

    names = ("record_id", "key", "scope_id", "cause")
    return T.StructType([T.StructField(name, T.StringType(), nullable=False) for name in names])


def _collected(tombstones: DataFrame | None) -> pa.Table | None:
    """The tombstones as one Arrow table on the driver (checked with the records' schema)."""
    if tombstones is None:
        return None
    table: pa.Table = tombstones.select(
        *present(tombstones, read_columns("tombstones", False))
    ).toArrow()
    return table


def _cite(forgets: pa.Table | None) -> bool:
    """Whether a collected tombstone carries hashes: records' messages are read then."""
    return (
        forgets is not None
        and "blocked_sources" in forgets.column_names
        and lists_an_item(forgets.column("blocked_sources"))
    )


def normalize(
    records: DataFrame,
    *,
    now: datetime,
    tombstones: DataFrame | None = None,
    partitions: int | None = None,
) -> DataFrame:
    """``normalize_batch`` on Spark DataFrames; lazily, as Spark does (``docs/spec.md`` §7.3).

    The inputs have the columns of ``normalize_batch``'s tables (``value`` is never read).
    The result has its rows (``record_id``, ``old_status``, ``new_status``, as strings) in
    no particular order. ``partitions`` is the number of partitions records are split
    into by id (default: ``spark.sql.shuffle.partitions``).

    Raises:
        InvalidInputError: ``now`` is not an aware datetime; a column is missing or of a
            type the core cannot read, or a tombstone is bad (at once); a record breaks a
            rule or an id repeats (when the output is computed, inside Spark's error).
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 - pyspark is an optional extra

    from memresolve._engine import job_kernels  # noqa: PLC0415 - the facade's backend choice

    dataframe(records, "records")
    if tombstones is not None:
        dataframe(tombstones, "tombstones")
    moment = check.instant(now, check.Subject("argument"), "now")
    checked_partitions(partitions)
    forgets = _collected(tombstones)
    columns = present(records, read_columns("records", False, cited=_cite(forgets)))
    job_kernels.SELECTED_JOBS.normalize_batch(
        empty_table(records, columns), now=moment, tombstones=forgets
    )
    rows = records.select(*columns).withColumn("_row", F.monotonically_increasing_id())
    packed = F.struct(*[F.col(name) for name in columns]).alias("records")
    home = rows.select(F.col("id").alias("_part"), F.lit(False).alias("_copy"), "_row", packed)
    union = home
    if "supersedes" in columns:
        status = F.col("status") if "status" in columns else F.lit("active")
        lasting = (
            F.col("supersedes").isNotNull()
            & (F.col("valid_from") <= F.lit(moment))
            & (F.col("valid_until").isNull() if "valid_until" in columns else F.lit(True))
            & (status != F.lit("expired"))
        )
        copies = rows.where(lasting).select(
            F.col("supersedes").alias("_part"), F.lit(True).alias("_copy"), "_row", packed
        )
        union = home.unionByName(copies)
    split = (
        union.repartition(partitions, "_part")
        if partitions is not None
        else union.repartition("_part")
    )
    schema = normalize_schema()
    decided = split.mapInArrow(
        functools.partial(
            _normalize_partitions, micros=check.to_micros(moment), tombstones=forgets
        ),
        schema,
    )
    repeats = repeated_ids(records, "records", "id")
    return decided.unionByName(repeats.mapInArrow(raise_repeats, schema))


def _normalize_partitions(
    batches: Iterator[pa.RecordBatch], *, micros: int, tombstones: pa.Table | None
) -> Iterator[pa.RecordBatch]:
    """One partition, gathered whole, normalised by one call (executor side)."""
    import numpy as np  # noqa: PLC0415 - runs on the executors
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    from memresolve._engine import job_kernels  # noqa: PLC0415

    gathered = list(batches)
    if not gathered:
        return
    table = pa.Table.from_batches(gathered)
    rows = table.column("_row").to_numpy()
    copied = table.column("_copy").to_numpy(zero_copy_only=False)
    # A correction copied to its own home partition is there twice: keep its home row.
    order = np.lexsort((copied, rows))
    first = np.concatenate(([True], np.diff(rows[order]) != 0)) if len(rows) else order
    keep = order[first.astype(bool)] if len(rows) else order
    records = _unpacked(table.column("records").take(pa.array(keep)))
    own = pa.array(~copied[keep])
    try:
        changes = job_kernels.NativeJobs().normalize_batch(
            records, now=check.from_micros(micros), tombstones=tombstones, with_rows=True
        )
    except InvalidInputError as error:
        raise with_id(error, {"records": records}) from None
    mine = changes.filter(pc.take(own, changes.column("row"))).drop_columns(["row"])
    for batch in mine.to_batches():
        yield plain(batch)


def _unpacked(structs: Any) -> pa.Table:
    import pyarrow as pa  # noqa: PLC0415

    return pa.Table.from_batches(
        [pa.RecordBatch.from_struct_array(chunk) for chunk in structs.chunks],
        schema=pa.schema(list(structs.type)),
    )


def forget_sweep(records: DataFrame, tombstones: DataFrame | None = None) -> DataFrame:
    """``forget_sweep_batch`` on Spark DataFrames; lazily (``docs/spec.md`` §7.3).

    Each partition of ``records`` is swept where it is, with every tombstone. The result
    has ``forget_sweep_batch``'s rows (``record_id``, ``key``, ``scope_id``, ``cause``, as
    strings), never a value, in no particular order.

    Raises:
        InvalidInputError: a column is missing or of a type the core cannot read, or a
            tombstone is bad (at once); a record breaks a rule or an id repeats (when the
            output is computed, inside Spark's error).
    """
    from memresolve._engine import job_kernels  # noqa: PLC0415 - the facade's backend choice

    dataframe(records, "records")
    if tombstones is not None:
        dataframe(tombstones, "tombstones")
    forgets = _collected(tombstones)
    columns = present(records, read_columns("records", False, cited=_cite(forgets)))
    job_kernels.SELECTED_JOBS.forget_sweep_batch(empty_table(records, columns), forgets)
    schema = forget_sweep_schema()
    swept = records.select(*columns).mapInArrow(
        functools.partial(_sweep_partitions, tombstones=forgets), schema
    )
    repeats = repeated_ids(records, "records", "id")
    return swept.unionByName(repeats.mapInArrow(raise_repeats, schema))


def _sweep_partitions(
    batches: Iterator[pa.RecordBatch], *, tombstones: pa.Table | None
) -> Iterator[pa.RecordBatch]:
    """One partition of records, swept by one call (executor side)."""
    import pyarrow as pa  # noqa: PLC0415 - runs on the executors

    from memresolve._engine import job_kernels  # noqa: PLC0415

    gathered = list(batches)
    if not gathered:
        return
    records = pa.Table.from_batches(gathered)
    try:
        purged = job_kernels.NativeJobs().forget_sweep_batch(records, tombstones)
    except InvalidInputError as error:
        raise with_id(error, {"records": records}) from None
    for batch in purged.to_batches():
        yield plain(batch)
