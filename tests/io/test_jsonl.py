"""JSON Lines: lossless round trips, and strict reading with errors that name line and field."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given

import memresolve as mr
from memresolve._io._jsonl import record_to_json
from memresolve.testing import Scenario, scenarios
from story import ADA, captain_rowan, context, corrected_marlowe, day, forget, raincoat_scene


@given(scenario=scenarios())
def test_round_trip_through_json_lines_is_lossless(scenario: Scenario) -> None:
    records, contexts, tombstones = io.StringIO(), io.StringIO(), io.StringIO()
    mr.write_records(scenario.records, records)
    mr.write_contexts([scenario.context], contexts)
    mr.write_tombstones(scenario.tombstones, tombstones)
    for stream in (records, contexts, tombstones):
        stream.seek(0)
    read = mr.read_records(records)
    assert read == list(scenario.records)
    # Offsets survive too, not only instants: a migrated record keeps its zone.
    assert [r.valid_from.utcoffset() for r in read] == [
        r.valid_from.utcoffset() for r in scenario.records
    ]
    assert mr.read_contexts(contexts) == [scenario.context]
    assert mr.read_tombstones(tombstones) == list(scenario.tombstones)


def test_files_round_trip_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    mr.write_records([corrected_marlowe, raincoat_scene, captain_rowan], path)
    path.write_text(path.read_text(encoding="utf-8") + "\n   \n", encoding="utf-8")
    assert mr.read_records(path) == [corrected_marlowe, raincoat_scene, captain_rowan]


def test_records_are_written_one_object_per_line_with_tutorial_vocabulary() -> None:
    out = io.StringIO()
    mr.write_records([corrected_marlowe], out)
    (line,) = out.getvalue().splitlines()
    obj = json.loads(line)
    assert obj["scope"] == {"kind": "user", "user_id": "u-ada"}
    assert obj["authority"] == "user-corrected"
    assert obj["valid_from"] == "2026-07-02T00:00:00+00:00"


def test_z_suffix_and_offsets_are_read() -> None:
    line = (
        json.dumps(
            {
                "now": "2026-07-30T14:00:00+02:00",
                "user_id": "u",
                "character_id": "c",
                "conversation_id": "k",
            }
        )
        + "\n"
        + json.dumps(
            {
                "now": "2026-07-30T12:00:00Z",
                "user_id": "u",
                "character_id": "c",
                "conversation_id": "k",
                "scene_id": None,
            }
        )
    )
    first, second = mr.read_contexts(io.StringIO(line))
    assert first == second


def _record_line(**changes: object) -> str:
    obj: dict[str, object] = {
        "id": "m1",
        "key": "pet.name",
        "value": "Marlowe",
        "scope": {"kind": "user", "user_id": "u-ada"},
        "status": "active",
        "authority": "user-corrected",
        "confidence": 1.0,
        "valid_from": "2026-07-02T00:00:00+00:00",
        "version": 2,
    }
    obj.update(changes)
    return json.dumps({k: v for k, v in obj.items() if v is not _DROP})


_DROP = object()
K = mr.ErrorKind


@pytest.mark.parametrize(
    ("changes", "field", "kind"),
    [
        ({"valid_from": "2026-07-02T00:00:00"}, "valid_from", K.MALFORMED),
        ({"valid_from": "yesterday"}, "valid_from", K.MALFORMED),
        ({"valid_from": 1780000000}, "valid_from", K.WRONG_TYPE),
        ({"valid_until": "2026-07-02"}, "valid_until", K.MALFORMED),
        ({"confidence": float("nan")}, "confidence", K.NOT_FINITE),
        ({"version": 1.5}, "version", K.WRONG_TYPE),
        ({"version": 2**63}, "version", K.OUT_OF_RANGE),
        ({"status": "archived"}, "status", K.UNKNOWN_VALUE),
        ({"key": _DROP}, "key", K.MISSING),
        ({"valid_untill": None}, "valid_untill", K.UNKNOWN_FIELD),
        ({"scope": {"kind": "user"}}, "scope.user_id", K.MISSING),
        ({"scope": {"user_id": "u"}}, "scope.kind", K.MISSING),
        ({"scope": {"kind": 3, "user_id": "u"}}, "scope.kind", K.WRONG_TYPE),
        ({"scope": {"kind": "team", "team_id": "t"}}, "scope.kind", K.UNKNOWN_VALUE),
        (
            {"scope": {"kind": "user", "user_id": "u", "character_id": "c"}},
            "scope.character_id",
            K.UNKNOWN_FIELD,
        ),
        ({"scope": {"kind": "user", "user_id": ""}}, "scope.user_id", K.EMPTY),
        ({"scope": "user:u-ada"}, "scope", K.WRONG_TYPE),
        ({"source_message_ids": "msg-1"}, "source_message_ids", K.WRONG_TYPE),
    ],
)
def test_bad_record_lines_name_line_record_and_field(
    changes: dict[str, object], field: str, kind: mr.ErrorKind
) -> None:
    text = _record_line(id="m0") + "\n\n" + _record_line(**changes) + "\n"
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.read_records(io.StringIO(text))
    error = caught.value
    assert (error.line, error.record_id, error.field, error.kind) == (3, "m1", field, kind)
    assert "line 3" in str(error)


def test_not_json_and_not_an_object_are_reported_with_the_line() -> None:
    with pytest.raises(mr.InvalidInputError, match="line 1: not valid JSON") as caught:
        mr.read_records(io.StringIO("{oops\n"))
    assert (caught.value.kind, caught.value.line) == (K.MALFORMED, 1)
    with pytest.raises(mr.InvalidInputError, match="expected a JSON object, got array") as caught:
        mr.read_records(io.StringIO("[1, 2]\n"))
    assert caught.value.kind is K.WRONG_TYPE


def test_duplicate_keys_in_an_object_are_rejected() -> None:
    line = _record_line()[:-1] + ', "version": 3}'
    with pytest.raises(mr.InvalidInputError, match="'version' appears twice") as caught:
        mr.read_records(io.StringIO(line))
    assert (caught.value.field, caught.value.kind) == ("version", K.DUPLICATE_FIELD)


def test_tombstones_and_contexts_are_strict_too() -> None:
    good = io.StringIO()
    mr.write_tombstones([forget("pet.name", ADA, day(20))], good)
    obj = json.loads(good.getvalue())
    obj["forgotten_at"] = "2026-07-20T10:00:00"
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.read_tombstones(io.StringIO(json.dumps(obj)))
    assert caught.value.field == "forgotten_at"
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.read_contexts(io.StringIO(json.dumps({"now": "2026-07-30T12:00:00Z"})))
    assert caught.value.field == "user_id"
    assert mr.read_contexts(
        io.StringIO(
            json.dumps(
                {
                    "now": "2026-07-30T12:00:00Z",
                    "user_id": "u-ada",
                    "character_id": "c-rowan",
                    "conversation_id": "k-harbor-nights",
                    "scene_id": "s-raincoat",
                }
            )
        )
    ) == [context()]


@pytest.mark.parametrize(
    "line",
    [
        _record_line(scope={"kind": ["user"], "user_id": "u"}),
        _record_line(scope={"kind": {"k": 1}, "user_id": "u"}),
        '{"id": "m1", "version": ' + "9" * 5000 + "}",
        "[" * 100_000 + "]" * 100_000,
        _record_line(valid_from="2026-01-01T00:00:00xZ"),
        _record_line(valid_from="2026-01-01T00:00:00\u0000Z"),
    ],
)
def test_hostile_lines_are_invalid_input(line: str) -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.read_records(io.StringIO(line + "\n"))
    assert caught.value.line == 1


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_bytes(_record_line().encode() + b"\n" + b'{"id": "\xff"}\n')
    with pytest.raises(mr.InvalidInputError, match="UTF-8") as caught:
        mr.read_records(path)
    assert (caught.value.line, caught.value.kind) == (2, K.INVALID_UNICODE)


# Lines are read in bounded memory (issue 35, finding 9) ----------------------------------

ENDLESS = """
import resource, sys
# A ceiling, so that a reader that holds the line cannot take the machine down with it.
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
import memresolve as mr
from memresolve.testing.peak_memory import own_peak_bytes
try:
    mr.read_records(sys.argv[1])
except mr.InvalidInputError as error:
    print(error.kind, error.line, own_peak_bytes() // 2**20)
"""


def test_regression_an_endless_line_is_bad_input_in_bounded_memory() -> None:
    """``/dev/zero`` is a file whose one line never ends: it was read whole, until a
    ``MemoryError`` traceback."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    done = subprocess.run(
        [sys.executable, "-c", ENDLESS, "/dev/zero"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    kind, line, peak_mib = done.stdout.split()
    assert (kind, line) == ("out-of-range", "1"), done.stderr
    assert int(peak_mib) < 200, "about the limit (16 MiB) beside the interpreter"


@pytest.mark.parametrize("form", ["file", "text stream", "list of lines"])
def test_a_line_over_the_limit_is_out_of_range_naming_it(form: str, tmp_path: Path) -> None:
    from memresolve._io._lines import MAX_LINE_BYTES  # noqa: PLC0415

    good = json.dumps(record_to_json(corrected_marlowe))
    long = json.dumps({**record_to_json(raincoat_scene), "value": "x" * MAX_LINE_BYTES})
    text = f"{good}\n{long}\n{good}\n"
    path = tmp_path / "records.jsonl"
    path.write_text(text, encoding="utf-8")
    source: object = {
        "file": path,
        "text stream": io.StringIO(text),
        "list of lines": text.splitlines(keepends=True),
    }[form]
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.read_records(source)  # type: ignore[arg-type]
    assert (caught.value.kind, caught.value.line) == (mr.ErrorKind.OUT_OF_RANGE, 2)
    assert "line 2" in str(caught.value)


def test_a_line_at_the_limit_is_read(tmp_path: Path) -> None:
    from memresolve._io._lines import MAX_LINE_BYTES  # noqa: PLC0415

    record = record_to_json(raincoat_scene)
    base = len(json.dumps({**record, "value": ""}).encode())
    line = json.dumps({**record, "value": "é" * ((MAX_LINE_BYTES - base) // 2)}, ensure_ascii=False)
    line += " " * (MAX_LINE_BYTES - len(line.encode()))  # exactly the limit, in bytes
    assert len(line.encode()) == MAX_LINE_BYTES
    path = tmp_path / "records.jsonl"
    path.write_text(line, encoding="utf-8")  # the last line: no newline
    assert mr.read_records(path)[0].value.startswith("éé")
    path.write_text(line + "\n" + line + "\n", encoding="utf-8")
    assert len(mr.read_records(path)) == 2
    path.write_text(line + " \n", encoding="utf-8")  # one byte more
    with pytest.raises(mr.InvalidInputError):
        mr.read_records(path)


def test_context_ids_agree_between_json_lines_arrow_and_batch() -> None:
    first, second = context(), context(character_id=None, conversation_id=None, scene_id=None)
    for passed, expected in [
        ({"a": first, "b": second}, [("a", first), ("b", second)]),
        ([("a", first), ("b", second)], [("a", first), ("b", second)]),
        ([first, second], [("1", first), ("2", second)]),
    ]:
        lines = io.StringIO()
        mr.write_contexts(passed, lines)  # type: ignore[arg-type]
        lines.seek(0)
        assert mr.read_contexts(lines, with_ids=True) == expected
        lines.seek(0)
        assert mr.read_contexts(lines) == [first, second]
        table = mr.contexts_to_arrow(passed)  # type: ignore[arg-type]
        assert mr.contexts_from_arrow(table) == expected
        decided = mr.resolve_batch(mr.records_to_arrow([]), passed)
        assert decided.num_rows == 0
    # A context without an id takes its position, so it may meet a given one.
    lines = io.StringIO()
    mr.write_contexts([("2", first)], lines)  # the writers refuse it: written in two goes
    mr.write_contexts([second], lines)
    lines.seek(0)
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.read_contexts(lines)
    assert (caught.value.kind, caught.value.field, caught.value.line) == (
        mr.ErrorKind.DUPLICATE_ID,
        "context_id",
        2,
    )


def test_a_bad_context_id_or_a_dict_of_columns_is_refused_by_name() -> None:
    line = {"context_id": 7, "now": "2026-07-30T12:00:00Z", "user_id": "u"}
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.read_contexts(io.StringIO(json.dumps(line)))
    assert (caught.value.kind, caught.value.field, caught.value.line) == (
        mr.ErrorKind.WRONG_TYPE,
        "context_id",
        1,
    )
    columns = {"context_id": ["a"], "now": [day(30)], "user_id": ["u"]}
    for call in (
        lambda: mr.contexts_to_arrow(columns),  # type: ignore[arg-type]
        lambda: mr.write_contexts(columns, io.StringIO()),  # type: ignore[arg-type]
        lambda: mr.resolve_batch(mr.records_to_arrow([]), columns),
    ):
        with pytest.raises(mr.InvalidInputError, match=r"contexts\['context_id'\]") as caught:
            call()
        assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.WRONG_TYPE, "contexts")
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.contexts_to_arrow([("a", context()), "b"])  # type: ignore[list-item]
    assert (caught.value.field, caught.value.row) == ("contexts", 1)


@given(scenario=scenarios())
def test_from_dict_reads_the_json_lines_shape_as_the_reader_does(scenario: Scenario) -> None:
    for record in scenario.records:
        nested = record_to_json(record)
        assert mr.MemoryRecord.from_dict(nested) == record
        assert mr.MemoryRecord.from_dict(record.to_dict()) == record
        # A nested row may also hold objects: a Scope and datetimes.
        objects = nested | {"scope": record.scope, "valid_from": record.valid_from}
        assert mr.MemoryRecord.from_dict(objects) == record


@pytest.mark.parametrize(
    "change",
    [
        {"scope": {"kind": "user"}},
        {"scope": {"kind": "planet", "user_id": "u"}},
        {"scope": {"kind": "user", "user_id": "u", "scene_id": "s"}},
        {"valid_from": "2026-07-01T00:00:00"},
        {"valid_until": "yesterday"},
        {"status": "Active"},
    ],
)
def test_a_bad_nested_row_fails_as_the_json_lines_reader_does(change: dict[str, object]) -> None:
    line = record_to_json(corrected_marlowe) | change
    with pytest.raises(mr.InvalidInputError) as from_reader:
        mr.read_records(io.StringIO(json.dumps(line)))
    with pytest.raises(mr.InvalidInputError) as from_row:
        mr.MemoryRecord.from_dict(line)
    assert (from_row.value.kind, from_row.value.field, from_row.value.record_id) == (
        from_reader.value.kind,
        from_reader.value.field,
        from_reader.value.record_id,
    )


def test_a_row_with_a_nested_scope_and_flat_scope_columns_is_inconsistent() -> None:
    row = corrected_marlowe.to_dict() | {"scope": {"kind": "user", "user_id": "u-ada"}}
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.MemoryRecord.from_dict(row)
    assert (caught.value.kind, caught.value.field) == (mr.ErrorKind.INCONSISTENT, "scope_kind")
    # Flat columns left None (as a table with every column gives them) are not a shape.
    empty = dict.fromkeys(("scope_kind", "user_id", "character_id", "conversation_id", "scene_id"))
    nested = record_to_json(corrected_marlowe)
    assert mr.MemoryRecord.from_dict(nested | empty) == corrected_marlowe


def test_every_writer_refuses_a_repeated_context_id_the_readers_would_refuse() -> None:
    first, second = context(), context(scene_id=None)
    for contexts, row in [([("a", first), ("a", second)], 1), ([first, ("1", second)], 1)]:
        for call in (
            lambda c=contexts: mr.write_contexts(c, io.StringIO()),
            lambda c=contexts: mr.contexts_to_arrow(c),
            lambda c=contexts: mr.resolve_batch(mr.records_to_arrow([]), c),
        ):
            with pytest.raises(mr.InvalidInputError) as caught:
                call()
            assert (caught.value.kind, caught.value.field, caught.value.row) == (
                mr.ErrorKind.DUPLICATE_ID,
                "context_id",
                row,
            )


def test_resolve_batch_takes_any_iterable_of_contexts_as_contexts_to_arrow_does() -> None:
    turns = {"a": context(), "b": context(scene_id=None)}
    records = mr.records_to_arrow([corrected_marlowe])
    expected = mr.resolve_batch(records, mr.contexts_to_arrow(turns))
    for passed in (turns.items(), iter(turns.items()), (pair for pair in turns.items())):
        assert mr.resolve_batch(records, passed).equals(expected)
    assert mr.resolve_batch(records, turns.values()).column("context_id").to_pylist() == [
        "1",
        "2",
    ]


def test_a_null_scope_beside_flat_scope_columns_is_a_flat_row() -> None:
    assert mr.MemoryRecord.from_dict(corrected_marlowe.to_dict() | {"scope": None}) == (
        corrected_marlowe
    )
