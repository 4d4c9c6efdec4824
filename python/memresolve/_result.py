"""What a resolution returns: winners, exclusions with reasons, a trace, prompt memories."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import FrozenInstanceError, dataclass, field

from memresolve._records import MemoryRecord
from memresolve._types import REASON_BY_CODE, RESOLVER_VERSION, Authority, Certainty, Reason

__all__ = [
    "Exclusion",
    "PromptMemory",
    "RawResolution",
    "Resolution",
    "Trace",
    "to_prompt_memory",
]

LIKELY_CONFIDENCE = 0.85
_CONFIRMING_AUTHORITIES = frozenset({Authority.USER_CORRECTED, Authority.USER_CONFIRMED})


@dataclass(frozen=True, slots=True)
class Exclusion:
    """One excluded candidate: its id and the first pipeline stage that excluded it."""

    id: str
    reason: Reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """Counts only, safe to log: no ids, no values (``docs/spec.md`` §2.7)."""

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
    """The narrow projection of a winner that goes into the prompt."""

    key: str
    value: str = field(repr=False)  # private text: shown to the model, never in a repr
    certainty: Certainty


def certainty_of(record: MemoryRecord) -> Certainty:
    """``confirmed`` if the user vouched for it, ``likely`` from 0.85 up, else ``uncertain``."""
    if record.authority in _CONFIRMING_AUTHORITIES:
        return Certainty.CONFIRMED
    if record.confidence >= LIKELY_CONFIDENCE:
        return Certainty.LIKELY
    return Certainty.UNCERTAIN


def to_prompt_memory(record: MemoryRecord) -> PromptMemory:
    """Project a winner for the prompt: key, value and how certain it may be stated."""
    return PromptMemory(record.key, record.value, certainty_of(record))


@dataclass(frozen=True, slots=True)
class RawResolution:
    """What a backend kernel returns, already in canonical order.

    ``active`` holds the winning records by (scope id, key); ``excluded_rows``
    holds row indices into the kernel's input, by record id,
    with ``excluded_codes[i]`` the code of row ``excluded_rows[i]``'s reason
    (its position in ``Reason``). Kept as compact sequences: the native kernel
    hands over two ``bytes`` objects instead of one Python object per row.
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


class Resolution:
    """The decision for one retrieval: the winners, and a reason for every other candidate.

    Attributes:
        active: the winners, one per (scope, key), sorted by scope id then key.
        excluded: one ``Exclusion`` per other candidate, sorted by id. Built on
            first access: a caller that only needs the winners never pays for
            an object per excluded candidate. Until then the result keeps a
            reference to the candidate records.
        trace: counts, safe to log.
    """

    __slots__ = ("_excluded", "_pending", "active", "trace")

    active: tuple[MemoryRecord, ...]
    trace: Trace
    _excluded: tuple[Exclusion, ...] | None
    # What .excluded is built from until it is first read: the candidates, the
    # excluded rows and their reason codes. One slot, read once, so a thread
    # racing the first access sees either all of it or the finished tuple.
    _pending: tuple[Sequence[MemoryRecord], Sequence[int], bytes] | None

    def __init__(
        self, active: Iterable[MemoryRecord], excluded: Iterable[Exclusion], trace: Trace
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "active", tuple(active))
        set_field(self, "_excluded", tuple(excluded))
        set_field(self, "trace", trace)
        set_field(self, "_pending", None)

    @classmethod
    def from_raw(cls, candidates: Sequence[MemoryRecord], raw: RawResolution) -> Resolution:
        """The public result of a kernel's rows; ``excluded`` is materialised lazily."""
        codes = raw.excluded_codes
        trace = Trace(
            memory_candidates=len(candidates),
            memory_active=len(raw.active),
            excluded_scope=codes.count(_SCOPE),
            excluded_expired=codes.count(_STATUS_OR_TIME),
            excluded_forgotten=codes.count(_FORGOTTEN),
            excluded_superseded=codes.count(_SUPERSEDED),
            excluded_precedence=codes.count(_LOWER_PRECEDENCE),
            resolver_version=RESOLVER_VERSION,
        )
        self = cls.__new__(cls)
        set_field = object.__setattr__
        set_field(self, "active", raw.active)
        set_field(self, "_excluded", None)
        set_field(self, "trace", trace)
        set_field(self, "_pending", (candidates, raw.excluded_rows, codes))
        return self

    @property
    def excluded(self) -> tuple[Exclusion, ...]:
        """One ``Exclusion`` per non-winning candidate, sorted by id."""
        excluded = self._excluded
        if excluded is None:
            pending = self._pending
            if pending is None:  # another thread finished it meanwhile
                return self.excluded
            candidates, rows, codes = pending
            excluded = tuple(
                _exclusion(candidates[row].id, REASON_BY_CODE[code])
                for row, code in zip(rows, codes, strict=True)
            )
            set_field = object.__setattr__
            set_field(self, "_excluded", excluded)
            set_field(self, "_pending", None)  # the candidates are no longer needed
        return excluded

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

    def prompt_memories(self) -> tuple[PromptMemory, ...]:
        """Every winner projected for the prompt, in ``active`` order."""
        return tuple(map(to_prompt_memory, self.active))


_SCOPE, _STATUS_OR_TIME, _FORGOTTEN, _SUPERSEDED, _LOWER_PRECEDENCE = (
    bytes([code]) for code in range(len(REASON_BY_CODE))
)
