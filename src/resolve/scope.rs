//! Stage 1, `scope`: is a record's scope visible in the context (`docs/spec.md` §2.1)?

use super::candidates::{Context, ScopeRef};
use crate::model::ScopeKind;

/// Whether a record in `scope` is visible in `context`. Compared field by
/// field, never through a joined string. An owned scope matches only its
/// owner's contexts (it fails closed across users).
#[must_use]
pub fn matches(scope: &ScopeRef<'_>, context: &Context<'_>) -> bool {
    let owner_sees = scope.owner.is_none_or(|owner| owner == context.user_id);
    match scope.kind {
        // User and character scopes have no owner: their user is an id.
        ScopeKind::User => scope.owner.is_none() && scope.first == context.user_id,
        // A context without a character (conversation, scene) sees no
        // character (conversation, scene) records.
        ScopeKind::Character => {
            scope.owner.is_none()
                && scope.first == context.user_id
                && context.character_id == Some(scope.second)
        }
        ScopeKind::Conversation => owner_sees && context.conversation_id == Some(scope.first),
        ScopeKind::Scene => {
            owner_sees
                && context.conversation_id == Some(scope.first)
                && context.scene_id == Some(scope.second)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(scene_id: Option<&'static str>) -> Context<'static> {
        Context {
            now: 0,
            user_id: "u1",
            character_id: Some("c1"),
            conversation_id: Some("k1"),
            scene_id,
        }
    }

    #[test]
    fn each_kind_matches_on_all_of_its_fields() {
        let ctx = context(Some("s1"));
        assert!(matches(&ScopeRef::user("u1"), &ctx));
        assert!(!matches(&ScopeRef::user("u2"), &ctx));
        assert!(matches(&ScopeRef::character("u1", "c1"), &ctx));
        assert!(!matches(&ScopeRef::character("u1", "c2"), &ctx));
        assert!(!matches(&ScopeRef::character("u2", "c1"), &ctx));
        assert!(matches(&ScopeRef::conversation("k1"), &ctx));
        assert!(!matches(&ScopeRef::conversation("k2"), &ctx));
        assert!(matches(&ScopeRef::scene("k1", "s1"), &ctx));
        assert!(!matches(&ScopeRef::scene("k1", "s2"), &ctx));
        assert!(!matches(&ScopeRef::scene("k2", "s1"), &ctx));
    }

    #[test]
    fn an_owned_scope_matches_only_its_owners_contexts() {
        let ctx = context(Some("s1"));
        assert!(matches(&ScopeRef::conversation("k1").owned_by("u1"), &ctx));
        assert!(!matches(&ScopeRef::conversation("k1").owned_by("u2"), &ctx));
        assert!(matches(&ScopeRef::scene("k1", "s1").owned_by("u1"), &ctx));
        assert!(!matches(&ScopeRef::scene("k1", "s1").owned_by("u2"), &ctx));
        assert!(!matches(&ScopeRef::user("u1").owned_by("u1"), &ctx));
        // The slot's scope of the context is exactly what matches.
        for scope in [
            ScopeRef::conversation("k1").owned_by("u1"),
            ScopeRef::scene("k1", "s1"),
            ScopeRef::user("u1"),
        ] {
            assert_eq!(ctx.scope_of(scope.slot()), Some(scope));
        }
    }

    #[test]
    fn no_current_scene_sees_no_scene() {
        assert!(!matches(&ScopeRef::scene("k1", "s1"), &context(None)));
        assert!(!matches(&ScopeRef::scene("k1", ""), &context(None)));
    }

    #[test]
    fn a_context_without_character_or_conversation_sees_neither() {
        let profile = Context {
            character_id: None,
            conversation_id: None,
            ..context(None)
        };
        assert!(matches(&ScopeRef::user("u1"), &profile));
        assert!(!matches(&ScopeRef::character("u1", "c1"), &profile));
        assert!(!matches(&ScopeRef::conversation("k1"), &profile));
        assert!(!matches(
            &ScopeRef::conversation("k1").owned_by("u1"),
            &profile
        ));
        let no_character = Context {
            character_id: None,
            ..context(Some("s1"))
        };
        assert!(!matches(&ScopeRef::character("u1", "c1"), &no_character));
        assert!(matches(&ScopeRef::conversation("k1"), &no_character));
        assert!(matches(
            &ScopeRef::scene("k1", "s1").owned_by("u1"),
            &no_character
        ));
        // The slots agree with the matching rule: no scope where no id is.
        for scope in [
            ScopeRef::character("u1", "c1"),
            ScopeRef::conversation("k1"),
            ScopeRef::conversation("k1").owned_by("u1"),
            ScopeRef::scene("k1", "s1"),
        ] {
            assert_eq!(profile.scope_of(scope.slot()), None);
        }
        assert_eq!(
            profile.scope_of(ScopeRef::user("u1").slot()),
            Some(ScopeRef::user("u1"))
        );
        assert_eq!(
            no_character.scope_of(ScopeRef::character("u1", "c1").slot()),
            None
        );
    }

    #[test]
    fn a_user_id_is_not_a_character_id() {
        // The tutorial's joined strings let "a:b"+"c" meet "a"+"b:c"; fields never do.
        let ctx = Context {
            user_id: "a",
            character_id: Some("b:c"),
            ..context(None)
        };
        assert!(!matches(&ScopeRef::character("a:b", "c"), &ctx));
        assert!(matches(&ScopeRef::character("a", "b:c"), &ctx));
    }
}
