"""What a resolution returns: winners, exclusions with reasons, a trace, prompt memories."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from memresolve._records import MemoryRecord
from memresolve._types import Authority, Certainty, Reason

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
    """Counts only, safe to log: no ids, no values (SPEC §2)."""

    memory_candidates: int
    memory_active: int
    excluded_scope: int
    excluded_expired: int  # the status-or-time count, under the tutorial's name
    excluded_forgotten: int
    excluded_superseded: int
    excluded_precedence: int
    resolver_version: str

    def as_dict(self) -> dict[str, int | str]:
        """The fields under the SPEC's names, in the SPEC's order."""
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
    """What a backend kernel returns: row indices into its input, already in canonical order.

    ``active`` is ordered by (scope id, key), ``excluded`` by record id, and
    ``excluded`` pairs a row with its reason's code (its position in ``Reason``).
    """

    active: tuple[int, ...]
    excluded: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Resolution:
    """The decision for one retrieval: the winners, and a reason for every other candidate.

    Attributes:
        active: the winners, one per (scope, key), sorted by scope id then key.
        excluded: one ``Exclusion`` per other candidate, sorted by id.
        trace: counts, safe to log.
    """

    active: tuple[MemoryRecord, ...]
    excluded: tuple[Exclusion, ...]
    trace: Trace

    def reason_for(self, record_id: str) -> Reason | None:
        """Why ``record_id`` was excluded, or ``None`` if it is active.

        Raises:
            KeyError: ``record_id`` was not among the candidates.
        """
        position = bisect_left(self.excluded, record_id, key=lambda exclusion: exclusion.id)
        if position < len(self.excluded) and self.excluded[position].id == record_id:
            return self.excluded[position].reason
        if any(record.id == record_id for record in self.active):
            return None
        raise KeyError(record_id)

    def is_active(self, record_id: str) -> bool:
        """Whether ``record_id`` won its group (``KeyError`` if it was not a candidate)."""
        return self.reason_for(record_id) is None

    def prompt_memories(self) -> tuple[PromptMemory, ...]:
        """Every winner projected for the prompt, in ``active`` order."""
        return tuple(map(to_prompt_memory, self.active))
