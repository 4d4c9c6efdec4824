"""Real Wikidata statements (CC0, vendored in tests/data/wikidata) as memory records.

A property is the key, a statement's rank its authority (preferred ->
user-confirmed, normal -> rule-extracted, deprecated -> model-inferred), its
start and end qualifiers (P580/P582) or its point in time (P585) its validity.
Every record lives in one scope per item, ``UserScope(item id)``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import memresolve as mr

DATA = Path(__file__).parents[1] / "data" / "wikidata"
RANK_AUTHORITY = {
    "preferred": mr.Authority.USER_CONFIRMED,
    "normal": mr.Authority.RULE_EXTRACTED,
    "deprecated": mr.Authority.MODEL_INFERRED,
}


def wikidata_time(snaks: list[dict[str, Any]] | None) -> datetime | None:
    """A Wikidata time value (``+1930-00-00T00:00:00Z``; 00 = unknown month or day)."""
    if not snaks or snaks[0]["snaktype"] != "value":
        return None  # no qualifier, or "novalue" / "somevalue"
    text = snaks[0]["datavalue"]["value"]["time"]
    year, month, rest = text.lstrip("+").split("-", 2)
    day = rest[:2]
    return datetime(int(year), max(int(month), 1), max(int(day), 1), tzinfo=UTC)


def _value(mainsnak: dict[str, Any]) -> str:
    value = mainsnak["datavalue"]["value"]
    return value["id"] if isinstance(value, dict) and "id" in value else str(value["amount"])


def statements(item: str, prop: str) -> list[mr.MemoryRecord]:
    """Every dated statement of ``prop`` on ``item`` (undated ones have no validity to use)."""
    entity = json.loads((DATA / f"wikidata_{item}_subset.json").read_text(encoding="utf-8"))
    records = []
    for claim in entity["claims"][prop]:
        qualifiers = claim.get("qualifiers", {})
        start = wikidata_time(qualifiers.get("P580")) or wikidata_time(qualifiers.get("P585"))
        if start is None or claim["mainsnak"]["snaktype"] != "value":
            continue
        records.append(
            mr.MemoryRecord(
                id=claim["id"],
                key=prop,
                value=_value(claim["mainsnak"]),
                scope=mr.UserScope(item),
                status="active",
                authority=RANK_AUTHORITY[claim["rank"]],
                confidence=1.0,
                valid_from=start,
                valid_until=wikidata_time(qualifiers.get("P582")),
                version=1,
            )
        )
    return records


def on(item: str, moment: datetime) -> mr.RetrievalContext:
    """Asking about ``item`` as of ``moment``."""
    return mr.RetrievalContext(
        now=moment, user_id=item, character_id="reader", conversation_id="history"
    )
