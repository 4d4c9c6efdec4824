"""The shape of the code: imports go one way in both languages, and no source file sprawls."""

from __future__ import annotations

import ast
import re
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


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
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
