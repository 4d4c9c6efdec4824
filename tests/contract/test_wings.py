"""The package in wings: one folder per concern, entered through its face, importing the wings
below it only; the root holds the face, the public modules, the binding and the pickle aliases;
the tests mirror the wings. CONTRIBUTING.md draws the layout these rules hold."""

from __future__ import annotations

import ast
import importlib
import shutil
from pathlib import Path

from package_imports import (
    PACKAGE,
    PICKLE_ALIASES,
    PICKLED_FROM_FACES,
    ROOT_MODULES,
    WING_LAYERS,
    WINGS,
    wing_graph,
    wing_rule_breaks,
)

TESTS = Path(__file__).parents[1]
#: A folder past this many modules is split by concern.
MAX_MODULES = 20
#: The tests' folders: one per wing, ``testing`` (the public toolkit), ``contract`` (the whole
#: package), ``support`` (shared helpers, the only folder on the tests' path), ``data``.
TEST_FOLDERS = {wing.lstrip("_") for wing in WINGS} | {"testing", "contract", "support", "data"}


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "memresolve"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__", "_data"))
    return copy


def test_no_import_crosses_a_wing_but_through_its_face() -> None:
    assert wing_rule_breaks() == []


def test_the_wing_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    """The checker itself: a module of a wing written to break each rule is caught (in a copy
    of the package: other tests read the package meanwhile)."""
    copy = _copy(tmp_path)
    assert wing_rule_breaks(copy) == []
    (copy / "_cli" / "_planted.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import memresolve\n"
        "from memresolve import resolve\n"
        "from memresolve._model._records import MemoryRecord\n"
        "from memresolve._model import _validate\n"
        "from memresolve._cli._batch import _planted\n"
        "from memresolve._backend import _choose\n"
        "from memresolve._records import MemoryRecord as Old\n"
        "from memresolve import _native\n"
        "from memresolve._engine import kernels\n"
        "kernels._native_batch\n"
        "if TYPE_CHECKING:\n"
        "    import memresolve._io._arrow as arrow_module\n",
        encoding="utf-8",
    )
    name = "memresolve._cli._planted"
    assert sorted(wing_rule_breaks(copy)) == sorted(
        [
            f"{name}: imports the package's face",
            f"{name}: imports the package's face",
            f"{name}: reaches past the face of _model to memresolve._model._records",
            f"{name}: reaches past the face of _model to memresolve._model._validate",
            f"{name}: takes the private _planted of memresolve._cli._batch",
            f"{name}: takes the private _choose of memresolve._backend",
            f"{name}: imports the pickle alias memresolve._records",
            f"{name}: imports the compiled module (the loader's alone)",
            f"{name}: reads the private _native_batch of kernels",
            f"{name}: reaches past the face of _io to memresolve._io._arrow",
        ]
    )


def test_the_wings_import_each_other_one_way() -> None:
    graph = wing_graph()
    assert set(WINGS) <= set(graph)
    for wing in WINGS:
        assert graph[wing] & set(WINGS) <= WING_LAYERS[wing], wing
    # The model is the ground floor; reference stands between _io and _engine.
    assert not graph["_model"] & set(WINGS)
    assert graph["memresolve.reference"] & set(WINGS) <= {"_model", "_io"}


def test_a_wing_importing_upwards_breaks_the_layers(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / "_dataset" / "_planted.py").write_text(
        "from memresolve._store import ErasedUser\n", encoding="utf-8"
    )
    assert "_store" in wing_graph(copy)["_dataset"] - WING_LAYERS["_dataset"]


def test_the_root_holds_only_the_face_the_binding_and_the_pickle_aliases() -> None:
    root = {path.stem for path in PACKAGE.glob("*.py")}
    assert root == ROOT_MODULES | PICKLE_ALIASES
    folders = {
        path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()
    }
    assert folders == {*WINGS, "testing"}
    for alias in PICKLE_ALIASES:
        text = (PACKAGE / f"{alias}.py").read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 20, alias
        code = [
            node
            for node in ast.parse(text).body
            if not isinstance(node, ast.Expr | ast.ImportFrom | ast.Assign)
        ]
        assert code == [], f"{alias} only hands names on"


def test_the_faces_that_are_old_pickle_paths_hand_on_the_pickled_names() -> None:
    for wing, names in PICKLED_FROM_FACES.items():
        face = importlib.import_module(f"memresolve.{wing}")
        assert names <= set(face.__all__), wing


def test_no_folder_sprawls() -> None:
    for folder in [PACKAGE, *(PACKAGE / wing for wing in WINGS), PACKAGE / "testing"]:
        found = [path for path in folder.glob("*.py") if path.name != "__init__.py"]
        assert len(found) <= MAX_MODULES, (folder.name, len(found))


def test_no_face_hands_on_a_name_of_its_own_submodules() -> None:
    """``import memresolve.X.Y`` binds ``Y`` on ``memresolve.X``: a face handing on a name
    equal to one of its submodules would see it replaced once that submodule is imported."""
    for package in [PACKAGE, *(PACKAGE / wing for wing in WINGS), PACKAGE / "testing"]:
        submodules = {path.stem for path in package.glob("*.py")} | {
            path.name for path in package.iterdir() if (path / "__init__.py").exists()
        }
        name = "memresolve" if package == PACKAGE else f"memresolve.{package.name}"
        face = importlib.import_module(name)
        assert not set(getattr(face, "__all__", ())) & submodules, name


def test_the_tests_mirror_the_wings_and_import_no_other_test() -> None:
    folders = {path.name for path in TESTS.iterdir() if path.is_dir()} - {"__pycache__"}
    assert folders == TEST_FOLDERS
    assert {path.name for path in TESTS.glob("*.py")} == {"conftest.py"}
    for path in TESTS.rglob("*.py"):
        if "data" in path.relative_to(TESTS).parts or "typing" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for imported in names:
                assert not imported.startswith(("test_", "conftest")), (path, imported)
