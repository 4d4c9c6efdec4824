"""Differential tests of record construction: native storage vs the pure-Python twin.

``memresolve._native.RecordCore`` and ``memresolve._model._records.RecordStorage``
must accept exactly the same arguments, store equal values of equal types,
and reject everything else with the same ``InvalidInputError`` (message,
record id and field). Arguments are drawn valid, then some fields are
replaced by values from a catalogue of bad and awkward ones: wrong types,
empty strings, lone surrogates, naive and odd datetimes, subclasses that lie
about their value, numbers outside their range. A ``PanicException`` (a
``BaseException``) would escape these tests and fail them.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve._backend import available_backends
from memresolve._engine._kernels import get_backend
from memresolve._model import _records as mr_records
from memresolve._model import _scopes
from memresolve._model._call import resolve_with
from memresolve._model._records import RECORD_FIELDS, PurePythonMemoryRecord, RecordStorage
from memresolve._native_loader import module_or_none
from memresolve.testing import Scenario, memory_records, scenarios, universes
from profiles import PARITY_EXAMPLES

pytestmark = pytest.mark.skipif(
    "native" not in available_backends(), reason="memresolve._native is not built"
)
_native = module_or_none()


class _Text(str):
    """A str subclass that lies about equality and its text."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def __str__(self) -> str:
        return "lie"


class _Float(float):
    def __float__(self) -> float:
        return 5.0


class _Int(int):
    def __int__(self) -> int:
        return 2**70


class _DateTime(datetime):
    pass


class _Zone(tzinfo):
    def tzname(self, dt: datetime | None) -> str | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


class _Raising(_Zone):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        raise RuntimeError("no offset today")


class _Naive(_Zone):
    def utcoffset(self, dt: datetime | None) -> None:
        return None


class _UserScope(mr.UserScope):
    pass


def _ids() -> Iterator[str]:
    yield from ("a", "b")


_NEW_YORK = ZoneInfo("America/New_York")
_BAD_TEXT: tuple[object, ...] = (
    None,
    0,
    b"a",
    "",
    "\ud800",
    "a\udfffb",
    _Text("x"),
    ["a"],
    1.5,
)
_BAD_INSTANT: tuple[object, ...] = (
    "2026-07-01T00:00:00+00:00",
    datetime(2026, 7, 1),  # naive
    date(2026, 7, 1),
    datetime(2026, 7, 1, tzinfo=_Raising()),
    datetime(2026, 7, 1, tzinfo=_Naive()),
    datetime(2026, 7, 1, tzinfo=UTC, fold=1),  # valid: pinned with fold 0
    datetime(2026, 11, 1, 1, 30, tzinfo=_NEW_YORK, fold=1),  # valid: the second 01:30
    datetime(2026, 3, 8, 2, 30, tzinfo=_NEW_YORK),  # valid: a wall clock that never happened
    _DateTime(2026, 7, 1, tzinfo=UTC),  # valid: rebuilt as a plain datetime
    datetime(2026, 7, 1, tzinfo=timezone(timedelta(0), "Z")),  # valid: name dropped
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=23, minutes=59))),  # valid: before year 1 UTC
    datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=timezone(-timedelta(hours=23))),
    1_750_000_000,
)
BAD_VALUES: dict[str, tuple[object, ...]] = {
    "id": _BAD_TEXT,
    "key": _BAD_TEXT,
    "value": (None, 1, b"v", "\ud800", _Text("v"), "", "ok \U0001d518"),
    "scope": ("user:u1", None, {"user_id": "u1"}, _UserScope("u1")),
    "status": (
        "ACTIVE",
        "unknown",
        1,
        None,
        mr.Authority.USER_CORRECTED,
        mr.Status.EXPIRED,
        _Text("active"),
        "forgotten",
    ),
    "authority": (
        "User-Corrected",
        "admin",
        3,
        None,
        mr.Status.ACTIVE,
        mr.Authority.MODEL_INFERRED,
        "user-confirmed",
    ),
    "confidence": (
        True,
        False,
        "0.5",
        None,
        math.nan,
        math.inf,
        -math.inf,
        -0.1,
        1.0000001,
        2,
        -1,
        10**30,
        -(10**5000),
        _Float(0.5),
        _Int(1),
        0,
        1,
        -0.0,
        5e-324,
    ),
    "valid_from": (None, *_BAD_INSTANT),
    "valid_until": _BAD_INSTANT,
    "source_message_ids": (
        "abc",
        b"x",
        None,
        [""],
        ["a", 1],
        ("\ud800",),
        ["a", "b"],
        ("a", _Text("b")),
        5,
        {"a": 1},
        frozenset(),
    ),
    "supersedes": tuple(value for value in _BAD_TEXT if value is not None),
    "version": (True, 1.5, "1", 2**63, -(2**63) - 1, _Int(3), None, 2**63 - 1, -(2**63)),
    "observed_at": _BAD_INSTANT,
}


def _describe(value: object) -> tuple[object, ...]:
    """Value, exact type, and for instants what equality ignores: offset, zone type, fold."""
    if isinstance(value, datetime):
        return (type(value), value, value.utcoffset(), type(value.tzinfo), value.fold)
    if isinstance(value, float) and math.isnan(value):
        return (float, "nan")
    if isinstance(value, tuple):
        return (tuple, tuple(map(_describe, value)))
    return (type(value), value)


def _outcome(factory: Callable[..., object], arguments: dict[str, Any]) -> tuple[object, ...]:
    try:
        built = factory(**arguments)
    except mr.InvalidInputError as error:
        return ("InvalidInputError", str(error), error.record_id, error.field, error.kind)
    except Exception as error:
        return (type(error).__name__,)
    return ("built", tuple(_describe(getattr(built, name)) for name in RECORD_FIELDS))


def _arguments(record: mr.MemoryRecord, replaced: dict[str, object]) -> dict[str, Any]:
    arguments: dict[str, Any] = {name: getattr(record, name) for name in RECORD_FIELDS}
    arguments.update(replaced)
    return arguments


@st.composite
def _argument_sets(draw: st.DrawFn) -> tuple[mr.MemoryRecord, dict[str, object]]:
    record = draw(memory_records(draw(universes())))
    fields = draw(st.lists(st.sampled_from(RECORD_FIELDS), max_size=3, unique=True))
    # Drawn by index: some catalogued values cannot even be hashed (a raising tzinfo).
    return record, {
        name: BAD_VALUES[name][draw(st.integers(0, len(BAD_VALUES[name]) - 1))] for name in fields
    }


@settings(max_examples=PARITY_EXAMPLES)
@given(_argument_sets())
def test_both_storages_accept_and_reject_alike(
    drawn: tuple[mr.MemoryRecord, dict[str, object]],
) -> None:
    assert _native is not None
    record, replaced = drawn
    native = _outcome(_native.RecordCore, _arguments(record, replaced))
    twin = _outcome(RecordStorage, _arguments(record, replaced))
    assert native == twin


def _minimal(**changes: Any) -> dict[str, Any]:
    """The arguments of a small valid record, with ``changes``."""
    return {
        "id": "m",
        "key": "k",
        "value": "v",
        "scope": mr.UserScope("u"),
        "status": "active",
        "authority": "user-confirmed",
        "confidence": 0.5,
        "valid_from": datetime(2026, 7, 1, tzinfo=UTC),
        "version": 1,
        **changes,
    }


@pytest.mark.parametrize("field", RECORD_FIELDS)
def test_every_catalogued_value_alone(field: str) -> None:
    assert _native is not None
    base = mr.MemoryRecord(**_minimal())
    for bad in BAD_VALUES[field]:
        arguments = _arguments(base, {field: bad})
        assert _outcome(_native.RecordCore, arguments) == _outcome(RecordStorage, arguments), bad


def test_a_generator_of_ids_is_read_once_by_either_storage() -> None:
    assert _native is not None
    factories: tuple[Callable[..., Any], ...] = (_native.RecordCore, RecordStorage)
    for factory in factories:
        built = factory(**_minimal(source_message_ids=_ids()))
        assert built.source_message_ids == ("a", "b")


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((), {"id": "m"}, (mr.ErrorKind.MISSING, "key", None, "m")),
        ((), {"key": "k"}, (mr.ErrorKind.MISSING, "id", None, None)),
        (("m",), {}, (mr.ErrorKind.WRONG_TYPE, None, None, None)),
        (("m",), {"id": "m", "key": "k"}, (mr.ErrorKind.WRONG_TYPE, None, None, "m")),
        (
            (),
            {"id": "m", "valid_untill": 3},
            (mr.ErrorKind.UNKNOWN_FIELD, "valid_untill", None, "m"),
        ),
        ((), {"id": "", "colour": 3}, (mr.ErrorKind.UNKNOWN_FIELD, "colour", None, None)),
    ],
)
def test_missing_positional_and_unknown_arguments_are_the_same_error_on_both(
    args: tuple[object, ...], kwargs: dict[str, object], expected: tuple[object, ...]
) -> None:
    # Not a TypeError naming an internal class: an InvalidInputError naming MemoryRecord.
    assert _native is not None
    errors = []
    factories: tuple[Callable[..., Any], ...] = (
        _native.RecordCore,
        RecordStorage,
        mr.MemoryRecord,
        PurePythonMemoryRecord,
    )
    for factory in factories:
        with pytest.raises(mr.InvalidInputError) as caught:
            factory(*args, **kwargs)
        errors.append((caught.value.where(), str(caught.value)))
    assert errors[0][0] == expected
    assert len(set(errors)) == 1, errors


def test_left_out_fields_take_the_record_defaults_on_both() -> None:
    assert _native is not None
    arguments = _minimal()
    for name in mr_records.RECORD_DEFAULTS:
        arguments.pop(name, None)
    built = [factory(**arguments) for factory in (_native.RecordCore, RecordStorage)]
    for record in built:
        assert {name: getattr(record, name) for name in mr_records.RECORD_DEFAULTS} == dict(
            mr_records.RECORD_DEFAULTS
        )


def test_source_message_ids_none_is_rejected_not_taken_for_the_default() -> None:
    assert _native is not None
    arguments = _minimal(source_message_ids=None)
    outcome = _outcome(_native.RecordCore, arguments)
    assert outcome == _outcome(RecordStorage, arguments)
    assert outcome[0] == "InvalidInputError"
    assert outcome[3] == "source_message_ids"


# The public class on either storage -------------------------------------------------------


def _twin_of(record: mr.MemoryRecord) -> mr.MemoryRecord:
    return PurePythonMemoryRecord(**{name: getattr(record, name) for name in RECORD_FIELDS})


@settings(max_examples=max(50, PARITY_EXAMPLES // 4))
@given(scenarios())
def test_records_on_either_storage_resolve_alike(scenario: Scenario) -> None:
    twins = tuple(map(_twin_of, scenario.records))
    for backend in available_backends():
        kernel = get_backend(backend)
        native_stored = resolve_with(
            kernel.resolve_rows, scenario.records, scenario.context, scenario.tombstones
        )
        twin_stored = resolve_with(
            kernel.resolve_rows, twins, scenario.context, scenario.tombstones
        )
        assert [r.id for r in twin_stored.active] == [r.id for r in native_stored.active]
        assert twin_stored.excluded == native_stored.excluded
        assert twin_stored.trace == native_stored.trace


@settings(max_examples=max(50, PARITY_EXAMPLES // 4))
@given(scenarios(max_records=1))
def test_the_class_behaves_alike_on_either_storage(scenario: Scenario) -> None:
    for record in scenario.records:
        twin = _twin_of(record)
        twin_name = type(
            twin
        ).__qualname__  # MemoryRecord itself under MEMRESOLVE_BACKEND=reference
        assert repr(twin) == repr(record).replace("MemoryRecord(", f"{twin_name}(", 1)
        assert "value=" not in repr(record)
        assert hash(twin) == hash(record)
        assert dataclasses.astuple(twin) == dataclasses.astuple(record)
        assert dataclasses.asdict(twin) == dataclasses.asdict(record)
        assert [f.name for f in dataclasses.fields(twin)] == list(RECORD_FIELDS)
        assert [f.name for f in dataclasses.fields(record)] == list(RECORD_FIELDS)
        assert pickle.loads(pickle.dumps(record)) == record
        assert pickle.loads(pickle.dumps(twin)) == twin
        assert copy.deepcopy(record) == record
        changed = dataclasses.replace(record, key="other")
        assert type(changed) is type(record)
        assert changed.key == "other"
        assert dataclasses.replace(twin, key="other") == _twin_of(changed)
        for built in (record, twin):
            with pytest.raises(dataclasses.FrozenInstanceError):
                built.key = "x"  # type: ignore[misc]
            with pytest.raises(AttributeError):
                built.__dict__  # noqa: B018 - slots only, as before


def test_a_scope_altered_before_construction_is_rejected_by_both() -> None:
    assert _native is not None
    scope = mr.CharacterScope("u", "c")
    _scopes._CHARACTER["character_id"](scope, 5)  # only the package's own slot writer can
    arguments = _minimal(scope=scope)
    outcome = _outcome(_native.RecordCore, arguments)
    assert outcome == _outcome(RecordStorage, arguments)
    assert outcome[0] == "InvalidInputError"
    assert outcome[3] == "scope.character_id"
