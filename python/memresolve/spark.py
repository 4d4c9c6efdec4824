"""The batch jobs on Spark. ``normalize`` and ``forget_sweep`` (the background jobs,
``docs/spec.md`` §7.3) are described in ``memresolve._spark._jobs``.

``resolve`` partitions a store by owner and resolves each whole
partition with one call into the native core (``docs/spec.md`` §4.3).

The plan, in the DataFrame API only (so it runs on Spark Connect too):

1. Each input row gets its owner (a user id) from its own columns: a context's
   ``user_id``; a record's or tombstone's ``user_id`` when its scope names a user (user
   and character scopes, owned conversation and scene scopes). An unowned conversation or
   scene row is joined to the users whose contexts name its conversation, one copy per
   user; with none, it goes to a partition of its own, where it is checked and seen by no
   context. A row too broken to have an owner is routed all the same, so that its error
   is raised.
2. The three inputs, each packed in a struct column beside ``_kind``, ``_owner`` and
   ``_row`` (its place in the input), are unioned and repartitioned by owner: every
   partition holds whole owners.
3. ``mapInArrow`` gathers a whole partition (Spark hands it over in batches of
   ``spark.sql.execution.arrow.maxRecordsPerBatch``), unpacks the three tables, drops
   the copies an unowned row got for two owners of one partition, puts the contexts back
   in input order and calls ``resolve_batch`` once.

Record ids and context ids must be unique across the whole input, not per partition: a
second, small aggregation over the id columns raises ``InvalidInputError`` naming the id
when the output is computed. Bad input found in a partition raises the same error in the
executor; Spark reports it as a ``PythonException`` carrying its message.

Executors need memresolve installed (the abi3 wheel fits any CPython >= 3.11) and
``PYSPARK_PYTHON`` pointing at that Python; see docs/spark.md.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from memresolve._io import read_columns
from memresolve._model import check
from memresolve._spark import (
    checked_partitions,
    dataframe,
    empty_table,
    forget_sweep,
    forget_sweep_schema,
    normalize,
    normalize_schema,
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

__all__ = [
    "forget_sweep",
    "forget_sweep_schema",
    "normalize",
    "normalize_schema",
    "output_schema",
    "resolve",
]

_KINDS = ("contexts", "records", "tombstones")
#: The owner of a row that has none it could be resolved under (its error is raised there).
_NO_OWNER = ""


def output_schema(*, with_values: bool = False) -> Any:
    """The Spark schema of ``resolve``'s output: ``resolve_batch``'s columns, strings for
    its dictionary columns (Spark has no dictionary type)."""
    from pyspark.sql import types as T  # noqa: PLC0415 - pyspark is an optional extra

    fields = [
        T.StructField("context_id", T.StringType(), nullable=False),
        T.StructField("record_id", T.StringType(), nullable=False),
        T.StructField("decision", T.StringType(), nullable=False),
    ]
    if with_values:
        fields += [
            T.StructField("key", T.StringType()),
            T.StructField("value", T.StringType()),
            T.StructField("certainty", T.StringType()),
        ]
    return T.StructType(fields)


def resolve(
    records: DataFrame,
    contexts: DataFrame,
    tombstones: DataFrame | None = None,
    *,
    include_excluded: bool = False,
    with_values: bool = False,
    partitions: int | None = None,
) -> DataFrame:
    """Resolve every context over a store held in Spark DataFrames; lazily, as Spark does.

    The inputs have the columns of ``resolve_batch``'s tables (other columns are ignored;
    ``value`` is read only with ``with_values``). The result has the rows of
    ``resolve_batch`` on the same inputs, with ``decision`` (and ``certainty``) as
    strings; each context's rows come in ``resolve_batch``'s order within a partition,
    and partitions in no particular order. ``partitions`` is the number of partitions
    to split owners into (default: ``spark.sql.shuffle.partitions``).

    Raises:
        InvalidInputError: a column is missing or of a type the core cannot read (at once,
            from the schemas); a row breaks a rule, or an id repeats (when the output is
            computed, inside Spark's error).
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 - pyspark is an optional extra

    dataframe(records, "records")
    dataframe(contexts, "contexts")
    if tombstones is not None:
        dataframe(tombstones, "tombstones")
    options = {
        "include_excluded": check.flag(include_excluded, "include_excluded"),
        "with_values": check.flag(with_values, "with_values"),
    }
    checked_partitions(partitions)
    # A record's messages are read when a tombstone may carry hashes: known from the
    # schema alone (finding a hash would run a job).
    cited = tombstones is not None and "blocked_sources" in tombstones.columns
    columns = {
        "contexts": present(contexts, read_columns("contexts", options["with_values"])),
        "records": present(records, read_columns("records", options["with_values"], cited=cited)),
        "tombstones": ()
        if tombstones is None
        else present(tombstones, read_columns("tombstones", options["with_values"])),
    }
    _check_schemas(records, contexts, tombstones, columns, options)

    owners = contexts.select(
        F.col("conversation_id").alias("_conversation"), F.col("user_id").alias("_joined")
    ).where(F.col("_conversation").isNotNull() & F.col("_joined").isNotNull())
    owners = owners.distinct()
    # Only the columns read go on: a user's own column never meets the plan's ``_row``.
    union = _packed(
        contexts.select(*columns["contexts"]), F.col("user_id"), "contexts", columns
    ).unionByName(
        _packed(*_owned(records.select(*columns["records"]), owners), "records", columns),
        allowMissingColumns=True,
    )
    if tombstones is not None:
        union = union.unionByName(
            _packed(
                *_owned(tombstones.select(*columns["tombstones"]), owners), "tombstones", columns
            ),
            allowMissingColumns=True,
        )
    split = (
        union.repartition(partitions, "_owner")
        if partitions is not None
        else union.repartition("_owner")
    )
    schema = output_schema(with_values=options["with_values"])
    resolved = split.mapInArrow(
        functools.partial(_resolve_partitions, options=options, tombstones=tombstones is not None),
        schema,
    )
    # Empty unless an id repeats, when computing it raises: the check runs with the job.
    repeats = repeated_ids(records, "records", "id").unionByName(
        repeated_ids(contexts, "contexts", "context_id")
    )
    return resolved.unionByName(repeats.mapInArrow(raise_repeats, schema))


def _check_schemas(
    records: DataFrame,
    contexts: DataFrame,
    tombstones: DataFrame | None,
    columns: dict[str, tuple[str, ...]],
    options: dict[str, bool],
) -> None:
    """Runs the core's column checks on empty tables of the inputs' schemas, so a missing
    column or a type it cannot read is an error now, naming the column, not a failed job."""
    from memresolve._engine import kernels  # noqa: PLC0415 - the facade's backend choice

    empty = {
        "records": empty_table(records, columns["records"]),
        "contexts": empty_table(contexts, columns["contexts"]),
        "tombstones": None
        if tombstones is None
        else empty_table(tombstones, columns["tombstones"]),
    }
    kernels.SELECTED_BATCH(
        empty["records"], empty["contexts"], tombstones=empty["tombstones"], **options
    )


def _owned(frame: DataFrame, owners: DataFrame) -> tuple[DataFrame, Any]:
    """``frame`` (records or tombstones) joined to the owners of its unowned conversation
    and scene rows, with the expression of each row's owner."""
    from pyspark.sql import functions as F  # noqa: PLC0415

    kind, user = F.col("scope_kind"), F.col("user_id")
    unowned = kind.isin("conversation", "scene") & user.isNull()
    direct = F.when(kind.isin("user", "character", "conversation", "scene"), user)
    tagged = frame.withColumn("_row", F.monotonically_increasing_id()).withColumn(
        "_unowned", unowned
    )
    # No broadcast hint: a store's (conversation, user) pairs may be too many to
    # broadcast; adaptive execution broadcasts them when they are few.
    joined = tagged.join(
        owners,
        (F.col("_unowned") == F.lit(True)) & (F.col("conversation_id") == F.col("_conversation")),
        "left",
    )
    owner = F.coalesce(
        direct,
        F.col("_joined"),
        # Seen by no context: a partition by its conversation, where it is only checked.
        F.when(F.col("_unowned"), F.concat(F.lit("\x00"), F.col("conversation_id"))),
        F.lit(_NO_OWNER),
    )
    return joined, owner


def _packed(
    frame: DataFrame, owner: Any, kind: str, columns: dict[str, tuple[str, ...]]
) -> DataFrame:
    """``frame`` as ``_kind``, ``_owner``, ``_row`` and one struct column named ``kind``."""
    from pyspark.sql import functions as F  # noqa: PLC0415

    if "_row" not in frame.columns:
        frame = frame.withColumn("_row", F.monotonically_increasing_id())
    return frame.select(
        F.lit(_KINDS.index(kind)).alias("_kind"),
        F.coalesce(owner, F.lit(_NO_OWNER)).alias("_owner"),
        F.col("_row"),
        F.struct(*[F.col(name) for name in columns[kind]]).alias(kind),
    )


def _resolve_partitions(
    batches: Iterator[pa.RecordBatch], *, options: dict[str, bool], tombstones: bool
) -> Iterator[pa.RecordBatch]:
    """One partition, gathered whole, resolved by one ``resolve_batch`` call (executor side)."""
    import pyarrow as pa  # noqa: PLC0415 - runs on the executors

    from memresolve._engine import resolve_batch  # noqa: PLC0415

    gathered = list(batches)
    if not gathered:
        return
    table = pa.Table.from_batches(gathered)
    tables = {kind: _unpacked(table, kind) for kind in _KINDS if kind in table.column_names}
    # Called even without contexts: every row of the partition is checked.
    try:
        result = resolve_batch(
            tables["records"],
            tables["contexts"],
            tombstones=tables.get("tombstones") if tombstones else None,
            **options,
        )
    except InvalidInputError as error:
        raise with_id(error, tables) from None
    for batch in result.to_batches():
        yield plain(batch)


def _unpacked(table: pa.Table, kind: str) -> pa.Table:
    """The rows of ``kind`` in ``table``, as the table they were packed from, in input
    order and with each row once (an unowned row has a copy per owner)."""
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    mine = table.filter(pc.equal(table.column("_kind"), _KINDS.index(kind)))
    rows = mine.column("_row").to_numpy()
    order = np.argsort(rows, kind="stable")
    keep = order[np.concatenate(([True], np.diff(rows[order]) != 0))] if len(rows) else order
    # Chunk by chunk: one chunk of a whole partition could pass 2 GiB of text.
    structs = mine.column(kind).take(pa.array(keep))
    return pa.Table.from_batches(
        [pa.RecordBatch.from_struct_array(chunk) for chunk in structs.chunks],
        schema=pa.schema(list(structs.type)),
    )
