"""The pure-Python reference resolver: the executable form of ``docs/spec.md``.

Standard library only, one small function per pipeline stage, written to be
read rather than to be fast. The Rust core must agree with it on every input;
the differential tests hold it to that.

Decisions the tutorial leaves open or makes platform-dependent, made here:

* Strings (ids, keys, scope ids) are compared by Unicode code point, which is
  Python's own ``str`` ordering, never by locale rules (the tutorial's
  ``localeCompare`` can pick different winners on different workers).
* Instants are compared as aware datetimes. Constructors pin every instant to
  a fixed UTC offset, so Python compares them by the instant they name, exactly
  to the microsecond (a ``ZoneInfo`` around a daylight-saving change would
  compare wall clocks instead). Naive datetimes cannot reach this module.
* Scopes are compared structurally (equal kind and fields, the owner of a
  conversation or scene scope included), never through a joined string, so
  ``user "a:b"`` and ``user "a"`` never meet. Grouping and tombstone matching
  both use scope equality. An owned scope is visible to its owner only.
* Each candidate gets exactly one reason: the first stage that excludes it.
  A record stored as ``forgotten`` but outside its validity interval is
  ``status-or-time``; tombstones are checked at stage 3, after time.
* Supersession edges are carried by every in-scope record that is inside its
  validity interval and not stored as ``expired``, even one excluded at stage
  2 (stored ``superseded``) or 3 (forgotten): normalising statuses or
  forgetting a correction never brings an older value back. An edge may cross
  keys and scopes (ids are unique within a call); a dangling one does nothing.
* Tombstones apply whatever ``now`` is, and decide on the evidence time
  (``observed_at``, else ``valid_from``), inclusive: evidence at exactly
  ``blocks_sources_before`` is blocked.
* Validity is half-open: eligible when ``valid_from <= now < valid_until``.
* Output order is canonical and independent of input order: ``active`` by
  (scope id, key), ``excluded`` by record id.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, cast

from memresolve._model import (
    CERTAINTY_CODE,
    REASON_CODE,
    CharacterScope,
    ConversationScope,
    ForgetTombstone,
    MemoryRecord,
    PurgeCause,
    RawResolution,
    Reason,
    RetrievalContext,
    SceneScope,
    Scope,
    Status,
    UserScope,
    certainty,
    check,
    check_records,
    check_tombstone_scope,
    checked_tombstones,
    decision_code,
    record_rows,
    resolve_with,
    scope_id,
    source_hash,
    to_micros,
)
from memresolve.errors import ErrorKind

if TYPE_CHECKING:
    import pyarrow as pa

    from memresolve._model import Resolution

__all__ = [
    "NAME",
    "bears_edge_from",
    "bears_supersession_edge",
    "blocked_by_tombstone",
    "cites_blocked_source",
    "covers",
    "decide",
    "evidence_time",
    "excluded_as_forgotten",
    "excluded_by_status_or_time",
    "first_exclusion",
    "forget_sweep_batch",
    "in_validity_interval",
    "losers_by_precedence",
    "normalize_batch",
    "normalize_rows",
    "normalized_status",
    "precedence_key",
    "purge_cause",
    "purge_rows",
    "reaches",
    "resolve",
    "resolve_batch",
    "resolve_rows",
    "scope_id",
    "scope_matches",
    "superseded_ids",
]

NAME: Final = "reference"

# Stage 1: scope ---------------------------------------------------------------------------


def scope_matches(scope: Scope, context: RetrievalContext) -> bool:
    """Whether a record in ``scope`` is visible in ``context`` (``docs/spec.md`` §1.1).

    An owned conversation or scene scope is visible only to its owner's
    contexts: it fails closed across users. A context without a character
    (conversation, scene) sees no character (conversation, scene) scope: a
    scope's ids are never None, so they never equal a missing one.
    """
    match scope:
        case UserScope(user_id=user_id):
            return user_id == context.user_id
        case CharacterScope(user_id=user_id, character_id=character_id):
            return user_id == context.user_id and character_id == context.character_id
        case ConversationScope(conversation_id=conversation_id, user_id=owner):
            return conversation_id == context.conversation_id and owner in (None, context.user_id)
        case SceneScope(conversation_id=conversation_id, scene_id=scene_id, user_id=owner):
            # A context with no current scene sees no scene's records.
            return (
                context.scene_id is not None
                and conversation_id == context.conversation_id
                and scene_id == context.scene_id
                and owner in (None, context.user_id)
            )


# Stage 2: status and time -----------------------------------------------------------------


def in_validity_interval(record: MemoryRecord, now: datetime) -> bool:
    """``valid_from <= now``, and ``now < valid_until`` when there is an end."""
    if record.valid_from > now:
        return False
    return record.valid_until is None or now < record.valid_until


def excluded_by_status_or_time(record: MemoryRecord, now: datetime) -> bool:
    """Outside its interval, or stored as ``superseded``, ``expired`` or ``retracted``.

    Expiry is computed from the interval, so a stored status that a background
    worker has not normalised yet does not matter.
    """
    if not in_validity_interval(record, now):
        return True
    return record.status in (Status.SUPERSEDED, Status.EXPIRED, Status.RETRACTED)


# Stage 3: forgetting ----------------------------------------------------------------------


def evidence_time(record: MemoryRecord) -> datetime:
    """When the evidence behind ``record`` was observed: ``observed_at``, else ``valid_from``."""
    return record.valid_from if record.observed_at is None else record.observed_at


def reaches(tombstone: ForgetTombstone, scope: Scope) -> bool:
    """The tombstone's scope is ``scope``; or it is user-wide and its user owns ``scope``.

    Every scope class has ``user_id``: the user of a user or character scope,
    the owner of a conversation or scene scope (None when unowned, which no
    user-wide tombstone reaches: its user id is never None).
    """
    if tombstone.scope == scope:
        return True
    return tombstone.user_wide and scope.user_id == tombstone.scope.user_id


def cites_blocked_source(record: MemoryRecord, tombstone: ForgetTombstone) -> bool:
    """The record cites a message whose salted hash the tombstone holds."""
    if not tombstone.blocked_sources or tombstone.source_salt is None:
        return False
    return any(
        source_hash(tombstone.source_salt, message_id) in tombstone.blocked_sources
        for message_id in record.source_message_ids
    )


def blocked_by_tombstone(record: MemoryRecord, tombstones: Iterable[ForgetTombstone]) -> bool:
    """Some tombstone has the record's key, reaches its scope, and either evidence up to
    its bound or a message it blocks among the record's sources.

    The evidence time, not ``valid_from``, decides: a summary generated after
    the forget from old messages stays forgotten, and a fact re-told after the
    forget is not blocked forever. A record citing a message the forgotten value
    came from is blocked whatever its times: re-stating is not re-telling.
    """
    return any(
        tombstone.key == record.key
        and reaches(tombstone, record.scope)
        and (
            evidence_time(record) <= tombstone.blocks_sources_before
            or cites_blocked_source(record, tombstone)
        )
        for tombstone in tombstones
    )


def excluded_as_forgotten(record: MemoryRecord, tombstones: Iterable[ForgetTombstone]) -> bool:
    """Stored as ``forgotten``, or blocked by a tombstone."""
    return record.status is Status.FORGOTTEN or blocked_by_tombstone(record, tombstones)


# Stage 4: supersession --------------------------------------------------------------------


def bears_supersession_edge(record: MemoryRecord, now: datetime) -> bool:
    """Whether an in-scope record's ``supersedes`` counts: in its interval and not ``expired``.

    Only time switches an edge off, never ``superseded`` or ``forgotten``: a
    forgotten correction still hides what it replaced.
    """
    return in_validity_interval(record, now) and record.status is not Status.EXPIRED


def superseded_ids(in_scope: Iterable[MemoryRecord], now: datetime) -> frozenset[str]:
    """The ids named by the edges of the in-scope records that bear one.

    A cycle among edge-bearing records puts every member in this set; a record
    that supersedes itself is a cycle of one. A dangling id matches nothing.
    """
    return frozenset(
        record.supersedes
        for record in in_scope
        if record.supersedes is not None and bears_supersession_edge(record, now)
    )


# Stage 5: precedence ----------------------------------------------------------------------


def precedence_key(record: MemoryRecord) -> tuple[int, int, int, str]:
    """Sort key, best first: authority rank desc, version desc, valid_from desc, id asc.

    Ids are unique within a call, so this order is total. ``str`` ordering in
    Python is by code point, exactly what the contract asks for.
    """
    return (-record.authority.rank, -record.version, -to_micros(record.valid_from), record.id)


# The pipeline -----------------------------------------------------------------------------


def first_exclusion(
    record: MemoryRecord,
    in_scope: bool,
    context: RetrievalContext,
    tombstones: Sequence[ForgetTombstone],
    hidden: frozenset[str],
) -> Reason | None:
    """The reason of the first of stages 1-4 that excludes ``record``, or ``None``."""
    if not in_scope:
        return Reason.SCOPE
    if excluded_by_status_or_time(record, context.now):
        return Reason.STATUS_OR_TIME
    if excluded_as_forgotten(record, tombstones):
        return Reason.FORGOTTEN
    if record.id in hidden:
        return Reason.SUPERSEDED
    return None


def losers_by_precedence(survivors: Iterable[MemoryRecord]) -> set[str]:
    """Stage 5: the ids of every survivor that is not the first of its (scope, key) group."""
    groups: defaultdict[tuple[Scope, str], list[MemoryRecord]] = defaultdict(list)
    for record in survivors:
        groups[(record.scope, record.key)].append(record)
    losers: set[str] = set()
    for group in groups.values():
        winner = min(group, key=precedence_key)
        losers.update(record.id for record in group if record is not winner)
    return losers


def decide(
    records: Sequence[MemoryRecord],
    context: RetrievalContext,
    tombstones: Sequence[ForgetTombstone],
) -> list[Reason | None]:
    """Each record's outcome, by position: its exclusion reason, or ``None`` for a winner."""
    in_scope = [scope_matches(record.scope, context) for record in records]
    hidden = superseded_ids(
        (record for record, scoped in zip(records, in_scope, strict=True) if scoped), context.now
    )
    outcomes = [
        first_exclusion(record, scoped, context, tombstones, hidden)
        for record, scoped in zip(records, in_scope, strict=True)
    ]
    losers = losers_by_precedence(
        record for record, outcome in zip(records, outcomes, strict=True) if outcome is None
    )
    return [
        Reason.LOWER_PRECEDENCE if outcome is None and record.id in losers else outcome
        for record, outcome in zip(records, outcomes, strict=True)
    ]


def _checked_tombstones(tombstones: object) -> tuple[ForgetTombstone, ...]:
    """A kernel's tombstones: each a ``ForgetTombstone`` whose scope is still one."""
    rows = checked_tombstones(tombstones)  # type: ignore[arg-type]  # checked here
    for row, tombstone in enumerate(rows):
        check_tombstone_scope(tombstone, row)
    return rows


def resolve_rows(
    records: tuple[object, ...],
    context: RetrievalContext,
    tombstones: Sequence[ForgetTombstone],
) -> RawResolution:
    """The backend kernel: check the candidates, ``decide``, then the canonical order (spec §2.6).

    The context and tombstones are already checked by the facade.
    """
    checked = check_records(record_rows(records))
    tombstones = _checked_tombstones(tombstones)
    if not isinstance(context, RetrievalContext):
        check.Subject("argument").fail(
            "context",
            ErrorKind.WRONG_TYPE,
            f"must be a RetrievalContext, got {type(context).__name__}",
        )
    outcomes = decide(checked, context, tombstones)
    active = sorted(
        (row for row, outcome in enumerate(outcomes) if outcome is None),
        key=lambda row: (scope_id(checked[row].scope), checked[row].key),
    )
    excluded = sorted(
        (
            (row, REASON_CODE[outcome])
            for row, outcome in enumerate(outcomes)
            if outcome is not None
        ),
        key=lambda pair: checked[pair[0]].id,
    )
    return RawResolution(
        # The caller's own objects, as given (checked above: each is a record).
        tuple(cast("MemoryRecord", records[row]) for row in active),
        tuple(row for row, _ in excluded),
        bytes(code for _, code in excluded),
    )


def resolve(
    records: Iterable[MemoryRecord],
    context: RetrievalContext,
    *,
    tombstones: Iterable[ForgetTombstone] | None = (),
) -> Resolution:
    """``memresolve.resolve`` run by this reference, whatever backend is selected."""
    return resolve_with(resolve_rows, records, context, tombstones)


def _with_cited_messages(
    candidates: list[MemoryRecord], records: object, forgets: list[ForgetTombstone]
) -> list[MemoryRecord]:
    """The candidates with the messages they cite, read from the records table only when
    a tombstone carries hashes (``docs/spec.md`` §4.1)."""
    if not any(tombstone.blocked_sources for tombstone in forgets):
        return candidates
    from memresolve._io import arrow  # noqa: PLC0415 - needs pyarrow, an optional extra

    return arrow.with_cited_messages(candidates, records)


def resolve_batch(
    records: object,
    contexts: object,
    *,
    tombstones: object | None = None,
    include_excluded: bool = False,
    with_values: bool = False,
) -> pa.Table:
    """``memresolve.resolve_batch`` the obvious way: ``resolve`` once per context.

    Slow (every context scans every record) and the oracle of the native
    batch: for each context, in input order, its winners in ``active`` order,
    then (with ``include_excluded``) its exclusions by id, scope exclusions left
    out (``docs/spec.md`` §4); with ``with_values`` each winner's key, value
    and certainty.
    """
    from memresolve._io import arrow  # noqa: PLC0415 - needs pyarrow, an optional extra

    include_excluded = check.flag(include_excluded, "include_excluded")
    with_values = check.flag(with_values, "with_values")
    # Every input is taken as Arrow before any is read, as the native batch does.
    records = arrow.as_table(records, "records")
    contexts = arrow.as_table(contexts, "contexts")
    tombstones = None if tombstones is None else arrow.as_table(tombstones, "tombstones")
    candidates = arrow.read_records_table(records, with_values=False)
    targets = arrow.read_contexts_table(contexts)
    forgets = [] if tombstones is None else arrow.read_tombstones_table(tombstones)
    candidates = _with_cited_messages(candidates, records, forgets)
    values = arrow.read_values_table(records) if with_values else None
    row_of = {record.id: row for row, record in enumerate(candidates)}
    context_ids: list[str] = []
    record_ids: list[str] = []
    decisions: list[int] = []
    winners: list[tuple[str, str, int] | None] = []
    for context_id, context in targets:
        result = resolve(candidates, context, tombstones=forgets)
        for winner in result.active:
            context_ids.append(context_id)
            record_ids.append(winner.id)
            decisions.append(decision_code(None))
            if values is not None:
                row = row_of[winner.id]
                sure = certainty(winner.authority, values[1][row])
                winners.append((winner.key, values[0][row], CERTAINTY_CODE[sure]))
        if include_excluded:
            for exclusion in result.excluded:
                if exclusion.reason is not Reason.SCOPE:
                    context_ids.append(context_id)
                    record_ids.append(exclusion.id)
                    decisions.append(decision_code(exclusion.reason))
                    winners.append(None)
    return arrow.decision_table(
        context_ids, record_ids, decisions, winners if with_values else None
    )


# The background jobs (docs/spec.md §7) ----------------------------------------------------


def covers(bearer: Scope, target: Scope) -> bool:
    """Whether every context that sees ``target`` also sees ``bearer`` (§7.1).

    Read off the matching rules of §1.1: a user covers that user's characters
    and the conversations and scenes it owns; an unowned conversation covers
    its owned twins and every scene of it; a conversation owned by ``u``
    covers the scenes of it ``u`` owns; an unowned scene covers its owned
    twins. A character covers only itself: its user's other characters see
    the user's records.
    """
    match bearer, target:
        case UserScope(user_id=user), CharacterScope(user_id=target_user):
            covered = user == target_user
        case UserScope(user_id=user), ConversationScope(user_id=owner) | SceneScope(user_id=owner):
            covered = owner is not None and owner == user
        case ConversationScope(conversation_id=conversation, user_id=None), ConversationScope(
            conversation_id=target_conversation
        ):
            covered = conversation == target_conversation
        case ConversationScope(conversation_id=conversation, user_id=owner), SceneScope(
            conversation_id=target_conversation, user_id=target_owner
        ):
            covered = conversation == target_conversation and owner in (None, target_owner)
        case SceneScope(conversation_id=conversation, scene_id=scene, user_id=None), SceneScope(
            conversation_id=target_conversation, scene_id=target_scene
        ):
            covered = conversation == target_conversation and scene == target_scene
        case _:
            covered = False
    return bearer == target or covered


def bears_edge_from(record: MemoryRecord, now: datetime) -> bool:
    """Whether ``record`` bears its edge at every instant from ``now`` on, wherever it is
    in scope: valid by ``now``, open-ended, and not stored ``expired``."""
    return (
        record.valid_from <= now
        and record.valid_until is None
        and record.status is not Status.EXPIRED
    )


def normalized_status(
    record: MemoryRecord,
    now: datetime,
    tombstones: Iterable[ForgetTombstone],
    lasting_bearers: Iterable[Scope],
) -> Status | None:
    """The status a worker may write on ``record`` at ``now``, or ``None`` (§7.1).

    ``lasting_bearers`` are the scopes of the records that name it and bear
    their edge from ``now`` on. Only an ``active`` record changes, to the
    first rule that applies: ``forgotten`` (a tombstone blocks it at every
    instant), ``expired`` (its interval has ended), ``superseded`` (a lasting
    bearer whose scope covers its own hides it in every context that sees it).
    """
    if record.status is not Status.ACTIVE:
        return None
    if blocked_by_tombstone(record, tombstones):
        return Status.FORGOTTEN
    if record.valid_until is not None and record.valid_until <= now:
        return Status.EXPIRED
    if any(covers(scope, record.scope) for scope in lasting_bearers):
        return Status.SUPERSEDED
    return None


def normalize_rows(
    records: Sequence[object], tombstones: Sequence[ForgetTombstone], now: datetime
) -> list[tuple[int, Status]]:
    """The backend kernel of ``normalize``: (row, new status) of each change, by row."""
    checked = check_records(record_rows(records))
    tombstones = _checked_tombstones(tombstones)
    now = check.instant(now, check.Subject("argument"), "now")
    lasting: defaultdict[str, list[Scope]] = defaultdict(list)
    for record in checked:
        if record.supersedes is not None and bears_edge_from(record, now):
            lasting[record.supersedes].append(record.scope)
    changes = []
    for row, record in enumerate(checked):
        status = normalized_status(record, now, tombstones, lasting.get(record.id, ()))
        if status is not None:
            changes.append((row, status))
    return changes


def purge_cause(record: MemoryRecord, tombstones: Iterable[ForgetTombstone]) -> PurgeCause | None:
    """Why the forget sweep purges ``record``, or ``None`` (§7.2): a tombstone blocks it,
    or it is stored ``forgotten``. Either way stage 3 excludes it at every instant."""
    if blocked_by_tombstone(record, tombstones):
        return PurgeCause.TOMBSTONE
    if record.status is Status.FORGOTTEN:
        return PurgeCause.STORED_FORGOTTEN
    return None


def purge_rows(
    records: Sequence[object], tombstones: Sequence[ForgetTombstone]
) -> list[tuple[int, PurgeCause]]:
    """The backend kernel of ``forget_sweep``: (row, cause) of each purge, by row."""
    checked = check_records(record_rows(records))
    tombstones = _checked_tombstones(tombstones)
    purged = []
    for row, record in enumerate(checked):
        cause = purge_cause(record, tombstones)
        if cause is not None:
            purged.append((row, cause))
    return purged


def normalize_batch(
    records: object, *, now: datetime, tombstones: object | None = None
) -> pa.Table:
    """``memresolve.normalize_batch`` the obvious way: ``normalize_rows`` over every row."""
    from memresolve._io import arrow  # noqa: PLC0415 - needs pyarrow, an optional extra

    now = check.instant(now, check.Subject("argument"), "now")
    records = arrow.as_table(records, "records")
    tombstones = None if tombstones is None else arrow.as_table(tombstones, "tombstones")
    candidates = arrow.read_records_table(records, with_values=False)
    forgets = [] if tombstones is None else arrow.read_tombstones_table(tombstones)
    candidates = _with_cited_messages(candidates, records, forgets)
    changes = normalize_rows(candidates, forgets, now)
    return arrow.status_change_table(
        [candidates[row].id for row, _ in changes], [status for _, status in changes]
    )


def forget_sweep_batch(records: object, tombstones: object | None = None) -> pa.Table:
    """``memresolve.forget_sweep_batch`` the obvious way: ``purge_rows`` over every row."""
    from memresolve._io import arrow  # noqa: PLC0415 - needs pyarrow, an optional extra

    records = arrow.as_table(records, "records")
    tombstones = None if tombstones is None else arrow.as_table(tombstones, "tombstones")
    candidates = arrow.read_records_table(records, with_values=False)
    forgets = [] if tombstones is None else arrow.read_tombstones_table(tombstones)
    candidates = _with_cited_messages(candidates, records, forgets)
    purged = [(candidates[row], cause) for row, cause in purge_rows(candidates, forgets)]
    return arrow.purge_table(
        [record.id for record, _ in purged],
        [record.key for record, _ in purged],
        [scope_id(record.scope) for record, _ in purged],
        [cause for _, cause in purged],
    )
