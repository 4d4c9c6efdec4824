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
//!
//! A set grows by [`PreparedSet::push`] (a chat turn adds a few records):
//! the new row is numbered and placed in both orders without redoing the
//! others; a forget raises one group's bound ([`PreparedSet::forget`]). Its
//! texts live in one buffer and every table is a `Vec`, so a copy of a set
//! costs a few `memcpy`s, and a store can hand out an updated copy while
//! readers keep resolving the old one.

use std::cmp::Ordering;
use std::ops::Range;

use super::candidates::{CandidateSet, Context, Facts, Record, ScopeRef, Slot, Tombstone};
use super::forget::latest;
use super::hash::{map_with_capacity, Map};
use super::order::compare_scope_ids;
use super::view::Candidates;
use super::{decide_into, scope, Resolution, Scratch};
use crate::error::Broken;
use crate::model::{Reason, ScopeKind};

/// The row a `supersedes` names when it names no candidate.
const NO_ROW: u32 = u32::MAX;

/// A scope with its ids owned (a prepared set outlives its input).
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// A tombstone as a prepared set keeps it.
#[derive(Clone, Debug)]
struct KeptTombstone {
    scope: OwnedScope,
    key: String,
    bound: i64,
    user_wide: bool,
}

impl KeptTombstone {
    /// Whether it blocks the (`scope`, `key`) group (`docs/spec.md` §2.3).
    fn reaches(&self, scope: &ScopeRef<'_>, key: &str) -> bool {
        self.key == key
            && if self.user_wide {
                scope.owning_user() == Some(self.scope.first.as_str())
            } else {
                self.scope.borrow() == *scope
            }
    }
}

/// The latest bound of the `tombstones` that reach the (`scope`, `key`) group.
fn group_bound(tombstones: &[KeptTombstone], scope: &ScopeRef<'_>, key: &str) -> Option<i64> {
    tombstones
        .iter()
        .filter(|tombstone| tombstone.reaches(scope, key))
        .map(|tombstone| tombstone.bound)
        .max()
}

/// Why a set was not prepared or not grown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Two candidates share an id: rows `earlier` and `later` (the first
    /// such `later`). [`super::resolve`] callers reject this before resolving.
    RepeatedId { earlier: usize, later: usize },
    /// More than `u32::MAX - 1` candidates, or 4 GiB of ids, keys and
    /// `supersedes` together: more than a set numbers.
    TooLarge,
    /// An invariant of the set is broken (a bug).
    Broken(Broken),
}

/// Candidates and tombstones prepared to resolve in any context (see the
/// module documentation). Owns everything it needs: the input may go.
#[derive(Clone, Debug, Default)]
pub struct PreparedSet {
    /// Every row's id, key and `supersedes`, back to back.
    texts: String,
    ids: Vec<Range<u32>>,
    keys: Vec<Range<u32>>,
    /// Rows whose `supersedes` names no candidate yet, with the name.
    dangling: Vec<(u32, Range<u32>)>,
    /// The distinct scopes of the candidates, and each one's rank by scope id.
    scopes: Vec<OwnedScope>,
    scope_ranks: Vec<u32>,
    /// Every tombstone, with the latest bound per (scope, key, user-wide): a
    /// group formed later takes its bound from here.
    tombstones: Vec<KeptTombstone>,
    scope_of_row: Vec<u32>,
    /// Each row's (scope, key) group.
    group_of_row: Vec<u32>,
    /// The latest tombstone bound of each group.
    group_bounds: Vec<Option<i64>>,
    facts: Vec<Facts>,
    /// Each row: blocked by the messages it cites (`super::sources`), as
    /// its preparer decided with the tombstones' hashes.
    blocked_by_sources: Vec<bool>,
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

fn number(count: usize) -> Result<u32, Refused> {
    u32::try_from(count)
        .ok()
        .filter(|&n| n != NO_ROW)
        .ok_or(Refused::TooLarge)
}

impl PreparedSet {
    /// Prepares `candidates` with `tombstones`. The rows the messages they
    /// cite block must be marked in `candidates` already
    /// ([`super::SourceIndex::mark`] with the same tombstones): the set keeps
    /// no message id.
    ///
    /// # Errors
    /// [`Refused`]: a repeated id, or a set too large to number.
    pub fn new(
        candidates: &CandidateSet<'_>,
        tombstones: &[Tombstone<'_>],
    ) -> Result<Self, Refused> {
        let rows = candidates.len();
        number(rows)?;
        let mut row_of_id: Map<&str, u32> = map_with_capacity(rows);
        for (row, &id) in candidates.ids().iter().enumerate() {
            if let Some(&earlier) = row_of_id.get(id) {
                return Err(Refused::RepeatedId {
                    earlier: earlier as usize,
                    later: row,
                });
            }
            row_of_id.insert(id, number(row)?);
        }
        let mut bounds: Map<(ScopeRef<'_>, &str, bool), i64> = map_with_capacity(tombstones.len());
        for tombstone in tombstones {
            let bound = bounds
                .entry((tombstone.scope, tombstone.key, tombstone.user_wide))
                .or_insert(tombstone.blocks_sources_before);
            *bound = (*bound).max(tombstone.blocks_sources_before);
        }
        // The user-wide ones by (user, key): each reaches every group its user owns.
        let mut user_bounds: Map<(&str, &str), i64> = Map::default();
        for (&(scope, key, user_wide), &bound) in &bounds {
            if user_wide {
                user_bounds.insert((scope.first, key), bound);
            }
        }
        let mut set = Self {
            tombstones: bounds
                .iter()
                .map(|(&(scope, key, user_wide), &bound)| KeptTombstone {
                    scope: OwnedScope::new(&scope),
                    key: key.to_owned(),
                    bound,
                    user_wide,
                })
                .collect(),
            ..Self::default()
        };
        let mut scope_numbers: Map<ScopeRef<'_>, u32> = map_with_capacity(8);
        let mut group_numbers: Map<(u32, &str), u32> = map_with_capacity(rows);
        for (_, record) in candidates.iter() {
            let scope = if let Some(&scope) = scope_numbers.get(&record.scope) {
                scope
            } else {
                let scope = set.add_scope(&record.scope)?;
                scope_numbers.insert(record.scope, scope);
                scope
            };
            let group = if let Some(&group) = group_numbers.get(&(scope, record.key)) {
                group
            } else {
                let group = number(set.group_bounds.len())?;
                let on_scope = bounds.get(&(record.scope, record.key, false)).copied();
                let user_wide = record
                    .scope
                    .owning_user()
                    .and_then(|user| user_bounds.get(&(user, record.key)).copied());
                set.group_bounds.push(latest(on_scope, user_wide));
                group_numbers.insert((scope, record.key), group);
                group
            };
            let target = record
                .supersedes
                .and_then(|id| row_of_id.get(id).copied())
                .unwrap_or(NO_ROW);
            set.append_row(&record, scope, group, target)?;
            set.blocked_by_sources
                .push(candidates.blocked_by_sources(set.blocked_by_sources.len()));
        }
        set.rank_scopes();
        set.sort_orders();
        Ok(set)
    }

    /// The number of a new distinct scope (ranks are redone by the caller).
    fn add_scope(&mut self, scope: &ScopeRef<'_>) -> Result<u32, Refused> {
        let number = number(self.scopes.len())?;
        self.scopes.push(OwnedScope::new(scope));
        Ok(number)
    }

    /// Ranks the distinct scopes by scope id.
    fn rank_scopes(&mut self) {
        let mut order: Vec<usize> = (0..self.scopes.len()).collect();
        let scopes = &self.scopes;
        order.sort_unstable_by(|&a, &b| match (scopes.get(a), scopes.get(b)) {
            (Some(a), Some(b)) => compare_scope_ids(&a.borrow(), &b.borrow()),
            _ => Ordering::Equal,
        });
        self.scope_ranks = vec![0; self.scopes.len()];
        for (rank, &scope) in order.iter().enumerate() {
            if let Some(entry) = self.scope_ranks.get_mut(scope) {
                *entry = u32::try_from(rank).unwrap_or(NO_ROW);
            }
        }
    }

    /// Adds `record`'s row (its texts, numbers and facts), not yet placed in
    /// the two orders.
    fn append_row(
        &mut self,
        record: &Record<'_>,
        scope: u32,
        group: u32,
        target: u32,
    ) -> Result<(), Refused> {
        let row = number(self.facts.len())?;
        let id = self.store_text(record.id)?;
        let key = self.store_text(record.key)?;
        if target == NO_ROW {
            if let Some(named) = record.supersedes {
                let named = self.store_text(named)?;
                self.dangling.push((row, named));
            }
        }
        self.ids.push(id);
        self.keys.push(key);
        self.scope_of_row.push(scope);
        self.group_of_row.push(group);
        self.facts.push(record.facts());
        self.targets.push(target);
        self.id_ranks.push(0);
        Ok(())
    }

    fn store_text(&mut self, text: &str) -> Result<Range<u32>, Refused> {
        let start = number(self.texts.len())?;
        self.texts.push_str(text);
        Ok(start..number(self.texts.len())?)
    }

    fn text(&self, span: &Range<u32>) -> &str {
        self.texts
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }

    fn id_of(&self, row: u32) -> &str {
        self.ids
            .get(row as usize)
            .map_or("", |span| self.text(span))
    }

    fn key_of(&self, row: u32) -> &str {
        self.keys
            .get(row as usize)
            .map_or("", |span| self.text(span))
    }

    /// The rank by scope id of row `row`'s scope.
    fn scope_rank_of(&self, row: u32) -> u32 {
        self.scope_of_row
            .get(row as usize)
            .and_then(|&scope| self.scope_ranks.get(scope as usize))
            .copied()
            .unwrap_or(NO_ROW)
    }

    /// Row `row`'s place in the winners' order: its scope's rank, then its key.
    fn compare_scope_and_key(&self, row: u32, scope_rank: u32, key: &str) -> Ordering {
        self.scope_rank_of(row)
            .cmp(&scope_rank)
            .then_with(|| self.key_of(row).as_bytes().cmp(key.as_bytes()))
    }

    /// Both orders, from scratch.
    fn sort_orders(&mut self) {
        let rows = u32::try_from(self.facts.len()).unwrap_or(NO_ROW);
        let mut by_id: Vec<u32> = (0..rows).collect();
        by_id.sort_unstable_by(|&a, &b| self.id_of(a).as_bytes().cmp(self.id_of(b).as_bytes()));
        let mut by_scope_and_key = by_id.clone();
        by_scope_and_key.sort_unstable_by(|&a, &b| {
            self.compare_scope_and_key(a, self.scope_rank_of(b), self.key_of(b))
        });
        self.by_id = by_id;
        self.by_scope_and_key = by_scope_and_key;
        self.renumber_id_ranks(0);
    }

    /// `id_ranks` from position `from` of `by_id` on.
    fn renumber_id_ranks(&mut self, from: usize) {
        for (rank, &row) in self.by_id.iter().enumerate().skip(from) {
            if let Some(entry) = self.id_ranks.get_mut(row as usize) {
                *entry = u32::try_from(rank).unwrap_or(NO_ROW);
            }
        }
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

    fn blocked_by_sources(&self, index: usize) -> bool {
        self.set
            .blocked_by_sources
            .get(index)
            .copied()
            .unwrap_or(false)
    }

    fn compare_ids(&self, a: usize, b: usize) -> Ordering {
        self.set.id_ranks.get(a).cmp(&self.set.id_ranks.get(b))
    }
}

mod update;

#[cfg(test)]
mod tests;
