"""What a part of the batch job holds in memory while it resolves, from its rows and bytes.

A part's tables stay mapped while the native core reads them, the core builds a store of
the records, and the output is handed over a piece at a time (the pieces already handed
over are the writer's to count). Counting the store by rows rather than as a multiple of
the tables' Arrow bytes matters where those bytes say little about the rows: a part spilled
from a store in time order takes a few rows of every batch, each with its dictionaries.
"""

from __future__ import annotations

__all__ = ["CONTEXT_BYTES", "PIECES_HELD", "RECORD_BYTES", "TOMBSTONE_BYTES", "part_cost"]

#: The native store per record, its share of the id, key and scope indexes included:
#: measured at 139-147 bytes (1M and 10M records, UUID ids, in owner and in time order,
#: with and without excluded rows); a third more for room.
RECORD_BYTES = 192
#: Per context: its ids, its scopes' numbers and its place in the output order.
CONTEXT_BYTES = 256
#: Per tombstone: its ids and its index entry.
TOMBSTONE_BYTES = 128
#: Output the core holds, in pieces, besides the pieces it handed over (which the writer
#: counts): the decisions of the contexts it resolved last, the output built but not yet
#: handed over, and the chunks being built, each at most about a piece (the core cuts
#: them by the rows their contexts can see and the most their output can take).
PIECES_HELD = 3


def part_cost(
    arrow_bytes: int, records: int, contexts: int, tombstones: int, piece_bytes: int
) -> int:
    """The bytes a part holds while it resolves: its tables (``arrow_bytes``), the store
    built from its rows, and the output being built (``PIECES_HELD`` of ``piece_bytes``)."""
    return (
        arrow_bytes
        + records * RECORD_BYTES
        + contexts * CONTEXT_BYTES
        + tombstones * TOMBSTONE_BYTES
        + PIECES_HELD * piece_bytes
    )
