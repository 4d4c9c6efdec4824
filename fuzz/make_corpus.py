"""Writes the seed corpora of the fuzz targets (committed under ``fuzz/corpus``).

Run from the repository after ``make setup``: ``.venv/bin/python fuzz/make_corpus.py``.
Each seed is a valid input the fuzzer mutates from: Arrow IPC streams of the three tables
in several encodings (prefixed by the role byte the target reads), JSON Lines files of the
bundled story, and structured seeds for the pipeline target.
"""

from __future__ import annotations

import hashlib
import io
from importlib import resources
from pathlib import Path

import pyarrow as pa
from pyarrow import ipc

import memresolve as mr
from memresolve.testing.batch_store import generate

HERE = Path(__file__).resolve().parent


def _stream(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _save(target: str, data: bytes) -> None:
    directory = HERE / "corpus" / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def _encodings(table: pa.Table) -> list[pa.Table]:
    """The table as given, with dictionary-encoded strings, and as large strings."""
    dictionary = pa.table(
        {
            name: column.dictionary_encode() if pa.types.is_string(column.type) else column
            for name, column in zip(table.column_names, table.columns, strict=True)
        }
    )
    large = pa.table(
        {
            name: column.cast(pa.large_string()) if pa.types.is_string(column.type) else column
            for name, column in zip(table.column_names, table.columns, strict=True)
        }
    )
    return [table, dictionary, large]


def main() -> None:
    story = resources.files("memresolve") / "_data" / "story"
    with resources.as_file(story) as files:
        records = mr.read_records(files / "records.jsonl")
        contexts = mr.read_contexts(files / "contexts.jsonl")
        tombstones = mr.read_tombstones(files / "tombstones.jsonl")
        for name in ("records", "contexts", "tombstones"):
            _save("jsonl", (files / f"{name}.jsonl").read_bytes())
    small = generate(40, seed=3)
    tables = {
        0: [mr.records_to_arrow(records), small.records, small.records.slice(0, 3)],
        1: [mr.contexts_to_arrow([(f"c{n}", c) for n, c in enumerate(contexts)]), small.contexts],
        2: [mr.tombstones_to_arrow(tombstones), small.tombstones],
    }
    for role, found in tables.items():
        for table in found:
            for encoded in _encodings(table):
                _save("arrow", bytes([role]) + _stream(encoded))
    for seed in range(8):
        _save("pipeline", bytes((seed * 37 + n * 11) % 256 for n in range(64)))
        _save("record", bytes((seed * 53 + n * 7) % 256 for n in range(32)))


if __name__ == "__main__":
    main()
