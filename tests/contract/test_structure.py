"""The shape of the code: imports go one way in both languages, and no source file sprawls.
The wings' own rules are in ``test_wings.py``."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from package_imports import PACKAGE, cycle, import_graph

ROOT = Path(__file__).parents[2]
CRATE = ROOT / "src"
#: A source file past this many lines is split by concept (tests excepted).
MAX_LINES = 600


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
    graph = import_graph()
    assert "memresolve.reference" in graph
    assert "memresolve._engine._api" not in graph["memresolve.reference"]
    assert cycle(graph) is None, " -> ".join(cycle(graph) or [])


def test_a_planted_import_cycle_is_found(tmp_path: Path) -> None:
    """In a copy of the package: ``_io/_lines`` importing the engine closes a cycle, even from
    an ``else`` of ``if TYPE_CHECKING`` (it runs) and inside a function."""
    copy = tmp_path / "memresolve"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__", "_data"))
    assert cycle(import_graph(copy)) is None
    lines = copy / "_io" / "_lines.py"
    lines.write_text(
        lines.read_text(encoding="utf-8")
        + "\nif TYPE_CHECKING:\n    pass\nelse:\n    def later() -> None:\n"
        "        from memresolve._engine import _api\n",
        encoding="utf-8",
    )
    found = cycle(import_graph(copy))
    assert found is not None
    assert "memresolve._io._lines" in found


def test_rust_modules_have_no_cycle() -> None:
    graph = rust_use_graph()
    assert "crate::resolve::view" in graph
    assert "crate::resolve::candidates" in graph["crate::resolve::view"]
    assert cycle(graph) is None, " -> ".join(cycle(graph) or [])


def test_a_cycle_is_found_when_there_is_one() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_only_the_backend_module_imports_the_loader_choice() -> None:
    graph = import_graph()
    choosers = {
        module for module, targets in graph.items() if "memresolve._native_loader" in targets
    }
    # _backend chooses; the kernel modules and _records only load what it chose.
    allowed = {"_backend", "_engine._kernels", "_engine._job_kernels", "_model._records"}
    assert choosers <= {f"memresolve.{name}" for name in allowed}
    records = (PACKAGE / "_model" / "_records.py").read_text(encoding="utf-8")
    assert "_backend.NATIVE" in records
    # That only the loader imports the compiled module itself: test_wings.py.


def test_no_source_file_sprawls() -> None:
    sources = [*PACKAGE.rglob("*.py"), *CRATE.rglob("*.rs"), *(ROOT / "benches").glob("*.py")]
    long = {
        str(path.relative_to(ROOT)): length
        for path in sources
        if path.stem != "tests"
        and (length := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long
