//! The resolution pipeline of `SPEC.md` §2, one module per stage.
//!
//! [`decide`] gives each candidate its outcome (the first stage that excludes
//! it, or `None` for a winner); [`resolve`] adds the canonical output order.
//! Both are linear in the number of candidates apart from the final sorts,
//! allocate a fixed number of buffers per call (none per record), and never
//! panic on any input.

pub mod candidates;
pub mod forget;
pub(crate) mod hash;
pub mod order;
pub mod precedence;
pub mod scope;
pub mod supersede;
pub mod time;

pub use candidates::{CandidateSet, Context, Record, ScopeRef, Tombstone};
pub use forget::{ContextTombstones, TombstoneIndex};

use crate::model::Reason;

/// The decision for one context: rows of the candidate set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Winner rows, by (scope id, key).
    pub active: Vec<usize>,
    /// Excluded rows with their reasons, by record id.
    pub excluded: Vec<(usize, Reason)>,
}

impl Resolution {
    /// How many candidates were excluded for `reason`.
    #[must_use]
    pub fn count(&self, reason: Reason) -> usize {
        self.excluded.iter().filter(|(_, r)| *r == reason).count()
    }
}

/// Each candidate's outcome, by row: the reason of the first stage that
/// excludes it, or `None` for the winner of its (scope, key) group.
#[must_use]
pub fn decide(
    candidates: &CandidateSet<'_>,
    context: &Context<'_>,
    tombstones: &TombstoneIndex<'_>,
) -> Vec<Option<Reason>> {
    let mut outcomes = Vec::with_capacity(candidates.len());
    let mut hidden = supersede::SupersededIds::with_capacity(candidates.len());
    let tombstones = tombstones.for_context(context);
    // Stages 1-3, and the supersession edges (which depend on scope and time only).
    for (_, record) in candidates.iter() {
        if !scope::matches(&record.scope, context) {
            outcomes.push(Some(Reason::Scope));
            continue;
        }
        let in_interval =
            time::in_validity_interval(record.valid_from, record.valid_until, context.now);
        if let Some(target) = record.supersedes {
            if supersede::bears_edge(in_interval, record.status) {
                hidden.add_edge(target);
            }
        }
        let outcome = if time::excluded_by_status_or_time(in_interval, record.status) {
            Some(Reason::StatusOrTime)
        } else if forget::excluded_as_forgotten(
            record.status,
            tombstones.blocks(
                record.scope.kind,
                record.key,
                forget::evidence_time(record.valid_from, record.observed_at),
            ),
        ) {
            Some(Reason::Forgotten)
        } else {
            None
        };
        outcomes.push(outcome);
    }
    // Stage 4, once every edge is known.
    for (outcome, id) in outcomes.iter_mut().zip(candidates.ids()) {
        if outcome.is_none() && hidden.contains(id) {
            *outcome = Some(Reason::Superseded);
        }
    }
    precedence::exclude_losers(candidates, &mut outcomes);
    outcomes
}

/// [`decide`], then the canonical order: winners by (scope id, key),
/// exclusions by id.
#[must_use]
pub fn resolve(
    candidates: &CandidateSet<'_>,
    context: &Context<'_>,
    tombstones: &TombstoneIndex<'_>,
) -> Resolution {
    let outcomes = decide(candidates, context, tombstones);
    let mut active = Vec::new();
    let mut excluded = Vec::with_capacity(outcomes.len());
    for (row, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            None => active.push(row),
            Some(reason) => excluded.push((row, reason)),
        }
    }
    order::sort_active(candidates, context, &mut active);
    order::sort_excluded(candidates, &mut excluded);
    Resolution { active, excluded }
}

#[cfg(test)]
mod tests;
