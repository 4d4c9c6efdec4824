"""The catalogue of bad and edge inputs (docs/catalogue.md), one named test per row.

Each test is named after its row (``test_T4_...``) and runs its input through every form the
row applies to (``tests/support/catalogue.py``): a decision must be the same per turn and in batch
on each backend, through JSON Lines and the command, in a ``MemoryStore`` and in the dataset job;
a rejection must be the same error (kind, field, row, record id) from every reader.
``test_every_row_of_the_catalogue_has_its_test`` keeps docs/catalogue.md and the tests in step.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given

import memresolve as mr
from catalogue import (
    A_NOW,
    BACKENDS,
    HAS_DATASET_JOB,
    decide,
    decide_arrow,
    reject_arrow,
    reject_json_lines,
    reject_record,
    run_command,
)
from memresolve._engine._kernels import get_backend, get_batch_resolver
from memresolve._model._call import resolve_with
from memresolve.testing import Store, stores
from story import ADA, HARBOR_NIGHTS, NOW, RAINCOAT_SCENE, ROWAN, context, day, forget, record

K = mr.ErrorKind
NAIVE = datetime(2026, 7, 1, 12, 0)
MICROSECOND = timedelta(microseconds=1)
ROOT = Path(__file__).resolve().parents[2]


def _line(**overrides: Any) -> str:
    """One JSON Lines record, valid unless ``overrides`` make it otherwise (None deletes)."""
    row: dict[str, Any] = json.loads(_VALID_LINE)
    for name, value in overrides.items():
        if value is None:
            row.pop(name, None)
        else:
            row[name] = value
    return json.dumps(row)  # escapes: a lone surrogate stays valid UTF-8 text


_VALID_LINE = json.dumps(
    {
        "id": "m1",
        "key": "pet.name",
        "value": "Harbor",
        "scope": {"kind": "user", "user_id": "u-ada"},
        "authority": "model-inferred",
        "confidence": 0.6,
        "valid_from": "2026-07-01T00:00:00+00:00",
    }
)


def _table(*records: mr.MemoryRecord) -> pa.Table:
    return mr.records_to_arrow(records or [record("m1")])


def _with_column(table: pa.Table, name: str, column: pa.Array | pa.ChunkedArray) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, column)


# 4.1 Time and datetimes ---------------------------------------------------------------------


@pytest.mark.parametrize("field", ["valid_from", "valid_until", "observed_at"])
def test_T1_a_naive_instant_in_a_record_is_naive_time(field: str) -> None:
    assert reject_record(**_fields(**{field: NAIVE})) == (K.NAIVE_TIME, field, None, "m1")
    # JSON Lines has no naive datetime: an instant without an offset is not an instant.
    assert reject_json_lines(_line(**{field: "2026-07-01T12:00:00"})) == (
        K.MALFORMED,
        field,
        1,
        "m1",
    )


def _fields(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "id": "m1",
        "key": "pet.name",
        "value": "Harbor",
        "scope": ADA,
        "authority": "model-inferred",
        "confidence": 0.6,
        "valid_from": day(1),
    }
    return {**fields, **overrides}


def test_T2_a_naive_now_is_naive_time_in_every_form() -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        context(now=NAIVE)
    assert (caught.value.kind, caught.value.field) == (K.NAIVE_TIME, "now")
    line = json.dumps(
        {"now": "2026-07-30T12:00", "user_id": "u", "character_id": "c", "conversation_id": "k"}
    )
    assert reject_json_lines(line, what="contexts")[:2] == (K.MALFORMED, "now")
    status, _, err = run_command(
        ["resolve", "/dev/null", "--now", "2026-07-30T12:00", "--user", "u"]
    )
    assert status == 2
    assert "'now'" in err
    naive_now = mr.contexts_to_arrow([("turn", context())])
    naive_now = _with_column(naive_now, "now", naive_now["now"].cast(pa.timestamp("us")))
    assert reject_arrow(_table(), contexts=naive_now) == (K.NAIVE_TIME, "now", None, None)


def test_T3_a_fixed_offset_names_the_same_instant_as_utc() -> None:
    india = timezone(timedelta(hours=5, minutes=30))
    ends = record("m1", valid_until=datetime(2026, 7, 30, 17, 30, tzinfo=india))  # 12:00Z
    assert ends.valid_until == NOW
    assert decide([ends], context(now=NOW)).reason("m1") == "status-or-time"
    assert decide([ends], context(now=NOW - MICROSECOND)).reason("m1") == "active"
    assert decide([ends], context(now=(NOW - MICROSECOND).astimezone(india))).reason("m1") == (
        "active"
    )


def test_T4_the_two_readings_of_an_ambiguous_hour_are_an_hour_apart() -> None:
    new_york = ZoneInfo("America/New_York")
    first = datetime(2024, 11, 3, 1, 30, tzinfo=new_york, fold=0)  # EDT, 05:30Z
    second = datetime(2024, 11, 3, 1, 30, tzinfo=new_york, fold=1)  # EST, 06:30Z
    ends_first = record("m1", valid_from=datetime(2024, 1, 1, tzinfo=UTC), valid_until=first)
    ends_second = record("m2", valid_from=datetime(2024, 1, 1, tzinfo=UTC), valid_until=second)
    assert ends_first.valid_until is not None
    assert ends_second.valid_until is not None
    assert ends_second.valid_until - ends_first.valid_until == timedelta(hours=1)
    between = datetime(2024, 11, 3, 6, 0, tzinfo=UTC)
    for now in (between, between.astimezone(new_york)):
        decision = decide([ends_first, ends_second], context(now=now))
        assert decision.reason("m1") == "status-or-time"
        assert decision.reason("m2") == "active"


def test_T5_a_local_time_in_a_gap_is_what_its_utcoffset_says() -> None:
    gap = datetime(2024, 3, 10, 2, 30, tzinfo=ZoneInfo("America/New_York"))  # never on a clock
    built = record("m1", valid_from=gap)
    assert built.valid_from == gap.astimezone(UTC)  # Python's rule: the offset before the gap
    assert built.valid_from.utcoffset() == gap.utcoffset() == timedelta(hours=-5)
    assert decide([built], context(now=datetime(2024, 3, 10, 7, 30, tzinfo=UTC))).active == ("m1",)


def test_T6_an_interval_that_ends_before_it_starts_is_never_entered() -> None:
    reversed_interval = record("m1", valid_from=day(10), valid_until=day(5))
    for now in (day(4), day(5), day(7), day(10), day(20)):
        assert decide([reversed_interval], context(now=now)).reason("m1") == "status-or-time"


def test_T7_an_empty_interval_is_never_entered_even_at_its_instant() -> None:
    empty = record("m1", valid_from=day(10), valid_until=day(10))
    for now in (day(10) - MICROSECOND, day(10), day(10) + MICROSECOND):
        assert decide([empty], context(now=now)).reason("m1") == "status-or-time"


def test_T8_a_record_is_in_force_from_the_instant_it_starts() -> None:
    starts = record("m1", valid_from=day(10))
    assert decide([starts], context(now=day(10))).reason("m1") == "active"
    assert decide([starts], context(now=day(10) - MICROSECOND)).reason("m1") == "status-or-time"


def test_T9_a_record_is_out_of_force_at_the_instant_it_ends() -> None:
    # One term hands over to the next at a single instant, as a spouse at a death date.
    first = record("m1", valid_from=day(1), valid_until=day(10))
    second = record("m2", valid_from=day(10), authority="model-inferred")
    at_the_end = decide([first, second], context(now=day(10)))
    assert at_the_end.active == ("m2",)
    assert at_the_end.reason("m1") == "status-or-time"
    just_before = decide([first, second], context(now=day(10) - MICROSECOND))
    assert just_before.active == ("m1",)


def test_T10_a_fact_that_starts_later_is_not_in_force_yet() -> None:
    future = record("m1", valid_from=day(31))
    assert decide([future], context(now=day(30))).reason("m1") == "status-or-time"


def test_T11_no_end_is_open_ended() -> None:
    open_ended = record("m1", valid_until=None)
    far = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert decide([open_ended], context(now=far)).active == ("m1",)


def test_T12_a_record_without_a_start_is_missing_its_valid_from() -> None:
    fields = _fields()
    del fields["valid_from"]
    assert reject_record(**fields) == (K.MISSING, "valid_from", None, "m1")
    assert reject_json_lines(_line(valid_from=None)) == (K.MISSING, "valid_from", 1, "m1")
    table = _table(record("m1"), record("m2"))
    nulls = pa.array([day(1), None], pa.timestamp("us", tz="UTC"))
    assert reject_arrow(_with_column(table, "valid_from", nulls)) == (
        K.MISSING,
        "valid_from",
        1,
        None,
    )
    assert reject_arrow(table.drop_columns(["valid_from"]))[:2] == (K.MISSING_COLUMN, "valid_from")


def test_T14_a_date_is_not_an_instant() -> None:
    assert reject_record(**_fields(valid_from=date(2026, 7, 1)))[:2] == (K.WRONG_TYPE, "valid_from")
    assert reject_json_lines(_line(valid_from="2026-07-01"))[:2] == (K.MALFORMED, "valid_from")


def test_T15_a_pandas_timestamp_is_floored_to_the_microsecond() -> None:
    pd = pytest.importorskip("pandas", reason="pandas is a test extra")
    early = pd.Timestamp("2026-07-01T00:00:00.000001500Z")
    late = pd.Timestamp("2026-07-01T00:00:00.000001999Z")
    b = record("b", valid_from=late)
    a = record("a", valid_from=early)
    assert a.valid_from == b.valid_from == datetime(2026, 7, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert type(a.valid_from) is datetime
    decision = decide([b, a], context())
    assert decision.active == ("a",)  # a tie to the microsecond: the id decides
    assert decision.reason("b") == "lower-precedence"


def test_T16_pandas_not_a_time_is_refused() -> None:
    pd = pytest.importorskip("pandas", reason="pandas is a test extra")
    # NaT is a datetime subclass whose fields are not a time: its offset cannot be read.
    assert reject_record(**_fields(valid_from=pd.NaT))[:2] == (K.MALFORMED, "valid_from")


def test_T17_the_first_and_last_instants_python_can_name_are_ordered() -> None:
    first = datetime.min.replace(tzinfo=UTC)
    last = datetime.max.replace(tzinfo=UTC)
    always = record("m1", valid_from=first, valid_until=last)
    late = record("m2", key="late", valid_from=last - MICROSECOND)
    assert decide([always, late], context(now=first)).active == ("m1",)
    at_the_end = decide([always, late], context(now=last - MICROSECOND))
    assert at_the_end.active == ("m2", "m1")  # by scope, then key
    assert decide([always, late], context(now=last)).active == ("m2",)


@pytest.mark.parametrize("instant", ["2026-07-01T00:00:00Z", 1_780_000_000, 1.78e9])
def test_T18_text_and_epoch_numbers_are_not_instants(instant: object) -> None:
    assert reject_record(**_fields(valid_from=instant))[:2] == (K.WRONG_TYPE, "valid_from")
    with pytest.raises(mr.InvalidInputError) as caught:
        context(now=instant)
    assert (caught.value.kind, caught.value.field) == (K.WRONG_TYPE, "now")
    if not isinstance(instant, str):
        assert reject_json_lines(_line(valid_from=instant))[:2] == (K.WRONG_TYPE, "valid_from")


@pytest.mark.parametrize("column", ["valid_from", "valid_until", "observed_at"])
def test_T19_a_timestamp_column_without_a_zone_is_naive_time(column: str) -> None:
    table = _table(record("m1", valid_until=day(20), observed_at=day(1)))
    naive = _with_column(table, column, table[column].cast(pa.timestamp("us")))
    assert reject_arrow(naive)[:2] == (K.NAIVE_TIME, column)


@pytest.mark.parametrize("zone", ["UTC", "Etc/UTC", "+00:00", "America/New_York", "+05:30"])
def test_T20_every_spelling_of_a_zone_names_the_same_instants(zone: str) -> None:
    table = _boundary_table()
    respelled = table
    for column in ("valid_from", "valid_until"):
        respelled = _with_column(respelled, column, table[column].cast(pa.timestamp("us", tz=zone)))
    assert decide_arrow(respelled, context(now=day(10))) == decide_arrow(
        table, context(now=day(10))
    )


def _boundary_table() -> pa.Table:
    """Records whose outcome at July 10 depends on every microsecond of their bounds."""
    return _table(
        record("ends", key="a", valid_until=day(10)),
        record("ends-later", key="b", valid_until=day(10) + MICROSECOND),
        record("starts", key="c", valid_from=day(10)),
        record("starts-later", key="d", valid_from=day(10) + MICROSECOND),
    )


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_T21_every_unit_names_the_same_instants(unit: str) -> None:
    table = _table(
        record("ends", key="a", valid_until=day(10)),
        record("starts", key="c", valid_from=day(10)),
        record("starts-later", key="d", valid_from=day(10, 1)),
    )
    recast = table
    for column in ("valid_from", "valid_until"):
        recast = _with_column(recast, column, table[column].cast(pa.timestamp(unit, tz="UTC")))
    decision = decide_arrow(recast, context(now=day(10)))
    assert decision == decide_arrow(table, context(now=day(10)))
    assert decision.active == ("starts",)


def test_T22_nanoseconds_before_1970_are_floored_as_python_would() -> None:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    ends = record("m1", valid_from=epoch - timedelta(days=1), valid_until=epoch)
    table = mr.records_to_arrow([ends])
    one_ns_early = pa.array([-1], pa.timestamp("ns", tz="UTC"))  # floors to -1 µs
    table = _with_column(table, "valid_until", one_ns_early)
    floored = record("m1", valid_from=epoch - timedelta(days=1), valid_until=epoch - MICROSECOND)
    for now in (epoch - 2 * MICROSECOND, epoch - MICROSECOND):
        assert decide_arrow(table, context(now=now)) == decide([floored], context(now=now))
    assert decide_arrow(table, context(now=epoch - MICROSECOND)).reason("m1") == "status-or-time"


def test_T23_seconds_that_overflow_microseconds_are_out_of_range() -> None:
    table = _table()
    huge = pa.array([2**63 - 1], pa.timestamp("s", tz="UTC"))
    assert reject_arrow(_with_column(table, "valid_from", huge)) == (
        K.OUT_OF_RANGE,
        "valid_from",
        0,
        None,
    )


@pytest.mark.parametrize(
    "column",
    [
        pa.array([date(2026, 7, 1)], pa.date32()),
        pa.array([date(2026, 7, 1)], pa.date64()),
        pa.array(["2026-07-01T00:00:00Z"]),
        pa.array([1_780_000_000], pa.int64()),
    ],
    ids=["date32", "date64", "string", "int64"],
)
def test_T24_a_time_column_of_another_type_is_wrong_type(column: pa.Array) -> None:
    assert reject_arrow(_with_column(_table(), "valid_from", column))[:2] == (
        K.WRONG_TYPE,
        "valid_from",
    )


# 4.2 Numbers --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_N1_N2_a_confidence_that_is_not_finite_is_refused(bad: float) -> None:
    assert reject_record(**_fields(confidence=bad)) == (K.NOT_FINITE, "confidence", None, "m1")
    table = _with_column(_table(), "confidence", pa.array([bad]))
    assert reject_arrow(table)[:3] == (K.NOT_FINITE, "confidence", 0)
    if math.isnan(bad):  # JSON has no NaN; Python's json module writes and reads one
        assert reject_json_lines(_line(confidence=bad))[:2] == (K.NOT_FINITE, "confidence")


@pytest.mark.parametrize("bad", [-1e-300, -0.5, 1.0000000000000002, 2])
def test_N3_a_confidence_outside_zero_to_one_is_out_of_range(bad: float) -> None:
    assert reject_record(**_fields(confidence=bad)) == (K.OUT_OF_RANGE, "confidence", None, "m1")
    assert reject_json_lines(_line(confidence=bad))[:2] == (K.OUT_OF_RANGE, "confidence")
    table = _with_column(_table(), "confidence", pa.array([float(bad)]))
    assert reject_arrow(table)[:3] == (K.OUT_OF_RANGE, "confidence", 0)


@pytest.mark.parametrize("edge", [-0.0, 0.0, 1.0])
def test_N4_the_ends_of_the_confidence_range_are_accepted(edge: float) -> None:
    built = record("m1", confidence=edge, authority="model-inferred")
    assert built.confidence == edge
    assert decide([built], context()).active == ("m1",)
    (read,) = mr.records_from_arrow(mr.records_to_arrow([built]))
    assert read == built


def test_N5_likely_starts_at_085_and_a_float32_085_is_above_it() -> None:
    at = record("m1", confidence=0.85, authority="model-inferred")
    below = record(
        "m2", key="other", confidence=math.nextafter(0.85, 0), authority="model-inferred"
    )
    result = mr.resolve([at, below], context())
    assert [m.certainty for m in result.prompt_memories()] == [
        mr.Certainty.UNCERTAIN,
        mr.Certainty.LIKELY,
    ] or [m.certainty for m in result.prompt_memories()] == [
        mr.Certainty.LIKELY,
        mr.Certainty.UNCERTAIN,
    ]
    assert mr.to_prompt_memory(at).certainty is mr.Certainty.LIKELY
    assert mr.to_prompt_memory(below).certainty is mr.Certainty.UNCERTAIN
    table = _table(below)
    float32 = _with_column(table, "confidence", pa.array([0.85], pa.float32()))
    (widened,) = mr.records_from_arrow(float32)
    assert widened.confidence == float(np.float32(0.85)) > 0.85
    assert mr.to_prompt_memory(widened).certainty is mr.Certainty.LIKELY
    for backend in BACKENDS:
        out = get_batch_resolver(backend)(
            float32, mr.contexts_to_arrow([("turn", context())]), with_values=True
        )
        assert out["certainty"].to_pylist() == ["likely"]


@pytest.mark.parametrize("bad", [True, False, np.bool_(True)])
def test_N6_N12_a_bool_is_not_a_number(bad: object) -> None:
    assert reject_record(**_fields(confidence=bad))[:2] == (K.WRONG_TYPE, "confidence")
    assert reject_record(**_fields(version=bad))[:2] == (K.WRONG_TYPE, "version")
    assert reject_json_lines(_line(confidence=bool(bad)))[:2] == (K.WRONG_TYPE, "confidence")
    assert reject_json_lines(_line(version=bool(bad)))[:2] == (K.WRONG_TYPE, "version")


def test_N7_ints_and_float_subclasses_are_numbers_decimal_is_not() -> None:
    assert record("m1", confidence=1).confidence == 1.0
    assert type(record("m1", confidence=1).confidence) is float
    assert type(record("m1", confidence=np.float64(0.5)).confidence) is float
    assert reject_record(**_fields(confidence=Decimal("0.5")))[:2] == (K.WRONG_TYPE, "confidence")
    assert reject_record(**_fields(confidence="0.5"))[:2] == (K.WRONG_TYPE, "confidence")


@pytest.mark.parametrize("bad", [1.5, 1.0, "2", Decimal(2)])
def test_N8_a_version_is_a_whole_int(bad: object) -> None:
    assert reject_record(**_fields(version=bad))[:2] == (K.WRONG_TYPE, "version")
    if isinstance(bad, float | str):
        assert reject_json_lines(_line(version=bad))[:2] == (K.WRONG_TYPE, "version")
    table = _with_column(_table(), "version", pa.array([1.5]))
    assert reject_arrow(table)[:2] == (K.WRONG_TYPE, "version")


def test_N9_negative_versions_are_versions_and_rank_lower() -> None:
    older = record("a", version=-(2**63))
    newer = record("b", version=-1)
    decision = decide([older, newer], context())
    assert decision.active == ("b",)
    assert decision.reason("a") == "lower-precedence"


@pytest.mark.parametrize("huge", [2**63, 2**64, 10**30, -(2**63) - 1])
def test_N10_a_version_beyond_64_bits_is_out_of_range(huge: int) -> None:
    assert reject_record(**_fields(version=huge)) == (K.OUT_OF_RANGE, "version", None, "m1")
    assert reject_json_lines(_line(version=huge))[:2] == (K.OUT_OF_RANGE, "version")


def test_N11_a_uint64_version_column_is_refused_whatever_it_holds() -> None:
    for value in (1, 2**63):
        table = _with_column(_table(), "version", pa.array([value], pa.uint64()))
        assert reject_arrow(table)[:2] == (K.WRONG_TYPE, "version")


@pytest.mark.parametrize(
    "version_type",
    [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()],
    ids=str,
)
@pytest.mark.parametrize("confidence_type", [pa.float16(), pa.float32(), pa.float64()], ids=str)
def test_N13_narrower_numbers_are_widened(version_type: Any, confidence_type: Any) -> None:
    table = _table(record("a", version=3, confidence=0.5), record("b", version=7, confidence=1.0))
    widened = _with_column(table, "version", table["version"].cast(version_type))
    widened = _with_column(widened, "confidence", table["confidence"].cast(confidence_type))
    assert decide_arrow(widened, context()) == decide_arrow(table, context())
    assert [r.version for r in mr.records_from_arrow(widened)] == [3, 7]
    assert [r.confidence for r in mr.records_from_arrow(widened)] == [0.5, 1.0]


def test_N13_a_decimal_confidence_column_is_wrong_type() -> None:
    table = _with_column(_table(), "confidence", pa.array([Decimal("0.5")]))
    assert reject_arrow(table)[:3] == (K.WRONG_TYPE, "confidence", None)


# 4.3 Strings and identifiers ----------------------------------------------------------------


def test_S1_an_empty_id_is_empty() -> None:
    assert reject_record(**_fields(id="")) == (K.EMPTY, "id", None, None)
    assert reject_json_lines(_line(id="")) == (K.EMPTY, "id", 1, None)
    table = _with_column(_table(record("m1"), record("m2")), "id", pa.array(["m1", ""]))
    assert reject_arrow(table) == (K.EMPTY, "id", 1, None)


def test_S2_an_empty_key_is_empty_but_spaces_are_a_key() -> None:
    assert reject_record(**_fields(key=""))[:2] == (K.EMPTY, "key")
    assert reject_json_lines(_line(key=""))[:2] == (K.EMPTY, "key")
    assert reject_arrow(_with_column(_table(), "key", pa.array([""])))[:3] == (K.EMPTY, "key", 0)
    # No trimming: a key of spaces is a key, and not the same as another number of spaces.
    one, two = record("a", key=" "), record("b", key="  ")
    assert decide([one, two], context()).active == ("a", "b")


@pytest.mark.parametrize("column", ["user_id", "character_id", "conversation_id", "scene_id"])
def test_S3_empty_scope_and_context_ids_are_empty(column: str) -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        context(**{column: ""})
    assert (caught.value.kind, caught.value.field) == (K.EMPTY, column)
    builders: dict[str, Callable[[], mr.Scope]] = {
        "user_id": lambda: mr.UserScope(""),
        "character_id": lambda: mr.CharacterScope("u", ""),
        "conversation_id": lambda: mr.ConversationScope(""),
        "scene_id": lambda: mr.SceneScope("k", ""),
    }
    with pytest.raises(mr.InvalidInputError) as caught:
        builders[column]()
    assert caught.value.kind is K.EMPTY
    scene = record("m1", scope=mr.SceneScope("k", "s", user_id="u"))
    table = mr.records_to_arrow([scene, mr.MemoryRecord.from_dict(scene.to_dict() | {"id": "m2"})])
    table = table.drop_columns(["character_id"]).append_column(
        "character_id", pa.array([None, None], pa.string())
    )
    emptied = _with_column(table, column, pa.array(["", ""]))
    if column == "character_id":
        emptied = _with_column(table, "character_id", pa.array(["", None]))
    kind, field, row, _ = reject_arrow(emptied)
    assert (kind, field, row) == (
        K.INCONSISTENT if column == "character_id" else K.EMPTY,
        column,
        0,
    )


_SURROGATE = "pet\ud800name"


@pytest.mark.parametrize("field", ["id", "key", "value", "supersedes"])
def test_S4_a_lone_surrogate_is_invalid_unicode_in_every_string(field: str) -> None:
    assert reject_record(**_fields(**{field: _SURROGATE}))[:2] == (K.INVALID_UNICODE, field)
    assert reject_json_lines(_line(**{field: _SURROGATE}))[:2] == (K.INVALID_UNICODE, field)


def test_S4_a_lone_surrogate_in_a_scope_context_or_source_is_invalid_unicode() -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.UserScope(_SURROGATE)
    assert caught.value.kind is K.INVALID_UNICODE
    with pytest.raises(mr.InvalidInputError) as caught:
        context(user_id=_SURROGATE)
    assert (caught.value.kind, caught.value.field) == (K.INVALID_UNICODE, "user_id")
    assert reject_record(**_fields(source_message_ids=["msg-1", _SURROGATE]))[:2] == (
        K.INVALID_UNICODE,
        "source_message_ids[1]",
    )


@pytest.mark.parametrize("column", ["id", "key", "scope_kind", "authority", "user_id"])
def test_S5_a_binary_column_is_not_a_string_column(column: str) -> None:
    table = _table()
    binary = _with_column(table, column, table[column].cast(pa.binary()))
    assert reject_arrow(binary)[:2] == (K.WRONG_TYPE, column)


@pytest.mark.parametrize("column", ["id", "key", "user_id", "authority"])
def test_S6_a_string_column_holding_invalid_utf8_is_malformed(column: str) -> None:
    table = _table()
    bad = b"\xed\xa0\x80"  # the bytes of a lone surrogate
    offsets = pa.py_buffer(np.array([0, len(bad)], dtype=np.int32).tobytes())
    column_array = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(bad)])
    assert reject_arrow(_with_column(table, column, column_array)) == (
        K.MALFORMED,
        column,
        None,
        None,
    ) or reject_arrow(_with_column(table, column, column_array))[:2] == (K.MALFORMED, column)


def test_S7_nul_and_control_characters_are_data_never_truncation() -> None:
    a = record("m\x00a", key="k\x00")
    b = record("m\x00b", key="k\x00")
    c = record("m\x1fc", key="k")
    d = record("m\x00", key="k\x00x")
    decision = decide([a, b, c, d], context())
    assert set(decision.active) == {"m\x00a", "m\x1fc", "m\x00"}
    assert decision.reason("m\x00b") == "lower-precedence"


def test_S8_ids_differing_by_case_are_two_ids_in_code_point_order() -> None:
    lower = record("q30$x")
    upper = record("Q30$x")
    decision = decide([lower, upper], context())
    assert decision.active == ("Q30$x",)  # 'Q' (U+0051) before 'q' (U+0071)
    assert decision.reason("q30$x") == "lower-precedence"


def test_S9_composed_and_decomposed_ids_are_two_ids() -> None:
    composed = record("caf\u00e9")
    decomposed = record("cafe\u0301")
    decision = decide([composed, decomposed], context())
    assert decision.active == ("cafe\u0301",)  # 'e' (U+0065) before U+00E9
    assert decision.reason("caf\u00e9") == "lower-precedence"


def test_S10_keys_are_not_normalised_and_neither_are_tombstones() -> None:
    keys = ["caf\u00e9", "cafe\u0301", "Caf\u00e9", "caf\u00e9 "]
    records = [record(f"m{i}", key=key) for i, key in enumerate(keys)]
    forgotten = [forget("caf\u00e9", ADA, day(30))]
    decision = decide(records, context(), forgotten)
    assert decision.reason("m0") == "forgotten"
    assert sorted(decision.active) == ["m1", "m2", "m3"]


def test_S11_ids_order_by_code_point_not_utf16() -> None:
    astral = record("\U00010000")
    private_use = record("\uffff")
    decision = decide([astral, private_use], context())
    assert decision.active == ("\uffff",)  # U+FFFF < U+10000; UTF-16 would say otherwise


def test_S12_a_colon_inside_ids_never_merges_two_scopes() -> None:
    one = mr.CharacterScope("a", "b:c")
    other = mr.CharacterScope("a:b", "c")
    assert mr.scope_id(one) != mr.scope_id(other)
    records = [record("m1", scope=one), record("m2", scope=other)]
    seen_by_one = context(user_id="a", character_id="b:c")
    assert decide(records, seen_by_one).active == ("m1",)
    decision = decide(
        records, context(user_id="a:b", character_id="c"), [forget("pet.name", one, day(30))]
    )
    assert decision.active == ("m2",)


def test_S13_a_hundred_megabyte_value_is_a_value() -> None:
    big = "x" * 100_000_000
    winner = record("m1", value=big)
    for backend in BACKENDS:
        result = resolve_with(get_backend(backend).resolve_rows, [winner], context(), [])
        assert result.active[0].value is big or result.active[0].value == big
    store = mr.MemoryStore(shared_conversations=True)
    store.add([winner])
    assert len(store.resolve(context()).active[0].value) == 100_000_000
    out = get_batch_resolver(BACKENDS[-1])(
        mr.records_to_arrow([winner]), mr.contexts_to_arrow([("turn", context())]), with_values=True
    )
    assert len(out["value"][0].as_py()) == 100_000_000


def test_S14_str_subclasses_are_stored_as_plain_str() -> None:
    class Id(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    built = record(Id("m1"), key=np.str_("pet.name"), scope=mr.UserScope(np.str_("u-ada")))
    assert type(built.id) is str
    assert type(built.key) is str
    assert type(built.scope.user_id) is str
    assert decide([built], context()).active == ("m1",)


def test_S15_missing_and_empty_sources_are_the_same_a_null_source_is_not() -> None:
    without = record("m1")
    empty = record("m1", source_message_ids=[])
    assert without == empty
    assert without.source_message_ids == ()
    assert reject_record(**_fields(source_message_ids=["msg-1", None]))[:2] == (
        K.WRONG_TYPE,
        "source_message_ids[1]",
    )
    assert reject_record(**_fields(source_message_ids=None))[:2] == (
        K.WRONG_TYPE,
        "source_message_ids",
    )
    assert reject_json_lines(_line(source_message_ids=["msg-1", None]))[:2] == (
        K.WRONG_TYPE,
        "source_message_ids[1]",
    )


# 4.4 Enumerations and shapes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("status", "archived"),
        ("status", "Active"),
        ("status", "USER-CORRECTED"),
        ("authority", "user"),
        ("authority", "USER-CORRECTED"),
        ("authority", "User-Corrected"),
    ],
)
def test_E1_E2_E3_an_unknown_or_miscased_enum_value_is_unknown_value(field: str, bad: str) -> None:
    assert reject_record(**_fields(**{field: bad})) == (K.UNKNOWN_VALUE, field, None, "m1")
    with pytest.raises(mr.InvalidInputError) as caught:
        record("m1", **{field: bad})
    assert "expected one of" in str(caught.value)
    assert reject_json_lines(_line(**{field: bad})) == (K.UNKNOWN_VALUE, field, 1, "m1")
    table = _with_column(_table(), field, pa.array([bad]))
    assert reject_arrow(table)[:3] == (K.UNKNOWN_VALUE, field, 0)


def test_E4_an_unknown_scope_kind_is_unknown_value() -> None:
    line = _line(scope={"kind": "team", "user_id": "u-ada"})
    assert reject_json_lines(line)[:2] == (K.UNKNOWN_VALUE, "scope.kind")
    table = _with_column(_table(), "scope_kind", pa.array(["team"]))
    assert reject_arrow(table)[:3] == (K.UNKNOWN_VALUE, "scope_kind", 0)
    row = record("m1").to_dict() | {"scope_kind": "team"}
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.MemoryRecord.from_dict(row)
    assert (caught.value.kind, caught.value.field) == (K.UNKNOWN_VALUE, "scope_kind")


def test_E5_members_of_our_enums_are_accepted_ints_and_other_enums_are_not() -> None:
    built = record("m1", status=mr.Status.ACTIVE, authority=mr.Authority.USER_CONFIRMED)
    assert built == record("m1", status="active", authority="user-confirmed")
    assert reject_record(**_fields(status=0))[:2] == (K.WRONG_TYPE, "status")
    # A member of another str enum is a str, judged by its value: 'scope' is no status.
    assert reject_record(**_fields(status=mr.Reason.SCOPE))[:2] == (K.UNKNOWN_VALUE, "status")
    assert reject_json_lines(_line(status=0))[:2] == (K.WRONG_TYPE, "status")


def test_E6_a_scope_with_a_field_of_another_kind_is_refused() -> None:
    line = _line(scope={"kind": "user", "user_id": "u-ada", "scene_id": "s"})
    assert reject_json_lines(line)[:2] == (K.UNKNOWN_FIELD, "scope.scene_id")
    table = _with_column(_table(), "scene_id", pa.array(["s"]))
    assert reject_arrow(table)[:3] == (K.INCONSISTENT, "scene_id", 0)
    with pytest.raises(TypeError):
        mr.UserScope("u-ada", scene_id="s")  # type: ignore[call-arg]


def test_E7_a_scope_without_an_id_its_kind_needs_is_missing_it() -> None:
    line = _line(scope={"kind": "character", "user_id": "u-ada"})
    assert reject_json_lines(line)[:2] == (K.MISSING, "scope.character_id")
    rowan = mr.records_to_arrow([record("m1", scope=ROWAN)])
    table = _with_column(rowan, "character_id", pa.array([None], pa.string()))
    assert reject_arrow(table)[:3] == (K.MISSING, "character_id", 0)
    with pytest.raises(TypeError):
        mr.CharacterScope("u-ada")  # type: ignore[call-arg]


def test_E8_a_misspelled_field_is_an_unknown_field() -> None:
    fields = _fields()
    fields["validFrom"] = fields.pop("valid_from")
    assert reject_record(**fields)[:2] == (K.UNKNOWN_FIELD, "validFrom")
    # JSON Lines reports a missing field before an unknown one.
    assert reject_json_lines(_line(valid_from=None, validFrom="2026-07-01T00:00Z"))[:2] == (
        K.MISSING,
        "valid_from",
    )
    assert reject_json_lines(_line(validFrom="2026-07-01T00:00Z"))[:2] == (
        K.UNKNOWN_FIELD,
        "validFrom",
    )
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.MemoryRecord.from_dict(record("m1").to_dict() | {"validFrom": day(1)})
    assert (caught.value.kind, caught.value.field) == (K.UNKNOWN_FIELD, "validFrom")


def test_E9_a_stored_expired_status_wins_over_an_open_interval() -> None:
    expired = record("m1", status="expired", valid_until=None)
    assert decide([expired], context()).reason("m1") == "status-or-time"


def test_E10_a_retraction_is_never_active_and_hides_its_record_from_its_start() -> None:
    old = record("m1")
    retraction = old.retracted(at=day(10), id="r1")
    later = decide([old, retraction], context())
    assert (later.reason("m1"), later.reason("r1")) == ("superseded", "status-or-time")
    before = decide([old, retraction], context(now=day(9)))
    assert (before.reason("m1"), before.reason("r1")) == ("active", "status-or-time")


# 4.5 Scope and context ----------------------------------------------------------------------


def test_C1_a_scene_record_is_out_of_scope_without_a_current_scene() -> None:
    scene = record("m1", scope=RAINCOAT_SCENE)
    assert decide([scene], context(scene_id=None)).reason("m1") == "scope"
    assert decide([scene], context()).reason("m1") == "active"


def test_C2_a_scene_scope_without_its_scene_is_missing_it() -> None:
    line = _line(scope={"kind": "scene", "conversation_id": "k"})
    assert reject_json_lines(line)[:2] == (K.MISSING, "scope.scene_id")
    scene = mr.records_to_arrow([record("m1", scope=RAINCOAT_SCENE)])
    table = _with_column(scene, "scene_id", pa.array([None], pa.string()))
    assert reject_arrow(table)[:3] == (K.MISSING, "scene_id", 0)
    with pytest.raises(TypeError):
        mr.SceneScope("k")  # type: ignore[call-arg]


def test_C3_a_character_of_another_user_is_out_of_scope() -> None:
    theirs = record("m1", scope=mr.CharacterScope("u-other", "c-rowan"))
    assert decide([theirs], context()).reason("m1") == "scope"


def test_C4_another_conversation_is_out_of_scope() -> None:
    elsewhere = record("m1", scope=mr.ConversationScope("k-elsewhere"))
    owned_elsewhere = record("m2", scope=mr.ConversationScope("k-elsewhere", user_id="u-ada"))
    here = record("m3", scope=HARBOR_NIGHTS)
    decision = decide([elsewhere, owned_elsewhere, here], context())
    assert decision.active == ("m3",)


def test_C5_a_context_missing_an_id_is_missing_it() -> None:
    for field in ("user_id", "now"):
        fields: dict[str, Any] = {"now": NOW, "user_id": "u"}
        del fields[field]
        with pytest.raises(mr.InvalidInputError) as caught:
            mr.RetrievalContext(**fields)
        assert (caught.value.kind, caught.value.field) == (K.MISSING, field)
        line = json.dumps(fields | ({"now": NOW.isoformat()} if field != "now" else {}))
        assert reject_json_lines(line, what="contexts")[:2] == (K.MISSING, field)
    # Arrow tables keep every id column: a table without one is likelier a mistake.
    contexts = mr.contexts_to_arrow([("turn", context())])
    for field in ("user_id", "character_id", "conversation_id", "now"):
        assert reject_arrow(_table(), contexts=contexts.drop_columns([field]))[:2] == (
            K.MISSING_COLUMN,
            field,
        )


def test_C6_the_same_scene_in_another_conversation_is_out_of_scope() -> None:
    other = record("m1", scope=mr.SceneScope("k-elsewhere", "s-raincoat"))
    assert decide([other], context()).reason("m1") == "scope"


@given(stores())
def test_C7_no_winner_is_outside_its_contexts_scopes(store: Store) -> None:
    scopes = {record.id: record.scope for record in store.records}
    records, contexts = mr.records_to_arrow(store.records), mr.contexts_to_arrow(store.contexts)
    tombstones = mr.tombstones_to_arrow(store.tombstones)
    seen = dict(store.contexts)
    for backend in BACKENDS:
        table = get_batch_resolver(backend)(records, contexts, tombstones=tombstones)
        for row in table.select(["context_id", "record_id"]).to_pylist():
            assert scopes[row["record_id"]] in seen[row["context_id"]].scopes()


# 4.6 Identity and supersession graph --------------------------------------------------------


def test_C8_a_context_without_character_or_conversation_sees_neither() -> None:
    scopes = [
        mr.UserScope("u-ada"),
        mr.CharacterScope("u-ada", "c-rowan"),
        HARBOR_NIGHTS,
        mr.ConversationScope("k-harbor-nights", user_id="u-ada"),
        RAINCOAT_SCENE,
    ]
    records = [record(f"m{n}", key=f"k{n}", scope=scope) for n, scope in enumerate(scopes)]
    profile = context(character_id=None, conversation_id=None, scene_id=None)
    assert profile.scopes() == (mr.UserScope("u-ada"),)
    assert decide(records, profile).active == ("m0",)
    no_character = context(character_id=None, scene_id=None)
    assert sorted(decide(records, no_character).active) == ["m0", "m2", "m3"]
    # Forgetting everywhere such a context sees forgets the user scope only.
    tombstones = mr.forget_everywhere("k0", profile, at=NOW)
    assert [t.scope for t in tombstones] == [mr.UserScope("u-ada")]
    everything = context()
    assert sorted(decide(records, everything, tombstones).active) == ["m1", "m2", "m3", "m4"]


def test_C9_a_scene_without_its_conversation_is_inconsistent() -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        context(conversation_id=None)
    assert (caught.value.kind, caught.value.field) == (K.INCONSISTENT, "scene_id")
    line = json.dumps({"now": NOW.isoformat(), "user_id": "u", "scene_id": "s"})
    assert reject_json_lines(line, what="contexts")[:2] == (K.INCONSISTENT, "scene_id")
    contexts = pa.table(
        {
            "context_id": ["a", "b"],
            "now": pa.array([NOW, NOW], pa.timestamp("us", "UTC")),
            "user_id": ["u", "u"],
            "character_id": pa.array([None, None], pa.string()),
            "conversation_id": pa.array(["k", None], pa.string()),
            "scene_id": ["s", "s"],
        }
    )
    assert reject_arrow(_table(), contexts=contexts)[:3] == (K.INCONSISTENT, "scene_id", 1)


def test_C10_a_user_wide_tombstone_reaches_what_its_user_owns() -> None:
    scopes = [
        mr.UserScope("u-ada"),
        mr.CharacterScope("u-ada", "c-rowan"),
        mr.ConversationScope("k-harbor-nights", user_id="u-ada"),
        mr.SceneScope("k-harbor-nights", "s-raincoat", user_id="u-ada"),
        HARBOR_NIGHTS,  # unowned: nobody's to forget
        RAINCOAT_SCENE,
        mr.UserScope("u-bob"),
        mr.CharacterScope("u-bob", "c-rowan"),
    ]
    records = [record(f"m{n}", key="home", scope=scope) for n, scope in enumerate(scopes)]
    user_wide = mr.ForgetTombstone(
        key="home", scope=mr.UserScope("u-ada"), forgotten_at=NOW, user_wide=True
    )
    assert sorted(decide(records, context(), [user_wide]).active) == ["m4", "m5"]
    # Without user_wide, the same tombstone reaches its user scope alone.
    plain = mr.ForgetTombstone(key="home", scope=mr.UserScope("u-ada"), forgotten_at=NOW)
    assert sorted(decide(records, context(), [plain]).active) == ["m1", "m2", "m3", "m4", "m5"]
    # Another user's context keeps its records; a record told after the bound is shown.
    bob = context(user_id="u-bob")
    assert decide(records, bob, [user_wide]).active == decide(records, bob).active
    retold = record("m9", key="home", scope=scopes[2], valid_from=NOW + timedelta(days=1))
    assert (
        "m9" in decide([*records, retold], context(now=NOW + timedelta(days=2)), [user_wide]).active
    )


def test_C11_user_wide_needs_a_user_scope_and_a_bool() -> None:
    character = mr.CharacterScope("u-ada", "c-rowan")
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.ForgetTombstone(key="home", scope=character, forgotten_at=NOW, user_wide=True)
    assert (caught.value.kind, caught.value.field) == (K.INCONSISTENT, "user_wide")
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.ForgetTombstone(key="home", scope=mr.UserScope("u"), forgotten_at=NOW, user_wide="yes")  # type: ignore[arg-type]
    assert (caught.value.kind, caught.value.field) == (K.WRONG_TYPE, "user_wide")
    line = {
        "key": "home",
        "scope": {"kind": "character", "user_id": "u-ada", "character_id": "c-rowan"},
        "forgotten_at": NOW.isoformat(),
        "user_wide": True,
    }
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "tombstones.jsonl"
        path.write_text(json.dumps(line) + "\n")
        with pytest.raises(mr.InvalidInputError) as caught:
            mr.read_tombstones(path)
        assert (caught.value.kind, caught.value.field, caught.value.line) == (
            K.INCONSISTENT,
            "user_wide",
            1,
        )
    plain = mr.ForgetTombstone(key="home", scope=mr.UserScope("u-ada"), forgotten_at=NOW)
    table = mr.tombstones_to_arrow([plain, plain])

    def replaced(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
        return table.set_column(table.schema.get_field_index(name), name, values)

    wrong = replaced(table, "user_wide", pa.array([False, True]))
    wrong = replaced(wrong, "scope_kind", pa.array(["user", "character"]))
    wrong = replaced(wrong, "character_id", pa.array([None, "c-rowan"], pa.string()))
    assert reject_arrow(_table(), tombstones=wrong)[:3] == (K.INCONSISTENT, "user_wide", 1)
    as_text = replaced(table, "user_wide", pa.array(["no", "yes"]))
    assert reject_arrow(_table(), tombstones=as_text)[:2] == (K.WRONG_TYPE, "user_wide")


def test_C12_a_record_citing_a_forgotten_message_is_forgotten_whatever_its_times() -> None:
    told = record("m1", key="home", valid_from=day(1), source_message_ids=("msg-3",))
    # Written after the forget, without observed_at, from the very message.
    summary = record("m2", key="home", valid_from=day(25), source_message_ids=("msg-3", "msg-7"))
    # Told again after the forget, in a new message: shown.
    retold = record("m3", key="home", valid_from=day(26), source_message_ids=("msg-9",))
    elsewhere = record("m4", key="home", scope=HARBOR_NIGHTS, source_message_ids=("msg-3",))
    forget_home = mr.ForgetTombstone(key="home", scope=ADA, forgotten_at=day(20))
    records = [told, summary, retold, elsewhere]
    # Without hashes the summary passes stage 3 (its evidence is after the bound; it then
    # loses to the later m3); a store's forget hashes the messages of the records it erases
    # (m1's) itself, so only ``resolve`` here.
    plain = mr.resolve(records, context(), tombstones=[forget_home])
    assert {e.id: e.reason.value for e in plain.excluded}["m2"] == "lower-precedence"
    blocking = forget_home.blocking_sources(["msg-3"])
    decision = decide(records, context(), [blocking])
    assert sorted(decision.active) == ["m3", "m4"]
    assert [decision.reason(r) for r in ("m1", "m2")] == ["forgotten", "forgotten"]


def test_C13_salts_and_hashes_are_lowercase_hex_of_their_sizes() -> None:
    salt = "0f" * 16
    bad = [
        ({"source_salt": "0F" * 16}, K.MALFORMED, "source_salt"),
        ({"source_salt": "0f" * 15}, K.MALFORMED, "source_salt"),
        ({"source_salt": salt, "blocked_sources": ["0f" * 31]}, K.MALFORMED, "blocked_sources[0]"),
        ({"blocked_sources": [mr.source_hash(salt, "m")]}, K.MISSING, "source_salt"),
    ]
    for fields, kind, field in bad:
        with pytest.raises(mr.InvalidInputError) as caught:
            mr.ForgetTombstone(key="home", scope=ADA, forgotten_at=NOW, **fields)  # type: ignore[arg-type]
        assert (caught.value.kind, caught.value.field) == (kind, field)
    line = {
        "key": "home",
        "scope": {"kind": "user", "user_id": "u-ada"},
        "forgotten_at": NOW.isoformat(),
        "source_salt": "xyz",
    }
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "tombstones.jsonl"
        path.write_text(json.dumps(line) + "\n")
        with pytest.raises(mr.InvalidInputError) as caught:
            mr.read_tombstones(path)
        assert (caught.value.kind, caught.value.field, caught.value.line) == (
            K.MALFORMED,
            "source_salt",
            1,
        )
    plain = mr.ForgetTombstone(key="home", scope=ADA, forgotten_at=NOW)
    table = mr.tombstones_to_arrow([plain, plain])
    at = table.schema.get_field_index("blocked_sources")
    unsalted = table.set_column(
        at, "blocked_sources", pa.array([None, [mr.source_hash(salt, "m")]], pa.list_(pa.string()))
    )
    assert reject_arrow(_table(), tombstones=unsalted)[:3] == (K.MISSING, "source_salt", 1)


def test_G1_a_repeated_id_with_other_content_is_a_duplicate_id() -> None:
    first, second = record("m1"), record("m1", value="changed")
    for backend in BACKENDS:
        with pytest.raises(mr.InvalidInputError) as caught:
            resolve_with(get_backend(backend).resolve_rows, [first, second], context(), [])
        assert caught.value.where() == (K.DUPLICATE_ID, "id", 1, "m1")
    # Across two batches of one table.
    chunked = pa.concat_tables([_table(first), _table(second)])
    assert chunked["id"].num_chunks == 2
    assert reject_arrow(chunked) == (K.DUPLICATE_ID, "id", 1, "m1")
    store = mr.MemoryStore(shared_conversations=True)
    store.add([first])
    with pytest.raises(mr.InvalidInputError) as caught:
        store.add([record("m2"), second])
    assert caught.value.record_id == "m1"
    assert store.get("m2") is None  # all or nothing


def test_G2_a_retried_identical_record_is_an_error_in_a_call_and_a_no_op_in_a_store() -> None:
    twin = record("m1")
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve([twin, record("m1")], context())
    assert caught.value.kind is K.DUPLICATE_ID
    store = mr.MemoryStore(shared_conversations=True)
    assert store.add([twin]) == 1
    assert store.add([record("m1")]) == 0
    assert store.resolve(context()).active == (twin,)


def test_G3_one_correction_stored_twice_under_two_ids_wins_once() -> None:
    harbor = record("m1")
    copy_a = harbor.corrected("Marlowe", at=day(2), id="m2-a")
    copy_b = harbor.corrected("Marlowe", at=day(2), id="m2-b")
    decision = decide([harbor, copy_b, copy_a], context())
    assert decision.active == ("m2-a",)
    assert decision.reason("m2-b") == "lower-precedence"
    assert decision.reason("m1") == "superseded"


def test_G4_a_record_that_supersedes_itself_is_a_cycle_of_one() -> None:
    itself = record("m1", supersedes="m1")
    assert decide([itself], context()).reason("m1") == "superseded"


@pytest.mark.parametrize("length", [2, 3, 50])
def test_G5_every_member_of_a_cycle_is_superseded(length: int) -> None:
    ids = [f"m{i}" for i in range(length)]
    cycle = [record(i, supersedes=ids[(n + 1) % length]) for n, i in enumerate(ids)]
    decision = decide(cycle, context())
    assert decision.active == ()
    assert {decision.reason(i) for i in ids} == {"superseded"}


def test_G6_an_edge_to_no_candidate_does_nothing() -> None:
    dangling = record("m1", supersedes="not-retrieved")
    decision = decide([dangling], context())
    assert decision.active == ("m1",)


def test_G7_an_edge_crosses_keys_and_scopes_when_its_bearer_is_in_scope() -> None:
    title = record("m1", key="character.title", scope=ROWAN)
    fix = record("m2", key="pet.name", scope=ADA, supersedes="m1")
    assert decide([title, fix], context()).reason("m1") == "superseded"
    # Borne by a record the context does not see, the edge is off.
    fix_elsewhere = record("m2", scope=mr.CharacterScope("u-ada", "c-other"), supersedes="m1")
    assert decide([title, fix_elsewhere], context()).reason("m1") == "active"


def test_G8_two_corrections_of_one_record_compete_and_both_hide_it() -> None:
    harbor = record("m1")
    a = record("m2", supersedes="m1", version=2, authority="user-confirmed")
    b = record("m3", supersedes="m1", version=3, authority="rule-extracted")
    decision = decide([harbor, a, b], context())
    assert decision.active == ("m2",)
    assert decision.reason("m3") == "lower-precedence"
    assert decision.reason("m1") == "superseded"


def test_G9_a_chain_leaves_only_its_last_link() -> None:
    chain = [record("a"), record("b", supersedes="a"), record("c", supersedes="b")]
    decision = decide(chain, context())
    assert decision.active == ("c",)
    assert (decision.reason("a"), decision.reason("b")) == ("superseded", "superseded")


def test_G10_an_ended_middle_link_releases_the_first() -> None:
    a = record("a", authority="user-confirmed")
    b = record("b", supersedes="a", valid_until=day(10))
    c = record("c", supersedes="b", authority="rule-extracted")
    decision = decide([a, b, c], context())
    assert decision.reason("b") == "status-or-time"  # no edge: out of its interval
    assert decision.active == ("a",)  # back in contention, and ranks above c
    assert decision.reason("c") == "lower-precedence"
    # Stored superseded (a worker ran) instead of ended, the middle link still bears its edge.
    b_normalised = record("b", supersedes="a", status="superseded")
    assert decide([a, b_normalised, c], context()).active == ("c",)


def test_G11_a_forgotten_correction_still_hides_what_it_replaced() -> None:
    harbor = record("m1")
    marlowe = harbor.corrected("Marlowe", at=day(2), id="m2")
    stored_forgotten = record("m2", supersedes="m1", status="forgotten", valid_from=day(2))
    decision = decide([harbor, stored_forgotten], context())
    assert decision.active == ()
    assert decision.reason("m1") == "superseded"
    tombstoned = decide([harbor, marlowe], context(), [forget("pet.name", ADA, day(3))])
    assert tombstoned.active == ()
    assert {tombstoned.reason("m1"), tombstoned.reason("m2")} <= {"forgotten", "superseded"}


def _chain_and_fan_tables(n: int) -> tuple[pa.Table, pa.Table]:
    ids = [f"m{i:07d}" for i in range(n)]
    column = {
        "id": ids,
        "key": ["k"] * n,
        "scope_kind": ["user"] * n,
        "user_id": ["u"] * n,
        "character_id": pa.nulls(n, pa.string()),
        "conversation_id": pa.nulls(n, pa.string()),
        "scene_id": pa.nulls(n, pa.string()),
        "authority": ["model-inferred"] * n,
        "valid_from": pa.array([A_NOW - timedelta(days=1)] * n, pa.timestamp("us", tz="UTC")),
    }
    fan = pa.table({**column, "supersedes": [None, *(["m0000000"] * (n - 1))]})
    # One key, n eligible candidates, the highest version in the middle.
    versions = list(range(n))
    versions[n // 2] = n * 10
    crowd = pa.table({**column, "version": versions})
    return fan, crowd


def test_G13_G15_a_million_records_on_one_target_and_one_key() -> None:
    n = 1_000_000 if "native" in BACKENDS else 10_000
    fan, crowd = _chain_and_fan_tables(n)
    contexts = mr.contexts_to_arrow(
        [
            (
                "turn",
                mr.RetrievalContext(now=A_NOW, user_id="u", character_id="c", conversation_id="k"),
            )
        ]
    )
    resolve_batch = get_batch_resolver(BACKENDS[-1])
    fanned = resolve_batch(fan, contexts, include_excluded=True)
    decisions = dict(
        zip(fanned["record_id"].to_pylist(), fanned["decision"].to_pylist(), strict=True)
    )
    assert decisions["m0000000"] == "superseded"
    assert sum(1 for d in decisions.values() if d == "active") == 1
    winner = resolve_batch(crowd, contexts)
    assert winner["record_id"].to_pylist() == [f"m{n // 2:07d}"]
    small_fan, small_crowd = _chain_and_fan_tables(2_000)
    for table in (small_fan, small_crowd):
        assert len({str(get_batch_resolver(b)(table, contexts).to_pylist()) for b in BACKENDS}) == 1


def test_G14_a_full_tie_goes_to_the_smallest_id_by_code_point() -> None:
    ids = ["b", "a\U0001f600", "a\uffff", "B", "a"]
    decision = decide([record(i) for i in ids], context())
    assert decision.active == ("B",)


# 4.7 Arrow ----------------------------------------------------------------------------------

_REQUIRED = ["id", "key", "scope_kind", "user_id", "character_id", "conversation_id"]
_REQUIRED += ["scene_id", "authority", "valid_from"]


@pytest.mark.parametrize("column", _REQUIRED)
def test_A1_a_required_column_missing_is_missing_column(column: str) -> None:
    assert reject_arrow(_table().drop_columns([column])) == (
        K.MISSING_COLUMN,
        column,
        None,
        None,
    )


def test_A2_extra_columns_are_ignored() -> None:
    table = _story_table()
    extra = table.append_column("embedding", pa.array([[0.1, 0.2]] * table.num_rows))
    extra = extra.append_column("valid_from_2", table["valid_from"])
    assert decide_arrow(extra, context()) == decide_arrow(table, context())


def test_A2_an_extra_column_is_ignored_even_when_its_text_is_not_utf8() -> None:
    # No reader reads it, so no reader judges it (its structure is still checked: the
    # native import touches every column).
    table = _story_table()
    bad = b"\xff" * table.num_rows
    offsets = pa.py_buffer(np.arange(table.num_rows + 1, dtype=np.int32).tobytes())
    notes = pa.Array.from_buffers(pa.string(), table.num_rows, [None, offsets, pa.py_buffer(bad)])
    assert decide_arrow(table.append_column("notes", notes), context()) == decide_arrow(
        table, context()
    )


def _story_table() -> pa.Table:
    return _table(
        record("m1"),
        record("m2", supersedes="m1", authority="user-corrected", valid_from=day(2)),
        record("m3", key="scene", scope=RAINCOAT_SCENE, valid_until=day(31)),
        record("m4", key="title", scope=ROWAN, status="expired"),
        record("m5", key="elsewhere", scope=mr.ConversationScope("k-other")),
    )


def test_A3_a_column_named_twice_is_refused() -> None:
    table = _table()
    twice = pa.Table.from_arrays([*table.columns, table["key"]], names=[*table.column_names, "key"])
    assert reject_arrow(twice) == (K.DUPLICATE_FIELD, "key", None, None)
    extra_twice = pa.Table.from_arrays(
        [*table.columns, table["key"], table["key"]], names=[*table.column_names, "x", "x"]
    )
    assert reject_arrow(extra_twice) == (K.DUPLICATE_FIELD, "x", None, None)


def test_A4_columns_are_found_by_name_in_any_order() -> None:
    table = _story_table()
    shuffled = table.select(list(reversed(table.column_names)))
    assert decide_arrow(shuffled, context()) == decide_arrow(table, context())


@pytest.mark.parametrize(
    "column", [*_REQUIRED, "status", "valid_until", "supersedes", "observed_at"]
)
def test_A5_a_column_of_the_wrong_type_is_wrong_type(column: str) -> None:
    table = _table()
    wrong = pa.array([True], pa.bool_())
    assert reject_arrow(_with_column(table, column, wrong))[:2] == (K.WRONG_TYPE, column)


def _dictionary(index: Any, value: Any) -> Callable[[pa.Array], pa.Array]:
    def encode(array: pa.Array) -> pa.Array:
        return array.cast(value).dictionary_encode().cast(pa.dictionary(index, value))

    return encode


_STRING_ENCODINGS: dict[str, Callable[[pa.Array], pa.Array]] = {
    "large_string": lambda a: a.cast(pa.large_string()),
    "string_view": lambda a: a.cast(pa.string_view()),
    **{
        f"dictionary<{index},{value}>": _dictionary(index, value)
        for index in (pa.int8(), pa.int16(), pa.int32(), pa.int64())
        for value in (pa.string(), pa.large_string())
    },
}


@pytest.mark.parametrize("encoding", list(_STRING_ENCODINGS))
def test_A6_every_string_encoding_reads_alike(encoding: str) -> None:
    table = _story_table()
    encode = _STRING_ENCODINGS[encoding]
    for name in table.column_names:
        if pa.types.is_string(table.schema.field(name).type):
            table_before = table
            table = _with_column(table, name, encode(table[name].combine_chunks()))
            assert table.num_rows == table_before.num_rows
    assert decide_arrow(table, context()) == decide_arrow(_story_table(), context())


def test_A7_a_null_behind_a_dictionary_is_missing() -> None:
    table = _table(record("m1"), record("m2"))
    null_key = pa.DictionaryArray.from_arrays(pa.array([0, None], pa.int8()), pa.array(["k"]))
    assert reject_arrow(_with_column(table, "key", null_key))[:3] == (K.MISSING, "key", 1)
    null_value = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["k", None]))
    assert reject_arrow(_with_column(table, "key", null_value))[:3] == (K.MISSING, "key", 1)


@pytest.mark.parametrize("nullable", [True, False])
def test_A8_a_null_in_a_required_column_names_the_column_and_first_row(nullable: bool) -> None:
    table = _table(record("m1"), record("m2"), record("m3"))
    keys = pa.array(["k", None, None])
    field = pa.field("key", pa.string(), nullable=nullable)
    with_nulls = table.set_column(table.schema.get_field_index("key"), field, keys)
    assert reject_arrow(with_nulls)[:3] == (K.MISSING, "key", 1)


def test_A9_chunked_tables_and_batch_readers_read_alike() -> None:
    table = _story_table()
    chunked = pa.concat_tables([table.slice(i, 1) for i in range(table.num_rows)])
    assert chunked["id"].num_chunks == table.num_rows
    assert decide_arrow(chunked, context()) == decide_arrow(table, context())
    contexts = mr.contexts_to_arrow([("turn", context())])
    reader = pa.RecordBatchReader.from_batches(table.schema, chunked.to_batches())
    for backend in BACKENDS[-1:]:
        streamed = get_batch_resolver(backend)(reader, contexts, include_excluded=True)
        whole = get_batch_resolver(backend)(table, contexts, include_excluded=True)
        assert streamed.equals(whole)


@pytest.mark.parametrize(("offset", "length"), [(0, 5), (1, 3), (2, 3), (4, 1), (3, 0), (5, 0)])
def test_A10_a_slice_reads_as_the_rows_it_shows(offset: int, length: int) -> None:
    table = _story_table()
    sliced = table.slice(offset, length)
    copied = pa.Table.from_pylist(sliced.to_pylist(), schema=table.schema)
    assert decide_arrow(sliced, context()) == decide_arrow(copied, context())
    batch = table.to_batches()[0].slice(offset, length)
    assert decide_arrow(pa.Table.from_batches([batch], table.schema), context()) == decide_arrow(
        copied, context()
    )


def test_A11_no_rows_and_no_batches_resolve_to_nothing() -> None:
    table = _story_table()
    empty = table.slice(0, 0)
    assert decide_arrow(empty, context()).active == ()
    no_batches = pa.Table.from_batches([], table.schema)
    assert decide_arrow(no_batches, context()).active == ()


def _stream(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(schema, batches)


def test_A12_a_stream_that_changes_schema_midway_is_malformed_and_writes_nothing() -> None:
    table = _story_table()
    other = table.drop_columns(["status"]).to_batches()[0]

    def batches() -> Iterator[pa.RecordBatch]:
        yield table.to_batches()[0]
        yield other

    _assert_a_failing_stream_is_malformed(lambda: _stream(table.schema, batches()))


def test_A13_a_stream_whose_producer_fails_is_malformed_and_writes_nothing() -> None:
    table = _story_table()

    def batches() -> Iterator[pa.RecordBatch]:
        yield table.to_batches()[0]
        raise OSError("the storage went away")

    _assert_a_failing_stream_is_malformed(lambda: _stream(table.schema, batches()))


def _assert_a_failing_stream_is_malformed(stream: Any) -> None:
    contexts = mr.contexts_to_arrow([("turn", context())])
    for backend in BACKENDS:
        with pytest.raises(mr.InvalidInputError) as caught:
            get_batch_resolver(backend)(stream(), contexts)
        assert (caught.value.kind, caught.value.field) == (K.MALFORMED, "records")
    store = mr.MemoryStore(shared_conversations=True)
    with pytest.raises(mr.InvalidInputError) as caught:
        store.add_arrow(stream())
    assert caught.value.kind is K.MALFORMED
    assert store.to_arrow().num_rows == 0
    if HAS_DATASET_JOB:
        with tempfile.TemporaryDirectory() as scratch:
            output = Path(scratch) / "out"
            with pytest.raises(mr.InvalidInputError) as caught:
                mr.resolve_dataset(stream(), contexts, output)
            assert caught.value.kind is K.MALFORMED
            assert not output.exists()


def test_A14_a_scope_struct_is_not_the_flat_scope_columns() -> None:
    table = _table()
    scope = pa.StructArray.from_arrays(
        [table["scope_kind"].combine_chunks(), table["user_id"].combine_chunks()],
        names=["kind", "user_id"],
    )
    nested = table.drop_columns(["scope_kind"]).append_column("scope", scope)
    assert reject_arrow(nested)[:2] == (K.MISSING_COLUMN, "scope_kind")


@pytest.mark.parametrize(
    "list_type", [pa.list_(pa.string()), pa.large_list(pa.string()), pa.list_(pa.large_string())]
)
def test_A15_sources_null_empty_and_listed_and_a_null_source(list_type: Any) -> None:
    table = _table(record("m1"), record("m2"), record("m3"))
    sources = pa.array([None, [], ["msg-1", "msg-2"]], list_type)
    read = mr.records_from_arrow(_with_column(table, "source_message_ids", sources))
    assert [r.source_message_ids for r in read] == [(), (), ("msg-1", "msg-2")]
    with_null = pa.array([None, [], ["msg-1", None]], list_type)
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.records_from_arrow(_with_column(table, "source_message_ids", with_null))
    # As per turn: an item that is not a str.
    assert (caught.value.kind, caught.value.field, caught.value.row) == (
        K.WRONG_TYPE,
        "source_message_ids[1]",
        2,
    )


def test_A16_field_and_schema_metadata_are_ignored() -> None:
    table = _story_table()
    fields = [f.with_metadata({"origin": "crm", "PARQUET:field_id": "7"}) for f in table.schema]
    tagged = table.cast(pa.schema(fields, metadata={"pandas": "{}", "owner": "team"}))
    assert tagged.schema.field("id").metadata
    assert decide_arrow(tagged, context()) == decide_arrow(table, context())


def test_A16_an_extension_type_is_read_as_its_storage_type() -> None:
    class Label(pa.ExtensionType):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(pa.string(), "example.label")

        def __arrow_ext_serialize__(self) -> bytes:
            return b""

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type: Any, serialized: bytes) -> Label:
            return cls()

    table = _story_table()
    labelled = _with_column(
        table, "key", pa.ExtensionArray.from_storage(Label(), table["key"].combine_chunks())
    )
    assert decide_arrow(labelled, context()) == decide_arrow(table, context())
    uuids = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([b"0" * 16], pa.binary(16)))
    assert reject_arrow(_with_column(_table(), "id", uuids))[:2] == (K.WRONG_TYPE, "id")


# 4.8 Process level: tests/cli/test_process.py holds X1-X4 and X6 (they need child processes).


# The catalogue and its tests stay in step --------------------------------------------------

_ROW = re.compile(r"^\| ([TNSECGAX]\d+) \| .+ \| .+ \| (.+) \|$")
_CATALOGUE = ROOT / "docs" / "catalogue.md"


def _catalogue_rows() -> dict[str, str]:
    """Each row of docs/catalogue.md: its tests column."""
    lines = _CATALOGUE.read_text(encoding="utf-8").splitlines()
    return {m[1]: m[2] for m in map(_ROW.match, lines) if m}


def test_every_row_of_the_catalogue_has_its_test() -> None:
    rows = _catalogue_rows()
    assert len(rows) == 113
    sources = {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for folder in ("tests", "benches")
        for path in (ROOT / folder).rglob("*.py")
    }
    covered = 0
    for row, tests in rows.items():
        if tests.startswith("not tested: "):
            continue
        named = re.findall(r"`([\w/.]+)::(\w+)`", tests)
        assert named, f"{row}: name its tests as `file::function`, or say why it is not tested"
        for file, function in named:
            assert f"def {function}(" in sources[file], (row, file, function)
        covered += 1
    claimed = re.search(r"Coverage: (\d+) of 113 rows", _CATALOGUE.read_text(encoding="utf-8"))
    assert claimed is not None
    assert covered == int(claimed[1])


def test_each_test_here_is_listed_under_its_rows() -> None:
    rows = _catalogue_rows()
    named = [name for name in globals() if re.match(r"test_[TNSECGAX]\d+_", name)]
    assert len(named) > 90
    for name in named:
        for row in re.findall(r"_([TNSECGAX]\d+)(?=_)", name):
            assert f"`tests/model/test_catalogue.py::{name}`" in rows[row], (row, name)
