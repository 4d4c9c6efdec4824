"""The batch tests' shared cases: a small story of every scope and rule, as Arrow tables, and
one bad input per rejection rule of the Arrow readers with the error it must give."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

import memresolve as mr
from batch_rows import arrow_tables
from memresolve.testing import Store
from story import ADA, HARBOR_NIGHTS, RAINCOAT_SCENE, ROWAN, context, day, record


def _story() -> Store:
    records = (
        record("harbor", value="Harbor", authority="model-inferred", valid_from=day(1)),
        record(
            "marlowe",
            value="Marlowe",
            authority="user-corrected",
            supersedes="harbor",
            valid_from=day(2),
        ),
        record("rowan-rank", key="rank", scope=ROWAN, valid_from=day(3)),
        record("raincoat", key="outfit", scope=RAINCOAT_SCENE, valid_from=day(4)),
        record(
            "harbor-nights",
            key="place",
            scope=HARBOR_NIGHTS,
            valid_from=day(5),
            valid_until=day(31),
        ),
        record("old-place", key="place", scope=HARBOR_NIGHTS, valid_from=day(1), version=0),
        record("forgotten", key="secret", valid_from=day(6)),
        record("other-user", scope=mr.UserScope("u-bob"), valid_from=day(1)),
        record("future", key="plan", valid_from=day(29) + timedelta(days=400)),
    )
    contexts = (
        ("in-scene", context()),
        ("no-scene", context(scene_id=None)),
        ("bob", context(user_id="u-bob", now=day(3))),
        ("early", context(now=day(2))),
    )
    tombstones = (
        mr.ForgetTombstone(
            key="secret", scope=ADA, forgotten_at=day(7), blocks_sources_before=day(7)
        ),
    )
    return Store(records, contexts, tombstones)


STORY = _story()


def set_column(
    table: pa.Table, name: str, values: list[Any], kind: pa.DataType | None = None
) -> pa.Table:
    column = pa.array(values, kind if kind is not None else table.schema.field(name).type)
    return table.set_column(table.column_names.index(name), name, column)


def with_row(table: pa.Table, name: str, row: int, value: Any) -> pa.Table:
    values = table.column(name).to_pylist()
    values[row] = value
    return set_column(table, name, values)


R, C, T = arrow_tables(STORY)
#: A salt, a hash made with it, and the story's tombstones with it blocking a message.
SALT = "0f" * 16
HASH = mr.source_hash(SALT, "msg-1")
HASHED = mr.tombstones_to_arrow([STORY.tombstones[0].blocking_sources(["msg-1"])])
UTC_MICROS = pa.timestamp("us", tz="UTC")

K = mr.ErrorKind
REJECTIONS: dict[str, tuple[tuple[pa.Table, pa.Table, pa.Table | None], tuple[object, ...]]] = {
    "not-arrow": (([{"id": "x"}], C, None), (K.WRONG_TYPE, "records", None)),
    "missing-column": (
        (R.drop_columns(["authority"]), C, None),
        (K.MISSING_COLUMN, "authority", None),
    ),
    "missing-context-column": ((R, C.drop_columns(["now"]), None), (K.MISSING_COLUMN, "now", None)),
    "wrong-type": (
        (set_column(R, "version", [1.5] * R.num_rows, pa.float64()), C, None),
        (K.WRONG_TYPE, "version", None),
    ),
    "wrong-string-type": (
        (set_column(R, "key", [1] * R.num_rows, pa.int64()), C, None),
        (K.WRONG_TYPE, "key", None),
    ),
    "timestamp-without-zone": (
        (
            set_column(R, "valid_from", [datetime(2026, 7, 1)] * R.num_rows, pa.timestamp("us")),
            C,
            None,
        ),
        (K.NAIVE_TIME, "valid_from", None),
    ),
    "null-id": ((with_row(R, "id", 3, None), C, None), (K.MISSING, "id", 3)),
    "empty-key": ((with_row(R, "key", 2, ""), C, None), (K.EMPTY, "key", 2)),
    "null-valid-from": (
        (with_row(R, "valid_from", 4, None), C, None),
        (K.MISSING, "valid_from", 4),
    ),
    "null-version": ((with_row(R, "version", 1, None), C, None), (K.MISSING, "version", 1)),
    "null-context-user": ((R, with_row(C, "user_id", 2, None), None), (K.MISSING, "user_id", 2)),
    "unknown-status": (
        (with_row(R, "status", 5, "ACTIVE"), C, None),
        (K.UNKNOWN_VALUE, "status", 5),
    ),
    "unknown-authority": (
        (with_row(R, "authority", 0, "admin"), C, None),
        (K.UNKNOWN_VALUE, "authority", 0),
    ),
    "unknown-scope-kind": (
        (with_row(R, "scope_kind", 6, "team"), C, None),
        (K.UNKNOWN_VALUE, "scope_kind", 6),
    ),
    "scope-id-missing": (
        (with_row(R, "character_id", 2, None), C, None),
        (K.MISSING, "character_id", 2),
    ),
    "scope-id-empty": ((with_row(R, "scene_id", 3, ""), C, None), (K.EMPTY, "scene_id", 3)),
    "tombstone-scope-id-missing": (
        (R, C, with_row(T, "user_id", 0, None)),
        (K.MISSING, "user_id", 0),
    ),
    "duplicate-record-id": ((with_row(R, "id", 7, "harbor"), C, None), (K.DUPLICATE_ID, "id", 7)),
    "non-finite-confidence": (
        (with_row(R, "confidence", 2, float("nan")), C, None),
        (K.NOT_FINITE, "confidence", 2),
    ),
    "infinite-confidence": (
        (with_row(R, "confidence", 1, float("inf")), C, None),
        (K.NOT_FINITE, "confidence", 1),
    ),
    "confidence-out-of-range": (
        (with_row(R, "confidence", 4, 1.5), C, None),
        (K.OUT_OF_RANGE, "confidence", 4),
    ),
    "empty-supersedes": ((with_row(R, "supersedes", 0, ""), C, None), (K.EMPTY, "supersedes", 0)),
    "null-enum-before-an-earlier-unknown": (
        (with_row(with_row(R, "status", 1, "bogus"), "status", 4, None), C, None),
        (K.MISSING, "status", 4),
    ),
    "unknown-value-with-quotes": (
        (with_row(R, "authority", 3, 'it\'s "x"'), C, None),
        (K.UNKNOWN_VALUE, "authority", 3),
    ),
    "missing-scope-id-column": (
        (R.drop_columns(["scene_id"]), C, None),
        (K.MISSING_COLUMN, "scene_id", None),
    ),
    "missing-tombstone-scope-id-column": (
        (R, C, T.drop_columns(["character_id"])),
        (K.MISSING_COLUMN, "character_id", None),
    ),
    "empty-owner": (
        (with_row(R, "user_id", 4, ""), C, None),  # row 4 is a conversation record
        (K.EMPTY, "user_id", 4),
    ),
    "id-the-kind-does-not-use": (
        (with_row(R, "scene_id", 0, "s-x"), C, None),  # row 0 is a user record
        (K.INCONSISTENT, "scene_id", 0),
    ),
    "repeated-context-id": (
        (R, with_row(C, "context_id", 3, "in-scene"), None),
        (K.DUPLICATE_ID, "context_id", 3),
    ),
    "tombstone-bound-after-the-forget": (
        (R, C, with_row(T, "blocks_sources_before", 0, day(8))),
        (K.INCONSISTENT, "blocks_sources_before", 0),
    ),
    "tombstone-without-times": (
        (
            R,
            C,
            with_row(with_row(T, "blocks_sources_before", 0, None), "forgotten_at", 0, None),
        ),
        (K.MISSING, "blocks_sources_before", 0),
    ),
    "tombstone-without-time-columns": (
        (R, C, T.drop_columns(["blocks_sources_before", "forgotten_at"])),
        (K.MISSING_COLUMN, "blocks_sources_before", None),
    ),
    "first-bad-row-of-first-bad-column": (
        (with_row(with_row(R, "status", 1, "nope"), "key", 5, None), C, None),
        (K.MISSING, "key", 5),
    ),
    "tombstone-salt-not-hex": (
        (R, C, with_row(T, "source_salt", 0, "not hex")),
        (K.MALFORMED, "source_salt", 0),
    ),
    "tombstone-salt-too-short": (
        (R, C, with_row(T, "source_salt", 0, "ab" * 15)),
        (K.MALFORMED, "source_salt", 0),
    ),
    "tombstone-hash-not-a-digest": (
        (R, C, with_row(with_row(T, "source_salt", 0, SALT), "blocked_sources", 0, ["ab" * 31])),
        (K.MALFORMED, "blocked_sources", 0),
    ),
    "tombstone-hash-in-capitals": (
        (R, C, with_row(with_row(T, "source_salt", 0, SALT), "blocked_sources", 0, [HASH.upper()])),
        (K.MALFORMED, "blocked_sources", 0),
    ),
    "tombstone-hashes-without-a-salt": (
        (R, C, with_row(T, "blocked_sources", 0, [HASH])),
        (K.MISSING, "source_salt", 0),
    ),
    "tombstone-bad-hash-and-no-salt": (
        (R, C, with_row(T, "blocked_sources", 0, ["x"])),
        (K.MALFORMED, "blocked_sources", 0),
    ),
    "tombstone-hashes-not-a-list": (
        (R, C, set_column(T, "blocked_sources", [HASH], pa.string())),
        (K.WRONG_TYPE, "blocked_sources", None),
    ),
    "tombstone-hash-list-of-numbers": (
        (R, C, set_column(T, "blocked_sources", [[1]], pa.list_(pa.int64()))),
        (K.WRONG_TYPE, "blocked_sources", None),
    ),
    "cited-message-null": (
        (with_row(R, "source_message_ids", 2, ["m", None]), C, HASHED),
        (K.MALFORMED, "source_message_ids", 2),
    ),
    "cited-message-empty": (
        (with_row(R, "source_message_ids", 3, [""]), C, HASHED),
        (K.EMPTY, "source_message_ids", 3),
    ),
    "cited-messages-not-lists": (
        (set_column(R, "source_message_ids", ["m"] * R.num_rows, pa.string()), C, HASHED),
        (K.WRONG_TYPE, "source_message_ids", None),
    ),
}
