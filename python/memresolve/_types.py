"""The contract's vocabularies (SPEC §1-2) as string enums, and their code tables.

The string values are the tutorial's; a constructor accepts a member or its
value. Each enum's definition order is its code order, shared with the Rust
core's ``model.rs`` (a test compares the tables).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Authority", "Certainty", "Reason", "Status"]


class Status(StrEnum):
    """A record's stored status. Only ``active`` records can win."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"
    FORGOTTEN = "forgotten"


class Authority(StrEnum):
    """Who vouches for a record, from weakest to strongest (definition order is rank)."""

    MODEL_INFERRED = "model-inferred"
    RULE_EXTRACTED = "rule-extracted"
    USER_CONFIRMED = "user-confirmed"
    USER_CORRECTED = "user-corrected"

    @property
    def rank(self) -> int:
        """Precedence rank: higher wins (SPEC §2 stage 5)."""
        return AUTHORITY_RANK[self]


class Reason(StrEnum):
    """Why a candidate was excluded, in pipeline order (the first stage that excludes wins)."""

    SCOPE = "scope"
    STATUS_OR_TIME = "status-or-time"
    FORGOTTEN = "forgotten"
    SUPERSEDED = "superseded"
    LOWER_PRECEDENCE = "lower-precedence"


class Certainty(StrEnum):
    """How firmly a winner may be stated in the prompt (SPEC §2, prompt projection)."""

    CONFIRMED = "confirmed"
    LIKELY = "likely"
    UNCERTAIN = "uncertain"


AUTHORITY_RANK: dict[Authority, int] = {member: rank for rank, member in enumerate(Authority)}

# Code tables: the string value of each code, in code order.
SCOPE_KIND_NAMES: tuple[str, ...] = ("user", "character", "conversation", "scene")
STATUS_NAMES: tuple[str, ...] = tuple(member.value for member in Status)
AUTHORITY_NAMES: tuple[str, ...] = tuple(member.value for member in Authority)
REASON_NAMES: tuple[str, ...] = tuple(member.value for member in Reason)

# Written into every trace; identifies the contract version, not the package build.
RESOLVER_VERSION = "memresolve-spec-1"
