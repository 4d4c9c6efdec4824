"""The public types, as a type checker sees them: mypy accepts the documented uses
(``tests/typing/accepted.py``, checked with the rest of the tests by ``make test``) and
rejects the typos that would otherwise fail only at run time."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mypy import api

REJECTED = textwrap.dedent(
    """
    import dataclasses
    from datetime import UTC, datetime

    import memresolve as mr

    record = mr.MemoryRecord(
        id="m1",
        key="pet.name",
        value="Harbor",
        scope=mr.UserScope("u-ada"),
        status="Active",
        authority="model-inferred",
        confidence=0.6,
        valid_from=datetime(2026, 7, 1, tzinfo=UTC),
    )
    dataclasses.replace(record, authority="admin")
    dataclasses.replace(record, status="expired")
    text: str = record.status.value
    mr.MemoryRecord(id="m2", key="pet.name", value="x", scope=mr.UserScope("u"))
    """
)


def test_mypy_rejects_misspelled_vocabulary_and_accepts_the_rest(tmp_path: Path) -> None:
    source = tmp_path / "rejected.py"
    source.write_text(REJECTED, encoding="utf-8")
    stdout, _, status = api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(source)]
    )
    assert status == 1, stdout
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    lines = {int(line.split(":")[1]) for line in errors}
    numbered = dict(enumerate(REJECTED.splitlines(), start=1))
    expected = {
        number
        for number, text in numbered.items()
        if 'status="Active"' in text or 'authority="admin"' in text or 'id="m2"' in text
    }
    # The misspelled status and authority, the missing required arguments; status="expired"
    # and reading .status.value are accepted.
    assert lines == expected, stdout
    assert any("'Active'" in line for line in errors), stdout
