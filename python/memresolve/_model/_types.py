"""The contract's vocabularies as string enums, and every table derived from them.

The one Python home of these facts (``docs/spec.md`` §1-2, §4.2): scope kinds
and the ids each kind is made of, statuses, authorities, reasons, the batch
decisions and their codes. Every reader and writer (constructors, JSON Lines,
Arrow) derives from here. Each enum's definition order is its code order,
shared with the Rust core's ``model.rs``; a test compares the two languages'
tables entry by entry.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, TypeAlias

__all__ = [
    "AUTHORITY_RANK",
    "CERTAINTY_CODE",
    "DECISION_NAMES",
    "ID_COLUMNS",
    "LIKELY_CONFIDENCE",
    "REASON_BY_CODE",
    "REASON_CODE",
    "RESOLVER_VERSION",
    "SCOPE_ID_COLUMNS",
    "SCOPE_OWNER_COLUMN",
    "Authority",
    "AuthorityName",
    "Certainty",
    "PurgeCause",
    "Reason",
    "ScopeKind",
    "Status",
    "StatusName",
    "certainty",
    "decision_code",
]


class ScopeKind(StrEnum):
    """The four kinds of scope (``docs/spec.md`` §1.1)."""

    USER = "user"
    CHARACTER = "character"
    CONVERSATION = "conversation"
    SCENE = "scene"


class Status(StrEnum):
    """A record's stored status. Only ``active`` records can win."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"
    FORGOTTEN = "forgotten"
    #: Written by a retraction ("that is no longer true", ``MemoryRecord.retracted``): a
    #: retraction is never active, and its ``supersedes`` edge hides the record it names
    #: from its ``valid_from`` on.
    RETRACTED = "retracted"


#: A status as a string, for type checkers: ``status="expired"`` type-checks,
#: ``status="Active"`` does not.
StatusName: TypeAlias = Literal["active", "superseded", "expired", "forgotten", "retracted"]


class Authority(StrEnum):
    """Who vouches for a record, from weakest to strongest (definition order is rank)."""

    MODEL_INFERRED = "model-inferred"
    RULE_EXTRACTED = "rule-extracted"
    USER_CONFIRMED = "user-confirmed"
    USER_CORRECTED = "user-corrected"

    @property
    def rank(self) -> int:
        """Precedence rank: higher wins (``docs/spec.md`` §2.5)."""
        return AUTHORITY_RANK[self]


#: An authority as a string, for type checkers.
AuthorityName: TypeAlias = Literal[
    "model-inferred", "rule-extracted", "user-confirmed", "user-corrected"
]


class Reason(StrEnum):
    """Why a candidate was excluded, in pipeline order (the first stage that excludes wins)."""

    SCOPE = "scope"
    STATUS_OR_TIME = "status-or-time"
    FORGOTTEN = "forgotten"
    SUPERSEDED = "superseded"
    LOWER_PRECEDENCE = "lower-precedence"


class PurgeCause(StrEnum):
    """Why the forget sweep purges a record (``docs/spec.md`` §7.2)."""

    #: A tombstone blocks it (even if it is also stored ``forgotten``).
    TOMBSTONE = "tombstone"
    #: It is stored ``forgotten`` and no tombstone names it.
    STORED_FORGOTTEN = "stored-forgotten"


class Certainty(StrEnum):
    """How firmly a winner may be stated in the prompt (``docs/spec.md`` §2.8)."""

    CONFIRMED = "confirmed"
    LIKELY = "likely"
    UNCERTAIN = "uncertain"


AUTHORITY_RANK: dict[Authority, int] = {member: rank for rank, member in enumerate(Authority)}

#: From this confidence on, a winner no user vouched for is ``likely``.
LIKELY_CONFIDENCE = 0.85
_CONFIRMING = frozenset({Authority.USER_CONFIRMED, Authority.USER_CORRECTED})
#: Each certainty's code: its position in ``Certainty``.
CERTAINTY_CODE: dict[Certainty, int] = {member: code for code, member in enumerate(Certainty)}


def certainty(authority: Authority, confidence: float) -> Certainty:
    """``confirmed`` if a user vouched for it, ``likely`` from ``LIKELY_CONFIDENCE`` up,
    else ``uncertain`` (``docs/spec.md`` §2.8)."""
    if authority in _CONFIRMING:
        return Certainty.CONFIRMED
    if confidence >= LIKELY_CONFIDENCE:
        return Certainty.LIKELY
    return Certainty.UNCERTAIN


#: The fields (and Arrow columns) that hold scope ids, in code order.
ID_COLUMNS: tuple[str, ...] = ("user_id", "character_id", "conversation_id", "scene_id")

#: The ids each scope kind is made of, in scope-id order: the scope classes'
#: fields, the JSON keys of a scope object, the Arrow columns a row needs.
SCOPE_ID_COLUMNS: dict[ScopeKind, tuple[str, ...]] = {
    ScopeKind.USER: ("user_id",),
    ScopeKind.CHARACTER: ("user_id", "character_id"),
    ScopeKind.CONVERSATION: ("conversation_id",),
    ScopeKind.SCENE: ("conversation_id", "scene_id"),
}

#: The reasons by code: a reason's code is its position in ``Reason``.
REASON_BY_CODE: tuple[Reason, ...] = tuple(Reason)
#: The field (and Arrow column) holding the optional owner of a scope of each
#: kind: the ``user_id`` of conversation and scene scopes; user and character
#: scopes have none (their user is one of their ids).
SCOPE_OWNER_COLUMN: dict[ScopeKind, str | None] = {
    ScopeKind.USER: None,
    ScopeKind.CHARACTER: None,
    ScopeKind.CONVERSATION: "user_id",
    ScopeKind.SCENE: "user_id",
}

#: Each reason's code.
REASON_CODE: dict[Reason, int] = {reason: code for code, reason in enumerate(REASON_BY_CODE)}

#: The values of a batch row's ``decision``, by code: ``active`` (0), then the
#: reasons in stage order (reason code + 1).
DECISION_NAMES: tuple[str, ...] = ("active", *(reason.value for reason in Reason))


def decision_code(reason: Reason | None) -> int:
    """The batch decision code of an outcome: 0 for a winner, else its reason's code + 1."""
    return 0 if reason is None else REASON_CODE[reason] + 1


# Written into every trace; identifies the contract version, not the package build.
RESOLVER_VERSION = "memresolve-spec-3"
