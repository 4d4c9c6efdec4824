"""Scopes: a tagged union compared structurally, and its injective identifier.

``docs/spec.md`` §1.1-1.2. Each class's fields are its kind's ids, named as in
``SCOPE_ID_COLUMNS`` (a test keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from memresolve._types import ScopeKind
from memresolve._validate import Subject, text

__all__ = [
    "CharacterScope",
    "ConversationScope",
    "SceneScope",
    "Scope",
    "UserScope",
    "scope_id",
]


@dataclass(frozen=True, slots=True)
class UserScope:
    """Facts about the user, visible with every character and in every conversation."""

    user_id: str
    kind: ClassVar[ScopeKind] = ScopeKind.USER

    def __post_init__(self) -> None:
        object.__setattr__(self, "user_id", text(self.user_id, Subject("UserScope"), "user_id"))

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.user_id,)


@dataclass(frozen=True, slots=True)
class CharacterScope:
    """Facts one user shares with one character."""

    user_id: str
    character_id: str
    kind: ClassVar[ScopeKind] = ScopeKind.CHARACTER

    def __post_init__(self) -> None:
        subject = Subject("CharacterScope")
        object.__setattr__(self, "user_id", text(self.user_id, subject, "user_id"))
        object.__setattr__(self, "character_id", text(self.character_id, subject, "character_id"))

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.user_id, self.character_id)


@dataclass(frozen=True, slots=True)
class ConversationScope:
    """Facts of one conversation."""

    conversation_id: str
    kind: ClassVar[ScopeKind] = ScopeKind.CONVERSATION

    def __post_init__(self) -> None:
        subject = Subject("ConversationScope")
        object.__setattr__(
            self, "conversation_id", text(self.conversation_id, subject, "conversation_id")
        )

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.conversation_id,)


@dataclass(frozen=True, slots=True)
class SceneScope:
    """Facts of one scene of a conversation; never visible when no scene is current."""

    conversation_id: str
    scene_id: str
    kind: ClassVar[ScopeKind] = ScopeKind.SCENE

    def __post_init__(self) -> None:
        subject = Subject("SceneScope")
        object.__setattr__(
            self, "conversation_id", text(self.conversation_id, subject, "conversation_id")
        )
        object.__setattr__(self, "scene_id", text(self.scene_id, subject, "scene_id"))

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.conversation_id, self.scene_id)


Scope: TypeAlias = UserScope | CharacterScope | ConversationScope | SceneScope
SCOPE_TYPES = (UserScope, CharacterScope, ConversationScope, SceneScope)


def _escape(field: str) -> str:
    # "%" first: afterwards every "%" in the output starts an escape, so no
    # field can forge the ":" separator and the encoding is reversible.
    return field.replace("%", "%25").replace(":", "%3A")


def scope_id(scope: Scope) -> str:
    """The canonical, injective string for ``scope``: kind, then each field escaped, by ``:``.

    Ids without ``:`` or ``%`` give the tutorial's strings:

    >>> scope_id(CharacterScope("u1", "c1"))
    'character:u1:c1'
    >>> scope_id(CharacterScope("a:b", "c")) != scope_id(CharacterScope("a", "b:c"))
    True
    """
    return ":".join((scope.kind, *map(_escape, scope.fields)))
