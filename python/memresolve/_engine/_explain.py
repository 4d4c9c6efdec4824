"""Why a record has its outcome in a context: the stage, and what decided it.

Built from the reference's stage functions (``memresolve.reference``) on the
candidates of one context, so an explanation states the contract's own reasons.
An explanation names records and tombstones by id, key and scope, never by text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memresolve import reference
from memresolve._model import ForgetTombstone, MemoryRecord, Reason, RetrievalContext, Status
from memresolve.errors import InternalError

__all__ = ["Explanation", "explain_in"]


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why record ``record_id`` has ``outcome`` in a context (``None``: it wins).

    Attributes:
        record_id: the record explained.
        outcome: its exclusion reason, or ``None`` when it is the winner of its
            scope and key.
        superseded_by: for ``superseded``, the ids of the in-scope records whose
            edge names it (sorted).
        won_by: for ``lower-precedence``, the id of the winner of its scope and key.
        forgotten_by: for ``forgotten``, the tombstones that block it (none when
            its stored status is ``forgotten``).
        detail: one sentence, safe to log (ids, keys and instants only).
    """

    record_id: str
    outcome: Reason | None
    superseded_by: tuple[str, ...] = ()
    won_by: str | None = None
    forgotten_by: tuple[ForgetTombstone, ...] = ()
    detail: str = ""


def explain_in(
    record: MemoryRecord,
    candidates: Sequence[MemoryRecord],
    context: RetrievalContext,
    tombstones: Sequence[ForgetTombstone],
) -> Explanation:
    """The explanation of ``record``, one of ``candidates``, in ``context``."""
    outcomes = dict(
        zip(
            (r.id for r in candidates),
            reference.decide(candidates, context, tombstones),
            strict=True,
        )
    )
    outcome = outcomes[record.id]
    now = context.now
    match outcome:
        case None:
            return Explanation(record.id, None, detail="wins its scope and key")
        case Reason.SCOPE:
            return Explanation(record.id, outcome, detail="its scope is not one the context sees")
        case Reason.STATUS_OR_TIME:
            if record.status in (Status.SUPERSEDED, Status.EXPIRED, Status.RETRACTED) and (
                reference.in_validity_interval(record, now)
            ):
                detail = f"its stored status is {record.status.value}"
            elif record.valid_from > now:
                detail = f"not valid before {record.valid_from.isoformat()}"
            else:
                assert record.valid_until is not None
                detail = f"ended at {record.valid_until.isoformat()}"
            return Explanation(record.id, outcome, detail=detail)
        case Reason.FORGOTTEN:
            blocking = tuple(t for t in tombstones if reference.blocked_by_tombstone(record, (t,)))
            detail = _forgotten_detail(record, blocking)
            return Explanation(record.id, outcome, forgotten_by=blocking, detail=detail)
        case Reason.SUPERSEDED:
            by = tuple(
                sorted(
                    r.id
                    for r in candidates
                    if r.supersedes == record.id
                    and reference.scope_matches(r.scope, context)
                    and reference.bears_supersession_edge(r, now)
                )
            )
            return Explanation(
                record.id, outcome, superseded_by=by, detail=f"superseded by {', '.join(by)}"
            )
        case Reason.LOWER_PRECEDENCE:
            winner = next(
                r.id
                for r in candidates
                if outcomes[r.id] is None and r.scope == record.scope and r.key == record.key
            )
            return Explanation(
                record.id, outcome, won_by=winner, detail=f"{winner} takes precedence"
            )
        case _:
            raise InternalError(f"no explanation for outcome {outcome!r}")


def _forgotten_detail(record: MemoryRecord, blocking: tuple[ForgetTombstone, ...]) -> str:
    """Why ``record`` is forgotten: the latest bound that blocks its evidence, or a message
    it cites (never named: message ids are private), or its stored status."""
    by_time = [t for t in blocking if reference.evidence_time(record) <= t.blocks_sources_before]
    if by_time:
        latest = max(t.blocks_sources_before for t in by_time)
        return f"a tombstone on key {record.key!r} blocks evidence up to {latest.isoformat()}"
    if blocking:
        return f"a tombstone on key {record.key!r} blocks a message it cites"
    return "its stored status is forgotten"
