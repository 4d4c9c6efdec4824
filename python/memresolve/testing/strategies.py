"""Hypothesis strategies for memresolve inputs, built to provoke collisions.

Everything is drawn from small pools so that ids, keys and scopes collide:
ids over an alphabet that includes ``:`` and ``%`` (the characters the scope
id escapes) and a non-BMP character, instants clustered on ``now`` (equal,
one microsecond either side, a day either side) and expressed in several UTC
offsets, equal versions and authorities, supersession chains, cycles,
self-references and dangling edges, contexts with and without a character, a
conversation and a scene.
Requires ``hypothesis`` (``pip install 'memresolve[testing]'``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "memresolve.testing needs Hypothesis: pip install 'memresolve[testing]'"
    ) from exc

from memresolve._model import (
    INT64_MAX,
    INT64_MIN,
    Authority,
    CharacterScope,
    ConversationScope,
    ForgetTombstone,
    MemoryRecord,
    RetrievalContext,
    SceneScope,
    Scope,
    Status,
    Subject,
    UserScope,
    instant,
    source_hash,
)
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "BASE_NOW",
    "ID_ALPHABET",
    "MESSAGE_IDS",
    "Scenario",
    "Store",
    "Universe",
    "authorities",
    "confidences",
    "contexts",
    "identifiers",
    "instants",
    "memory_records",
    "scenarios",
    "scopes",
    "statuses",
    "stores",
    "tombstones",
    "universes",
    "versions",
]

#: Characters ids are drawn from: ``:`` and ``%`` (escaped in scope ids), ``A``
#: (sorts before lowercase), ``é`` (sorts differently under locale rules) and
#: U+1D518 MATHEMATICAL FRAKTUR CAPITAL U (outside the BMP: UTF-16 order would
#: differ from code-point order).
ID_ALPHABET = ("a", "b", "A", ":", "%", "é", "\U0001d518")

#: Message ids records cite and hashed tombstones block, often enough to meet.
MESSAGE_IDS = ("m1", "m2", "m\U0001d518")

#: Salts of drawn tombstones: fixed, so a failing example replays exactly.
_SALTS = ("00" * 16, "5a" * 24)

#: The default ``now`` that instants cluster around.
BASE_NOW = datetime(2026, 7, 30, 12, 0, tzinfo=UTC)

# Values are never read by resolution; these characters exercise JSON escaping.
_VALUE_ALPHABET = (*ID_ALPHABET, " ", "\n", '"', "\\", "\u0000", "\u2028")

_OFFSETS = (
    UTC,
    timezone(timedelta(hours=2)),
    timezone(timedelta(hours=-9, minutes=-30)),
    timezone(timedelta(hours=14)),
)
_DAY = timedelta(days=1)
_NEAR = (
    timedelta(0),
    timedelta(microseconds=1),
    -timedelta(microseconds=1),
    timedelta(days=1),
    -timedelta(days=1),
)


def identifiers(max_size: int = 3) -> st.SearchStrategy[str]:
    """Short non-empty ids over ``ID_ALPHABET``: they collide often, by design."""
    return st.text(alphabet=st.sampled_from(ID_ALPHABET), min_size=1, max_size=max_size)


def instants(around: datetime = BASE_NOW) -> st.SearchStrategy[datetime]:
    """Instants on or next to ``around`` (mostly), in one of several UTC offsets."""
    around = _checked_now(around, "around")
    near = st.sampled_from(_NEAR)
    anywhere = st.integers(-60 * 86_400_000_000, 60 * 86_400_000_000).map(
        lambda us: timedelta(microseconds=us)
    )
    shift = st.one_of(near, near, anywhere)
    return st.builds(
        lambda delta, tz: (around + delta).astimezone(tz), shift, st.sampled_from(_OFFSETS)
    )


def statuses() -> st.SearchStrategy[Status]:
    """Mostly ``active``: other statuses exclude early and hide the later stages."""
    return st.sampled_from((Status.ACTIVE,) * 8 + tuple(Status))


def authorities() -> st.SearchStrategy[Authority]:
    return st.sampled_from(tuple(Authority))


def confidences() -> st.SearchStrategy[float]:
    """The thresholds of the prompt projection, and anything in between."""
    edges = st.sampled_from((0.0, 0.5, 0.8499999999999999, 0.85, 1.0))
    return st.one_of(edges, st.floats(0.0, 1.0, allow_nan=False))


def versions() -> st.SearchStrategy[int]:
    """Small, often equal, versions, and the ends of the signed 64-bit range."""
    return st.one_of(st.integers(-1, 3), st.sampled_from((INT64_MIN, INT64_MAX)))


@dataclass(frozen=True)
class Universe:
    """Small pools of ids that records, contexts and tombstones all draw from."""

    user_ids: tuple[str, ...]
    character_ids: tuple[str, ...]
    conversation_ids: tuple[str, ...]
    scene_ids: tuple[str, ...]
    keys: tuple[str, ...]


def _mostly_first(pool: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Any id of ``pool``, its first twice as often: records and contexts then often meet."""
    return st.sampled_from((pool[0], pool[0], *pool))


def _pool(max_size: int) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(identifiers(), min_size=1, max_size=max_size, unique=True).map(tuple)


def universes(max_users: int = 2) -> st.SearchStrategy[Universe]:
    """One or two ids per role (up to ``max_users`` users), so that records usually share
    their context's scopes."""
    return st.builds(Universe, _pool(max_users), _pool(2), _pool(2), _pool(2), _pool(3))


def _checked_now(now: object, field: str = "now") -> datetime:
    return instant(now, Subject("argument"), field)


def _checked_universe(universe: object) -> Universe:
    if not isinstance(universe, Universe):
        raise InvalidInputError(
            f"universe: expected a Universe, got {type(universe).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="universe",
        )
    return universe


def scopes(universe: Universe) -> st.SearchStrategy[Scope]:
    """A scope of any kind whose ids come from ``universe``.

    Conversation and scene scopes are unowned or owned by one of the
    universe's users, and every user shares the same conversation ids: a
    context of one user meets the owned scopes of another (which it must
    not see) and the unowned ones (which it must).
    """
    universe = _checked_universe(universe)
    users = _mostly_first(universe.user_ids)
    owners = st.one_of(st.none(), st.sampled_from(universe.user_ids))
    conversations = _mostly_first(universe.conversation_ids)
    return st.one_of(
        st.builds(UserScope, users),
        st.builds(CharacterScope, users, _mostly_first(universe.character_ids)),
        st.builds(ConversationScope, conversations, user_id=owners),
        st.builds(SceneScope, conversations, _mostly_first(universe.scene_ids), user_id=owners),
    )


def contexts(
    universe: Universe | None = None, now: datetime = BASE_NOW
) -> st.SearchStrategy[RetrievalContext]:
    """A context in ``universe`` (drawn if not given), with or without a character, a
    conversation and a scene."""
    now = _checked_now(now)
    if universe is not None:
        universe = _checked_universe(universe)
    pools = st.just(universe) if universe is not None else universes()
    return pools.flatmap(lambda u: _contexts_in(u, now))


def _sometimes_none(pool: tuple[str, ...]) -> st.SearchStrategy[str | None]:
    """An id of ``pool`` as ``_mostly_first`` draws it, or now and then None."""
    return st.sampled_from((pool[0], pool[0], *pool, None))


@st.composite
def _contexts_in(draw: st.DrawFn, universe: Universe, now: datetime) -> RetrievalContext:
    """A context of ``universe``; its character, conversation and scene are each sometimes
    None (a profile page's context, or a turn outside any conversation), never a scene
    without its conversation."""
    conversation_id = draw(_sometimes_none(universe.conversation_ids))
    scene_ids = (
        st.none()
        if conversation_id is None
        else st.one_of(st.none(), _mostly_first(universe.scene_ids))
    )
    return RetrievalContext(
        now=draw(st.sampled_from((now, now.astimezone(_OFFSETS[2])))),
        user_id=draw(_mostly_first(universe.user_ids)),
        character_id=draw(_sometimes_none(universe.character_ids)),
        conversation_id=conversation_id,
        scene_id=draw(scene_ids),
    )


def memory_records(
    universe: Universe,
    *,
    record_id: st.SearchStrategy[str] | None = None,
    supersedes: st.SearchStrategy[str | None] | None = None,
    now: datetime = BASE_NOW,
) -> st.SearchStrategy[MemoryRecord]:
    """One record in ``universe``; every field drawn to sit on a decision boundary."""
    universe = _checked_universe(universe)
    now = _checked_now(now)
    return st.builds(
        MemoryRecord,
        id=record_id if record_id is not None else identifiers(4),
        key=_mostly_first(universe.keys),
        value=st.text(alphabet=st.sampled_from(_VALUE_ALPHABET), max_size=6),
        scope=scopes(universe),
        status=statuses(),
        authority=authorities(),
        confidence=confidences(),
        # Mostly inside the interval, so that the later stages get candidates.
        valid_from=st.one_of(instants(now - _DAY), instants(now)),
        valid_until=st.one_of(st.none(), instants(now + _DAY), instants(now)),
        source_message_ids=_CITED,
        supersedes=supersedes if supersedes is not None else st.none() | identifiers(4),
        version=versions(),
        observed_at=st.one_of(st.none(), instants(now)),
    )


# Built once: a strategy built per draw is validated per draw, which costs more than drawing.
_MESSAGE = st.one_of(st.sampled_from(MESSAGE_IDS), identifiers())
_CITED = st.lists(_MESSAGE, max_size=2).map(tuple)
_BLOCKED = st.one_of(st.none(), st.none(), st.lists(_MESSAGE, max_size=2))


@st.composite
def tombstones(draw: st.DrawFn, universe: Universe, now: datetime = BASE_NOW) -> ForgetTombstone:
    """A tombstone on a key and scope of ``universe``, near ``now``.

    Its bound is left to default to ``forgotten_at``, or drawn at or before it
    (a later bound is an input error, ``docs/spec.md`` §1.5). A tombstone on a user
    scope is user-wide half the time (it then reaches every scope its user owns). A
    third of tombstones block messages of ``MESSAGE_IDS`` by their salted hashes (and
    now and then one no record cites); some have a salt and no hash.
    """
    forgotten_at = draw(instants(now))
    bound = draw(st.one_of(st.none(), instants(now).filter(lambda b: b <= forgotten_at)))
    scope = draw(scopes(universe))
    blocked = draw(_BLOCKED)
    salt = None if blocked is None else draw(st.sampled_from(_SALTS))
    return ForgetTombstone(
        key=draw(st.sampled_from(universe.keys)),
        scope=scope,
        forgotten_at=forgotten_at,
        blocks_sources_before=bound,  # type: ignore[arg-type]  # None: the default
        user_wide=isinstance(scope, UserScope) and draw(st.booleans()),
        source_salt=salt,
        blocked_sources=frozenset(source_hash(salt, m) for m in blocked or () if salt),
    )


@dataclass(frozen=True)
class Scenario:
    """Candidates with unique ids, one context, and tombstones: one call to ``resolve``."""

    records: tuple[MemoryRecord, ...]
    context: RetrievalContext
    tombstones: tuple[ForgetTombstone, ...]


_EDGE_KINDS = ("none", "none", "previous", "previous", "any", "self", "dangling")


def _records_with_edges(
    draw: st.DrawFn, universe: Universe, max_records: int, now: datetime
) -> tuple[MemoryRecord, ...]:
    ids = draw(st.lists(identifiers(4), max_size=max_records, unique=True))
    records = []
    for position, record_id in enumerate(ids):
        kind = draw(st.sampled_from(_EDGE_KINDS))
        target: str | None = None
        if kind == "previous" and position > 0:
            target = ids[position - 1]
        elif kind == "any":
            target = draw(st.sampled_from(ids))
        elif kind == "self":
            target = record_id
        elif kind == "dangling":
            target = draw(identifiers(4).filter(lambda candidate: candidate not in ids))
        records.append(
            draw(
                memory_records(
                    universe, record_id=st.just(record_id), supersedes=st.just(target), now=now
                )
            )
        )
    return tuple(records)


@st.composite
def scenarios(
    draw: st.DrawFn, *, max_records: int = 12, max_tombstones: int = 3, now: datetime = BASE_NOW
) -> Scenario:
    """A whole call: universe, context, records with supersession edges, tombstones.

    Edges point at the previous record (building chains), at any record
    (building cycles and cross-key or cross-scope edges), at the record itself,
    or at an id that is not there.
    """
    universe = draw(universes())
    context = draw(contexts(universe, now))
    records = _records_with_edges(draw, universe, max_records, now)
    forgets = draw(st.lists(tombstones(universe, now), max_size=max_tombstones))
    return Scenario(records, context, tuple(forgets))


@dataclass(frozen=True)
class Store:
    """A store for the batch form: records shared by several contexts, and tombstones."""

    records: tuple[MemoryRecord, ...]
    contexts: tuple[tuple[str, RetrievalContext], ...]
    tombstones: tuple[ForgetTombstone, ...]


@st.composite
def stores(
    draw: st.DrawFn,
    *,
    max_records: int = 24,
    max_contexts: int = 5,
    max_tombstones: int = 4,
    max_users: int = 2,
    now: datetime = BASE_NOW,
) -> Store:
    """Several users, characters, conversations and scenes sharing one store of records.

    Records carry chains, cycles, cross-scope and dangling edges as in
    ``scenarios``; each context has its own ``now`` near ``now`` and an id
    ``ctx-<n>``. Every user shares the same conversation ids, so one
    conversation is often named by several users' contexts.
    """
    universe = draw(universes(max_users))
    records = _records_with_edges(draw, universe, max_records, now)
    moments = draw(st.lists(instants(now), max_size=max_contexts))
    targets = tuple(
        (f"ctx-{n}", draw(contexts(universe, moment))) for n, moment in enumerate(moments)
    )
    forgets = draw(st.lists(tombstones(universe, now), max_size=max_tombstones))
    return Store(records, targets, tuple(forgets))
