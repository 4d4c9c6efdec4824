"""The memresolve command."""

from memresolve._cli._main import main

__all__ = ["main"]
