"""Inputs ``resolve_batch`` accepts, and faults it names, that the file-to-file job once did
not: each from a hostile-input review of ``resolve_dataset`` (2026-12-06).

The job brings every batch to one schema before it spills it (``_canonical``) and reads each
Parquet file with its own columns (``_sources``); these are the corners of both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import memresolve as mr
from batch_rows import by_context
from memresolve.testing.batch_store import generate

pytestmark = pytest.mark.skipif(
    mr.backend_name() != "native", reason="the dataset job runs on the compiled core"
)


def _replaced(table: pa.Table, name: str, column: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, column)


def _job_equals_resolve_batch(
    records: pa.Table, contexts: pa.Table, tombstones: pa.Table, out: Path
) -> None:
    expected = mr.resolve_batch(records, contexts, tombstones=tombstones, include_excluded=True)
    for parts in (1, 3):
        mr.resolve_dataset(
            records,
            contexts,
            out / str(parts),
            tombstones=tombstones,
            include_excluded=True,
            parts=parts,
        )
        got = pq.ParquetDataset(out / str(parts)).read()
        assert by_context(got) == by_context(expected)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Mars/Olympus", "+25:00"])
def test_nanosecond_instants_floor_as_resolve_batch_does(zone: str, tmp_path: Path) -> None:
    """Floored on the integers: not in local time (an hour the zone repeats, or a zone
    Arrow does not know, failed) and not wrapping within a microsecond of int64's least."""
    store = generate(300, seed=11)
    records = store.records
    nanoseconds = records.column("valid_from").cast(pa.int64()).to_pylist()
    repeated_hour = 1_793_511_000_000_000_000  # 2026-11-01T05:30Z: 01:30 twice in New York
    nanoseconds[:4] = [-(2**63), -(2**63) + 807, repeated_hour, repeated_hour + 1]
    instants = pa.array(nanoseconds, pa.int64()).cast(pa.timestamp("ns", zone))
    records = _replaced(records, "valid_from", instants)
    _job_equals_resolve_batch(records, store.contexts, store.tombstones, tmp_path)


def test_dictionaries_of_string_views_are_read(tmp_path: Path) -> None:
    store = generate(300, seed=12)

    def as_view_dictionary(column: pa.ChunkedArray) -> pa.Array:
        encoded = column.combine_chunks().dictionary_encode()
        return pa.DictionaryArray.from_arrays(
            encoded.indices, encoded.dictionary.cast(pa.string_view())
        )

    records = store.records
    for name in ("id", "supersedes", "key", "user_id"):
        records = _replaced(records, name, as_view_dictionary(records.column(name)))
    contexts = _replaced(
        store.contexts, "context_id", as_view_dictionary(store.contexts.column("context_id"))
    )
    _job_equals_resolve_batch(records, contexts, store.tombstones, tmp_path)


def test_a_first_file_without_rows_does_not_decide_the_columns(tmp_path: Path) -> None:
    """Its optional column, missing from the next file, was looked up there."""
    store = generate(300, seed=13)
    directory = tmp_path / "records"
    directory.mkdir()
    pq.write_table(store.records.slice(0, 0), directory / "a.parquet")
    pq.write_table(store.records.drop_columns(["status"]), directory / "b.parquet")
    mr.resolve_dataset(directory, store.contexts, tmp_path / "out", tombstones=store.tombstones)
    expected = mr.resolve_batch(
        store.records.drop_columns(["status"]), store.contexts, tombstones=store.tombstones
    )
    assert by_context(pq.ParquetDataset(tmp_path / "out").read()) == by_context(expected)


def test_a_file_without_rows_is_checked_and_named(tmp_path: Path) -> None:
    store = generate(300, seed=14)
    directory = tmp_path / "records"
    directory.mkdir()
    pq.write_table(store.records, directory / "a.parquet")
    pq.write_table(store.records.slice(0, 0).drop_columns(["authority"]), directory / "b.parquet")
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(directory, store.contexts, tmp_path / "out")
    assert caught.value.where()[:2] == (mr.ErrorKind.MISSING_COLUMN, "authority")
    assert caught.value.file == str(directory / "b.parquet")
    assert not (tmp_path / "out").exists()
    # Alone, as the whole input, it is named too.
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(directory / "b.parquet", store.contexts, tmp_path / "out")
    assert caught.value.file == str(directory / "b.parquet")


def test_a_repeated_column_name_in_a_later_file_is_named(tmp_path: Path) -> None:
    store = generate(300, seed=15)
    directory = tmp_path / "records"
    directory.mkdir()
    pq.write_table(store.records, directory / "a.parquet")
    twice = store.records.append_column("key", store.records.column("key"))
    pq.write_table(twice, directory / "b.parquet")
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(directory, store.contexts, tmp_path / "out")
    assert caught.value.file == str(directory / "b.parquet")
    assert str(directory / "b.parquet") in str(caught.value)
    # In the first file, whose columns the job reads first.
    (directory / "b.parquet").rename(directory / "0.parquet")
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(directory, store.contexts, tmp_path / "out")
    assert caught.value.file == str(directory / "0.parquet")


@pytest.mark.parametrize("job", ["resolve_dataset", "normalize_dataset"])
def test_overwrite_must_be_a_bool(job: str, tmp_path: Path) -> None:
    """``overwrite="false"`` replaced the output it was meant to keep."""
    store = generate(100, seed=16)
    kept = tmp_path / "out"
    kept.mkdir()
    (kept / "precious.txt").write_text("keep me")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    runs: dict[str, Callable[[], object]] = {
        "resolve_dataset": lambda: mr.resolve_dataset(
            store.records,
            store.contexts,
            kept,
            overwrite="false",  # type: ignore[arg-type]
        ),
        "normalize_dataset": lambda: mr.normalize_dataset(
            store.records,
            kept,
            now=now,
            overwrite="false",  # type: ignore[arg-type]
        ),
    }
    with pytest.raises(mr.InvalidInputError) as caught:
        runs[job]()
    assert caught.value.where()[:2] == (mr.ErrorKind.WRONG_TYPE, "overwrite")
    assert (kept / "precious.txt").read_text() == "keep me"


def test_an_interrupted_stream_is_an_interruption_not_bad_input(tmp_path: Path) -> None:
    """Ctrl-C in a stream's Python producer reaches the job as an Arrow error: it was
    reported as malformed input (exit 2 from a program), not as the interruption."""
    store = generate(100, seed=17)

    def interrupted(interruption: KeyboardInterrupt) -> Iterator[pa.RecordBatch]:
        yield from store.records.to_batches(max_chunksize=10)[:2]
        raise interruption

    for interruption in (KeyboardInterrupt(), KeyboardInterrupt("stop")):
        records = pa.RecordBatchReader.from_batches(store.records.schema, interrupted(interruption))
        with pytest.raises(KeyboardInterrupt):
            mr.resolve_dataset(records, store.contexts, tmp_path / "out")
        assert not (tmp_path / "out").exists()
    # An error whose message merely mentions it is not one.
    message = "bad\nKeyboardInterrupt"

    def failing() -> Iterator[pa.RecordBatch]:
        yield from store.records.to_batches(max_chunksize=10)[:1]
        raise ValueError(message)

    records = pa.RecordBatchReader.from_batches(store.records.schema, failing())
    with pytest.raises(mr.InvalidInputError):
        mr.resolve_dataset(records, store.contexts, tmp_path / "out")


@pytest.mark.parametrize(
    "stop", [KeyboardInterrupt(), SystemExit(7), SystemExit("shutting down")], ids=repr
)
def test_regression_a_host_stopping_a_stream_producer_stops_every_reader(
    tmp_path: Path, stop: BaseException
) -> None:
    """A web server's or task queue's shutdown raises ``SystemExit`` in whatever runs, a
    stream's Python producer included: the Arrow stream carried it as an error, and every
    reader (the dataset jobs and the in-memory ones) called it malformed input."""
    store = generate(100, seed=17)

    def stopped() -> Iterator[pa.RecordBatch]:
        yield from store.records.to_batches(max_chunksize=10)[:2]
        raise stop

    def reader() -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(store.records.schema, stopped())

    calls: list[Callable[[], object]] = [
        lambda: mr.resolve_dataset(reader(), store.contexts, tmp_path / "out"),
        lambda: mr.resolve_batch(reader(), store.contexts),
        lambda: mr.normalize_batch(reader(), now=datetime(2026, 8, 1, tzinfo=UTC)),
        lambda: mr.records_from_arrow(reader()),
    ]
    for call in calls:
        with pytest.raises(type(stop)) as raised:
            call()
        if isinstance(stop, SystemExit):
            assert isinstance(raised.value, SystemExit)
            assert raised.value.code == stop.code
    assert not (tmp_path / "out").exists()


def _cited_store(seed: int) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
    """A generated store whose records cite messages, its plain tombstones, and the same
    with user-wide tombstones blocking some messages by their hashes."""
    store = generate(4_000, seed=seed)
    cited = [[f"msg-{row % 30}"] for row in range(store.records.num_rows)]
    records = store.records.append_column("source_message_ids", pa.array(cited))
    first_of: dict[str, dict[str, Any]] = {}
    for row in records.to_pylist():
        if row["user_id"] is not None:
            first_of.setdefault(row["user_id"], row)
    bound = datetime(2000, 1, 1, tzinfo=UTC)
    hashed = [
        mr.ForgetTombstone(
            key=str(row["key"]), scope=mr.UserScope(user), forgotten_at=bound, user_wide=True
        ).blocking_sources([*row["source_message_ids"], "msg-none"])
        for user, row in sorted(first_of.items())[::2]
    ]
    plain = store.tombstones
    with_hashes = mr.tombstones_to_arrow([*mr.tombstones_from_arrow(plain), *hashed])
    return records, store.contexts, plain, with_hashes


def test_records_messages_are_read_when_tombstones_carry_hashes(tmp_path: Path) -> None:
    """From tables, files and streams, the job blocks what ``resolve_batch`` blocks; and
    the hashes change the answer (they block something)."""
    records, contexts, plain, hashed = _cited_store(seed=21)
    expected = mr.resolve_batch(records, contexts, tombstones=hashed, include_excluded=True)
    assert by_context(expected) != by_context(
        mr.resolve_batch(records, contexts, tombstones=plain, include_excluded=True)
    )
    _job_equals_resolve_batch(records, contexts, hashed, tmp_path)
    for name, table in (("records", records), ("contexts", contexts), ("tombstones", hashed)):
        pq.write_table(table, tmp_path / f"{name}.parquet")
    mr.resolve_dataset(
        tmp_path / "records.parquet",
        tmp_path / "contexts.parquet",
        tmp_path / "from-files",
        tombstones=tmp_path / "tombstones.parquet",
        include_excluded=True,
        parts=2,
    )
    assert by_context(pq.read_table(tmp_path / "from-files")) == by_context(expected)
    streamed = pa.RecordBatchReader.from_batches(hashed.schema, hashed.to_batches(max_chunksize=7))
    mr.resolve_dataset(
        records, contexts, tmp_path / "from-a-stream", tombstones=streamed, include_excluded=True
    )
    assert by_context(pq.read_table(tmp_path / "from-a-stream")) == by_context(expected)


def test_the_jobs_over_files_block_by_messages_as_the_batch_forms(tmp_path: Path) -> None:
    records, _, _, hashed = _cited_store(seed=22)
    now = datetime(2026, 7, 30, tzinfo=UTC)
    pq.write_table(hashed, tmp_path / "tombstones.parquet")
    mr.normalize_dataset(
        records, tmp_path / "changes", now=now, tombstones=tmp_path / "tombstones.parquet", parts=3
    )
    changes = pq.read_table(tmp_path / "changes").to_pylist()
    expected = mr.normalize_batch(records, now=now, tombstones=hashed).to_pylist()
    key = lambda row: row["record_id"]  # noqa: E731
    assert sorted(changes, key=key) == sorted(expected, key=key)
    mr.forget_sweep_dataset(records, tmp_path / "purges", tombstones=hashed)
    purges = pq.read_table(tmp_path / "purges").to_pylist()
    expected_purges = mr.forget_sweep_batch(records, hashed).to_pylist()
    assert sorted(purges, key=key) == sorted(expected_purges, key=key)
    assert any(row["cause"] == "tombstone" for row in expected_purges)


def test_without_hashes_the_records_messages_are_never_read(tmp_path: Path) -> None:
    """A message column of a type the core cannot read is refused only when a tombstone
    carries hashes: otherwise the job, like ``resolve_batch``, leaves it unread."""
    records, contexts, plain, hashed = _cited_store(seed=23)
    unreadable = _replaced(
        records, "source_message_ids", pa.array(range(records.num_rows), pa.int64())
    )
    _job_equals_resolve_batch(unreadable, contexts, plain, tmp_path)
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(unreadable, contexts, tmp_path / "hashed", tombstones=hashed)
    assert caught.value.where()[:2] == (mr.ErrorKind.WRONG_TYPE, "source_message_ids")


def test_hashes_and_messages_in_later_files_only_are_read(tmp_path: Path) -> None:
    """Whether records' messages are read is decided from every tombstone file, and a
    records file without the column reads as citing nothing: files may differ in their
    optional columns (a review found both read from the first file alone)."""
    records, contexts, plain, hashed = _cited_store(seed=24)
    (tmp_path / "tombstones").mkdir()
    pq.write_table(plain, tmp_path / "tombstones" / "a.parquet")  # no hash columns at all
    later = mr.tombstones_to_arrow(mr.tombstones_from_arrow(hashed)[plain.num_rows :])
    pq.write_table(later, tmp_path / "tombstones" / "b.parquet")
    (tmp_path / "records").mkdir()
    half = records.num_rows // 2
    pq.write_table(
        records.slice(0, half).drop_columns(["source_message_ids"]),
        tmp_path / "records" / "a.parquet",
    )
    pq.write_table(records.slice(half), tmp_path / "records" / "b.parquet")
    without_first = mr.resolve_batch(
        pa.concat_tables(
            [
                records.slice(0, half).set_column(
                    records.schema.get_field_index("source_message_ids"),
                    "source_message_ids",
                    pa.nulls(half, pa.list_(pa.string())),
                ),
                records.slice(half),
            ]
        ),
        contexts,
        tombstones=hashed,
        include_excluded=True,
    )
    assert by_context(without_first) != by_context(
        mr.resolve_batch(records, contexts, tombstones=plain, include_excluded=True)
    )
    mr.resolve_dataset(
        tmp_path / "records",
        contexts,
        tmp_path / "out",
        tombstones=tmp_path / "tombstones",
        include_excluded=True,
    )
    assert by_context(pq.read_table(tmp_path / "out")) == by_context(without_first)


def test_a_stream_of_tombstones_without_hashes_reads_no_message(tmp_path: Path) -> None:
    records, contexts, plain, _ = _cited_store(seed=25)
    empty_id = _replaced(
        records,
        "source_message_ids",
        pa.array([[""]] + [["m"]] * (records.num_rows - 1), pa.list_(pa.string())),
    )
    expected = mr.resolve_batch(empty_id, contexts, tombstones=plain, include_excluded=True)
    table = mr.tombstones_to_arrow(mr.tombstones_from_arrow(plain))
    stream = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=3))
    mr.resolve_dataset(
        empty_id, contexts, tmp_path / "out", tombstones=stream, include_excluded=True
    )
    assert by_context(pq.read_table(tmp_path / "out")) == by_context(expected)
