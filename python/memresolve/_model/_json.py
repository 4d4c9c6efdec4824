"""The JSON shape of a scope (``docs/spec.md`` §1.1): an object with ``kind`` and that
kind's ids, the owner as ``user_id``. JSON Lines and ``MemoryRecord.from_dict``'s nested rows
read it with the same rules."""

from __future__ import annotations

from typing import Any

from memresolve._model import _validate as check
from memresolve._model._scopes import SCOPE_TYPES, Scope, make_scope, scope_owner
from memresolve._model._types import SCOPE_ID_COLUMNS, SCOPE_OWNER_COLUMN
from memresolve._model._validate import Subject
from memresolve.errors import ErrorKind

__all__ = ["json_type_name", "scope_from_json", "scope_to_json"]

_SCOPE_TYPES: dict[str, type[Scope]] = {scope.kind.value: scope for scope in SCOPE_TYPES}


def json_type_name(value: object) -> str:
    """The JSON name of a parsed value's type (``object``, ``array``, ...), for messages."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def scope_to_json(scope: Scope) -> dict[str, Any]:
    """``{"kind": ..., <its ids>}``, and the owner as ``user_id`` when there is one."""
    names = SCOPE_ID_COLUMNS[scope.kind]
    obj: dict[str, Any] = {"kind": scope.kind.value, **dict(zip(names, scope.fields, strict=True))}
    owner = scope_owner(scope)
    if owner is not None:
        obj[str(SCOPE_OWNER_COLUMN[scope.kind])] = owner
    return obj


def scope_from_json(value: object, subject: Subject, field: str = "scope") -> Scope:
    nested = Subject(subject.label, subject.record_id)
    if not isinstance(value, dict):
        nested.fail(
            field,
            ErrorKind.WRONG_TYPE,
            f"must be an object with a 'kind' and that kind's ids, got {json_type_name(value)}",
        )
    if "kind" not in value:
        nested.fail(f"{field}.kind", ErrorKind.MISSING, "is missing")
    kind = value["kind"]
    if not isinstance(kind, str):
        nested.fail(
            f"{field}.kind", ErrorKind.WRONG_TYPE, f"must be a string, got {json_type_name(kind)}"
        )
    if kind not in _SCOPE_TYPES:
        nested.fail(
            f"{field}.kind",
            ErrorKind.UNKNOWN_VALUE,
            f"has unknown value {kind!r}; expected one of " + ", ".join(map(repr, _SCOPE_TYPES)),
        )
    scope_type = _SCOPE_TYPES[kind]
    names = SCOPE_ID_COLUMNS[scope_type.kind]
    owner_column = SCOPE_OWNER_COLUMN[scope_type.kind]
    for name in value:
        if name != "kind" and name not in names and name != owner_column:
            nested.fail(
                f"{field}.{name}", ErrorKind.UNKNOWN_FIELD, f"is not a field of a {kind} scope"
            )
    ids = []
    for name in names:
        if name not in value:
            nested.fail(f"{field}.{name}", ErrorKind.MISSING, "is missing")
        ids.append(check.text(value[name], nested, f"{field}.{name}"))
    owner = None
    if owner_column is not None:
        owner = check.optional_text(value.get(owner_column), nested, f"{field}.{owner_column}")
    return make_scope(scope_type.kind, ids, owner)
