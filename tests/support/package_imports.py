"""The package's imports, read from its source: the module graph, and the rules of the wings.

Shared by ``tests/contract/test_structure.py`` (cycles, sprawl) and
``tests/contract/test_wings.py`` (the wings' rules). Every function takes the package's folder,
so that a test can plant a module breaking a rule in a copy of the package and see it caught.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "python" / "memresolve"

#: The package's folders by concern (CONTRIBUTING.md draws them). Each ``__init__`` is the
#: wing's face: the only door other wings and the root go through.
WINGS = ("_model", "_io", "_engine", "_dataset", "_store", "_spark", "_cli")
#: Which wings each wing may import (through their faces), from the ground up. A root module
#: between them: ``reference`` (the model and ``_io``), which ``_engine`` imports.
WING_LAYERS: dict[str, set[str]] = {
    "_model": set(),
    "_io": {"_model"},
    "_engine": {"_model", "_io"},
    "_dataset": {"_model", "_io", "_engine"},
    "_store": {"_model", "_io", "_engine"},
    "_spark": {"_model", "_io", "_engine"},
    "_cli": {"_model", "_io", "_engine", "_dataset", "_store"},
}
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
#: Old private paths that pickles of 0.1 name; each only hands names on (exempt from the
#: rules; nothing may import them). Two more old paths are now wings whose faces hand the
#: pickled names on: ``memresolve._store`` and ``memresolve._dataset`` (PICKLED_FROM_FACES).
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
PICKLED_FROM_FACES = {
    "_store": {"ErasedUser", "ArrowExport"},
    "_dataset": {"DatasetSummary"},
}
#: The public toolkit for users' own tests and benchmarks: the package never imports it, and
#: it may use the package as users do, through its face.
USER_SIDE = "memresolve.testing"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(path, package): path for path in package.rglob("*.py")}


def _type_only(tree: ast.Module) -> set[int]:
    """The nodes only a type checker runs: the body of ``if TYPE_CHECKING:`` (not its
    ``else``, and not ``if not TYPE_CHECKING:``, which run at import time)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in {
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        }:
            hidden.update(id(child) for statement in node.body for child in ast.walk(statement))
    return hidden


def _base(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def imported(
    tree: ast.Module, module: str, is_package: bool, *, type_only: bool
) -> Iterator[tuple[str, str, str]]:
    """(module imported from, name, local name) of every import of the package in ``tree``:
    at the top, inside functions (a deferred import is still a dependency), and, with
    ``type_only``, under ``if TYPE_CHECKING:`` too. ``import memresolve.x as y`` gives
    ``("memresolve.x", "", "y")``."""
    hidden = set() if type_only else _type_only(tree)
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.ImportFrom):
            base = _base(node, module, is_package)
            if base == "memresolve" or base.startswith("memresolve."):
                for alias in node.names:
                    yield base, alias.name, alias.asname or alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "memresolve" or alias.name.startswith("memresolve."):
                    yield alias.name, "", alias.asname or alias.name.split(".")[0]


def _is_module(name: str, found: dict[str, Path], package: Path) -> bool:
    path = package.parent / name.replace(".", "/")
    # A compiled module shows as its stub.
    return name in found or (path / "__init__.py").exists() or path.with_suffix(".pyi").exists()


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at run time (type-only imports left out)."""
    found = modules(package)
    graph: dict[str, set[str]] = {}
    for module, path in found.items():
        targets = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for source, name, _ in imported(tree, module, path.name == "__init__.py", type_only=False):
            full = f"{source}.{name}"
            target = full if name and _is_module(full, found, package) else source
            # Importing from a parent package is not a cycle: the parent is already importing.
            if target in found and target != module and not module.startswith(target + "."):
                targets.add(target)
        graph[module] = targets
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph``, as a path that starts and ends at one node, or None."""
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


def wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in WINGS else None


def _is_alias(module: str, package: Path) -> bool:
    stem = module.removeprefix("memresolve.")
    return stem in PICKLE_ALIASES and (package / f"{stem}.py").exists()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _import_breaks(module: str, source: str, name: str, target: str, package: Path) -> list[str]:
    """The rules one import of ``module`` breaks (``target``: the module it reaches)."""
    breaks = []
    own, target_wing = wing(module), wing(target)
    if _is_alias(target, package):
        breaks.append(f"{module}: imports the pickle alias {target}")
    if target == "memresolve" and module != "memresolve" and not module.startswith(USER_SIDE):
        breaks.append(f"{module}: imports the package's face")
    if target == "memresolve._native" and module != "memresolve._native_loader":
        breaks.append(f"{module}: imports the compiled module (the loader's alone)")
    if target_wing is not None and target_wing != own:
        if target != f"memresolve.{target_wing}":
            breaks.append(f"{module}: reaches past the face of {target_wing} to {target}")
        elif _private(name):
            breaks.append(f"{module}: takes the private {name} of {target_wing}")
    elif target == source and name and _private(name):
        breaks.append(f"{module}: takes the private {name} of {source}")
    return breaks


def wing_rule_breaks(package: Path = PACKAGE) -> list[str]:
    """Every import of ``package`` that breaks a rule of the wings, as ``importer: what``."""
    found = modules(package)
    breaks = []
    for module, path in sorted(found.items()):
        if path.parent == package and path.stem in PICKLE_ALIASES:
            continue
        # Local names bound to another wing's face, or to what it hands on.
        through_faces: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for source, name, local in imported(
            tree, module, path.name == "__init__.py", type_only=True
        ):
            full = f"{source}.{name}"
            target = full if name and _is_module(full, found, package) else source
            breaks += _import_breaks(module, source, name, target, package)
            if wing(target) not in (None, wing(module)):
                through_faces.add(local)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in through_faces
                and _private(node.attr)
            ):
                breaks.append(f"{module}: reads the private {node.attr} of {node.value.id}")
    return breaks


def wing_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Wing (or root module) -> the wings and root modules its modules import."""

    def node(module: str) -> str:
        return wing(module) or module

    graph: dict[str, set[str]] = {}
    for module, targets in import_graph(package).items():
        if _is_alias(module, package):
            continue
        graph.setdefault(node(module), set()).update(
            node(target) for target in targets if node(target) != node(module)
        )
    return graph
