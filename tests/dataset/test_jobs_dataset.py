"""The background jobs over files (docs/spec.md §7.3): ``normalize_dataset`` and
``forget_sweep_dataset`` equal their batch forms, whatever the number of parts and
files; bad input names its file and row and leaves no output; the commands run them.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memresolve as mr
from memresolve.testing import Store, stores
from memresolve.testing.batch_store import generate
from profiles import PARITY_EXAMPLES
from story import NOW

pytestmark = pytest.mark.skipif(
    mr.backend_name() != "native", reason="the dataset jobs run on the compiled core"
)


def _write_files(directory: Path, table: pa.Table, files: int) -> Path:
    directory.mkdir()
    step = max(1, -(-table.num_rows // files))
    for n in range(files):
        pq.write_table(table.slice(n * step, step), directory / f"{n:03d}.parquet")
    return directory


def _rows(path: Path, columns: list[str]) -> list[tuple[object, ...]]:
    table = pq.read_table(path)
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


CHANGE = ["record_id", "old_status", "new_status"]
PURGE = ["record_id", "key", "scope_id", "cause"]


@settings(max_examples=max(40, PARITY_EXAMPLES // 20), deadline=None)
@given(
    stores(max_records=40, max_users=4),
    st.integers(1, 7),
    st.integers(1, 3),
    st.integers(-2, 2),
)
def test_any_number_of_parts_gives_the_changes_of_normalize_batch(
    store: Store, parts: int, files: int, shift: int
) -> None:
    now = NOW + timedelta(days=shift)
    records = mr.records_to_arrow(store.records)
    tombstones = mr.tombstones_to_arrow(store.tombstones)
    expected = _sorted_table(mr.normalize_batch(records, now=now, tombstones=tombstones), CHANGE)
    purges = _sorted_table(mr.forget_sweep_batch(records, tombstones), PURGE)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        source = _write_files(root / "records", records, files)
        pq.write_table(tombstones, root / "tombstones.parquet")
        summary = mr.normalize_dataset(
            source,
            root / "changes",
            now=now,
            tombstones=root / "tombstones.parquet",
            parts=parts,
        )
        assert _rows(root / "changes", CHANGE) == expected
        assert summary.records == len(store.records)
        assert sum(summary.rows.values()) == len(expected)
        mr.forget_sweep_dataset(source, root / "purges", tombstones=root / "tombstones.parquet")
        assert _rows(root / "purges", PURGE) == purges
        assert sorted(p.name for p in root.iterdir()) == [
            "changes",
            "purges",
            "records",
            "tombstones.parquet",
        ]


def _sorted_table(table: pa.Table, columns: list[str]) -> list[tuple[object, ...]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def test_a_generated_store_with_spilled_parts(tmp_path: Path) -> None:
    """UUID ids, corrections across parts, a limit that forces several spilled parts; each
    codec gives the same changes, and zstd spills fewer bytes."""
    store = generate(30_000, seed=3)
    records = _write_files(tmp_path / "records", store.records, 4)
    pq.write_table(store.tombstones, tmp_path / "tombstones.parquet")
    now = max(store.contexts.column("now").to_pylist())
    expected = mr.normalize_batch(store.records, now=now, tombstones=store.tombstones)
    assert expected.num_rows > 1000  # the store has something to normalise
    spilled = {}
    for codec in ("none", "zstd"):
        summary = mr.normalize_dataset(
            records,
            tmp_path / codec,
            now=now,
            tombstones=tmp_path / "tombstones.parquet",
            parts=5,
            spill_compression=codec,
        )
        assert summary.parts == 5
        assert _rows(tmp_path / codec, CHANGE) == _sorted_table(expected, CHANGE), codec
        spilled[codec] = summary.peak_spill_bytes
    assert 0 < spilled["zstd"] < spilled["none"]
    assert not list(tmp_path.glob(".*.partial-*"))


def test_an_unknown_spill_codec_is_refused(tmp_path: Path) -> None:
    store = generate(100, seed=3)
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.normalize_dataset(
            store.records,
            tmp_path / "out",
            now=NOW,
            spill_directory=spill,
            spill_compression="snappy",
        )
    assert caught.value.where()[:2] == (mr.ErrorKind.UNKNOWN_VALUE, "spill_compression")
    assert list(spill.iterdir()) == []
    assert not (tmp_path / "out").exists()


def test_an_uncompressed_spill_the_disk_cannot_hold_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = generate(20_000, seed=3)
    records = _write_files(tmp_path / "records", store.records, 2)
    real = shutil.disk_usage
    monkeypatch.setattr(
        shutil, "disk_usage", lambda path: type(real(path))(*real(path)[:2], 1_000_000)
    )
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(OSError, match="not enough room to spill") as caught:
        mr.normalize_dataset(records, tmp_path / "out", now=NOW, parts=3, spill_directory=spill)
    assert caught.value.errno == errno.ENOSPC
    assert list(spill.iterdir()) == []
    assert not (tmp_path / "out").exists()
    summary = mr.normalize_dataset(
        records, tmp_path / "out", now=NOW, parts=3, spill_compression="zstd"
    )
    assert summary.records == 20_000


def test_an_id_repeated_in_another_file_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    store = generate(2_000, seed=1)
    directory = tmp_path / "records"
    directory.mkdir()
    pq.write_table(store.records, directory / "a.parquet")
    pq.write_table(store.records.slice(10, 1), directory / "b.parquet")
    jobs: list[Callable[[], object]] = [
        lambda: mr.normalize_dataset(directory, tmp_path / "out", now=NOW),
        lambda: mr.forget_sweep_dataset(directory, tmp_path / "out"),
    ]
    for job in jobs:
        with pytest.raises(mr.InvalidInputError) as error:
            job()
        assert error.value.kind is mr.ErrorKind.DUPLICATE_ID
        assert error.value.file is not None
        assert error.value.file.endswith("b.parquet")
        assert error.value.row == 0
        assert not (tmp_path / "out").exists()
        assert [p.name for p in tmp_path.iterdir()] == ["records"]


def test_bad_input_names_file_column_and_row(tmp_path: Path) -> None:
    store = generate(1_000, seed=2)
    statuses = store.records.column("status").to_pylist()
    statuses[700] = "Active"
    broken = store.records.set_column(
        store.records.schema.get_field_index("status"), "status", pa.array(statuses)
    )
    directory = _write_files(tmp_path / "records", broken, 2)
    with pytest.raises(mr.InvalidInputError) as error:
        mr.normalize_dataset(directory, tmp_path / "out", now=NOW)
    assert error.value.field == "status"
    assert error.value.row == 200
    assert error.value.file is not None
    assert error.value.file.endswith("001.parquet")
    assert not (tmp_path / "out").exists()


def test_an_existing_output_is_kept_unless_overwritten(tmp_path: Path) -> None:
    records = mr.records_to_arrow([])
    # An earlier job's output: overwrite replaces only what a memresolve job wrote
    # (tests/dataset/test_job_outputs.py refuses everything else).
    mr.forget_sweep_dataset(records, tmp_path / "out")
    with pytest.raises(FileExistsError):
        mr.normalize_dataset(records, tmp_path / "out", now=NOW)
    assert pq.read_table(tmp_path / "out").schema.names == PURGE
    summary = mr.normalize_dataset(records, tmp_path / "out", now=NOW, overwrite=True)
    assert summary.rows == {}
    assert pq.read_table(tmp_path / "out").schema.names == CHANGE


def test_a_naive_now_is_refused(tmp_path: Path) -> None:
    with pytest.raises(mr.InvalidInputError) as error:
        mr.normalize_dataset(
            mr.records_to_arrow([]), tmp_path / "out", now=NOW.replace(tzinfo=None)
        )
    assert error.value.kind is mr.ErrorKind.NAIVE_TIME


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memresolve", *args], capture_output=True, text=True, check=False
    )


def test_the_commands_run_the_jobs(tmp_path: Path) -> None:
    store = generate(5_000, seed=4)
    pq.write_table(store.records, tmp_path / "records.parquet")
    pq.write_table(store.tombstones, tmp_path / "tombstones.parquet")
    now = max(store.contexts.column("now").to_pylist())
    done = _cli(
        "normalize",
        str(tmp_path / "records.parquet"),
        "--now",
        now.isoformat(),
        "--tombstones",
        str(tmp_path / "tombstones.parquet"),
        "--out",
        str(tmp_path / "changes"),
        "--spill-compression",
        "lz4",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["job"] == "normalize"
    assert summary["records"] == 5_000
    expected = mr.normalize_batch(store.records, now=now, tombstones=store.tombstones)
    assert _rows(tmp_path / "changes", CHANGE) == _sorted_table(expected, CHANGE)

    done = _cli(
        "forget-sweep",
        str(tmp_path / "records.parquet"),
        "--tombstones",
        str(tmp_path / "tombstones.parquet"),
        "--out",
        str(tmp_path / "purges"),
    )
    assert done.returncode == 0, done.stderr
    assert "memresolve forget-sweep: 5,000 records" in done.stdout
    expected = mr.forget_sweep_batch(store.records, store.tombstones)
    assert _rows(tmp_path / "purges", PURGE) == _sorted_table(expected, PURGE)


def test_a_command_given_bad_input_exits_2(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["m1"]}), tmp_path / "records.parquet")
    done = _cli(
        "normalize",
        str(tmp_path / "records.parquet"),
        "--now",
        "2026-07-30T12:00Z",
        "--out",
        str(tmp_path / "out"),
    )
    assert done.returncode == 2
    assert "invalid input" in done.stderr
    assert "records.parquet" in done.stderr
    done = _cli(
        "normalize",
        str(tmp_path / "records.parquet"),
        "--now",
        "2026-07-30T12:00",
        "--out",
        str(tmp_path / "out"),
    )
    assert done.returncode == 2
    assert "now" in done.stderr
