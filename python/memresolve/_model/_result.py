"""What a resolution returns: winners, exclusions with reasons, a trace, prompt memories."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Literal, NamedTuple, TypeAlias

from memresolve._model._records import MemoryRecord
from memresolve._model._scopes import Scope, scope_owner
from memresolve._model._types import (
    REASON_BY_CODE,
    RESOLVER_VERSION,
    Certainty,
    Reason,
    ScopeKind,
    certainty,
)
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "Exclusion",
    "PromptMemory",
    "RawResolution",
    "Resolution",
    "Trace",
    "resolution_of_rows",
    "to_prompt_memory",
]


@dataclass(frozen=True, slots=True)
class Exclusion:
    """One excluded candidate: its id and the first pipeline stage that excluded it."""

    id: str
    reason: Reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """Counts only, safe to log: no ids, no values (``docs/spec.md`` §2.7).

    ``excluded_expired`` keeps the tutorial's name but counts every
    ``status-or-time`` exclusion: records whose interval has ended, records
    not yet valid, and records stored ``superseded`` or ``expired``.
    """

    memory_candidates: int
    memory_active: int
    excluded_scope: int
    excluded_expired: int  # the status-or-time count, under the tutorial's name
    excluded_forgotten: int
    excluded_superseded: int
    excluded_precedence: int
    resolver_version: str

    def as_dict(self) -> dict[str, int | str]:
        """The fields under the contract's names, in its order (``docs/spec.md`` §2.7)."""
        return {
            "memory_candidates": self.memory_candidates,
            "memory_active": self.memory_active,
            "excluded_scope": self.excluded_scope,
            "excluded_expired": self.excluded_expired,
            "excluded_forgotten": self.excluded_forgotten,
            "excluded_superseded": self.excluded_superseded,
            "excluded_precedence": self.excluded_precedence,
            "resolver_version": self.resolver_version,
        }

    def as_log_line(self) -> str:
        """``memory_candidates=24 memory_active=5 ...``, as in the tutorial."""
        return " ".join(f"{name}={value}" for name, value in self.as_dict().items())


@dataclass(frozen=True, slots=True)
class PromptMemory:
    """The narrow projection of a winner that goes into the prompt.

    ``scope`` says where the memory holds, so a prompt builder can group
    memories, or choose among a user's and a character's ``nickname``.
    ``record_id`` is the winner's id, for the application: to correct, retract
    or explain what the prompt showed. It never goes into prompt text. It is
    None only for a ``PromptMemory`` built by hand without it.
    """

    key: str
    value: str = field(repr=False)  # private text: shown to the model, never in a repr
    certainty: Certainty
    scope: Scope
    record_id: str | None = None

    def __setstate__(self, state: object) -> None:
        # The state is the fields in order (dataclass slots); pickles of 0.1 hold
        # four: the fifth then takes its default.
        if not isinstance(state, list | tuple) or len(state) not in (4, 5):
            # Never the state itself in the message: it holds the value's text.
            raise TypeError(f"PromptMemory: cannot restore from a {type(state).__name__}")
        for name, value in zip(_PROMPT_MEMORY_FIELDS, (*state, None)[:5], strict=True):
            object.__setattr__(self, name, value)


def certainty_of(record: MemoryRecord) -> Certainty:
    """``confirmed`` if the user vouched for it, ``likely`` from 0.85 up, else ``uncertain``."""
    return certainty(record.authority, record.confidence)


def to_prompt_memory(record: MemoryRecord) -> PromptMemory:
    """Project a winner for the prompt: key, value, how certain it may be stated, its scope."""
    if not isinstance(record, MemoryRecord):
        raise InvalidInputError(
            f"record: expected a MemoryRecord, got {type(record).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="record",
        )
    return PromptMemory(record.key, record.value, certainty_of(record), record.scope, record.id)


_PROMPT_MEMORY_FIELDS: tuple[str, ...] = ("key", "value", "certainty", "scope", "record_id")


#: How specific a scope is, most specific first (``docs/spec.md`` §2.8): a
#: scene, then a conversation, a character, the user; an owned conversation or
#: scene before the unowned one.
SPECIFICITY: tuple[tuple[ScopeKind, bool], ...] = (
    (ScopeKind.SCENE, True),
    (ScopeKind.SCENE, False),
    (ScopeKind.CONVERSATION, True),
    (ScopeKind.CONVERSATION, False),
    (ScopeKind.CHARACTER, False),
    (ScopeKind.USER, False),
)
_RANK = {slot: rank for rank, slot in enumerate(SPECIFICITY)}


def specificity(scope: Scope) -> int:
    """The rank of ``scope`` in ``SPECIFICITY``: 0 is the most specific."""
    return _RANK[(scope.kind, scope_owner(scope) is not None)]


#: What ``Resolution.prompt_memories`` keeps per key.
PerKey: TypeAlias = Literal["most-specific"]


class RawResolution(NamedTuple):
    """What a backend kernel returns, already in canonical order.

    ``active`` holds the winning records by (scope id, key); ``excluded_rows``
    holds row indices into the kernel's input, by record id,
    with ``excluded_codes[i]`` the code of row ``excluded_rows[i]``'s reason
    (its position in ``Reason``). Kept as compact sequences: the native kernel
    hands over two ``bytes`` objects instead of one Python object per row. A named
    tuple, as it is built on every call: half the cost of a frozen dataclass.
    """

    active: tuple[MemoryRecord, ...]
    excluded_rows: Sequence[int]
    excluded_codes: bytes


# Exclusion's slots, set directly: the frozen dataclass __init__ goes through
# object.__setattr__ per field and costs three times as much, per exclusion.
_set_exclusion_id = Exclusion.__dict__["id"].__set__
_set_exclusion_reason = Exclusion.__dict__["reason"].__set__


def _exclusion(record_id: str, reason: Reason) -> Exclusion:
    exclusion = object.__new__(Exclusion)
    _set_exclusion_id(exclusion, record_id)
    _set_exclusion_reason(exclusion, reason)
    return exclusion


_FROZEN = "cannot assign to field {!r}: a Resolution is immutable"

_TRACE_SLOTS = {name: Trace.__dict__[name].__set__ for name in Trace.__dataclass_fields__}
_set_candidates = _TRACE_SLOTS["memory_candidates"]
_set_active = _TRACE_SLOTS["memory_active"]
_set_scope = _TRACE_SLOTS["excluded_scope"]
_set_expired = _TRACE_SLOTS["excluded_expired"]
_set_forgotten = _TRACE_SLOTS["excluded_forgotten"]
_set_superseded = _TRACE_SLOTS["excluded_superseded"]
_set_precedence = _TRACE_SLOTS["excluded_precedence"]
_set_version = _TRACE_SLOTS["resolver_version"]


class Resolution:
    """The decision for one retrieval: the winners, and a reason for every other candidate.

    Attributes:
        active: the winners, one per (scope, key), sorted by scope id then key.
        excluded: one ``Exclusion`` per other candidate, sorted by id. Built on
            first access: a caller that only needs the winners never pays for
            an object per excluded candidate. Until then the result keeps a
            reference to the candidate records.
        trace: counts, safe to log. Also built on first access.
    """

    __slots__ = ("_counts", "_excluded", "_pending", "_trace", "active")

    active: tuple[MemoryRecord, ...]
    _excluded: tuple[Exclusion, ...] | None
    # What .excluded is built from until it is first read: the candidates, the
    # excluded rows and their reason codes. One slot, read once, so a thread
    # racing the first access sees either all of it or the finished tuple.
    # Rows are a sequence of ints, or native-endian u32 bytes as the native kernel gives them.
    _pending: tuple[Sequence[MemoryRecord], Sequence[int] | bytes, bytes] | None
    _trace: Trace | None
    # What .trace is counted from until it is first read: the number of
    # candidates and the excluded reason codes (one slot, as _pending).
    _counts: tuple[int, bytes] | None

    def __init__(
        self, active: Iterable[MemoryRecord], excluded: Iterable[Exclusion], trace: Trace
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "active", tuple(active))
        set_field(self, "_excluded", tuple(excluded))
        set_field(self, "_trace", trace)
        set_field(self, "_pending", None)
        set_field(self, "_counts", None)

    @classmethod
    def from_raw(cls, candidates: Sequence[MemoryRecord], raw: RawResolution) -> Resolution:
        """The public result of a kernel's rows; ``excluded`` and ``trace`` are
        materialised lazily."""
        rows = raw.excluded_rows
        if type(rows) is bytes:  # a sequence of small ints, not the native kernel's u32 bytes
            rows = tuple(rows)
        return resolution_of_rows(candidates, raw.active, rows, raw.excluded_codes)

    @property
    def excluded(self) -> tuple[Exclusion, ...]:
        """One ``Exclusion`` per non-winning candidate, sorted by id."""
        excluded = self._excluded
        if excluded is None:
            pending = self._pending
            if pending is None:  # another thread finished it meanwhile
                return self.excluded
            candidates, rows, codes = pending
            if type(rows) is bytes:  # the native kernel's row numbers, read only now
                rows = memoryview(rows).cast("I")
            excluded = tuple(
                _exclusion(candidates[row].id, REASON_BY_CODE[code])
                for row, code in zip(rows, codes, strict=True)
            )
            set_field = object.__setattr__
            set_field(self, "_excluded", excluded)
            set_field(self, "_pending", None)  # the candidates are no longer needed
        return excluded

    @property
    def trace(self) -> Trace:
        """Counts, safe to log (``docs/spec.md`` §2.7)."""
        trace = self._trace
        if trace is None:
            counts = self._counts
            if counts is None:  # another thread finished it meanwhile (it set _trace first)
                return self._trace  # type: ignore[return-value]
            candidates, codes = counts
            # Trace's slots set directly, as for Exclusion: a third of the dataclass __init__.
            trace = object.__new__(Trace)
            _set_candidates(trace, candidates)
            _set_active(trace, len(self.active))
            _set_scope(trace, codes.count(_SCOPE))
            _set_expired(trace, codes.count(_STATUS_OR_TIME))
            _set_forgotten(trace, codes.count(_FORGOTTEN))
            _set_superseded(trace, codes.count(_SUPERSEDED))
            _set_precedence(trace, codes.count(_LOWER_PRECEDENCE))
            _set_version(trace, RESOLVER_VERSION)
            set_field = object.__setattr__
            set_field(self, "_trace", trace)
            set_field(self, "_counts", None)
        return trace

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(_FROZEN.format(name))

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(_FROZEN.format(name))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Resolution)
        return (self.active, self.excluded, self.trace) == (
            other.active,
            other.excluded,
            other.trace,
        )

    def __hash__(self) -> int:
        return hash((self.active, self.excluded, self.trace))

    def __repr__(self) -> str:
        return (
            f"Resolution(active={self.active!r}, excluded={self.excluded!r}, trace={self.trace!r})"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (Resolution, (self.active, self.excluded, self.trace))

    def reason_for(self, record_id: str) -> Reason | None:
        """Why ``record_id`` was excluded, or ``None`` if it is active.

        Raises:
            KeyError: ``record_id`` was not among the candidates.
        """
        excluded = self.excluded
        position = bisect_left(excluded, record_id, key=lambda exclusion: exclusion.id)
        if position < len(excluded) and excluded[position].id == record_id:
            return excluded[position].reason
        if any(record.id == record_id for record in self.active):
            return None
        raise KeyError(record_id)

    def is_active(self, record_id: str) -> bool:
        """Whether ``record_id`` won its group (``KeyError`` if it was not a candidate)."""
        return self.reason_for(record_id) is None

    def prompt_memories(self, *, per_key: PerKey | None = None) -> tuple[PromptMemory, ...]:
        """The winners projected for the prompt, in ``active`` order.

        By default every winner: one per (scope, key), so a key can appear
        once per scope. With ``per_key="most-specific"`` one per key: the
        winner of the most specific scope (see ``SPECIFICITY``), so a scene's
        ``outfit`` hides the conversation's and a character's ``nickname`` the
        user's.

        Raises:
            InvalidInputError: ``per_key`` is not ``None`` or ``"most-specific"``.
        """
        if per_key is None:
            return tuple(map(to_prompt_memory, self.active))
        if per_key != "most-specific":
            raise InvalidInputError(
                f"per_key: expected None or 'most-specific', got {per_key!r}",
                kind=ErrorKind.UNKNOWN_VALUE,
                field="per_key",
            )
        best: dict[str, MemoryRecord] = {}
        for record in self.active:
            kept = best.get(record.key)
            if kept is None or specificity(record.scope) < specificity(kept.scope):
                best[record.key] = record
        kept_ids = {id(record) for record in best.values()}
        return tuple(to_prompt_memory(r) for r in self.active if id(r) in kept_ids)


_SCOPE, _STATUS_OR_TIME, _FORGOTTEN, _SUPERSEDED, _LOWER_PRECEDENCE = (
    bytes([code]) for code in range(len(REASON_BY_CODE))
)


_resolution_slots = {name: Resolution.__dict__[name].__set__ for name in Resolution.__slots__}
_set_result_active = _resolution_slots["active"]
_set_result_excluded = _resolution_slots["_excluded"]
_set_result_trace = _resolution_slots["_trace"]
_set_result_pending = _resolution_slots["_pending"]
_set_result_counts = _resolution_slots["_counts"]


def resolution_of_rows(
    candidates: Sequence[MemoryRecord],
    active: tuple[MemoryRecord, ...],
    excluded_rows: Sequence[int] | bytes,
    excluded_codes: bytes,
) -> Resolution:
    """The public result of a kernel's answer (see ``RawResolution``; ``excluded_rows`` may
    also be the native kernel's native-endian u32 bytes). ``excluded`` and ``trace`` are
    built on first access.

    Sets the slots through their descriptors: this runs once per ``resolve`` call, and
    ``object.__setattr__`` costs a third more per field.
    """
    self = object.__new__(Resolution)
    _set_result_active(self, active)
    _set_result_excluded(self, None)
    _set_result_trace(self, None)
    _set_result_pending(self, (candidates, excluded_rows, excluded_codes))
    _set_result_counts(self, (len(candidates), excluded_codes))
    return self
