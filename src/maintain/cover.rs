//! Scope cover: `bearer` covers `target` when every context that sees a
//! record of `target` also sees one of `bearer` (`docs/spec.md` §7.1).
//!
//! The contexts a scope matches (§1.1) give the relation directly: a user
//! scope covers that user's characters and the conversations and scenes it
//! owns; an unowned conversation covers its owned twins and every scene of
//! it; a conversation owned by `u` covers the scenes of it `u` owns; an
//! unowned scene covers its owned twins. A character scope covers only
//! itself, and nothing covers an unowned conversation or scene but an equal
//! or wider unowned one: another user's contexts see it.

use crate::batch::intern::{ScopeKey, NO_ROW};
use crate::model::ScopeKind;

/// Whether every context that sees `target` also sees `bearer`. Both keys
/// come from one store's interning, so equal numbers are equal ids (a
/// conversation or scene's owner shares the `user_id` numbering).
#[must_use]
pub fn covers(bearer: ScopeKey, target: ScopeKey) -> bool {
    if bearer == target {
        return true;
    }
    let same_conversation = bearer.first == target.first;
    match (bearer.kind, target.kind) {
        (ScopeKind::User, ScopeKind::Character) => target.first == bearer.first,
        (ScopeKind::User, ScopeKind::Conversation | ScopeKind::Scene) => {
            target.owner != NO_ROW && target.owner == bearer.first
        }
        // Unowned covers the owned twin (equal keys returned above).
        (ScopeKind::Conversation, ScopeKind::Conversation) => {
            same_conversation && bearer.owner == NO_ROW
        }
        (ScopeKind::Conversation, ScopeKind::Scene) => {
            same_conversation && (bearer.owner == NO_ROW || bearer.owner == target.owner)
        }
        (ScopeKind::Scene, ScopeKind::Scene) => {
            same_conversation && bearer.second == target.second && bearer.owner == NO_ROW
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: u32 = 0;
    const U2: u32 = 1;
    const K1: u32 = 0;
    const K2: u32 = 1;
    const S1: u32 = 0;

    fn key(kind: ScopeKind, first: u32, second: u32, owner: u32) -> ScopeKey {
        ScopeKey {
            kind,
            first,
            second,
            owner,
        }
    }
    fn user(u: u32) -> ScopeKey {
        key(ScopeKind::User, u, 0, NO_ROW)
    }
    fn character(u: u32, c: u32) -> ScopeKey {
        key(ScopeKind::Character, u, c, NO_ROW)
    }
    fn conversation(k: u32, owner: u32) -> ScopeKey {
        key(ScopeKind::Conversation, k, 0, owner)
    }
    fn scene(k: u32, s: u32, owner: u32) -> ScopeKey {
        key(ScopeKind::Scene, k, s, owner)
    }

    #[test]
    fn a_user_covers_its_characters_and_what_it_owns() {
        assert!(covers(user(U1), character(U1, 3)));
        assert!(covers(user(U1), conversation(K1, U1)));
        assert!(covers(user(U1), scene(K1, S1, U1)));
        assert!(!covers(user(U1), character(U2, 3)));
        assert!(!covers(user(U1), conversation(K1, NO_ROW)));
        assert!(!covers(user(U1), conversation(K1, U2)));
    }

    #[test]
    fn a_character_never_covers_its_user() {
        assert!(!covers(character(U1, 3), user(U1)));
        assert!(!covers(character(U1, 3), character(U1, 4)));
        assert!(covers(character(U1, 3), character(U1, 3)));
    }

    #[test]
    fn unowned_covers_owned_never_the_reverse() {
        assert!(covers(conversation(K1, NO_ROW), conversation(K1, U1)));
        assert!(!covers(conversation(K1, U1), conversation(K1, NO_ROW)));
        assert!(covers(scene(K1, S1, NO_ROW), scene(K1, S1, U1)));
        assert!(!covers(scene(K1, S1, U1), scene(K1, S1, NO_ROW)));
    }

    #[test]
    fn a_conversation_covers_its_scenes() {
        assert!(covers(conversation(K1, NO_ROW), scene(K1, S1, NO_ROW)));
        assert!(covers(conversation(K1, NO_ROW), scene(K1, S1, U1)));
        assert!(covers(conversation(K1, U1), scene(K1, S1, U1)));
        assert!(!covers(conversation(K1, U1), scene(K1, S1, NO_ROW)));
        assert!(!covers(conversation(K1, U1), scene(K1, S1, U2)));
        assert!(!covers(conversation(K2, NO_ROW), scene(K1, S1, NO_ROW)));
        assert!(!covers(scene(K1, S1, NO_ROW), conversation(K1, NO_ROW)));
    }
}
