"""The inputs of a resolution: memory records, the retrieval context, forget tombstones.

All three are frozen and validated once, at construction (SPEC §1): a value
that exists is a valid one, so both backends see exactly the same domain.
``repr`` never shows a record's ``value``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from memresolve import _validate as check
from memresolve._scopes import SCOPE_TYPES, Scope
from memresolve._types import Authority, Status
from memresolve._validate import Subject

__all__ = ["ForgetTombstone", "MemoryRecord", "RetrievalContext"]

_SCOPE_TYPE_NAMES = "UserScope, CharacterScope, ConversationScope or SceneScope"


def _scope(value: object, subject: Subject, field_name: str) -> Scope:
    # Exactly these classes: a subclass could change equality or its kind and so
    # meet, or pose as, another scope.
    if type(value) not in SCOPE_TYPES:
        subject.fail(field_name, f"must be a {_SCOPE_TYPE_NAMES}, got {type(value).__name__}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, init=False)
class MemoryRecord:
    """One stored memory: a value for a semantic ``key`` in a ``scope``, with its lifecycle.

    All arguments are keyword-only. ``status`` and ``authority`` take an enum
    member or its string value (``"user-corrected"``). ``observed_at`` is when
    the evidence behind the record was observed (for a summary, its oldest
    source); ``None`` means ``valid_from``.

    Raises:
        InvalidInputError: a field breaks a rule of SPEC §1; the error names the
            record id and the field.
    """

    id: str
    key: str
    value: str = field(repr=False)  # may be private text: never shown, never logged
    scope: Scope
    status: Status
    authority: Authority
    confidence: float
    valid_from: datetime
    valid_until: datetime | None
    source_message_ids: tuple[str, ...]
    supersedes: str | None
    version: int
    observed_at: datetime | None

    def __init__(
        self,
        *,
        id: str,
        key: str,
        value: str,
        scope: Scope,
        status: Status | str,
        authority: Authority | str,
        confidence: float,
        valid_from: datetime,
        valid_until: datetime | None = None,
        source_message_ids: Iterable[str] = (),
        supersedes: str | None = None,
        version: int,
        observed_at: datetime | None = None,
    ) -> None:
        record_id = check.text(id, Subject("record"), "id")
        subject = Subject(f"record {record_id!r}", record_id)
        fields = {
            "id": record_id,
            "key": check.text(key, subject, "key"),
            "value": check.any_text(value, subject, "value"),
            "scope": _scope(scope, subject, "scope"),
            "status": check.enum_member(status, Status, subject, "status"),
            "authority": check.enum_member(authority, Authority, subject, "authority"),
            "confidence": check.confidence(confidence, subject, "confidence"),
            "valid_from": check.instant(valid_from, subject, "valid_from"),
            "valid_until": check.optional_instant(valid_until, subject, "valid_until"),
            "source_message_ids": check.text_tuple(
                source_message_ids, subject, "source_message_ids"
            ),
            "supersedes": check.optional_text(supersedes, subject, "supersedes"),
            "version": check.int64(version, subject, "version"),
            "observed_at": check.optional_instant(observed_at, subject, "observed_at"),
        }
        for name, checked in fields.items():
            object.__setattr__(self, name, checked)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalContext:
    """Where and when memories are retrieved: the current user, character, conversation, scene.

    ``now`` is required: memresolve never reads the clock, so every worker
    given the same context picks the same winners.
    """

    now: datetime
    user_id: str
    character_id: str
    conversation_id: str
    scene_id: str | None = None

    def __post_init__(self) -> None:
        subject = Subject("context")
        object.__setattr__(self, "now", check.instant(self.now, subject, "now"))
        for name in ("user_id", "character_id", "conversation_id"):
            object.__setattr__(self, name, check.text(getattr(self, name), subject, name))
        object.__setattr__(
            self, "scene_id", check.optional_text(self.scene_id, subject, "scene_id")
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetTombstone:
    """A user's "forget this": blocks ``key`` in ``scope`` for evidence up to a moment.

    A record with the same key and an equal scope whose evidence time
    (``observed_at``, else ``valid_from``) is at or before
    ``blocks_sources_before`` is excluded as ``forgotten``, whatever ``now``
    is. The tombstone never holds the forgotten value.
    """

    key: str
    scope: Scope
    forgotten_at: datetime
    blocks_sources_before: datetime

    def __post_init__(self) -> None:
        key = check.text(self.key, Subject("tombstone"), "key")
        subject = Subject(f"tombstone for key {key!r}")
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "scope", _scope(self.scope, subject, "scope"))
        object.__setattr__(
            self, "forgotten_at", check.instant(self.forgotten_at, subject, "forgotten_at")
        )
        object.__setattr__(
            self,
            "blocks_sources_before",
            check.instant(self.blocks_sources_before, subject, "blocks_sources_before"),
        )
