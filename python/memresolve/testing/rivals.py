"""The batch job written the best ways we know in Polars (lazy) and in DuckDB SQL.

Both implement ``docs/spec.md`` §2 for every context exactly (the benchmark checks their
rows against ``resolve_batch`` before timing them): candidates are the records
of the context's four scopes (one equi-join per scope kind), edges come from
in-scope records inside their interval and not stored ``expired``, tombstones
match on key and scope and decide on the evidence time, and the winner of each
(context, scope kind, owner, key) is the first by authority, version, ``valid_from``
(descending) and id (ascending, byte order). A conversation or scene record with
an owner (``user_id``) is a candidate of its owner's contexts only, and its owner
is part of its scope for tombstones. Output: the winners, as (``context_id``,
``record_id``).

Each is written once, as a plan over its engine's inputs, and run two ways: on
Arrow tables in memory (``polars_resolve``, ``duckdb_resolve``) and file to
file, Parquet in and Parquet out, in bounded memory where the engine can
(``polars_file_to_file`` with the streaming engine, ``duckdb_file_to_file``
with its ``memory_limit`` and spilling).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

_RECORD_COLUMNS = (
    "id",
    "key",
    "scope_kind",
    "user_id",
    "character_id",
    "conversation_id",
    "scene_id",
    "status",
    "authority",
    "valid_from",
    "valid_until",
    "supersedes",
    "version",
)
_AUTHORITY_RANK = {
    "model-inferred": 0,
    "rule-extracted": 1,
    "user-confirmed": 2,
    "user-corrected": 3,
}


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


# Polars -------------------------------------------------------------------------------------


def _scope_fields(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The scope as (kind, first id, second id, owner), "" for an id the kind does not use."""
    kind = pl.col("scope_kind")
    return frame.with_columns(
        pl.when(kind.is_in(["user", "character"]))
        .then(pl.col("user_id"))
        .otherwise(pl.col("conversation_id"))
        .alias("scope_first"),
        pl.when(kind == "character")
        .then(pl.col("character_id"))
        .when(kind == "scene")
        .then(pl.col("scene_id"))
        .otherwise(pl.lit(""))
        .alias("scope_second"),
        pl.when(kind.is_in(["conversation", "scene"]))
        .then(pl.col("user_id").fill_null(""))
        .otherwise(pl.lit(""))
        .alias("scope_owner"),
    )


def _owned_by_context(joined: pl.LazyFrame) -> pl.LazyFrame:
    """Conversation or scene candidates: unowned, or owned by the context's user."""
    return joined.filter(
        pl.col("user_id").is_null() | (pl.col("user_id") == pl.col("context_user"))
    ).drop("context_user")


def polars_plan(
    records: pl.LazyFrame, contexts: pl.LazyFrame, tombstones: pl.LazyFrame
) -> pl.LazyFrame:
    """The winners of every context, as a Polars lazy query over the three inputs."""
    observed = (
        pl.col("observed_at") if "observed_at" in records.collect_schema().names() else pl.lit(None)
    )
    recs = _scope_fields(
        records.select(
            *_RECORD_COLUMNS, observed.cast(pl.Datetime("us", "UTC")).alias("observed_at")
        )
    )
    ctx = contexts
    by_kind = [
        recs.filter(pl.col("scope_kind") == "user").join(
            ctx.select("context_id", "now", "user_id"), on="user_id"
        ),
        recs.filter(pl.col("scope_kind") == "character").join(
            ctx.select("context_id", "now", "user_id", "character_id"),
            on=["user_id", "character_id"],
        ),
        _owned_by_context(
            recs.filter(pl.col("scope_kind") == "conversation").join(
                ctx.select(
                    "context_id", "now", "conversation_id", pl.col("user_id").alias("context_user")
                ),
                on="conversation_id",
            )
        ),
        _owned_by_context(
            recs.filter(pl.col("scope_kind") == "scene").join(
                ctx.select(
                    "context_id",
                    "now",
                    "conversation_id",
                    "scene_id",
                    pl.col("user_id").alias("context_user"),
                ).filter(pl.col("scene_id").is_not_null()),
                on=["conversation_id", "scene_id"],
            )
        ),
    ]
    cand = pl.concat(by_kind, how="diagonal_relaxed").with_columns(
        (
            (pl.col("valid_from") <= pl.col("now"))
            & (pl.col("valid_until").is_null() | (pl.col("now") < pl.col("valid_until")))
        ).alias("in_interval")
    )
    edges = (
        cand.filter(
            pl.col("in_interval")
            & (pl.col("status") != "expired")
            & pl.col("supersedes").is_not_null()
        )
        .select("context_id", pl.col("supersedes").alias("id"))
        .unique()
        .with_columns(pl.lit(True).alias("hidden"))
    )
    scope = ["scope_kind", "scope_first", "scope_second", "scope_owner", "key"]
    wide = (
        pl.col("user_wide").fill_null(False)
        if "user_wide" in tombstones.collect_schema().names()
        else pl.lit(False)
    )
    bounds = (
        _scope_fields(tombstones.filter(~wide))
        .group_by(scope)
        .agg(pl.col("blocks_sources_before").max().alias("bound"))
    )
    # A user-wide tombstone reaches every scope its user owns: the records whose user_id
    # (the user of a user or character scope, the owner of a conversation or scene) is its.
    user_bounds = (
        tombstones.filter(wide)
        .group_by("user_id", "key")
        .agg(pl.col("blocks_sources_before").max().alias("user_bound"))
    )
    survivors = (
        cand.filter(
            pl.col("in_interval") & ~pl.col("status").is_in(["superseded", "expired", "retracted"])
        )
        .join(bounds, on=scope, how="left")
        .join(user_bounds, on=["user_id", "key"], how="left")
        .filter(
            (pl.col("status") != "forgotten")
            & (
                pl.col("bound").is_null()
                | (pl.coalesce("observed_at", "valid_from") > pl.col("bound"))
            )
            & (
                pl.col("user_bound").is_null()
                | (pl.coalesce("observed_at", "valid_from") > pl.col("user_bound"))
            )
        )
        .join(edges, on=["context_id", "id"], how="left")
        .filter(pl.col("hidden").is_null())
        .with_columns(pl.col("authority").replace_strict(_AUTHORITY_RANK).alias("rank"))
    )
    winners = survivors.sort(
        ["rank", "version", "valid_from", "id"], descending=[True, True, True, False]
    ).unique(subset=["context_id", "scope_kind", "scope_owner", "key"], keep="first")
    return winners.select("context_id", pl.col("id").alias("record_id"))


def polars_resolve(records: pa.Table, contexts: pa.Table, tombstones: pa.Table) -> pl.DataFrame:
    """The winners of every context, with Polars' lazy engine, in memory."""
    plan = polars_plan(_frame(records).lazy(), _frame(contexts).lazy(), _frame(tombstones).lazy())
    return plan.collect()


def polars_file_to_file(records: Path, contexts: Path, tombstones: Path, output: Path) -> None:
    """The winners of every context, Parquet datasets in, a Parquet file out (streaming)."""
    plan = polars_plan(*(pl.scan_parquet(path) for path in (records, contexts, tombstones)))
    plan.sink_parquet(output, engine="streaming")


# DuckDB -------------------------------------------------------------------------------------

#: The job in SQL over the views ``records_in``, ``contexts_in``, ``tombstones_in``
#: (``{observed}``: the evidence-time column, or a typed null without one; ``{user_wide}``:
#: whether a tombstone is user-wide, false without the column).
RESOLVE_SQL = """
WITH ctx AS (SELECT * FROM contexts_in),
recs AS (
  SELECT id, key, scope_kind, user_id, character_id, conversation_id, scene_id, status,
         authority, valid_from, valid_until, supersedes, version, {observed} AS observed_at,
         CASE WHEN scope_kind IN ('user', 'character') THEN user_id ELSE conversation_id END
           AS scope_first,
         CASE scope_kind WHEN 'character' THEN character_id WHEN 'scene' THEN scene_id ELSE '' END
           AS scope_second,
         CASE WHEN scope_kind IN ('conversation', 'scene') THEN coalesce(user_id, '') ELSE '' END
           AS scope_owner
  FROM records_in
),
cand AS (
  SELECT c.context_id, c.now, r.* FROM recs r JOIN ctx c
    ON r.scope_kind = 'user' AND r.user_id = c.user_id
  UNION ALL
  SELECT c.context_id, c.now, r.* FROM recs r JOIN ctx c
    ON r.scope_kind = 'character' AND r.user_id = c.user_id AND r.character_id = c.character_id
  UNION ALL
  SELECT c.context_id, c.now, r.* FROM recs r JOIN ctx c
    ON r.scope_kind = 'conversation' AND r.conversation_id = c.conversation_id
       AND (r.user_id IS NULL OR r.user_id = c.user_id)
  UNION ALL
  SELECT c.context_id, c.now, r.* FROM recs r JOIN ctx c
    ON r.scope_kind = 'scene' AND r.conversation_id = c.conversation_id
       AND r.scene_id = c.scene_id AND (r.user_id IS NULL OR r.user_id = c.user_id)
),
flagged AS (
  SELECT *, valid_from <= now AND (valid_until IS NULL OR now < valid_until) AS in_interval
  FROM cand
),
edges AS (
  SELECT DISTINCT context_id, supersedes AS target FROM flagged
  WHERE in_interval AND status <> 'expired' AND supersedes IS NOT NULL
),
bounds AS (
  SELECT scope_kind,
         CASE WHEN scope_kind IN ('user', 'character') THEN user_id ELSE conversation_id END
           AS scope_first,
         CASE scope_kind WHEN 'character' THEN character_id WHEN 'scene' THEN scene_id ELSE '' END
           AS scope_second,
         CASE WHEN scope_kind IN ('conversation', 'scene') THEN coalesce(user_id, '') ELSE '' END
           AS scope_owner,
         key, max(blocks_sources_before) AS bound
  FROM tombstones_in WHERE NOT {user_wide} GROUP BY ALL
),
user_bounds AS (
  SELECT user_id AS owning_user, key, max(blocks_sources_before) AS user_bound
  FROM tombstones_in WHERE {user_wide} GROUP BY user_id, key
),
survivors AS (
  SELECT f.* FROM flagged f
  LEFT JOIN bounds b USING (scope_kind, scope_first, scope_second, scope_owner, key)
  LEFT JOIN user_bounds u ON u.owning_user = f.user_id AND u.key = f.key
  LEFT JOIN edges e ON e.context_id = f.context_id AND e.target = f.id
  WHERE f.in_interval AND f.status NOT IN ('superseded', 'expired', 'retracted', 'forgotten')
    AND (b.bound IS NULL OR coalesce(f.observed_at, f.valid_from) > b.bound)
    AND (u.user_bound IS NULL OR coalesce(f.observed_at, f.valid_from) > u.user_bound)
    AND e.target IS NULL
)
SELECT context_id, id AS record_id FROM (
  SELECT context_id, id, row_number() OVER (
    PARTITION BY context_id, scope_kind, scope_owner, key
    ORDER BY CASE authority WHEN 'user-corrected' THEN 3 WHEN 'user-confirmed' THEN 2
                            WHEN 'rule-extracted' THEN 1 ELSE 0 END DESC,
             version DESC, valid_from DESC, id ASC
  ) AS position FROM survivors
) WHERE position = 1
"""


def _user_wide(columns: list[str]) -> str:
    """The SQL of whether a tombstone is user-wide (a null cell, or no column: not)."""
    return "coalesce(user_wide, false)" if "user_wide" in columns else "false"


def duckdb_resolve(
    records: pa.Table, contexts: pa.Table, tombstones: pa.Table, *, threads: int | None = None
) -> pa.Table:
    """The winners of every context, in DuckDB SQL."""
    connection = duckdb.connect()
    if threads is not None:
        connection.execute(f"SET threads = {int(threads)}")
    connection.register("records_in", records)
    connection.register("contexts_in", contexts)
    connection.register("tombstones_in", tombstones)
    observed = "observed_at" if "observed_at" in records.column_names else "NULL::TIMESTAMPTZ"
    user_wide = _user_wide(tombstones.column_names)
    table: pa.Table = connection.sql(
        RESOLVE_SQL.format(observed=observed, user_wide=user_wide)
    ).to_arrow_table()
    connection.close()
    return table


def duckdb_file_to_file(
    records: Path,
    contexts: Path,
    tombstones: Path,
    output: Path,
    *,
    threads: int,
    memory_limit: str,
    spill: Path,
) -> None:
    """The winners of every context, Parquet datasets in, a Parquet file out, spilling
    to ``spill`` past ``memory_limit``."""
    connection = duckdb.connect()
    connection.execute(f"SET threads = {int(threads)}")
    connection.execute(f"SET memory_limit = '{memory_limit}'")
    connection.execute(f"SET temp_directory = '{spill}'")
    connection.execute("SET preserve_insertion_order = false")
    for name, path in (
        ("records_in", records),
        ("contexts_in", contexts),
        ("tombstones_in", tombstones),
    ):
        source = f"{path}/*.parquet" if Path(path).is_dir() else str(path)
        connection.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{source}')")
    columns = [row[0] for row in connection.execute("DESCRIBE records_in").fetchall()]
    observed = "observed_at" if "observed_at" in columns else "NULL::TIMESTAMPTZ"
    forgets = [row[0] for row in connection.execute("DESCRIBE tombstones_in").fetchall()]
    query = RESOLVE_SQL.format(observed=observed, user_wide=_user_wide(forgets))
    connection.execute(f"COPY ({query}) TO '{output}' (FORMAT parquet)")
    connection.close()


def winner_rows(table: Any) -> list[tuple[str, str]]:
    """(context_id, record_id) pairs, sorted: how the implementations are compared."""
    if isinstance(table, pl.DataFrame):
        table = table.to_arrow()
    columns = table.select(["context_id", "record_id"]).to_pydict()
    return sorted(zip(columns["context_id"], columns["record_id"], strict=True))


def parquet_digest(path: str | Path) -> str:
    """Row count and an order-independent hash of the (context_id, record_id) rows of a
    Parquet file or directory: how the benchmarks check outputs equal without loading them."""
    source = f"{path}/**/*.parquet" if Path(path).is_dir() else str(path)
    connection = duckdb.connect()
    ((count, total),) = connection.execute(
        "SELECT count(*), sum(hash(context_id, record_id)::HUGEINT) % 18446744073709551616"
        f" FROM read_parquet('{source}')"
    ).fetchall()
    connection.close()
    return f"{count}:{int(total or 0):x}"
