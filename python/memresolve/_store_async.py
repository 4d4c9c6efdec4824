"""The asyncio twins of ``MemoryStore``'s methods: each runs its synchronous method on a
worker thread, so that SQLite and the resolver never block the event loop."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["in_thread"]

_Self = TypeVar("_Self")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def in_thread(
    method: Callable[Concatenate[_Self, _P], _R],
) -> Callable[Concatenate[_Self, _P], Coroutine[Any, Any, _R]]:
    """The asyncio twin of a store method: the same call, run on a worker thread."""

    @functools.wraps(method)
    async def twin(self: _Self, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    twin.__doc__ = f"``{method.__name__}`` on a worker thread, awaited."
    return twin
