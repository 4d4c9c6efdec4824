"""Scopes: a tagged union compared structurally, and its injective identifier.

``docs/spec.md`` §1.1-1.2. Each class's fields are its kind's ids, named as in
``SCOPE_ID_COLUMNS``, then, for conversation and scene scopes, the optional
owner ``user_id`` (``SCOPE_OWNER_COLUMN``); a test keeps the classes and the
tables equal.

Scopes are built on every record a loader reads, so their constructors take
the common case (an exact, non-empty ASCII ``str``, which cannot hold a lone
surrogate) inline, without a call; anything else goes through the one rule,
``_validate.text``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from memresolve._model._types import SCOPE_ID_COLUMNS, SCOPE_OWNER_COLUMN, ScopeKind
from memresolve._model._validate import Subject, text
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "SCOPE_TYPES",
    "CharacterScope",
    "ConversationScope",
    "SceneScope",
    "Scope",
    "UserScope",
    "make_scope",
    "scope_from_id",
    "scope_id",
    "scope_owner",
    "seen_scope_ids",
]


@dataclass(frozen=True, slots=True, init=False)
class UserScope:
    """Facts about the user, visible with every character and in every conversation."""

    user_id: str
    kind: ClassVar[ScopeKind] = ScopeKind.USER

    def __init__(self, user_id: str) -> None:
        if type(user_id) is not str or not user_id or not user_id.isascii():
            user_id = text(user_id, Subject("UserScope"), "user_id")
        _set_user_user_id(self, user_id)

    @property
    def fields(self) -> tuple[str, ...]:
        """The scope's ids, in scope-id order."""
        return (self.user_id,)


@dataclass(frozen=True, slots=True, init=False)
class CharacterScope:
    """Facts one user shares with one character."""

    user_id: str
    character_id: str
    kind: ClassVar[ScopeKind] = ScopeKind.CHARACTER

    def __init__(self, user_id: str, character_id: str) -> None:
        if type(user_id) is not str or not user_id or not user_id.isascii():
            user_id = text(user_id, Subject("CharacterScope"), "user_id")
        if type(character_id) is not str or not character_id or not character_id.isascii():
            character_id = text(character_id, Subject("CharacterScope"), "character_id")
        _set_character_user_id(self, user_id)
        _set_character_character_id(self, character_id)

    @property
    def fields(self) -> tuple[str, ...]:
        """The scope's ids, in scope-id order."""
        return (self.user_id, self.character_id)


@dataclass(frozen=True, slots=True, init=False)
class ConversationScope:
    """Facts of one conversation; with an owner ``user_id``, visible to that user only.

    Conversation ids minted per user (``conv-1``, ...) collide across users:
    give the owner and the scope fails closed (``docs/spec.md`` §1.1).
    """

    conversation_id: str
    user_id: str | None
    kind: ClassVar[ScopeKind] = ScopeKind.CONVERSATION

    def __init__(self, conversation_id: str, *, user_id: str | None = None) -> None:
        if type(conversation_id) is not str or not conversation_id or not conversation_id.isascii():
            conversation_id = text(conversation_id, Subject("ConversationScope"), "conversation_id")
        if user_id is not None and (
            type(user_id) is not str or not user_id or not user_id.isascii()
        ):
            user_id = text(user_id, Subject("ConversationScope"), "user_id")
        _set_conversation_conversation_id(self, conversation_id)
        _set_conversation_user_id(self, user_id)

    @property
    def fields(self) -> tuple[str, ...]:
        """The scope's ids, in scope-id order (the owner is not one of them)."""
        return (self.conversation_id,)


@dataclass(frozen=True, slots=True, init=False)
class SceneScope:
    """Facts of one scene of a conversation; never visible when no scene is current.

    With an owner ``user_id``, visible to that user only.
    """

    conversation_id: str
    scene_id: str
    user_id: str | None
    kind: ClassVar[ScopeKind] = ScopeKind.SCENE

    def __init__(self, conversation_id: str, scene_id: str, *, user_id: str | None = None) -> None:
        if type(conversation_id) is not str or not conversation_id or not conversation_id.isascii():
            conversation_id = text(conversation_id, Subject("SceneScope"), "conversation_id")
        if type(scene_id) is not str or not scene_id or not scene_id.isascii():
            scene_id = text(scene_id, Subject("SceneScope"), "scene_id")
        if user_id is not None and (
            type(user_id) is not str or not user_id or not user_id.isascii()
        ):
            user_id = text(user_id, Subject("SceneScope"), "user_id")
        _set_scene_conversation_id(self, conversation_id)
        _set_scene_scene_id(self, scene_id)
        _set_scene_user_id(self, user_id)

    @property
    def fields(self) -> tuple[str, ...]:
        """The scope's ids, in scope-id order (the owner is not one of them)."""
        return (self.conversation_id, self.scene_id)


Scope: TypeAlias = UserScope | CharacterScope | ConversationScope | SceneScope
SCOPE_TYPES: tuple[type[Scope], ...] = (UserScope, CharacterScope, ConversationScope, SceneScope)
SCOPE_TYPE_OF: dict[ScopeKind, type[Scope]] = {scope.kind: scope for scope in SCOPE_TYPES}


def _seal(scope: type[Scope]) -> dict[str, Callable[[object, object], None]]:
    """Makes ``scope``'s fields read-only for good, and returns their slot setters.

    A frozen dataclass refuses ``setattr``, but ``object.__setattr__`` writes a slot
    anyway, and a scope altered after a record was built would be read one way by the
    native core (which copied it) and another by the reference. Each field becomes a
    read-only property over its slot, so that write fails like any read-only attribute;
    ``__init__`` writes through the slot itself (cheaper than ``object.__setattr__``,
    which matters: a scope is built per record a loader reads).
    """
    setters: dict[str, Callable[[object, object], None]] = {}
    for name in (f.name for f in dataclasses.fields(scope)):
        slot = scope.__dict__[name]
        setters[name] = slot.__set__
        setattr(scope, name, property(slot.__get__, doc=f"The scope's {name} (read-only)."))
    return setters


def _rebuilt(kind: ScopeKind, ids: tuple[str, ...], owner: str | None) -> Scope:
    return make_scope(kind, ids, owner)


def _reduce(self: Scope) -> tuple[object, ...]:
    # The dataclass's own pickling writes fields with object.__setattr__, which the sealed
    # fields refuse: a scope pickles as the call that builds it.
    return (_rebuilt, (self.kind, self.fields, scope_owner(self)))


for _scope in SCOPE_TYPES:
    _scope.__reduce__ = _reduce  # type: ignore[method-assign,assignment]
    for _name in ("__getstate__", "__setstate__"):
        if _name in _scope.__dict__:
            delattr(_scope, _name)

_USER = _seal(UserScope)
_CHARACTER = _seal(CharacterScope)
_CONVERSATION = _seal(ConversationScope)
_SCENE = _seal(SceneScope)
# Module globals, not a table lookup per call: a scope is built per record a loader reads.
_set_user_user_id = _USER["user_id"]
_set_character_user_id = _CHARACTER["user_id"]
_set_character_character_id = _CHARACTER["character_id"]
_set_conversation_conversation_id = _CONVERSATION["conversation_id"]
_set_conversation_user_id = _CONVERSATION["user_id"]
_set_scene_conversation_id = _SCENE["conversation_id"]
_set_scene_scene_id = _SCENE["scene_id"]
_set_scene_user_id = _SCENE["user_id"]


def make_scope(kind: ScopeKind, ids: Sequence[object], owner: object = None) -> Scope:
    """The scope of ``kind`` with ``ids`` (in scope-id order) and ``owner`` (checked as
    the constructor checks them; an owner is only given to a kind that has one)."""
    match kind:
        case ScopeKind.USER:
            (user_id,) = ids
            return UserScope(user_id)  # type: ignore[arg-type]
        case ScopeKind.CHARACTER:
            user_id, character_id = ids
            return CharacterScope(user_id, character_id)  # type: ignore[arg-type]
        case ScopeKind.CONVERSATION:
            (conversation_id,) = ids
            return ConversationScope(conversation_id, user_id=owner)  # type: ignore[arg-type]
        case ScopeKind.SCENE:
            conversation_id, scene_id = ids
            return SceneScope(conversation_id, scene_id, user_id=owner)  # type: ignore[arg-type]


def scope_owner(scope: Scope) -> str | None:
    """The owner of a conversation or scene scope, ``None`` when unowned or of another kind."""
    column = SCOPE_OWNER_COLUMN[scope.kind]
    owner: str | None = None if column is None else getattr(scope, column)
    return owner


def _escape(field: str) -> str:
    # "%" first: afterwards every "%" in the output starts an escape, so no
    # field can forge the ":" separator and the encoding is reversible.
    return field.replace("%", "%25").replace(":", "%3A")


def _unescape(field: str) -> str:
    return field.replace("%3A", ":").replace("%25", "%")


def seen_scope_ids(
    user_id: str, character_id: str | None, conversation_id: str | None, scene_id: str | None
) -> tuple[str, ...]:
    """``scope_id`` of each scope a context of these ids sees, in the order of
    ``RetrievalContext.scopes``, without building the scopes: for a context, whose ids are
    checked already, each id is escaped once and none is checked again (a store's turn
    that misses its cache asks this).

    >>> seen_scope_ids("u1", "c1", "k1", None)
    ('user:u1', 'character:u1:c1', 'conversation:k1', 'conversation:k1::u1')
    >>> seen_scope_ids("u1", None, None, None)
    ('user:u1',)
    """
    user = _escape(user_id)
    seen = [f"{ScopeKind.USER.value}:{user}"]
    if character_id is not None:
        seen.append(f"{ScopeKind.CHARACTER.value}:{user}:{_escape(character_id)}")
    if conversation_id is None:
        return tuple(seen)
    conversation = _escape(conversation_id)
    seen += [
        f"{ScopeKind.CONVERSATION.value}:{conversation}",
        f"{ScopeKind.CONVERSATION.value}:{conversation}::{user}",
    ]
    if scene_id is not None:
        scene = f"{ScopeKind.SCENE.value}:{conversation}:{_escape(scene_id)}"
        seen += [scene, f"{scene}::{user}"]
    return tuple(seen)


def scope_id(scope: Scope) -> str:
    """The canonical, injective string for ``scope``: kind, then each field escaped, by ``:``.

    An owned scope adds ``::`` and its escaped owner (fields are never empty,
    so ``::`` never occurs otherwise). Unowned ids without ``:`` or ``%`` are
    the tutorial's strings:

    >>> scope_id(CharacterScope("u1", "c1"))
    'character:u1:c1'
    >>> scope_id(CharacterScope("a:b", "c")) != scope_id(CharacterScope("a", "b:c"))
    True
    >>> scope_id(ConversationScope("k1", user_id="u1"))
    'conversation:k1::u1'
    """
    if type(scope) not in SCOPE_TYPES:
        raise InvalidInputError(
            f"scope: expected UserScope, CharacterScope, ConversationScope or SceneScope, got"
            f" {type(scope).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="scope",
        )
    text_id = ":".join((scope.kind.value, *map(_escape, scope.fields)))
    owner = scope_owner(scope)
    return text_id if owner is None else f"{text_id}::{_escape(owner)}"


def scope_from_id(text_id: str) -> Scope:
    """The scope whose ``scope_id`` is ``text_id``: the exact inverse of ``scope_id``.

    >>> scope_from_id("scene:k1:s%3A2::u1")
    SceneScope(conversation_id='k1', scene_id='s:2', user_id='u1')

    Raises:
        InvalidInputError: ``text_id`` is not the ``scope_id`` of any scope
            (kind ``malformed``, or the scope's own error for a bad id).
    """
    if not isinstance(text_id, str):
        raise InvalidInputError(
            f"scope id: expected a str, got {type(text_id).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="scope_id",
        )
    head, marker, owner = text_id.partition("::")
    kind_name, _, rest = head.partition(":")
    try:
        kind = ScopeKind(kind_name)
    except ValueError:
        kind = None
    parts = rest.split(":") if rest else []
    wanted = None if kind is None else len(SCOPE_ID_COLUMNS[kind])
    owned_ok = not marker or (kind is not None and SCOPE_OWNER_COLUMN[kind] is not None)
    if kind is None or len(parts) != wanted or not owned_ok or "::" in owner:
        raise InvalidInputError(
            f"scope id {text_id!r} is not the id of a scope"
            " (kind:id[:id][::owner], each field escaped)",
            kind=ErrorKind.MALFORMED,
            field="scope_id",
        )
    fields = [_unescape(part) for part in parts]
    scope = make_scope(kind, fields, _unescape(owner) if marker else None)
    if scope_id(scope) != text_id:  # a field escaped differently: "%3a", a stray "%"
        raise InvalidInputError(
            f"scope id {text_id!r} is not in canonical form (it should read {scope_id(scope)!r})",
            kind=ErrorKind.MALFORMED,
            field="scope_id",
        )
    return scope
