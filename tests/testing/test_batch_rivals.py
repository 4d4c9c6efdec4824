"""The batch benchmark's rivals (Polars, DuckDB) compute what resolve_batch computes.

The benchmark checks this again at every size before timing; here it runs on
small generated stores in CI, so a rival that drifts from the contract fails
the suite, not only a benchmark run.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings

import memresolve as mr
from batch_rows import arrow_tables
from memresolve import reference
from memresolve.testing import Store, stores
from memresolve.testing.batch_store import generate, write_parquet
from memresolve.testing.rivals import (
    duckdb_file_to_file,
    duckdb_resolve,
    polars_file_to_file,
    polars_resolve,
    winner_rows,
)


@pytest.mark.parametrize(("size", "seed"), [(300, 1), (3_000, 2)])
def test_rivals_and_reference_agree_with_resolve_batch(size: int, seed: int) -> None:
    store = generate(size, seed=seed)
    ours = winner_rows(mr.resolve_batch(store.records, store.contexts, tombstones=store.tombstones))
    assert ours, "the generated store must produce winners"
    assert winner_rows(polars_resolve(store.records, store.contexts, store.tombstones)) == ours
    assert winner_rows(duckdb_resolve(store.records, store.contexts, store.tombstones)) == ours
    if size <= 300:
        expected = reference.resolve_batch(
            store.records, store.contexts, tombstones=store.tombstones
        )
        assert winner_rows(expected) == ours


def test_the_generator_is_seeded_and_exact() -> None:
    first, again = generate(2_000, seed=5), generate(2_000, seed=5)
    assert first.records.equals(again.records)
    assert first.records.num_rows == 2_000
    kinds = set(first.records.column("scope_kind").to_pylist())
    assert kinds == {"user", "character", "conversation", "scene"}


def test_time_order_interleaves_users_and_keeps_the_same_store() -> None:
    """The same records in another row order: the same decisions, theirs and ours."""
    by_owner, by_time = generate(3_000, seed=6), generate(3_000, seed=6, order="time")
    assert by_time.records.sort_by("id").equals(by_owner.records.sort_by("id"))
    valid_from = by_time.records.column("valid_from").cast("int64").to_numpy()
    assert (valid_from[1:] >= valid_from[:-1]).all()
    users = [u for u in by_time.records.column("user_id").to_pylist() if u is not None]
    changes = sum(a != b for a, b in itertools.pairwise(users))
    assert changes > len(users) // 2, "a time-ordered store interleaves its users"
    ours = winner_rows(
        mr.resolve_batch(by_time.records, by_time.contexts, tombstones=by_time.tombstones)
    )
    assert ours == winner_rows(
        mr.resolve_batch(by_owner.records, by_owner.contexts, tombstones=by_owner.tombstones)
    )
    assert (
        winner_rows(polars_resolve(by_time.records, by_time.contexts, by_time.tombstones)) == ours
    )
    assert (
        winner_rows(duckdb_resolve(by_time.records, by_time.contexts, by_time.tombstones)) == ours
    )
    with pytest.raises(ValueError, match="order"):
        generate(10, order="random")


@settings(max_examples=60, deadline=None)
@given(stores(max_records=30, max_contexts=6, max_users=3))
def test_rivals_agree_on_hypothesis_stores(store: Store) -> None:
    """Owned and shared conversations, tombstones on every scope kind, edge cases of time.

    Tombstones without their hashes: the rivals implement the time rule, not yet the
    blocking of cited messages (the benchmarks' tombstones carry none)."""
    records, contexts, tombstones = arrow_tables(_without_hashes(store))
    ours = winner_rows(mr.resolve_batch(records, contexts, tombstones=tombstones))
    assert winner_rows(polars_resolve(records, contexts, tombstones)) == ours
    assert winner_rows(duckdb_resolve(records, contexts, tombstones)) == ours


def test_rivals_file_to_file(tmp_path: Path) -> None:
    written = write_parquet(tmp_path / "store", 20_000, seed=3, chunk_records=7_000)
    paths = (Path(written.records), Path(written.contexts), Path(written.tombstones))
    tables = [pq.read_table(path) for path in paths]
    ours = winner_rows(mr.resolve_batch(tables[0], tables[1], tombstones=tables[2]))
    polars_file_to_file(*paths, tmp_path / "polars.parquet")
    assert winner_rows(pq.read_table(tmp_path / "polars.parquet")) == ours
    (tmp_path / "spill").mkdir()
    duckdb_file_to_file(
        *paths, tmp_path / "duckdb.parquet", threads=2, memory_limit="1GB", spill=tmp_path / "spill"
    )
    assert winner_rows(pq.read_table(tmp_path / "duckdb.parquet")) == ours


def _without_hashes(store: Store) -> Store:
    """``store`` with its tombstones' salts and hashes dropped."""
    return dataclasses.replace(
        store,
        tombstones=tuple(
            dataclasses.replace(t, source_salt=None, blocked_sources=frozenset())
            for t in store.tombstones
        ),
    )
