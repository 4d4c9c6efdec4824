"""A part's contexts given to the core owner by owner (``_part_order.by_owner``)."""

from __future__ import annotations

import pyarrow as pa

from memresolve._dataset._part_order import by_owner


def _contexts(users: list[str], *, dictionary: bool = False) -> pa.Table:
    column = pa.array(users)
    if dictionary:
        column = column.dictionary_encode()
    return pa.table({"context_id": [f"c{n}" for n in range(len(users))], "user_id": column})


def test_a_users_contexts_are_brought_together_in_their_order() -> None:
    for dictionary in (False, True):
        table = _contexts(["b", "a", "b", "c", "a", "b"], dictionary=dictionary)
        ordered = by_owner(table)
        assert ordered.column("context_id").to_pylist() == ["c1", "c4", "c0", "c2", "c5", "c3"]
        assert sorted(ordered.column("context_id").to_pylist()) == sorted(
            table.column("context_id").to_pylist()
        )


def test_chunks_with_dictionaries_of_their_own_are_grouped_by_value() -> None:
    # Spilled batches keep their own dictionaries: "a" is code 0 in one and 1 in the other.
    first = _contexts(["a", "b"], dictionary=True)
    second = pa.table(
        {
            "context_id": ["c2", "c3"],
            "user_id": pa.DictionaryArray.from_arrays(
                pa.array([1, 0], pa.int32()), pa.array(["b", "a"])
            ),
        }
    )
    table = pa.concat_tables([first, second])
    # Users a, b, a, b.
    assert by_owner(table).column("context_id").to_pylist() == ["c0", "c2", "c1", "c3"]


def test_contexts_already_grouped_are_left_as_they_are() -> None:
    for users in (["b", "b", "a", "c", "c"], ["a"], []):
        table = _contexts(users)
        assert by_owner(table) is table
