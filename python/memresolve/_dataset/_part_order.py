"""A part's contexts owner by owner, before the core resolves them.

A context reads the rows of its user's scopes. When a user's contexts are spread
through the part, each of them brings those rows back into the cache; one owner
after another, they are read once while warm (``resolve_batch`` does the same inside
the core, then answers in input order; a part's output promises no context order, so
here the contexts are simply given in that order).
"""

from __future__ import annotations

from typing import Any

__all__ = ["by_owner"]


def by_owner(contexts: Any) -> Any:
    """``contexts`` with each user's contexts together, in their order among themselves;
    the table itself when they already are."""
    pa = __import__("pyarrow")
    pc = __import__("pyarrow.compute", fromlist=["sort_indices"])
    if contexts.num_rows < 2:
        return contexts
    users = contexts.column("user_id")
    if pa.types.is_dictionary(users.type):  # chunks may have dictionaries of their own
        users = users.cast(users.type.value_type)
    runs = len(pc.run_end_encode(users.combine_chunks()).values)
    if runs == pc.count_distinct(users, mode="all").as_py():
        return contexts
    return contexts.take(pc.sort_indices(users))
