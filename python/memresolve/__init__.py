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
from memresolve._dataset import (
    DatasetSummary,
    JobSummary,
    forget_sweep_dataset,
    normalize_dataset,
    resolve_dataset,
)
from memresolve._engine import (
    Explanation,
    Normalization,
    Purge,
    PurgePlan,
    StatusChange,
    forget_sweep,
    forget_sweep_batch,
    normalize,
    normalize_batch,
    resolve,
    resolve_batch,
)
from memresolve._io import (
    contexts_from_arrow,
    contexts_to_arrow,
    read_contexts,
    read_records,
    read_tombstones,
    records_from_arrow,
    records_to_arrow,
    tombstones_from_arrow,
    tombstones_to_arrow,
    write_contexts,
    write_records,
    write_tombstones,
)
from memresolve._model import (
    RESOLVER_VERSION,
    Authority,
    Certainty,
    CharacterScope,
    ConversationScope,
    Exclusion,
    ForgetTombstone,
    MemoryRecord,
    PromptMemory,
    PurgeCause,
    Reason,
    Resolution,
    RetrievalContext,
    SceneScope,
    Scope,
    ScopeKind,
    Status,
    Trace,
    UserScope,
    forget_everywhere,
    new_source_salt,
    scope_from_id,
    scope_id,
    source_hash,
    to_prompt_memory,
)
from memresolve._store import ArrowExport, ErasedUser, MemoryStore, Observation, ObserveOutcome
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

__all__ = [  # noqa: RUF022 - grouped by concern, not sorted
    # The records and the question: what a memory is, where it applies, when it is asked
    "MemoryRecord",
    "Scope",
    "UserScope",
    "CharacterScope",
    "ConversationScope",
    "SceneScope",
    "scope_id",
    "scope_from_id",
    "RetrievalContext",
    "ForgetTombstone",
    "forget_everywhere",
    "source_hash",
    "new_source_salt",
    # The vocabularies
    "Status",
    "Authority",
    "ScopeKind",
    "Reason",
    "Certainty",
    "PurgeCause",
    "RESOLVER_VERSION",
    # Resolving in memory, one turn or many (memresolve._engine)
    "resolve",
    "resolve_batch",
    "Resolution",
    "Exclusion",
    "Trace",
    "PromptMemory",
    "to_prompt_memory",
    "Explanation",
    "backend_name",
    # The background jobs in memory: statuses and the forget sweep
    "normalize",
    "normalize_batch",
    "Normalization",
    "StatusChange",
    "forget_sweep",
    "forget_sweep_batch",
    "PurgePlan",
    "Purge",
    # Arrow tables and JSON Lines in and out (memresolve._io)
    "records_from_arrow",
    "records_to_arrow",
    "contexts_from_arrow",
    "contexts_to_arrow",
    "tombstones_from_arrow",
    "tombstones_to_arrow",
    "read_records",
    "read_contexts",
    "read_tombstones",
    "write_records",
    "write_contexts",
    "write_tombstones",
    # The file-to-file jobs, in bounded memory (memresolve._dataset)
    "resolve_dataset",
    "DatasetSummary",
    "normalize_dataset",
    "forget_sweep_dataset",
    "JobSummary",
    # Memories kept between turns (memresolve._store)
    "MemoryStore",
    "ArrowExport",
    "ErasedUser",
    "Observation",
    "ObserveOutcome",
    # Errors and warnings (memresolve.errors)
    "MemresolveError",
    "InvalidInputError",
    "ErrorKind",
    "BackendUnavailableError",
    "InternalError",
    "MemoryLimitError",
    "StoreError",
    "StoreBusyError",
    "StoreClosedError",
    "StoreDamagedError",
    "ErasureDelayedWarning",
    # The version of the package
    "__version__",
]
