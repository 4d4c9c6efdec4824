"""The memresolve command.

This is the wing's face: what other wings and the package use of it. Its modules are
private to it."""

from memresolve._cli._main import main

__all__ = [
    "main",
]
