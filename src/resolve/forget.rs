//! Stage 3, `forgotten`: stored as `forgotten`, or blocked by a tombstone on
//! the same key and an equal scope whose bound is at or after the record's
//! evidence time. Tombstones apply whatever `now` is.

use super::candidates::{ScopeRef, Tombstone};
use super::hash::{map_with_capacity, Map};
use crate::model::Status;

/// When the evidence behind a record was observed: `observed_at`, else `valid_from`.
#[must_use]
pub fn evidence_time(valid_from: i64, observed_at: Option<i64>) -> i64 {
    observed_at.unwrap_or(valid_from)
}

/// The tombstones of one call, by (scope, key). Several tombstones on one
/// group act as the one with the latest bound, so each lookup is O(1).
#[derive(Debug, Default)]
pub struct TombstoneIndex<'a> {
    latest_bound: Map<(ScopeRef<'a>, &'a str), i64>,
}

impl<'a> TombstoneIndex<'a> {
    #[must_use]
    pub fn new(tombstones: &[Tombstone<'a>]) -> Self {
        let mut latest_bound = map_with_capacity(tombstones.len());
        for tombstone in tombstones {
            latest_bound
                .entry((tombstone.scope, tombstone.key))
                .and_modify(|bound: &mut i64| {
                    *bound = (*bound).max(tombstone.blocks_sources_before);
                })
                .or_insert(tombstone.blocks_sources_before);
        }
        Self { latest_bound }
    }

    /// Whether some tombstone forgets evidence of this time in this group.
    #[must_use]
    pub fn blocks(&self, scope: ScopeRef<'a>, key: &'a str, evidence: i64) -> bool {
        if self.latest_bound.is_empty() {
            return false;
        }
        self.latest_bound
            .get(&(scope, key))
            .is_some_and(|&bound| evidence <= bound)
    }
}

/// Stage 3's test.
#[must_use]
pub fn excluded_as_forgotten(status: Status, blocked: bool) -> bool {
    status == Status::Forgotten || blocked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tombstone(scope: ScopeRef<'static>, key: &'static str, bound: i64) -> Tombstone<'static> {
        Tombstone {
            key,
            scope,
            blocks_sources_before: bound,
        }
    }

    #[test]
    fn the_bound_is_inclusive() {
        let index = TombstoneIndex::new(&[tombstone(ScopeRef::user("u"), "k", 100)]);
        assert!(index.blocks(ScopeRef::user("u"), "k", 99));
        assert!(index.blocks(ScopeRef::user("u"), "k", 100));
        assert!(!index.blocks(ScopeRef::user("u"), "k", 101));
    }

    #[test]
    fn only_the_same_key_in_an_equal_scope_is_blocked() {
        let index = TombstoneIndex::new(&[tombstone(ScopeRef::character("a", "b:c"), "k", 100)]);
        assert!(index.blocks(ScopeRef::character("a", "b:c"), "k", 0));
        assert!(!index.blocks(ScopeRef::character("a:b", "c"), "k", 0));
        assert!(!index.blocks(ScopeRef::character("a", "b:c"), "other", 0));
        assert!(!index.blocks(ScopeRef::user("a"), "k", 0));
    }

    #[test]
    fn the_latest_of_several_bounds_decides() {
        let scope = ScopeRef::user("u");
        let index = TombstoneIndex::new(&[
            tombstone(scope, "k", 50),
            tombstone(scope, "k", 200),
            tombstone(scope, "k", 100),
        ]);
        assert!(index.blocks(scope, "k", 200));
        assert!(!index.blocks(scope, "k", 201));
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
