"""memresolve: decides which stored memories are true now, before retrieval.

>>> import memresolve as mr
>>> from datetime import datetime, timezone
>>> t = lambda day: datetime(2026, 7, day, tzinfo=timezone.utc)
>>> harbor = mr.MemoryRecord(
...     id="m1", key="pet.name", value="Harbor", scope=mr.UserScope("u1"),
...     status="active", authority="model-inferred", confidence=0.6,
...     valid_from=t(1), version=1)
>>> marlowe = mr.MemoryRecord(
...     id="m2", key="pet.name", value="Marlowe", scope=mr.UserScope("u1"),
...     status="active", authority="user-corrected", confidence=1.0,
...     valid_from=t(2), supersedes="m1", version=2)
>>> context = mr.RetrievalContext(
...     now=t(30), user_id="u1", character_id="c1", conversation_id="k1")
>>> result = mr.resolve([harbor, marlowe], context)
>>> [m.value for m in result.active], result.reason_for("m1")
(['Marlowe'], <Reason.SUPERSEDED: 'superseded'>)
"""

from memresolve._backend import backend_name
from memresolve._dataset._record_jobs import JobSummary, normalize_dataset
from memresolve._dataset._resolve_job import DatasetSummary, resolve_dataset
from memresolve._dataset._sweep_job import forget_sweep_dataset
from memresolve._engine._api import resolve, resolve_batch
from memresolve._engine._explain import Explanation
from memresolve._engine._jobs import (
    Normalization,
    Purge,
    PurgePlan,
    StatusChange,
    forget_sweep,
    forget_sweep_batch,
    normalize,
    normalize_batch,
)
from memresolve._io._arrow import (
    contexts_from_arrow,
    contexts_to_arrow,
    records_from_arrow,
    records_to_arrow,
    tombstones_from_arrow,
    tombstones_to_arrow,
)
from memresolve._io._jsonl import (
    read_contexts,
    read_records,
    read_tombstones,
    write_contexts,
    write_records,
    write_tombstones,
)
from memresolve._model._inputs import ForgetTombstone, RetrievalContext, forget_everywhere
from memresolve._model._records import MemoryRecord
from memresolve._model._result import Exclusion, PromptMemory, Resolution, Trace, to_prompt_memory
from memresolve._model._scopes import (
    CharacterScope,
    ConversationScope,
    SceneScope,
    Scope,
    UserScope,
    scope_from_id,
    scope_id,
)
from memresolve._model._types import (
    RESOLVER_VERSION,
    Authority,
    Certainty,
    PurgeCause,
    Reason,
    ScopeKind,
    Status,
)
from memresolve._store._memory_store import ArrowExport, ErasedUser, MemoryStore
from memresolve._version import __version__
from memresolve.errors import (
    BackendUnavailableError,
    ErasureDelayedWarning,
    ErrorKind,
    InternalError,
    InvalidInputError,
    MemoryLimitError,
    MemresolveError,
    StoreBusyError,
    StoreClosedError,
    StoreDamagedError,
    StoreError,
)

__all__ = [
    "RESOLVER_VERSION",
    "ArrowExport",
    "Authority",
    "BackendUnavailableError",
    "Certainty",
    "CharacterScope",
    "ConversationScope",
    "DatasetSummary",
    "ErasedUser",
    "ErasureDelayedWarning",
    "ErrorKind",
    "Exclusion",
    "Explanation",
    "ForgetTombstone",
    "InternalError",
    "InvalidInputError",
    "JobSummary",
    "MemoryLimitError",
    "MemoryRecord",
    "MemoryStore",
    "MemresolveError",
    "Normalization",
    "PromptMemory",
    "Purge",
    "PurgeCause",
    "PurgePlan",
    "Reason",
    "Resolution",
    "RetrievalContext",
    "SceneScope",
    "Scope",
    "ScopeKind",
    "Status",
    "StatusChange",
    "StoreBusyError",
    "StoreClosedError",
    "StoreDamagedError",
    "StoreError",
    "Trace",
    "UserScope",
    "__version__",
    "backend_name",
    "contexts_from_arrow",
    "contexts_to_arrow",
    "forget_everywhere",
    "forget_sweep",
    "forget_sweep_batch",
    "forget_sweep_dataset",
    "normalize",
    "normalize_batch",
    "normalize_dataset",
    "read_contexts",
    "read_records",
    "read_tombstones",
    "records_from_arrow",
    "records_to_arrow",
    "resolve",
    "resolve_batch",
    "resolve_dataset",
    "scope_from_id",
    "scope_id",
    "to_prompt_memory",
    "tombstones_from_arrow",
    "tombstones_to_arrow",
    "write_contexts",
    "write_records",
    "write_tombstones",
]
