"""The documentation's examples run: the README's Python blocks and the package's doctests."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import memresolve
from memresolve import _scopes

README = Path(__file__).parent.parent / "README.md"


def test_readme_python_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


def test_docstring_examples_run() -> None:
    for module in (memresolve, _scopes):
        failures, tried = doctest.testmod(module)
        assert tried > 0
        assert failures == 0
