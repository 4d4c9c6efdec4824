//! Stage 3, `forgotten`: stored as `forgotten`, or blocked by a tombstone on
//! the same key and an equal scope whose bound is at or after the record's
//! evidence time. Tombstones apply whatever `now` is.

use super::candidates::{Context, ScopeRef, Slot, Tombstone};
use super::hash::{map_with_capacity, Map};
use crate::model::Status;

/// When the evidence behind a record was observed: `observed_at`, else `valid_from`.
#[must_use]
pub fn evidence_time(valid_from: i64, observed_at: Option<i64>) -> i64 {
    observed_at.unwrap_or(valid_from)
}

/// The tombstones of one call, by scope, then key; the user-wide ones by
/// user, then key. Several tombstones on one (scope, key) act as the one with
/// the latest bound.
#[derive(Debug, Default)]
pub struct TombstoneIndex<'a> {
    by_scope: Map<ScopeRef<'a>, Map<&'a str, i64>>,
    by_user: Map<&'a str, Map<&'a str, i64>>,
}

fn keep_latest<'a>(bounds: &mut Map<&'a str, i64>, key: &'a str, bound: i64) {
    bounds
        .entry(key)
        .and_modify(|latest: &mut i64| *latest = (*latest).max(bound))
        .or_insert(bound);
}

impl<'a> TombstoneIndex<'a> {
    #[must_use]
    pub fn new(tombstones: &[Tombstone<'a>]) -> Self {
        let mut by_scope: Map<ScopeRef<'a>, Map<&'a str, i64>> = map_with_capacity(4);
        let mut by_user: Map<&'a str, Map<&'a str, i64>> = Map::default();
        for tombstone in tombstones {
            let bounds = match tombstone.scope.owning_user() {
                Some(user) if tombstone.user_wide => {
                    by_user.entry(user).or_insert_with(|| map_with_capacity(1))
                }
                _ => by_scope
                    .entry(tombstone.scope)
                    .or_insert_with(|| map_with_capacity(1)),
            };
            keep_latest(bounds, tombstone.key, tombstone.blocks_sources_before);
        }
        Self { by_scope, by_user }
    }

    /// The tombstones that can touch an in-scope record of `context`: those on
    /// one of its (at most six) scopes, and its user's user-wide ones, found
    /// once per context.
    #[must_use]
    pub fn for_context<'s>(&'s self, context: &Context<'s>) -> ContextTombstones<'s> {
        let mut by_slot = [None; 6];
        if !self.by_scope.is_empty() {
            for (entry, slot) in by_slot.iter_mut().zip(Slot::ALL) {
                *entry = context
                    .scope_of(slot)
                    .and_then(|scope| self.by_scope.get(&scope));
            }
        }
        let user_wide = if self.by_user.is_empty() {
            None
        } else {
            self.by_user.get(context.user_id)
        };
        ContextTombstones { by_slot, user_wide }
    }
}

/// The tombstones of one context, by the slot of the scope they are on, and
/// the user-wide ones of its user (which reach the slots its user owns).
#[derive(Debug)]
pub struct ContextTombstones<'s> {
    by_slot: [Option<&'s Map<&'s str, i64>>; 6],
    user_wide: Option<&'s Map<&'s str, i64>>,
}

impl ContextTombstones<'_> {
    /// The latest bound of the tombstones on `key` that reach the context's
    /// scope of `slot` (an in-scope record's scope is the context's scope of
    /// its slot, so the slot names the scope).
    #[must_use]
    // Called per candidate from each per-turn form of the pipeline: left to
    // itself, the compiler outlines it once there are two callers (6% of
    // `core_resolve` at 200 candidates, in a profile).
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn bound(&self, slot: Slot, key: &str) -> Option<i64> {
        let on_scope = self
            .by_slot
            .get(slot.index())
            .copied()
            .flatten()
            .and_then(|bounds| bounds.get(key))
            .copied();
        match self.user_wide {
            Some(bounds) if slot.owned_by_context_user() => {
                latest(on_scope, bounds.get(key).copied())
            }
            _ => on_scope,
        }
    }

    /// Whether some tombstone forgets evidence of this time for an in-scope
    /// record of this slot and key.
    #[must_use]
    pub fn blocks(&self, slot: Slot, key: &str, evidence: i64) -> bool {
        blocked(self.bound(slot, key), evidence)
    }
}

/// The later of two optional bounds.
#[must_use]
pub fn latest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Whether evidence of this time falls under a tombstone bound (inclusive).
#[must_use]
pub fn blocked(bound: Option<i64>, evidence: i64) -> bool {
    bound.is_some_and(|bound| evidence <= bound)
}

/// Stage 3's test.
#[must_use]
pub fn excluded_as_forgotten(status: Status, blocked: bool) -> bool {
    status == Status::Forgotten || blocked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> Slot {
        ScopeRef::user("u").slot()
    }

    fn character() -> Slot {
        ScopeRef::character("u", "c").slot()
    }

    fn scene() -> Slot {
        ScopeRef::scene("k", "s").slot()
    }

    fn tombstone(scope: ScopeRef<'static>, key: &'static str, bound: i64) -> Tombstone<'static> {
        Tombstone {
            key,
            scope,
            blocks_sources_before: bound,
            user_wide: false,
            sources: None,
        }
    }

    #[test]
    fn a_user_wide_tombstone_reaches_every_scope_its_user_owns_and_no_other() {
        let index = TombstoneIndex::new(&[Tombstone {
            user_wide: true,
            sources: None,
            ..tombstone(ScopeRef::user("u"), "k", 100)
        }]);
        let in_scene = Context {
            scene_id: Some("s"),
            ..context("u", "c")
        };
        let here = index.for_context(&in_scene);
        for owned in [
            user(),
            character(),
            ScopeRef::conversation("k").owned_by("u").slot(),
            ScopeRef::scene("k", "s").owned_by("u").slot(),
        ] {
            assert!(here.blocks(owned, "k", 100), "{owned:?}");
            assert!(!here.blocks(owned, "k", 101), "{owned:?}");
            assert!(!here.blocks(owned, "other", 0), "{owned:?}");
        }
        // Unowned scopes are nobody's; another user's context owns nothing of u's.
        assert!(!here.blocks(ScopeRef::conversation("k").slot(), "k", 0));
        assert!(!here.blocks(scene(), "k", 0));
        assert!(!index.for_context(&context("v", "c")).blocks(user(), "k", 0));
    }

    #[test]
    fn a_user_wide_and_a_scope_tombstone_act_as_the_later_bound() {
        let index = TombstoneIndex::new(&[
            Tombstone {
                user_wide: true,
                sources: None,
                ..tombstone(ScopeRef::user("u"), "k", 100)
            },
            tombstone(ScopeRef::character("u", "c"), "k", 300),
            tombstone(ScopeRef::user("u"), "k", 50),
        ]);
        let here = index.for_context(&context("u", "c"));
        assert!(here.blocks(character(), "k", 300));
        assert!(here.blocks(user(), "k", 100));
        assert!(!here.blocks(user(), "k", 101));
    }

    fn context(user_id: &'static str, character_id: &'static str) -> Context<'static> {
        Context {
            now: 0,
            user_id,
            character_id: Some(character_id),
            conversation_id: Some("k"),
            scene_id: None,
        }
    }

    #[test]
    fn the_bound_is_inclusive() {
        let index = TombstoneIndex::new(&[tombstone(ScopeRef::user("u"), "k", 100)]);
        let here = index.for_context(&context("u", "c"));
        assert!(here.blocks(user(), "k", 99));
        assert!(here.blocks(user(), "k", 100));
        assert!(!here.blocks(user(), "k", 101));
    }

    #[test]
    fn only_the_same_key_in_an_equal_scope_is_blocked() {
        let index = TombstoneIndex::new(&[tombstone(ScopeRef::character("a", "b:c"), "k", 100)]);
        let matching = index.for_context(&context("a", "b:c"));
        assert!(matching.blocks(character(), "k", 0));
        assert!(!matching.blocks(character(), "other", 0));
        assert!(!matching.blocks(user(), "k", 0));
        // The tutorial's joined strings would make these two scopes one.
        let colliding = index.for_context(&context("a:b", "c"));
        assert!(!colliding.blocks(character(), "k", 0));
    }

    #[test]
    fn no_scene_in_the_context_sees_no_scene_tombstone() {
        let index = TombstoneIndex::new(&[tombstone(ScopeRef::scene("k", "s"), "key", 100)]);
        assert!(!index
            .for_context(&context("u", "c"))
            .blocks(scene(), "key", 0));
        let in_scene = Context {
            scene_id: Some("s"),
            ..context("u", "c")
        };
        assert!(index.for_context(&in_scene).blocks(scene(), "key", 0));
    }

    #[test]
    fn an_owned_scope_is_another_scope() {
        let index = TombstoneIndex::new(&[tombstone(
            ScopeRef::conversation("k").owned_by("u"),
            "key",
            100,
        )]);
        let here = index.for_context(&context("u", "c"));
        let owned = ScopeRef::conversation("k").owned_by("u").slot();
        assert!(here.blocks(owned, "key", 0));
        assert!(!here.blocks(ScopeRef::conversation("k").slot(), "key", 0));
        // Another user's context has no scope owned by "u".
        let other = index.for_context(&context("v", "c"));
        assert!(!other.blocks(owned, "key", 0));
    }

    #[test]
    fn the_latest_of_several_bounds_decides() {
        let scope = ScopeRef::user("u");
        let index = TombstoneIndex::new(&[
            tombstone(scope, "k", 50),
            tombstone(scope, "k", 200),
            tombstone(scope, "k", 100),
        ]);
        let here = index.for_context(&context("u", "c"));
        assert!(here.blocks(user(), "k", 200));
        assert!(!here.blocks(user(), "k", 201));
    }

    #[test]
    fn evidence_is_observed_at_when_set() {
        assert_eq!(evidence_time(10, None), 10);
        assert_eq!(evidence_time(10, Some(3)), 3);
        assert_eq!(evidence_time(10, Some(30)), 30);
    }

    #[test]
    fn stored_forgotten_needs_no_tombstone() {
        assert!(excluded_as_forgotten(Status::Forgotten, false));
        assert!(excluded_as_forgotten(Status::Active, true));
        assert!(!excluded_as_forgotten(Status::Active, false));
    }
}
