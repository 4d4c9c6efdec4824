"""The file-to-file jobs: resolve, normalise and sweep over Parquet, streamed in bounded memory.

This is the wing's face: what other wings and the package use of it. Its modules are
private to it."""

from memresolve._dataset._limits import SPILL_COMPRESSIONS
from memresolve._dataset._record_jobs import JobSummary, normalize_dataset
from memresolve._dataset._resolve_job import DatasetSummary, resolve_dataset
from memresolve._dataset._sweep_job import forget_sweep_dataset

__all__ = [
    "SPILL_COMPRESSIONS",
    "DatasetSummary",
    "JobSummary",
    "forget_sweep_dataset",
    "normalize_dataset",
    "resolve_dataset",
]
