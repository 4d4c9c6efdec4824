"""Test and benchmark material for memresolve users: strategies, workloads, stores, rivals.

A product feature, not only our test helpers. Point the Hypothesis
strategies at your own storage layer (write a scenario, read it back,
resolve) and compare with ``memresolve.reference``; time your own storage
with the same workloads and stores our benchmarks use.

- the strategies (this package; ``memresolve.testing.strategies``): whole
  calls, stores and their parts, drawn to collide (needs ``hypothesis``);
- ``memresolve.testing.workload``: seeded per-turn candidate sets, as a chat
  backend sees them after its vector search;
- ``memresolve.testing.batch_store``: seeded realistic stores as Arrow tables
  (needs ``numpy`` and ``pyarrow``);
- ``memresolve.testing.layouts``: strategies that lay the same Arrow tables out in every
  way Arrow allows (chunks, offsets, slices, encodings), to check that a reader of the
  batch form answers alike (needs ``hypothesis`` and ``pyarrow``);
- ``memresolve.testing.rivals``: the batch job written the best ways we know
  in Polars and DuckDB, for comparisons (needs ``polars`` and ``duckdb``);
- ``memresolve.testing.peak_memory``: a process's own peak memory, and a
  command's, without its parent's (what ``ru_maxrss`` gives a child on Linux).
- ``memresolve.testing.store_race``: two processes on one ``MemoryStore`` file,
  every answer of the reader checked against the states the writer committed.

Install with ``pip install 'memresolve[testing]'``.

Example::

    from hypothesis import given
    from memresolve.testing import scenarios

    @given(scenarios())
    def test_my_store_round_trips(scenario):
        store.save(scenario.records)
        loaded = store.load()
        expected = mr.reference.resolve(scenario.records, scenario.context)
        assert mr.resolve(loaded, scenario.context) == expected
"""

from memresolve.testing.strategies import (
    BASE_NOW,
    ID_ALPHABET,
    MESSAGE_IDS,
    Scenario,
    Store,
    Universe,
    authorities,
    confidences,
    contexts,
    identifiers,
    instants,
    memory_records,
    scenarios,
    scopes,
    statuses,
    stores,
    tombstones,
    universes,
    versions,
)

__all__ = [
    "BASE_NOW",
    "ID_ALPHABET",
    "MESSAGE_IDS",
    "Scenario",
    "Store",
    "Universe",
    "authorities",
    "confidences",
    "contexts",
    "identifiers",
    "instants",
    "memory_records",
    "scenarios",
    "scopes",
    "statuses",
    "stores",
    "tombstones",
    "universes",
    "versions",
]
