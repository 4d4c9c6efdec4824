//! Stage 4, `superseded`: a record whose id is the `supersedes` of some
//! edge-bearing record. An edge is borne by every in-scope record inside its
//! validity interval whose stored status is not `expired`, even one excluded
//! at stage 2 or 3 (`docs/spec.md` §2.4 and §3).
//!
//! Membership in the set of named ids is the whole rule: a cycle of
//! edge-bearing records names every member, a self-edge names itself, and a
//! dangling id names no candidate. No graph walk is needed.

use std::hash::Hash;

use super::hash::{set_with_capacity, Set};
use crate::model::Status;

/// Whether an in-scope record's `supersedes` counts: only time switches it off.
#[must_use]
pub fn bears_edge(in_interval: bool, status: Status) -> bool {
    in_interval && status != Status::Expired
}

/// The ids named by edge-bearing records.
#[derive(Debug)]
pub struct SupersededIds<I> {
    named: Set<I>,
}

impl<I: Eq + Hash> SupersededIds<I> {
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            named: set_with_capacity(capacity),
        }
    }

    pub fn add_edge(&mut self, target: I) {
        self.named.insert(target);
    }

    #[must_use]
    pub fn contains(&self, id: &I) -> bool {
        !self.named.is_empty() && self.named.contains(id)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.named.is_empty()
    }

    /// Room for `additional` more ids without rehashing.
    pub fn reserve(&mut self, additional: usize) {
        self.named.reserve(additional);
    }

    pub fn clear(&mut self) {
        self.named.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_time_switches_an_edge_off() {
        assert!(bears_edge(true, Status::Active));
        assert!(bears_edge(true, Status::Superseded));
        assert!(bears_edge(true, Status::Forgotten));
        assert!(bears_edge(true, Status::Retracted));
        assert!(!bears_edge(true, Status::Expired));
        assert!(!bears_edge(false, Status::Active));
    }

    #[test]
    fn named_ids_are_exact() {
        let mut hidden = SupersededIds::with_capacity(2);
        hidden.add_edge("a");
        hidden.add_edge("b:c");
        assert!(hidden.contains(&"a"));
        assert!(hidden.contains(&"b:c"));
        assert!(!hidden.contains(&"A"));
        assert!(!hidden.contains(&"b"));
    }
}
