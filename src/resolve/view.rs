//! What the pipeline reads: one context's view of its candidates.
//!
//! [`super::decide_into`] is written once against [`Candidates`]. The
//! per-turn forms implement it over a [`CandidateSet`] of borrowed strings
//! ([`ContextCandidates`]) and over records' packed storage, read in place
//! ([`super::PackedCandidates`], what `mr.resolve` runs); the batch form over
//! a store whose ids, keys and scopes were interned to numbers once
//! (`crate::batch`). Identity is all the
//! two differ in: what names a record to another's `supersedes`, and what
//! names a key, are associated types, so the batch hashes integers where the
//! per-turn form hashes strings, and every rule stays in one place.

use std::cmp::Ordering;
use std::hash::Hash;

use super::candidates::{CandidateSet, Context, Facts, Slot};
use super::forget::{ContextTombstones, TombstoneIndex};
use super::scope;

/// One context's candidates, by position `0..len()`.
pub trait Candidates {
    /// Names a record to another record's `supersedes`: equal exactly when
    /// the ids are equal.
    type Id: Copy + Eq + Hash;
    /// Names a key: equal exactly when the keys are equal.
    type Key: Copy + Eq + Hash;

    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Stage 1: the slot of the candidate's scope when that scope is visible
    /// in the context (it is then the context's one scope of that slot).
    fn slot_in_scope(&self, index: usize) -> Option<Slot>;
    fn facts(&self, index: usize) -> Option<Facts>;
    fn id(&self, index: usize) -> Option<Self::Id>;
    /// The record this one names in `supersedes`, if any. May name no candidate.
    fn supersedes(&self, index: usize) -> Option<Self::Id>;
    fn key(&self, index: usize) -> Option<Self::Key>;
    /// The latest `blocks_sources_before` of the context's tombstones on
    /// `key` in the context's scope of `slot`.
    fn forget_bound(&self, slot: Slot, key: Self::Key) -> Option<i64>;
    /// Whether a tombstone blocks the candidate by the messages it cites,
    /// decided before the pipeline (`super::sources`).
    fn blocked_by_sources(&self, index: usize) -> bool;
    /// Ids by code point: precedence's last tie-break.
    fn compare_ids(&self, a: usize, b: usize) -> Ordering;
}

/// The per-turn form: every record of a [`CandidateSet`], seen from one context.
pub struct ContextCandidates<'v, 'a> {
    pub set: &'v CandidateSet<'a>,
    pub context: &'v Context<'v>,
    pub tombstones: ContextTombstones<'v>,
}

impl<'v, 'a> ContextCandidates<'v, 'a> {
    #[must_use]
    pub fn new(
        set: &'v CandidateSet<'a>,
        context: &'v Context<'v>,
        tombstones: &'v TombstoneIndex<'_>,
    ) -> Self {
        Self {
            set,
            context,
            tombstones: tombstones.for_context(context),
        }
    }
}

impl<'a> Candidates for ContextCandidates<'_, 'a> {
    type Id = &'a str;
    type Key = &'a str;

    fn len(&self) -> usize {
        self.set.len()
    }

    fn slot_in_scope(&self, index: usize) -> Option<Slot> {
        let scope = self.set.scopes().get(index)?;
        scope::matches(scope, self.context).then(|| scope.slot())
    }

    fn facts(&self, index: usize) -> Option<Facts> {
        self.set.facts(index)
    }

    fn id(&self, index: usize) -> Option<&'a str> {
        self.set.ids().get(index).copied()
    }

    fn supersedes(&self, index: usize) -> Option<&'a str> {
        self.set.supersedes(index)
    }

    fn key(&self, index: usize) -> Option<&'a str> {
        self.set.keys().get(index).copied()
    }

    fn forget_bound(&self, slot: Slot, key: &'a str) -> Option<i64> {
        self.tombstones.bound(slot, key)
    }

    fn blocked_by_sources(&self, index: usize) -> bool {
        self.set.blocked_by_sources(index)
    }

    fn compare_ids(&self, a: usize, b: usize) -> Ordering {
        let ids = self.set.ids();
        ids.get(a)
            .map(|id| id.as_bytes())
            .cmp(&ids.get(b).map(|id| id.as_bytes()))
    }
}
