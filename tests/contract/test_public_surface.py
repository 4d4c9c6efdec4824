"""The public surface, pinned: moving private modules must never change what users import."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import memresolve as mr

ROOT = Path(__file__).parents[2]

#: ``mr.__all__`` of 0.1, in the order of its groups (memresolve/__init__.py).
PUBLIC_NAMES = [
    "MemoryRecord", "Scope", "UserScope", "CharacterScope", "ConversationScope", "SceneScope",
    "scope_id", "scope_from_id", "RetrievalContext", "ForgetTombstone", "forget_everywhere",
    "source_hash", "new_source_salt",
    "Status", "Authority", "ScopeKind", "Reason", "Certainty", "PurgeCause", "RESOLVER_VERSION",
    "resolve", "resolve_batch", "Resolution", "Exclusion", "Trace", "PromptMemory",
    "to_prompt_memory", "Explanation", "backend_name",
    "normalize", "normalize_batch", "Normalization", "StatusChange", "forget_sweep",
    "forget_sweep_batch", "PurgePlan", "Purge",
    "records_from_arrow", "records_to_arrow", "contexts_from_arrow", "contexts_to_arrow",
    "tombstones_from_arrow", "tombstones_to_arrow", "read_records", "read_contexts",
    "read_tombstones", "write_records", "write_contexts", "write_tombstones",
    "resolve_dataset", "DatasetSummary", "normalize_dataset", "forget_sweep_dataset", "JobSummary",
    "MemoryStore", "ArrowExport", "ErasedUser", "Observation", "ObserveOutcome",
    "MemresolveError", "InvalidInputError", "ErrorKind", "BackendUnavailableError",
    "InternalError", "MemoryLimitError", "StoreError", "StoreBusyError", "StoreClosedError",
    "StoreDamagedError", "ErasureDelayedWarning",
    "__version__",
]  # fmt: skip

#: Every module a user may import: the face, its public modules, the shipped test helpers.
PUBLIC_MODULES = {
    "memresolve",
    "memresolve.errors",
    "memresolve.reference",
    "memresolve.spark",
    "memresolve.testing",
    "memresolve.testing.batch_store",
    "memresolve.testing.layouts",
    "memresolve.testing.normalize_rivals",
    "memresolve.testing.peak_memory",
    "memresolve.testing.rivals",
    "memresolve.testing.store_race",
    "memresolve.testing.strategies",
    "memresolve.testing.tutorial",
    "memresolve.testing.workload",
}


#: The ``__all__`` of each public module of 0.1.
MODULE_NAMES = {
    "memresolve.errors": [
        "BackendUnavailableError", "ErasureDelayedWarning", "ErrorKind", "InternalError",
        "InvalidInputError", "MemoryLimitError", "MemresolveError", "StoreBusyError",
        "StoreClosedError", "StoreDamagedError", "StoreError",
    ],
    "memresolve.reference": [
        "NAME", "bears_edge_from", "bears_supersession_edge", "blocked_by_tombstone",
        "cites_blocked_source", "covers",
        "decide", "evidence_time", "excluded_as_forgotten", "excluded_by_status_or_time",
        "first_exclusion", "forget_sweep_batch", "in_validity_interval", "losers_by_precedence",
        "normalize_batch", "normalize_rows", "normalized_status", "precedence_key",
        "purge_cause", "purge_rows", "reaches", "resolve", "resolve_batch", "resolve_rows",
        "scope_id", "scope_matches", "superseded_ids",
    ],
    "memresolve.spark": [
        "forget_sweep", "forget_sweep_schema", "normalize", "normalize_schema", "output_schema",
        "resolve",
    ],
    "memresolve.testing": [
        "BASE_NOW", "ID_ALPHABET", "MESSAGE_IDS", "Scenario", "Store", "Universe", "authorities",
        "confidences", "contexts", "identifiers", "instants", "memory_records", "scenarios",
        "scopes", "statuses", "stores", "tombstones", "universes", "versions",
    ],
}  # fmt: skip


def test_the_package_exports_exactly_the_pinned_names() -> None:
    assert mr.__all__ == PUBLIC_NAMES
    for name in PUBLIC_NAMES:
        assert getattr(mr, name) is not None, name
    # The object a pickle alias hands on is the public one, not a copy.
    assert mr.MemoryRecord is importlib.import_module("memresolve._records").MemoryRecord


def test_each_public_module_exports_exactly_the_pinned_names() -> None:
    for name, names in MODULE_NAMES.items():
        module = importlib.import_module(name)
        assert module.__all__ == names, name
        for exported in names:
            assert hasattr(module, exported), (name, exported)


def test_the_public_modules_are_exactly_the_pinned_ones() -> None:
    found = {"memresolve"}
    for module in pkgutil.walk_packages(mr.__path__, "memresolve."):
        if not any(part.startswith("_") for part in module.name.split(".")):
            found.add(module.name)
    assert found == PUBLIC_MODULES
    for name in PUBLIC_MODULES:
        importlib.import_module(name)


def test_the_console_script_is_the_command() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    assert scripts == {"memresolve": "memresolve._cli:main"}
    module, _, function = scripts["memresolve"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))
    done = subprocess.run(
        [Path(sys.executable).parent / "memresolve", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"memresolve {mr.__version__}"
