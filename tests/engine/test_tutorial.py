"""The tutorial's three tests, and one test per case of its "Also test" list."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import memresolve as mr
from memresolve._io._jsonl import record_from_json, record_to_json
from profiles import Resolve
from story import (
    ADA,
    HARBOR_NIGHTS,
    NOW,
    captain_rowan,
    context,
    corrected_marlowe,
    day,
    forget,
    inferred_harbor,
    raincoat_scene,
    record,
    reexpressed,
)

# The tutorial's own three tests ----------------------------------------------------------


def test_prefers_a_direct_correction_over_an_inferred_value(resolve: Resolve) -> None:
    result = resolve([inferred_harbor, corrected_marlowe], context())
    assert [r.value for r in result.active] == ["Marlowe"]
    assert mr.Exclusion("mem-pet-1", mr.Reason.SUPERSEDED) in result.excluded


def test_excludes_a_scene_fact_after_expiry(resolve: Resolve) -> None:
    result = resolve([raincoat_scene], context(now=day(31)))
    assert result.active == ()
    assert result.reason_for("mem-raincoat") is mr.Reason.STATUS_OR_TIME


def test_does_not_leak_a_character_scoped_fact(resolve: Resolve) -> None:
    result = resolve([captain_rowan], context(character_id="different-character"))
    assert result.active == ()
    assert result.reason_for("mem-rowan") is mr.Reason.SCOPE


# "Also test" -----------------------------------------------------------------------------


def test_correction_chain_of_four_versions_keeps_only_the_newest(resolve: Resolve) -> None:
    chain = [
        record("v1", value="lit", version=1, valid_from=day(10)),
        record("v2", value="dimmed", version=2, valid_from=day(15), supersedes="v1"),
        record("v3", value="flickering", version=3, valid_from=day(20), supersedes="v2"),
        record("v4", value="shattered", version=4, valid_from=day(28), supersedes="v3"),
    ]
    result = resolve(chain, context())
    assert [r.id for r in result.active] == ["v4"]
    assert {e.id: e.reason for e in result.excluded} == {
        "v1": mr.Reason.SUPERSEDED,
        "v2": mr.Reason.SUPERSEDED,
        "v3": mr.Reason.SUPERSEDED,
    }


def test_chain_whose_middle_link_has_expired_brings_back_the_first_as_a_candidate(
    resolve: Resolve,
) -> None:
    # v2's interval ended, so its edge is off: v1 is no longer hidden, and only
    # precedence (v3's higher version) keeps it out of the prompt.
    chain = [
        record("v1", version=1, valid_from=day(10)),
        record("v2", version=2, valid_from=day(15), valid_until=day(16), supersedes="v1"),
        record("v3", version=3, valid_from=day(20), supersedes="v2"),
    ]
    result = resolve(chain, context())
    assert [r.id for r in result.active] == ["v3"]
    assert result.reason_for("v2") is mr.Reason.STATUS_OR_TIME
    assert result.reason_for("v1") is mr.Reason.LOWER_PRECEDENCE


def test_equal_timestamps_and_versions_fall_back_to_the_smallest_id(resolve: Resolve) -> None:
    twins = [record(record_id, valid_from=day(3), version=7) for record_id in ("m-b", "m-a", "m-c")]
    for order in (twins, twins[::-1], [twins[1], twins[2], twins[0]]):
        result = resolve(order, context())
        assert [r.id for r in result.active] == ["m-a"]
        assert [(e.id, e.reason) for e in result.excluded] == [
            ("m-b", mr.Reason.LOWER_PRECEDENCE),
            ("m-c", mr.Reason.LOWER_PRECEDENCE),
        ]


def test_an_expired_correction_does_not_hide_the_older_active_value(resolve: Resolve) -> None:
    lisbon = record("city-1", key="user.city", value="Lisbon", valid_from=day(1))
    porto_for_the_weekend = record(
        "city-2",
        key="user.city",
        value="Porto",
        authority="user-corrected",
        valid_from=day(25),
        valid_until=day(27),
        supersedes="city-1",
        version=2,
    )
    during = resolve([lisbon, porto_for_the_weekend], context(now=day(26)))
    after = resolve([lisbon, porto_for_the_weekend], context(now=day(28)))
    assert [r.value for r in during.active] == ["Porto"]
    assert [r.value for r in after.active] == ["Lisbon"]
    assert after.reason_for("city-2") is mr.Reason.STATUS_OR_TIME


def test_a_correction_stored_as_expired_does_not_hide_the_older_value(resolve: Resolve) -> None:
    lisbon = record("city-1", key="user.city", value="Lisbon")
    stale = record("city-2", key="user.city", status="expired", supersedes="city-1", version=2)
    result = resolve([lisbon, stale], context())
    assert [r.value for r in result.active] == ["Lisbon"]


def test_retried_inserts_of_one_correction_pick_one_stable_winner(resolve: Resolve) -> None:
    retries = [
        record(
            f"mem-pet-2-try{attempt}",
            value="Marlowe",
            authority="user-corrected",
            valid_from=day(2),
            supersedes="mem-pet-1",
            version=2,
        )
        for attempt in (3, 1, 2)
    ]
    first = resolve([inferred_harbor, *retries[:1]], context())
    every = resolve([inferred_harbor, *retries], context())
    assert [r.id for r in first.active] == ["mem-pet-2-try3"]
    assert [r.id for r in every.active] == ["mem-pet-2-try1"]
    assert every.reason_for("mem-pet-1") is mr.Reason.SUPERSEDED
    assert every.trace.excluded_precedence == 2
    assert [r.value for r in every.active] == [r.value for r in first.active]


def test_missing_source_messages_change_no_decision(resolve: Resolve) -> None:
    with_sources = [
        dataclasses.replace(inferred_harbor, source_message_ids=("msg-12", "msg-deleted")),
        dataclasses.replace(corrected_marlowe, source_message_ids=("msg-that-never-existed",)),
    ]
    without = [
        dataclasses.replace(inferred_harbor, source_message_ids=()),
        dataclasses.replace(corrected_marlowe, source_message_ids=()),
    ]
    with_result = resolve(with_sources, context())
    without_result = resolve(without, context())
    assert [r.id for r in with_result.active] == [r.id for r in without_result.active]
    assert with_result.excluded == without_result.excluded
    assert with_result.trace == without_result.trace


def test_a_forgotten_key_stays_forgotten_when_a_summary_repeats_it(resolve: Resolve) -> None:
    address = record("addr", key="user.address", value="14 Quay Lane", valid_from=day(3))
    summary_written_after_the_forget = record(
        "addr-summary",
        key="user.address",
        value="lives on Quay Lane",
        authority="model-inferred",
        valid_from=day(25),
        observed_at=day(3),  # its oldest source message
        version=2,
    )
    result = resolve(
        [address, summary_written_after_the_forget],
        context(),
        tombstones=[forget("user.address", ADA, day(20))],
    )
    assert result.active == ()
    assert result.reason_for("addr") is mr.Reason.FORGOTTEN
    assert result.reason_for("addr-summary") is mr.Reason.FORGOTTEN


def _migrated(records: list[mr.MemoryRecord], seed: int) -> list[mr.MemoryRecord]:
    """What another storage system hands back: shuffled, other offsets, through JSON."""
    shuffle = random.Random(seed)
    zones = [timezone(timedelta(hours=h)) for h in (-11, -3, 0, 5, 13)]
    moved = []
    for original in shuffle.sample(records, len(records)):
        zone = shuffle.choice(zones)
        shifted = reexpressed(original, zone)
        moved.append(record_from_json(json.loads(json.dumps(record_to_json(shifted)))))
    return moved


def test_a_conversation_migrated_between_storage_systems_resolves_the_same(
    resolve: Resolve,
) -> None:
    records = [
        inferred_harbor,
        corrected_marlowe,
        raincoat_scene,
        captain_rowan,
        record("lantern-1", key="story.lantern", scope=HARBOR_NIGHTS, valid_from=day(10)),
        record(
            "lantern-2",
            key="story.lantern",
            scope=HARBOR_NIGHTS,
            valid_from=day(15),
            supersedes="lantern-1",
            version=2,
        ),
    ]
    tombstones = [forget("pet.name", ADA, day(1, 12))]
    before = resolve(records, context(), tombstones=tombstones)
    for seed in range(5):
        after = resolve(_migrated(records, seed), context(), tombstones=tombstones)
        assert after == before
        assert [r.valid_from for r in after.active] == [r.valid_from for r in before.active]


def test_workers_with_different_clocks_agree_given_the_same_now(resolve: Resolve) -> None:
    records = [inferred_harbor, corrected_marlowe, raincoat_scene, captain_rowan]
    # Each worker expresses the same instant in its own zone.
    results = [
        resolve(records, context(now=NOW.astimezone(timezone(timedelta(hours=h)))))
        for h in (-12, -5, 0, 1, 9, 14)
    ]
    assert all(result == results[0] for result in results)


_WORKER = """
import sys
import memresolve as mr
from memresolve._cli._main import run
contexts = mr.read_contexts(sys.argv[2], with_ids=True)
run(mr.read_records(sys.argv[1]), contexts, mr.read_tombstones(sys.argv[3]),
    output_format="json", out=sys.stdout)
"""


def test_workers_in_other_time_zones_and_locales_print_identical_decisions(
    tmp_path: Path,
) -> None:
    # The library never reads the clock, the local zone or the locale: two
    # worker processes that disagree on all three print the same decisions.
    records = [inferred_harbor, corrected_marlowe, raincoat_scene, captain_rowan]
    mr.write_records(records, tmp_path / "records.jsonl")
    mr.write_contexts([context(), context(now=day(31))], tmp_path / "contexts.jsonl")
    mr.write_tombstones([forget("pet.name", ADA, day(1))], tmp_path / "tombstones.jsonl")
    args = [
        str(tmp_path / name) for name in ("records.jsonl", "contexts.jsonl", "tombstones.jsonl")
    ]
    outputs = []
    for zone, locale in (
        ("UTC", "C"),
        ("Pacific/Kiritimati", "tr_TR.UTF-8"),
        ("America/Adak", "sv_SE.UTF-8"),
    ):
        env = {**os.environ, "TZ": zone, "LC_ALL": locale, "LANG": locale}
        completed = subprocess.run(
            [sys.executable, "-c", _WORKER, *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.append(completed.stdout)
    assert outputs[0].count("\n") == 2
    assert outputs[0] == outputs[1] == outputs[2]


def test_instants_in_a_zone_resolve_as_the_instants_they_name_across_a_dst_change(
    resolve: Resolve,
) -> None:
    # 01:45 (first pass, EDT) is 05:45Z; 01:15 (second pass, EST, fold=1) is 06:15Z.
    # Within one ZoneInfo Python compares wall clocks and would call 01:45 later.
    new_york = ZoneInfo("America/New_York")
    starts = datetime(2026, 11, 1, 1, 45, tzinfo=new_york)
    now = datetime(2026, 11, 1, 1, 15, fold=1, tzinfo=new_york)
    assert starts > now  # the pitfall, in plain Python
    migrated = resolve([record("m", valid_from=starts)], context(now=now))
    in_utc = resolve(
        [record("m", valid_from=starts.astimezone(UTC))], context(now=now.astimezone(UTC))
    )
    assert migrated.is_active("m")
    assert in_utc.is_active("m")
    moved = record_from_json(json.loads(json.dumps(record_to_json(record("m", valid_from=starts)))))
    assert moved == record("m", valid_from=starts)
