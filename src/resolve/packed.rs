//! One record packed for resolution, and the per-turn view over packed records.
//!
//! A [`PackedRecord`] keeps what the pipeline reads of one record, with its
//! strings (id, key, scope ids, `supersedes`) back to back in one allocation:
//! the native `MemoryRecord` keeps one, so that a call touches one or two
//! cache lines per candidate. [`PackedCandidates`] resolves a slice of them in
//! place: copying every field into a [`super::CandidateSet`] first cost a
//! fifth of a per-turn call at 200 candidates, more than the view's reads.

use std::cmp::Ordering;

use super::candidates::{Context, Facts, Record, ScopeRef, Slot};
use super::forget::{ContextTombstones, TombstoneIndex};
use super::scope;
use super::view::Candidates;
use crate::model::ScopeKind;

/// A record's strings exceed the 4 GiB one packed record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge;

/// What the resolver reads of one record, owned (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedRecord {
    text: Box<str>,
    /// Where each string ends in `text`: id, key, scope first, scope second,
    /// scope owner, supersedes.
    ends: [u32; 6],
    has_owner: bool,
    has_supersedes: bool,
    scope_kind: ScopeKind,
    facts: Facts,
}

impl PackedRecord {
    /// `record`, packed.
    ///
    /// # Errors
    /// [`TooLarge`] when its strings hold more than `u32::MAX` bytes together.
    pub fn new(record: &Record<'_>) -> Result<Self, TooLarge> {
        let pieces = [
            record.id,
            record.key,
            record.scope.first,
            record.scope.second,
            record.scope.owner.unwrap_or(""),
            record.supersedes.unwrap_or(""),
        ];
        let mut text = String::with_capacity(pieces.iter().map(|piece| piece.len()).sum());
        let mut ends = [0_u32; 6];
        for (end, piece) in ends.iter_mut().zip(pieces) {
            text.push_str(piece);
            *end = u32::try_from(text.len()).map_err(|_| TooLarge)?;
        }
        Ok(Self {
            text: text.into_boxed_str(),
            ends,
            has_owner: record.scope.owner.is_some(),
            has_supersedes: record.supersedes.is_some(),
            scope_kind: record.scope.kind,
            facts: record.facts(),
        })
    }

    fn piece(&self, index: usize) -> &str {
        let start = match index.checked_sub(1) {
            Some(before) => self.ends.get(before).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(index).copied().unwrap_or(start);
        // Boundaries were taken from the pieces themselves, so `get` always succeeds.
        self.text.get(start as usize..end as usize).unwrap_or("")
    }

    #[must_use]
    pub fn id(&self) -> &str {
        self.piece(0)
    }

    #[must_use]
    pub fn key(&self) -> &str {
        self.piece(1)
    }

    #[must_use]
    pub fn scope(&self) -> ScopeRef<'_> {
        ScopeRef {
            kind: self.scope_kind,
            first: self.piece(2),
            second: self.piece(3),
            owner: self.has_owner.then(|| self.piece(4)),
        }
    }

    #[must_use]
    pub fn supersedes(&self) -> Option<&str> {
        self.has_supersedes.then(|| self.piece(5))
    }

    #[must_use]
    pub fn facts(&self) -> Facts {
        self.facts
    }

    /// The record as the pipeline's other forms read it.
    #[must_use]
    pub fn record(&self) -> Record<'_> {
        Record::of(
            self.id(),
            self.key(),
            self.scope(),
            self.facts,
            self.supersedes(),
        )
    }
}

/// Packed records, by position, seen from one context: the per-turn form
/// of [`Candidates`] that reads each record where it lives.
pub struct PackedCandidates<'v> {
    records: &'v [&'v PackedRecord],
    context: &'v Context<'v>,
    tombstones: ContextTombstones<'v>,
    /// By row: blocked by the messages it cites (empty: none is).
    blocked_by_sources: &'v [bool],
}

impl<'v> PackedCandidates<'v> {
    #[must_use]
    pub fn new(
        records: &'v [&'v PackedRecord],
        context: &'v Context<'v>,
        tombstones: &'v TombstoneIndex<'_>,
        blocked_by_sources: &'v [bool],
    ) -> Self {
        Self {
            records,
            context,
            tombstones: tombstones.for_context(context),
            blocked_by_sources,
        }
    }
}

/// A packed record's id or key, as the pipeline's hash tables hold it: a
/// type of its own, so that the tables over packed records are their own
/// instances. Sharing the `&str` instances with the candidate-set form made
/// the compiler stop inlining the table lookups there (`core_resolve` 10-15%
/// slower at 200 candidates; `ContextTombstones::bound`, which both forms
/// call, is inlined by its own attribute).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PackedText<'v>(pub &'v str);

impl<'v> Candidates for PackedCandidates<'v> {
    type Id = PackedText<'v>;
    type Key = PackedText<'v>;

    fn len(&self) -> usize {
        self.records.len()
    }

    fn slot_in_scope(&self, index: usize) -> Option<Slot> {
        let scope = self.records.get(index)?.scope();
        scope::matches(&scope, self.context).then(|| scope.slot())
    }

    fn facts(&self, index: usize) -> Option<Facts> {
        self.records.get(index).map(|record| record.facts)
    }

    fn id(&self, index: usize) -> Option<PackedText<'v>> {
        self.records
            .get(index)
            .map(|record| PackedText(record.id()))
    }

    fn supersedes(&self, index: usize) -> Option<PackedText<'v>> {
        self.records.get(index)?.supersedes().map(PackedText)
    }

    fn key(&self, index: usize) -> Option<PackedText<'v>> {
        self.records
            .get(index)
            .map(|record| PackedText(record.key()))
    }

    fn forget_bound(&self, slot: Slot, key: PackedText<'v>) -> Option<i64> {
        self.tombstones.bound(slot, key.0)
    }

    fn blocked_by_sources(&self, index: usize) -> bool {
        self.blocked_by_sources.get(index).copied().unwrap_or(false)
    }

    fn compare_ids(&self, a: usize, b: usize) -> Ordering {
        let id = |row: usize| self.records.get(row).map(|record| record.id().as_bytes());
        id(a).cmp(&id(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Reason;
    use crate::resolve::order::rows_by_id;
    use crate::resolve::{resolve, resolve_packed_in_id_order, TombstoneIndex};
    use crate::test_support::generated::{contexts, random_records, random_tombstones};
    use crate::test_support::{set_of, Rng};

    #[test]
    fn a_packed_record_reads_back_as_it_was_given() {
        let mut rng = Rng(0x9ac4_ed00_0000_0001);
        for _ in 0..200 {
            for record in random_records(&mut rng) {
                let packed = PackedRecord::new(&record).map_err(|_| "too large");
                assert_eq!(packed.as_ref().map(PackedRecord::record), Ok(record));
            }
        }
    }

    #[test]
    fn packed_records_resolve_as_the_candidate_set_does_in_every_context() {
        let mut rng = Rng(0x9ac4_ed00_0000_0002);
        let contexts = contexts();
        let mut seen = [0_usize; Reason::ALL.len()];
        for _ in 0..600 {
            let records = random_records(&mut rng);
            let tombstones = random_tombstones(&mut rng);
            let set = set_of(&records);
            let owned: Vec<PackedRecord> = records
                .iter()
                .filter_map(|record| PackedRecord::new(record).ok())
                .collect();
            let packed: Vec<&PackedRecord> = owned.iter().collect();
            let by_id = rows_by_id(packed.iter().map(|record| record.id()));
            assert_eq!(by_id, rows_by_id(set.ids().iter().copied()));
            let Ok(by_id) = by_id else {
                panic!("generated ids are unique")
            };
            let index = TombstoneIndex::new(&tombstones);
            for context in &contexts {
                let expected = resolve(&set, context, &index).map_err(|b| b.to_string());
                let got = resolve_packed_in_id_order(&packed, context, &index, &[], &by_id)
                    .map_err(|b| b.to_string());
                assert_eq!(got, expected, "{records:?} {tombstones:?} {context:?}");
                if let Ok(resolution) = expected {
                    for (_, reason) in resolution.excluded {
                        seen[reason as usize] += 1;
                    }
                }
            }
        }
        // The generator reaches every reason, so the comparison covers every stage.
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    }

    #[test]
    fn an_order_of_other_rows_is_refused() {
        let mut rng = Rng(11);
        let records = std::iter::repeat_with(|| random_records(&mut rng))
            .find(|records| records.len() > 1)
            .unwrap_or_default();
        let owned: Vec<PackedRecord> = records
            .iter()
            .filter_map(|record| PackedRecord::new(record).ok())
            .collect();
        let packed: Vec<&PackedRecord> = owned.iter().collect();
        let context = contexts()[0];
        let index = TombstoneIndex::default();
        let short: Vec<usize> = (1..packed.len()).collect();
        assert!(packed.len() > 1);
        assert!(resolve_packed_in_id_order(&packed, &context, &index, &[], &short).is_err());
        // Past the end: a row that is no record's.
        let beyond: Vec<usize> = (1..=packed.len()).collect();
        assert!(resolve_packed_in_id_order(&packed, &context, &index, &[], &beyond).is_err());
    }
}
