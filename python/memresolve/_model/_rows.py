"""Records as flat rows: the field names of the Arrow columns, for databases and dicts.

A row holds every field of a record, the scope flattened into ``scope_kind``
and the four id columns (``docs/spec.md`` §4.1): ``to_row`` writes one,
``from_row`` reads one back into an equal record. ``from_row`` also reads the
JSON Lines shape (a nested ``scope`` object, ISO-8601 instants); a row with
both a nested scope and flat scope columns is ``inconsistent``. Reading is strict, as every
reader is: an unknown name is ``unknown-field``, a missing required one
``missing`` (the record defaults fill the optional ones, as in the
constructor), and an id the scope kind does not use ``inconsistent``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from memresolve._model._json import scope_from_json
from memresolve._model._scopes import Scope, make_scope, scope_owner
from memresolve._model._types import ID_COLUMNS, SCOPE_ID_COLUMNS, SCOPE_OWNER_COLUMN, ScopeKind
from memresolve._model._validate import Subject, instant_text
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["ROW_FIELDS", "from_row", "scope_columns", "scope_from_columns", "to_row"]

T = TypeVar("T")

#: The fields of a row, in order: the record's, with the scope flattened.
_FLAT_SCOPE = ("scope_kind", *ID_COLUMNS)
_INSTANT_FIELDS = ("valid_from", "valid_until", "observed_at")

ROW_FIELDS: tuple[str, ...] = (
    "id",
    "key",
    "value",
    "scope_kind",
    *ID_COLUMNS,
    "status",
    "authority",
    "confidence",
    "valid_from",
    "valid_until",
    "source_message_ids",
    "supersedes",
    "version",
    "observed_at",
)


def scope_columns(scope: Scope) -> dict[str, str | None]:
    """``scope_kind`` and the four id columns of ``scope`` (``None`` where unused)."""
    columns: dict[str, str | None] = dict.fromkeys(ID_COLUMNS)
    for name, value in zip(SCOPE_ID_COLUMNS[scope.kind], scope.fields, strict=True):
        columns[name] = value
    owner_column = SCOPE_OWNER_COLUMN[scope.kind]
    if owner_column is not None:
        columns[owner_column] = scope_owner(scope)
    return {"scope_kind": scope.kind.value, **columns}


def scope_from_columns(columns: Mapping[str, Any], subject: Subject) -> Scope:
    """The scope of a row's ``scope_kind`` and id columns; the row's other names are ignored.

    The kind's ids are required; a conversation or scene row's ``user_id`` is
    its owner; any other id is ``inconsistent`` (it would mean another kind).
    """
    kind_name = columns.get("scope_kind")
    if kind_name is None:
        subject.fail("scope_kind", ErrorKind.MISSING, "is missing")
    if not isinstance(kind_name, str):
        subject.fail(
            "scope_kind", ErrorKind.WRONG_TYPE, f"must be a str, got {type(kind_name).__name__}"
        )
    try:
        kind = ScopeKind(kind_name)
    except ValueError:
        allowed = ", ".join(repr(member.value) for member in ScopeKind)
        subject.fail(
            "scope_kind",
            ErrorKind.UNKNOWN_VALUE,
            f"has unknown value {kind_name!r}; expected one of {allowed}",
        )
    ids = SCOPE_ID_COLUMNS[kind]
    owner_column = SCOPE_OWNER_COLUMN[kind]
    # As the Arrow readers check a row's scope: the ids the kind needs, in
    # order, then an id it does not use (docs/spec.md §5.2).
    for name in ids:
        if columns.get(name) is None:
            subject.fail(name, ErrorKind.MISSING, f"is missing; a {kind} scope needs it")
    for name in ID_COLUMNS:
        if name not in ids and name != owner_column and columns.get(name) is not None:
            subject.fail(name, ErrorKind.INCONSISTENT, f"is set, but a {kind} scope has no {name}")
    owner = None if owner_column is None else columns.get(owner_column)
    try:
        return make_scope(kind, [columns[name] for name in ids], owner)
    except InvalidInputError as error:  # an id the scope refused: say whose
        raise InvalidInputError(
            f"{subject.label}: {error}",
            kind=error.kind,
            record_id=subject.record_id,
            field=error.field,
        ) from None


def to_row(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The flat row of a record's fields (its ``scope`` flattened)."""
    row: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "scope":
            row.update(scope_columns(value))
        elif name in ("status", "authority"):
            row[name] = value.value
        elif name == "source_message_ids":
            row[name] = list(value)
        else:
            row[name] = value
    return {name: row[name] for name in ROW_FIELDS}


def from_row(
    build: Callable[..., T],
    row: object,
    record_fields: tuple[str, ...],
    check_field: Callable[[str | None, str, object], object],
) -> T:
    """The record ``build(**fields)`` makes of a flat ``row`` (see the module docstring).

    Faults are found in the constructor's field order: the fields before
    ``scope`` are checked (``check_field(record_id, name, value)``, the record
    rule) before the scope columns are read.
    """
    if not isinstance(row, Mapping):
        raise InvalidInputError(
            f"record row: expected a mapping of field names, got {type(row).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="row",
        )
    record_id = row.get("id")
    subject = (
        Subject(f"record {record_id!r}", record_id)
        if isinstance(record_id, str) and record_id
        else Subject("record")
    )
    nested = _check_names(row, subject)
    checked_id: str | None = None
    for name in record_fields[: record_fields.index("scope")]:
        if name not in row:
            subject.fail(name, ErrorKind.MISSING, "is missing")
        value = check_field(checked_id, name, row[name])
        if name == "id":
            checked_id = value  # type: ignore[assignment]
    fields = {name: row[name] for name in record_fields if name != "scope" and name in row}
    if not nested:
        fields["scope"] = scope_from_columns(row, subject)
        return build(**fields)
    # The JSON Lines shape: the scope as an object, instants as ISO-8601 text (or datetimes).
    scope = row["scope"]
    fields["scope"] = scope_from_json(scope, subject) if isinstance(scope, dict) else scope
    for name in _INSTANT_FIELDS:
        if isinstance(fields.get(name), str):
            fields[name] = instant_text(fields[name], subject, name)
    return build(**fields)


def _check_names(row: Mapping[Any, Any], subject: Subject) -> bool:
    """Refuses a name that is no field and a row of both shapes; whether it is nested."""
    nested = row.get("scope") is not None  # a null ``scope`` column is no shape
    for name in row:
        if name not in ROW_FIELDS and name != "scope":
            shown = name if isinstance(name, str) else repr(name)
            subject.fail(shown, ErrorKind.UNKNOWN_FIELD, "is not a field of a record row")
    flat_scope = [name for name in _FLAT_SCOPE if row.get(name) is not None]
    if nested and flat_scope:
        subject.fail(
            flat_scope[0],
            ErrorKind.INCONSISTENT,
            "is a flat scope column, but the row also has a nested 'scope': give one shape",
        )
    return nested
