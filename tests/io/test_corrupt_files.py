"""Bad files are bad input (issue 35, finding 6): a corrupt or truncated Parquet file, or one
changed while it is read, is ``InvalidInputError`` naming the file (and the row group and
column where known) from every reader of files; a file system error with an errno stays an
``OSError``; the command exits 2.

The bit-flip test flips bits of a real Parquet file at many offsets (random ones, and every
region: pages, dictionary pages, the footer) and requires each job either to give the
answer the flipped file holds (what ``resolve_batch`` says on the same file read whole) or
to raise ``InvalidInputError`` naming the file: never another exception, never a crash.
Before, 22 of 39 flips were a bare ``OSError`` naming no file, and a flip in a dictionary
page an ``ArrowInvalid`` ("Index not in dictionary bounds"); a flip in a chunk's size
statistics aborts the process through pyarrow's metadata accessors.
"""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import memresolve as mr
from batch_rows import by_context
from memresolve._io._canonical import read_columns
from memresolve.testing.batch_store import generate

pytestmark = pytest.mark.skipif(
    mr.backend_name() != "native", reason="the dataset jobs run on the compiled core"
)

#: Small, so that a few hundred flips take a few seconds: three row groups, snappy pages.
STORE = generate(600, seed=3)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corrupt")
    pq.write_table(STORE.records, root / "records.parquet", row_group_size=200)
    pq.write_table(STORE.contexts, root / "contexts.parquet")
    pq.write_table(STORE.tombstones, root / "tombstones.parquet")
    return root


def _flipped(raw: bytes, offset: int, bit: int) -> bytes:
    data = bytearray(raw)
    data[offset] ^= 1 << bit
    return bytes(data)


def _answer_or_bad_input(job: Callable[[], object], path: Path) -> str:
    """``ok``, or ``bad input`` when the job raised InvalidInputError naming ``path``;
    anything else fails the test."""
    refused: mr.InvalidInputError | None = None
    try:
        job()
    except mr.InvalidInputError as error:
        refused = error
    if refused is None:
        return "ok"
    assert refused.file == str(path), f"{refused!r} names {refused.file}, not {path}"
    assert str(path) in str(refused)
    return "bad input"


def _flip_offsets(raw: bytes, path: Path, count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` random (offset, bit) pairs, plus some in every region of the file: each
    column chunk's dictionary page and the end of its data pages, and the footer."""
    rng = random.Random(seed)
    picks = [(rng.randrange(len(raw)), rng.randrange(8)) for _ in range(count)]
    metadata = pq.read_metadata(path)
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(index)
            start = chunk.dictionary_page_offset or chunk.data_page_offset
            end = start + chunk.total_compressed_size
            picks += [(start + rng.randrange(min(64, end - start)), rng.randrange(8))]
            picks += [(end - 1 - rng.randrange(min(16, end - start)), 7)]
    footer = int.from_bytes(raw[-8:-4], "little")
    picks += [(len(raw) - 8 - footer + rng.randrange(footer), rng.randrange(8)) for _ in range(40)]
    return picks


def test_regression_every_bit_flip_is_the_answer_or_bad_input_naming_the_file(
    files: Path, tmp_path: Path
) -> None:
    raw = (files / "records.parquet").read_bytes()
    flipped = tmp_path / "records.parquet"
    columns = [c for c in read_columns("records", False) if c in STORE.records.column_names]
    outcomes: dict[str, int] = {}
    picks = _flip_offsets(raw, files / "records.parquet", count=80, seed=35)
    for number, (offset, bit) in enumerate(picks):
        flipped.write_bytes(_flipped(raw, offset, bit))
        out = tmp_path / f"out-{number}"
        outcome = _answer_or_bad_input(
            partial(mr.resolve_dataset, flipped, files / "contexts.parquet", out), flipped
        )
        if outcome == "ok":
            # The answer the flipped file holds: its columns read whole, resolved in memory.
            table = pq.read_table(flipped, columns=columns)
            expected = mr.resolve_batch(table, pq.read_table(files / "contexts.parquet"))
            assert by_context(pq.read_table(out)) == by_context(expected), (offset, bit)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("bad input", 0) >= len(picks) // 4, outcomes  # the flips did harm
    assert outcomes.get("ok", 0) >= 1, outcomes


@pytest.mark.parametrize("what", ["records", "tombstones"])
@pytest.mark.parametrize("job", ["normalize", "forget-sweep"])
def test_every_job_reads_a_flipped_file_as_an_answer_or_bad_input(
    job: str, what: str, files: Path, tmp_path: Path
) -> None:
    """The same reader serves every job and every input: a sample of flips through the
    background jobs, in records and in tombstones."""
    source = files / f"{what}.parquet"
    raw = source.read_bytes()
    flipped = tmp_path / f"{what}.parquet"
    inputs = {"records": files / "records.parquet", "tombstones": files / "tombstones.parquet"}
    inputs[what] = flipped
    now = STORE.contexts.column("now")[0].as_py()
    for number, (offset, bit) in enumerate(_flip_offsets(raw, source, count=20, seed=9)[::3]):
        flipped.write_bytes(_flipped(raw, offset, bit))
        out = tmp_path / f"out-{number}"
        call: Callable[[], object] = (
            partial(
                mr.normalize_dataset,
                inputs["records"],
                out,
                now=now,
                tombstones=inputs["tombstones"],
                parts=2,
            )
            if job == "normalize"
            else partial(
                mr.forget_sweep_dataset, inputs["records"], out, tombstones=inputs["tombstones"]
            )
        )
        _answer_or_bad_input(call, flipped)


def test_regression_an_index_past_the_dictionary_is_bad_input_naming_group_and_column(
    tmp_path: Path,
) -> None:
    """A flipped high bit at the end of a dictionary-encoded data page: an index past the
    dictionary, which escaped as ``pyarrow.lib.ArrowInvalid`` ("Index not in dictionary
    bounds") and a traceback from the command."""
    store = generate(2_000, seed=3)
    source = tmp_path / "records.parquet"
    pq.write_table(store.records, source, row_group_size=700, compression="none")
    pq.write_table(store.contexts, tmp_path / "contexts.parquet")
    raw = source.read_bytes()
    metadata = pq.read_metadata(source)
    chunk = metadata.row_group(1).column(metadata.schema.names.index("supersedes"))
    end = (chunk.dictionary_page_offset or chunk.data_page_offset) + chunk.total_compressed_size
    flipped = tmp_path / "flipped.parquet"
    errors = []
    for offset in range(end - 80, end):
        flipped.write_bytes(_flipped(raw, offset, 7))
        try:
            mr.resolve_dataset(
                flipped, tmp_path / "contexts.parquet", tmp_path / f"o{offset}", with_values=True
            )
        except mr.InvalidInputError as error:
            errors.append(error)
    assert all(e.file == str(flipped) for e in errors)
    bounds = [e for e in errors if "dictionary bounds" in str(e)]
    assert bounds, [str(e) for e in errors]
    assert all(e.kind is mr.ErrorKind.MALFORMED for e in bounds)
    assert all("row group 1" in str(e) and e.field == "supersedes" for e in bounds)


@pytest.mark.parametrize(
    "keep", [0, 3, 4, 8, 100, 0.25, 0.5, 0.9, -12, -8, -5, -4, -1], ids=lambda k: f"keep-{k}"
)
def test_regression_a_truncated_file_is_bad_input_naming_it(
    keep: float, files: Path, tmp_path: Path
) -> None:
    """ "File too short", "Unexpected end of stream", or no magic at the end: all bad input."""
    raw = (files / "records.parquet").read_bytes()
    length = int(keep * len(raw)) if isinstance(keep, float) else keep % len(raw)
    truncated = tmp_path / "records.parquet"
    truncated.write_bytes(raw[:length])
    with pytest.raises(mr.InvalidInputError) as caught:
        mr.forget_sweep_dataset(truncated, tmp_path / "out")
    assert (caught.value.kind, caught.value.file) == (mr.ErrorKind.MALFORMED, str(truncated))
    assert not (tmp_path / "out").exists()


def _big_records(tmp_path: Path) -> Path:
    """Records in 8 row groups of 40k rows: read in several batches, ahead of the job."""
    path = tmp_path / "records.parquet"
    pq.write_table(generate(320_000, seed=6).records, path, row_group_size=40_000)
    return path


def _rewrite(path: Path, how: str) -> None:
    raw = path.read_bytes()
    if how == "truncated":
        with path.open("r+b") as file:
            file.truncate(len(raw) // 2)
    elif how == "rewritten":  # the same size, other bytes: the writer's next version
        with path.open("r+b") as file:
            file.seek(len(raw) // 2)
            file.write(bytes(len(raw) // 4))
    else:  # replaced: a new file renamed over it, as careful writers do
        fresh = path.with_name("fresh.parquet")
        fresh.write_bytes(raw)
        os.rename(fresh, path)


@pytest.mark.parametrize("how", ["truncated", "rewritten", "replaced"])
def test_regression_a_file_changed_while_it_is_read_is_bad_input(how: str, tmp_path: Path) -> None:
    records = _big_records(tmp_path)
    changed: list[bool] = []

    def progress(stage: str, done: int, total: int | None) -> None:
        if stage == "records" and not changed:
            _rewrite(records, how)
            changed.append(True)

    with pytest.raises(mr.InvalidInputError) as caught:
        mr.forget_sweep_dataset(records, tmp_path / "out", progress=progress)
    assert changed
    assert (caught.value.kind, caught.value.file) == (mr.ErrorKind.MALFORMED, str(records))
    assert "changed while it was read" in str(caught.value)
    assert not (tmp_path / "out").exists()


def _two_files(tmp_path: Path) -> Path:
    """A directory of two files, the first read in several batches (so the second is not
    opened before the job reports its first batch)."""
    directory = tmp_path / "records"
    directory.mkdir()
    _big_records(tmp_path).rename(directory / "a.parquet")
    records = STORE.records.set_column(
        0, "id", pq.read_table(directory / "a.parquet", columns=["id"]).column("id")[:600]
    )
    pq.write_table(records, directory / "b.parquet")
    return directory


def test_a_file_deleted_before_it_is_read_stays_an_oserror(tmp_path: Path) -> None:
    """ENOENT is the file system's: not bad input."""
    directory = _two_files(tmp_path)

    def progress(stage: str, done: int, total: int | None) -> None:
        (directory / "b.parquet").unlink(missing_ok=True)

    with pytest.raises(FileNotFoundError) as caught:
        mr.forget_sweep_dataset(directory, tmp_path / "out", progress=progress)
    assert caught.value.errno == errno.ENOENT
    assert not isinstance(caught.value, mr.MemresolveError)


def test_a_file_replaced_by_a_directory_stays_an_oserror(tmp_path: Path) -> None:
    """pyarrow says "is a directory" with no errno; the file is looked at again to tell."""
    directory = _two_files(tmp_path)

    def progress(stage: str, done: int, total: int | None) -> None:
        if not (directory / "b.parquet").is_dir():
            (directory / "b.parquet").unlink()
            (directory / "b.parquet").mkdir()

    with pytest.raises(IsADirectoryError) as caught:
        mr.forget_sweep_dataset(directory, tmp_path / "out", progress=progress)
    assert caught.value.errno == errno.EISDIR


def test_an_unreadable_file_stays_a_permission_error(files: Path, tmp_path: Path) -> None:
    """EACCES, for real: the job runs without the capabilities that let root read anything
    (``setpriv`` drops them from the bounding set)."""
    secret = tmp_path / "secret.parquet"
    secret.write_bytes((files / "records.parquet").read_bytes())
    secret.chmod(0)
    code = (
        "import sys, memresolve as mr\n"
        "try:\n    mr.forget_sweep_dataset(sys.argv[1], sys.argv[2])\n"
        "except PermissionError as error:\n    print('PermissionError', error.errno)\n"
    )
    command = [sys.executable, "-c", code, str(secret), str(tmp_path / "out")]
    if os.geteuid() == 0:
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    assert done.stdout.strip() == f"PermissionError {errno.EACCES}", (done.stdout, done.stderr)


def test_the_command_exits_2_naming_a_corrupt_file(files: Path, tmp_path: Path) -> None:
    raw = (files / "records.parquet").read_bytes()
    corrupt = tmp_path / "records.parquet"
    corrupt.write_bytes(raw[: len(raw) // 2])
    for argv in (
        ["batch", str(corrupt), str(files / "contexts.parquet")],
        ["normalize", str(corrupt), "--now", "2026-07-30T00:00Z"],
        ["forget-sweep", str(corrupt), "--tombstones", str(files / "tombstones.parquet")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "memresolve", *argv, "--out", str(tmp_path / "out")],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert str(corrupt) in done.stderr
        assert not (tmp_path / "out").exists()


def test_a_valid_file_reads_the_same_through_the_row_group_reader(
    files: Path, tmp_path: Path
) -> None:
    """Reading row group by row group (to name a failing group) changes no answer."""
    expected = mr.resolve_batch(STORE.records, STORE.contexts, include_excluded=True)
    mr.resolve_dataset(
        files / "records.parquet",
        files / "contexts.parquet",
        tmp_path / "out",
        include_excluded=True,
    )
    assert by_context(pq.read_table(tmp_path / "out")) == by_context(expected)
