"""The batch form (docs/spec.md §4): native against reference, and against ``resolve`` per context.

Also every producer and column encoding the Arrow input accepts, and one test
per rejection rule (both backends name the same column and row).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings

import memresolve as mr
from batch_cases import REJECTIONS, STORY, UTC_MICROS, C, K, R, T
from batch_cases import set_column as _set
from batch_cases import with_row as _with_row
from batch_rows import arrow_tables
from memresolve import reference
from memresolve._backend import available_backends
from memresolve._engine._kernels import BatchResolver, get_batch_resolver
from memresolve._model._types import DECISION_NAMES
from memresolve.testing import Store, stores
from profiles import PARITY_EXAMPLES
from story import context, day, record

BACKENDS = available_backends()


def _rows(table: pa.Table) -> list[tuple[str, str, str]]:
    return [(r["context_id"], r["record_id"], r["decision"]) for r in table.to_pylist()]


def _expected_rows(store: Store, *, include_excluded: bool) -> list[tuple[str, str, str]]:
    """docs/spec.md §4.2: per context, ``resolve(all records)`` less scope exclusions."""
    rows = []
    for context_id, ctx in store.contexts:
        result = reference.resolve(store.records, ctx, tombstones=store.tombstones)
        rows += [(context_id, r.id, "active") for r in result.active]
        if include_excluded:
            rows += [
                (context_id, e.id, e.reason.value)
                for e in result.excluded
                if e.reason is not mr.Reason.SCOPE
            ]
    return rows


@settings(max_examples=max(50, PARITY_EXAMPLES // 4))
@given(stores())
def test_every_backend_equals_resolve_per_context(store: Store) -> None:
    records, contexts, tombstones = arrow_tables(store)
    for include_excluded in (False, True):
        expected = _expected_rows(store, include_excluded=include_excluded)
        for backend in BACKENDS:
            result = get_batch_resolver(backend)(
                records, contexts, tombstones=tombstones, include_excluded=include_excluded
            )
            assert _rows(result) == expected, backend


@settings(max_examples=max(50, PARITY_EXAMPLES // 4))
@given(stores())
def test_native_and_reference_tables_are_identical(store: Store) -> None:
    records, contexts, tombstones = arrow_tables(store)
    for with_values in (False, True):
        tables = [
            get_batch_resolver(backend)(
                records,
                contexts,
                tombstones=tombstones,
                include_excluded=True,
                with_values=with_values,
            )
            for backend in BACKENDS
        ]
        assert all(table.equals(tables[0]) for table in tables)
        assert tables[0].schema.field("decision").type == pa.dictionary(pa.int8(), pa.string())
    # With values, every winner's row is its prompt memory; no other row has one.
    by_context = dict(store.contexts)
    for row in tables[0].to_pylist():
        if row["decision"] != "active":
            assert (row["key"], row["value"], row["certainty"]) == (None, None, None)
            continue
        result = reference.resolve(
            store.records, by_context[row["context_id"]], tombstones=store.tombstones
        )
        memory = next(
            m
            for r, m in zip(result.active, result.prompt_memories(), strict=True)
            if r.id == row["record_id"]
        )
        assert (row["key"], row["value"], row["certainty"]) == (
            memory.key,
            memory.value,
            memory.certainty.value,
        )


@settings(max_examples=50)
@given(stores())
def test_converters_round_trip(store: Store) -> None:
    records, contexts, tombstones = arrow_tables(store)
    assert tuple(mr.records_from_arrow(records)) == store.records
    assert tuple(mr.contexts_from_arrow(contexts)) == store.contexts
    assert tuple(mr.tombstones_from_arrow(tombstones)) == store.tombstones


# Producers and encodings -----------------------------------------------------------------


STORY_ROWS = _expected_rows(STORY, include_excluded=True)


def _recast(
    table: pa.Table, names: tuple[str, ...], to: Callable[[pa.DataType], pa.DataType]
) -> pa.Table:
    for name in names:
        if name in table.column_names:
            position = table.column_names.index(name)
            column = table.column(name)
            table = table.set_column(position, name, column.cast(to(column.type)))
    return table


_TEXT = ("id", "key", "scope_kind", "user_id", "character_id", "conversation_id", "scene_id",
         "status", "authority", "supersedes", "context_id")  # fmt: skip
_TIMES = (
    "valid_from",
    "valid_until",
    "observed_at",
    "now",
    "forgotten_at",
    "blocks_sources_before",
)


def _dictionary(table: pa.Table) -> pa.Table:
    for name in _TEXT:
        if name in table.column_names:
            position = table.column_names.index(name)
            table = table.set_column(position, name, table.column(name).dictionary_encode())
    return table


def _chunked(table: pa.Table) -> pa.Table:
    # Three chunks of uneven length, each a slice with an offset into one array.
    batches = table.combine_chunks().to_batches()
    whole = batches[0] if batches else None
    if whole is None or whole.num_rows < 3:
        return table
    return pa.Table.from_batches([whole.slice(0, 1), whole.slice(1, 2), whole.slice(3)])


def _sliced(table: pa.Table) -> pa.Table:
    # Padding rows before and after, sliced away: the arrays keep an offset.
    padded = pa.concat_tables([table.slice(0, 1), table, table.slice(0, 1)]).combine_chunks()
    return padded.slice(1, table.num_rows)


ENCODINGS: dict[str, Callable[[pa.Table], pa.Table]] = {
    "plain": lambda t: t,
    "large_string": lambda t: _recast(t, _TEXT, lambda _: pa.large_string()),
    "string_view": lambda t: _recast(t, _TEXT, lambda _: pa.string_view()),
    "dictionary": _dictionary,
    "chunked": _chunked,
    "sliced": _sliced,
    "ns": lambda t: _recast(t, _TIMES, lambda k: pa.timestamp("ns", tz=k.tz)),
    "ms": lambda t: _recast(t, _TIMES, lambda k: pa.timestamp("ms", tz=k.tz)),
    "s": lambda t: _recast(t, _TIMES, lambda k: pa.timestamp("s", tz=k.tz)),
    "new-york": lambda t: _recast(t, _TIMES, lambda k: pa.timestamp(k.unit, tz="America/New_York")),
    "int32-version": lambda t: _recast(t, ("version",), lambda _: pa.int32()),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_column_encodings(backend: str, encoding: str) -> None:
    encode = ENCODINGS[encoding]
    records, contexts, tombstones = (encode(t) for t in arrow_tables(STORY))
    result = get_batch_resolver(backend)(
        records, contexts, tombstones=tombstones, include_excluded=True
    )
    assert _rows(result) == STORY_ROWS


def _producers() -> dict[str, Callable[[pa.Table], Any]]:
    return {
        "pyarrow-table": lambda t: t,
        "pyarrow-record-batch": lambda t: t.combine_chunks().to_batches()[0] if t.num_rows else t,
        "pyarrow-reader": lambda t: pa.RecordBatchReader.from_batches(t.schema, t.to_batches()),
        "polars": pl.from_arrow,
        "duckdb": lambda t: duckdb.sql("select * from t"),
        # A streaming reader holds its connection's one open result: one connection each.
        "duckdb-arrow-reader": lambda t: duckdb.connect().sql("select * from t").to_arrow_reader(),
        "polars-lazy": lambda t: pl.from_arrow(t).lazy(),  # type: ignore[union-attr]
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("producer", list(_producers()))
def test_producers(backend: str, producer: str) -> None:
    produce = _producers()[producer]
    records, contexts, tombstones = arrow_tables(STORY)
    result = get_batch_resolver(backend)(
        produce(records), produce(contexts), tombstones=produce(tombstones), include_excluded=True
    )
    assert _rows(result) == STORY_ROWS


def test_extra_columns_are_ignored_and_value_is_not_needed() -> None:
    records, contexts, tombstones = arrow_tables(STORY)
    records = records.drop_columns(["value", "source_message_ids", "confidence"]).append_column(
        "embedding", pa.array([[0.1, 0.2]] * records.num_rows)
    )
    for backend in BACKENDS:
        result = get_batch_resolver(backend)(
            records, contexts, tombstones=tombstones, include_excluded=True
        )
        assert _rows(result) == STORY_ROWS


def test_facade_and_empty_inputs() -> None:
    records, contexts, tombstones = arrow_tables(STORY)
    assert _rows(mr.resolve_batch(records, contexts, tombstones=tombstones)) == [
        row for row in STORY_ROWS if row[2] == "active"
    ]
    empty = Store((), (), ())
    for backend in BACKENDS:
        resolve_batch = get_batch_resolver(backend)
        assert resolve_batch(*arrow_tables(empty)[:2]).num_rows == 0
        assert resolve_batch(arrow_tables(empty)[0], contexts).num_rows == 0
        assert resolve_batch(records, arrow_tables(empty)[1]).num_rows == 0


def test_many_contexts_across_output_chunks_and_codes_to_numpy() -> None:
    # More contexts than one output batch holds (512): order and rows survive the
    # chunking, and each chunk's decision codes reach numpy without a copy.
    repeated = STORY.contexts * (1100 // len(STORY.contexts) + 1)
    many = Store(
        STORY.records,
        tuple((f"ctx-{n}", ctx) for n, (_, ctx) in enumerate(repeated)),
        STORY.tombstones,
    )
    expected = _expected_rows(many, include_excluded=True)
    for backend in BACKENDS:
        result = get_batch_resolver(backend)(
            *arrow_tables(many)[:2], tombstones=arrow_tables(many)[2], include_excluded=True
        )
        assert _rows(result) == expected
        decisions = result.column("decision")
        codes = [chunk.indices.to_numpy(zero_copy_only=True) for chunk in decisions.chunks]
        names = decisions.chunk(0).dictionary.to_pylist()
        assert names == list(DECISION_NAMES)
        assert [names[code] for part in codes for code in part] == [row[2] for row in expected]


# One test per rejection rule -------------------------------------------------------------


def _error(
    resolve_batch: BatchResolver, records: pa.Table, contexts: pa.Table, tombstones: pa.Table | None
) -> tuple[object, ...]:
    with pytest.raises(mr.InvalidInputError) as caught:
        resolve_batch(records, contexts, tombstones=tombstones)
    return (caught.value.kind, caught.value.field, caught.value.row)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rule", list(REJECTIONS))
def test_rejections(backend: str, rule: str) -> None:
    (records, contexts, tombstones), expected = REJECTIONS[rule]
    assert _error(get_batch_resolver(backend), records, contexts, tombstones) == expected


@pytest.mark.parametrize("rule", list(REJECTIONS))
def test_rejections_are_the_same_on_every_backend(rule: str) -> None:
    # (kind, field, row, record_id): what a program reads; messages may differ in wording.
    (records, contexts, tombstones), _ = REJECTIONS[rule]
    errors = set()
    for backend in BACKENDS:
        with pytest.raises(mr.InvalidInputError) as caught:
            get_batch_resolver(backend)(records, contexts, tombstones=tombstones)
        errors.add(caught.value.where())
        assert caught.value.field is not None
        assert caught.value.field in str(caught.value)  # the message names the column
    assert len(errors) == 1, errors


def test_a_duplicate_id_names_the_record() -> None:
    (records, contexts, _), _ = REJECTIONS["duplicate-record-id"]
    for backend in BACKENDS:
        with pytest.raises(mr.InvalidInputError) as caught:
            get_batch_resolver(backend)(records, contexts)
        assert caught.value.record_id == "harbor"
        assert "row 7" in str(caught.value)


def test_nanoseconds_are_floored_before_the_epoch_too() -> None:
    # -1 ns is 1969-12-31T23:59:59.999999999: floored, it is -1 us, not 0.
    records = _set(
        _set(R.slice(0, 1), "valid_from", [-1], pa.int64()).set_column(
            R.column_names.index("valid_from"),
            "valid_from",
            pa.array([-1], pa.int64()).cast(pa.timestamp("ns", tz="UTC")),
        ),
        "valid_until",
        [0],
        pa.int64(),
    )
    records = records.set_column(
        records.column_names.index("valid_until"),
        "valid_until",
        pa.array([0], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
    )
    at_zero = mr.contexts_to_arrow([("zero", context(now=datetime(1970, 1, 1, tzinfo=UTC)))])
    before = mr.contexts_to_arrow(
        [("before", context(now=datetime(1970, 1, 1, tzinfo=UTC) - timedelta(microseconds=1)))]
    )
    for backend in BACKENDS:
        resolve_batch = get_batch_resolver(backend)
        assert resolve_batch(records, at_zero).num_rows == 0  # valid_until 0 excludes at 0
        assert _rows(resolve_batch(records, before)) == [("before", "harbor", "active")]


def test_records_from_arrow_reads_what_resolve_batch_reads() -> None:
    assert tuple(mr.records_from_arrow(R)) == STORY.records
    assert dataclasses.replace(STORY.records[0], value="x") != STORY.records[0]


# Batch details an integrator meets ------------------------------------------------------


def test_columns_of_the_null_type_read_as_all_null() -> None:
    # What pa.Table.from_pylist makes of a column that is None on every row.
    rows = [r.to_dict() for r in STORY.records if r.valid_until is None]
    for row in rows:
        row.pop("observed_at")
    records = pa.Table.from_pylist(rows)
    assert records.schema.field("valid_until").type == pa.null()
    assert records.schema.field("character_id").type != pa.null()
    tombstones = pa.Table.from_pylist(
        [
            {
                "key": "secret",
                "scope_kind": "user",
                "user_id": "u-ada",
                "character_id": None,
                "conversation_id": None,
                "scene_id": None,
                "forgotten_at": day(7),
            }
        ]
    )
    assert tombstones.schema.field("character_id").type == pa.null()
    contexts = mr.contexts_to_arrow(STORY.contexts)
    expected = None
    for backend in BACKENDS:
        result = get_batch_resolver(backend)(
            records, contexts, tombstones=tombstones, include_excluded=True
        )
        expected = expected or _rows(result)
        assert _rows(result) == expected
        assert ("in-scene", "forgotten", "forgotten") in _rows(result)


def test_with_values_needs_the_value_and_confidence_columns() -> None:
    for backend in BACKENDS:
        resolve_batch = get_batch_resolver(backend)
        for dropped in ("value", "confidence"):
            with pytest.raises(mr.InvalidInputError) as caught:
                resolve_batch(R.drop_columns([dropped]), C, with_values=True)
            assert caught.value.where()[:3] == (mr.ErrorKind.MISSING_COLUMN, dropped, None)
        with pytest.raises(mr.InvalidInputError) as caught:
            resolve_batch(_with_row(R, "value", 3, None), C, with_values=True)
        assert caught.value.where()[:3] == (mr.ErrorKind.MISSING, "value", 3)
        # Without values neither column is needed.
        assert resolve_batch(R.drop_columns(["value", "confidence"]), C).num_rows > 0


def test_the_output_schema_is_as_documented() -> None:
    for backend in BACKENDS:
        result = get_batch_resolver(backend)(R, C, with_values=True)
        dictionary = pa.dictionary(pa.int8(), pa.string())
        assert [(f.name, f.type, f.nullable) for f in result.schema] == [
            ("context_id", pa.string(), False),
            ("record_id", pa.string(), False),
            ("decision", dictionary, False),
            ("key", pa.string(), True),
            ("value", pa.string(), True),
            ("certainty", dictionary, True),
        ]
        assert result.column("certainty").chunk(0).dictionary.to_pylist() == [
            c.value for c in mr.Certainty
        ]


# The first and last instants an aware Python datetime can name (docs/spec.md §1.6).
FIRST_INSTANT = -62_135_683_199_999_999
LAST_INSTANT = 253_402_387_199_999_998


def _micros(table: pa.Table, name: str, row: int, micros: int) -> pa.Table:
    values = table.column(name).cast(pa.int64()).to_pylist()
    values[row] = micros
    index = table.schema.get_field_index(name)
    return table.set_column(index, name, pa.array(values, pa.int64()).cast(UTC_MICROS))


@pytest.mark.parametrize(
    ("name", "micros"),
    [("valid_until", LAST_INSTANT), ("valid_from", FIRST_INSTANT), ("observed_at", FIRST_INSTANT)],
)
def test_the_ends_of_the_instant_range_are_read_alike(name: str, micros: int) -> None:
    records = _micros(R, name, 0, micros)
    answers = [
        _rows(get_batch_resolver(backend)(records, C, include_excluded=True))
        for backend in BACKENDS
    ]
    assert all(answer == answers[0] for answer in answers)
    # And the converters read them back as datetimes naming the same instant.
    read = mr.records_from_arrow(records)[0]
    moment = getattr(read, name)
    assert (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) == micros


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("table", "name", "micros"),
    [
        ("records", "valid_until", LAST_INSTANT + 1),
        ("records", "valid_from", FIRST_INSTANT - 1),
        ("records", "valid_until", 2**63 - 1),  # DuckDB's 'infinity'
        ("contexts", "now", -(2**63)),
        ("tombstones", "forgotten_at", LAST_INSTANT + 1),
    ],
)
def test_instants_no_datetime_can_name_are_out_of_range(
    backend: str, table: str, name: str, micros: int
) -> None:
    tables = {"records": R, "contexts": C, "tombstones": T}
    tables[table] = _micros(tables[table], name, 0, micros)
    assert _error(
        get_batch_resolver(backend), tables["records"], tables["contexts"], tables["tombstones"]
    ) == (K.OUT_OF_RANGE, name, 0)


def test_a_record_past_year_9999_in_utc_round_trips() -> None:
    # 9999-12-31T23:00-05:00 is 10000-01-01T04:00Z: a valid record whose UTC form
    # no datetime can hold; the converters must still give an equal record back.
    late = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))
    original = record("late", valid_until=late)
    (back,) = mr.records_from_arrow(mr.records_to_arrow([original]))
    assert back == original
    assert back.valid_until == late


def _flaky_stream(table: pa.Table) -> pa.RecordBatchReader:
    def batches() -> Any:
        yield from table.to_batches(max_chunksize=2)
        raise RuntimeError("the disk went away")

    return pa.RecordBatchReader.from_batches(table.schema, batches())


class _RefusingProducer:
    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        raise RuntimeError("no stream today")


def _failing_query(table: pa.Table) -> pl.LazyFrame:
    # Runs only when collected: a strict cast of a text column fails then.
    return pl.from_arrow(table).lazy().with_columns(pl.col("user_id").cast(pl.Int64, strict=True))  # type: ignore[union-attr]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda: pa.array([1, 2]), K.WRONG_TYPE),
        (lambda: pa.chunked_array([[1, 2]]), K.WRONG_TYPE),
        (_RefusingProducer, K.WRONG_TYPE),
        (lambda: _flaky_stream(C), K.MALFORMED),
        (lambda: _failing_query(C), K.MALFORMED),
    ],
    ids=["array", "chunked-array", "refusing-producer", "failing-stream", "failing-query"],
)
def test_inputs_that_are_not_tables_or_fail_when_read(
    backend: str, make: Callable[[], object], kind: mr.ErrorKind
) -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        get_batch_resolver(backend)(R, make(), tombstones=T)
    assert caught.value.where() == (kind, "contexts", None, None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_lazy_frame_runs_in_its_turn_and_once(backend: str) -> None:
    # A bad records input is reported before the contexts' query runs at all.
    with pytest.raises(mr.InvalidInputError) as caught:
        get_batch_resolver(backend)([1], _failing_query(C))
    assert caught.value.where() == (K.WRONG_TYPE, "records", None, None)
    # A query that yields no rows still runs exactly once.
    calls: list[object] = []

    def counted(user: str) -> str:
        calls.append(user)
        return user

    empty = (
        pl.from_arrow(C)
        .lazy()  # type: ignore[union-attr]
        .with_columns(pl.col("user_id").map_elements(counted, return_dtype=pl.String))
        .filter(pl.col("user_id") == "nobody")
    )
    assert get_batch_resolver(backend)(R, empty).num_rows == 0
    assert len(calls) == C.num_rows


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flag", ["include_excluded", "with_values"])
@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_flags_are_true_or_false(backend: str, flag: str, value: object) -> None:
    with pytest.raises(mr.InvalidInputError) as caught:
        get_batch_resolver(backend)(R, C, **{flag: value})  # type: ignore[arg-type]
    assert caught.value.where() == (K.WRONG_TYPE, flag, None, None)


def test_a_numpy_bool_is_a_flag() -> None:
    answers = {
        backend: _rows(get_batch_resolver(backend)(R, C, include_excluded=np.bool_(True)))  # type: ignore[arg-type]
        for backend in BACKENDS
    }
    assert answers == {
        backend: _rows(get_batch_resolver(backend)(R, C, include_excluded=True))
        for backend in BACKENDS
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_contexts_in_any_order_are_answered_in_input_order(seed: int) -> None:
    """The core resolves contexts not grouped by user owner by owner (for the cache), and
    must answer them in input order all the same."""
    from memresolve.testing.batch_store import generate  # noqa: PLC0415

    store = generate(8_000, seed=seed)
    shuffled = store.contexts.take(np.random.default_rng(seed).permutation(store.contexts.num_rows))
    assert shuffled.num_rows >= 64  # enough contexts that the core reorders them
    results = {
        backend: get_batch_resolver(backend)(
            store.records, shuffled, tombstones=store.tombstones, include_excluded=True
        )
        for backend in BACKENDS
    }
    reference_rows = _rows(results["reference"])
    for rows in map(_rows, results.values()):
        assert rows == reference_rows
    order = list(dict.fromkeys(row[0] for row in reference_rows))
    given_order = [c for c in shuffled.column("context_id").to_pylist() if c in set(order)]
    assert order == given_order
