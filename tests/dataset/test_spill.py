"""The batch jobs' id check past memory: ``IdBuckets`` finds the first repeated id.

Ids are checked unique across the whole input with one bucket of hashes in
memory at a time; the answer must be what reading the rows in order gives:
the first row whose id an earlier row had, and that earlier row.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memresolve._dataset._spill import IdBuckets

# Few distinct hashes, so that repeats are common; both halves matter.
hashes = st.tuples(st.integers(0, 5), st.integers(0, 2)).map(
    lambda pair: (pair[0] * 0x9E37_79B9_7F4A_7C15 % 2**64, pair[1])
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(hashes, max_size=40), max_size=6), st.sampled_from([1, 3, 64]))
def test_the_first_repeat_is_the_one_reading_in_order_finds(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[tuple[int, int]]], buckets: int
) -> None:
    directory = tmp_path_factory.mktemp("ids")
    ids = IdBuckets("records", directory, buckets=buckets)
    row = 0
    for batch in batches:
        ids.add(np.array(batch, dtype=np.uint64).reshape(-1, 2).tobytes(), row)
        row += len(batch)
    seen: dict[tuple[int, int], int] = {}
    expected = None
    for later, pair in enumerate(pair for batch in batches for pair in batch):
        if pair in seen:
            expected = (seen[pair], later)
            break
        seen[pair] = later
    assert ids.first_repeat() == expected
    assert list(directory.iterdir()) == []  # each bucket's file is gone once read
