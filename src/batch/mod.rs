//! The batch form (`SPEC.md` §4): every context of a whole store at once.
//!
//! The store's ids, keys and scopes are interned to numbers once
//! ([`intern`]); its rows are indexed by scope. Each context then resolves
//! only the records of its (at most four) scopes, with the very pipeline of
//! [`crate::resolve`] ([`decide_into`]) seen through [`ContextRows`]: a
//! record outside those scopes could neither bear an edge nor share a group
//! with one inside, so the result is exactly `resolve(all records, context)`
//! less its scope exclusions. Contexts run in chunks on a work-stealing pool
//! (rayon); each worker reuses its buffers from context to context.

pub mod intern;

use std::cmp::Ordering;
use std::ops::Range;

use rayon::prelude::*;

use crate::model::{Authority, Reason, ScopeKind, Status};
use crate::resolve::hash::{map_with_capacity, text_hasher, Hashed, Map};
use crate::resolve::order::{scope_ranks, sort_by_text};
use crate::resolve::{
    decide_into, CandidateSet, Candidates, Context, Facts, ScopeRef, Scratch, Tombstone,
};
use intern::{first_duplicate, Interned, KeyRanks, ScopeIndex, ScopeKey, NO_ROW};

/// A store of records: one column per field, ids hashed once, keys and
/// scopes interned.
pub struct Store<'a> {
    pub(crate) ids: Vec<Hashed<'a>>,
    pub(crate) kinds: Vec<ScopeKind>,
    pub(crate) scope_numbers: Vec<u32>,
    pub(crate) key_ranks: Vec<u32>,
    pub(crate) supersedes: Vec<Option<Hashed<'a>>>,
    pub(crate) statuses: Vec<Status>,
    pub(crate) authorities: Vec<Authority>,
    pub(crate) versions: Vec<i64>,
    pub(crate) valid_from: Vec<i64>,
    /// Empty when no record has an end (the column is absent).
    pub(crate) valid_until: Vec<Option<i64>>,
    /// Empty when no record has an observation time (the column is absent).
    pub(crate) observed_at: Vec<Option<i64>>,
    pub(crate) keys: KeyRanks<'a>,
    /// The `user_id`, `character_id`, `conversation_id` and `scene_id` values.
    pub(crate) scope_ids: [Interned<'a>; 4],
    pub(crate) scopes: ScopeIndex,
}

/// A record id repeated at rows `earlier` and `later` (the first such `later`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DuplicateId {
    pub earlier: usize,
    pub later: usize,
}

/// The scope of `kind` with ids numbered by the four id columns' tables:
/// `numbers` holds one row's (or one context's) `user_id`, `character_id`,
/// `conversation_id` and `scene_id` numbers.
#[must_use]
pub fn scope_key(kind: ScopeKind, numbers: [u32; 4]) -> ScopeKey {
    let [user, character, conversation, scene] = numbers;
    match kind {
        ScopeKind::User => (kind, user, 0),
        ScopeKind::Character => (kind, user, character),
        ScopeKind::Conversation => (kind, conversation, 0),
        ScopeKind::Scene => (kind, conversation, scene),
    }
}

impl<'a> Store<'a> {
    /// The store of a candidate set's records (rows in set order).
    pub fn from_candidates(records: &CandidateSet<'a>) -> Result<Self, DuplicateId> {
        let rows = records.len();
        let state = text_hasher();
        let hashed = |text: &'a str| Hashed::new(&state, text);
        let ids: Vec<Hashed<'a>> = records.ids().iter().map(|id| hashed(id)).collect();
        if let Some((earlier, later)) = first_duplicate(&ids) {
            return Err(DuplicateId { earlier, later });
        }
        let (keys, key_ranks) =
            KeyRanks::build(records.keys().iter().map(|k| Some(hashed(k))).collect());
        // One-field scopes leave their second column null, as Arrow input does.
        let column = |field: fn(&ScopeRef<'a>) -> Option<&'a str>| {
            Interned::build(
                records
                    .scopes()
                    .iter()
                    .map(|scope| field(scope).map(hashed))
                    .collect(),
            )
        };
        let (users, user_numbers) =
            column(|s| matches!(s.kind, ScopeKind::User | ScopeKind::Character).then_some(s.first));
        let (characters, character_numbers) =
            column(|s| (s.kind == ScopeKind::Character).then_some(s.second));
        let (conversations, conversation_numbers) = column(|s| {
            matches!(s.kind, ScopeKind::Conversation | ScopeKind::Scene).then_some(s.first)
        });
        let (scenes, scene_numbers) = column(|s| (s.kind == ScopeKind::Scene).then_some(s.second));
        let kinds: Vec<ScopeKind> = records.scopes().iter().map(|scope| scope.kind).collect();
        let scope_keys = (0..rows).map(|row| {
            let number = |column: &[u32]| column.get(row).copied().unwrap_or(NO_ROW);
            scope_key(
                kinds.get(row).copied().unwrap_or(ScopeKind::User),
                [
                    number(&user_numbers),
                    number(&character_numbers),
                    number(&conversation_numbers),
                    number(&scene_numbers),
                ],
            )
        });
        let (scopes, scope_numbers) = ScopeIndex::build(scope_keys, rows);
        let facts: Vec<Facts> = (0..rows).filter_map(|row| records.facts(row)).collect();
        Ok(Self {
            ids,
            kinds,
            scope_numbers,
            key_ranks,
            supersedes: (0..rows)
                .map(|row| records.supersedes(row).map(hashed))
                .collect(),
            statuses: facts.iter().map(|f| f.status).collect(),
            authorities: facts.iter().map(|f| f.authority).collect(),
            versions: facts.iter().map(|f| f.version).collect(),
            valid_from: facts.iter().map(|f| f.valid_from).collect(),
            valid_until: facts.iter().map(|f| f.valid_until).collect(),
            observed_at: facts.iter().map(|f| f.observed_at).collect(),
            keys,
            scope_ids: [users, characters, conversations, scenes],
            scopes,
        })
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The id of the record at `row`.
    #[must_use]
    pub fn id(&self, row: u32) -> Option<&'a str> {
        self.ids.get(row as usize).map(|id| id.text)
    }

    fn facts(&self, row: usize) -> Option<Facts> {
        Some(Facts {
            status: *self.statuses.get(row)?,
            authority: *self.authorities.get(row)?,
            version: *self.versions.get(row)?,
            valid_from: *self.valid_from.get(row)?,
            valid_until: optional(&self.valid_until, row),
            observed_at: optional(&self.observed_at, row),
        })
    }

    /// The number of `scope`, if some record has it.
    #[must_use]
    pub fn scope_number(&self, scope: &ScopeRef<'_>) -> Option<u32> {
        let state = text_hasher();
        let number = |column: usize, text: &str| {
            self.scope_ids
                .get(column)
                .and_then(|values| values.number_of(&Hashed::new(&state, text)))
        };
        let numbers = match scope.kind {
            ScopeKind::User => [number(0, scope.first)?, 0, 0, 0],
            ScopeKind::Character => [number(0, scope.first)?, number(1, scope.second)?, 0, 0],
            ScopeKind::Conversation => [0, 0, number(2, scope.first)?, 0],
            ScopeKind::Scene => [0, 0, number(2, scope.first)?, number(3, scope.second)?],
        };
        self.scopes.number_of(scope_key(scope.kind, numbers))
    }

    /// The tombstones that can touch a record of this store, by scope number
    /// then key rank (a tombstone on a scope or key no record has is dropped).
    /// Several on one (scope, key) act as the one with the latest bound.
    #[must_use]
    pub fn index_tombstones(&self, tombstones: &[Tombstone<'_>]) -> StoreTombstones {
        let state = text_hasher();
        let mut by_scope: Map<u32, Map<u32, i64>> = map_with_capacity(tombstones.len());
        for tombstone in tombstones {
            let (Some(scope), Some(key)) = (
                self.scope_number(&tombstone.scope),
                self.keys.rank_of(&Hashed::new(&state, tombstone.key)),
            ) else {
                continue;
            };
            by_scope
                .entry(scope)
                .or_insert_with(|| map_with_capacity(1))
                .entry(key)
                .and_modify(|bound| *bound = (*bound).max(tombstone.blocks_sources_before))
                .or_insert(tombstone.blocks_sources_before);
        }
        StoreTombstones { by_scope }
    }
}

/// Row `row` of an optional column (an absent column is empty).
fn optional(column: &[Option<i64>], row: usize) -> Option<i64> {
    column.get(row).copied().flatten()
}

/// A store's tombstones, by scope number, then key rank.
#[derive(Default)]
pub struct StoreTombstones {
    by_scope: Map<u32, Map<u32, i64>>,
}

/// One context's candidates: the store rows of its scopes.
pub struct ContextRows<'v, 'a> {
    store: &'v Store<'a>,
    rows: &'v [u32],
    scope_of_kind: [u32; 4],
    tombstones: [Option<&'v Map<u32, i64>>; 4],
}

impl ContextRows<'_, '_> {
    fn row(&self, index: usize) -> Option<usize> {
        self.rows.get(index).map(|&row| row as usize)
    }
}

impl<'a> Candidates for ContextRows<'_, 'a> {
    /// A record's id, hashed once.
    type Id = Hashed<'a>;
    /// A key's rank.
    type Key = u32;

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn kind_in_scope(&self, index: usize) -> Option<ScopeKind> {
        let row = self.row(index)?;
        let kind = *self.store.kinds.get(row)?;
        let number = *self.store.scope_numbers.get(row)?;
        (self.scope_of_kind.get(kind as usize) == Some(&number)).then_some(kind)
    }

    fn facts(&self, index: usize) -> Option<Facts> {
        self.store.facts(self.row(index)?)
    }

    fn id(&self, index: usize) -> Option<Hashed<'a>> {
        self.store.ids.get(self.row(index)?).copied()
    }

    fn supersedes(&self, index: usize) -> Option<Hashed<'a>> {
        *self.store.supersedes.get(self.row(index)?)?
    }

    fn key(&self, index: usize) -> Option<u32> {
        self.store.key_ranks.get(self.row(index)?).copied()
    }

    fn forget_bound(&self, kind: ScopeKind, key: u32) -> Option<i64> {
        self.tombstones
            .get(kind as usize)
            .copied()
            .flatten()
            .and_then(|bounds| bounds.get(&key))
            .copied()
    }

    fn compare_ids(&self, a: usize, b: usize) -> Ordering {
        let id = |index| {
            self.rows
                .get(index)
                .and_then(|&row| self.store.id(row))
                .map(str::as_bytes)
        };
        id(a).cmp(&id(b))
    }
}

/// The decisions of a run of consecutive contexts, flat: for each context,
/// its winners in canonical order, then (when asked for) its exclusions by
/// record id, as (store row, outcome) with `None` for a winner. Scope
/// exclusions are not rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecisionChunk {
    /// The contexts, by position in the input.
    pub contexts: Range<usize>,
    /// Where each context's rows end in `rows`.
    pub ends: Vec<usize>,
    pub rows: Vec<u32>,
    pub outcomes: Vec<Option<Reason>>,
}

impl DecisionChunk {
    /// Each context's (rows, outcomes), in order.
    pub fn per_context(&self) -> impl Iterator<Item = (&[u32], &[Option<Reason>])> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(self.ends.iter().copied()).map(|(start, end)| {
            (
                self.rows.get(start..end).unwrap_or(&[]),
                self.outcomes.get(start..end).unwrap_or(&[]),
            )
        })
    }
}

/// What one worker reuses from context to context.
#[derive(Default)]
struct Worker<'a> {
    rows: Vec<u32>,
    outcomes: Vec<Option<Reason>>,
    scratch: Scratch<Hashed<'a>, u32>,
    active: Vec<(u64, u32)>,
    excluded: Vec<(u32, Reason)>,
}

fn resolve_one<'a>(
    store: &Store<'a>,
    context: &Context<'_>,
    tombstones: &StoreTombstones,
    include_excluded: bool,
    worker: &mut Worker<'a>,
    out: &mut DecisionChunk,
) {
    let mut scope_of_kind = [NO_ROW; 4];
    let mut context_tombstones = [None; 4];
    worker.rows.clear();
    for kind in ScopeKind::ALL {
        let Some(number) = context
            .scope_of(kind)
            .and_then(|scope| store.scope_number(&scope))
        else {
            continue;
        };
        if let Some(slot) = scope_of_kind.get_mut(kind as usize) {
            *slot = number;
        }
        if let Some(slot) = context_tombstones.get_mut(kind as usize) {
            *slot = tombstones.by_scope.get(&number);
        }
        worker.rows.extend_from_slice(store.scopes.rows_of(number));
    }
    let view = ContextRows {
        store,
        rows: &worker.rows,
        scope_of_kind,
        tombstones: context_tombstones,
    };
    decide_into(
        &view,
        context.now,
        &mut worker.scratch,
        &mut worker.outcomes,
    );

    // Winners by (scope id, key): the context's scopes ranked once, keys by rank.
    let ranks = scope_ranks(context);
    worker.active.clear();
    worker.excluded.clear();
    for (&row, outcome) in worker.rows.iter().zip(&worker.outcomes) {
        match outcome {
            None => {
                let kind = store
                    .kinds
                    .get(row as usize)
                    .copied()
                    .unwrap_or(ScopeKind::User);
                let rank = ranks.get(kind as usize).copied().unwrap_or(usize::MAX);
                let key = store.key_ranks.get(row as usize).copied().unwrap_or(NO_ROW);
                let order = (u64::try_from(rank).unwrap_or(u64::MAX) << 32) | u64::from(key);
                worker.active.push((order, row));
            }
            Some(Reason::Scope) => {}
            Some(reason) if include_excluded => worker.excluded.push((row, *reason)),
            Some(_) => {}
        }
    }
    worker.active.sort_unstable();
    out.rows.extend(worker.active.iter().map(|&(_, row)| row));
    out.outcomes.extend(worker.active.iter().map(|_| None));
    if include_excluded {
        sort_by_text(&mut worker.excluded, |&(row, _)| {
            store.id(row).unwrap_or("")
        });
        out.rows.extend(worker.excluded.iter().map(|&(row, _)| row));
        out.outcomes
            .extend(worker.excluded.iter().map(|&(_, reason)| Some(reason)));
    }
    out.ends.push(out.rows.len());
}

/// Every context's decisions, in context order, in chunks of consecutive
/// contexts computed in parallel (a few contexts run on the calling thread:
/// waking the pool would cost more).
#[must_use]
pub fn resolve_contexts<'a>(
    store: &Store<'a>,
    contexts: &[Context<'_>],
    tombstones: &StoreTombstones,
    include_excluded: bool,
) -> Vec<DecisionChunk> {
    let run = |(chunk, first): (&[Context<'_>], usize), worker: &mut Worker<'a>| {
        let mut out = DecisionChunk {
            contexts: first..first + chunk.len(),
            ends: Vec::with_capacity(chunk.len()),
            ..DecisionChunk::default()
        };
        for context in chunk {
            resolve_one(
                store,
                context,
                tombstones,
                include_excluded,
                worker,
                &mut out,
            );
        }
        out
    };
    if contexts.len() < PARALLEL_FROM {
        return vec![run((contexts, 0), &mut Worker::default())];
    }
    contexts
        .par_chunks(CHUNK)
        .enumerate()
        .map_init(Worker::default, |worker, (index, chunk)| {
            run((chunk, index * CHUNK), worker)
        })
        .collect()
}

/// From this many contexts on, they are resolved on the rayon pool.
const PARALLEL_FROM: usize = 16;
/// Contexts per chunk of output.
const CHUNK: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::{resolve, Record, ScopeRef, TombstoneIndex};

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

    fn store_of(set: &CandidateSet<'static>) -> Store<'static> {
        match Store::from_candidates(set) {
            Ok(store) => store,
            Err(duplicate) => panic!("unexpected {duplicate:?}"),
        }
    }

    fn set_of(records: &[Record<'static>]) -> CandidateSet<'static> {
        let mut set = CandidateSet::with_capacity(records.len());
        for r in records {
            set.push(*r);
        }
        set
    }

    /// Each context's (active ids, excluded (id, reason)).
    type Listed = Vec<(Vec<String>, Vec<(String, Reason)>)>;

    fn listed(store: &Store<'_>, chunks: &[DecisionChunk]) -> Listed {
        let name = |row: u32| store.id(row).unwrap_or("?").to_owned();
        chunks
            .iter()
            .flat_map(DecisionChunk::per_context)
            .map(|(rows, outcomes)| {
                let mut active = Vec::new();
                let mut excluded = Vec::new();
                for (&row, outcome) in rows.iter().zip(outcomes) {
                    match outcome {
                        None => active.push(name(row)),
                        Some(reason) => excluded.push((name(row), *reason)),
                    }
                }
                (active, excluded)
            })
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
            Record {
                supersedes: Some("nobody"),
                ..record("k1-y", "y", ScopeRef::conversation("k1"))
            },
            Record {
                version: 0,
                ..record("k1-y-old", "y", ScopeRef::conversation("k1"))
            },
        ];
        let set = set_of(&records);
        let store = store_of(&set);
        let contexts: Vec<Context<'static>> =
            [("u1", "k1"), ("u1", "k2"), ("u2", "k1"), ("u3", "k9")]
                .iter()
                .map(|&(user, conversation)| context(user, conversation))
                .collect();
        let tombstones = [Tombstone {
            key: "x",
            scope: ScopeRef::conversation("k2"),
            blocks_sources_before: 0,
        }];
        let index = TombstoneIndex::new(&tombstones);
        let batch = listed(
            &store,
            &resolve_contexts(
                &store,
                &contexts,
                &store.index_tombstones(&tombstones),
                true,
            ),
        );
        assert_eq!(batch.len(), contexts.len());
        for (context, (active, excluded)) in contexts.iter().zip(&batch) {
            let single = resolve(&set, context, &index);
            let name = |row: usize| records[row].id.to_owned();
            let single_active: Vec<String> = single.active.iter().map(|&r| name(r)).collect();
            let single_excluded: Vec<(String, Reason)> = single
                .excluded
                .iter()
                .filter(|(_, r)| *r != Reason::Scope)
                .map(|&(row, reason)| (name(row), reason))
                .collect();
            assert_eq!(active, &single_active);
            assert_eq!(excluded, &single_excluded);
        }
        // u1 in k1: the conversation's correction hides the user-level record;
        // "character:u1:c" sorts before "conversation:k1".
        assert_eq!(batch[0].0, ["u1-c-x", "k1-pet", "k1-y"]);
        assert_eq!(batch[1].0, ["u1-c-x", "u1-pet"]);
        assert!(batch[1].1.contains(&("k2-x".to_owned(), Reason::Forgotten)));
        assert_eq!(batch[3], (vec![], vec![]));
    }

    #[test]
    fn without_exclusions_only_winners_are_listed() {
        let set = set_of(&[
            record("a", "k", ScopeRef::user("u1")),
            Record {
                version: 0,
                ..record("b", "k", ScopeRef::user("u1"))
            },
        ]);
        let store = store_of(&set);
        let chunks = resolve_contexts(
            &store,
            &[context("u1", "k1")],
            &StoreTombstones::default(),
            false,
        );
        assert_eq!(listed(&store, &chunks), [(vec!["a".to_owned()], vec![])]);
    }

    #[test]
    fn many_contexts_come_back_in_order_across_chunks() {
        let set = set_of(&[record("a", "k", ScopeRef::user("u1"))]);
        let store = store_of(&set);
        let contexts: Vec<Context<'static>> = (0..CHUNK * 2 + 7)
            .map(|n| context(if n % 3 == 0 { "u1" } else { "u2" }, "k"))
            .collect();
        let chunks = resolve_contexts(&store, &contexts, &StoreTombstones::default(), false);
        let batch = listed(&store, &chunks);
        assert_eq!(batch.len(), contexts.len());
        for (n, (active, _)) in batch.iter().enumerate() {
            assert_eq!(active.len(), usize::from(n % 3 == 0), "context {n}");
        }
        let covered: Vec<usize> = chunks.iter().flat_map(|c| c.contexts.clone()).collect();
        assert_eq!(covered, (0..contexts.len()).collect::<Vec<_>>());
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let set = set_of(&[
            record("a", "k", ScopeRef::user("u1")),
            record("b", "k", ScopeRef::user("u1")),
            record("a", "j", ScopeRef::user("u2")),
        ]);
        assert_eq!(
            Store::from_candidates(&set).err(),
            Some(DuplicateId {
                earlier: 0,
                later: 2
            })
        );
    }

    #[test]
    fn no_contexts_and_no_records() {
        let store = store_of(&CandidateSet::default());
        let none = resolve_contexts(&store, &[], &StoreTombstones::default(), true);
        assert!(listed(&store, &none).is_empty());
        let one = resolve_contexts(
            &store,
            &[context("u", "k")],
            &StoreTombstones::default(),
            true,
        );
        assert_eq!(listed(&store, &one), [(vec![], vec![])]);
    }
}
