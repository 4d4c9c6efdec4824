"""Every committed fuzz input, replayed through its target in every test run: the seed
corpora (``fuzz/corpus/<target>``) and each finding (``fuzz/findings/<target>``), named by
what it found. A target raises only ``MemresolveError`` and keeps its invariants."""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyarrow import ipc

import memresolve as mr
from memresolve import reference

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"


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


@pytest.mark.parametrize(
    ("finding", "column"),
    [
        # valid_from is timestamp[us, tz=<bytes that are not UTF-8>]: pyarrow raised
        # UnicodeDecodeError reading the time zone.
        ("timestamp-time-zone-not-utf8", "valid_from"),
        # key is declared non-nullable and authority's offsets run past its values:
        # rebuilding the table as nullable raised ArrowInvalid.
        ("offsets-past-values-non-nullable-column", "authority"),
    ],
)
def test_an_arrow_finding_is_malformed_naming_its_column(finding: str, column: str) -> None:
    data = (FUZZ / "findings" / "arrow" / finding).read_bytes()
    table = ipc.open_stream(io.BytesIO(data[1:])).read_all()
    readers: list[Callable[[Any], object]] = [
        mr.records_from_arrow,
        lambda t: reference.resolve_batch(t, targets.CONTEXTS),
        lambda t: mr.resolve_batch(t, targets.CONTEXTS),
        lambda t: mr.normalize_batch(t, now=targets.NOW),
        lambda t: mr.MemoryStore().add_arrow(t),
    ]
    for read in readers:
        with pytest.raises(mr.InvalidInputError) as caught:
            read(table)
        assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.MALFORMED, column)
