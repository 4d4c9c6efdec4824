"""The file-to-file batch job (docs/spec.md §4.3): ``resolve_dataset`` equals ``resolve_batch``.

Partitioned by owner, spilled, split again when a part is too big: whatever
the number of parts, every context gets exactly the rows ``resolve_batch``
gives it. Bad input anywhere names its file, column and row, and leaves no
output and no spill behind.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from batch_rows import Rows, arrow_tables, by_context
from memresolve._dataset import _resolve_job as _dataset
from memresolve._engine._kernels import get_batch_resolver
from memresolve.testing import Store, stores
from memresolve.testing.batch_store import generate, write_parquet
from profiles import PARITY_EXAMPLES

pytestmark = [
    pytest.mark.skipif(
        mr.backend_name() != "native", reason="the dataset job runs on the compiled core"
    ),
    # One worker runs the module: its store is generated once, by a module fixture.
    pytest.mark.xdist_group("dataset"),
]


def _write_files(directory: Path, table: pa.Table, files: int) -> Path:
    """``table`` as ``files`` Parquet files of a directory (some may be empty)."""
    directory.mkdir()
    step = max(1, -(-table.num_rows // files))
    for n in range(files):
        pq.write_table(table.slice(n * step, step), directory / f"{n:03d}.parquet")
    return directory


@settings(max_examples=max(40, PARITY_EXAMPLES // 20), deadline=None)
@given(
    stores(max_records=40, max_contexts=8, max_users=5),
    st.integers(1, 9),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_any_number_of_parts_gives_the_rows_of_resolve_batch(
    store: Store, parts: int, include_excluded: bool, from_files: bool, with_values: bool
) -> None:
    records, contexts, tombstones = arrow_tables(store)
    options = {"include_excluded": include_excluded, "with_values": with_values}
    expected = {
        backend: by_context(
            get_batch_resolver(backend)(records, contexts, tombstones=tombstones, **options)
        )
        for backend in ("reference", "native")
    }
    assert expected["native"] == expected["reference"]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        inputs: tuple[Any, Any, Any] = (records, contexts, tombstones)
        if from_files:
            inputs = (
                _write_files(root / "records", records, 3),
                _write_files(root / "contexts", contexts, 2),
                _write_files(root / "tombstones", tombstones, 2),
            )
        summary = mr.resolve_dataset(
            *inputs[:2],
            root / "out",
            tombstones=inputs[2],
            parts=parts,
            include_excluded=include_excluded,
            with_values=with_values,
        )
        written = pq.read_table(root / "out") if summary.parts else None
        got = {} if written is None else by_context(written)
    assert got == expected["native"]
    assert summary.records == len(store.records)
    assert summary.contexts == len(store.contexts)
    assert sum(summary.rows.values()) == sum(len(rows) for rows in got.values())


@pytest.fixture(scope="module")
def store_files(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A 120k-record UUID store in three files per input."""
    return write_parquet(tmp_path_factory.mktemp("store"), 120_000, seed=7, chunk_records=40_000)


def _read(directory: str | Path) -> pa.Table:
    return pq.read_table(directory)


@pytest.fixture(scope="module")
def expected(store_files: Any) -> Rows:
    result = mr.resolve_batch(
        _read(store_files.records),
        _read(store_files.contexts),
        tombstones=_read(store_files.tombstones),
        include_excluded=True,
        with_values=True,
    )
    return by_context(result)


def _spill_is_empty(spill: Path) -> bool:
    return not any(spill.iterdir())


@pytest.mark.parametrize("parts", [None, 1, 13])
def test_a_generated_store_file_to_file(
    store_files: Any, expected: Rows, tmp_path: Path, parts: int | None
) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    seen: list[tuple[str, int, int | None]] = []
    summary = mr.resolve_dataset(
        store_files.records,
        store_files.contexts,
        tmp_path / "out",
        tombstones=store_files.tombstones,
        include_excluded=True,
        with_values=True,
        parts=parts,
        spill_directory=spill,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    written = _read(tmp_path / "out")
    assert by_context(written) == expected
    assert written.schema.names == [
        "context_id",
        "record_id",
        "decision",
        "key",
        "value",
        "certainty",
    ]
    assert summary.records == 120_000
    assert summary.tombstones == store_files.tombstone_count
    assert sum(summary.rows.values()) == written.num_rows
    assert _spill_is_empty(spill)
    assert {stage for stage, _, _ in seen} == {"contexts", "records", "tombstones", "parts"}
    assert seen[-1][0] == "parts"
    assert seen[-1][1] == seen[-1][2]
    # Rows read come with the input's rows, from the Parquet metadata: a bar has an ETA.
    last_read = {stage: (done, total) for stage, done, total in seen if stage != "parts"}
    assert last_read["records"] == (120_000, 120_000)
    assert last_read["contexts"][0] == last_read["contexts"][1] == summary.contexts
    if parts == 13:
        assert summary.peak_spill_bytes > 0


def test_every_spill_codec_gives_the_same_rows_and_zstd_spills_less(
    store_files: Any, expected: Rows, tmp_path: Path
) -> None:
    spilled = {}
    for codec in ("none", "lz4", "zstd"):
        summary = mr.resolve_dataset(
            store_files.records,
            store_files.contexts,
            tmp_path / codec,
            tombstones=store_files.tombstones,
            include_excluded=True,
            with_values=True,
            parts=7,
            spill_compression=codec,
        )
        assert by_context(_read(tmp_path / codec)) == expected, codec
        spilled[codec] = summary.peak_spill_bytes
    assert 0 < spilled["zstd"] < spilled["none"]
    assert 0 < spilled["lz4"] < spilled["none"]


@pytest.mark.parametrize("codec", ["gzip", "ZSTD", "", None, 1])
def test_an_unknown_spill_codec_is_refused_before_anything_is_read(
    codec: object, tmp_path: Path
) -> None:
    store = generate(100, seed=1)
    spill = tmp_path / "spill"
    spill.mkdir()
    seen: list[str] = []
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(
            store.records,
            store.contexts,
            tmp_path / "out",
            spill_directory=spill,
            spill_compression=codec,  # type: ignore[arg-type]
            progress=lambda stage, done, total: seen.append(stage),
            parts=3,
        )
    assert caught.value.field == "spill_compression"
    expected_kind = (
        mr.ErrorKind.UNKNOWN_VALUE if isinstance(codec, str) else mr.ErrorKind.WRONG_TYPE
    )
    assert caught.value.kind == expected_kind
    assert seen == []  # nothing was read
    assert _spill_is_empty(spill)
    assert not (tmp_path / "out").exists()


def _free_bytes(monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    """Makes every disk report ``free`` bytes free (its other figures stay real)."""
    real = shutil.disk_usage

    def usage(path: str | os.PathLike[str]) -> Any:
        total, used, _ = real(path)
        return type(real(path))(total, used, free)

    monkeypatch.setattr(shutil, "disk_usage", usage)


def test_an_uncompressed_spill_the_disk_cannot_hold_is_refused_before_reading(
    store_files: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    seen: list[str] = []
    _free_bytes(monkeypatch, 1_000_000)  # the store is tens of MB in Arrow
    with pytest.raises(OSError, match="not enough room to spill") as caught:
        mr.resolve_dataset(
            store_files.records,
            store_files.contexts,
            tmp_path / "out",
            tombstones=store_files.tombstones,
            spill_directory=spill,
            parts=4,
            progress=lambda stage, done, total: seen.append(stage),
        )
    assert caught.value.errno == errno.ENOSPC
    assert seen == []
    assert _spill_is_empty(spill)
    assert not (tmp_path / "out").exists()
    # Compressed, or in one part (nothing spilled), the job is not refused.
    for codec, parts in (("zstd", 4), ("none", 1)):
        summary = mr.resolve_dataset(
            store_files.records,
            store_files.contexts,
            tmp_path / f"{codec}-{parts}",
            spill_directory=spill,
            parts=parts,
            spill_compression=codec,
        )
        assert summary.parts == parts


def test_a_part_too_big_for_the_limit_is_split_by_owner(
    store_files: Any,
    expected: Rows,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spill_codecs: list[str | None],
) -> None:
    # No baseline: the whole limit is for parts, and 24 MB holds a part of a few owners.
    monkeypatch.setattr(_dataset, "BASELINE_BYTES", 0)
    monkeypatch.setattr(_dataset, "MIN_BUDGET_BYTES", 0)
    summary = mr.resolve_dataset(
        store_files.records,
        store_files.contexts,
        tmp_path / "out",
        tombstones=store_files.tombstones,
        include_excluded=True,
        with_values=True,
        parts=2,  # far too few: each part must be split again
        memory_limit="24MB",
        spill_compression="zstd",  # parts split again are written the same way
    )
    assert summary.parts > 2
    assert by_context(_read(tmp_path / "out")) == expected
    assert len(spill_codecs) > 3  # the three inputs, and again for the parts split again
    assert set(spill_codecs) == {"zstd"}


def test_one_owner_bigger_than_the_limit_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_dataset, "BASELINE_BYTES", 0)
    monkeypatch.setattr(_dataset, "MIN_BUDGET_BYTES", 0)
    store = generate(30_000, seed=3)
    # Every record and context belongs to one user.
    owner = store.contexts.column("user_id")[0].as_py()
    records = store.records.set_column(
        store.records.schema.get_field_index("user_id"),
        "user_id",
        pa.array([owner] * store.records.num_rows),
    ).set_column(
        store.records.schema.get_field_index("scope_kind"),
        "scope_kind",
        pa.array(["user"] * store.records.num_rows),
    )
    records = records.drop_columns(["character_id", "conversation_id", "scene_id"])
    contexts = store.contexts.set_column(
        store.contexts.schema.get_field_index("user_id"),
        "user_id",
        pa.array([owner] * store.contexts.num_rows),
    )
    for column in ("character_id", "conversation_id", "scene_id"):
        records = records.append_column(column, pa.nulls(records.num_rows, pa.string()))
    with pytest.raises(mr.MemoryLimitError, match=owner):
        mr.resolve_dataset(records, contexts, tmp_path / "out", memory_limit="1MB", parts=4)
    assert not (tmp_path / "out").exists()


def _with_value(table: pa.Table, column: str, row: int, value: object) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    index = table.schema.get_field_index(column)
    return table.set_column(index, column, pa.array(values, table.schema.field(column).type))


def _corrupt_copy(
    store_files: Any, tmp_path: Path, file: int, *, column: str, row: int, value: object
) -> tuple[Path, Path]:
    """The records directory copied, with one value changed in its ``file``-th file."""
    source = Path(store_files.records)
    target = tmp_path / "records"
    target.mkdir()
    for n, path in enumerate(sorted(source.iterdir())):
        table = pq.read_table(path)
        if n == file:
            table = _with_value(table, column, row, value)
        pq.write_table(table, target / path.name, row_group_size=10_000)
    return target, target / sorted(p.name for p in source.iterdir())[file]


@pytest.mark.parametrize(
    ("column", "value", "kind"),
    [
        ("status", "bogus", mr.ErrorKind.UNKNOWN_VALUE),
        ("confidence", 1.5, mr.ErrorKind.OUT_OF_RANGE),
        ("key", None, mr.ErrorKind.MISSING),
    ],
)
def test_bad_input_in_the_middle_names_file_column_and_row(
    store_files: Any, tmp_path: Path, column: str, value: object, kind: mr.ErrorKind
) -> None:
    records, bad_file = _corrupt_copy(
        store_files, tmp_path, 1, column=column, row=23_456, value=value
    )
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(
            records,
            store_files.contexts,
            tmp_path / "out",
            parts=5,
            spill_directory=spill,
        )
    error = caught.value
    assert (error.kind, error.field, error.row, error.file) == (kind, column, 23_456, str(bad_file))
    assert str(bad_file) in str(error)
    assert "row 23456" in str(error)
    assert not (tmp_path / "out").exists()
    assert _spill_is_empty(spill)
    assert [p.name for p in tmp_path.iterdir()] == sorted(["records", "spill"]) or set(
        p.name for p in tmp_path.iterdir()
    ) == {"records", "spill"}


def test_an_id_repeated_in_another_file_is_named(store_files: Any, tmp_path: Path) -> None:
    first = pq.read_table(sorted(Path(store_files.records).iterdir())[0])
    repeated = first.column("id")[17].as_py()
    records, bad_file = _corrupt_copy(
        store_files, tmp_path, 2, column="id", row=31_000, value=repeated
    )
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(records, store_files.contexts, tmp_path / "out")
    error = caught.value
    assert (error.kind, error.field, error.row, error.record_id, error.file) == (
        mr.ErrorKind.DUPLICATE_ID,
        "id",
        31_000,
        repeated,
        str(bad_file),
    )
    assert not (tmp_path / "out").exists()


def test_a_context_id_repeated_in_another_file_is_named(store_files: Any, tmp_path: Path) -> None:
    source = sorted(Path(store_files.contexts).iterdir())
    repeated = pq.read_table(source[0]).column("context_id")[5].as_py()
    contexts = tmp_path / "contexts"
    contexts.mkdir()
    for n, path in enumerate(source):
        table = pq.read_table(path)
        if n == 2:
            table = _with_value(table, "context_id", 400, repeated)
        pq.write_table(table, contexts / path.name)
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(store_files.records, contexts, tmp_path / "out")
    error = caught.value
    assert (error.kind, error.field, error.row, error.file) == (
        mr.ErrorKind.DUPLICATE_ID,
        "context_id",
        400,
        str(contexts / source[2].name),
    )
    assert f"row 5 of {contexts / source[0].name}" in str(error)  # where it came first
    assert not (tmp_path / "out").exists()


def test_an_existing_output_is_kept_unless_overwritten(store_files: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # An earlier job's output (overwrite replaces nothing else: tests/dataset/test_job_outputs.py).
    mr.forget_sweep_dataset(store_files.records, out)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(FileExistsError):
        mr.resolve_dataset(store_files.records, store_files.contexts, out)
    assert sorted(p.name for p in out.iterdir()) == before
    mr.resolve_dataset(store_files.records, store_files.contexts, out, overwrite=True)
    assert "cause" not in pq.read_table(out).column_names
    assert _read(out).num_rows > 0


def test_streams_tables_and_lazy_frames_are_inputs(tmp_path: Path) -> None:
    store = generate(5_000, seed=11)
    expected = by_context(
        mr.resolve_batch(store.records, store.contexts, tombstones=store.tombstones)
    )
    inputs: list[tuple[Any, Any]] = [
        (store.records, store.contexts),
        (
            pa.RecordBatchReader.from_batches(
                store.records.schema, store.records.to_batches(max_chunksize=999)
            ),
            store.contexts.to_batches()[0],
        ),
        (pl.from_arrow(store.records).lazy(), pl.from_arrow(store.contexts)),  # type: ignore[union-attr]
    ]
    for n, (records, contexts) in enumerate(inputs):
        mr.resolve_dataset(records, contexts, tmp_path / f"out{n}", tombstones=store.tombstones)
        assert by_context(_read(tmp_path / f"out{n}")) == expected, n


def test_empty_inputs_are_checked_and_give_no_rows(tmp_path: Path) -> None:
    store = generate(1_000, seed=2)
    summary = mr.resolve_dataset(
        store.records.slice(0, 0), store.contexts, tmp_path / "out", parts=3
    )
    # Three parts resolved (their contexts see no record), one file of no rows written.
    assert (summary.records, summary.parts, summary.rows) == (0, 3, {})
    written = _read(tmp_path / "out")
    assert written.num_rows == 0
    assert written.schema == mr.resolve_batch(store.records, store.contexts).schema
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(
            store.records.slice(0, 0).drop_columns(["authority"]), store.contexts, tmp_path / "x"
        )
    assert caught.value.where()[:2] == (mr.ErrorKind.MISSING_COLUMN, "authority")


@pytest.mark.parametrize("limit", ["0B", "-1GB", "lots", 0, 1.5, True])
def test_a_bad_memory_limit_is_refused(limit: object, tmp_path: Path) -> None:
    store = generate(100, seed=1)
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(store.records, store.contexts, tmp_path / "out", memory_limit=limit)  # type: ignore[arg-type]
    assert caught.value.field == "memory_limit"


def test_a_limit_below_what_the_job_needs_is_refused(tmp_path: Path) -> None:
    store = generate(100, seed=1)
    with pytest.raises(mr.MemoryLimitError, match="memory_limit"):
        mr.resolve_dataset(store.records, store.contexts, tmp_path / "out", memory_limit="100MB")


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ("2GB", 2 * 10**9),
        ("512MiB", 512 * 2**20),
        ("4g", 4 * 10**9),
        (1234, 1234),
        ("1.5 GiB", 3 * 2**29),
    ],
)
def test_sizes_are_read_as_people_write_them(size: int | str, expected: int) -> None:
    assert _dataset.parse_size(size) == expected


def _files(directory: Path) -> Iterator[Path]:
    return (path for path in directory.rglob("*") if path.is_file())


def _split_files(directory: Path, tables: list[pa.Table]) -> Path:
    directory.mkdir()
    for n, table in enumerate(tables):
        pq.write_table(table, directory / f"{n:03d}.parquet")
    return directory


def test_each_file_is_read_with_its_own_columns_and_types(tmp_path: Path) -> None:
    """Files of one input that differ in optional columns and encodings (review finding)."""
    store = generate(3_000, seed=4)
    records = store.records
    first, second, third = (
        records.slice(0, 1_000),
        records.slice(1_000, 1_000),
        records.slice(2_000),
    )
    # The first file leaves out status and version (all active, version 1 there), has a
    # column of the Arrow null type, and dictionary-encoded ids.
    first = first.set_column(
        first.schema.get_field_index("status"), "status", pa.array(["active"] * 1_000)
    )
    first = first.set_column(
        first.schema.get_field_index("version"), "version", pa.array([1] * 1_000, pa.int64())
    )
    first = first.set_column(
        first.schema.get_field_index("valid_until"),
        "valid_until",
        pa.nulls(1_000, first.schema.field("valid_until").type),
    )
    expected_records = pa.concat_tables([first, second, third])
    first = first.drop_columns(["status", "version"])
    first = first.set_column(
        first.schema.get_field_index("valid_until"), "valid_until", pa.nulls(1_000)
    )
    first = first.set_column(0, "id", first.column("id").dictionary_encode())
    # The second has nanosecond instants in another zone and narrow versions.
    second = second.set_column(
        second.schema.get_field_index("valid_from"),
        "valid_from",
        second.column("valid_from").cast(pa.timestamp("ns", tz="Asia/Kolkata")),
    )
    second = second.set_column(
        second.schema.get_field_index("version"),
        "version",
        second.column("version").cast(pa.int16()),
    )
    files = _split_files(tmp_path / "records", [first, second, third])
    expected = by_context(
        mr.resolve_batch(expected_records, store.contexts, tombstones=store.tombstones)
    )
    for parts in (1, 5):
        mr.resolve_dataset(
            files,
            store.contexts,
            tmp_path / f"out{parts}",
            tombstones=store.tombstones,
            parts=parts,
        )
        assert by_context(_read(tmp_path / f"out{parts}")) == expected


def test_a_fault_only_one_file_has_is_reported_in_its_terms(tmp_path: Path) -> None:
    store = generate(2_000, seed=4)
    first, second = store.records.slice(0, 1_000), store.records.slice(1_000)
    naive = second.set_column(
        second.schema.get_field_index("valid_from"),
        "valid_from",
        second.column("valid_from").cast(pa.timestamp("us")),
    )
    files = _split_files(tmp_path / "naive", [first, naive])
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(files, store.contexts, tmp_path / "out")
    error = caught.value
    assert (error.kind, error.field) == (mr.ErrorKind.NAIVE_TIME, "valid_from")
    assert error.file == str(files / "001.parquet")
    missing = _split_files(tmp_path / "missing", [first, second.drop_columns(["authority"])])
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(missing, store.contexts, tmp_path / "out")
    assert caught.value.where()[:2] == (mr.ErrorKind.MISSING_COLUMN, "authority")
    assert caught.value.file == str(missing / "001.parquet")
    assert not (tmp_path / "out").exists()


def test_values_are_checked_on_every_row_even_rows_no_part_keeps(tmp_path: Path) -> None:
    store = generate(2_000, seed=4)
    kinds = store.records.column("scope_kind").to_pylist()
    users = store.records.column("user_id").to_pylist()
    # A record of a conversation no context names: routed to no part.
    row = next(
        n
        for n, (k, u) in enumerate(zip(kinds, users, strict=True))
        if k == "conversation" and u is None
    )
    conversations = store.records.column("conversation_id").to_pylist()
    conversations[row] = "a conversation nobody is in"
    values = store.records.column("value").to_pylist()
    values[row] = None
    records = store.records.set_column(
        store.records.schema.get_field_index("conversation_id"),
        "conversation_id",
        pa.array(conversations),
    )
    records = records.set_column(records.schema.get_field_index("value"), "value", pa.array(values))
    files = _split_files(tmp_path / "records", [records])
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.resolve_dataset(files, store.contexts, tmp_path / "out", with_values=True, parts=3)
    error = caught.value
    assert (error.kind, error.field, error.row) == (mr.ErrorKind.MISSING, "value", row)
    assert error.file == str(files / "000.parquet")


def test_a_failed_replacement_keeps_the_old_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = generate(500, seed=1)
    out = tmp_path / "out"
    mr.resolve_dataset(store.records, store.contexts, out)  # the old output: a job's
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    real_rename = os.rename

    def failing_rename(source: Any, target: Any, **kwargs: Any) -> None:
        if Path(source).name.startswith(".out.partial"):
            raise OSError("disk gone")
        real_rename(source, target, **kwargs)

    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(OSError, match="disk gone"):
        mr.resolve_dataset(store.records, store.contexts, out, overwrite=True, with_values=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_output_has_the_umasks_mode(tmp_path: Path) -> None:
    store = generate(500, seed=1)
    mr.resolve_dataset(store.records, store.contexts, tmp_path / "out")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o777 & ~umask
