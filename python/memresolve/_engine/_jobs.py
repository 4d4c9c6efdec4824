"""The background jobs the tutorial names (``docs/spec.md`` §7): status
normalisation, whose writes never change a later resolution, and the forget
sweep, which says whose private text must go.

``normalize`` and ``forget_sweep`` take ``MemoryRecord`` objects (one user's
records, a store read into memory); ``normalize_batch`` and
``forget_sweep_batch`` take Arrow tables of a whole store. Each runs on the
selected backend; the reference's own are in ``memresolve.reference``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memresolve._engine import _job_kernels
from memresolve._model import (
    ForgetTombstone,
    MemoryRecord,
    PurgeCause,
    Status,
    arguments,
    check,
    checked_tombstones,
    record_rows,
    scope_id,
)
from memresolve.reference import blocked_by_tombstone

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Normalization",
    "Purge",
    "PurgePlan",
    "StatusChange",
    "forget_sweep",
    "forget_sweep_batch",
    "normalize",
    "normalize_batch",
    "purged_records",
]


@dataclass(frozen=True, slots=True)
class StatusChange:
    """One status a worker may write: ``record_id`` goes from ``old_status``
    (always ``active``) to ``new_status``."""

    record_id: str
    old_status: Status
    new_status: Status


@dataclass(frozen=True)
class Normalization:
    """The statuses a background worker may write at ``now`` (``docs/spec.md`` §7.1).

    Writing them changes no resolution at any instant from ``now`` on: the same
    records win, in every context. ``changes`` is sorted by record id.
    """

    now: datetime
    changes: tuple[StatusChange, ...]

    def __len__(self) -> int:
        return len(self.changes)

    def __iter__(self) -> Iterator[StatusChange]:
        return iter(self.changes)

    def new_status(self, record_id: str) -> Status | None:
        """The status to write on ``record_id``, or ``None`` when it keeps its own."""
        for change in self.changes:
            if change.record_id == record_id:
                return change.new_status
        return None

    def counts(self) -> dict[Status, int]:
        """How many records move to each status (statuses with none left out)."""
        counts: dict[Status, int] = {}
        for change in self.changes:
            counts[change.new_status] = counts.get(change.new_status, 0) + 1
        return counts

    def apply(self, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
        """``records`` in the same order, each changed one rebuilt with its new status."""
        new = {change.record_id: change.new_status for change in self.changes}
        records = arguments.items(records, MemoryRecord, "records")
        return [
            record
            if record.id not in new
            else MemoryRecord.from_dict({**record.to_dict(), "status": new[record.id].value})
            for record in records
        ]


def normalize(
    records: Iterable[MemoryRecord],
    *,
    now: datetime,
    tombstones: Iterable[ForgetTombstone] | None = (),
) -> Normalization:
    """The statuses a background worker may write at ``now`` (``docs/spec.md`` §7.1).

    Only ``active`` records change, each to the first rule that applies:
    ``forgotten`` when a tombstone blocks it, ``expired`` when its
    ``valid_until`` is at or before ``now``, ``superseded`` when a correction
    bears its edge at every later instant in every context that sees it
    (valid by ``now``, no ``valid_until``, not stored ``expired``, a scope
    that covers its own). Resolving the normalised records at any instant
    from ``now`` on gives the same winners as resolving the originals; a
    record written ``superseded`` is then excluded as ``status-or-time``
    instead of ``superseded``. Normalising twice writes nothing the second time.

    Raises:
        InvalidInputError: a record is not a ``MemoryRecord``, two share an id,
            ``now`` is not an aware datetime, or a tombstone is not one.
    """
    moment = check.instant(now, check.Subject("argument"), "now")
    rows = record_rows(records)
    forgets = checked_tombstones(tombstones)
    changes = _job_kernels.SELECTED_JOBS.normalize_rows(rows, forgets, moment)
    listed = sorted(
        (StatusChange(_record(rows, row).id, Status.ACTIVE, status) for row, status in changes),
        key=lambda change: change.record_id,
    )
    return Normalization(moment, tuple(listed))


def _record(rows: tuple[object, ...], row: int) -> MemoryRecord:
    record = rows[row]
    assert isinstance(record, MemoryRecord)  # the kernel checked every row
    return record


@dataclass(frozen=True, slots=True)
class Purge:
    """One record whose private text must be erased: ids, key and scope id, never a value."""

    record_id: str
    key: str
    scope_id: str
    cause: PurgeCause


@dataclass(frozen=True)
class PurgePlan:
    """The forget sweep's answer (``docs/spec.md`` §7.2): every record whose value,
    source messages and embedding must be erased from every copy of the data, because
    no resolution at any instant can make it active again.

    ``purges`` is sorted by record id. ``by_tombstone`` lists, for each distinct
    tombstone in the order given, the ids it blocks (a record can be blocked by
    several); records stored ``forgotten`` that no tombstone names have the cause
    ``stored-forgotten``.
    """

    purges: tuple[Purge, ...]
    by_tombstone: tuple[tuple[ForgetTombstone, tuple[str, ...]], ...]

    def __len__(self) -> int:
        return len(self.purges)

    def __iter__(self) -> Iterator[Purge]:
        return iter(self.purges)

    def __contains__(self, record_id: object) -> bool:
        return record_id in self.record_ids

    @property
    def record_ids(self) -> frozenset[str]:
        """The ids of every record to purge."""
        return frozenset(purge.record_id for purge in self.purges)

    def apply(self, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
        """``records`` in the same order, each purged one rebuilt with an empty value and
        no source message ids: what a store keeps after erasing it."""
        ids = self.record_ids
        records = arguments.items(records, MemoryRecord, "records")
        return [
            record
            if record.id not in ids
            else MemoryRecord.from_dict({**record.to_dict(), "value": "", "source_message_ids": ()})
            for record in records
        ]


def purged_records(
    records: tuple[MemoryRecord, ...], tombstones: tuple[ForgetTombstone, ...]
) -> list[tuple[MemoryRecord, PurgeCause]]:
    """The forget sweep's rule alone (``docs/spec.md`` §7.2), on the selected backend: each
    record whose private text must be erased, with why. ``forget_sweep`` builds its plan on
    it; the store's writes, whose records and tombstones are checked already and which need
    no plan, ask it directly."""
    return [
        (_record(records, row), cause)
        for row, cause in _job_kernels.SELECTED_JOBS.purge_rows(records, tombstones)
    ]


def forget_sweep(
    records: Iterable[MemoryRecord], tombstones: Iterable[ForgetTombstone] | None
) -> PurgePlan:
    """The records whose private text must be erased (``docs/spec.md`` §7.2): those a
    tombstone blocks (same key, equal scope, evidence at or before its bound) and
    those stored ``forgotten``. The plan holds ids, keys and scope ids, never values.

    Raises:
        InvalidInputError: a record is not a ``MemoryRecord``, two share an id, or a
            tombstone is not one.
    """
    rows = record_rows(records)  # records first: an error names them before the tombstones
    forgets = checked_tombstones(tombstones)
    purged = purged_records(rows, forgets)
    purges = sorted(
        (Purge(record.id, record.key, scope_id(record.scope), cause) for record, cause in purged),
        key=lambda purge: purge.record_id,
    )
    blocked = [record for record, cause in purged if cause is PurgeCause.TOMBSTONE]
    by_tombstone = tuple(
        (tombstone, tuple(sorted(r.id for r in blocked if blocked_by_tombstone(r, (tombstone,)))))
        for tombstone in dict.fromkeys(forgets)
    )
    return PurgePlan(tuple(purges), by_tombstone)


def normalize_batch(
    records: object, *, now: datetime, tombstones: object | None = None
) -> pa.Table:
    """``normalize`` over a whole store, on Arrow tables (``docs/spec.md`` §7.1).

    ``records`` and ``tombstones`` are tables of the batch form (see
    ``resolve_batch``; ``value`` is never read). Returns a pyarrow ``Table``
    of the changes only, in input order: ``record_id`` (``string``),
    ``old_status`` and ``new_status`` (``dictionary<int8, string>``).

    Raises:
        InvalidInputError: an input is not Arrow or breaks a rule of the batch
            form; ``now`` is not an aware datetime.
    """
    moment = check.instant(now, check.Subject("argument"), "now")
    return _job_kernels.SELECTED_JOBS.normalize_batch(records, now=moment, tombstones=tombstones)


def forget_sweep_batch(records: object, tombstones: object | None = None) -> pa.Table:
    """``forget_sweep`` over a whole store, on Arrow tables (``docs/spec.md`` §7.2).

    Returns a pyarrow ``Table``, one row per record to purge, in input order:
    ``record_id``, ``key``, ``scope_id`` (``string``) and ``cause``
    (``dictionary<int8, string>``: ``tombstone`` or ``stored-forgotten``).

    Raises:
        InvalidInputError: an input is not Arrow or breaks a rule of the batch form.
    """
    return _job_kernels.SELECTED_JOBS.forget_sweep_batch(records, tombstones)
