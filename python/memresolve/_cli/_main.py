"""The ``memresolve`` command: resolve JSON Lines files, the bundled story (``demo``), or a
whole store file to file (``batch``, in ``_batch``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TextIO

from memresolve._backend import backend_name
from memresolve._cli import _batch, _jobs
from memresolve._cli._stops import EXIT_BROKEN_PIPE, quiet_stdout, stop_signals
from memresolve._cli._store_demo import run_store_demo
from memresolve._engine import resolve
from memresolve._io import (
    context_to_json,
    read_contexts,
    read_records,
    read_tombstones,
)
from memresolve._model import (
    ForgetTombstone,
    MemoryRecord,
    Resolution,
    RetrievalContext,
    instant_from_text,
    positional_context_id,
)
from memresolve._version import __version__
from memresolve.errors import ErrorKind, InvalidInputError

STORY = resources.files("memresolve") / "_data" / "story"


def _describe(context: RetrievalContext) -> str:
    shown = {k: "(none)" if v is None else v for k, v in context_to_json(context).items()}
    return (
        f"now {shown['now']} | user {shown['user_id']} | character {shown['character_id']}"
        f" | conversation {shown['conversation_id']} | scene {shown['scene_id']}"
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


def _json_line(context_id: str, context: RetrievalContext, result: Resolution) -> str:
    return json.dumps(
        {
            "context_id": context_id,
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
    contexts: Sequence[tuple[str, RetrievalContext]],
    tombstones: Sequence[ForgetTombstone],
    *,
    output_format: str,
    out: TextIO,
) -> None:
    """Resolve ``records`` in every context and print each decision (as JSON Lines, one
    line per context with its ``context_id``, for ``json``)."""
    if output_format == "text":
        counts = ", ".join(
            _count(len(items), noun)
            for items, noun in (
                (records, "record"),
                (tombstones, "tombstone"),
                (contexts, "context"),
            )
        )
        out.write(f"memresolve {__version__} ({backend_name()} backend): {counts}\n\n")
    for number, (context_id, context) in enumerate(contexts, start=1):
        result = resolve(records, context, tombstones=tombstones)
        if output_format == "json":
            out.write(_json_line(context_id, context, result) + "\n")
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
    demo.add_argument(
        "--path",
        action="store_true",
        help="print the folder of the bundled story's files (JSON Lines and Parquet) and stop,"
        " so that shell examples can use them from an installed package",
    )
    demo.add_argument(
        "--store",
        type=Path,
        metavar="FILE",
        help="keep the story in a MemoryStore file (replacing only an earlier demo's), forget "
        "through it, and show that the forgotten text left the file",
    )

    files = commands.add_parser(
        "resolve",
        help="resolve JSON Lines files",
        description="Resolve the records of a JSON Lines file in each context of --contexts,"
        " or in the one context --now and --user describe.",
    )
    files.add_argument("records", type=Path, help="records, one JSON object per line")
    files.add_argument("--contexts", type=Path, help="retrieval contexts (JSONL)")
    files.add_argument("--tombstones", type=Path, help="forget tombstones (JSONL)")
    query = files.add_argument_group(
        "one context, instead of --contexts",
        "Without --character or --conversation, no record of a character or conversation"
        " scope is in scope; without --scene, no scene record is.",
    )
    query.add_argument("--now", help="the instant, ISO-8601 with an offset (2026-07-30T12:00Z)")
    query.add_argument("--user", help="the user id")
    query.add_argument("--character", help="the character id")
    query.add_argument("--conversation", help="the conversation id")
    query.add_argument("--scene", help="the scene id")
    files.add_argument("--format", choices=("text", "json"), default="text")
    files.add_argument("--json", action="store_true", help="the same as --format json")
    _batch.add_parser(commands)
    _jobs.add_parsers(commands)
    return parser


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


_QUERY_OPTIONS = ("now", "user", "character", "conversation", "scene")


def _query_context(args: argparse.Namespace) -> RetrievalContext:
    """The one context of ``--now``/``--user``/... (both are required)."""
    if args.scene is not None and args.conversation is None:
        raise InvalidInputError(
            "resolve: --scene needs --conversation (a scene belongs to one conversation)",
            kind=ErrorKind.INCONSISTENT,
            field="scene",
        )
    if args.now is None or args.user is None:
        raise InvalidInputError(
            "resolve: give --contexts FILE, or --now and --user (and optionally --character,"
            " --conversation, --scene) for one context",
            kind=ErrorKind.MISSING,
            field="now" if args.now is None else "user",
        )
    return RetrievalContext(
        now=instant_from_text(args.now, "now"),
        user_id=args.user,
        # An empty id given is refused (empty), as every id; an absent one is None.
        character_id=args.character,
        conversation_id=args.conversation,
        scene_id=args.scene,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memresolve`` command; returns the exit status.

    0 done; 2 bad input or usage; 1 anything else, a stop by Ctrl-C, SIGTERM or SIGHUP
    included; 141 when standard output's reader went away (``_stops``)."""
    with stop_signals():
        try:
            status = _command(argv)
            sys.stdout.flush()  # a closed pipe shows here, when the output was short
        except BrokenPipeError:
            quiet_stdout()
            return EXIT_BROKEN_PIPE
        except KeyboardInterrupt as stop:  # outside a job, which reports its own stop
            sys.stderr.write(f"memresolve: {str(stop) or 'interrupted'}\n")
            return 1
    return status


def _print_story_path(out: TextIO, err: TextIO) -> int:
    """The story's folder, as a path the shell can use: it exists only where the package is
    installed as files (always, for a wheel or a checkout; never from a zip archive)."""
    story = Path(str(STORY))
    if not (story / "records.jsonl").is_file():
        err.write(f"memresolve: the bundled story is not a folder on disk here ({STORY})\n")
        return 1
    out.write(f"{story}\n")
    return 0


def _command(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "batch" or args.command in _jobs.COMMANDS:
        run_job = _batch.run if args.command == "batch" else _jobs.run
        return run_job(args, sys.stdout, sys.stderr)
    if args.command == "demo" and args.path:
        return _print_story_path(sys.stdout, sys.stderr)
    try:
        if args.command == "demo":
            with resources.as_file(STORY) as story:
                records = read_records(story / "records.jsonl")
                contexts = read_contexts(story / "contexts.jsonl", with_ids=True)
                tombstones = read_tombstones(story / "tombstones.jsonl")
            if args.store is not None:
                turns = [context for _, context in contexts]
                run_store_demo(args.store, records, turns, tombstones, sys.stdout)
                return 0
        else:
            records = read_records(args.records)
            if args.contexts is not None:
                given = [name for name in _QUERY_OPTIONS if getattr(args, name) is not None]
                if given:
                    raise InvalidInputError(
                        f"resolve: --contexts and --{given[0]} are alternatives; give one",
                        kind=ErrorKind.INCONSISTENT,
                        field=given[0],
                    )
                contexts = read_contexts(args.contexts, with_ids=True)
            else:
                contexts = [(positional_context_id(0), _query_context(args))]
            tombstones = read_tombstones(args.tombstones) if args.tombstones else []
        output_format = "json" if getattr(args, "json", False) else args.format
        run(records, contexts, tombstones, output_format=output_format, out=sys.stdout)
    except InvalidInputError as exc:
        sys.stderr.write(f"memresolve: invalid input: {exc}\n")
        return 2
    except BrokenPipeError:
        raise  # standard output's reader went away: ``main`` ends quietly
    except OSError as exc:
        sys.stderr.write(f"memresolve: {exc}\n")
        return 2
    return 0
