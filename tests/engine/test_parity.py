"""Differential tests: the native kernel and the reference agree on every input.

The heart of the Rust core's correctness: for generated inputs both kernels
return the same winners in the same order (the very same record objects),
the same exclusions with the same reasons, and the same trace; for bad
candidate lists both raise the same ``InvalidInputError``. Example counts:
``PARITY_EXAMPLES`` (2,000 per test in CI, 100,000 with
``MEMRESOLVE_HYPOTHESIS_PROFILE=deep``).
"""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve._backend import available_backends
from memresolve._engine._kernels import Kernel, get_backend
from memresolve._model import _records, _scopes
from memresolve._model._call import resolve_prepared, resolve_with
from memresolve._model._records import RECORD_FIELDS
from memresolve.testing import Scenario, scenarios
from memresolve.testing.workload import CONTEXT, candidates
from profiles import PARITY_EXAMPLES
from story import ADA, RAINCOAT_SCENE, ROWAN, context, day, record

pytestmark = pytest.mark.skipif(
    "native" not in available_backends(), reason="memresolve._native is not built"
)

parity = settings(max_examples=PARITY_EXAMPLES)


def forget(
    key: str, *, blocks_sources_before: datetime, scope: mr.Scope = ADA
) -> mr.ForgetTombstone:
    # Forgotten no earlier than the bound (a later bound is an input error).
    forgotten_at = max(day(29), blocks_sources_before)
    return mr.ForgetTombstone(
        key=key, scope=scope, forgotten_at=forgotten_at, blocks_sources_before=blocks_sources_before
    )


def _kernels() -> tuple[Kernel, Kernel]:
    return get_backend("reference"), get_backend("native")


def _summary(result: mr.Resolution) -> tuple[object, ...]:
    return (
        tuple(map(id, result.active)),  # the very same record objects, in the same order
        tuple((exclusion.id, exclusion.reason) for exclusion in result.excluded),
        result.trace,
    )


def assert_backends_agree(
    records: tuple[mr.MemoryRecord, ...] | list[mr.MemoryRecord],
    ctx: mr.RetrievalContext,
    tombstones: tuple[mr.ForgetTombstone, ...] | list[mr.ForgetTombstone] = (),
) -> mr.Resolution:
    reference, native = _kernels()
    expected = resolve_with(reference.resolve_rows, records, ctx, tombstones)
    actual = resolve_with(native.resolve_rows, records, ctx, tombstones)
    assert _summary(actual) == _summary(expected)
    assert actual == expected
    # The native backend's own call (what ``memresolve.resolve`` runs) is the same call.
    called = native.resolve(records, ctx, tombstones)
    assert _summary(called) == _summary(expected)
    return expected


# Generated inputs ------------------------------------------------------------------------


@parity
@given(scenarios())
def test_native_equals_reference(scenario: Scenario) -> None:
    assert_backends_agree(scenario.records, scenario.context, scenario.tombstones)


def _user_wide(tombstone: mr.ForgetTombstone, user: str) -> mr.ForgetTombstone:
    """``tombstone``'s key and instants, user-wide for ``user``."""
    return dataclasses.replace(tombstone, scope=mr.UserScope(user), user_wide=True)


@parity
@given(scenarios(), st.data())
def test_user_wide_tombstones_agree_per_turn_prepared_and_in_batch(
    scenario: Scenario, data: st.DataObject
) -> None:
    """Every tombstone made user-wide, for the context's user or another: the per-turn
    kernels, a prepared set (the store's) and the batch form all answer as the reference."""
    users = sorted(
        {scenario.context.user_id} | {r.scope.user_id or "nobody" for r in scenario.records}
    )
    tombstones = [
        _user_wide(tombstone, data.draw(st.sampled_from(users)))
        if data.draw(st.booleans())
        else tombstone
        for tombstone in scenario.tombstones
    ]
    expected = assert_backends_agree(scenario.records, scenario.context, tombstones)
    native = get_backend("native")
    prepared = native.prepare(tuple(scenario.records), tuple(tombstones))
    assert resolve_prepared(prepared, scenario.context) == expected
    table = mr.resolve_batch(
        mr.records_to_arrow(scenario.records),
        {"c": scenario.context},
        tombstones=mr.tombstones_to_arrow(tombstones),
        include_excluded=True,
    )
    in_batch = {row["record_id"]: row["decision"] for row in table.to_pylist()}
    assert in_batch == {
        **{record.id: "active" for record in expected.active},
        **{e.id: e.reason.value for e in expected.excluded if e.reason is not mr.Reason.SCOPE},
    }


@settings(max_examples=max(50, PARITY_EXAMPLES // 10))
@given(scenarios(max_records=80, max_tombstones=8))
def test_native_equals_reference_on_larger_sets(scenario: Scenario) -> None:
    assert_backends_agree(scenario.records, scenario.context, scenario.tombstones)


@given(scenarios(), st.randoms(use_true_random=False))
def test_native_result_does_not_depend_on_input_order(
    scenario: Scenario, shuffler: random.Random
) -> None:
    records, tombstones = list(scenario.records), list(scenario.tombstones)
    shuffler.shuffle(records)
    shuffler.shuffle(tombstones)
    native = get_backend("native")
    assert resolve_with(native.resolve_rows, records, scenario.context, tombstones) == resolve_with(
        native.resolve_rows, scenario.records, scenario.context, scenario.tombstones
    )


# Instants in named zones, across daylight-saving changes ----------------------------------

_NEW_YORK = ZoneInfo("America/New_York")
_LORD_HOWE = ZoneInfo("Australia/Lord_Howe")  # a 30-minute daylight-saving shift


def _zoned_instants() -> st.SearchStrategy[datetime]:
    """Wall clocks on both sides of, and inside, the 2026 changes, with fold 0 and 1."""
    new_york = st.builds(
        lambda month, day_, hour, minute, fold: datetime(
            2026, month, day_, hour, minute, tzinfo=_NEW_YORK, fold=fold
        ),
        st.sampled_from((3, 11)),
        st.sampled_from((1, 8)),
        st.integers(0, 3),
        st.sampled_from((0, 15, 30, 59)),
        st.integers(0, 1),
    )
    lord_howe = st.builds(
        lambda hour, minute, fold: datetime(2026, 4, 5, hour, minute, tzinfo=_LORD_HOWE, fold=fold),
        st.integers(1, 2),
        st.sampled_from((0, 29, 30, 45)),
        st.integers(0, 1),
    )
    return st.one_of(new_york, lord_howe)


@parity
@given(
    st.lists(
        st.tuples(_zoned_instants(), st.none() | _zoned_instants(), st.none() | _zoned_instants()),
        min_size=1,
        max_size=6,
    ),
    _zoned_instants(),
    st.none() | _zoned_instants(),
)
def test_named_zones_across_daylight_saving_changes(
    spans: list[tuple[datetime, datetime | None, datetime | None]],
    now: datetime,
    blocked_until: datetime | None,
) -> None:
    records = [
        record(
            f"m{n}",
            key=f"k{n % 2}",
            valid_from=start,
            valid_until=end,
            observed_at=observed,
            version=n % 2,
        )
        for n, (start, end, observed) in enumerate(spans)
    ]
    forgets = [] if blocked_until is None else [forget("k0", blocks_sources_before=blocked_until)]
    assert_backends_agree(records, context(now=now), forgets)


def test_a_fold_changes_the_instant_for_both_backends() -> None:
    # 01:30 on 2026-11-01 in New York happens twice: EDT (fold=0), then EST (fold=1).
    first = datetime(2026, 11, 1, 1, 30, tzinfo=_NEW_YORK)
    second = first.replace(fold=1)
    # 05:45 UTC: after the first 01:30 (EDT, 05:30 UTC), before the second (EST, 06:30 UTC).
    between = datetime(2026, 11, 1, 5, 45, tzinfo=UTC)
    late = record("late", valid_from=second)
    early = record("early", key="other", valid_from=first)
    result = assert_backends_agree([late, early], context(now=between))
    assert result.is_active("early")
    assert result.reason_for("late") is mr.Reason.STATUS_OR_TIME


# Corners, on purpose ---------------------------------------------------------------------

_NOW = day(30)
_MICRO = timedelta(microseconds=1)


def _corner_cases() -> dict[str, tuple[list[mr.MemoryRecord], list[mr.ForgetTombstone]]]:
    twin = {"key": "k", "authority": "user-confirmed", "version": 3, "valid_from": day(2)}
    return {
        "empty": ([], []),
        "equal-but-id": (
            [record("b", **twin), record("a", **twin), record("\U0001d518", **twin)],
            [],
        ),
        "colon-and-percent-ids": (
            [
                record("a:b", scope=ROWAN),
                record("a%3Ab", scope=ADA, supersedes="a:b"),
                record("%", scope=ADA, key="x"),
            ],
            [],
        ),
        "colliding-scopes": (
            [
                record("x", scope=mr.CharacterScope("a:b", "c")),
                record("y", scope=mr.CharacterScope("a", "b:c")),
            ],
            [
                forget(
                    "pet.name", scope=mr.CharacterScope("a:b", "c"), blocks_sources_before=day(29)
                )
            ],
        ),
        "at-now-and-one-microsecond-either-side": (
            [
                record("starts-now", key="a", valid_from=_NOW),
                record("starts-after", key="b", valid_from=_NOW + _MICRO),
                record("starts-before", key="c", valid_from=_NOW - _MICRO),
                record("ends-now", key="d", valid_until=_NOW),
                record("ends-after", key="e", valid_until=_NOW + _MICRO),
                record("ends-before", key="f", valid_until=_NOW - _MICRO),
            ],
            [],
        ),
        "chain-with-worker-marked-middle": (
            [
                record("a", version=1),
                record("b", version=2, supersedes="a", status="superseded"),
                record("c", version=3, supersedes="b"),
            ],
            [],
        ),
        "cycle-self-and-dangling": (
            [
                record("a", supersedes="b"),
                record("b", supersedes="a"),
                record("me", key="k2", supersedes="me"),
                record("d", key="k3", supersedes="nobody"),
            ],
            [],
        ),
        "cross-scope-and-out-of-scope-edges": (
            [
                record("user-level", scope=ADA, key="pet"),
                record("fix", supersedes="user-level"),
                record("elsewhere", scope=mr.UserScope("u-other"), supersedes="fix"),
                record("expired-fix", key="z", supersedes="fix", status="expired"),
            ],
            [],
        ),
        "tombstone-bound-edges": (
            [
                record("at", valid_from=day(10)),
                record("after", valid_from=day(10) + _MICRO, key="k2"),
                record("before", valid_from=day(10) - _MICRO, key="k3"),
            ],
            [
                forget("pet.name", blocks_sources_before=day(10)),
                forget("k2", blocks_sources_before=day(10)),
                forget("k3", blocks_sources_before=day(10)),
            ],
        ),
        "observed-at-set-and-unset": (
            [
                record("summary", valid_from=day(20), observed_at=day(5)),
                record("retold", key="k2", valid_from=day(1), observed_at=day(25)),
                record("plain", key="k3", valid_from=day(5)),
            ],
            [
                forget("pet.name", blocks_sources_before=day(10)),
                forget("k2", blocks_sources_before=day(10)),
                forget("k3", blocks_sources_before=day(10)),
            ],
        ),
        "extreme-versions": (
            [
                record("low", version=-(2**63)),
                record("high", version=2**63 - 1),
                record("zero", version=0),
            ],
            [],
        ),
        "scene-without-current-scene": (
            [record("scene", scope=RAINCOAT_SCENE)],
            [],
        ),
    }


@pytest.mark.parametrize("name", list(_corner_cases()))
def test_corner(name: str) -> None:
    records, forgets = _corner_cases()[name]
    assert_backends_agree(records, context(now=_NOW), forgets)
    assert_backends_agree(records, context(now=_NOW, scene_id=None), forgets)
    # The colliding scopes' own context: user "a", character "b:c".
    assert_backends_agree(records, context(now=_NOW, user_id="a", character_id="b:c"), forgets)


@pytest.mark.parametrize("size", [20, 200, 600, 2_000])
def test_benchmark_workloads_agree(size: int) -> None:
    # 600 and 2,000 run with the interpreter released.
    records, forgets = candidates(size, seed=size)
    result = assert_backends_agree(records, CONTEXT, forgets)
    assert len(result.active) > 0
    assert all(result.trace.as_dict()[name] for name in ("excluded_scope", "excluded_expired"))


# Bad candidate lists: the same error from both kernels ------------------------------------


def _error_of(kernel: Kernel, records: list[object]) -> tuple[object, ...]:
    with pytest.raises(mr.InvalidInputError) as caught:
        resolve_with(kernel.resolve_rows, records, context(), ())  # type: ignore[arg-type]
    error = caught.value
    with pytest.raises(mr.InvalidInputError) as called:
        kernel.resolve(records, context(), ())  # type: ignore[arg-type]
    assert (str(called.value), called.value.record_id, called.value.field) == (
        str(error),
        error.record_id,
        error.field,
    )
    return (str(error), error.record_id, error.field)


_A = record("a")


@pytest.mark.parametrize(
    "records",
    [
        [_A, "not a record"],
        [None],
        [_A, dataclasses.replace(_A, value="other")],
        [record("x"), _A, record("y"), _A],
        [_A, object()],
    ],
    ids=["string", "none", "duplicate-id", "duplicate-later", "object"],
)
def test_bad_candidates_raise_the_same_error(records: list[object]) -> None:
    reference, native = _kernels()
    assert _error_of(native, records) == _error_of(reference, records)


@pytest.mark.parametrize(
    ("records", "the_context", "tombstones"),
    [
        ("m1", {"now": day(1)}, 5),
        ([_A], {"now": day(1)}, 5),
        ([_A, "junk"], {"now": day(1)}, [None]),
        ([_A, "junk"], context(), [None]),
        ([_A, "junk"], context(), 5),
        ([_A, _A], context(), None),
        ([_A, _A], context(), "tombstones"),
    ],
    ids=["records", "context", "context-first", "tombstones", "not-iterable", "dup", "str"],
)
@pytest.mark.parametrize("as_iterators", [False, True], ids=["lists", "generators"])
def test_every_call_reports_the_first_bad_argument_alike(
    records: Any, the_context: Any, tombstones: Any, as_iterators: bool
) -> None:
    def passed(value: Any) -> Any:
        # A generator is consumed by a call: each call gets its own.
        return (item for item in value) if as_iterators and isinstance(value, list) else value

    def error_of(call: Callable[[Any, Any, Any], object]) -> tuple[object, ...]:
        with pytest.raises(mr.InvalidInputError) as caught:
            call(passed(records), the_context, passed(tombstones))
        return (str(caught.value), caught.value.field, caught.value.kind)

    reference, native = _kernels()
    errors = {
        error_of(call)
        for call in (
            reference.resolve,
            native.resolve,
            partial(resolve_with, reference.resolve_rows),
            partial(resolve_with, native.resolve_rows),
            lambda *call: mr.resolve(call[0], call[1], tombstones=call[2]),
        )
    }
    assert len(errors) == 1, errors


class _Tombstones(tuple[mr.ForgetTombstone, ...]):
    """A tuple subclass: not the exact empty tuple the native call skips checking."""


class _Context(mr.RetrievalContext):
    """A subclass of the context: accepted by every call."""


def test_every_call_accepts_the_same_spellings_of_its_arguments() -> None:
    records = [record("a"), record("b", value="other", version=2)]
    base = context()
    fields = {name: getattr(base, name) for name in base.__dataclass_fields__}
    kernels = _kernels()
    for the_context in (base, _Context(**fields)):
        spellings: tuple[Iterable[mr.ForgetTombstone] | None, ...] = (
            (),
            [],
            None,
            _Tombstones(),
            iter([]),
            _Tombstones([forget("k", blocks_sources_before=day(1))]),
        )
        for tombstones in spellings:
            expected = resolve_with(kernels[0].resolve_rows, records, base, list(tombstones or ()))
            for kernel in kernels:
                given_tombstones: Iterable[mr.ForgetTombstone] | None = (
                    iter([]) if isinstance(tombstones, Iterator) else tombstones
                )
                assert kernel.resolve(records, the_context, given_tombstones) == expected
                assert kernel.resolve(tuple(records), the_context, given_tombstones) == expected


def test_the_bare_native_storage_is_not_a_record() -> None:
    from memresolve import _native  # noqa: PLC0415 - present: the module is skipped otherwise

    fields = {name: getattr(_A, name) for name in mr.MemoryRecord.__dataclass_fields__}
    bare = _native.RecordCore(**fields)
    reference, native = _kernels()
    assert _error_of(native, [bare]) == _error_of(reference, [bare])


# Threads -----------------------------------------------------------------------------------


def test_many_threads_resolving_shared_inputs_get_the_single_threaded_answers() -> None:
    native = get_backend("native")
    workloads = [candidates(size, seed=seed) for seed, size in enumerate((30, 700, 2_000))]
    contexts = [
        CONTEXT,
        dataclasses.replace(CONTEXT, scene_id=None, now=CONTEXT.now - timedelta(days=40)),
    ]
    jobs = [(records, ctx, forgets) for records, forgets in workloads for ctx in contexts]
    expected = [resolve_with(native.resolve_rows, *job) for job in jobs]
    start = threading.Barrier(8)

    def hammer(worker: int) -> list[bool]:
        start.wait()
        outcomes = []
        for round_ in range(12):
            index = (worker + round_) % len(jobs)
            outcomes.append(resolve_with(native.resolve_rows, *jobs[index]) == expected[index])
        return outcomes

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(hammer, range(8)))
    assert all(all(outcomes) for outcomes in results)
    assert expected == [resolve_with(get_backend("reference").resolve_rows, *job) for job in jobs]


def test_a_result_read_first_by_many_threads_at_once_is_one_answer() -> None:
    """``excluded`` and ``trace`` are built on first read: threads racing that read
    all see the same, complete values."""
    records, forgets = candidates(700, seed=3)
    expected = mr.reference.resolve(records, CONTEXT, tombstones=forgets)
    for _ in range(20):
        shared = mr.resolve(records, CONTEXT, tombstones=forgets)
        start = threading.Barrier(8)

        def read(
            worker: int, result: mr.Resolution = shared, start: threading.Barrier = start
        ) -> tuple[object, object]:
            start.wait()
            if worker % 2:
                return result.trace, result.excluded
            return result.excluded, result.trace

        with ThreadPoolExecutor(max_workers=8) as pool:
            seen = list(pool.map(read, range(8)))
        for worker, pair in enumerate(seen):
            trace, excluded = pair if worker % 2 else pair[::-1]
            assert trace == expected.trace
            assert excluded == expected.excluded


def test_prepared_candidates_resolved_from_many_threads_give_one_answer() -> None:
    """A prepared set reuses its buffers; a call that finds them busy brings its own."""
    native = get_backend("native")
    records, forgets = candidates(2_000, seed=5)
    prepared = native.prepare(tuple(records), tuple(forgets))
    contexts = [
        CONTEXT,
        dataclasses.replace(CONTEXT, scene_id=None, now=CONTEXT.now - timedelta(days=40)),
    ]
    expected = [mr.reference.resolve(records, c, tombstones=forgets) for c in contexts]
    start = threading.Barrier(8)

    def hammer(worker: int) -> bool:
        start.wait()
        return all(
            resolve_prepared(prepared, contexts[(worker + n) % 2]) == expected[(worker + n) % 2]
            for n in range(10)
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(hammer, range(8)))


# Found in review: the order of errors, subclasses, altered scopes -------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: [_A, record("a"), "junk"],  # a repeated id before a non-record
        lambda: [_A, "junk", record("a")],  # a non-record before a repeated id
        lambda: ["junk", _A, record("a")],
    ],
    ids=["duplicate-first", "junk-first", "junk-at-0"],
)
def test_the_first_bad_row_is_reported_by_both(make: Callable[[], list[object]]) -> None:
    reference, native = _kernels()
    assert _error_of(native, make()) == _error_of(reference, make())


class _AlwaysExpired(mr.MemoryRecord):
    """A subclass that overrides a field: both kernels must read the attribute."""

    __slots__ = ()

    @property
    def status(self) -> mr.Status:
        return mr.Status.EXPIRED


def test_a_subclass_overriding_a_field_is_read_through_its_attributes() -> None:
    fields = {name: getattr(_A, name) for name in RECORD_FIELDS}
    overriding = _AlwaysExpired(**fields)
    result = assert_backends_agree([overriding], context())
    assert result.reason_for("a") is mr.Reason.STATUS_OR_TIME


def test_a_direct_subclass_of_the_native_storage_is_not_a_record() -> None:
    from memresolve import _native  # noqa: PLC0415 - present: the module is skipped otherwise

    class Impostor(_native.RecordCore):
        pass

    impostor = Impostor(**{name: getattr(_A, name) for name in RECORD_FIELDS})
    reference, native = _kernels()
    assert _error_of(native, [impostor]) == _error_of(reference, [impostor])


@pytest.mark.parametrize(
    ("scope", "name"),
    [
        (mr.UserScope("u"), "user_id"),
        (mr.CharacterScope("u", "c"), "character_id"),
        (mr.ConversationScope("k", user_id="u"), "user_id"),
        (mr.SceneScope("k", "s"), "scene_id"),
    ],
)
def test_a_built_scope_or_record_cannot_be_altered(scope: mr.Scope, name: str) -> None:
    """Both storages decide a record as it was built: nothing public can rewrite it
    (an independent run altered a scope with object.__setattr__ and the backends split)."""
    with pytest.raises(AttributeError):
        object.__setattr__(scope, name, "other")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(scope, name, "other")
    built = record("a", scope=scope)
    for storage in _records.RECORD_TYPES:
        twin = storage.from_dict(built.to_dict())
        with pytest.raises(AttributeError):
            object.__setattr__(twin, "key", "other")
        assert twin.key == built.key


def test_a_tombstone_whose_scope_was_altered_is_rejected_by_both() -> None:
    scope = mr.UserScope("u-ada")
    tombstone = forget("pet.name", blocks_sources_before=day(10), scope=scope)
    _scopes._USER["user_id"](scope, "\ud800")  # only the package's own slot writer can
    reference, native = _kernels()
    errors = []
    for kernel in (reference, native):
        with pytest.raises(mr.InvalidInputError) as caught:
            resolve_with(kernel.resolve_rows, [_A], context(), [tombstone])
        errors.append((str(caught.value), caught.value.field))
    assert errors[0] == errors[1]
    assert errors[0][1] == "scope.user_id"


class _PlainText(str):
    """A str subclass: judged by its value wherever it turns up (docs/spec.md §1.3)."""


def test_a_scope_altered_to_hold_a_str_subclass_is_read_by_value() -> None:
    scope = mr.UserScope("u-ada")
    _scopes._USER["user_id"](scope, _PlainText("u-ada"))
    built = record("a", scope=scope)
    assert type(built.scope.user_id) is str
    tombstone_scope = mr.UserScope("u-ada")
    tombstone = forget("pet.name", blocks_sources_before=day(10), scope=tombstone_scope)
    _scopes._USER["user_id"](tombstone_scope, _PlainText("u-ada"))
    result = assert_backends_agree([_A], context(), tombstones=[tombstone])
    assert result.reason_for("a") is mr.Reason.FORGOTTEN


class _KeyHidden(mr.MemoryRecord):
    """A subclass whose overriding attribute breaks a rule."""

    __slots__ = ()

    @property
    def key(self) -> str:
        return ""


def test_a_subclass_whose_attribute_breaks_a_rule_is_refused_by_both() -> None:
    hidden = _KeyHidden(**{name: getattr(_A, name) for name in RECORD_FIELDS})
    reference, native = _kernels()
    other = record("b")
    assert _error_of(native, [other, hidden]) == _error_of(reference, [other, hidden])
    assert _error_of(reference, [other, hidden])[1:] == ("a", "key")


def test_both_kernels_return_the_callers_own_objects() -> None:
    fields = {name: getattr(_A, name) for name in RECORD_FIELDS}
    overriding = _Renamed(**fields)
    for kernel in _kernels():
        (winner,) = resolve_with(kernel.resolve_rows, [overriding], context(), []).active
        assert winner is overriding


class _Renamed(mr.MemoryRecord):
    __slots__ = ()

    @property
    def value(self) -> str:
        return "renamed"


def test_a_resolution_built_by_hand_keeps_what_it_was_given() -> None:
    """``trace`` is computed lazily only for results a kernel built; a hand-built
    one (even with a trace that is not a ``Trace``) returns what it holds."""
    built = mr.Resolution((), (), None)  # type: ignore[arg-type]
    assert built.trace is None
    assert "trace=None" in repr(built)
