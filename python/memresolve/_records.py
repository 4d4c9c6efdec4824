"""The inputs of a resolution: memory records, the retrieval context, forget tombstones.

All three are frozen and validated once, at construction (``docs/spec.md`` §1): a value
that exists is a valid one, so both backends see exactly the same domain.
``repr`` never shows a record's ``value``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from memresolve import _backend, _native_loader
from memresolve import _validate as check
from memresolve._scopes import SCOPE_TYPES, Scope
from memresolve._types import SCOPE_ID_COLUMNS, Authority, Status
from memresolve._validate import Subject
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = [
    "ForgetTombstone",
    "MemoryRecord",
    "RecordStorage",
    "RetrievalContext",
    "check_tombstone_scope",
]

_SCOPE_TYPE_NAMES = "UserScope, CharacterScope, ConversationScope or SceneScope"
_SCOPE_FIELD_NAMES = {kind: SCOPE_ID_COLUMNS[kind.kind] for kind in SCOPE_TYPES}


def _scope(value: object, subject: Subject, field_name: str) -> Scope:
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
    # (object.__setattr__, crafted pickle state): check its ids again.
    for name, field_value in zip(_SCOPE_FIELD_NAMES[type(scope)], scope.fields, strict=True):
        check.text(field_value, subject, f"{field_name}.{name}")
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
    "scope": _scope,
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
RECORD_FIELDS = tuple(_RECORD_RULES)


def _record_subject(record_id: str | None) -> Subject:
    if record_id is None:
        return Subject("record")
    return Subject(f"record {record_id!r}", record_id)


def normalize_record_field(record_id: str | None, field_name: str, value: object) -> object:
    """One field checked by its rule: the normalised value, or ``InvalidInputError``.

    ``record_id`` is the already-checked id, ``None`` while checking the id itself.
    """
    return _RECORD_RULES[field_name](value, _record_subject(record_id), field_name)


class RecordStorage:
    """The pure-Python storage of a record: checks every field once, then holds it.

    The twin of the compiled ``memresolve._native.RecordCore``, which stores the
    same fields natively (and a copy the Rust resolver reads without Python).
    ``MemoryRecord`` is built on one of the two; both accept exactly the same
    arguments and raise the same errors.
    """

    __slots__ = RECORD_FIELDS

    def __new__(
        cls,
        *,
        id: str,
        key: str,
        value: str,
        scope: Scope,
        status: Status | str,
        authority: Authority | str,
        confidence: float,
        valid_from: datetime,
        valid_until: datetime | None = None,
        source_message_ids: Iterable[str] = (),
        supersedes: str | None = None,
        version: int,
        observed_at: datetime | None = None,
    ) -> Self:
        given = {
            "id": id,
            "key": key,
            "value": value,
            "scope": scope,
            "status": status,
            "authority": authority,
            "confidence": confidence,
            "valid_from": valid_from,
            "valid_until": valid_until,
            "source_message_ids": source_message_ids,
            "supersedes": supersedes,
            "version": version,
            "observed_at": observed_at,
        }
        self = object.__new__(cls)
        subject = _record_subject(None)
        for name, rule in _RECORD_RULES.items():
            checked = rule(given[name], subject, name)
            if name == "id":
                subject = _record_subject(str(checked))
            # The slot itself: a subclass may override the attribute (a property).
            _SLOT_SETTERS[name](self, checked)
        return self


_SLOT_SETTERS: dict[str, Callable[[object, object], None]] = {
    name: RecordStorage.__dict__[name].__set__ for name in RECORD_FIELDS
}


def _storage_class() -> type[RecordStorage]:
    # The backend chosen for the process decides the storage too.
    native = _backend.NATIVE
    storage: type[RecordStorage] = RecordStorage if native is None else native.RecordCore
    return storage


if TYPE_CHECKING:
    _Storage = RecordStorage
else:
    _Storage = _storage_class()


@dataclass(frozen=True, init=False)
class MemoryRecord(_Storage):
    """One stored memory: a value for a semantic ``key`` in a ``scope``, with its lifecycle.

    All arguments are keyword-only. ``status`` and ``authority`` take an enum
    member or its string value (``"user-corrected"``). ``observed_at`` is when
    the evidence behind the record was observed (for a summary, its oldest
    source); ``None`` means ``valid_from``.

    Every field is checked once, here; a record that exists is a valid one.
    With the compiled extension the fields are stored natively as well, so the
    Rust resolver reads them without touching Python objects.

    Raises:
        InvalidInputError: a field breaks a rule of ``docs/spec.md`` §1.3; the error names the
            record id and the field.
    """

    __slots__ = ()

    id: str
    key: str
    value: str = field(repr=False)  # may be private text: never shown, never logged
    scope: Scope
    status: Status
    authority: Authority
    confidence: float
    valid_from: datetime
    valid_until: datetime | None
    source_message_ids: tuple[str, ...]
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
        "__reduce__": MemoryRecord.__reduce__,
    }
    twin: type[MemoryRecord] = dataclass(frozen=True, init=False)(
        type("PurePythonMemoryRecord", (RecordStorage,), namespace)
    )
    return twin


PurePythonMemoryRecord = _pure_python_twin()
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
    """Every candidate is a ``MemoryRecord`` and no two share an id (the reference's check)."""
    first_row_of: dict[str, int] = {}
    for row, record in enumerate(rows):
        if not isinstance(record, RECORD_TYPES):
            raise not_a_record_error(record, row)
        earlier = first_row_of.setdefault(record.id, row)
        if earlier != row:
            raise duplicate_id_error(record.id, earlier, row)
    return rows  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalContext:
    """Where and when memories are retrieved: the current user, character, conversation, scene.

    ``now`` is required: memresolve never reads the clock, so every worker
    given the same context picks the same winners.
    """

    now: datetime
    user_id: str
    character_id: str
    conversation_id: str
    scene_id: str | None = None

    def __post_init__(self) -> None:
        subject = Subject("context")
        object.__setattr__(self, "now", check.instant(self.now, subject, "now"))
        for name in ("user_id", "character_id", "conversation_id"):
            object.__setattr__(self, name, check.text(getattr(self, name), subject, name))
        object.__setattr__(
            self, "scene_id", check.optional_text(self.scene_id, subject, "scene_id")
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetTombstone:
    """A user's "forget this": blocks ``key`` in ``scope`` for evidence up to a moment.

    A record with the same key and an equal scope whose evidence time
    (``observed_at``, else ``valid_from``) is at or before
    ``blocks_sources_before`` is excluded as ``forgotten``, whatever ``now``
    is. The tombstone never holds the forgotten value.
    """

    key: str
    scope: Scope
    forgotten_at: datetime
    blocks_sources_before: datetime

    def __post_init__(self) -> None:
        key = check.text(self.key, Subject("tombstone"), "key")
        subject = Subject(f"tombstone for key {key!r}")
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "scope", _scope(self.scope, subject, "scope"))
        object.__setattr__(
            self, "forgotten_at", check.instant(self.forgotten_at, subject, "forgotten_at")
        )
        object.__setattr__(
            self,
            "blocks_sources_before",
            check.instant(self.blocks_sources_before, subject, "blocks_sources_before"),
        )


def check_tombstone_scope(tombstone: ForgetTombstone, row: int) -> None:
    """The scope rule again, at resolve time (see ``_scope``).

    The reference checks every tombstone with it; the native kernel calls it
    for a scope its fast path does not take, so both raise the same error.
    """
    _scope(tombstone.scope, Subject(f"tombstones[{row}]"), "scope")
