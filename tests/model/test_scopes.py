"""Scope ids: the ids a context sees, computed without building its scopes, are the ids of
the scopes it sees (a store's turn that misses its cache reads exactly these)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

import memresolve as mr
from memresolve._model import seen_scope_ids
from memresolve.testing import identifiers

#: Ids that need escaping (":" and "%"), empty-looking and long ones, and the strategies'.
_IDS = st.one_of(
    identifiers(),
    st.text(alphabet=st.sampled_from(":%a3A2"), min_size=1, max_size=6),
    st.text(min_size=1, max_size=12).filter(lambda text: "\x00" not in text),
)


@given(_IDS, _IDS, _IDS, st.none() | _IDS)
def test_the_ids_a_context_sees_are_its_scopes_ids(
    user: str, character: str, conversation: str, scene: str | None
) -> None:
    context = mr.RetrievalContext(
        now=datetime(2026, 7, 30, tzinfo=UTC),
        user_id=user,
        character_id=character,
        conversation_id=conversation,
        scene_id=scene,
    )
    assert seen_scope_ids(user, character, conversation, scene) == tuple(
        mr.scope_id(scope) for scope in context.scopes()
    )
