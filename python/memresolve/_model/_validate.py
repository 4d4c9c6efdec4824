"""The one set of input rules (``docs/spec.md`` §1 and §5), shared by every constructor.

Each checker takes the value, a ``Subject`` saying whose field it is, and the
field's name; it returns the value normalised (plain ``str``, enum member,
``float``, ``tuple``) or raises ``InvalidInputError`` naming both. Messages
never quote a record's ``value``: it may be private text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum
from typing import NoReturn, TypeVar

from memresolve.errors import ErrorKind, InvalidInputError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICROSECOND = timedelta(microseconds=1)
#: The widest UTC offset a ``datetime.timezone`` takes (strictly under a day).
WIDEST_OFFSET = timedelta(hours=24) - _ONE_MICROSECOND
#: The first and last instants an aware Python datetime can name, in microseconds
#: (``datetime.min`` at +23:59:59.999999, ``datetime.max`` at -23:59:59.999999).
#: Arrow instants outside them are ``out-of-range`` on both storages (spec §1.6):
#: no ``MemoryRecord`` could hold them, so the two storages could not agree on them.
INSTANT_MIN = (datetime.min.replace(tzinfo=timezone(WIDEST_OFFSET)) - _EPOCH) // _ONE_MICROSECOND
INSTANT_MAX = (datetime.max.replace(tzinfo=timezone(-WIDEST_OFFSET)) - _EPOCH) // _ONE_MICROSECOND
INSTANT_RANGE_PROBLEM = (
    "is outside the instants a Python datetime can name (years 1 to 9999, "
    "give or take a day of UTC offset); write null for an open end"
)

E = TypeVar("E", bound=Enum)


@dataclass(frozen=True, slots=True)
class Subject:
    """Whose field is being checked: ``record 'm1'``, ``context``, ``tombstone``..."""

    label: str
    record_id: str | None = None

    def fail(self, field: str, kind: ErrorKind, problem: str) -> NoReturn:
        raise InvalidInputError(
            f"{self.label}: field {field!r} {problem}",
            kind=kind,
            record_id=self.record_id,
            field=field,
        )


def _type_name(value: object) -> str:
    return type(value).__name__


def text(value: object, subject: Subject, field: str) -> str:
    """A non-empty ``str`` that is valid Unicode (no lone surrogates)."""
    checked = any_text(value, subject, field)
    if not checked:
        subject.fail(field, ErrorKind.EMPTY, "must not be empty")
    return checked


def any_text(value: object, subject: Subject, field: str) -> str:
    """A ``str`` (possibly empty) that is valid Unicode; never quoted in messages."""
    if not isinstance(value, str):
        subject.fail(field, ErrorKind.WRONG_TYPE, f"must be a str, got {_type_name(value)}")
    # A subclass may override comparison or encode(); keep only its characters.
    plain = value if type(value) is str else str.__str__(value)
    try:
        plain.encode("utf-8")
    except UnicodeEncodeError as exc:
        subject.fail(
            field,
            ErrorKind.INVALID_UNICODE,
            f"contains a lone surrogate at index {exc.start}, which is not valid Unicode",
        )
    return plain


def optional_text(value: object, subject: Subject, field: str) -> str | None:
    """``None`` or a non-empty valid ``str``."""
    return None if value is None else text(value, subject, field)


def text_tuple(value: object, subject: Subject, field: str) -> tuple[str, ...]:
    """Any iterable of non-empty valid ``str`` (but not a lone ``str``), as a tuple."""
    if isinstance(value, str | bytes):
        subject.fail(
            field,
            ErrorKind.WRONG_TYPE,
            f"must be a sequence of str, not a single {_type_name(value)}",
        )
    if not isinstance(value, Iterable):
        subject.fail(
            field, ErrorKind.WRONG_TYPE, f"must be a sequence of str, got {_type_name(value)}"
        )
    return tuple(text(item, subject, f"{field}[{i}]") for i, item in enumerate(value))


def instant(value: object, subject: Subject, field: str) -> datetime:
    """An aware ``datetime``, pinned to its UTC offset. A naive one is an error, never UTC.

    The result is a plain ``datetime`` with a fixed-offset ``timezone``: the same
    instant and the same offset as given. Pinning matters because Python compares
    two datetimes of one ``ZoneInfo`` by wall clock, ignoring ``fold``, so around
    a daylight-saving change they would not compare as the instants they name.
    """
    if not isinstance(value, datetime):
        subject.fail(
            field,
            ErrorKind.WRONG_TYPE,
            f"must be a datetime with a time zone, got {_type_name(value)}",
        )
    try:
        offset = value.utcoffset()
    except Exception as exc:
        subject.fail(
            field,
            ErrorKind.MALFORMED,
            f"has a time zone whose utcoffset() failed: {type(exc).__name__}",
        )
    if offset is None:
        subject.fail(
            field,
            ErrorKind.NAIVE_TIME,
            "is a naive datetime; give it a time zone (for example tzinfo=timezone.utc), "
            "memresolve never assumes one",
        )
    # Rebuilt field by field: no datetime subclass or foreign tzinfo survives.
    return datetime(
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
        tzinfo=timezone(offset),
    )


def flag(value: object, field: str) -> bool:
    """A keyword flag such as ``include_excluded``: ``True`` or ``False`` (a numpy
    bool too). Anything else is ``wrong-type``: ``1`` or ``"no"`` would be a guess."""
    if isinstance(value, bool):
        return value
    kind = type(value)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"):
        return bool(value)
    Subject("argument").fail(
        field, ErrorKind.WRONG_TYPE, f"must be True or False, got {_type_name(value)}"
    )


#: An ISO-8601 date-time with a UTC offset (``Z`` or ``+hh:mm``), as text: what JSON Lines
#: and the command line take. ``fromisoformat`` alone accepts oddities such as trailing junk
#: before ``Z``.
_ISO_INSTANT = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?"
    r"(Z|[+-]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)",
    re.ASCII,
)


def instant_text(value: str, subject: Subject, field: str) -> datetime:
    """The instant ``value`` names as ISO-8601 text with a UTC offset."""
    if _ISO_INSTANT.fullmatch(value) is None:
        subject.fail(
            field, ErrorKind.MALFORMED, f"is not an ISO-8601 date-time with a UTC offset: {value!r}"
        )
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        subject.fail(field, ErrorKind.MALFORMED, f"is not an ISO-8601 date-time: {value!r}")
    return instant(moment, subject, field)


def instant_from_text(value: str, field: str) -> datetime:
    """An argument's instant, given as ISO-8601 text with a UTC offset (``--now``)."""
    return instant_text(value, Subject("argument"), field)


def optional_instant(value: object, subject: Subject, field: str) -> datetime | None:
    return None if value is None else instant(value, subject, field)


def enum_member(value: object, enum_type: type[E], subject: Subject, field: str) -> E:
    """An ``enum_type`` member, given as the member or its string value."""
    if isinstance(value, enum_type):
        return value
    allowed = ", ".join(repr(member.value) for member in enum_type)
    if not isinstance(value, str):
        subject.fail(
            field,
            ErrorKind.WRONG_TYPE,
            f"must be a {enum_type.__name__} or one of {allowed}, got {_type_name(value)}",
        )
    try:
        return enum_type(value)
    except ValueError:
        subject.fail(
            field,
            ErrorKind.UNKNOWN_VALUE,
            f"has unknown value {value!r}; expected one of {allowed}",
        )


def _shown(number: int) -> str:
    # Python refuses to print ints beyond 4,300 digits; say how big instead.
    return (
        str(number) if number.bit_length() <= 128 else f"an integer of {number.bit_length()} bits"
    )


def confidence(value: object, subject: Subject, field: str) -> float:
    """A finite number with 0 <= c <= 1, as ``float``. ``bool`` is not a number here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        subject.fail(
            field, ErrorKind.WRONG_TYPE, f"must be a float between 0 and 1, got {_type_name(value)}"
        )
    if isinstance(value, int):
        whole = int.__int__(value)  # the number itself, whatever a subclass overrides
        if not 0 <= whole <= 1:
            subject.fail(
                field, ErrorKind.OUT_OF_RANGE, f"must be between 0 and 1, got {_shown(whole)}"
            )
        return float(whole)
    number = float.__float__(value)
    if not math.isfinite(number):
        subject.fail(field, ErrorKind.NOT_FINITE, f"must be a finite number, got {number}")
    if not 0.0 <= number <= 1.0:
        subject.fail(field, ErrorKind.OUT_OF_RANGE, f"must be between 0 and 1, got {number}")
    return number


def int64(value: object, subject: Subject, field: str) -> int:
    """An ``int`` (not ``bool``) that fits in signed 64 bits."""
    if isinstance(value, bool) or not isinstance(value, int):
        subject.fail(field, ErrorKind.WRONG_TYPE, f"must be an int, got {_type_name(value)}")
    whole = int.__int__(value)
    if not INT64_MIN <= whole <= INT64_MAX:
        subject.fail(
            field, ErrorKind.OUT_OF_RANGE, f"must fit in signed 64 bits, got {_shown(whole)}"
        )
    return whole


def from_micros(micros: int) -> datetime:
    """The datetime naming ``micros``: in UTC where UTC can hold it, else at the widest
    offset that can (only the day at either end of the range needs one)."""
    if -62_135_596_800_000_000 <= micros <= 253_402_300_799_999_999:
        return _EPOCH + timedelta(microseconds=micros)
    offset = -WIDEST_OFFSET if micros > 0 else WIDEST_OFFSET
    wall_clock = _EPOCH.replace(tzinfo=None) + (timedelta(microseconds=micros) + offset)
    return wall_clock.replace(tzinfo=timezone(offset))


def to_micros(moment: datetime) -> int:
    """Microseconds since the Unix epoch, UTC: how every instant is compared (spec §1.6)."""
    return (moment - _EPOCH) // _ONE_MICROSECOND
