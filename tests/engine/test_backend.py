"""Backend selection, the reference without a compiled module, and the native module's tables."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

import memresolve as mr
from memresolve import _backend, _native_loader
from memresolve._engine import _kernels
from memresolve._model import _records, _types
from memresolve.testing import identifiers


def _python(code: str, *, before: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != _backend.ENV_VAR}
    return subprocess.run(
        [sys.executable, "-c", before + textwrap.dedent(code)],
        env={**environment, **env},
        capture_output=True,
        text=True,
        check=False,
    )


# Runs before memresolve is imported: makes the compiled module unimportable.
_WITHOUT_NATIVE = "import sys; sys.modules['memresolve._native'] = None\n"
# ...or makes it look like a build from other sources.
_STALE_NATIVE = (
    "import sys, types; fake = types.ModuleType('memresolve._native');"
    " fake.__version__ = '0.0.0-stale'; sys.modules['memresolve._native'] = fake\n"
)


def test_backend_name_is_one_of_the_available_backends() -> None:
    assert mr.backend_name() in _backend.available_backends()
    assert _backend.available_backends()[0] == "reference"


def test_a_run_that_requires_the_native_core_fails_without_it() -> None:
    """What keeps CI from passing on skips: ``make test`` sets MEMRESOLVE_REQUIRE_NATIVE=1."""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    one = "engine/test_backend.py::test_backend_name_is_one_of_the_available_backends"
    run_one = f"""
        import pytest
        raise SystemExit(pytest.main(
            ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", {tests!r},
             {tests + "/" + one!r}]
        ))
    """
    done = _python(run_one, before=_WITHOUT_NATIVE, MEMRESOLVE_REQUIRE_NATIVE="1")
    assert done.returncode != 0
    assert "MEMRESOLVE_REQUIRE_NATIVE=1 but memresolve._native is not importable" in (
        done.stdout + done.stderr
    )
    allowed = _python(run_one, before=_WITHOUT_NATIVE, MEMRESOLVE_REQUIRE_NATIVE="0")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_forcing_the_reference_selects_it() -> None:
    done = _python(
        "import memresolve as mr; print(mr.backend_name())", MEMRESOLVE_BACKEND="reference"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "reference"


def test_forcing_native_selects_it_or_says_why_not() -> None:
    done = _python("import memresolve as mr; print(mr.backend_name())", MEMRESOLVE_BACKEND="native")
    if "native" in _backend.available_backends():
        assert done.stdout.strip() == "native"
    else:
        assert done.returncode != 0
        assert "BackendUnavailableError" in done.stderr
        assert "memresolve._native" in done.stderr


def test_an_unknown_backend_name_is_an_error_at_import() -> None:
    done = _python("import memresolve", MEMRESOLVE_BACKEND="fortran")
    assert done.returncode != 0
    assert "BackendUnavailableError" in done.stderr
    assert "'fortran'" in done.stderr


def test_the_reference_works_with_no_compiled_module() -> None:
    done = _python(
        """
        import memresolve as mr, memresolve.reference
        from memresolve._cli._main import main
        assert mr.backend_name() == "reference"
        assert main(["demo", "--format", "json"]) == 0
        """,
        before=_WITHOUT_NATIVE,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3


def test_forcing_native_without_a_compiled_module_says_it_is_not_built() -> None:
    done = _python("import memresolve", before=_WITHOUT_NATIVE, MEMRESOLVE_BACKEND="native")
    assert done.returncode != 0
    assert "memresolve._native is not built" in done.stderr


def test_a_stale_native_build_warns_and_falls_back_under_auto() -> None:
    done = _python(
        """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import memresolve as mr
        assert mr.backend_name() == "reference", mr.backend_name()
        print(caught[0].category.__name__, caught[0].message)
        """,
        before=_STALE_NATIVE,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("RuntimeWarning")
    assert "0.0.0-stale" in done.stdout


def test_a_stale_native_build_is_an_error_when_forced() -> None:
    done = _python("import memresolve", before=_STALE_NATIVE, MEMRESOLVE_BACKEND="native")
    assert done.returncode != 0
    assert "rebuild it" in done.stderr


def test_get_backend_rejects_unknown_names() -> None:
    with pytest.raises(mr.BackendUnavailableError):
        _kernels.get_backend("gpu")


# The compiled module ----------------------------------------------------------------------

native = _native_loader.module_or_none()
needs_native = pytest.mark.skipif(native is None, reason="memresolve._native is not built")


@needs_native
def test_native_module_is_the_packages_version() -> None:
    assert native is not None
    assert native.__version__ == mr.__version__


@needs_native
def test_native_code_tables_match_the_python_ones() -> None:
    # Every table, entry by entry and in code order: names, codes, the batch
    # decisions and their codes, the ids each scope kind is made of, error kinds.
    assert native is not None
    assert tuple(native.SCOPE_KIND_NAMES) == tuple(_types.ScopeKind)
    assert tuple(native.ID_COLUMN_NAMES) == _types.ID_COLUMNS
    assert tuple(native.STATUS_NAMES) == tuple(_types.Status)
    assert tuple(native.AUTHORITY_NAMES) == tuple(_types.Authority)
    assert tuple(native.REASON_NAMES) == tuple(_types.Reason)
    assert tuple(native.PURGE_CAUSE_NAMES) == tuple(_types.PurgeCause)
    assert tuple(native.REASON_NAMES) == tuple(_types.REASON_BY_CODE)
    assert tuple(native.DECISION_NAMES) == _types.DECISION_NAMES
    assert [native.DECISION_NAMES.index(r.value) for r in _types.Reason] == [
        _types.decision_code(r) for r in _types.Reason
    ]
    assert native.DECISION_NAMES[_types.decision_code(None)] == "active"
    assert tuple(native.ERROR_KIND_NAMES) == tuple(mr.ErrorKind)
    assert [tuple(columns) for columns in native.scope_id_columns()] == [
        _types.SCOPE_ID_COLUMNS[kind] for kind in _types.ScopeKind
    ]
    assert native.scope_owner_columns() == [
        _types.SCOPE_OWNER_COLUMN[kind] for kind in _types.ScopeKind
    ]
    assert tuple(native.CERTAINTY_NAMES) == tuple(mr.Certainty)
    assert list(_types.CERTAINTY_CODE.values()) == list(range(len(native.CERTAINTY_NAMES)))
    assert native.LIKELY_CONFIDENCE == _types.LIKELY_CONFIDENCE
    defaults = _records.RECORD_DEFAULTS
    assert (
        defaults["status"],
        defaults["version"],
    ) == (native.DEFAULT_STATUS, native.DEFAULT_VERSION)
    assert native.RESOLVER_VERSION == mr.RESOLVER_VERSION


def test_each_scope_class_is_its_kinds_table_entry() -> None:
    # The scope classes' fields are the ids of their kind, in scope-id order,
    # then the owner column of the kinds that have one.
    classes = (mr.UserScope, mr.CharacterScope, mr.ConversationScope, mr.SceneScope)
    assert tuple(cls.kind for cls in classes) == tuple(_types.ScopeKind)
    for cls in classes:
        names = tuple(field.name for field in dataclasses.fields(cls))
        owner = _types.SCOPE_OWNER_COLUMN[cls.kind]
        assert names == _types.SCOPE_ID_COLUMNS[cls.kind] + (() if owner is None else (owner,))


@needs_native
@given(
    kind=st.sampled_from(tuple(_types.ScopeKind)),
    ids=st.lists(identifiers(6), min_size=2, max_size=2),
)
def test_native_scope_id_equals_the_reference(kind: str, ids: list[str]) -> None:
    assert native is not None
    scope: mr.Scope
    if kind == "user":
        scope = mr.UserScope(ids[0])
    elif kind == "character":
        scope = mr.CharacterScope(*ids)
    elif kind == "conversation":
        scope = mr.ConversationScope(ids[0])
    else:
        scope = mr.SceneScope(*ids)
    assert native.scope_id(kind, list(scope.fields)) == mr.scope_id(scope)


@needs_native
def test_native_scope_id_rejects_an_unknown_kind() -> None:
    assert native is not None
    with pytest.raises(mr.InvalidInputError, match="unknown scope kind") as caught:
        native.scope_id("team", ["t"])
    assert caught.value.kind is mr.ErrorKind.UNKNOWN_VALUE
