"""What memresolve.spark runs on Spark executors, and how it plans the exchanges.

This is the wing's face: what other wings and the package use of it. Its modules are
private to it."""

from memresolve._spark._jobs import forget_sweep, forget_sweep_schema, normalize, normalize_schema
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

__all__ = [
    "checked_partitions",
    "dataframe",
    "empty_table",
    "forget_sweep",
    "forget_sweep_schema",
    "normalize",
    "normalize_schema",
    "plain",
    "present",
    "raise_repeats",
    "repeated_ids",
    "with_id",
]
