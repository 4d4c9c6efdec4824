//! The resolution pipeline of `docs/spec.md` §2, one module per stage.
//!
//! [`decide`] gives each candidate its outcome (the first stage that excludes
//! it, or `None` for a winner); [`resolve`] adds the canonical output order.
//! Both are linear in the number of candidates apart from the final sorts,
//! allocate a fixed number of buffers per call (none per record), and never
//! panic on any input.

pub mod candidates;
pub mod forget;
pub mod hash;
pub mod order;
pub mod packed;
pub mod precedence;
pub mod prepared;
pub mod scope;
pub mod source_hashes;
pub mod sources;
pub mod supersede;
pub mod time;
pub mod view;

pub use candidates::{CandidateSet, Context, Facts, Record, ScopeRef, Slot, Tombstone};
pub use forget::{ContextTombstones, TombstoneIndex};
pub use packed::{PackedCandidates, PackedRecord};
pub use source_hashes::SourceHashes;
pub use sources::SourceIndex;
pub use view::{Candidates, ContextCandidates};

use crate::error::Broken;
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

/// The buffers of [`decide_into`], kept by a caller that resolves many
/// contexts so that none is allocated per context.
pub struct Scratch<I, K> {
    hidden: supersede::SupersededIds<I>,
    /// The candidates that passed stages 1-3, with their groups.
    survivors: Vec<(usize, Slot, K)>,
    best: precedence::BestOfGroups<K>,
}

impl<I: Eq + std::hash::Hash, K> Default for Scratch<I, K> {
    fn default() -> Self {
        Self {
            hidden: supersede::SupersededIds::with_capacity(0),
            survivors: Vec::new(),
            best: precedence::BestOfGroups::default(),
        }
    }
}

/// Each candidate's outcome, by position, into `outcomes` (cleared first):
/// the reason of the first stage that excludes it, or `None` for the winner
/// of its (scope, key) group.
///
/// # Errors
/// [`Broken`] when `candidates` does not hold a position below its `len`:
/// a bug in the view, never a property of the input.
pub fn decide_into<C: Candidates>(
    candidates: &C,
    now: i64,
    scratch: &mut Scratch<C::Id, C::Key>,
    outcomes: &mut Vec<Option<Reason>>,
) -> Result<(), Broken> {
    const MISSING: Broken = Broken("a candidate view lacks a position below its length");
    outcomes.clear();
    outcomes.reserve(candidates.len());
    let hidden = &mut scratch.hidden;
    hidden.clear();
    // Sized once, so no table grows (and rehashes) inside the loops.
    hidden.reserve(candidates.len());
    let survivors = &mut scratch.survivors;
    survivors.clear();
    // Stages 1-3, and the supersession edges (which depend on scope and time only).
    for index in 0..candidates.len() {
        let Some(slot) = candidates.slot_in_scope(index) else {
            outcomes.push(Some(Reason::Scope));
            continue;
        };
        let facts = candidates.facts(index).ok_or(MISSING)?;
        let in_interval = time::in_validity_interval(facts.valid_from, facts.valid_until, now);
        if let Some(target) = candidates.supersedes(index) {
            if supersede::bears_edge(in_interval, facts.status) {
                hidden.add_edge(target);
            }
        }
        let outcome = if time::excluded_by_status_or_time(in_interval, facts.status) {
            Some(Reason::StatusOrTime)
        } else {
            let key = candidates.key(index).ok_or(MISSING)?;
            let blocked = forget::blocked(
                candidates.forget_bound(slot, key),
                forget::evidence_time(facts.valid_from, facts.observed_at),
            ) || candidates.blocked_by_sources(index);
            if forget::excluded_as_forgotten(facts.status, blocked) {
                Some(Reason::Forgotten)
            } else {
                survivors.push((index, slot, key));
                None
            }
        };
        outcomes.push(outcome);
    }
    // Stage 4, once every edge is known.
    if !hidden.is_empty() {
        for (index, outcome) in outcomes.iter_mut().enumerate() {
            if outcome.is_none() && hidden.contains(&candidates.id(index).ok_or(MISSING)?) {
                *outcome = Some(Reason::Superseded);
            }
        }
    }
    precedence::exclude_losers(candidates, survivors, outcomes, &mut scratch.best)
}

/// Each candidate's outcome, by row (see [`decide_into`]).
///
/// # Errors
/// [`Broken`], as [`decide_into`].
pub fn decide(
    candidates: &CandidateSet<'_>,
    context: &Context<'_>,
    tombstones: &TombstoneIndex<'_>,
) -> Result<Vec<Option<Reason>>, Broken> {
    let mut outcomes = Vec::new();
    decide_into(
        &ContextCandidates::new(candidates, context, tombstones),
        context.now,
        &mut Scratch::default(),
        &mut outcomes,
    )?;
    Ok(outcomes)
}

/// [`resolve`] of packed records, read where they are, with the exclusions
/// read off `by_id`, the rows in id order ([`order::rows_by_id`], which also
/// checks that ids are unique): the sort that checks the input is the sort of
/// the output. What `mr.resolve` runs.
///
/// `by_id` must list every row once, as [`order::rows_by_id`] gives it; an
/// order of another length is refused, another mistake gives an unspecified
/// answer (the binding checks that every candidate has one outcome).
/// `blocked_by_sources` holds, by row, the candidates the messages they cite
/// block ([`SourceIndex`]; empty: none).
///
/// # Errors
/// [`Broken`], as [`decide_into`], and when `by_id` names other rows.
pub fn resolve_packed_in_id_order(
    records: &[&PackedRecord],
    context: &Context<'_>,
    tombstones: &TombstoneIndex<'_>,
    blocked_by_sources: &[bool],
    by_id: &[usize],
) -> Result<Resolution, Broken> {
    const NOT_ROWS: Broken = Broken("the id order does not list every candidate once");
    if by_id.len() != records.len() {
        return Err(NOT_ROWS);
    }
    let view = PackedCandidates::new(records, context, tombstones, blocked_by_sources);
    let mut outcomes = Vec::new();
    let mut scratch = Scratch::default();
    decide_into(&view, context.now, &mut scratch, &mut outcomes)?;
    let mut excluded = Vec::with_capacity(outcomes.len());
    for &row in by_id {
        if let Some(reason) = outcomes.get(row).ok_or(NOT_ROWS)? {
            excluded.push((row, *reason));
        }
    }
    // The winners are the survivors of stages 1-3 that no later stage
    // excluded, and the survivors carry the slot and key their order needs.
    let winners = scratch
        .survivors
        .iter()
        .filter(|(row, _, _)| matches!(outcomes.get(*row), Some(None)))
        .map(|&(row, slot, key)| (row, slot, key.0));
    let active = order::winners_in_order(context, winners);
    if active.len() + excluded.len() != outcomes.len() {
        return Err(Broken("a candidate has no outcome, or two"));
    }
    Ok(Resolution { active, excluded })
}

/// [`decide`], then the canonical order: winners by (scope id, key),
/// exclusions by id.
///
/// # Errors
/// [`Broken`], as [`decide_into`].
pub fn resolve(
    candidates: &CandidateSet<'_>,
    context: &Context<'_>,
    tombstones: &TombstoneIndex<'_>,
) -> Result<Resolution, Broken> {
    let outcomes = decide(candidates, context, tombstones)?;
    let mut active = Vec::new();
    let mut excluded = Vec::with_capacity(outcomes.len());
    for (row, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            None => active.push(row),
            Some(reason) => excluded.push((row, reason)),
        }
    }
    order::sort_active(candidates, context, &mut active)?;
    order::sort_excluded(candidates, &mut excluded)?;
    Ok(Resolution { active, excluded })
}

#[cfg(test)]
mod tests;
