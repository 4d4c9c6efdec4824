"""Resolution in memory: resolve, resolve_batch, normalise, the forget sweep and explain,
over either backend's kernels.

This is the wing's face: what other wings and the package use of it. Its modules are
private to it."""

from memresolve._engine import _job_kernels as job_kernels
from memresolve._engine import _kernels as kernels
from memresolve._engine._api import resolve, resolve_batch
from memresolve._engine._explain import Explanation, explain_in
from memresolve._engine._jobs import (
    Normalization,
    Purge,
    PurgePlan,
    StatusChange,
    forget_sweep,
    forget_sweep_batch,
    normalize,
    normalize_batch,
    purged_records,
)
from memresolve._engine._kernels import SELECTED

__all__ = [
    "SELECTED",
    "Explanation",
    "Normalization",
    "Purge",
    "PurgePlan",
    "StatusChange",
    "explain_in",
    "forget_sweep",
    "forget_sweep_batch",
    "job_kernels",
    "kernels",
    "normalize",
    "normalize_batch",
    "purged_records",
    "resolve",
    "resolve_batch",
]
