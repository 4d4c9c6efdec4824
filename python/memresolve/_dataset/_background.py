"""Work the batch jobs hand to one other thread, so that reading, routing and writing overlap.

Decoding Parquet, writing spill batches and writing Parquet all run in
pyarrow's C++ with the GIL released, as does the native router: on the jobs'
single main thread they ran one after another, leaving a core idle. Each
helper here runs its calls on one thread, in the order given, with a bounded
number waiting (so memory stays bounded), and hands any failure back to the
caller at the point where it would have surfaced without the thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["InOrder", "read_ahead", "shut_down"]

T = TypeVar("T")

_END: Any = object()


def shut_down(executor: ThreadPoolExecutor) -> None:
    """Drops the calls ``executor`` has not started and waits for the one running, even
    through Ctrl-C or whatever a host's signal handler raises (``SystemExit`` on SIGTERM,
    say): the files it writes must be closed before the caller removes their directory.
    The first such exception received while waiting is raised once the thread is done."""
    interrupted: BaseException | None = None
    while True:
        try:
            executor.shutdown(wait=True, cancel_futures=True)
        except BaseException as error:  # raised below, once the thread is done
            interrupted = interrupted or error
            continue
        break
    if interrupted is not None:
        raise interrupted


@contextmanager
def read_ahead(items: Iterator[T], depth: int = 2) -> Iterator[Iterator[T]]:
    """``items``, with up to ``depth`` of them produced ahead on another thread.

    Items come in their order; an exception ``items`` raises comes where it
    was raised among them. Leaving the block (done, failed or interrupted)
    waits for the item being produced, drops the rest and closes ``items``
    on this thread.
    """
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memresolve-read")

    def produce() -> Any:
        return next(items, _END)

    def consume() -> Iterator[T]:
        pending = deque(executor.submit(produce) for _ in range(max(1, depth)))
        while True:
            item = pending.popleft().result()
            if item is _END:
                return
            pending.append(executor.submit(produce))
            yield item

    try:
        yield consume()
    finally:
        shut_down(executor)
        close = getattr(items, "close", None)
        if close is not None:
            close()


class InOrder:
    """Calls run one after another on one thread, in the order submitted.

    At most ``depth`` wait at a time, holding at most ``max_weight`` between them (each
    call's ``weight``: the bytes it keeps alive until it runs); ``submit`` blocks until
    the oldest is done when more would. The first failure is raised by the next
    ``submit`` or by ``wait``; the calls queued after it are dropped.
    """

    def __init__(self, name: str, depth: int = 4, max_weight: int | None = None) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"memresolve-{name}")
        self._depth = max(1, depth)
        self._max_weight = max_weight
        self._pending: deque[tuple[Future[Any], int]] = deque()
        self._weight = 0

    def submit(self, call: Callable[..., Any], *arguments: Any, weight: int = 0) -> None:
        while self._pending and (
            len(self._pending) >= self._depth
            or self._pending[0][0].done()
            or (self._max_weight is not None and self._weight + weight > self._max_weight)
        ):
            self._settle_oldest()
        self._pending.append((self._executor.submit(call, *arguments), weight))
        self._weight += weight

    def wait(self) -> None:
        """Returns once every call submitted is done; raises the first failure."""
        while self._pending:
            self._settle_oldest()

    def close(self) -> None:
        """Drops the calls not started and waits for the one running (failures are dropped:
        call ``wait`` first to see them)."""
        self._drop_pending()
        shut_down(self._executor)

    def _settle_oldest(self) -> None:
        oldest, weight = self._pending.popleft()
        self._weight -= weight
        try:
            oldest.result()
        except BaseException:
            self._drop_pending()
            raise

    def _drop_pending(self) -> None:
        for future, _ in self._pending:
            future.cancel()
        self._pending.clear()
        self._weight = 0
