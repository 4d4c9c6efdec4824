"""Blocking by cited messages (``docs/spec.md`` §2.3): a tombstone holding salted hashes
of message ids blocks every record of its key, in a scope it reaches, that cites one of
them, whatever the record's times. Every form agrees: the reference, the native per-turn
kernels, prepared sets (grown and forgotten into), the batch form, the normaliser and the
forget sweep, on objects and on Arrow. ``PARITY_EXAMPLES`` examples per property.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve import reference
from memresolve._backend import available_backends
from memresolve._engine._kernels import get_backend
from memresolve._model._call import resolve_prepared, resolve_with
from memresolve.testing import MESSAGE_IDS, Scenario, scenarios
from profiles import PARITY_EXAMPLES
from story import ADA, HARBOR_NIGHTS, ROWAN, context, day, record

pytestmark = pytest.mark.skipif(
    "native" not in available_backends(), reason="memresolve._native is not built"
)

parity = settings(max_examples=PARITY_EXAMPLES)
#: The properties built on the rule (prepared sets' updates, the jobs): fewer examples,
#: each runs several kernels.
derived = settings(max_examples=max(100, PARITY_EXAMPLES // 4))

SALT = "ab" * 16


def _cited(scenario: Scenario) -> list[str]:
    """Every message some record of the scenario cites, and the shared pool."""
    return sorted({m for r in scenario.records for m in r.source_message_ids} | set(MESSAGE_IDS))


def _hashed(data: st.DataObject, scenario: Scenario) -> list[mr.ForgetTombstone]:
    """The scenario's tombstones, most of them made to block messages its records cite
    (keyed and scoped as a record half the time, so that they meet)."""
    cited = _cited(scenario)
    tombstones = []
    for drawn in scenario.tombstones:
        tombstone = drawn
        if len(scenario.records) > 0 and data.draw(st.booleans()):
            model: mr.MemoryRecord = data.draw(st.sampled_from(scenario.records))
            user_wide = isinstance(model.scope, mr.UserScope) and data.draw(st.booleans())
            tombstone = dataclasses.replace(
                tombstone, key=model.key, scope=model.scope, user_wide=user_wide
            )
        if data.draw(st.integers(0, 3)):
            tombstone = tombstone.blocking_sources(
                data.draw(st.lists(st.sampled_from(cited), max_size=3))
            )
        tombstones.append(tombstone)
    return tombstones


def _decisions(table: object) -> dict[str, str]:
    return {row["record_id"]: row["decision"] for row in table.to_pylist()}  # type: ignore[attr-defined]


def _expected_rows(expected: mr.Resolution) -> dict[str, str]:
    return {
        **{winner.id: "active" for winner in expected.active},
        **{e.id: e.reason.value for e in expected.excluded if e.reason is not mr.Reason.SCOPE},
    }


@parity
@given(scenarios(), st.data())
def test_message_blocking_agrees_per_turn_prepared_and_in_batch(
    scenario: Scenario, data: st.DataObject
) -> None:
    tombstones = _hashed(data, scenario)
    reference_kernel, native = get_backend("reference"), get_backend("native")
    expected = resolve_with(
        reference_kernel.resolve_rows, scenario.records, scenario.context, tombstones
    )
    assert resolve_with(native.resolve_rows, scenario.records, scenario.context, tombstones) == (
        expected
    )
    assert native.resolve(scenario.records, scenario.context, tombstones) == expected
    for kernel in (reference_kernel, native):
        prepared = kernel.prepare(tuple(scenario.records), tuple(tombstones))
        assert resolve_prepared(prepared, scenario.context) == expected
    records, tombstone_table = (
        mr.records_to_arrow(scenario.records),
        mr.tombstones_to_arrow(tombstones),
    )
    table = mr.resolve_batch(
        records, {"c": scenario.context}, tombstones=tombstone_table, include_excluded=True
    )
    assert _decisions(table) == _expected_rows(expected)


@derived
@given(scenarios(), st.data())
def test_a_prepared_set_learns_hashes_and_records_as_a_fresh_one_decides(
    scenario: Scenario, data: st.DataObject
) -> None:
    """Prepared without the hashed tombstones, then told them (``forgotten``, with the
    records they block erased as the store erases them) and grown by the rest of the
    records: the answer of a set prepared with everything at once, on both kernels."""
    tombstones = _hashed(data, scenario)
    split = data.draw(st.integers(0, len(scenario.records)))
    first, later = scenario.records[:split], scenario.records[split:]
    expected = reference.resolve(scenario.records, scenario.context, tombstones=tombstones)
    for name in ("reference", "native"):
        kernel = get_backend(name)
        prepared = kernel.prepare(tuple(first), ())
        blocked = [r for r in first if any(_blocks_by_time(t, r) for t in tombstones)]
        erased = tuple(dataclasses.replace(r, value="", source_message_ids=()) for r in blocked)
        prepared = prepared.forgotten(tuple(tombstones), erased)
        prepared = prepared.extended(tuple(later))
        got = resolve_prepared(prepared, scenario.context)
        assert [r.id for r in got.active] == [r.id for r in expected.active], name
        assert got.excluded == expected.excluded, name
        assert got.trace == expected.trace, name


def _blocks_by_time(tombstone: mr.ForgetTombstone, record: mr.MemoryRecord) -> bool:
    return (
        tombstone.key == record.key
        and reference.reaches(tombstone, record.scope)
        and reference.evidence_time(record) <= tombstone.blocks_sources_before
    )


@derived
@given(scenarios(), st.data())
def test_the_normaliser_and_the_sweep_agree_with_message_blocking(
    scenario: Scenario, data: st.DataObject
) -> None:
    tombstones = _hashed(data, scenario)
    now = scenario.context.now
    records, tombstone_table = (
        mr.records_to_arrow(scenario.records),
        mr.tombstones_to_arrow(tombstones),
    )
    expected_changes = reference.normalize_rows(list(scenario.records), tombstones, now)
    normalization = mr.normalize(scenario.records, now=now, tombstones=tombstones)
    assert {(change.record_id, change.new_status) for change in normalization.changes} == {
        (scenario.records[row].id, status) for row, status in expected_changes
    }
    assert (
        mr.normalize_batch(records, now=now, tombstones=tombstone_table).to_pylist()
        == reference.normalize_batch(records, now=now, tombstones=tombstone_table).to_pylist()
    )
    assert (
        mr.forget_sweep_batch(records, tombstone_table).to_pylist()
        == reference.forget_sweep_batch(records, tombstone_table).to_pylist()
    )
    plan = mr.forget_sweep(scenario.records, tombstones)
    purged = reference.purge_rows(list(scenario.records), tombstones)
    assert {(purge.record_id, purge.cause) for purge in plan.purges} == {
        (scenario.records[row].id, cause) for row, cause in purged
    }


# The rule, on the story ------------------------------------------------------------------


def _summary_of(message: str, *, observed_at: object = None) -> mr.MemoryRecord:
    return record(
        "summary",
        key="city",
        value="Lisbon (summary)",
        valid_from=day(20),
        source_message_ids=(message,),
        observed_at=observed_at,
    )


FORGET = mr.ForgetTombstone(key="city", scope=ADA, forgotten_at=day(10)).blocking_sources(["msg-3"])


@pytest.mark.parametrize("backend", ["reference", "native"])
def test_a_summary_citing_the_forgotten_message_stays_forgotten(backend: str) -> None:
    kernel = get_backend(backend)
    summary = _summary_of("msg-3")
    result = kernel.resolve([summary], context(), [FORGET])
    assert result.active == ()
    assert [(e.id, e.reason) for e in result.excluded] == [("summary", mr.Reason.FORGOTTEN)]
    # Re-told from a new message after the forget: not blocked.
    retold = _summary_of("msg-9")
    assert [r.id for r in kernel.resolve([retold], context(), [FORGET]).active] == ["summary"]


@pytest.mark.parametrize("backend", ["reference", "native"])
def test_hashes_reach_as_the_tombstone_reaches(backend: str) -> None:
    kernel = get_backend(backend)
    in_conversation = dataclasses.replace(_summary_of("msg-3"), scope=HARBOR_NIGHTS)
    owned = dataclasses.replace(
        in_conversation, scope=mr.ConversationScope("k-harbor-nights", user_id="u-ada")
    )
    # A plain tombstone on the user scope reaches only the user scope.
    assert kernel.resolve([owned], context(), [FORGET]).active != ()
    # A user-wide one reaches the user's owned conversation, never an unowned one.
    wide = dataclasses.replace(FORGET, user_wide=True)
    assert kernel.resolve([owned], context(), [wide]).active == ()
    unowned = kernel.resolve([in_conversation], context(), [wide])
    assert [r.id for r in unowned.active] == ["summary"]
    # Another key is never blocked.
    other_key = dataclasses.replace(_summary_of("msg-3"), key="pet")
    assert kernel.resolve([other_key], context(), [FORGET]).active != ()
    # Nor a record of another character's scope from a plain tombstone on ROWAN.
    on_rowan = dataclasses.replace(FORGET, scope=ROWAN)
    assert kernel.resolve([_summary_of("msg-3")], context(), [on_rowan]).active != ()


def test_a_hash_is_salted_per_tombstone() -> None:
    one = FORGET
    other = mr.ForgetTombstone(key="city", scope=ADA, forgotten_at=day(10)).blocking_sources(
        ["msg-3"]
    )
    assert one.source_salt != other.source_salt
    assert one.blocked_sources.isdisjoint(other.blocked_sources)
    assert "msg-3" not in repr(one)
    assert mr.source_hash(one.source_salt or "", "msg-3") in one.blocked_sources
    # Adding keeps the salt, and equality covers the hashes.
    more = one.blocking_sources(["msg-4"])
    assert more.source_salt == one.source_salt
    assert more.blocked_sources > one.blocked_sources
    assert more != one
    assert len(mr.new_source_salt()) == 32


def test_the_hash_is_sha256_of_salt_zero_and_id() -> None:
    assert (
        mr.source_hash(SALT, "msg-é")
        == hashlib.sha256(bytes.fromhex(SALT) + b"\x00" + "msg-é".encode()).hexdigest()
    )


@pytest.mark.parametrize(
    ("fields", "kind", "field"),
    [
        ({"source_salt": "xyz"}, mr.ErrorKind.MALFORMED, "source_salt"),
        ({"source_salt": "AB" * 16}, mr.ErrorKind.MALFORMED, "source_salt"),
        ({"source_salt": "ab" * 65}, mr.ErrorKind.MALFORMED, "source_salt"),
        ({"source_salt": 7}, mr.ErrorKind.WRONG_TYPE, "source_salt"),
        ({"blocked_sources": "ab" * 32}, mr.ErrorKind.WRONG_TYPE, "blocked_sources"),
        ({"blocked_sources": ["ab" * 32]}, mr.ErrorKind.MISSING, "source_salt"),
        (
            {"source_salt": SALT, "blocked_sources": ["ab" * 31]},
            mr.ErrorKind.MALFORMED,
            "blocked_sources[0]",
        ),
        (
            {"source_salt": SALT, "blocked_sources": [3]},
            mr.ErrorKind.WRONG_TYPE,
            "blocked_sources[0]",
        ),
    ],
)
def test_bad_salts_and_hashes_name_the_field(
    fields: dict[str, object], kind: mr.ErrorKind, field: str
) -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.ForgetTombstone(key="city", scope=ADA, forgotten_at=day(10), **fields)  # type: ignore[arg-type]
    assert (caught.value.kind, caught.value.field) == (kind, field)


def test_forms_carry_the_hashes() -> None:
    plain = mr.ForgetTombstone(key="city", scope=ADA, forgotten_at=day(10))
    for tombstone in (FORGET, plain, dataclasses.replace(plain, source_salt=SALT)):
        assert mr.tombstones_from_arrow(mr.tombstones_to_arrow([tombstone])) == [tombstone]
    buffer = io.StringIO()
    mr.write_tombstones([FORGET, plain], buffer)
    written = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert written[0]["blocked_sources"] == sorted(FORGET.blocked_sources)
    assert written[0]["source_salt"] == FORGET.source_salt
    assert "blocked_sources" not in written[1]
    assert "source_salt" not in written[1]
    assert mr.read_tombstones(io.StringIO(buffer.getvalue())) == [FORGET, plain]


def test_batch_reads_messages_only_when_a_tombstone_has_hashes() -> None:
    """Without hashes a records table whose message column is unreadable is fine (it is
    never read); with hashes the same table is refused, naming the column."""
    records = mr.records_to_arrow([_summary_of("msg-3")])
    broken = records.set_column(
        records.column_names.index("source_message_ids"),
        "source_message_ids",
        pa.array([7], pa.int64()),
    )
    plain = mr.ForgetTombstone(key="city", scope=ADA, forgotten_at=day(10))
    for resolve_batch in (mr.resolve_batch, reference.resolve_batch):
        ok = resolve_batch(
            broken,
            mr.contexts_to_arrow({"c": context()}),
            tombstones=mr.tombstones_to_arrow([plain]),
        )
        assert _decisions(ok) == {"summary": "active"}
        with pytest.raises(mr.InvalidInputError) as caught:
            resolve_batch(
                broken,
                mr.contexts_to_arrow({"c": context()}),
                tombstones=mr.tombstones_to_arrow([FORGET]),
            )
        assert (caught.value.kind, caught.value.field) == (
            mr.ErrorKind.WRONG_TYPE,
            "source_message_ids",
        )
        blocked = resolve_batch(
            records,
            mr.contexts_to_arrow({"c": context()}),
            tombstones=mr.tombstones_to_arrow([FORGET]),
            include_excluded=True,
        )
        assert _decisions(blocked) == {"summary": "forgotten"}


def test_explain_says_a_message_blocks_without_naming_it() -> None:
    from memresolve._engine._explain import explain_in  # noqa: PLC0415 - what the store calls

    summary = _summary_of("msg-3")
    explained = explain_in(summary, [summary], context(), [FORGET])
    assert explained.outcome is mr.Reason.FORGOTTEN
    assert explained.forgotten_by == (FORGET,)
    assert "message" in explained.detail
    assert "msg-3" not in explained.detail
    told = _summary_of("msg-9", observed_at=day(2))
    by_time = explain_in(told, [told], context(), [FORGET])
    assert "evidence up to" in by_time.detail
