"""The background jobs' kernels (``docs/spec.md`` §7) of the two backends, and the
ones ``_backend`` chose for this process.

Per turn, a kernel takes the records (not checked yet: it rejects a
non-record and a repeated id, as ``resolve_rows`` does) and checked
tombstones, and gives ``(row, status)`` or ``(row, cause)`` pairs by row.
In batch it takes Arrow tables and gives a pyarrow table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Protocol

from memresolve import _backend, _native_loader, reference
from memresolve._io import native_input
from memresolve._model import ForgetTombstone, PurgeCause, Status, to_micros
from memresolve.errors import BackendUnavailableError

__all__ = ["SELECTED_JOBS", "Jobs", "get_jobs"]


class Jobs(Protocol):
    """Normalisation and the forget sweep, per turn and in batch, of one backend."""

    @property
    def NAME(self) -> str: ...

    def normalize_rows(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...], now: datetime
    ) -> list[tuple[int, Status]]: ...

    def purge_rows(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...]
    ) -> list[tuple[int, PurgeCause]]: ...

    def normalize_batch(
        self, records: object, *, now: datetime, tombstones: object | None = None
    ) -> Any: ...

    def forget_sweep_batch(self, records: object, tombstones: object | None = None) -> Any: ...


class ReferenceJobs:
    """The pure-Python jobs of ``memresolve.reference``."""

    NAME: Final = "reference"

    def normalize_rows(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...], now: datetime
    ) -> list[tuple[int, Status]]:
        return reference.normalize_rows(records, tombstones, now)

    def purge_rows(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...]
    ) -> list[tuple[int, PurgeCause]]:
        return reference.purge_rows(records, tombstones)

    def normalize_batch(
        self, records: object, *, now: datetime, tombstones: object | None = None
    ) -> Any:
        return reference.normalize_batch(records, now=now, tombstones=tombstones)

    def forget_sweep_batch(self, records: object, tombstones: object | None = None) -> Any:
        return reference.forget_sweep_batch(records, tombstones)


_STATUSES: Final = tuple(Status)
_CAUSES: Final = tuple(PurgeCause)


def _pairs(rows: bytes, codes: bytes, names: tuple[Any, ...]) -> list[tuple[int, Any]]:
    return [(row, names[code]) for row, code in zip(memoryview(rows).cast("I"), codes, strict=True)]


class NativeJobs:
    """The Rust jobs, ``memresolve._native``."""

    NAME: Final = "native"

    def __init__(self) -> None:
        self._native = _native_loader.load()

    def normalize_rows(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...], now: datetime
    ) -> list[tuple[int, Status]]:
        rows, codes = self._native.normalize_rows(records, tombstones, to_micros(now))
        return _pairs(rows, codes, _STATUSES)

    def purge_rows(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...]
    ) -> list[tuple[int, PurgeCause]]:
        rows, codes = self._native.purge_rows(records, tombstones)
        return _pairs(rows, codes, _CAUSES)

    def normalize_batch(
        self,
        records: object,
        *,
        now: datetime,
        tombstones: object | None = None,
        with_rows: bool = False,
    ) -> Any:
        return self._native.normalize_batch(
            native_input(records, "records"),
            now=to_micros(now),
            tombstones=None if tombstones is None else native_input(tombstones, "tombstones"),
            with_rows=with_rows,
        )

    def forget_sweep_batch(
        self, records: object, tombstones: object | None = None, *, with_rows: bool = False
    ) -> Any:
        return self._native.forget_sweep_batch(
            native_input(records, "records"),
            None if tombstones is None else native_input(tombstones, "tombstones"),
            with_rows=with_rows,
        )


def get_jobs(name: str) -> Jobs:
    """The jobs of the backend called ``name`` (``native`` or ``reference``)."""
    if name == "reference":
        return ReferenceJobs()
    if name == "native":
        return NativeJobs()
    raise BackendUnavailableError(f"unknown backend {name!r}; expected 'native' or 'reference'")


SELECTED_JOBS: Final[Jobs] = get_jobs(_backend.NAME)
