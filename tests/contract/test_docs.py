"""The documentation's examples run: the README's Python blocks and the package's doctests."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

import memresolve
from memresolve._model import _scopes

ROOT = Path(__file__).parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_python_examples_run(document: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", document.read_text(encoding="utf-8"), re.DOTALL)
    for block in blocks:
        exec(compile(block, str(document), "exec"), {})


def test_documents_link_only_inside_the_repository() -> None:
    for document in DOCUMENTS:
        for target in re.findall(r"\]\(([^)#]+)", document.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            assert (document.parent / target).resolve().is_relative_to(ROOT), (document, target)
            assert (document.parent / target).exists(), (document, target)


def test_docstring_examples_run() -> None:
    for module in (memresolve, _scopes):
        failures, tried = doctest.testmod(module)
        assert tried > 0
        assert failures == 0
