"""Pickles written by an earlier release load into today's public types, and today's
pickles load back equal: moving a private module must never strand a user's saved values."""

from __future__ import annotations

import dataclasses
import pickle
import pickletools
from pathlib import Path

import pytest

import memresolve as mr
from pickled_values import in_memory_values, values_with_files

RELEASED = Path(__file__).parents[1] / "data" / "pickles-0.1.0.pickle"


def _modules_named(data: bytes) -> set[str]:
    return {
        argument
        for opcode, argument, _ in pickletools.genops(data)
        if isinstance(argument, str) and argument.startswith("memresolve.")
    }


def test_the_released_pickle_names_the_flat_layout_private_paths() -> None:
    """So the next test proves the old paths still resolve (this file is not regenerated)."""
    assert {
        "memresolve._records",
        "memresolve._result",
        "memresolve._scopes",
        "memresolve._types",
        "memresolve._inputs",
        "memresolve._jobs",
        "memresolve._explain",
        "memresolve._store",
        "memresolve._dataset",
        "memresolve._jobs_dataset",
        "memresolve.errors",
    } <= _modules_named(RELEASED.read_bytes())


def _as_released(name: str, value: object) -> object:
    """Today's ``value`` as 0.1 pickled it: since then a trace names the contract it was
    answered under (``memresolve-spec-3``), a ``PromptMemory`` carries its record id, and
    ``Status`` has ``retracted``."""
    if name == "trace":
        return dataclasses.replace(value, resolver_version="memresolve-spec-2")  # type: ignore[type-var]
    if name == "resolution":
        return mr.Resolution(value.active, value.excluded, _as_released("trace", value.trace))  # type: ignore[attr-defined, arg-type]
    if name == "enums":  # the statuses added since
        return [member for member in value if member is not mr.Status.RETRACTED]  # type: ignore[attr-defined]
    if name == "prompt":
        return tuple(dataclasses.replace(memory, record_id=None) for memory in value)  # type: ignore[attr-defined]
    return value


def test_values_pickled_by_the_previous_release_load_equal_to_todays() -> None:
    loaded = pickle.loads(RELEASED.read_bytes())
    for name, value in in_memory_values().items():
        if name.endswith("error"):
            continue
        assert loaded[name] == _as_released(name, value), name
        assert type(loaded[name]) is type(value), name
    assert all(member is mr.Status.ACTIVE for member in loaded["enums"][:1])
    assert [record.value for record in loaded["records"]][:2] == ["Harbor", "Marlowe"]
    assert type(loaded["error"]) is mr.InvalidInputError
    assert (loaded["error"].field, loaded["error"].record_id) == ("value", "m1")
    assert loaded["error"].kind is mr.ErrorKind.INCONSISTENT
    assert type(loaded["store_error"]) is mr.StoreBusyError
    assert (str(loaded["store_error"]), loaded["store_error"].path) == (
        "the store is busy",
        "/srv/memories.db",
    )


def test_summaries_pickled_by_the_previous_release_load_as_todays_types(
    tmp_path: Path,
) -> None:
    loaded = pickle.loads(RELEASED.read_bytes())
    fresh = values_with_files(tmp_path)
    for name in ("explanation", "erased_user"):
        assert loaded[name] == fresh[name], name
    assert type(loaded["arrow_export"]) is mr.ArrowExport
    assert loaded["arrow_export"].records.equals(fresh["arrow_export"].records)  # type: ignore[attr-defined]
    # Tombstones tables carry ``user_wide``, ``source_salt`` and ``blocked_sources`` since 0.1
    # (empty here: no tombstone).
    today = fresh["arrow_export"].tombstones.drop_columns(  # type: ignore[attr-defined]
        ["user_wide", "source_salt", "blocked_sources"]
    )
    assert loaded["arrow_export"].tombstones.equals(today)
    for name in ("dataset_summary", "job_summary"):
        assert type(loaded[name]) is type(fresh[name]), name
        assert loaded[name].rows == fresh[name].rows  # type: ignore[attr-defined]
        assert loaded[name].records == fresh[name].records  # type: ignore[attr-defined]


@pytest.mark.parametrize("protocol", [2, 4, pickle.HIGHEST_PROTOCOL])
def test_todays_values_pickle_and_load_back_equal(protocol: int, tmp_path: Path) -> None:
    values = {**in_memory_values(), **values_with_files(tmp_path)}
    for name in ("error", "store_error", "arrow_export"):  # compared field by field above
        values.pop(name)
    loaded = pickle.loads(pickle.dumps(values, protocol=protocol))
    assert loaded == values
