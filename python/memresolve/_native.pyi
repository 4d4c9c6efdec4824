"""The compiled Rust module (PyO3). Private: import ``memresolve`` instead."""

from collections.abc import Callable
from datetime import datetime
from typing import Any, final

from typing_extensions import disjoint_base

from memresolve._model._inputs import ForgetTombstone, RetrievalContext
from memresolve._model._records import MemoryRecord
from memresolve._model._scopes import Scope
from memresolve._model._types import Authority, Status

__all__ = [
    "AUTHORITY_NAMES",
    "CERTAINTY_NAMES",
    "DECISION_NAMES",
    "DEFAULT_STATUS",
    "DEFAULT_VERSION",
    "ERROR_KIND_NAMES",
    "ID_COLUMN_NAMES",
    "LIKELY_CONFIDENCE",
    "PURGE_CAUSE_NAMES",
    "REASON_NAMES",
    "RESOLVER_VERSION",
    "SCOPE_KIND_NAMES",
    "STATUS_NAMES",
    "PreparedCandidates",
    "RecordCore",
    "Router",
    "__version__",
    "_panic_for_tests",
    "forget_sweep_batch",
    "normalize_batch",
    "normalize_rows",
    "purge_rows",
    "resolve_batch",
    "resolve_batch_into",
    "resolve_rows",
    "route_by_id",
    "scope_id",
    "scope_id_columns",
    "scope_owner_columns",
    "store_row",
]

__version__: str
RESOLVER_VERSION: str
SCOPE_KIND_NAMES: list[str]
STATUS_NAMES: list[str]
AUTHORITY_NAMES: list[str]
REASON_NAMES: list[str]
PURGE_CAUSE_NAMES: list[str]
ID_COLUMN_NAMES: list[str]
DECISION_NAMES: list[str]
ERROR_KIND_NAMES: list[str]
DEFAULT_STATUS: str
DEFAULT_VERSION: int
CERTAINTY_NAMES: list[str]
LIKELY_CONFIDENCE: float

def scope_id_columns() -> list[list[str]]:
    """The id columns each scope kind is made of, by kind code."""

def scope_owner_columns() -> list[str | None]:
    """The owner column of each scope kind (``None``: the kind has none), by kind code."""

def _panic_for_tests() -> None:
    """Panics inside the native panic guard: raises ``InternalError`` (a test hook)."""

def scope_id(kind: str, fields: list[str], owner: str | None = None) -> str:
    """The canonical scope identifier (``docs/spec.md`` §1.2), computed by the Rust core."""

@disjoint_base
class RecordCore:
    """The native storage of ``memresolve.MemoryRecord``: fields checked once, kept twice.

    Python objects for attribute access, and a Rust copy the resolver reads.
    """

    def __new__(
        cls,
        *args: object,
        id: object = ...,
        key: object = ...,
        value: object = ...,
        scope: object = ...,
        status: object = ...,
        authority: object = ...,
        confidence: object = ...,
        valid_from: object = ...,
        valid_until: object = ...,
        source_message_ids: object = ...,
        supersedes: object = ...,
        version: object = ...,
        observed_at: object = ...,
        **unknown: object,
    ) -> RecordCore:
        """Every field checked by the reference's rules; a field left out takes its default
        (``_records.RECORD_DEFAULTS``) or is a ``missing`` error; positional or unknown
        arguments are errors too. All are ``InvalidInputError``."""

    @property
    def id(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def scope(self) -> Scope: ...
    @property
    def status(self) -> Status: ...
    @property
    def authority(self) -> Authority: ...
    @property
    def confidence(self) -> float: ...
    @property
    def valid_from(self) -> datetime: ...
    @property
    def valid_until(self) -> datetime | None: ...
    @property
    def source_message_ids(self) -> tuple[str, ...]: ...
    @property
    def supersedes(self) -> str | None: ...
    @property
    def version(self) -> int: ...
    @property
    def observed_at(self) -> datetime | None: ...

def store_row(record: RecordCore) -> dict[str, Any]:
    """The ``MemoryStore`` row of ``record``, as ``_store_schema.record_row`` builds it."""

def resolve_rows(
    records: tuple[object, ...],
    context: RetrievalContext,
    tombstones: tuple[ForgetTombstone, ...],
) -> tuple[tuple[MemoryRecord, ...], bytes, bytes]:
    """The winners, the excluded rows (native-endian u32 bytes) and their reason codes."""

def normalize_rows(
    records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...], now: int
) -> tuple[bytes, bytes]:
    """The statuses to write at ``now`` (µs): changed rows (u32 bytes) and status codes."""

def purge_rows(
    records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...]
) -> tuple[bytes, bytes]:
    """The records to purge: rows (u32 bytes) and cause codes."""

def normalize_batch(
    records: object, *, now: int, tombstones: object | None = None, with_rows: bool = False
) -> Any:
    """``normalize_batch`` at ``now`` (µs); with ``with_rows`` a ``row`` column of input rows."""

def forget_sweep_batch(
    records: object, tombstones: object | None = None, *, with_rows: bool = False
) -> Any:
    """``forget_sweep_batch``; with ``with_rows`` a ``row`` column of input rows."""

def route_by_id(
    batch: object, row_offset: int, parts: int, now: int
) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """Checks a records batch and splits it by id for normalisation at ``now`` (µs): home
    rows and part ends, copied lasting corrections and their ends, and the id hashes."""

def resolve_batch(
    records: object,
    contexts: object,
    *,
    tombstones: object | None = None,
    include_excluded: bool = False,
    with_values: bool = False,
) -> Any:
    """Every context of a store, on Arrow (see ``memresolve.resolve_batch``); a pyarrow Table."""

def resolve_batch_into(
    records: object,
    contexts: object,
    sink: Callable[[Any], object],
    *,
    tombstones: object | None = None,
    include_excluded: bool = False,
    with_values: bool = False,
    max_bytes: int = 67108864,
) -> int:
    """``resolve_batch`` handing its result to ``sink`` as it is built, in pyarrow tables of
    about ``max_bytes`` each, in output order; returns the rows handed over."""

@final
class Router:
    """Checks the input of the streamed batch job and routes it to parts by owner."""

    def __new__(cls, parts: int, seed: int, with_values: bool = False) -> Router: ...
    @property
    def parts(self) -> int: ...
    def contexts(self, batch: object, row_offset: int) -> tuple[bytes, bytes, bytes]:
        """Rows by part, where each part ends (u32 bytes), and the context_id hashes."""
    def records(self, batch: object, row_offset: int) -> tuple[bytes, bytes, bytes]:
        """Rows by part, where each part ends (u32 bytes), and the id hashes."""
    def tombstones(self, batch: object, row_offset: int) -> tuple[bytes, bytes]:
        """Rows by part and where each part ends (u32 bytes)."""

@final
class PreparedCandidates:
    """Candidates and tombstones read and checked once, to resolve in many contexts."""

    def __new__(
        cls, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...]
    ) -> PreparedCandidates: ...
    @property
    def records(self) -> tuple[MemoryRecord, ...]: ...
    def extended(self, records: tuple[object, ...]) -> PreparedCandidates:
        """A copy with ``records`` added after the candidates, checked as the constructor
        checks them; this one is unchanged."""
    def forgotten(
        self, tombstones: tuple[ForgetTombstone, ...], records: tuple[object, ...]
    ) -> PreparedCandidates:
        """A copy that also holds ``tombstones``, with ``records`` in place of the candidates
        with their ids (each must read as its candidate does for resolution: only text may
        differ); this one is unchanged."""
    def resolve_rows(
        self, context: RetrievalContext
    ) -> tuple[tuple[MemoryRecord, ...], bytes, bytes]:
        """The winners, the excluded rows (native-endian u32 bytes) and their reason codes."""
