"""The batch benchmark's rivals (Polars, DuckDB) compute what resolve_batch computes.

The benchmark checks this again at every size before timing; here it runs on
small generated stores in CI, so a rival that drifts from the contract fails
the suite, not only a benchmark run.
"""

from __future__ import annotations

import pytest

import memresolve as mr
from memresolve import reference
from memresolve.testing.batch_store import generate
from memresolve.testing.rivals import duckdb_resolve, polars_resolve, winner_rows


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
