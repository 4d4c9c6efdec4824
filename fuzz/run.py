"""Runs one fuzz target under atheris: ``python fuzz/run.py TARGET [libFuzzer options]``.

Coverage comes from both sides: atheris instruments memresolve's Python modules as they are
imported, and the native extension must be built with sanitizer coverage (``make fuzz``
builds it so, into ``.venv-fuzz``, and preloads atheris's libFuzzer runtime, which the
instrumented extension calls into). See ``fuzz/targets.py`` for what each target checks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
with atheris.instrument_imports(include=["memresolve", "targets"]):
    import targets


def main() -> None:
    name, options = sys.argv[1], sys.argv[2:]
    atheris.Setup([sys.argv[0], *options], targets.TARGETS[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
