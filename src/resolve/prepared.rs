//! A candidate set read once and resolved in many contexts: what a per-turn
//! store keeps for the contexts it serves turn after turn.
//!
//! [`super::resolve`] reads strings on every call: it compares every
//! candidate's scope with the context, hashes ids for stage 4 and keys for
//! stages 3 and 5, and sorts its output by text. None of that depends on the
//! context except which scopes are visible, so [`PreparedSet`] does it once:
//! ids become rows, each (scope, key) group a number with its tombstone
//! bound, and both output orders are computed ahead. A call then compares
//! the context with the set's few distinct scopes, runs the pipeline
//! ([`decide_into`]) over numbers, and reads the winners and exclusions off
//! the two precomputed orders: linear, no sort, no string read per candidate.
//!
//! Within one context a slot names a scope (every in-scope record has its
//! slot's scope), so grouping by (scope, key) is grouping by (slot, key), and
//! the tombstones on (the context's scope of the slot, key) are those on the
//! record's own (scope, key): the answer is exactly [`super::resolve`]'s.

use std::cmp::Ordering;

use super::candidates::{CandidateSet, Context, Facts, ScopeRef, Slot, Tombstone};
use super::hash::{map_with_capacity, Map};
use super::order::compare_scope_ids;
use super::view::Candidates;
use super::{decide_into, scope, Resolution, Scratch};
use crate::error::Broken;
use crate::model::{Reason, ScopeKind};

/// The row a `supersedes` names when it names no candidate.
const NO_ROW: u32 = u32::MAX;

/// A scope with its ids owned (a prepared set outlives its input).
#[derive(Clone, Debug)]
struct OwnedScope {
    kind: ScopeKind,
    first: String,
    second: String,
    owner: Option<String>,
}

impl OwnedScope {
    fn new(scope: &ScopeRef<'_>) -> Self {
        Self {
            kind: scope.kind,
            first: scope.first.to_owned(),
            second: scope.second.to_owned(),
            owner: scope.owner.map(str::to_owned),
        }
    }

    fn borrow(&self) -> ScopeRef<'_> {
        ScopeRef {
            kind: self.kind,
            first: &self.first,
            second: &self.second,
            owner: self.owner.as_deref(),
        }
    }
}

/// Two candidates share an id: rows `earlier` and `later` (the first such `later`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepeatedId {
    pub earlier: usize,
    pub later: usize,
}

/// Candidates and tombstones prepared to resolve in any context (see the
/// module documentation). Owns everything it needs: the input may go.
#[derive(Clone, Debug)]
pub struct PreparedSet {
    /// The distinct scopes of the candidates.
    scopes: Vec<OwnedScope>,
    scope_of_row: Vec<u32>,
    /// Each row's (scope, key) group.
    group_of_row: Vec<u32>,
    /// The latest tombstone bound of each group.
    group_bounds: Vec<Option<i64>>,
    facts: Vec<Facts>,
    /// The row each candidate's `supersedes` names ([`NO_ROW`]: none).
    targets: Vec<u32>,
    /// Each row's position in id order.
    id_ranks: Vec<u32>,
    /// The rows by id: the order of exclusions.
    by_id: Vec<u32>,
    /// The rows by (scope id, key): the order of winners.
    by_scope_and_key: Vec<u32>,
}

/// What one call needs besides the set, kept by a caller that resolves many
/// times so that nothing is allocated per call.
#[derive(Default)]
pub struct PreparedScratch {
    visible: Vec<Option<Slot>>,
    outcomes: Vec<Option<Reason>>,
    pipeline: Scratch<u32, u32>,
}

fn row_number(row: usize) -> Result<u32, Broken> {
    u32::try_from(row)
        .ok()
        .filter(|&row| row != NO_ROW)
        .ok_or(Broken("more candidates than a prepared set numbers"))
}

impl PreparedSet {
    /// Prepares `candidates` with `tombstones` (those on a scope or key no
    /// candidate has are dropped: they can block nothing).
    ///
    /// # Errors
    /// [`RepeatedId`] when two candidates share an id, which [`super::resolve`]
    /// callers must reject before resolving; `Ok` otherwise.
    ///
    /// # Panics
    /// Never; more than `u32::MAX - 1` candidates are refused as a repeated
    /// id would be, by an `Err` naming the first row past the limit.
    pub fn new(
        candidates: &CandidateSet<'_>,
        tombstones: &[Tombstone<'_>],
    ) -> Result<Self, RepeatedId> {
        let rows = candidates.len();
        if rows >= NO_ROW as usize {
            return Err(RepeatedId {
                earlier: 0,
                later: NO_ROW as usize,
            });
        }
        let mut row_of_id: Map<&str, u32> = map_with_capacity(rows);
        for (row, &id) in candidates.ids().iter().enumerate() {
            let number = u32::try_from(row).unwrap_or(NO_ROW);
            if let Some(&earlier) = row_of_id.get(id) {
                return Err(RepeatedId {
                    earlier: earlier as usize,
                    later: row,
                });
            }
            row_of_id.insert(id, number);
        }

        let mut scope_numbers: Map<ScopeRef<'_>, u32> = map_with_capacity(8);
        let mut scopes = Vec::new();
        let mut group_numbers: Map<(u32, &str), u32> = map_with_capacity(rows);
        let mut scope_of_row = Vec::with_capacity(rows);
        let mut group_of_row = Vec::with_capacity(rows);
        for (scope, &key) in candidates.scopes().iter().zip(candidates.keys()) {
            let next = u32::try_from(scopes.len()).unwrap_or(NO_ROW);
            let number = *scope_numbers.entry(*scope).or_insert_with(|| {
                scopes.push(OwnedScope::new(scope));
                next
            });
            let next = u32::try_from(group_numbers.len()).unwrap_or(NO_ROW);
            scope_of_row.push(number);
            group_of_row.push(*group_numbers.entry((number, key)).or_insert(next));
        }
        let mut group_bounds = vec![None; group_numbers.len()];
        for tombstone in tombstones {
            let group = scope_numbers
                .get(&tombstone.scope)
                .and_then(|&scope| group_numbers.get(&(scope, tombstone.key)));
            if let Some(bound) = group.and_then(|&group| group_bounds.get_mut(group as usize)) {
                let latest = bound.map_or(tombstone.blocks_sources_before, |b: i64| {
                    b.max(tombstone.blocks_sources_before)
                });
                *bound = Some(latest);
            }
        }

        let ids = candidates.ids();
        let mut by_id: Vec<u32> = (0..rows).filter_map(|row| row_number(row).ok()).collect();
        by_id.sort_unstable_by(|&a, &b| text_at(ids, a).cmp(text_at(ids, b)));
        let mut id_ranks = vec![0; rows];
        for (rank, &row) in by_id.iter().enumerate() {
            if let Some(entry) = id_ranks.get_mut(row as usize) {
                *entry = u32::try_from(rank).unwrap_or(NO_ROW);
            }
        }
        // Scopes ranked once by id, so rows compare by (rank, key).
        let mut scope_order: Vec<usize> = (0..scopes.len()).collect();
        scope_order.sort_unstable_by(|&a, &b| match (scopes.get(a), scopes.get(b)) {
            (Some(a), Some(b)) => compare_scope_ids(&a.borrow(), &b.borrow()),
            _ => Ordering::Equal,
        });
        let mut scope_ranks = vec![0_usize; scopes.len()];
        for (rank, &number) in scope_order.iter().enumerate() {
            if let Some(entry) = scope_ranks.get_mut(number) {
                *entry = rank;
            }
        }
        let keys = candidates.keys();
        let scope_rank = |row: u32| {
            scope_of_row
                .get(row as usize)
                .and_then(|&number| scope_ranks.get(number as usize))
                .copied()
        };
        let mut by_scope_and_key = by_id.clone();
        by_scope_and_key.sort_unstable_by(|&a, &b| {
            scope_rank(a)
                .cmp(&scope_rank(b))
                .then_with(|| text_at(keys, a).cmp(text_at(keys, b)))
        });

        let targets = (0..rows)
            .map(|row| {
                candidates
                    .supersedes(row)
                    .and_then(|id| row_of_id.get(id).copied())
                    .unwrap_or(NO_ROW)
            })
            .collect();
        let facts = (0..rows).filter_map(|row| candidates.facts(row)).collect();
        Ok(Self {
            scopes,
            scope_of_row,
            group_of_row,
            group_bounds,
            facts,
            targets,
            id_ranks,
            by_id,
            by_scope_and_key,
        })
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.facts.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// [`super::resolve`] of the prepared candidates and tombstones in `context`.
    ///
    /// # Errors
    /// [`Broken`] when an invariant of the set is broken (a bug).
    pub fn resolve(
        &self,
        context: &Context<'_>,
        scratch: &mut PreparedScratch,
    ) -> Result<Resolution, Broken> {
        scratch.visible.clear();
        scratch.visible.extend(self.scopes.iter().map(|owned| {
            let scope = owned.borrow();
            scope::matches(&scope, context).then(|| scope.slot())
        }));
        let view = PreparedView {
            set: self,
            visible: &scratch.visible,
        };
        decide_into(
            &view,
            context.now,
            &mut scratch.pipeline,
            &mut scratch.outcomes,
        )?;
        let outcome = |row: u32| {
            scratch
                .outcomes
                .get(row as usize)
                .copied()
                .ok_or(Broken("a prepared order names no candidate"))
        };
        let mut active = Vec::new();
        for &row in &self.by_scope_and_key {
            if outcome(row)?.is_none() {
                active.push(row as usize);
            }
        }
        let mut excluded = Vec::with_capacity(self.len() - active.len().min(self.len()));
        for &row in &self.by_id {
            if let Some(reason) = outcome(row)? {
                excluded.push((row as usize, reason));
            }
        }
        Ok(Resolution { active, excluded })
    }
}

fn text_at<'t>(column: &[&'t str], row: u32) -> &'t [u8] {
    column.get(row as usize).map_or(&[], |text| text.as_bytes())
}

/// A prepared set seen from one context: `visible` holds, for each of the
/// set's distinct scopes, its slot when the context sees it.
struct PreparedView<'v> {
    set: &'v PreparedSet,
    visible: &'v [Option<Slot>],
}

impl Candidates for PreparedView<'_> {
    /// A record's id, as its row (ids are unique).
    type Id = u32;
    /// A record's (scope, key) group: within a context, its (slot, key).
    type Key = u32;

    fn len(&self) -> usize {
        self.set.facts.len()
    }

    fn slot_in_scope(&self, index: usize) -> Option<Slot> {
        let number = *self.set.scope_of_row.get(index)?;
        self.visible.get(number as usize).copied().flatten()
    }

    fn facts(&self, index: usize) -> Option<Facts> {
        self.set.facts.get(index).copied()
    }

    fn id(&self, index: usize) -> Option<u32> {
        u32::try_from(index).ok()
    }

    fn supersedes(&self, index: usize) -> Option<u32> {
        self.set
            .targets
            .get(index)
            .copied()
            .filter(|&row| row != NO_ROW)
    }

    fn key(&self, index: usize) -> Option<u32> {
        self.set.group_of_row.get(index).copied()
    }

    fn forget_bound(&self, _slot: Slot, group: u32) -> Option<i64> {
        self.set.group_bounds.get(group as usize).copied().flatten()
    }

    fn compare_ids(&self, a: usize, b: usize) -> Ordering {
        self.set.id_ranks.get(a).cmp(&self.set.id_ranks.get(b))
    }
}

#[cfg(test)]
mod tests;
