"""The batch job written the best ways we know in Polars (lazy) and in DuckDB SQL.

Both implement ``docs/spec.md`` §2 for every context exactly (the benchmark checks their
rows against ``resolve_batch`` before timing them): candidates are the records
of the context's four scopes (one equi-join per scope kind), edges come from
in-scope records inside their interval and not stored ``expired``, tombstones
match on key and scope and decide on the evidence time, and the winner of each
(context, scope kind, key) is the first by authority, version, ``valid_from``
(descending) and id (ascending, byte order). Output: the winners, as
(``context_id``, ``record_id``).
"""

from __future__ import annotations

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
    """The scope as (kind, first id, second id), "" for an id the kind does not use."""
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
    )


def polars_resolve(records: pa.Table, contexts: pa.Table, tombstones: pa.Table) -> pl.DataFrame:
    """The winners of every context, with Polars' lazy engine."""
    recs = _scope_fields(
        _frame(records)
        .lazy()
        .select(
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
            (pl.col("observed_at") if "observed_at" in records.column_names else pl.lit(None))
            .cast(pl.Datetime("us", "UTC"))
            .alias("observed_at"),
        )
    )
    ctx = _frame(contexts).lazy()
    by_kind = [
        recs.filter(pl.col("scope_kind") == "user").join(
            ctx.select("context_id", "now", "user_id"), on="user_id"
        ),
        recs.filter(pl.col("scope_kind") == "character").join(
            ctx.select("context_id", "now", "user_id", "character_id"),
            on=["user_id", "character_id"],
        ),
        recs.filter(pl.col("scope_kind") == "conversation").join(
            ctx.select("context_id", "now", "conversation_id"), on="conversation_id"
        ),
        recs.filter(pl.col("scope_kind") == "scene").join(
            ctx.select("context_id", "now", "conversation_id", "scene_id").filter(
                pl.col("scene_id").is_not_null()
            ),
            on=["conversation_id", "scene_id"],
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
    bounds = (
        _scope_fields(_frame(tombstones).lazy())
        .group_by("scope_kind", "scope_first", "scope_second", "key")
        .agg(pl.col("blocks_sources_before").max().alias("bound"))
    )
    survivors = (
        cand.filter(pl.col("in_interval") & ~pl.col("status").is_in(["superseded", "expired"]))
        .join(bounds, on=["scope_kind", "scope_first", "scope_second", "key"], how="left")
        .filter(
            (pl.col("status") != "forgotten")
            & (
                pl.col("bound").is_null()
                | (pl.coalesce("observed_at", "valid_from") > pl.col("bound"))
            )
        )
        .join(edges, on=["context_id", "id"], how="left")
        .filter(pl.col("hidden").is_null())
        .with_columns(pl.col("authority").replace_strict(_AUTHORITY_RANK).alias("rank"))
    )
    winners = survivors.sort(
        ["rank", "version", "valid_from", "id"], descending=[True, True, True, False]
    ).unique(subset=["context_id", "scope_kind", "key"], keep="first")
    return winners.select("context_id", pl.col("id").alias("record_id")).collect()


# DuckDB -------------------------------------------------------------------------------------

_SQL = """
WITH ctx AS (SELECT * FROM contexts_in),
recs AS (
  SELECT id, key, scope_kind, user_id, character_id, conversation_id, scene_id, status,
         authority, valid_from, valid_until, supersedes, version, {observed} AS observed_at,
         CASE WHEN scope_kind IN ('user', 'character') THEN user_id ELSE conversation_id END
           AS scope_first,
         CASE scope_kind WHEN 'character' THEN character_id WHEN 'scene' THEN scene_id ELSE '' END
           AS scope_second
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
  UNION ALL
  SELECT c.context_id, c.now, r.* FROM recs r JOIN ctx c
    ON r.scope_kind = 'scene' AND r.conversation_id = c.conversation_id
       AND r.scene_id = c.scene_id
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
         key, max(blocks_sources_before) AS bound
  FROM tombstones_in GROUP BY ALL
),
survivors AS (
  SELECT f.* FROM flagged f
  LEFT JOIN bounds b USING (scope_kind, scope_first, scope_second, key)
  LEFT JOIN edges e ON e.context_id = f.context_id AND e.target = f.id
  WHERE f.in_interval AND f.status NOT IN ('superseded', 'expired', 'forgotten')
    AND (b.bound IS NULL OR coalesce(f.observed_at, f.valid_from) > b.bound)
    AND e.target IS NULL
)
SELECT context_id, id AS record_id FROM (
  SELECT context_id, id, row_number() OVER (
    PARTITION BY context_id, scope_kind, key
    ORDER BY CASE authority WHEN 'user-corrected' THEN 3 WHEN 'user-confirmed' THEN 2
                            WHEN 'rule-extracted' THEN 1 ELSE 0 END DESC,
             version DESC, valid_from DESC, id ASC
  ) AS position FROM survivors
) WHERE position = 1
"""


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
    table: pa.Table = connection.sql(_SQL.format(observed=observed)).to_arrow_table()
    connection.close()
    return table


def winner_rows(table: Any) -> list[tuple[str, str]]:
    """(context_id, record_id) pairs, sorted: how the implementations are compared."""
    if isinstance(table, pl.DataFrame):
        table = table.to_arrow()
    columns = table.select(["context_id", "record_id"]).to_pydict()
    return sorted(zip(columns["context_id"], columns["record_id"], strict=True))
