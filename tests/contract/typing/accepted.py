"""What a type checker must accept: checked by ``mypy --strict`` with the rest of the tests.

Statuses and authorities may be given as their string values, in the
constructor and in ``dataclasses.replace``, and read back as enum members.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import memresolve as mr

record = mr.MemoryRecord(
    id="m1",
    key="pet.name",
    value="Harbor",
    scope=mr.ConversationScope("conv-1", user_id="u-ada"),
    status="active",
    authority="model-inferred",
    confidence=0.6,
    valid_from=datetime(2026, 7, 1, tzinfo=UTC),
)
expired = dataclasses.replace(record, status="expired", authority=mr.Authority.USER_CONFIRMED)
status: mr.Status = expired.status
authority: mr.Authority = expired.authority
minimal = mr.MemoryRecord(
    id="m2",
    key="pet.name",
    value="Marlowe",
    scope=mr.UserScope("u-ada"),
    authority="user-corrected",
    confidence=1.0,
    valid_from=datetime(2026, 7, 2, tzinfo=UTC),
)
correction: mr.MemoryRecord = minimal.corrected("Max", at=datetime(2026, 7, 3, tzinfo=UTC), id="m3")
row: dict[str, object] = correction.to_dict()
again: mr.MemoryRecord = mr.MemoryRecord.from_dict(row)
forgets: tuple[mr.ForgetTombstone, ...] = mr.forget_everywhere(
    "pet.name",
    mr.RetrievalContext(
        now=datetime(2026, 7, 30, tzinfo=UTC),
        user_id="u-ada",
        character_id="c-1",
        conversation_id="conv-1",
    ),
    at=datetime(2026, 7, 30, tzinfo=UTC),
)
