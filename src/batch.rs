//! The batch form (`SPEC.md` §4): every context of a whole store at once.
//!
//! The store's records are indexed by scope once; each context then resolves
//! only the records of its (at most four) scopes, with the very pipeline of
//! [`crate::resolve`]: a record outside those scopes could neither bear an
//! edge nor share a group with one inside, so the result is exactly
//! `resolve(all records, context)` less its scope exclusions. Contexts run in
//! parallel on a work-stealing pool (rayon).

use rayon::prelude::*;

use crate::model::Reason;
use crate::model::ScopeKind;
use crate::resolve::hash::{map_with_capacity, Map};
use crate::resolve::{resolve, CandidateSet, Context, ScopeRef, TombstoneIndex};

/// All records of a store, and the rows of each scope.
#[derive(Debug)]
pub struct Store<'a> {
    records: CandidateSet<'a>,
    rows_by_scope: Map<ScopeRef<'a>, Vec<usize>>,
}

impl<'a> Store<'a> {
    /// Indexes `records` by scope (one pass).
    #[must_use]
    pub fn new(records: CandidateSet<'a>) -> Self {
        let mut rows_by_scope: Map<ScopeRef<'a>, Vec<usize>> = map_with_capacity(1024);
        for (row, record) in records.iter() {
            rows_by_scope.entry(record.scope).or_default().push(row);
        }
        Self {
            records,
            rows_by_scope,
        }
    }

    #[must_use]
    pub fn records(&self) -> &CandidateSet<'a> {
        &self.records
    }

    /// The rows of the records in scope of `context`, scope by scope.
    fn rows_in_scope<'s>(&'s self, context: &Context<'s>) -> impl Iterator<Item = usize> + 's {
        let context = *context;
        ScopeKind::ALL
            .into_iter()
            .filter_map(move |kind| context.scope_of(kind))
            .filter_map(move |scope| self.rows_by_scope.get(&scope))
            .flat_map(|rows| rows.iter().copied())
    }
}

/// One context's decisions, in store rows: winners in canonical order, then
/// (when asked for) exclusions by record id. Scope exclusions are not rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextDecisions {
    pub active: Vec<usize>,
    pub excluded: Vec<(usize, Reason)>,
}

/// What one worker reuses from context to context.
#[derive(Default)]
struct Scratch<'a> {
    candidates: CandidateSet<'a>,
    rows: Vec<usize>,
}

fn resolve_one<'a>(
    store: &Store<'a>,
    context: &Context<'_>,
    tombstones: &TombstoneIndex<'_>,
    include_excluded: bool,
    scratch: &mut Scratch<'a>,
) -> ContextDecisions {
    scratch.candidates.clear();
    scratch.rows.clear();
    for row in store.rows_in_scope(context) {
        if let Some(record) = store.records.get(row) {
            scratch.candidates.push(record);
            scratch.rows.push(row);
        }
    }
    let result = resolve(&scratch.candidates, context, tombstones);
    let store_row = |local: usize| scratch.rows.get(local).copied();
    ContextDecisions {
        active: result
            .active
            .iter()
            .filter_map(|&local| store_row(local))
            .collect(),
        excluded: if include_excluded {
            result
                .excluded
                .iter()
                .filter(|(_, reason)| *reason != Reason::Scope)
                .filter_map(|&(local, reason)| store_row(local).map(|row| (row, reason)))
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// Every context's decisions, in context order, computed in parallel (a few
/// contexts run on the calling thread: waking the pool would cost more).
#[must_use]
pub fn resolve_contexts(
    store: &Store<'_>,
    contexts: &[Context<'_>],
    tombstones: &TombstoneIndex<'_>,
    include_excluded: bool,
) -> Vec<ContextDecisions> {
    if contexts.len() < PARALLEL_FROM {
        let mut scratch = Scratch::default();
        return contexts
            .iter()
            .map(|context| resolve_one(store, context, tombstones, include_excluded, &mut scratch))
            .collect();
    }
    contexts
        .par_iter()
        .map_init(Scratch::default, |scratch, context| {
            resolve_one(store, context, tombstones, include_excluded, scratch)
        })
        .collect()
}

/// From this many contexts on, they are resolved on the rayon pool.
const PARALLEL_FROM: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Authority, Status};
    use crate::resolve::{Record, Tombstone};

    fn record(id: &'static str, key: &'static str, scope: ScopeRef<'static>) -> Record<'static> {
        Record {
            id,
            key,
            scope,
            status: Status::Active,
            authority: Authority::ModelInferred,
            version: 1,
            valid_from: 0,
            valid_until: None,
            observed_at: None,
            supersedes: None,
        }
    }

    fn context(user: &'static str, conversation: &'static str) -> Context<'static> {
        Context {
            now: 10,
            user_id: user,
            character_id: "c",
            conversation_id: conversation,
            scene_id: None,
        }
    }

    fn ids(store: &Store<'_>, rows: &[usize]) -> Vec<String> {
        rows.iter()
            .filter_map(|&row| store.records().get(row))
            .map(|r| r.id.to_owned())
            .collect()
    }

    #[test]
    fn each_context_sees_only_its_scopes_and_equals_a_single_resolve() {
        let records = [
            record("u1-pet", "pet", ScopeRef::user("u1")),
            record("u2-pet", "pet", ScopeRef::user("u2")),
            Record {
                supersedes: Some("u1-pet"),
                version: 2,
                ..record("k1-pet", "pet2", ScopeRef::conversation("k1"))
            },
            record("k2-x", "x", ScopeRef::conversation("k2")),
            record("u1-c-x", "x", ScopeRef::character("u1", "c")),
        ];
        let mut set = CandidateSet::with_capacity(records.len());
        for r in records {
            set.push(r);
        }
        let store = Store::new(set.clone());
        let contexts = [
            context("u1", "k1"),
            context("u1", "k2"),
            context("u2", "k1"),
        ];
        let index = TombstoneIndex::new(&[Tombstone {
            key: "x",
            scope: ScopeRef::conversation("k2"),
            blocks_sources_before: 0,
        }]);
        let batch = resolve_contexts(&store, &contexts, &index, true);
        for (context, decisions) in contexts.iter().zip(&batch) {
            let single = resolve(&set, context, &index);
            assert_eq!(decisions.active, single.active);
            let without_scope: Vec<_> = single
                .excluded
                .into_iter()
                .filter(|(_, r)| *r != Reason::Scope)
                .collect();
            assert_eq!(decisions.excluded, without_scope);
        }
        // u1 in k1: the conversation's correction hides the user-level record;
        // "character:u1:c" sorts before "conversation:k1".
        assert_eq!(ids(&store, &batch[0].active), ["u1-c-x", "k1-pet"]);
        assert_eq!(ids(&store, &batch[1].active), ["u1-c-x", "u1-pet"]);
        assert!(batch[1]
            .excluded
            .iter()
            .any(|&(row, reason)| row == 3 && reason == Reason::Forgotten));
    }

    #[test]
    fn without_exclusions_only_winners_are_listed() {
        let mut set = CandidateSet::with_capacity(2);
        set.push(record("a", "k", ScopeRef::user("u1")));
        set.push(Record {
            version: 0,
            ..record("b", "k", ScopeRef::user("u1"))
        });
        let store = Store::new(set);
        let batch = resolve_contexts(
            &store,
            &[context("u1", "k1")],
            &TombstoneIndex::default(),
            false,
        );
        assert_eq!(ids(&store, &batch[0].active), ["a"]);
        assert!(batch[0].excluded.is_empty());
    }

    #[test]
    fn no_contexts_and_no_records() {
        let store = Store::new(CandidateSet::default());
        assert!(resolve_contexts(&store, &[], &TombstoneIndex::default(), true).is_empty());
        let batch = resolve_contexts(
            &store,
            &[context("u", "k")],
            &TombstoneIndex::default(),
            true,
        );
        assert_eq!(batch, [ContextDecisions::default()]);
    }
}
