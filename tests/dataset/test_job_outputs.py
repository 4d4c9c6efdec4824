"""Jobs never destroy their inputs (issue 35, finding 3): an ``output`` that is, holds or lies
inside an input or the spill directory is refused before anything is read, however the path
is spelled; ``overwrite`` replaces only an output a memresolve job wrote (its marker lists
all it holds), never a user's directory or file, and a path swapped while the job runs is
put back, not deleted.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

import memresolve as mr
from memresolve._dataset._publish import MANIFEST_KEY, MARKER
from memresolve.testing.batch_store import generate
from story import NOW

pytestmark = pytest.mark.skipif(
    mr.backend_name() != "native", reason="the dataset jobs run on the compiled core"
)

STORE = generate(400, seed=3)
JOBS = ("batch", "normalize", "forget-sweep")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store as Parquet directories: ``records/``, ``contexts/``, ``tombstones/``."""
    root = tmp_path / "store"
    for name in ("records", "contexts", "tombstones"):
        (root / name).mkdir(parents=True)
        pq.write_table(getattr(STORE, name), root / name / "part-0.parquet")
    return root


def _run(job: str, store: Path, output: Any, **options: Any) -> object:
    records, tombstones = store / "records", store / "tombstones"
    if job == "batch":
        return mr.resolve_dataset(
            records, store / "contexts", output, tombstones=tombstones, **options
        )
    if job == "normalize":
        return mr.normalize_dataset(records, output, now=NOW, tombstones=tombstones, **options)
    return mr.forget_sweep_dataset(records, output, tombstones=tombstones, **options)


def _digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` and a hash of its bytes (symbolic links not followed)."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


#: How an output can be, hold or lie inside an input, spelled every way a path can be.
OVERLAPS: dict[str, Callable[[Path], Path]] = {
    "the input directory": lambda store: store / "records",
    "an input file": lambda store: store / "records" / "part-0.parquet",
    "the parent of the inputs": lambda store: store,
    "the grandparent": lambda store: store.parent,
    "inside an input directory": lambda store: store / "records" / "out",
    "through ..": lambda store: store / "contexts" / ".." / "records",
    "relative": lambda store: Path(os.path.relpath(store / "records")),
    "a symbolic link to it": lambda store: _link(store.parent / "link", store / "records"),
    "under a symbolic link": lambda store: _link(store.parent / "alias", store) / "records",
    "a trailing slash": lambda store: Path(f"{store / 'tombstones'}/"),
}


def _link(link: Path, target: Path) -> Path:
    if not link.is_symlink():
        link.symlink_to(target)
    return link


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize("overlap", OVERLAPS)
def test_regression_overwrite_never_replaces_an_input(
    job: str, overlap: str, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out`` onto an input, its directory or a parent of it, with ``--overwrite``,
    replaced the input with the output."""
    monkeypatch.chdir(tmp_path)
    before = _digest(store)
    spill = tmp_path / "spill"
    spill.mkdir()
    read: list[str] = []
    with pytest.raises(mr.InvalidInputError) as caught:
        _run(
            job,
            store,
            OVERLAPS[overlap](store),
            overwrite=True,
            spill_directory=spill,
            progress=lambda stage, done, total: read.append(stage),
        )
    assert caught.value.where()[:2] == (mr.ErrorKind.INCONSISTENT, "output")
    assert "input" in str(caught.value)
    assert _digest(store) == before
    assert read == [], "refused before anything was read"
    assert list(spill.iterdir()) == [], "nor spilled"


@pytest.mark.parametrize("where", ["is", "holds", "inside"])
def test_an_output_is_never_the_spill_directory_or_around_it(
    where: str, store: Path, tmp_path: Path
) -> None:
    spill = tmp_path / "spill" / "here"
    spill.mkdir(parents=True)
    (spill / "keep.txt").write_text("mine")
    output = {"is": spill, "holds": spill.parent, "inside": spill / "out"}[where]
    with pytest.raises(mr.InvalidInputError) as caught:
        _run("batch", store, output, overwrite=True, spill_directory=spill)
    assert caught.value.field == "output"
    assert "spill directory" in str(caught.value)
    assert (spill / "keep.txt").read_text() == "mine"


def test_the_default_spill_directory_is_refused_as_an_output(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The temporary directory is a sandbox of this test's: should the check ever regress,
    # the job replaces the sandbox, not the machine's /tmp (the code before the check did).
    sandbox = tmp_path / "machine" / "tmp"
    sandbox.mkdir(parents=True)
    (sandbox / "someone-elses.txt").write_text("theirs")
    monkeypatch.setattr(tempfile, "tempdir", str(sandbox))
    assert tempfile.gettempdir() == str(sandbox)
    for output in (sandbox, sandbox.parent):
        with pytest.raises(mr.InvalidInputError) as caught:
            _run("forget-sweep", store, output, overwrite=True)
        assert caught.value.field == "output"
        assert "temporary directory" in str(caught.value)
    assert (sandbox / "someone-elses.txt").read_text() == "theirs"


def test_regression_normalize_in_place_exits_2_and_keeps_the_store(store: Path) -> None:
    """``memresolve normalize store/records --out store/records --overwrite`` reads like
    "normalise in place", and replaced the store with a table of status changes."""
    before = _digest(store)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "memresolve", "normalize", str(store / "records")),
            *("--now", NOW.isoformat(), "--out", str(store / "records"), "--overwrite"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "records input" in done.stderr
    assert _digest(store) == before


def _users_directory(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "nested").mkdir(parents=True)
    (data / "notes.txt").write_text("mine")
    (data / "nested" / "part-00000.parquet").write_bytes(b"not an output of a job")
    return data


@pytest.mark.parametrize(
    "existing",
    [
        "a user's directory",
        "an empty directory",
        "a file",
        "an older memresolve's output",
        "an output with a file added",
        "an output with a file changed",
        "an output with a subdirectory added",
        "a symbolic link to an output",
        "a marker that lists a path outside",
        "a marker that is not Parquet",
    ],
)
def test_overwrite_replaces_only_what_a_job_wrote(
    existing: str, store: Path, tmp_path: Path
) -> None:
    output = tmp_path / "out"
    if existing == "a user's directory":
        output = _users_directory(tmp_path)
    elif existing == "an empty directory":
        output.mkdir()
    elif existing == "a file":
        output.write_text("mine")
    else:
        _run("forget-sweep", store, output)
        if existing == "an older memresolve's output":
            (output / MARKER).unlink()
        elif existing == "an output with a file added":
            (output / "notes.txt").write_text("mine")
        elif existing == "an output with a file changed":
            with (output / "part-00000.parquet").open("ab") as part:
                part.write(b"mine")
        elif existing == "an output with a subdirectory added":
            (output / "mine").mkdir()
        elif existing == "a symbolic link to an output":
            output = _link(tmp_path / "link", output)
        elif existing == "a marker that lists a path outside":
            (tmp_path / "precious.txt").write_text("mine")
            _rewrite_manifest(output, {"../precious.txt": 4})
        else:
            (output / MARKER).write_bytes(b"PAR1 not really")
    before = _digest(tmp_path)
    with pytest.raises(mr.InvalidInputError) as caught:
        _run("normalize", store, output, overwrite=True)
    assert caught.value.where()[:2] == (mr.ErrorKind.INCONSISTENT, "output")
    assert "rm -r" in str(caught.value), "says how to remove it by hand"
    assert _digest(tmp_path) == before
    assert os.path.lexists(output)


def _rewrite_manifest(output: Path, files: dict[str, int]) -> None:
    import json  # noqa: PLC0415

    marker = pq.read_table(output / MARKER)
    manifest = json.loads(marker.schema.metadata[MANIFEST_KEY])
    manifest["files"] = {**manifest["files"], **files}
    metadata = {**marker.schema.metadata, MANIFEST_KEY: json.dumps(manifest).encode()}
    pq.write_table(marker.replace_schema_metadata(metadata), output / MARKER)


@pytest.mark.parametrize("job", JOBS)
def test_overwrite_replaces_an_output_of_any_job(job: str, store: Path, tmp_path: Path) -> None:
    output = tmp_path / "out"
    for earlier in JOBS:
        _run(earlier, store, output, overwrite=True)
        _run(job, store, output, overwrite=True)
    names = sorted(p.name for p in output.iterdir())
    assert MARKER in names
    assert all(name == MARKER or name.startswith("part-") for name in names)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "store"], "nothing left aside"


def test_the_marker_is_invisible_to_dataset_readers(store: Path, tmp_path: Path) -> None:
    summary = _run("batch", store, tmp_path / "out", include_excluded=True)
    rows = sum(summary.rows.values())  # type: ignore[attr-defined]
    assert pq.read_table(tmp_path / "out").num_rows == rows
    assert pl.scan_parquet(tmp_path / "out").collect().height == rows
    marker = pq.read_table(tmp_path / "out" / MARKER)
    assert marker.num_rows == 0
    assert marker.schema.remove_metadata() == pq.read_schema(
        tmp_path / "out" / "part-00000.parquet"
    )


def _swap(output: Path, replacement: Callable[[], None]) -> Callable[[str, int, int | None], None]:
    """A progress callback that, once the job reads, moves ``output`` away and puts
    ``replacement()`` in its place: a path swapped after the job checked it."""
    swapped: list[bool] = []

    def progress(stage: str, done: int, total: int | None) -> None:
        if not swapped:
            output.rename(output.with_name("moved"))
            replacement()
            swapped.append(True)

    return progress


@pytest.mark.parametrize("swapped_in", ["a symbolic link to a user's directory", "a directory"])
def test_regression_an_output_swapped_during_the_job_is_put_back_not_replaced(
    swapped_in: str, store: Path, tmp_path: Path
) -> None:
    output = tmp_path / "out"
    _run("batch", store, output)
    data = _users_directory(tmp_path)
    before = _digest(data)

    def replace() -> None:
        if swapped_in == "a directory":
            data.rename(output)
        else:
            output.symlink_to(data)

    with pytest.raises(mr.InvalidInputError) as caught:
        _run("batch", store, output, overwrite=True, progress=_swap(output, replace))
    assert caught.value.field == "output"
    if swapped_in == "a directory":
        assert _digest(output) == before
    else:
        assert output.is_symlink()
        assert _digest(data) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_the_readme_demo_command_runs_on_a_fresh_machine_and_again(tmp_path: Path) -> None:
    """``make demo`` runs ``memresolve batch ... --out target/story-decisions --overwrite``:
    on a checkout where the output does not exist yet, and again over its own output."""
    story = Path(mr.__file__).parent / "_data" / "story"
    command = [
        *(sys.executable, "-m", "memresolve", "batch"),
        *(str(story / "records.parquet"), str(story / "contexts.parquet")),
        *("--tombstones", str(story / "tombstones.parquet"), "--include-excluded"),
        *("--with-values", "--out", "target/story-decisions", "--overwrite"),
    ]
    (tmp_path / "target").mkdir()
    for _ in range(2):
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert "wrote target/story-decisions: 16 active" in done.stdout
    assert sorted(p.name for p in (tmp_path / "target").iterdir()) == ["story-decisions"]
