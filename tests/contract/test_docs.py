"""The documentation holds: every example in the README, CONTRIBUTING.md and docs/ runs or
says why it cannot, its links resolve, every page is reachable from the README, and the
package's doctests pass.

The convention for fenced blocks, which this module enforces:

- ```` ```python ```` blocks run, each in a fresh namespace. They may not be marked.
- ```` ```sh ```` blocks run with ``bash -euo pipefail`` in a fresh temporary directory, with
  the environment's ``memresolve`` command on ``PATH``, and must exit 0. They use what an
  installed package offers (the bundled story through ``memresolve demo --path``), never the
  checkout's files. Other names for the shell (``bash``, ``console``, ...) are refused, so
  that one convention holds everywhere.
- ```` ```text ```` blocks are outputs: not run, and not marked.
- Any other block, and a shell block that cannot run in a test (a ``make`` target, ``pip
  install``, ``cargo``, a 10M-record job, a cluster), carries ``<!-- not run: why -->`` on the
  line right before its opening fence. Some are checked another way: every ``make X`` they
  (or inline code) name is a Makefile target, and the SQL schema shown is a new store's.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

import memresolve
from memresolve._model import _scopes

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MOST_LINES = 200

PYTHON = "python"
SHELL = "sh"
OUTPUT = "text"
OTHER_SHELLS = frozenset({"bash", "console", "shell", "shell-session", "zsh"})
# A shell block on a machine with no spare cores finishes within seconds; a minute means a hang.
SHELL_TIMEOUT_SECONDS = 120

MARKER = re.compile(r"<!--\s*not run:\s*(?P<why>\S.*?)\s*-->")
# CommonMark: an opening backtick fence's info string holds no backtick, so a line such as
# "```` ```text ```` blocks ..." is inline code, not a fence.
OPENING_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<language>[^`\s]*)[^`]*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a document."""

    document: Path
    line: int  # of the opening fence, counted from 1
    language: str
    body: str
    not_run: str | None  # the reason a marker on the line before the fence gives, if any

    def __str__(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def fenced_blocks(document: Path) -> list[Block]:
    lines = document.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = OPENING_FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening["fence"]
        closing_fence = re.compile(rf"^{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = index + 1
        while end < len(lines) and not closing_fence.match(lines[end]):
            end += 1
        assert end < len(lines), f"{document.name}:{index + 1}: a fence is never closed"
        marker = MARKER.fullmatch(lines[index - 1].strip()) if index > 0 else None
        found.append(
            Block(
                document=document,
                line=index + 1,
                language=opening["language"].lower(),
                body="\n".join(lines[index + 1 : end]) + "\n",
                not_run=marker["why"] if marker else None,
            )
        )
        index = end + 1
    return found


BLOCKS = [block for document in DOCUMENTS for block in fenced_blocks(document)]


def prose(document: Path) -> str:
    """The document without its fenced blocks, whose brackets and backticks are code."""
    lines = document.read_text(encoding="utf-8").splitlines()
    for block in fenced_blocks(document):
        fence_end = block.line + block.body.count("\n")
        lines[block.line - 1 : fence_end + 1] = [""] * (fence_end - block.line + 2)
    return "\n".join(lines)


# Examples ----------------------------------------------------------------------------------


@pytest.mark.parametrize("block", [block for block in BLOCKS if block.language == PYTHON], ids=str)
def test_python_examples_run(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    exec(compile(block.body, str(block), "exec"), {})


def _memresolve_on_path(scripts: Path) -> dict[str, str]:
    """The environment with ``scripts`` (a Python environment's scripts folder) first on
    PATH: the ``memresolve`` an installed package provides, whichever directory pytest
    started in. PYTHONPATH is left out, so that nothing reaches into this checkout."""
    assert (scripts / "memresolve").is_file(), f"no memresolve command in {scripts}"
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    return {**environment, "PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}"}


def _installations() -> dict[str, Path]:
    """Where the shell examples run: this environment (the package as the tests import it,
    editable in a checkout), and, where ``make test`` built one (CI), an environment with
    the wheel installed in it, as a user installs it: the examples must not need a checkout."""
    found = {"this-environment": Path(sys.executable).parent}
    wheel_python = os.environ.get("MEMRESOLVE_SPARK_PYTHON")
    if wheel_python:
        found["installed-wheel"] = Path(wheel_python).parent
    elif os.environ.get("MEMRESOLVE_REQUIRE_SPARK") == "1":
        raise AssertionError("CI runs the examples on the installed wheel too: set it up")
    return found


def test_the_installed_wheel_is_not_this_checkout() -> None:
    for name, scripts in _installations().items():
        done = subprocess.run(
            [scripts / "python", "-c", "import memresolve; print(memresolve.__file__)"],
            env=_memresolve_on_path(scripts),
            cwd=scripts,
            capture_output=True,
            text=True,
            check=True,
        )
        where = Path(done.stdout.strip()).resolve()
        if name == "installed-wheel":
            assert not where.is_relative_to(ROOT / "python"), where  # not the source tree
            assert "site-packages" in where.parts


@pytest.mark.parametrize("installation", list(_installations()))
@pytest.mark.parametrize(
    "block",
    [block for block in BLOCKS if block.language == SHELL and block.not_run is None],
    ids=str,
)
def test_shell_examples_run(block: Block, installation: str, tmp_path: Path) -> None:
    script = tmp_path / "example.sh"
    script.write_text(block.body, encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir()
    done = subprocess.run(
        ["bash", "-euo", "pipefail", str(script)],
        cwd=workdir,
        env=_memresolve_on_path(_installations()[installation]),
        capture_output=True,
        text=True,
        timeout=SHELL_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"{block} exited {done.returncode}:\n{done.stderr[-4000:]}"


def test_examples_use_no_checkout_files() -> None:
    """Examples work from an installed package: the bundled story is found by the command."""
    private = re.compile(r"memresolve[/\\.]_data|[\"']_data[\"']")
    for block in BLOCKS:
        assert not private.search(block.body), f"{block}: use `memresolve demo --path`"


def test_every_block_runs_or_says_why() -> None:
    problems = []
    for block in BLOCKS:
        if block.language in OTHER_SHELLS:
            problems.append(f"{block}: write shell blocks as ```{SHELL}")
        elif block.language in {PYTHON, OUTPUT}:
            if block.not_run is not None:
                problems.append(f"{block}: a {block.language} block is never marked not run")
        elif block.language != SHELL and block.not_run is None:
            problems.append(
                f"{block}: a ```{block.language} block runs nowhere; "
                "say why on the line before it: <!-- not run: why -->"
            )
    assert not problems, "\n".join(problems)


# Blocks checked another way ----------------------------------------------------------------


def makefile_targets() -> set[str]:
    targets: set[str] = set()
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        rule = re.match(r"^([A-Za-z0-9_.-][A-Za-z0-9_. -]*?)\s*:(?!=)", line)
        if rule and not rule[1].startswith("."):
            targets.update(rule[1].split())
    return targets


def make_targets_named(command: str) -> Iterator[str]:
    """The targets each ``make`` of a shell command line asks for (none: the default)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)  # drops # comments
    words: list[str] = []
    for token in [*lexer, ";"]:
        if not set(token) <= set(lexer.punctuation_chars):
            words.append(token)
            continue
        while words and "=" in words[0]:  # VAR=value make ...
            words.pop(0)
        if words and words[0] == "make":
            yield from (word for word in words[1:] if not word.startswith("-") and "=" not in word)
        words = []


def test_every_make_command_shown_is_a_makefile_target() -> None:
    targets = makefile_targets()
    named: dict[str, str] = {}
    for block in BLOCKS:
        if block.language == SHELL and block.not_run is not None:
            for command in block.body.replace("\\\n", " ").splitlines():
                named.update((target, str(block)) for target in make_targets_named(command))
    for document in DOCUMENTS:
        for span in re.findall(r"`(make\s[^`]+)`", prose(document)):
            named.update((target, document.name) for target in make_targets_named(span))
    assert {"demo", "test"} <= named.keys(), "the README's two commands are not found"
    unknown = {target: where for target, where in named.items() if target not in targets}
    assert not unknown, f"not targets of the Makefile: {unknown}"


def _canonical_sql(sql: str) -> str:
    """The statement without comments, and with the whitespace of its layout taken out."""
    sql = re.sub(r"--[^\n]*", "", sql)
    sql = re.sub(r"\s+", " ", sql)
    return re.sub(r"\s*([(),;])\s*", r"\1", sql).strip().rstrip(";")


def test_the_schema_shown_is_a_new_stores(tmp_path: Path) -> None:
    shown = [block for block in BLOCKS if block.language == "sql" and "CREATE TABLE" in block.body]
    assert shown, "no store schema found in the documents"
    path = tmp_path / "new.db"
    memresolve.MemoryStore(str(path)).close()
    with closing(sqlite3.connect(path)) as db:
        live = {
            name: _canonical_sql(sql)
            for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE sql NOT NULL")
        }
        (version,) = db.execute("PRAGMA user_version").fetchone()
    for block in shown:
        documented = {}
        for statement in _canonical_sql(block.body).split(";"):
            created = re.match(r"CREATE (?:TABLE|INDEX) (\w+)", statement)
            assert created, f"{block}: not a CREATE statement: {statement}"
            documented[created[1]] = statement
        assert documented == live, f"{block} differs from the schema of a new store"
        before = block.document.read_text(encoding="utf-8").splitlines()[: block.line]
        heading = next(line for line in reversed(before) if line.startswith("#"))
        assert f"(version {version})" in heading, (
            f"{block}: the store's schema is version {version}"
        )


# Links and pages ---------------------------------------------------------------------------


def heading_anchors(document: Path) -> set[str]:
    """The anchors GitHub gives the document's headings."""
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", prose(document), re.MULTILINE):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
        anchor = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        unique, repeat = anchor, 0
        while unique in anchors:
            repeat += 1
            unique = f"{anchor}-{repeat}"
        anchors.add(unique)
    return anchors


def links(document: Path) -> Iterator[tuple[Path, str]]:
    """Each relative link of the document, as the file it names and the anchor (or "")."""
    text = re.sub(r"`[^`\n]*`", "", prose(document))  # code spans are not links
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        yield (document.parent / path).resolve() if path else document, anchor


def test_documents_link_only_inside_the_repository() -> None:
    for document in DOCUMENTS:
        for target, anchor in links(document):
            assert target.is_relative_to(ROOT), (document.name, target)
            assert target.exists(), (document.name, target)
            if anchor and target.suffix == ".md":
                assert anchor in heading_anchors(target), (document.name, target.name, anchor)


def test_every_page_is_reachable_from_the_readme() -> None:
    reached, frontier = {README}, [README]
    while frontier:
        for target, _ in links(frontier.pop()):
            if target.suffix == ".md" and target.is_file() and target not in reached:
                reached.add(target)
                frontier.append(target)
    unreached = [document.relative_to(ROOT) for document in DOCUMENTS if document not in reached]
    assert not unreached, f"no chain of links from README.md reaches {unreached}"


def test_the_readme_is_an_entrance() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MOST_LINES, f"README.md has {lines} lines; move depth into docs/"


def test_docstring_examples_run() -> None:
    for module in (memresolve, _scopes):
        failures, tried = doctest.testmod(module)
        assert tried > 0
        assert failures == 0
