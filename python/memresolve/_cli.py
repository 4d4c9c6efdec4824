"""The ``memresolve`` command: resolve JSON Lines files, or the bundled story (``demo``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TextIO

from memresolve._api import resolve
from memresolve._backend import backend_name
from memresolve._inputs import ForgetTombstone, RetrievalContext
from memresolve._jsonl import context_to_json, read_contexts, read_records, read_tombstones
from memresolve._records import MemoryRecord
from memresolve._result import Resolution
from memresolve._version import __version__
from memresolve.errors import InvalidInputError

STORY = resources.files("memresolve") / "_data" / "story"


def _describe(context: RetrievalContext) -> str:
    scene = context.scene_id if context.scene_id is not None else "(none)"
    return (
        f"now {context.now.isoformat()} | user {context.user_id} | character "
        f"{context.character_id} | conversation {context.conversation_id} | scene {scene}"
    )


def _print_text(
    out: TextIO, number: int, total: int, context: RetrievalContext, result: Resolution
) -> None:
    out.write(f"Context {number} of {total}: {_describe(context)}\n")
    out.write(f"  active ({len(result.active)}), as the prompt will see them:\n")
    for record, memory in zip(result.active, result.prompt_memories(), strict=True):
        out.write(f"    {memory.key:<24} {memory.certainty:<10} {memory.value!r}  [{record.id}]\n")
    out.write(f"  excluded ({len(result.excluded)}):\n")
    for exclusion in result.excluded:
        out.write(f"    {exclusion.id:<24} {exclusion.reason}\n")
    out.write(f"  trace: {result.trace.as_log_line()}\n\n")


def _json_line(context: RetrievalContext, result: Resolution) -> str:
    return json.dumps(
        {
            "context": context_to_json(context),
            "active": [
                {
                    "id": record.id,
                    "key": memory.key,
                    "value": memory.value,
                    "certainty": memory.certainty.value,
                }
                for record, memory in zip(result.active, result.prompt_memories(), strict=True)
            ],
            "excluded": [{"id": e.id, "reason": e.reason.value} for e in result.excluded],
            "trace": result.trace.as_dict(),
        },
        ensure_ascii=False,
    )


def run(
    records: Sequence[MemoryRecord],
    contexts: Sequence[RetrievalContext],
    tombstones: Sequence[ForgetTombstone],
    *,
    output_format: str,
    out: TextIO,
) -> None:
    """Resolve ``records`` in every context and print each decision."""
    if output_format == "text":
        out.write(
            f"memresolve {__version__} ({backend_name()} backend): {len(records)} records, "
            f"{len(tombstones)} tombstones, {len(contexts)} contexts\n\n"
        )
    for number, context in enumerate(contexts, start=1):
        result = resolve(records, context, tombstones=tombstones)
        if output_format == "json":
            out.write(_json_line(context, result) + "\n")
        else:
            _print_text(out, number, len(contexts), context, result)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memresolve", description="Decide which stored memories are true now."
    )
    parser.add_argument("--version", action="version", version=f"memresolve {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="resolve the bundled example story")
    demo.add_argument("--format", choices=("text", "json"), default="text")

    files = commands.add_parser("resolve", help="resolve JSON Lines files")
    files.add_argument("records", type=Path, help="records, one JSON object per line")
    files.add_argument("--contexts", type=Path, required=True, help="retrieval contexts (JSONL)")
    files.add_argument("--tombstones", type=Path, help="forget tombstones (JSONL)")
    files.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memresolve`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "demo":
            with resources.as_file(STORY) as story:
                records = read_records(story / "records.jsonl")
                contexts = read_contexts(story / "contexts.jsonl")
                tombstones = read_tombstones(story / "tombstones.jsonl")
        else:
            records = read_records(args.records)
            contexts = read_contexts(args.contexts)
            tombstones = read_tombstones(args.tombstones) if args.tombstones else []
        run(records, contexts, tombstones, output_format=args.format, out=sys.stdout)
    except InvalidInputError as exc:
        sys.stderr.write(f"memresolve: invalid input: {exc}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"memresolve: {exc}\n")
        return 2
    return 0
