"""Memory records: the one record class, on the native or the pure-Python storage.

A record is frozen and validated once, at construction (``docs/spec.md``
§1.3): a record that exists is a valid one, so both backends see exactly the
same domain. ``repr`` never shows a record's ``value``. Every way to build a
record (the constructor, ``from_dict``, JSON Lines, Arrow) applies the same
rules and the same defaults (``RECORD_DEFAULTS``), and reports every problem,
a missing or unknown argument included, as ``InvalidInputError``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Generic, Self, TypeVar, overload

from memresolve import _backend, _native_loader
from memresolve._model import _rows
from memresolve._model import _validate as check
from memresolve._model._scopes import SCOPE_TYPES, Scope, make_scope, scope_owner
from memresolve._model._types import (
    SCOPE_ID_COLUMNS,
    SCOPE_OWNER_COLUMN,
    Authority,
    AuthorityName,
    Status,
    StatusName,
)
from memresolve._model._validate import Subject
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "RECORD_DEFAULTS",
    "RECORD_FIELDS",
    "RECORD_TYPES",
    "MemoryRecord",
    "PurePythonMemoryRecord",
    "RecordStorage",
    "check_records",
    "check_scope",
]

_SCOPE_TYPE_NAMES = "UserScope, CharacterScope, ConversationScope or SceneScope"


def check_scope(value: object, subject: Subject, field_name: str) -> Scope:
    """The scope rule: exactly one of the four scope classes, with valid ids and owner."""
    # Exactly these classes: a subclass could change equality or its kind and so
    # meet, or pose as, another scope.
    if type(value) not in SCOPE_TYPES:
        subject.fail(
            field_name,
            ErrorKind.WRONG_TYPE,
            f"must be a {_SCOPE_TYPE_NAMES}, got {type(value).__name__}",
        )
    scope: Scope = value  # type: ignore[assignment]
    # Checked when built, but a frozen object can still be altered
    # (object.__setattr__, crafted pickle state): check its ids again, and
    # rebuild it if one is no longer a plain str (a str subclass is judged by value).
    ids = [
        check.text(field_value, subject, f"{field_name}.{name}")
        for name, field_value in zip(SCOPE_ID_COLUMNS[scope.kind], scope.fields, strict=True)
    ]
    owner = stored_owner = scope_owner(scope)
    owner_column = SCOPE_OWNER_COLUMN[scope.kind]
    if owner_column is not None:
        owner = check.optional_text(stored_owner, subject, f"{field_name}.{owner_column}")
    if owner is not stored_owner or any(a is not b for a, b in zip(ids, scope.fields, strict=True)):
        return make_scope(scope.kind, ids, owner)
    return scope


def _status(value: object, subject: Subject, field_name: str) -> Status:
    return check.enum_member(value, Status, subject, field_name)


def _authority(value: object, subject: Subject, field_name: str) -> Authority:
    return check.enum_member(value, Authority, subject, field_name)


# Every field of a record, in the order it is checked, with its rule. The
# native storage checks in this order too, and calls ``normalize_record_field``
# for any value its fast paths do not take, so both apply these very rules.
_RECORD_RULES: dict[str, Callable[[object, Subject, str], object]] = {
    "id": check.text,
    "key": check.text,
    "value": check.any_text,
    "scope": check_scope,
    "status": _status,
    "authority": _authority,
    "confidence": check.confidence,
    "valid_from": check.instant,
    "valid_until": check.optional_instant,
    "source_message_ids": check.text_tuple,
    "supersedes": check.optional_text,
    "version": check.int64,
    "observed_at": check.optional_instant,
}
RECORD_FIELDS: Final = tuple(_RECORD_RULES)

#: The fields a record may omit, and the value each then takes (docs/spec.md
#: §1.3). The only defaults: every reader applies these, none other.
RECORD_DEFAULTS: Final[Mapping[str, object]] = {
    "status": Status.ACTIVE,
    "valid_until": None,
    "source_message_ids": (),
    "supersedes": None,
    "version": 1,
    "observed_at": None,
}


class _Missing:
    """The default of a constructor argument that was not given."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


MISSING: Final = _Missing()


def _record_subject(record_id: str | None) -> Subject:
    if record_id is None:
        return Subject("record")
    return Subject(f"record {record_id!r}", record_id)


def normalize_record_field(record_id: str | None, field_name: str, value: object) -> object:
    """One field checked by its rule: the normalised value, or ``InvalidInputError``.

    ``record_id`` is the already-checked id, ``None`` while checking the id itself.
    """
    return _RECORD_RULES[field_name](value, _record_subject(record_id), field_name)


def missing_field_error(record_id: str | None, field_name: str) -> InvalidInputError:
    """A required argument of the constructor was not given."""
    return InvalidInputError(
        f"{_record_subject(record_id).label}: field {field_name!r} is missing",
        kind=ErrorKind.MISSING,
        record_id=record_id,
        field=field_name,
    )


def argument_error(id_value: object, positional: int, unknown: Sequence[str]) -> InvalidInputError:
    """Positional arguments, or keyword arguments that are not fields of a record."""
    record_id = id_value if type(id_value) is str and id_value else None
    label = _record_subject(record_id).label
    if positional:
        return InvalidInputError(
            f"{label}: MemoryRecord takes keyword arguments only, got {positional} positional",
            kind=ErrorKind.WRONG_TYPE,
            record_id=record_id,
        )
    name = unknown[0]
    return InvalidInputError(
        f"{label}: field {name!r} is not a field of MemoryRecord"
        f" (fields: {', '.join(RECORD_FIELDS)})",
        kind=ErrorKind.UNKNOWN_FIELD,
        record_id=record_id,
        field=name,
    )


def _check_fields(self: object, given: dict[str, object]) -> None:
    """Checks every field of ``given`` (defaults filled in) into the slots of ``self``."""
    subject = _record_subject(None)
    record_id: str | None = None
    for name, rule in _RECORD_RULES.items():
        value = given[name]
        if value is MISSING:
            if name not in RECORD_DEFAULTS:
                raise missing_field_error(record_id, name)
            value = RECORD_DEFAULTS[name]
        checked = rule(value, subject, name)
        if name == "id":
            record_id = str(checked)
            subject = _record_subject(record_id)
        # The slot itself: a subclass may override the attribute (a property).
        _SLOT_SETTERS[name](self, checked)


class RecordStorage:
    """The pure-Python storage of a record: checks every field once, then holds it.

    The twin of the compiled ``memresolve._native.RecordCore``, which stores the
    same fields natively (and a copy the Rust resolver reads without Python).
    ``MemoryRecord`` is built on one of the two; both accept exactly the same
    arguments and raise the same errors.
    """

    __slots__ = RECORD_FIELDS

    if TYPE_CHECKING:
        # What a type checker sees: the public signature (see MemoryRecord).
        def __new__(
            cls,
            *,
            id: str,
            key: str,
            value: str,
            scope: Scope,
            status: Status | StatusName = Status.ACTIVE,
            authority: Authority | AuthorityName,
            confidence: float,
            valid_from: datetime,
            valid_until: datetime | None = None,
            source_message_ids: Iterable[str] = (),
            supersedes: str | None = None,
            version: int = 1,
            observed_at: datetime | None = None,
        ) -> Self: ...

    else:

        def __new__(
            cls,
            *args,
            id=MISSING,
            key=MISSING,
            value=MISSING,
            scope=MISSING,
            status=MISSING,
            authority=MISSING,
            confidence=MISSING,
            valid_from=MISSING,
            valid_until=MISSING,
            source_message_ids=MISSING,
            supersedes=MISSING,
            version=MISSING,
            observed_at=MISSING,
            **unknown,
        ):
            if args or unknown:
                raise argument_error(id, len(args), tuple(unknown))
            self = object.__new__(cls)
            _check_fields(self, locals())
            return self


_SLOT_SETTERS: dict[str, Callable[[object, object], None]] = {
    name: RecordStorage.__dict__[name].__set__ for name in RECORD_FIELDS
}


# Each field is a read-only property over its slot, so ``object.__setattr__`` cannot
# rewrite a built record either (the compiled storage refuses it too): a record is
# decided as it was built, by both backends.
def _read_only_fields() -> None:
    for name in RECORD_FIELDS:
        slot = RecordStorage.__dict__[name]
        setattr(RecordStorage, name, property(slot.__get__, doc=f"The record's {name}."))


_read_only_fields()

G = TypeVar("G")
S = TypeVar("S")


class _Field(Generic[G, S]):
    """For type checkers only: a field read as ``G`` and given as ``S``.

    ``status`` reads as a ``Status`` but may be given as ``"expired"``, in
    the constructor and in ``dataclasses.replace``; a typo such as
    ``"Active"`` is then a type error, not only a run-time one.
    """

    @overload
    def __get__(self, obj: None, owner: Any) -> _Field[G, S]: ...
    @overload
    def __get__(self, obj: object, owner: Any) -> G: ...
    def __get__(self, obj: object, owner: Any) -> Any: ...  # pragma: no cover
    def __set__(self, obj: object, value: S) -> None: ...  # pragma: no cover


class _RecordMethods:
    """What a record can do beyond holding its fields (shared by the storage twins)."""

    __slots__ = ()

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Self:
        """The record of a flat ``row``, named as the Arrow columns (``scope_kind``,
        ``user_id``, ...; see ``to_dict``), or of a row in the JSON Lines shape (a
        nested ``scope`` object such as ``{"kind": "user", "user_id": "u1"}``, instants
        as ISO-8601 text with an offset), as API payloads carry records. Missing
        optional fields take the record defaults; an unknown name, an id the scope
        kind does not use, or a row with both a nested ``scope`` and flat scope
        columns (``inconsistent``) is an ``InvalidInputError``.
        """
        return _rows.from_row(cls, row, RECORD_FIELDS, normalize_record_field)

    def to_dict(self) -> dict[str, Any]:
        """The record as a flat row: every field, the scope as ``scope_kind`` and
        the four id columns (``None`` where unused), enums as their string
        values. ``from_dict`` reads it back into an equal record.
        """
        return _rows.to_row({name: getattr(self, name) for name in RECORD_FIELDS})

    def corrected(
        self,
        value: str,
        *,
        at: datetime,
        id: str,
        authority: Authority | AuthorityName = Authority.USER_CORRECTED,
        confidence: float = 1.0,
        source_message_ids: Iterable[str] = (),
    ) -> Self:
        """A new record that corrects this one: same key and scope, ``supersedes``
        this record, ``version`` one more, valid from ``at``.

        Raises:
            InvalidInputError: an argument breaks a rule, or the version would
                not fit in 64 bits.
        """
        return self._successor(
            id=id,
            value=value,
            authority=authority,
            confidence=confidence,
            valid_from=at,
            source_message_ids=source_message_ids,
            version=getattr(self, "version") + 1,  # noqa: B009 - the slot, typed on the subclass
        )

    def retracted(
        self,
        *,
        at: datetime,
        id: str,
        authority: Authority | AuthorityName = Authority.USER_CORRECTED,
        source_message_ids: Iterable[str] = (),
    ) -> Self:
        """A retraction of this record: "that is no longer true" from ``at`` on.

        Same key and scope, ``supersedes`` this record, ``version`` one more, valid
        from ``at`` with no end, stored ``retracted`` and with an empty value. A
        retraction is never active (stage 2 excludes it); its edge hides this record
        from ``at`` on, in every context that sees this record, and not before: a
        turn replayed before ``at`` still shows the old value (``docs/spec.md`` §2.2).
        (Its version is this record's plus one, or the largest version when this record
        has it.)
        It retracts this one record: ``MemoryStore.retract`` retracts a whole slot.

        Raises:
            InvalidInputError: an argument breaks a rule, or the version would
                not fit in 64 bits.
        """
        return self._successor(
            id=id,
            value="",
            status=Status.RETRACTED,
            authority=authority,
            confidence=1.0,
            valid_from=at,
            source_message_ids=source_message_ids,
            # A retraction never reaches stage 5, so its version orders only the history:
            # the last version can be retracted too.
            version=min(getattr(self, "version") + 1, check.INT64_MAX),  # noqa: B009
        )

    def _successor(self, **fields: object) -> Self:
        """A record of this one's key and scope that ``supersedes`` it, with ``fields``."""
        build: Callable[..., Self] = type(self)
        return build(
            key=getattr(self, "key"),  # noqa: B009 - the slot, typed on the subclass
            scope=getattr(self, "scope"),  # noqa: B009
            supersedes=getattr(self, "id"),  # noqa: B009
            **fields,
        )


def _storage_class() -> type[RecordStorage]:
    # The backend chosen for the process decides the storage too.
    native = _backend.NATIVE
    storage: type[RecordStorage] = RecordStorage if native is None else native.RecordCore
    return storage


if TYPE_CHECKING:
    _Storage = RecordStorage
else:
    _Storage = _storage_class()

_DOC = """One stored memory: a value for a semantic ``key`` in a ``scope``, with its lifecycle.

    All arguments are keyword-only; ``status`` (default ``active``),
    ``valid_until``, ``source_message_ids`` (default ``()``), ``supersedes``,
    ``version`` (default 1) and ``observed_at`` may be omitted. ``status``
    and ``authority`` take an enum member or its string value
    (``"user-corrected"``). ``observed_at`` is when the evidence behind the
    record was observed (for a summary, its oldest source); ``None`` means
    ``valid_from``.

    Every field is checked once, here; a record that exists is a valid one.
    With the compiled extension the fields are stored natively as well, so the
    Rust resolver reads them without touching Python objects.

    Raises:
        InvalidInputError: an argument is missing, unknown or breaks a rule
            of ``docs/spec.md`` §1.3; the error names the record id and field.
    """


@dataclass(frozen=True, init=False, kw_only=True)
class MemoryRecord(_RecordMethods, _Storage):
    __doc__ = _DOC
    __slots__ = ()

    id: str
    key: str
    value: str = field(repr=False)  # may be private text: never shown, never logged
    scope: Scope
    if TYPE_CHECKING:
        status: _Field[Status, Status | StatusName] = _Field()
        authority: _Field[Authority, Authority | AuthorityName] = _Field()
    else:
        status: Status
        authority: Authority
    confidence: float
    valid_from: datetime
    valid_until: datetime | None
    # Links to the user's messages, erased with the value when forgotten: not shown either.
    source_message_ids: tuple[str, ...] = field(repr=False)
    supersedes: str | None
    version: int
    observed_at: datetime | None

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt through the constructor: works for either storage, re-checks on load.
        return (
            _rebuild_record,
            (type(self), {name: getattr(self, name) for name in RECORD_FIELDS}),
        )


def _rebuild_record(cls: type[MemoryRecord], fields: dict[str, Any]) -> MemoryRecord:
    return cls(**fields)


def _signature() -> inspect.Signature:
    """The constructor's signature, as ``help()`` and ``inspect`` show it on either storage."""
    annotations = {
        "status": "Status | str",
        "authority": "Authority | str",
        "source_message_ids": "Iterable[str]",
    }
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=RECORD_DEFAULTS.get(name, inspect.Parameter.empty),
            annotation=annotations.get(name, MemoryRecord.__annotations__.get(name)),
        )
        for name in RECORD_FIELDS
    ]
    return inspect.Signature(parameters, return_annotation="MemoryRecord")


def _pure_python_twin() -> type[MemoryRecord]:
    """``MemoryRecord`` itself on the pure-Python storage, or the same class body on it.

    With the extension built, this second class lets one process build both
    kinds of records: the differential tests compare them, the benchmarks
    time the reference the way a reference-only install runs it. Both
    kernels accept it (``RECORD_TYPES``). Not public: users build
    ``MemoryRecord``.
    """
    if issubclass(MemoryRecord, RecordStorage):
        return MemoryRecord
    namespace = {
        "__module__": __name__,
        "__qualname__": "PurePythonMemoryRecord",  # importable under this name (pickle)
        "__doc__": MemoryRecord.__doc__,
        "__slots__": (),
        "__annotations__": dict(MemoryRecord.__annotations__),
        "value": field(repr=False),
        "source_message_ids": field(repr=False),
        "__reduce__": MemoryRecord.__reduce__,
    }
    twin: type[MemoryRecord] = dataclass(frozen=True, init=False, kw_only=True)(
        type("PurePythonMemoryRecord", (_RecordMethods, RecordStorage), namespace)
    )
    return twin


# The shared methods are the public class's: a call of the wrong shape (Python's
# TypeError) names ``MemoryRecord.corrected()``, never the private class they live in.
def _named_as_public() -> None:
    for name, member in vars(_RecordMethods).items():
        function = getattr(member, "__func__", member)
        if callable(function) and hasattr(function, "__qualname__") and not name.startswith("__"):
            function.__qualname__ = f"MemoryRecord.{name}"


_named_as_public()
PurePythonMemoryRecord = _pure_python_twin()
MemoryRecord.__signature__ = _signature()  # type: ignore[attr-defined]
PurePythonMemoryRecord.__signature__ = _signature()  # type: ignore[attr-defined]
#: Every class whose instances are records: ``MemoryRecord``, and its
#: pure-Python twin when that is a different class.
RECORD_TYPES: tuple[type[MemoryRecord], ...] = tuple(
    dict.fromkeys((MemoryRecord, PurePythonMemoryRecord))
)


def native_core_of(record: object, row: int) -> object:
    """The native storage of a candidate the native resolver could not read directly.

    A record on the pure-Python storage (``MEMRESOLVE_BACKEND=reference`` when
    it was built, or ``PurePythonMemoryRecord``) is copied into a
    ``RecordCore``; anything else is the facade's "not a MemoryRecord" error.
    """
    if not isinstance(record, RECORD_TYPES):
        raise not_a_record_error(record, row)
    native = _native_loader.load()
    return native.RecordCore(**{name: getattr(record, name) for name in RECORD_FIELDS})


def not_a_record_error(candidate: object, row: int) -> InvalidInputError:
    return InvalidInputError(
        f"records[{row}]: expected a MemoryRecord, got {type(candidate).__name__}",
        kind=ErrorKind.WRONG_TYPE,
        field="records",
        row=row,
    )


def duplicate_id_error(record_id: str, earlier: int, row: int) -> InvalidInputError:
    return InvalidInputError(
        f"record {record_id!r}: field 'id' is not unique "
        f"(records[{earlier}] and records[{row}] share it)",
        kind=ErrorKind.DUPLICATE_ID,
        record_id=record_id,
        field="id",
        row=row,
    )


def check_records(rows: Sequence[object]) -> Sequence[MemoryRecord]:
    """Every candidate is a ``MemoryRecord`` and no two share an id (the reference's check).

    Returns the records to decide on, row for row: each one itself, except a
    subclass of ``MemoryRecord``, which is judged by what its attributes say
    (it may override a field), checked by the record rules again in a plain
    copy, as the native kernel does (``native_core_of``).
    """
    checked: list[MemoryRecord] = []
    first_row_of: dict[str, int] = {}
    for row, candidate in enumerate(rows):
        if type(candidate) in RECORD_TYPES:
            record: MemoryRecord = candidate  # type: ignore[assignment]
        elif isinstance(candidate, RECORD_TYPES):
            record = PurePythonMemoryRecord(
                **{name: getattr(candidate, name) for name in RECORD_FIELDS}
            )
        else:
            raise not_a_record_error(candidate, row)
        earlier = first_row_of.setdefault(record.id, row)
        if earlier != row:
            raise duplicate_id_error(record.id, earlier, row)
        checked.append(record)
    return checked
