"""The lines of a JSON Lines source, read one at a time in bounded memory.

A line is read with ``readline(MAX_LINE_BYTES + 1)``, never whole: a line longer than the
limit (an endless one included) is ``InvalidInputError`` (``out-of-range``) naming its
line number as soon as the limit is passed, where reading it whole grew memory until a
``MemoryError`` traceback. The limit counts the bytes of a file's line (UTF-8, its line
ending excluded), or the characters of a text stream's; it is far above any record (a
record's text is a memory, not a document) and keeps one line's parse within a few times
its size. An iterable of lines without ``readline`` (a list of strings) is already in the
caller's memory: its lines are held to the same limit.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator
from typing import IO, TypeAlias

from memresolve._model import arguments
from memresolve.errors import ErrorKind, InvalidInputError

__all__ = ["MAX_LINE_BYTES", "Source", "numbered_lines"]

#: The longest line a JSON Lines reader takes: 16 MiB (bytes in a file, characters from a
#: text stream), its line ending excluded.
MAX_LINE_BYTES = 16 * 2**20

Source: TypeAlias = str | os.PathLike[str] | IO[str]


def _too_long(name: str, number: int) -> InvalidInputError:
    return InvalidInputError(
        f"{name} line {number}: longer than {MAX_LINE_BYTES:,} bytes, the most a JSON Lines"
        " line may hold",
        kind=ErrorKind.OUT_OF_RANGE,
        line=number,
    )


def _checked_length(line: str | bytes, name: str, number: int) -> None:
    """Refuses a line longer than the limit (read with ``readline(MAX_LINE_BYTES + 1)``: a
    line cut at the limit is one unit too long, with no newline)."""
    newline = "\n" if isinstance(line, str) else b"\n"
    if len(line) - line.endswith(newline) > MAX_LINE_BYTES:  # type: ignore[arg-type]
        raise _too_long(name, number)


def _file_lines(path: str | os.PathLike[str], field: str) -> Iterator[tuple[str, int, str]]:
    # Decoded line by line, so that a bad byte is reported on its own line.
    with arguments.path(path, field).open("rb") as raw:
        number = 0
        while data := raw.readline(MAX_LINE_BYTES + 1):
            number += 1
            _checked_length(data, str(path), number)
            try:
                yield str(path), number, data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInputError(
                    f"{path} line {number}: not valid UTF-8 ({exc.reason})",
                    kind=ErrorKind.INVALID_UNICODE,
                    line=number,
                ) from None


def _next_line(lines: Iterator[object], stream: io.IOBase | None, name: str, number: int) -> object:
    """The next line of a stream (read bounded where it is a standard stream), or None at
    its end; a decoding error is the line's."""
    try:
        if stream is not None:
            line = stream.readline(MAX_LINE_BYTES + 1)
            return line or None
        return next(lines, None)
    except UnicodeDecodeError as exc:  # the stream decodes ahead, in chunks
        raise InvalidInputError(
            f"{name} after line {number}: not valid UTF-8 ({exc.reason})",
            kind=ErrorKind.INVALID_UNICODE,
            line=number + 1,
        ) from None


def numbered_lines(source: Source, field: str = "source") -> Iterator[tuple[str, int, str]]:
    """(file name, 1-based line number, text) of every line; undecodable bytes and lines
    over ``MAX_LINE_BYTES`` are errors naming the line."""
    if isinstance(source, str | os.PathLike):
        yield from _file_lines(source, field)
        return
    if isinstance(source, bytes) or not isinstance(source, Iterable):
        raise InvalidInputError(
            f"{field}: expected a path or a text stream, got {type(source).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field=field,
        )
    name = getattr(source, "name", "<stream>")
    name = name if isinstance(name, str) else "<stream>"
    # A standard stream (an open file, StringIO) is read a bounded line at a time; any
    # other iterable of lines by iterating it, as it always was.
    stream = source if isinstance(source, io.IOBase) else None
    lines: Iterator[object] = iter(()) if stream is not None else iter(source)
    number = 0
    while (line := _next_line(lines, stream, name, number)) is not None:
        number += 1
        if not isinstance(line, str):
            raise InvalidInputError(
                f"{name} line {number}: expected text (str), got {type(line).__name__};"
                " open the file in text mode",
                kind=ErrorKind.WRONG_TYPE,
                field=field,
                line=number,
            )
        _checked_length(line, name, number)
        yield name, number, line
