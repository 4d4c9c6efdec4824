"""The other inputs of a resolution: the retrieval context, and forget tombstones.

Both are frozen and validated once, at construction (``docs/spec.md`` §1.4-1.5).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from memresolve._model import _validate as check
from memresolve._model._records import MISSING, check_scope
from memresolve._model._scopes import (
    CharacterScope,
    ConversationScope,
    SceneScope,
    Scope,
    UserScope,
)
from memresolve._model._sources import (
    check_blocked_sources,
    check_source_salt,
    hashes_of,
    new_source_salt,
)
from memresolve._model._validate import Subject
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "ForgetTombstone",
    "RetrievalContext",
    "check_tombstone_scope",
    "context_pairs",
    "forget_everywhere",
    "identified_contexts",
    "positional_context_id",
]

T = TypeVar("T")


def _keyword_arguments(label: str) -> Callable[[type[T]], type[T]]:
    """Makes the argument errors of a keyword-only dataclass ``InvalidInputError``,
    as ``MemoryRecord``'s are (``docs/spec.md`` §5.2): a positional argument is
    ``wrong-type``, a name that is no field ``unknown-field``, and a required field
    left out arrives as ``MISSING``, for ``__post_init__`` to report as ``missing``
    in its turn (``_given``)."""

    def wrap(cls: type[T]) -> type[T]:
        generated = cls.__init__
        names = [each.name for each in dataclasses.fields(cls)]  # type: ignore[arg-type]
        required = [
            each.name
            for each in dataclasses.fields(cls)  # type: ignore[arg-type]
            if each.default is dataclasses.MISSING and each.default_factory is dataclasses.MISSING
        ]

        @functools.wraps(generated)
        def __init__(self: T, *args: object, **kwargs: Any) -> None:
            if args:
                raise InvalidInputError(
                    f"{label}: {cls.__name__} takes keyword arguments only,"
                    f" got {len(args)} positional",
                    kind=ErrorKind.WRONG_TYPE,
                )
            for name in kwargs:
                if name not in names:
                    Subject(label).fail(
                        name,
                        ErrorKind.UNKNOWN_FIELD,
                        f"is not a field of {cls.__name__} (fields: {', '.join(names)})",
                    )
            for name in required:
                kwargs.setdefault(name, MISSING)
            generated(self, **kwargs)

        setattr(cls, "__init__", __init__)  # noqa: B010 - mypy refuses assigning a method
        return cls

    return wrap


def _given(value: T, subject: Subject, name: str) -> T:
    """``value``, unless the argument was left out (``missing``)."""
    if value is MISSING:
        subject.fail(name, ErrorKind.MISSING, "is missing")
    return value


@_keyword_arguments("context")
@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalContext:
    """Where and when memories are retrieved: the current user, character, conversation, scene.

    ``now`` is required: memresolve never reads the clock, so every worker
    given the same context picks the same winners. ``character_id``,
    ``conversation_id`` and ``scene_id`` may be None: the context then sees no
    character, conversation or scene scope (a profile page, "what do you
    remember about me?", is a context of the user alone). A scene belongs to
    one conversation, so a ``scene_id`` without a ``conversation_id`` is
    ``inconsistent``.
    """

    now: datetime
    user_id: str
    character_id: str | None = None
    conversation_id: str | None = None
    scene_id: str | None = None

    def __post_init__(self) -> None:
        subject = Subject("context")
        object.__setattr__(
            self, "now", check.instant(_given(self.now, subject, "now"), subject, "now")
        )
        user_id = _given(self.user_id, subject, "user_id")
        object.__setattr__(self, "user_id", check.text(user_id, subject, "user_id"))
        for name in ("character_id", "conversation_id", "scene_id"):
            value = check.optional_text(getattr(self, name), subject, name)
            object.__setattr__(self, name, value)
        if self.scene_id is not None and self.conversation_id is None:
            subject.fail(
                "scene_id",
                ErrorKind.INCONSISTENT,
                "names a scene but conversation_id is None (a scene belongs to one conversation)",
            )

    def scopes(self) -> tuple[Scope, ...]:
        """Every scope this context sees (``docs/spec.md`` §1.4): its user; its
        character, when it has one; its conversation, unowned and owned by its
        user, when it has one; and when it has a scene, that scene unowned and
        owned by its user.
        """
        seen: list[Scope] = [UserScope(self.user_id)]
        if self.character_id is not None:
            seen.append(CharacterScope(self.user_id, self.character_id))
        if self.conversation_id is None:
            return tuple(seen)
        seen.append(ConversationScope(self.conversation_id))
        seen.append(ConversationScope(self.conversation_id, user_id=self.user_id))
        if self.scene_id is not None:
            seen.append(SceneScope(self.conversation_id, self.scene_id))
            seen.append(SceneScope(self.conversation_id, self.scene_id, user_id=self.user_id))
        return tuple(seen)


@_keyword_arguments("tombstone")
@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetTombstone:
    """A user's "forget this": blocks ``key`` in ``scope`` for evidence up to a moment.

    A record with the same key and an equal scope whose evidence time
    (``observed_at``, else ``valid_from``) is at or before
    ``blocks_sources_before`` is excluded as ``forgotten``, whatever ``now``
    is. ``blocks_sources_before`` defaults to ``forgotten_at`` and may not be
    later (it would block a fact the user re-tells after the forget). The
    tombstone never holds the forgotten value.

    ``user_wide=True`` (with a ``UserScope`` only) reaches every scope the user
    owns besides its user scope: its characters, and its owned conversations
    and scenes, those created later included; never an unowned one
    (``docs/spec.md`` §1.5).

    ``blocked_sources`` holds salted hashes of the message ids the forgotten
    value came from (``source_salt`` is the salt; ``blocking_sources`` adds
    some): a record with the key in a scope the tombstone reaches that cites
    any of those messages is forgotten too, whatever its times, so a summary
    re-stating the value from the same message stays forgotten. Message ids are
    never kept in clear.
    """

    key: str
    scope: Scope
    forgotten_at: datetime
    blocks_sources_before: datetime = field(default=None)  # type: ignore[assignment]
    user_wide: bool = False
    source_salt: str | None = None
    # Hashes of the user's message ids: with the salt beside them, a guessed id can be
    # checked. Not shown, as a record's message ids are not.
    blocked_sources: frozenset[str] = field(default=frozenset(), repr=False)

    def __post_init__(self) -> None:
        key = check.text(_given(self.key, Subject("tombstone"), "key"), Subject("tombstone"), "key")
        subject = Subject(f"tombstone for key {key!r}")
        object.__setattr__(self, "key", key)
        scope = check_scope(_given(self.scope, subject, "scope"), subject, "scope")
        object.__setattr__(self, "scope", scope)
        forgotten_at = check.instant(
            _given(self.forgotten_at, subject, "forgotten_at"), subject, "forgotten_at"
        )
        object.__setattr__(self, "forgotten_at", forgotten_at)
        bound = (
            forgotten_at
            if self.blocks_sources_before is None
            else check.instant(self.blocks_sources_before, subject, "blocks_sources_before")
        )
        if bound > forgotten_at:
            subject.fail(
                "blocks_sources_before",
                ErrorKind.INCONSISTENT,
                "is later than forgotten_at; it would block a fact re-told after the forget",
            )
        object.__setattr__(self, "blocks_sources_before", bound)
        if not isinstance(self.user_wide, bool):
            subject.fail(
                "user_wide",
                ErrorKind.WRONG_TYPE,
                f"must be True or False, got {type(self.user_wide).__name__}",
            )
        if self.user_wide and not isinstance(scope, UserScope):
            subject.fail(
                "user_wide",
                ErrorKind.INCONSISTENT,
                f"is True with a {scope.kind.value} scope; a user-wide tombstone is on the "
                "user's scope (UserScope)",
            )
        salt = None if self.source_salt is None else check_source_salt(self.source_salt, subject)
        object.__setattr__(self, "source_salt", salt)
        hashes = check_blocked_sources(self.blocked_sources, subject)
        if hashes and salt is None:
            subject.fail(
                "source_salt",
                ErrorKind.MISSING,
                "is None but blocked_sources is not empty (the hashes were made with a salt;"
                " blocking_sources() makes both)",
            )
        object.__setattr__(self, "blocked_sources", hashes)

    def blocking_sources(self, message_ids: Iterable[str]) -> ForgetTombstone:
        """This tombstone, also blocking records that cite any of ``message_ids``.

        The ids are hashed with the tombstone's salt (a fresh one when it has
        none); the hashes join ``blocked_sources``.

        Raises:
            InvalidInputError: ``message_ids`` is not an iterable of non-empty str.
        """
        subject = Subject(f"tombstone for key {self.key!r}")
        checked = check.text_tuple(message_ids, subject, "message_ids")
        salt = new_source_salt() if self.source_salt is None else self.source_salt
        return dataclasses.replace(
            self,
            source_salt=salt,
            blocked_sources=self.blocked_sources | hashes_of(salt, checked),
        )

    def __setstate__(self, state: object) -> None:
        # The state is the fields in order (dataclass slots); pickles of 0.1 hold four
        # and of 0.2's first builds five: the later fields then take their defaults.
        names = [each.name for each in dataclasses.fields(self)]
        defaults: tuple[object, ...] = (False, None, frozenset())
        if not isinstance(state, list | tuple) or not 4 <= len(state) <= len(names):
            raise TypeError(f"ForgetTombstone: cannot restore from a {type(state).__name__}")
        filled = (*state, *defaults[len(state) - 4 :])
        for name, value in zip(names, filled, strict=True):
            object.__setattr__(self, name, value)


def forget_everywhere(
    key: str, context: RetrievalContext, *, at: datetime
) -> tuple[ForgetTombstone, ...]:
    """The tombstones that forget ``key`` in every scope ``context`` sees, at ``at``.

    One per scope of ``RetrievalContext.scopes``: the user's, and the
    character's, the conversation's and the scene's when the context has them
    (the conversation and scene each unowned and owned by the context's user).
    "Forget my city" is then one call for everything this turn could show; a
    context of the user alone forgets the user scope only. Evidence observed
    up to ``at`` is blocked. Scopes the context does not see (the same user's
    other characters, other conversations) are untouched.

    Raises:
        InvalidInputError: ``key`` or ``at`` breaks a rule, or ``context`` is
            not a ``RetrievalContext``.
    """
    if not isinstance(context, RetrievalContext):
        Subject("forget_everywhere").fail(
            "context",
            ErrorKind.WRONG_TYPE,
            f"must be a RetrievalContext, got {type(context).__name__}",
        )
    return tuple(
        ForgetTombstone(key=key, scope=scope, forgotten_at=at) for scope in context.scopes()
    )


def check_tombstone_scope(tombstone: ForgetTombstone, row: int) -> Scope:
    """The scope rule again, at resolve time (see ``_records.check_scope``): the
    tombstone's scope, normalised.

    The reference checks every tombstone with it; the native kernel calls it
    for a scope its fast path does not take, so both raise the same error.
    """
    return check_scope(tombstone.scope, Subject(f"tombstones[{row}]"), "scope")


def positional_context_id(position: int) -> str:
    """The id of a context given without one: its 1-based position among the contexts of
    its call or file, as text (``"1"``, ``"2"``...), the same in every form."""
    return str(position + 1)


def context_pairs(
    contexts: object, field: str = "contexts"
) -> tuple[tuple[str | None, RetrievalContext], ...]:
    """The contexts of a call that takes several, each with the id it was given (None:
    none given), checked: a mapping of ``context_id`` to ``RetrievalContext``, or an
    iterable whose items are ``(context_id, RetrievalContext)`` pairs or bare contexts.

    A mapping whose values are not contexts (a dict of columns) names the first such key.
    """
    if isinstance(contexts, Mapping):
        pairs: list[tuple[str | None, RetrievalContext]] = []
        for key, context in contexts.items():
            subject = Subject(f"{field}[{key!r:.60}]")
            context_id = check.any_text(key, subject, "context_id")
            if not isinstance(context, RetrievalContext):
                raise InvalidInputError(
                    f"{subject.label}: expected a RetrievalContext, got {type(context).__name__}"
                    " (a mapping of context_id to RetrievalContext; columns go in an Arrow"
                    " table)",
                    kind=ErrorKind.WRONG_TYPE,
                    field=field,
                )
            pairs.append((context_id, context))
        return tuple(pairs)
    if isinstance(contexts, str | bytes) or not isinstance(contexts, Iterable):
        raise InvalidInputError(
            f"{field}: expected a mapping of context_id to RetrievalContext, or an iterable of"
            f" RetrievalContext or (context_id, RetrievalContext) pairs, got"
            f" {type(contexts).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field=field,
        )
    checked: list[tuple[str | None, RetrievalContext]] = []
    for row, item in enumerate(contexts):
        if isinstance(item, RetrievalContext):
            checked.append((None, item))
            continue
        if not (
            isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], RetrievalContext)
        ):
            raise InvalidInputError(
                f"{field}[{row}]: expected a RetrievalContext or a (context_id,"
                f" RetrievalContext) pair, got {type(item).__name__}",
                kind=ErrorKind.WRONG_TYPE,
                field=field,
                row=row,
            )
        checked.append((check.any_text(item[0], Subject(f"{field}[{row}]"), "context_id"), item[1]))
    return tuple(checked)


def identified_contexts(
    pairs: tuple[tuple[str | None, RetrievalContext], ...], field: str = "contexts"
) -> tuple[tuple[str, RetrievalContext], ...]:
    """``context_pairs``' pairs, each with its id (its position when given none), checked
    unique: a repeated id is ``duplicate-id`` at the later one, as the readers say."""
    first_row_of: dict[str, int] = {}
    identified: list[tuple[str, RetrievalContext]] = []
    for row, (given, context) in enumerate(pairs):
        context_id = positional_context_id(row) if given is None else given
        earlier = first_row_of.setdefault(context_id, row)
        if earlier != row:
            raise InvalidInputError(
                f"{field}[{row}]: context_id {context_id!r:.60} repeats the id of"
                f" {field}[{earlier}]",
                kind=ErrorKind.DUPLICATE_ID,
                field="context_id",
                row=row,
            )
        identified.append((context_id, context))
    return tuple(identified)
