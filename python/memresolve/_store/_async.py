"""The asyncio twins of ``MemoryStore``'s methods: each runs its synchronous method on a
worker thread, so that SQLite and the resolver never block the event loop.

Cancelling a twin cannot stop a worker thread that has started. So a twin cancelled
before its call started never runs it, and one cancelled while its call runs waits for
the call to end before ``CancelledError`` reaches the caller: a cancelled write has then
either committed whole or not run at all, never still in flight (``docs/store.md``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from memresolve.errors import InternalError

__all__ = ["in_thread"]

_Self = TypeVar("_Self")
_P = ParamSpec("_P")
_R = TypeVar("_R")


class _NotRun:
    """What a worker returns for a call cancelled before it started."""


_NOT_RUN = _NotRun()


def in_thread(
    method: Callable[Concatenate[_Self, _P], _R],
) -> Callable[Concatenate[_Self, _P], Coroutine[Any, Any, _R]]:
    """The asyncio twin of a store method: the same call, run on a worker thread."""

    @functools.wraps(method)
    async def twin(self: _Self, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        phase_lock = threading.Lock()
        phase = ["queued"]

        def run() -> _R | _NotRun:
            with phase_lock:
                if phase[0] == "cancelled":
                    return _NOT_RUN
                phase[0] = "running"
            return method(self, *args, **kwargs)

        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        call = loop.run_in_executor(None, functools.partial(context.run, run))
        try:
            result = await asyncio.shield(call)
        except asyncio.CancelledError:
            with phase_lock:
                started = phase[0] == "running"
                phase[0] = "cancelled" if not started else phase[0]
            if started:
                await _until_done(call)
            raise
        if isinstance(result, _NotRun):  # run() saw a cancellation this task did not get
            raise InternalError("a store call ran after its awaiting task was cancelled")
        return result

    twin.__doc__ = (
        f"``{method.__name__}`` on a worker thread, awaited. Cancelled before the call "
        "starts, it never runs; cancelled while it runs, it waits for the call to end."
    )
    return twin


async def _until_done(call: asyncio.Future[Any]) -> None:
    """Waits for ``call`` to end, however often the waiting task is cancelled meanwhile."""
    while not call.done():
        try:
            await asyncio.wait({call})
        except asyncio.CancelledError:
            continue
    if not call.cancelled():
        call.exception()  # retrieved: the caller gets the cancellation, not this
