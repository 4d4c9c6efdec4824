"""Every committed fuzz input, replayed through its target in every test run: the seed
corpora (``fuzz/corpus/<target>``) and each finding (``fuzz/findings/<target>``), named by
what it found. A target raises only ``MemresolveError`` and keeps its invariants."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"


def _targets() -> Any:
    # fuzz/ is not a package: its targets module is loaded from its file.
    spec = importlib.util.spec_from_file_location("fuzz_targets", FUZZ / "targets.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


targets = _targets()

INPUTS = sorted(
    path for kind in ("corpus", "findings") for path in (FUZZ / kind).glob("*/*") if path.is_file()
)


def test_every_target_has_seeds() -> None:
    for name in targets.TARGETS:
        assert list((FUZZ / "corpus" / name).iterdir()), name


@pytest.mark.parametrize(
    "path", INPUTS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}"
)
def test_a_committed_input_replays_cleanly(path: Path) -> None:
    targets.TARGETS[path.parent.name](path.read_bytes())
