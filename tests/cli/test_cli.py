"""The ``memresolve`` command: the bundled demo and resolving files."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import memresolve as mr
from memresolve._cli._main import main
from story import ADA, context, corrected_marlowe, day, forget, inferred_harbor


def test_demo_prints_winners_with_certainty_and_exclusions_with_reasons(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Context 1 of 3" in out
    assert "pet.name" in out
    assert "confirmed  'Marlowe'" in out
    assert "mem-pet-1                superseded" in out
    assert "mem-address-summary      forgotten" in out
    assert "trace: memory_candidates=14" in out


def test_the_store_demo_forgets_through_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "story.db"
    assert main(["demo", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    before, after = out.split("After the forget")
    assert before.count("'14 Quay Lane'") == 3
    assert "erased the text of mem-address, mem-address-summary" in out
    assert "the file still holds the text of mem-address: no" in out
    assert "YES" not in out
    assert "Quay Lane" not in after
    assert after.count("'Marlowe'") == 3
    assert b"Quay Lane" not in path.read_bytes()
    # Run again: the file is replaced, not added to.
    assert main(["demo", "--store", str(path)]) == 0
    assert "Stored 14 records" in capsys.readouterr().out


@pytest.mark.parametrize(
    "kind", ["text", "sqlite", "store", "empty store", "records table", "story and more"]
)
def test_regression_the_store_demo_never_replaces_a_file_it_did_not_write(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    """``demo --store FILE`` deleted FILE and its log whatever FILE was."""
    path = tmp_path / "mine.db"
    if kind == "text":
        path.write_text("my notes\n", encoding="utf-8")
    elif kind in ("sqlite", "records table"):
        connection = sqlite3.connect(path)
        connection.execute("CREATE TABLE mine (x)")
        connection.execute("INSERT INTO mine VALUES (1)")
        if kind == "records table":  # a table named as the store's, empty: still not ours
            connection.execute("CREATE TABLE records (id TEXT)")
        connection.commit()
        connection.close()
    else:
        if kind == "story and more":  # the demo's output, then a record of the user's
            assert main(["demo", "--store", str(path)]) == 0
            capsys.readouterr()
        with mr.MemoryStore(path) as store:
            if kind != "empty store":
                store.add([inferred_harbor.corrected("Rex", at=day(3), id="mine-1")])
    before = path.read_bytes()
    assert main(["demo", "--store", str(path)]) == 2
    assert "not a store the demo wrote" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_demo_as_json_follows_the_story(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--format", "json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    during, next_morning, other_character = (json.loads(line) for line in lines)
    active_during = {m["key"]: m for m in during["active"]}
    assert active_during["pet.name"]["value"] == "Marlowe"
    assert active_during["pet.name"]["certainty"] == "confirmed"
    assert active_during["story.lantern.status"]["value"] == "shattered"
    assert "scene.raincoat" in active_during
    assert "scene.raincoat" not in {m["key"] for m in next_morning["active"]}
    assert {e["id"]: e["reason"] for e in next_morning["excluded"]}["mem-raincoat"] == (
        "status-or-time"
    )
    assert "character.title" not in {m["key"] for m in other_character["active"]}
    assert {m["key"]: m["value"] for m in other_character["active"]}["user.city"] == (
        "Porto, for the weekend"
    )
    reasons = {e["id"]: e["reason"] for e in during["excluded"]}
    assert reasons["mem-address-summary"] == "forgotten"
    assert reasons["mem-lantern-1"] == "superseded"
    assert reasons["mem-pet-2-retry"] == "lower-precedence"
    assert during["trace"]["memory_candidates"] == 14


def test_resolve_reads_jsonl_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mr.write_records([inferred_harbor, corrected_marlowe], tmp_path / "r.jsonl")
    mr.write_contexts([context()], tmp_path / "c.jsonl")
    mr.write_tombstones([forget("pet.name", ADA, day(1, 12))], tmp_path / "t.jsonl")
    argv = ["resolve", str(tmp_path / "r.jsonl"), "--contexts", str(tmp_path / "c.jsonl")]
    assert main([*argv, "--tombstones", str(tmp_path / "t.jsonl"), "--format", "json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    decision = json.loads(line)
    assert [m["id"] for m in decision["active"]] == ["mem-pet-2"]
    assert decision["excluded"] == [{"id": "mem-pet-1", "reason": "forgotten"}]


def test_bad_input_file_exits_2_naming_line_record_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mr.write_records([inferred_harbor], tmp_path / "r.jsonl")
    with (tmp_path / "r.jsonl").open("a") as f:
        f.write(
            '{"id": "m9", "key": "k", "value": "", "scope": {"kind": "user", "user_id": "u"},'
            ' "status": "active", "authority": "model-inferred", "confidence": 2,'
            ' "valid_from": "2026-07-01T00:00:00Z", "version": 1}\n'
        )
    mr.write_contexts([context()], tmp_path / "c.jsonl")
    status = main(["resolve", str(tmp_path / "r.jsonl"), "--contexts", str(tmp_path / "c.jsonl")])
    assert status == 2
    err = capsys.readouterr().err
    assert "line 2" in err
    assert "'m9'" in err
    assert "'confidence'" in err


def test_python_dash_m_runs_the_command() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "memresolve", "demo", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert len(completed.stdout.splitlines()) == 3


def test_counts_are_in_the_singular_for_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mr.write_records([inferred_harbor], tmp_path / "r.jsonl")
    mr.write_contexts([context()], tmp_path / "c.jsonl")
    assert (
        main(["resolve", str(tmp_path / "r.jsonl"), "--contexts", str(tmp_path / "c.jsonl")]) == 0
    )
    assert "1 record, 0 tombstones, 1 context\n" in capsys.readouterr().out


def test_one_context_from_flags_with_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scene = mr.SceneScope("k-1", "s-1", user_id="u-ada")
    records = [
        inferred_harbor,
        corrected_marlowe,
        mr.MemoryRecord(
            id="outfit",
            key="outfit",
            value="raincoat",
            scope=scene,
            authority="rule-extracted",
            confidence=0.9,
            valid_from=day(1),
        ),
    ]
    mr.write_records(records, tmp_path / "r.jsonl")
    base = ["resolve", str(tmp_path / "r.jsonl"), "--now", "2026-07-30T12:00Z", "--user", "u-ada"]
    assert main([*base, "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    decided = json.loads(line)
    assert decided["context_id"] == "1"  # the quick query's one context
    assert decided["context"]["character_id"] is None
    assert [m["id"] for m in decided["active"]] == ["mem-pet-2"]
    assert main([*base, "--conversation", "k-1", "--scene", "s-1", "--json"]) == 0
    decided = json.loads(capsys.readouterr().out)
    assert {m["id"] for m in decided["active"]} == {"mem-pet-2", "outfit"}
    # Another user never sees the owned scene.
    other = ["--now", "2026-07-30T12:00Z", "--user", "u-bob", "--conversation", "k-1"]
    assert main(["resolve", str(tmp_path / "r.jsonl"), *other, "--scene", "s-1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["active"] == []


def test_a_quick_query_needs_now_and_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mr.write_records([inferred_harbor], tmp_path / "r.jsonl")
    assert main(["resolve", str(tmp_path / "r.jsonl"), "--user", "u-ada"]) == 2
    assert "--now and --user" in capsys.readouterr().err
    assert main(["resolve", str(tmp_path / "r.jsonl"), "--user", "u", "--now", "noon"]) == 2
    assert "not an ISO-8601" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--character", ""], "'character_id' must not be empty"),
        (["--conversation", ""], "'conversation_id' must not be empty"),
        (["--scene", "s-1"], "--scene needs --conversation"),
        (["--contexts", "c.jsonl"], "--contexts and --now are alternatives"),
    ],
)
def test_a_quick_query_refuses_what_it_cannot_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], said: str
) -> None:
    mr.write_records([inferred_harbor], tmp_path / "r.jsonl")
    mr.write_contexts([context()], tmp_path / "c.jsonl")
    options = [str(tmp_path / o) if o.endswith(".jsonl") else o for o in options]
    base = ["resolve", str(tmp_path / "r.jsonl"), "--now", "2026-07-30T12:00Z", "--user", "u"]
    assert main([*base, *options]) == 2
    assert said in capsys.readouterr().err


def test_demo_path_names_the_folder_of_the_bundled_story(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--path"]) == 0
    story = Path(capsys.readouterr().out.strip())
    assert story.is_absolute()
    names = {path.name for path in story.iterdir()}
    for table in ("records", "contexts", "tombstones"):
        assert {f"{table}.jsonl", f"{table}.parquet"} <= names
    assert (
        main(
            [
                "resolve",
                str(story / "records.jsonl"),
                "--contexts",
                str(story / "contexts.jsonl"),
                "--tombstones",
                str(story / "tombstones.jsonl"),
                "--json",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.count("\n") == len(
        (story / "contexts.jsonl").read_text(encoding="utf-8").splitlines()
    )


def test_json_output_carries_each_contexts_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mr.write_records([inferred_harbor], tmp_path / "r.jsonl")
    turn = context(scene_id=None)
    (tmp_path / "c.jsonl").write_text(
        json.dumps(
            {
                "context_id": "turn-7",
                **mr.contexts_to_arrow([turn]).drop_columns(["context_id", "now"]).to_pylist()[0],
                "now": "2026-07-30T12:00:00Z",
            }
        )
        + "\n"
        + json.dumps({"now": "2026-07-30T12:00:00Z", "user_id": "u-ada"})
        + "\n",
        encoding="utf-8",
    )
    command = ["resolve", str(tmp_path / "r.jsonl"), "--contexts", str(tmp_path / "c.jsonl")]
    assert main([*command, "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # An id given is kept; a context without one has its position among the file's contexts.
    assert [line["context_id"] for line in lines] == ["turn-7", "2"]
    assert lines[1]["context"]["conversation_id"] is None
