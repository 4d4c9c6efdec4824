"""The batch jobs' output files: row groups cut by bytes, and the writer's memory counted."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memresolve._dataset import _output as _dataset_output
from memresolve._dataset._output import OutputWriter, encoding_bytes, write_parquet


def _long_texts(rows: int, size: int) -> Any:
    """Rows of text that does not compress (random hex), ``size`` characters each."""
    return pa.table(
        {
            "context_id": [f"c{row // 10}" for row in range(rows)],
            "record_id": [f"r{row}" for row in range(rows)],
            "value": [os.urandom(size // 2).hex() for _ in range(rows)],
        }
    )


def _row_groups(path: Path) -> list[Any]:
    """The row groups' metadata of the Parquet file at ``path``."""
    metadata = pq.ParquetFile(path).metadata
    return [metadata.row_group(group) for group in range(metadata.num_row_groups)]


def test_long_rows_are_written_in_row_groups_of_bounded_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Parquet's writer holds a row group's encoded pages until the group is written:
    # with its default of 1Mi rows, these 200 rows would be one group of all their text.
    monkeypatch.setattr(_dataset_output, "ROW_GROUP_BYTES", 1 << 20)
    table = _long_texts(200, 50_000)
    path = tmp_path / "long.parquet"
    write_parquet(table, path, ["context_id"])
    groups = _row_groups(path)
    assert len(groups) >= table.nbytes // (1 << 20)
    for group in groups:
        assert group.total_byte_size <= (1 << 20) + 50_100
        assert group.column(2).compression == "ZSTD"
    assert pq.read_table(path).equals(table)


def test_long_rows_after_short_ones_make_smaller_groups_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One user's winners with long values at the end of a piece: groups cut by the
    # table's average row held the whole 5 MB tail in one group of a 1 MiB cap.
    monkeypatch.setattr(_dataset_output, "ROW_GROUP_BYTES", 1 << 20)
    short = pa.table(
        {
            "context_id": [f"c{row}" for row in range(2_000)],
            "value": pa.nulls(2_000, pa.string()),
        }
    )
    long = _long_texts(100, 50_000).select(["context_id", "value"])
    table = pa.concat_tables([short, long])
    path = tmp_path / "skewed.parquet"
    write_parquet(table, path)
    groups = _row_groups(path)
    assert sum(group.num_rows for group in groups) == table.num_rows
    for group in groups:
        assert group.num_rows == 1 or group.total_byte_size <= (1 << 20) + 50_100
    assert pq.read_table(path).equals(table)


def test_a_row_longer_than_a_group_is_a_group_and_counted_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_dataset_output, "ROW_GROUP_BYTES", 1 << 16)
    table = _long_texts(3, 300_000)
    path = tmp_path / "huge.parquet"
    write_parquet(table, path)
    assert len(_row_groups(path)) == 3
    assert pq.read_table(path).equals(table)
    # Its encoded copy is as big as the row, not as a group.
    assert encoding_bytes(table) >= 2 * 300_000


def test_short_rows_keep_parquets_rows_per_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_dataset_output, "ROW_GROUP_ROWS", 1_000)
    table = pa.table({"context_id": ["c1"] * 4_500, "record_id": ["r"] * 4_500})
    path = tmp_path / "short.parquet"
    write_parquet(table, path)
    assert [group.num_rows for group in _row_groups(path)] == [
        1_000,
        1_000,
        1_000,
        1_000,
        500,
    ]


def test_an_empty_table_is_written(tmp_path: Path) -> None:
    table = pa.table({"context_id": pa.array([], pa.string())})
    write_parquet(table, tmp_path / "empty.parquet")
    assert pq.read_table(tmp_path / "empty.parquet").equals(table)


def test_the_writer_counts_a_table_with_its_encoding_until_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    started = threading.Event()
    real_write = _dataset_output._write_parquet

    def held_write(table: Any, path: Path) -> None:
        started.set()
        release.wait(timeout=30)
        real_write(table, path)

    monkeypatch.setattr(_dataset_output, "_write_parquet", held_write)
    table = _long_texts(20, 10_000)
    writer = OutputWriter(tmp_path, budget=1 << 30)
    try:
        writer.write(table)
        assert started.wait(timeout=30)
        held = writer.writing_bytes()
        assert held == table.nbytes + encoding_bytes(table)
        assert encoding_bytes(table) == 2 * table.nbytes  # a table below one row group
        release.set()
        writer.wait()
        assert writer.writing_bytes() == 0
    finally:
        release.set()
        writer.stop()
    assert pq.read_table(tmp_path / "part-00000.parquet").equals(table)


def test_a_table_waits_while_the_one_being_written_and_its_encoding_fill_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    releases = [threading.Event(), threading.Event()]
    real_write = _dataset_output._write_parquet
    written: list[str] = []

    def held_write(table: Any, path: Path) -> None:
        releases[len(written)].wait(timeout=30)
        real_write(table, path)
        written.append(path.name)

    monkeypatch.setattr(_dataset_output, "_write_parquet", held_write)
    table = _long_texts(20, 10_000)
    # Room for two tables' Arrow bytes, not for one beside the other's encoding.
    writer = OutputWriter(tmp_path, budget=3 * table.nbytes)
    try:
        writer.write(table)
        timer = threading.Timer(0.2, releases[0].set)
        timer.start()
        writer.write(table)  # waits for the first write: four times nbytes would not fit
        assert written == ["part-00000.parquet"]  # the second is held until released
        releases[1].set()
        writer.wait()
        timer.join()
    finally:
        for release in releases:
            release.set()
        writer.stop()
    assert written == ["part-00000.parquet", "part-00001.parquet"]
