"""Salted hashes of source message ids: what a tombstone keeps of the messages a
forgotten value came from (``docs/spec.md`` §1.5).

A tombstone never holds message ids in clear: an unsalted hash of ``msg-123`` is
reversed by hashing guesses. Each tombstone has its own random salt, and holds
``sha256(salt bytes || 0x00 || UTF-8 message id)`` as lowercase hex. The same
message cited under two tombstones hashes to two unrelated values, so the sets of
different tombstones (and users) cannot be joined.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from memresolve._model import _validate as check
from memresolve._model._validate import Subject
from memresolve.errors import ErrorKind

__all__ = [
    "SALT_BYTES",
    "check_blocked_sources",
    "check_source_salt",
    "new_source_salt",
    "source_hash",
]

#: The bytes of randomness in a salt ``new_source_salt`` draws.
SALT_BYTES = 16
_SALT_HEX_LENGTHS = range(2 * SALT_BYTES, 2 * 64 + 1, 2)
_HEX_DIGITS = frozenset("0123456789abcdef")
_HASH_HEX_LENGTH = 64


def new_source_salt() -> str:
    """A fresh salt: 16 random bytes from the operating system, as lowercase hex."""
    return secrets.token_hex(SALT_BYTES)


def source_hash(salt: str, message_id: str) -> str:
    """The salted hash of ``message_id`` under ``salt`` (lowercase hex, 64 digits).

    Raises:
        InvalidInputError: ``salt`` is not 16 to 64 bytes of lowercase hex, or
            ``message_id`` is not a non-empty str.
    """
    subject = Subject("source_hash")
    checked_salt = check_source_salt(salt, subject)
    checked_id = check.text(message_id, subject, "message_id")
    return _hash(bytes.fromhex(checked_salt), checked_id)


def _hash(salt: bytes, message_id: str) -> str:
    return hashlib.sha256(salt + b"\x00" + message_id.encode("utf-8")).hexdigest()


def hashes_of(salt: str, message_ids: Iterable[str]) -> frozenset[str]:
    """The salted hashes of already-checked message ids."""
    raw = bytes.fromhex(salt)
    return frozenset(_hash(raw, message_id) for message_id in message_ids)


def _is_hex(value: str) -> bool:
    return _HEX_DIGITS.issuperset(value)


def check_source_salt(value: object, subject: Subject, field: str = "source_salt") -> str:
    """A salt: lowercase hex of 16 to 64 bytes (32 to 128 digits)."""
    salt = check.any_text(value, subject, field)
    if len(salt) not in _SALT_HEX_LENGTHS or not _is_hex(salt):
        subject.fail(
            field,
            ErrorKind.MALFORMED,
            "must be 16 to 64 bytes as lowercase hex (32 to 128 digits), as"
            " new_source_salt() draws",
        )
    return salt


def check_blocked_sources(
    value: object, subject: Subject, field: str = "blocked_sources"
) -> frozenset[str]:
    """A set of salted hashes: any iterable (not a lone str) of 64-digit lowercase hex."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        subject.fail(
            field,
            ErrorKind.WRONG_TYPE,
            f"must be a set of str (salted hashes), got {type(value).__name__}",
        )
    hashes: set[str] = set()
    for position, item in enumerate(value):
        digest = check.any_text(item, subject, f"{field}[{position}]")
        if len(digest) != _HASH_HEX_LENGTH or not _is_hex(digest):
            subject.fail(
                f"{field}[{position}]",
                ErrorKind.MALFORMED,
                "must be a SHA-256 digest as 64 lowercase hex digits (source_hash gives one)",
            )
        hashes.add(digest)
    return frozenset(hashes)
