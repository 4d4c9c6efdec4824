"""Status normalisation (``docs/spec.md`` §7.1) written the best ways we know in Polars
(lazy) and in DuckDB SQL: what a user would write instead of ``normalize_batch``.

Both implement the three rules exactly, on records stored ``active``: ``forgotten``
when a tombstone on the same key and scope (owner included) has a bound at or after
the evidence time; else ``expired`` when ``valid_until <= now``; else ``superseded``
when a record valid by ``now``, open-ended and not stored ``expired`` names it in
``supersedes`` from a scope that covers its own. Output: (``record_id``,
``new_status``) of the changed records. The benchmark checks the rows of both
against ``normalize_batch`` before it times them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

__all__ = ["NORMALIZE_SQL", "duckdb_normalize", "polars_normalize"]

_SCOPE = ["scope_kind", "user_id", "character_id", "conversation_id", "scene_id"]


def _covers(bearer: str, target: str) -> pl.Expr:
    """Scope cover (§7.1) between the columns prefixed ``bearer`` and ``target``."""

    def b(name: str) -> pl.Expr:
        return pl.col(f"{bearer}{name}")

    def t(name: str) -> pl.Expr:
        return pl.col(f"{target}{name}")

    same = pl.all_horizontal(b(c).eq_missing(t(c)) for c in _SCOPE)
    rules = [
        (b("scope_kind") == "user")
        & (t("scope_kind") == "character")
        & (b("user_id") == t("user_id")),
        (b("scope_kind") == "user")
        & t("scope_kind").is_in(["conversation", "scene"])
        & (b("user_id") == t("user_id")),
        (b("scope_kind") == "conversation")
        & (t("scope_kind") == "conversation")
        & (b("conversation_id") == t("conversation_id"))
        & b("user_id").is_null(),
        (b("scope_kind") == "conversation")
        & (t("scope_kind") == "scene")
        & (b("conversation_id") == t("conversation_id"))
        & (b("user_id").is_null() | (b("user_id") == t("user_id"))),
        (b("scope_kind") == "scene")
        & (t("scope_kind") == "scene")
        & (b("conversation_id") == t("conversation_id"))
        & (b("scene_id") == t("scene_id"))
        & b("user_id").is_null(),
    ]
    return (same | pl.any_horizontal(rule.fill_null(False) for rule in rules)).fill_null(False)


def polars_normalize(records: pa.Table, tombstones: pa.Table, now: datetime) -> pl.DataFrame:
    """The changes at ``now``, with Polars' lazy engine, in memory."""
    frame = pl.from_arrow(records)
    forgets = pl.from_arrow(tombstones)
    assert isinstance(frame, pl.DataFrame)
    assert isinstance(forgets, pl.DataFrame)
    observed = pl.col("observed_at") if "observed_at" in frame.columns else pl.lit(None)
    recs = frame.lazy().select(
        "id",
        "key",
        *_SCOPE,
        "status",
        "valid_from",
        "valid_until",
        "supersedes",
        pl.coalesce(observed.cast(pl.Datetime("us", "UTC")), "valid_from").alias("evidence"),
    )
    moment = pl.lit(now).cast(pl.Datetime("us", "UTC"))
    wide = pl.col("user_wide").fill_null(False) if "user_wide" in forgets.columns else pl.lit(False)
    bounds = (
        forgets.lazy()
        .filter(~wide)
        .group_by(["key", *_SCOPE])
        .agg(pl.col("blocks_sources_before").max().alias("bound"))
    )
    # A user-wide tombstone reaches every record whose user_id (user, or owner) is its.
    user_bounds = (
        forgets.lazy()
        .filter(wide)
        .group_by("key", "user_id")
        .agg(pl.col("blocks_sources_before").max().alias("user_bound"))
    )
    active = (
        recs.filter(pl.col("status") == "active")
        .join(bounds, on=["key", *_SCOPE], how="left", nulls_equal=True)
        .join(user_bounds, on=["key", "user_id"], how="left")
        .with_columns(pl.max_horizontal("bound", "user_bound").alias("bound"))
        .drop("user_bound")
    )
    bearers = recs.filter(
        pl.col("supersedes").is_not_null()
        & (pl.col("valid_from") <= moment)
        & pl.col("valid_until").is_null()
        & (pl.col("status") != "expired")
    ).select(pl.col("supersedes").alias("id"), *[pl.col(c).alias(f"b_{c}") for c in _SCOPE])
    covered = (
        active.select("id", *_SCOPE)
        .join(bearers, on="id")
        .filter(_covers("b_", ""))
        .select("id")
        .unique()
        .with_columns(pl.lit(True).alias("covered"))
    )
    status = (
        pl.when(pl.col("bound").is_not_null() & (pl.col("evidence") <= pl.col("bound")))
        .then(pl.lit("forgotten"))
        .when(pl.col("valid_until") <= moment)
        .then(pl.lit("expired"))
        .when(pl.col("covered").fill_null(False))
        .then(pl.lit("superseded"))
    )
    return (
        active.join(covered, on="id", how="left")
        .select(pl.col("id").alias("record_id"), status.alias("new_status"))
        .filter(pl.col("new_status").is_not_null())
        .collect()
    )


#: The same rules in DuckDB SQL; ``{observed}`` is the evidence column or a null,
#: ``{now}`` a ``TIMESTAMPTZ`` literal, ``{user_wide}`` whether a tombstone is user-wide.
NORMALIZE_SQL = """
WITH recs AS (
    SELECT id, key, scope_kind, user_id, character_id, conversation_id, scene_id, status,
           valid_from, valid_until, supersedes, coalesce({observed}, valid_from) AS evidence
    FROM records_in
),
bounds AS (
    SELECT key, scope_kind, user_id, character_id, conversation_id, scene_id,
           max(blocks_sources_before) AS bound
    FROM tombstones_in WHERE NOT {user_wide}
    GROUP BY ALL
),
user_bounds AS (
    SELECT key, user_id, max(blocks_sources_before) AS user_bound
    FROM tombstones_in WHERE {user_wide}
    GROUP BY ALL
),
active AS (
    SELECT r.*, greatest(b.bound, u.user_bound) AS bound
    FROM recs r LEFT JOIN bounds b
      ON r.key = b.key AND r.scope_kind = b.scope_kind
     AND r.user_id IS NOT DISTINCT FROM b.user_id
     AND r.character_id IS NOT DISTINCT FROM b.character_id
     AND r.conversation_id IS NOT DISTINCT FROM b.conversation_id
     AND r.scene_id IS NOT DISTINCT FROM b.scene_id
    LEFT JOIN user_bounds u ON r.key = u.key AND r.user_id = u.user_id
    WHERE r.status = 'active'
),
bearers AS (
    SELECT supersedes AS target, scope_kind AS k, user_id AS u, character_id AS c,
           conversation_id AS v, scene_id AS s
    FROM recs
    WHERE supersedes IS NOT NULL AND valid_from <= {now} AND valid_until IS NULL
      AND status <> 'expired'
),
covered AS (
    SELECT DISTINCT a.id
    FROM active a JOIN bearers b ON b.target = a.id
    WHERE (b.k = a.scope_kind AND b.u IS NOT DISTINCT FROM a.user_id
           AND b.c IS NOT DISTINCT FROM a.character_id
           AND b.v IS NOT DISTINCT FROM a.conversation_id
           AND b.s IS NOT DISTINCT FROM a.scene_id)
       OR (b.k = 'user' AND a.scope_kind = 'character' AND b.u = a.user_id)
       OR (b.k = 'user' AND a.scope_kind IN ('conversation', 'scene') AND b.u = a.user_id)
       OR (b.k = 'conversation' AND a.scope_kind = 'conversation'
           AND b.v = a.conversation_id AND b.u IS NULL)
       OR (b.k = 'conversation' AND a.scope_kind = 'scene' AND b.v = a.conversation_id
           AND (b.u IS NULL OR b.u = a.user_id))
       OR (b.k = 'scene' AND a.scope_kind = 'scene' AND b.v = a.conversation_id
           AND b.s = a.scene_id AND b.u IS NULL)
)
SELECT record_id, new_status FROM (
    SELECT a.id AS record_id,
           CASE WHEN a.bound IS NOT NULL AND a.evidence <= a.bound THEN 'forgotten'
                WHEN a.valid_until <= {now} THEN 'expired'
                WHEN c.id IS NOT NULL THEN 'superseded'
           END AS new_status
    FROM active a LEFT JOIN covered c ON c.id = a.id
) WHERE new_status IS NOT NULL
"""


def duckdb_normalize(
    records: pa.Table, tombstones: pa.Table, now: datetime, *, threads: int | None = None
) -> Any:
    """The changes at ``now``, in DuckDB SQL, as a pyarrow table."""
    connection = duckdb.connect()
    if threads is not None:
        connection.execute(f"SET threads = {int(threads)}")
    connection.register("records_in", records)
    connection.register("tombstones_in", tombstones)
    observed = "observed_at" if "observed_at" in records.column_names else "NULL::TIMESTAMPTZ"
    moment = f"'{now.isoformat()}'::TIMESTAMPTZ"
    user_wide = "coalesce(user_wide, false)" if "user_wide" in tombstones.column_names else "false"
    query = NORMALIZE_SQL.format(observed=observed, now=moment, user_wide=user_wide)
    table = connection.sql(query).to_arrow_table()
    connection.close()
    return table
