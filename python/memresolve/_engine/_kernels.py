"""The kernels of the two backends, and the ones ``_backend`` chose for this process.

A kernel provides ``resolve`` (the whole public call) and ``resolve_rows`` (see
``memresolve._model._call``); a batch resolver provides ``resolve_batch``. Tests and
benchmarks take either backend's by name; the facade uses ``SELECTED`` and ``SELECTED_BATCH``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol, cast

from memresolve import _backend, _native_loader, reference
from memresolve._io import native_input
from memresolve._model import (
    ForgetTombstone,
    MemoryRecord,
    Prepared,
    RawResolution,
    Resolution,
    RetrievalContext,
    Status,
    check,
    check_records,
    check_tombstone_scope,
    checked_tombstones,
    not_a_context,
    record_rows,
    resolution_of_rows,
    resolve_with,
)
from memresolve.errors import (
    BackendUnavailableError,
    ErrorKind,
    InternalError,
    InvalidInputError,
)

__all__ = [
    "SELECTED",
    "SELECTED_BATCH",
    "SELECTED_STREAMED_BATCH",
    "BatchResolver",
    "Kernel",
    "NativeKernel",
    "Prepared",
    "ReferenceKernel",
    "StreamedBatchResolver",
    "get_backend",
    "get_batch_resolver",
    "get_streamed_batch_resolver",
]


class Kernel(Protocol):
    """What a backend provides to resolve one call.

    ``records`` are not checked yet: the kernel rejects a candidate that is not
    a ``MemoryRecord``, and two that share an id, with the errors of
    ``memresolve._model._records`` (``not_a_record_error``, ``duplicate_id_error``).
    The context and tombstones arrive checked.
    """

    @property
    def NAME(self) -> str: ...

    def resolve(
        self,
        records: Iterable[MemoryRecord],
        context: RetrievalContext,
        tombstones: Iterable[ForgetTombstone] | None,
    ) -> Resolution:
        """The whole ``memresolve.resolve`` call: the arguments checked as ``resolve_with``
        checks them, in the same order, with the same errors."""
        ...

    def resolve_rows(
        self,
        records: tuple[object, ...],
        context: RetrievalContext,
        tombstones: tuple[ForgetTombstone, ...],
    ) -> RawResolution: ...

    def prepare(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...]
    ) -> Prepared:
        """The candidates checked once (the same errors as ``resolve_rows``), to
        resolve in any number of contexts."""
        ...


class _ReferencePrepared:
    """The reference's prepared set: the candidates as given (what it answers with), and
    the records it decides on. They differ only after ``forgotten``: a stand-in has its
    message ids erased, so a candidate the messages it cited blocked would be blocked no
    more; it is decided as stored ``forgotten`` instead (an active record that a
    tombstone blocks is excluded, and bears its edge, exactly as one stored
    ``forgotten``), as the native set keeps a flag per row."""

    __slots__ = ("_deciding", "_tombstones", "records")

    def __init__(
        self,
        records: tuple[object, ...],
        tombstones: tuple[ForgetTombstone, ...],
        deciding: tuple[MemoryRecord, ...] | None = None,
    ) -> None:
        check_records(records)
        for row, tombstone in enumerate(tombstones):
            check_tombstone_scope(tombstone, row)
        self.records = cast("tuple[MemoryRecord, ...]", records)
        self._tombstones = tombstones
        self._deciding = self.records if deciding is None else deciding

    def extended(self, records: tuple[object, ...]) -> Prepared:
        added = cast("tuple[MemoryRecord, ...]", records)
        return _ReferencePrepared(
            (*self.records, *records), self._tombstones, (*self._deciding, *added)
        )

    def forgotten(
        self, tombstones: tuple[ForgetTombstone, ...], records: tuple[object, ...]
    ) -> Prepared:
        check_records(records)
        stand_ins = {record.id: record for record in cast("tuple[MemoryRecord, ...]", records)}
        replaced = tuple(stand_ins.pop(record.id, record) for record in self.records)
        if stand_ins or any(
            _read_by_resolution(old) != _read_by_resolution(new)
            for old, new in zip(self.records, replaced, strict=True)
        ):
            raise InternalError(
                "a stand-in record is no candidate's, or differs from it in what resolution reads"
            )
        every = (*self._tombstones, *tombstones)
        deciding = tuple(
            _decided_as_forgotten(new)
            if new is not old and _blocked_by_sources(decider, every)
            else (decider if new is old else new)
            for old, new, decider in zip(self.records, replaced, self._deciding, strict=True)
        )
        return _ReferencePrepared(replaced, every, deciding)

    def resolve_rows(self, context: RetrievalContext) -> RawResolution:
        raw = reference.resolve_rows(self._deciding, context, self._tombstones)
        if self._deciding is self.records:
            return raw
        row_of = {id(record): row for row, record in enumerate(self._deciding)}
        return raw._replace(active=tuple(self.records[row_of[id(r)]] for r in raw.active))


def _blocked_by_sources(record: MemoryRecord, tombstones: tuple[ForgetTombstone, ...]) -> bool:
    """Some tombstone on its key that reaches its scope holds a hash of a message it cites."""
    return record.status is Status.FORGOTTEN or any(
        tombstone.key == record.key
        and reference.reaches(tombstone, record.scope)
        and reference.cites_blocked_source(record, tombstone)
        for tombstone in tombstones
    )


def _decided_as_forgotten(stand_in: MemoryRecord) -> MemoryRecord:
    """What ``stand_in`` is decided as once its erased messages no longer block it: stored
    ``forgotten`` when it is stored ``active`` (any other status excludes it at stage 2,
    before stage 3)."""
    if stand_in.status is not Status.ACTIVE:
        return stand_in
    return dataclasses.replace(stand_in, status=Status.FORGOTTEN)


def _read_by_resolution(record: MemoryRecord) -> tuple[object, ...]:
    """The fields of ``record`` that resolution reads (``docs/spec.md`` §2): all but its text
    and confidence."""
    return (
        record.id,
        record.key,
        record.scope,
        record.status,
        record.authority,
        record.version,
        record.valid_from,
        record.valid_until,
        record.observed_at,
        record.supersedes,
    )


class ReferenceKernel:
    """The reference, ``memresolve.reference.resolve_rows``, as a ``Kernel``."""

    NAME: Final = reference.NAME

    def resolve(
        self,
        records: Iterable[MemoryRecord],
        context: RetrievalContext,
        tombstones: Iterable[ForgetTombstone] | None,
    ) -> Resolution:
        return resolve_with(reference.resolve_rows, records, context, tombstones)

    def resolve_rows(
        self,
        records: tuple[object, ...],
        context: RetrievalContext,
        tombstones: tuple[ForgetTombstone, ...],
    ) -> RawResolution:
        return reference.resolve_rows(records, context, tombstones)

    def prepare(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...]
    ) -> Prepared:
        return _ReferencePrepared(records, tombstones)


_reference_kernel: Kernel = ReferenceKernel()


class BatchResolver(Protocol):
    """``resolve_batch`` of a backend (see ``memresolve.resolve_batch``)."""

    def __call__(
        self,
        records: object,
        contexts: object,
        *,
        tombstones: object | None = None,
        include_excluded: bool = False,
        with_values: bool = False,
    ) -> Any: ...


class NativeKernel:
    """The Rust kernel, ``memresolve._native.resolve_rows``, as a ``Kernel``."""

    NAME: Final = "native"

    def __init__(self) -> None:
        native = _native_loader.load()
        self._resolve_rows = native.resolve_rows
        self._prepared = native.PreparedCandidates

    def resolve(
        self,
        records: Iterable[MemoryRecord],
        context: RetrievalContext,
        tombstones: Iterable[ForgetTombstone] | None,
    ) -> Resolution:
        # ``resolve_with`` flattened, for the per-turn call (it costs a tenth of a turn
        # at 200 candidates): the common types are recognised first, the checks and
        # their order are the same. The kernel itself checks that it accounted for
        # every candidate once.
        rows = tuple(records) if type(records) is list else record_rows(records)
        if type(context) is not RetrievalContext and not isinstance(context, RetrievalContext):
            raise not_a_context(context)
        if type(tombstones) is not tuple or tombstones:
            tombstones = checked_tombstones(tombstones)
        active, excluded_rows, excluded_codes = self._resolve_rows(rows, context, tombstones)
        return resolution_of_rows(rows, active, excluded_rows, excluded_codes)

    def resolve_rows(
        self,
        records: tuple[object, ...],
        context: RetrievalContext,
        tombstones: tuple[ForgetTombstone, ...],
    ) -> RawResolution:
        active, excluded_rows, excluded_codes = self._resolve_rows(records, context, tombstones)
        return RawResolution(active, memoryview(excluded_rows).cast("I"), excluded_codes)

    def prepare(
        self, records: tuple[object, ...], tombstones: tuple[ForgetTombstone, ...]
    ) -> Prepared:
        return _NativePrepared(self._prepared(records, tombstones))


class _NativePrepared:
    __slots__ = ("_prepared", "records")

    def __init__(self, prepared: Any) -> None:
        self._prepared = prepared
        self.records: tuple[MemoryRecord, ...] = prepared.records

    def extended(self, records: tuple[object, ...]) -> Prepared:
        return _NativePrepared(self._prepared.extended(records))

    def forgotten(
        self, tombstones: tuple[ForgetTombstone, ...], records: tuple[object, ...]
    ) -> Prepared:
        return _NativePrepared(self._prepared.forgotten(tombstones, records))

    def resolve_rows(self, context: RetrievalContext) -> RawResolution:
        active, excluded_rows, excluded_codes = self._prepared.resolve_rows(context)
        return RawResolution(active, memoryview(excluded_rows).cast("I"), excluded_codes)


def get_backend(name: str) -> Kernel:
    """The kernel called ``name`` (``native`` or ``reference``), for tests and benchmarks."""
    if name == "reference":
        return _reference_kernel
    if name == "native":
        return NativeKernel()
    raise BackendUnavailableError(f"unknown backend {name!r}; expected 'native' or 'reference'")


def _native_batch(resolve_batch: Callable[..., Any]) -> BatchResolver:
    """The native ``resolve_batch``, taking what has no Arrow interface of its own
    (a polars ``LazyFrame``) as a stream of its batches."""

    def run(
        records: object,
        contexts: object,
        *,
        tombstones: object | None = None,
        include_excluded: bool = False,
        with_values: bool = False,
    ) -> Any:
        return resolve_batch(
            native_input(records, "records"),
            native_input(contexts, "contexts"),
            tombstones=None if tombstones is None else native_input(tombstones, "tombstones"),
            include_excluded=check.flag(include_excluded, "include_excluded"),
            with_values=check.flag(with_values, "with_values"),
        )

    return run


class StreamedBatchResolver(Protocol):
    """``resolve_batch`` handing its result over as it is built: ``sink(table)`` is called
    with pyarrow tables in output order, each of about ``max_bytes`` or more (the last may
    be smaller); returns the rows handed over."""

    def __call__(
        self,
        records: object,
        contexts: object,
        sink: Callable[[Any], object],
        *,
        tombstones: object | None = None,
        include_excluded: bool = False,
        with_values: bool = False,
        max_bytes: int = ...,
    ) -> int: ...


def _reference_streamed(
    records: object,
    contexts: object,
    sink: Callable[[Any], object],
    *,
    tombstones: object | None = None,
    include_excluded: bool = False,
    with_values: bool = False,
    max_bytes: int = 64 << 20,
) -> int:
    """The reference's: it builds its whole result first (it is the specification, slow on
    purpose), then hands it over in one table."""
    _byte_count(max_bytes)
    if not callable(sink):
        raise InvalidInputError(
            f"sink: expected a callable, got {type(sink).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="sink",
        )
    result = reference.resolve_batch(
        records,
        contexts,
        tombstones=tombstones,
        include_excluded=include_excluded,
        with_values=with_values,
    )
    sink(result)
    return int(result.num_rows)


def _byte_count(value: object) -> int:
    """``max_bytes``: a positive ``int`` (``True`` is not a count), as the core checks it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            f"max_bytes: expected an int, got {type(value).__name__}",
            kind=ErrorKind.WRONG_TYPE,
            field="max_bytes",
        )
    if value < 1:
        raise InvalidInputError(
            "max_bytes: must be 1 or more",  # not echoed: a huge int cannot be printed
            kind=ErrorKind.OUT_OF_RANGE,
            field="max_bytes",
        )
    return value


def get_streamed_batch_resolver(name: str) -> StreamedBatchResolver:
    """The streamed ``resolve_batch`` of the backend called ``name`` (Arrow inputs only)."""
    if name == "reference":
        return _reference_streamed
    if name == "native":
        return cast(StreamedBatchResolver, _native_loader.load().resolve_batch_into)
    raise BackendUnavailableError(f"unknown backend {name!r}; expected 'native' or 'reference'")


def get_batch_resolver(name: str) -> BatchResolver:
    """The ``resolve_batch`` of the backend called ``name``, for tests and benchmarks."""
    if name == "reference":
        return reference.resolve_batch
    if name == "native":
        return _native_batch(_native_loader.load().resolve_batch)
    raise BackendUnavailableError(f"unknown backend {name!r}; expected 'native' or 'reference'")


SELECTED: Final[Kernel] = get_backend(_backend.NAME)
SELECTED_BATCH: Final[BatchResolver] = get_batch_resolver(_backend.NAME)
SELECTED_STREAMED_BATCH: Final[StreamedBatchResolver] = get_streamed_batch_resolver(_backend.NAME)
