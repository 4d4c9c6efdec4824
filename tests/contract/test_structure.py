"""The shape of the code: imports go one way in both languages, and no source file sprawls."""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "python" / "memresolve"
CRATE = ROOT / "src"
#: A source file past this many lines is split by concept (tests excepted).
MAX_LINES = 600


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, as a path that starts and ends at one node, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Every module ``module`` imports, at its top or inside a function (a deferred import
    is still a dependency), leaving out imports only a type checker sees."""
    hidden = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for child in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def python_import_graph() -> dict[str, set[str]]:
    files = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = _imports(tree, module, path.name == "__init__.py")
        # Importing from a parent package is not a cycle: the parent is already importing.
        graph[module] = {
            name
            for name in imported
            if name in files and name != module and not module.startswith(name + ".")
        }
    return graph


_RUST_USE = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?use\s+(crate|super)::([^;]+);", re.M)


def _rust_module(path: Path) -> str:
    parts = path.relative_to(CRATE).with_suffix("").parts
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(("crate", *parts))


def _use_paths(rest: str) -> Iterator[list[str]]:
    """The paths of one `use` tree after its root (one level of braces is expanded)."""
    rest = re.sub(r"\s+", "", rest)
    head, brace, tail = rest.partition("{")
    prefix = [part for part in head.split("::") if part]
    if not brace:
        yield prefix
        return
    for item in tail.rstrip("}").split(","):
        yield [*prefix, *(part for part in item.split("::") if part and "{" not in part)]


def rust_use_graph() -> dict[str, set[str]]:
    """Module -> the crate modules its `use` lines name (test modules left out)."""
    files = {_rust_module(path): path for path in CRATE.rglob("*.rs") if path.stem != "tests"}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        # Inline test modules (always last) may use anything.
        text = re.split(r"#\[cfg\(test\)\]\s*mod tests \{", path.read_text(encoding="utf-8"))[0]
        targets = set()
        for root, rest in _RUST_USE.findall(text):
            # `super` of a file's module is its parent (a mod.rs is its directory's module).
            base = ["crate"] if root == "crate" else module.split("::")[:-1]
            for names in _use_paths(rest):
                # The longest prefix that is a module of the crate.
                for length in range(len(names), 0, -1):
                    candidate = "::".join([*base, *names[:length]])
                    if candidate in files:
                        if candidate != module and not module.startswith(candidate + "::"):
                            targets.add(candidate)
                        break
        graph[module] = targets
    return graph


def test_python_imports_have_no_cycle() -> None:
    graph = python_import_graph()
    assert "memresolve.reference" in graph
    assert "memresolve._engine._api" not in graph["memresolve.reference"]
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_rust_modules_have_no_cycle() -> None:
    graph = rust_use_graph()
    assert "crate::resolve::view" in graph
    assert "crate::resolve::candidates" in graph["crate::resolve::view"]
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_a_cycle_is_found_when_there_is_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_only_the_backend_module_imports_the_loader_choice() -> None:
    graph = python_import_graph()
    choosers = {
        module for module, targets in graph.items() if "memresolve._native_loader" in targets
    }
    # _backend chooses; the kernel modules and _records only load what it chose.
    allowed = {"_backend", "_engine._kernels", "_engine._job_kernels", "_model._records"}
    assert choosers <= {f"memresolve.{name}" for name in allowed}
    records = (PACKAGE / "_model" / "_records.py").read_text(encoding="utf-8")
    assert "_backend.NATIVE" in records


def test_no_source_file_sprawls() -> None:
    sources = [*PACKAGE.rglob("*.py"), *CRATE.rglob("*.rs"), *(ROOT / "benches").glob("*.py")]
    long = {
        str(path.relative_to(ROOT)): length
        for path in sources
        if path.stem != "tests"
        and (length := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


# -- the wings ------------------------------------------------------------------------------

#: The package's folders by concern (CONTRIBUTING.md draws them). Each ``__init__`` is the
#: wing's face: the only door other wings and the root go through.
WINGS = ("_model", "_io", "_engine", "_dataset", "_store", "_spark", "_cli")
#: What stays at the root: the package's face and its public modules, the binding (the
#: compiled module's loader and the backend choice, importable by every wing without going
#: up), the version, the bundled data.
ROOT_MODULES = {
    "__init__",
    "__main__",
    "errors",
    "reference",
    "spark",
    "_backend",
    "_native_loader",
    "_version",
}
#: Old private paths that pickles of 0.1 name; each only hands on names (exempt from the
#: rules below; nothing may import them).
PICKLE_ALIASES = {
    "_records",
    "_result",
    "_scopes",
    "_types",
    "_inputs",
    "_jobs",
    "_explain",
    "_jobs_dataset",
}
#: A folder past this many modules is split by concern.
MAX_MODULES = 20


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> Iterator[tuple[str, str]]:
    """(module imported from, name) for every ``from ... import`` of the package, deferred and
    type-only ones included: a private name is coupling however it is imported."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "memresolve" or base.startswith("memresolve."):
                yield from ((base, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (
                (alias.name, "") for alias in node.names if alias.name.startswith("memresolve.")
            )


def _modules(package: Path) -> dict[str, Path]:
    return {_module_name(path, package): path for path in package.rglob("*.py")}


def _wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in WINGS else None


def _is_module(name: str, modules: dict[str, Path], package: Path) -> bool:
    path = package.parent / name.replace(".", "/")
    # A compiled module shows as its stub.
    return name in modules or (path / "__init__.py").exists() or path.with_suffix(".pyi").exists()


def wing_rule_breaks(package: Path = PACKAGE) -> list[str]:
    """Every import of ``package`` that breaks a rule of the wings, as ``importer: what``."""
    modules = _modules(package)
    breaks = []
    for module, path in sorted(modules.items()):
        if path.parent == package and path.stem in PICKLE_ALIASES:
            continue
        own = _wing(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for source, name in _imported_names(tree, module, path.name == "__init__.py"):
            full = f"{source}.{name}"
            target = full if name and _is_module(full, modules, package) else source
            wing = _wing(target)
            alias_stem = target.removeprefix("memresolve.")
            if alias_stem in PICKLE_ALIASES:
                breaks.append(f"{module}: imports the pickle alias {target}")
            if source == "memresolve" and target == source and module != "memresolve":
                breaks.append(f"{module}: imports {name} from the package's face")
            if wing is not None and wing != own:
                if target != f"memresolve.{wing}":
                    breaks.append(f"{module}: reaches past the face of {wing} to {target}")
                elif name.startswith("_"):
                    breaks.append(f"{module}: takes the private {name} of {wing}")
            if wing is not None and wing == own and name.startswith("_") and target == source:
                breaks.append(f"{module}: takes the private {name} of {source}")
    return breaks


def wing_graph() -> dict[str, set[str]]:
    """Wing (or root module) -> the wings and root modules its modules import."""

    def node(module: str) -> str:
        return _wing(module) or module

    graph: dict[str, set[str]] = {}
    for module, targets in python_import_graph().items():
        if module.removeprefix("memresolve.") in PICKLE_ALIASES:
            continue
        graph.setdefault(node(module), set()).update(
            node(target) for target in targets if node(target) != node(module)
        )
    return graph


def test_no_import_crosses_a_wing_but_through_its_face() -> None:
    assert wing_rule_breaks() == []


def test_the_wings_import_each_other_without_a_cycle() -> None:
    graph = wing_graph()
    assert set(WINGS) <= set(graph)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])
    # The model is the ground floor: it knows no other wing.
    assert not graph["_model"] & set(WINGS)


def test_the_wing_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    """The checker itself: a module of a wing written to break each rule is caught (in a
    copy of the package: other tests read the package meanwhile)."""
    copy = tmp_path / "memresolve"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__", "_data"))
    assert wing_rule_breaks(copy) == []
    (copy / "_cli" / "_planted_for_the_structure_test.py").write_text(
        "from memresolve import resolve\n"
        "from memresolve._model._records import MemoryRecord\n"
        "from memresolve._model import _validate\n"
        "from memresolve._cli._batch import _planted\n"
        "from memresolve._records import MemoryRecord as Old\n",
        encoding="utf-8",
    )
    found = wing_rule_breaks(copy)
    name = "memresolve._cli._planted_for_the_structure_test"
    assert f"{name}: imports resolve from the package's face" in found
    assert f"{name}: reaches past the face of _model to memresolve._model._records" in found
    assert f"{name}: reaches past the face of _model to memresolve._model._validate" in found
    assert f"{name}: takes the private _planted of memresolve._cli._batch" in found
    assert f"{name}: imports the pickle alias memresolve._records" in found


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


def test_no_folder_sprawls() -> None:
    for folder in [PACKAGE, *(PACKAGE / wing for wing in WINGS), PACKAGE / "testing"]:
        modules = [path for path in folder.glob("*.py") if path.name != "__init__.py"]
        assert len(modules) <= MAX_MODULES, (folder.name, len(modules))


def test_no_wing_shares_a_name_with_a_public_name() -> None:
    """``import memresolve.X`` binds ``memresolve.X``: a folder named like a re-exported
    function would replace it."""
    import memresolve  # noqa: PLC0415

    for wing in WINGS:
        assert wing.lstrip("_") not in memresolve.__all__ or wing.startswith("_")
        assert wing not in memresolve.__all__
