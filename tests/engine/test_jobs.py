"""The background jobs (docs/spec.md §7): status normalisation and the forget sweep.

The named cases of the spec on both backends; the invariance property (resolving
the normalised store at any instant from ``now`` on gives the same winners, in
every context) on generated stores; native against reference, batch against
per-record; and the forget sweep's promise that a purged record never comes back.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve import reference
from memresolve._backend import available_backends
from memresolve._engine._job_kernels import Jobs, get_jobs
from memresolve._engine._kernels import get_backend
from memresolve._model._call import resolve_prepared
from memresolve._model._scopes import scope_owner
from memresolve.testing import Store, stores
from memresolve.testing.normalize_rivals import duckdb_normalize, polars_normalize
from profiles import PARITY_EXAMPLES
from story import ADA, HARBOR_NIGHTS, MICROSECOND, NOW, RAINCOAT_SCENE, ROWAN, day, forget, record

BACKENDS = available_backends()
WEEK = timedelta(days=7)


@pytest.fixture(params=BACKENDS)
def jobs(request: pytest.FixtureRequest) -> Jobs:
    return get_jobs(request.param)


def changes(
    jobs: Jobs,
    records: Sequence[mr.MemoryRecord],
    *,
    now: datetime = NOW,
    tombstones: Sequence[mr.ForgetTombstone] = (),
) -> dict[str, str]:
    """record id -> the status the backend writes."""
    return {
        records[row].id: status.value
        for row, status in jobs.normalize_rows(tuple(records), tuple(tombstones), now)
    }


# The named cases ---------------------------------------------------------------------------


def test_expired_once_valid_until_is_at_or_before_now(jobs: Jobs) -> None:
    ended = record("m1", valid_until=NOW)
    running = record("m2", key="home", valid_until=NOW + MICROSECOND)
    assert changes(jobs, [ended, running]) == {"m1": "expired"}


def test_superseded_by_a_lasting_correction_in_the_same_scope(jobs: Jobs) -> None:
    old = record("m1")
    new = old.corrected("Marlowe", at=day(2), id="m2")
    assert changes(jobs, [old, new]) == {"m1": "superseded"}


def test_an_expiring_correction_never_normalises_what_it_replaced(jobs: Jobs) -> None:
    """The tutorial's expired correction over an older active value: once the correction
    ends, the old value is active again, so it must stay ``active`` in storage."""
    old = record("m1")
    travel = record("m2", supersedes="m1", valid_from=day(2), valid_until=NOW + WEEK)
    assert changes(jobs, [old, travel]) == {}
    # Once the correction has ended it is expired itself, and bears no edge.
    assert changes(jobs, [old, travel], now=NOW + WEEK) == {"m2": "expired"}


def test_a_correction_not_valid_yet_or_stored_expired_never_normalises(jobs: Jobs) -> None:
    old = record("m1")
    future = record("m2", supersedes="m1", valid_from=NOW + MICROSECOND)
    dead = record("m3", supersedes="m1", valid_from=day(2), status="expired")
    assert changes(jobs, [old, future, dead]) == {}


def test_a_forgotten_or_superseded_correction_still_normalises(jobs: Jobs) -> None:
    """Only time and scope switch an edge off (§2.4), so such a correction hides its
    target at every later instant."""
    for status in ("forgotten", "superseded"):
        old = record("m1")
        new = record("m2", supersedes="m1", valid_from=day(2), status=status)
        assert changes(jobs, [old, new]) == {"m1": "superseded"}


def test_a_user_correction_covers_a_character_record(jobs: Jobs) -> None:
    old = record("m1", scope=ROWAN)
    new = record("m2", supersedes="m1", valid_from=day(2), scope=ADA)
    assert changes(jobs, [old, new]) == {"m1": "superseded"}


def test_a_character_correction_never_normalises_a_user_record(jobs: Jobs) -> None:
    """Ada's other characters still see the user record: normalising it would hide it
    from them."""
    old = record("m1", scope=ADA)
    new = record("m2", supersedes="m1", valid_from=day(2), scope=ROWAN)
    assert changes(jobs, [old, new]) == {}


def test_a_conversation_correction_covers_its_scenes(jobs: Jobs) -> None:
    old = record("m1", scope=RAINCOAT_SCENE)
    new = record("m2", supersedes="m1", valid_from=day(2), scope=HARBOR_NIGHTS)
    assert changes(jobs, [old, new]) == {"m1": "superseded"}
    # Never the reverse: the conversation's other scenes see the record.
    old = record("m1", scope=HARBOR_NIGHTS)
    new = record("m2", supersedes="m1", valid_from=day(2), scope=RAINCOAT_SCENE)
    assert changes(jobs, [old, new]) == {}


def test_with_owners_unowned_covers_owned_never_the_reverse(jobs: Jobs) -> None:
    owned = mr.ConversationScope("k-harbor-nights", user_id="u-ada")
    owned_scene = mr.SceneScope("k-harbor-nights", "s-raincoat", user_id="u-ada")
    for target in (owned, owned_scene):
        old = record("m1", scope=target)
        new = record("m2", supersedes="m1", valid_from=day(2), scope=HARBOR_NIGHTS)
        assert changes(jobs, [old, new]) == {"m1": "superseded"}
    # An owned correction over the unowned record: other users still see it.
    old = record("m1", scope=HARBOR_NIGHTS)
    new = record("m2", supersedes="m1", valid_from=day(2), scope=owned)
    assert changes(jobs, [old, new]) == {}
    # A user's correction covers what that user owns, not another user's.
    old = record("m1", scope=owned_scene)
    assert changes(jobs, [old, record("m2", supersedes="m1", scope=ADA)]) == {"m1": "superseded"}
    other = record("m2", supersedes="m1", scope=mr.UserScope("u-ben"))
    assert changes(jobs, [old, other]) == {}


def test_forgotten_for_records_a_tombstone_blocks(jobs: Jobs) -> None:
    summary = record("m4", valid_from=day(25), observed_at=day(2))
    retold = record("m5", valid_from=day(1), observed_at=day(28))
    tombstone = forget("pet.name", ADA, day(20))
    assert changes(jobs, [summary, retold], tombstones=[tombstone]) == {"m4": "forgotten"}


def test_forgotten_first_then_expired_then_superseded(jobs: Jobs) -> None:
    """Writing ``superseded`` over a blocked record would move its reason from
    ``forgotten`` to ``status-or-time``; ``expired`` over it would too."""
    blocked = record("m1", valid_until=day(3))
    corrector = record("m2", supersedes="m1", valid_from=day(2))
    ended = record("m3", key="home", valid_until=day(3))
    home_corrector = record("m4", key="home", supersedes="m3", valid_from=day(2))
    tombstone = forget("pet.name", ADA, day(20))
    written = changes(jobs, [blocked, corrector, ended, home_corrector], tombstones=[tombstone])
    assert written == {"m1": "forgotten", "m2": "forgotten", "m3": "expired"}


def test_never_touches_an_active_or_later_active_record(jobs: Jobs) -> None:
    now_active = record("m1")
    later = record("m2", key="home", valid_from=NOW + WEEK)
    ending_later = record("m3", key="job", valid_until=NOW + WEEK)
    assert changes(jobs, [now_active, later, ending_later]) == {}


def test_a_non_active_record_keeps_its_status(jobs: Jobs) -> None:
    stored = [
        record("m1", status="forgotten", valid_until=day(2)),
        record("m2", key="home", status="superseded", valid_until=day(2)),
        record("m3", key="job", status="expired", observed_at=day(1)),
    ]
    tombstone = forget("job", ADA, day(20))
    correction = record("m4", key="x", supersedes="m2", valid_from=day(2))
    assert changes(jobs, [*stored, correction], tombstones=[tombstone]) == {}


def test_cycles_and_self_edges(jobs: Jobs) -> None:
    m7 = record("m7", supersedes="m8")
    m8 = record("m8", supersedes="m7")
    m9 = record("m9", key="home", supersedes="m9")
    assert changes(jobs, [m7, m8, m9]) == {
        "m7": "superseded",
        "m8": "superseded",
        "m9": "superseded",
    }


def test_bad_input_is_refused_and_nothing_is_decided() -> None:
    with pytest.raises(mr.InvalidInputError) as naive:
        mr.normalize([record("m1")], now=datetime(2026, 7, 30))
    assert naive.value.kind is mr.ErrorKind.NAIVE_TIME
    assert naive.value.field == "now"
    with pytest.raises(mr.InvalidInputError) as repeated:
        mr.normalize([record("m1"), record("m1")], now=NOW)
    assert repeated.value.kind is mr.ErrorKind.DUPLICATE_ID
    with pytest.raises(mr.InvalidInputError) as not_a_record:
        mr.forget_sweep([record("m1"), "m2"], [])  # type: ignore[list-item]
    assert not_a_record.value.kind is mr.ErrorKind.WRONG_TYPE
    with pytest.raises(mr.InvalidInputError):
        mr.forget_sweep([record("m1")], ["pet.name"])  # type: ignore[list-item]
    table = mr.records_to_arrow([record("m1")])
    with pytest.raises(mr.InvalidInputError) as batch_naive:
        mr.normalize_batch(table, now=datetime(2026, 7, 30))
    assert batch_naive.value.field == "now"


# The public objects ------------------------------------------------------------------------


def test_normalization_applies_and_counts() -> None:
    old = record("m1")
    new = old.corrected("Marlowe", at=day(2), id="m2")
    ended = record("m3", key="home", valid_until=day(3))
    result = mr.normalize([new, old, ended], now=NOW)
    assert [c.record_id for c in result] == ["m1", "m3"]
    assert result.counts() == {mr.Status.SUPERSEDED: 1, mr.Status.EXPIRED: 1}
    assert result.new_status("m1") is mr.Status.SUPERSEDED
    assert result.new_status("m2") is None
    applied = result.apply([new, old, ended])
    assert [(r.id, r.status.value) for r in applied] == [
        ("m2", "active"),
        ("m1", "superseded"),
        ("m3", "expired"),
    ]
    assert applied[1].value == old.value  # normalising never touches text
    assert len(mr.normalize(applied, now=NOW)) == 0


def test_purge_plan_lists_ids_per_tombstone_and_never_values() -> None:
    blocked = record("m1", value="Harbor", observed_at=day(2))
    also_blocked = record("m2", value="Harb", observed_at=day(3), authority="model-inferred")
    stored = record("m3", key="home", value="Lisbon", status="forgotten")
    retold = record("m4", value="Max", valid_from=day(1), observed_at=day(28))
    early = forget("pet.name", ADA, day(2))
    late = forget("pet.name", ADA, day(20))
    plan = mr.forget_sweep([blocked, also_blocked, stored, retold], [early, late, late])
    assert [(p.record_id, p.key, p.scope_id, p.cause.value) for p in plan] == [
        ("m1", "pet.name", "user:u-ada", "tombstone"),
        ("m2", "pet.name", "user:u-ada", "tombstone"),
        ("m3", "home", "user:u-ada", "stored-forgotten"),
    ]
    assert plan.by_tombstone == ((early, ("m1",)), (late, ("m1", "m2")))
    assert "m4" not in plan
    assert "m1" in plan
    for secret in ("Harbor", "Harb", "Lisbon", "Max"):
        assert secret not in repr(plan)
        assert secret not in str(
            mr.forget_sweep_batch(
                mr.records_to_arrow([blocked, stored]), mr.tombstones_to_arrow([late])
            ).to_pylist()
        )


# Invariance --------------------------------------------------------------------------------


def contexts_over(records: Iterable[mr.MemoryRecord], now: datetime) -> list[mr.RetrievalContext]:
    """Every context the store's ids can make: each scope a record has is seen by some of
    them, with and without each other scope (a context that sees a record but not its
    correction among them). A context no record's ids make sees nothing: left out."""
    users, characters, conversations = set(), set(), set()
    scenes: set[str | None] = {None}
    for r in records:
        owner = scope_owner(r.scope)
        if owner is not None:
            users.add(owner)
        match r.scope:
            case mr.UserScope(user_id=user):
                users.add(user)
            case mr.CharacterScope(user_id=user, character_id=character):
                users.add(user)
                characters.add(character)
            case mr.ConversationScope(conversation_id=conversation):
                conversations.add(conversation)
            case mr.SceneScope(conversation_id=conversation, scene_id=scene):
                conversations.add(conversation)
                scenes.add(scene)
    return [
        mr.RetrievalContext(now=now, user_id=u, character_id=c, conversation_id=k, scene_id=s)
        for u, c, k, s in itertools.product(
            sorted(users or {"u-x"}),
            sorted(characters or {"c-x"}),
            sorted(conversations or {"k-x"}),
            sorted(scenes, key=str),
        )
    ]


def later_instants(records: Sequence[mr.MemoryRecord], now: datetime) -> list[datetime]:
    """``now``, one microsecond later, the first end or start after ``now``, and past every
    end and start in the store."""
    moments = sorted(
        {m for r in records for m in (r.valid_until, r.valid_from) if m is not None and m > now}
    )
    later = [now, now + MICROSECOND, max([now, *moments]) + MICROSECOND]
    return later + moments[:1]


def assert_invariant(
    backend: str,
    records: Sequence[mr.MemoryRecord],
    tombstones: Sequence[mr.ForgetTombstone],
    now: datetime,
) -> None:
    """Resolving the normalised store equals resolving the original, from ``now`` on:
    the same winners everywhere, and the same reasons except ``superseded`` ->
    ``status-or-time`` on records written ``superseded``."""
    jobs = get_jobs(backend)
    kernel = get_backend(backend)
    written = {
        records[row].id: status
        for row, status in jobs.normalize_rows(tuple(records), tuple(tombstones), now)
    }
    normalised = mr.Normalization(
        now,
        tuple(
            mr.StatusChange(record_id, mr.Status.ACTIVE, status)
            for record_id, status in sorted(written.items())
        ),
    ).apply(records)
    # Prepared once (checked and indexed), each store is then resolved in every context.
    original = kernel.prepare(tuple(records), tuple(tombstones))
    rewritten = kernel.prepare(tuple(normalised), tuple(tombstones))
    for moment in later_instants(records, now):
        for context in contexts_over(records, moment):
            before = resolve_prepared(original, context)
            after = resolve_prepared(rewritten, context)
            assert [r.id for r in after.active] == [r.id for r in before.active]
            for was, now_is in zip(before.excluded, after.excluded, strict=True):
                moved = (
                    written.get(was.id) is mr.Status.SUPERSEDED
                    and was.reason is mr.Reason.SUPERSEDED
                    and now_is.reason is mr.Reason.STATUS_OR_TIME
                )
                assert was.reason is now_is.reason or moved, (was, now_is, moment, context)
    # Idempotent: a second pass writes nothing.
    assert jobs.normalize_rows(tuple(normalised), tuple(tombstones), now) == []


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=PARITY_EXAMPLES)
@given(store=stores(max_records=16, max_contexts=1), now_shift=st.sampled_from([0, 1, -1]))
def test_normalising_never_changes_a_later_resolution(
    backend: str, store: Store, now_shift: int
) -> None:
    now = store.contexts[0][1].now if store.contexts else NOW
    now += timedelta(days=now_shift)
    assert_invariant(backend, store.records, store.tombstones, now)


@pytest.mark.skipif("native" not in BACKENDS, reason="the native extension is not built")
@settings(max_examples=PARITY_EXAMPLES // 2)
@given(store=stores(max_records=16), shift=st.integers(-3, 3))
def test_native_normalise_and_sweep_equal_the_reference(store: Store, shift: int) -> None:
    now = NOW + timedelta(days=shift)
    native, ref = get_jobs("native"), get_jobs("reference")
    rows, forgets = tuple(store.records), tuple(store.tombstones)
    assert native.normalize_rows(rows, forgets, now) == ref.normalize_rows(rows, forgets, now)
    assert native.purge_rows(rows, forgets) == ref.purge_rows(rows, forgets)


@settings(max_examples=PARITY_EXAMPLES // 8)
@given(store=stores(max_records=24), shift=st.integers(-3, 3))
def test_batch_forms_equal_the_per_record_forms(store: Store, shift: int) -> None:
    now = NOW + timedelta(days=shift)
    records = mr.records_to_arrow(store.records)
    tombstones = mr.tombstones_to_arrow(store.tombstones)
    per_record = mr.normalize(store.records, now=now, tombstones=store.tombstones)
    order = {r.id: n for n, r in enumerate(store.records)}
    expected = sorted(per_record, key=lambda c: order[c.record_id])
    for backend in BACKENDS:
        table = get_jobs(backend).normalize_batch(records, now=now, tombstones=tombstones)
        assert table.to_pylist() == [
            {"record_id": c.record_id, "old_status": "active", "new_status": c.new_status.value}
            for c in expected
        ]
        plan = mr.forget_sweep(store.records, store.tombstones)
        swept = get_jobs(backend).forget_sweep_batch(records, tombstones)
        assert sorted(swept.to_pylist(), key=lambda p: p["record_id"]) == [
            {"record_id": p.record_id, "key": p.key, "scope_id": p.scope_id, "cause": p.cause.value}
            for p in plan
        ]


def test_batch_tables_are_identical_across_backends() -> None:
    old = record("m1")
    rows = [old, old.corrected("x", at=day(2), id="m2"), record("m3", key="h", valid_until=day(2))]
    records = mr.records_to_arrow(rows)
    tables = [get_jobs(b).normalize_batch(records, now=NOW) for b in BACKENDS]
    assert all(t.equals(tables[0]) and t.schema == tables[0].schema for t in tables)
    sweeps = [
        get_jobs(b).forget_sweep_batch(records, mr.tombstones_to_arrow([forget("h", ADA, day(9))]))
        for b in BACKENDS
    ]
    assert all(t.equals(sweeps[0]) for t in sweeps)
    assert sweeps[0].schema.field("cause").type == pa.dictionary(pa.int8(), pa.string())


# Scope cover, against the matching rule itself -------------------------------------------


def _all_scopes() -> list[mr.Scope]:
    scopes: list[mr.Scope] = []
    for user in ("u", "v"):
        scopes += [mr.UserScope(user), mr.CharacterScope(user, "c"), mr.CharacterScope(user, "d")]
    for owner in (None, "u", "v"):
        scopes.append(mr.ConversationScope("k", user_id=owner))
        scopes.append(mr.ConversationScope("j", user_id=owner))
        scopes.append(mr.SceneScope("k", "s", user_id=owner))
        scopes.append(mr.SceneScope("k", "t", user_id=owner))
    return scopes


def test_cover_is_exactly_context_inclusion() -> None:
    """``covers(b, t)`` iff every context that sees ``t`` sees ``b``, over every context of
    a small universe (each scope is seen by some of them), contexts without a character or
    a conversation included: cover still holds because a scene needs its conversation."""
    contexts = [
        mr.RetrievalContext(now=NOW, user_id=u, character_id=c, conversation_id=k, scene_id=s)
        for u, c, k, s in itertools.product(
            ("u", "v", "w"), (None, "c", "d"), (None, "k", "j"), (None, "s", "t")
        )
        if k is not None or s is None
    ]
    for bearer, target in itertools.product(_all_scopes(), repeat=2):
        seeing = [c for c in contexts if reference.scope_matches(target, c)]
        assert seeing
        expected = all(reference.scope_matches(bearer, c) for c in seeing)
        assert reference.covers(bearer, target) is expected, (bearer, target)


@pytest.mark.skipif("native" not in BACKENDS, reason="the native extension is not built")
def test_native_cover_equals_the_reference() -> None:
    """Through normalisation: a lasting correction in one scope over a record in another."""
    native, ref = get_jobs("native"), get_jobs("reference")
    for bearer, target in itertools.product(_all_scopes(), repeat=2):
        rows = (record("m1", scope=target), record("m2", scope=bearer, supersedes="m1"))
        assert native.normalize_rows(rows, (), NOW) == ref.normalize_rows(rows, (), NOW)


# The forget sweep --------------------------------------------------------------------------


def _prompt(result: mr.Resolution) -> list[tuple[str, str]]:
    return [(m.key, m.value) for m in result.prompt_memories()]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=PARITY_EXAMPLES // 4)
@given(store=stores(max_records=16, max_contexts=1))
def test_after_a_purge_every_later_resolution_is_unchanged(backend: str, store: Store) -> None:
    """Blank the purged values: no resolution at any instant, in any context, shows a
    different prompt (a purged record never wins)."""
    kernel = get_backend(backend)
    records, tombstones = store.records, store.tombstones
    rows = get_jobs(backend).purge_rows(tuple(records), tuple(tombstones))
    purged = {records[row].id for row, _ in rows}
    blanked = [
        mr.MemoryRecord.from_dict({**r.to_dict(), "value": "", "source_message_ids": ()})
        if r.id in purged
        else r
        for r in records
    ]
    original = kernel.prepare(tuple(records), tuple(tombstones))
    erased = kernel.prepare(tuple(blanked), tuple(tombstones))
    moments = [NOW - WEEK, *later_instants(records, NOW)]
    for moment in moments:
        for context in contexts_over(records, moment):
            before = resolve_prepared(original, context)
            after = resolve_prepared(erased, context)
            assert not purged & {r.id for r in before.active}
            assert _prompt(after) == _prompt(before)


def test_forgotten_stays_forgotten_through_reingest_retry_and_summaries() -> None:
    harbor = record("m1", value="Harbor", valid_from=day(1))
    tombstone = forget("pet.name", ADA, day(20))
    reingested = record("m1-copy", value="Harbor", valid_from=day(1))
    retry = harbor  # the same id and content, added again
    summary = record("m-sum", value="Harbor", valid_from=day(25), observed_at=day(2))
    retold = record("m5", value="Max", valid_from=day(1), observed_at=day(28))
    plan = mr.forget_sweep([harbor, reingested, summary, retold], [tombstone])
    assert plan.record_ids == {"m1", "m1-copy", "m-sum"}
    assert retry.id in plan
    result = mr.resolve(
        plan.apply([harbor, reingested, summary, retold]),
        mr.RetrievalContext(now=NOW, user_id="u-ada", character_id="c", conversation_id="k"),
        tombstones=[tombstone],
    )
    assert [(m.id, m.value) for m in result.active] == [("m5", "Max")]


@settings(max_examples=PARITY_EXAMPLES // 10)
@given(store=stores(max_records=24), shift=st.integers(-3, 3))
def test_the_benchmark_rivals_write_what_normalize_batch_writes(store: Store, shift: int) -> None:
    """The Polars and DuckDB formulations the benchmark times are the same rules (the time
    rule of tombstones: the rivals do not block cited messages yet, so no hashes here)."""
    now = NOW + timedelta(days=shift)
    records = mr.records_to_arrow(store.records)
    tombstones = mr.tombstones_to_arrow(
        [
            dataclasses.replace(t, source_salt=None, blocked_sources=frozenset())
            for t in store.tombstones
        ]
    )
    expected = sorted(
        (row["record_id"], row["new_status"])
        for row in mr.normalize_batch(records, now=now, tombstones=tombstones).to_pylist()
    )
    assert sorted(polars_normalize(records, tombstones, now).rows()) == expected
    duck = duckdb_normalize(records, tombstones, now).to_pylist()
    assert sorted((row["record_id"], row["new_status"]) for row in duck) == expected


@pytest.mark.parametrize("job", ["normalize", "forget_sweep"])
def test_the_records_are_checked_before_the_tombstones(job: str) -> None:
    """Both wrong: the error names the records, the first argument, on either job."""
    moment = datetime.fromisoformat("2026-07-30T12:00:00+00:00")
    calls: dict[str, Callable[[], object]] = {
        "normalize": lambda: mr.normalize(5, now=moment, tombstones=5),  # type: ignore[arg-type]
        "forget_sweep": lambda: mr.forget_sweep(5, 5),  # type: ignore[arg-type]
    }
    with pytest.raises(mr.InvalidInputError) as raised:
        calls[job]()
    assert (raised.value.kind, raised.value.field) == (mr.ErrorKind.WRONG_TYPE, "records")
