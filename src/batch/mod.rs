//! The batch form (`docs/spec.md` §4): every context of a whole store at once.
//!
//! The store's ids, keys and scopes are interned to numbers once
//! ([`intern`]); its rows are indexed by scope. Each context then resolves
//! only the records of its (at most four) scopes, with the very pipeline of
//! [`crate::resolve`] ([`decide_into`]) seen through [`ContextRows`]: a
//! record outside those scopes could neither bear an edge nor share a group
//! with one inside, so the result is exactly `resolve(all records, context)`
//! less its scope exclusions. Contexts run in chunks on a work-stealing pool
//! (rayon); each worker reuses its buffers from context to context.

pub mod ids;
pub mod intern;
pub mod owner_order;
mod tombstones;

pub use tombstones::StoreTombstones;

use std::cmp::Ordering;
use std::ops::Range;

use rayon::prelude::*;

use crate::error::Broken;
use crate::model::{Authority, IdColumn, Reason, ScopeKind, Status};
use crate::resolve::hash::{text_hasher, Hashed, Map};
use crate::resolve::order::{scope_ranks, sort_by_text};
use crate::resolve::{
    decide_into, CandidateSet, Candidates, Context, Facts, ScopeRef, Scratch, Slot,
};
use ids::{index_ids, IdIndex};
use intern::{Interned, KeyRanks, ScopeIndex, ScopeKey, NO_ROW};

/// A store of records: one column per field, ids hashed once, keys and
/// scopes interned.
pub struct Store<'a> {
    pub(crate) ids: Vec<Hashed<'a>>,
    /// Each row's scope kind, and whether its scope is owned.
    pub(crate) slots: Vec<Slot>,
    pub(crate) scope_numbers: Vec<u32>,
    pub(crate) key_ranks: Vec<u32>,
    /// The row each record's `supersedes` names ([`NO_ROW`]: none, or an
    /// id no record has); empty when no record names one.
    pub(crate) targets: Vec<u32>,
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
    /// Rows the messages they cite block ([`Store::mark_blocked_by_sources`]);
    /// empty when none is.
    pub(crate) blocked_by_sources: Vec<bool>,
}

/// A record id repeated at rows `earlier` and `later` (the first such `later`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DuplicateId {
    pub earlier: usize,
    pub later: usize,
}

/// The scope of `kind` with ids numbered by the four id columns' tables:
/// `numbers` holds one row's (or one scope's) `user_id`, `character_id`,
/// `conversation_id` and `scene_id` numbers, by [`IdColumn`] code, with
/// [`NO_ROW`] for null. The kind's own ids ([`ScopeKind::id_columns`]) and
/// its owner column ([`ScopeKind::owner_column`]) make the key.
#[must_use]
pub fn scope_key(kind: ScopeKind, numbers: [u32; 4]) -> ScopeKey {
    let number = |column: IdColumn| {
        numbers
            .get(usize::from(column.code()))
            .copied()
            .unwrap_or(NO_ROW)
    };
    let mut ids = kind.id_columns().iter().map(|&column| number(column));
    ScopeKey {
        kind,
        first: ids.next().unwrap_or(0),
        second: ids.next().unwrap_or(0),
        owner: kind.owner_column().map_or(NO_ROW, number),
    }
}

impl<'a> Store<'a> {
    /// The store of a candidate set's records (rows in set order).
    pub fn from_candidates(records: &CandidateSet<'a>) -> Result<Self, DuplicateId> {
        let rows: Vec<_> = records.iter().map(|(_, record)| record).collect();
        let state = text_hasher();
        let hashed = |text: &'a str| Hashed::new(&state, text);
        let ids: Vec<Hashed<'a>> = rows.iter().map(|r| hashed(r.id)).collect();
        let named: Vec<_> = rows.iter().map(|r| r.supersedes.map(hashed)).collect();
        let targets = match index_ids(&ids, &named) {
            IdIndex::Duplicate(earlier, later) => return Err(DuplicateId { earlier, later }),
            IdIndex::Unique(targets) => targets,
        };
        let (keys, key_ranks) = KeyRanks::build(rows.iter().map(|r| Some(hashed(r.key))).collect());
        // Each id column holds a row's id (or owner) only where its kind has
        // one, as Arrow input does.
        let column = |id_column: IdColumn| {
            Interned::build(
                rows.iter()
                    .map(|r| r.scope.column(id_column).map(hashed))
                    .collect(),
            )
        };
        let [(users, user_numbers), (characters, character_numbers), (conversations, conversation_numbers), (scenes, scene_numbers)] = [
            column(IdColumn::UserId),
            column(IdColumn::CharacterId),
            column(IdColumn::ConversationId),
            column(IdColumn::SceneId),
        ];
        let scope_keys = rows.iter().enumerate().map(|(row, record)| {
            let number = |column: &[u32]| column.get(row).copied().unwrap_or(NO_ROW);
            scope_key(
                record.scope.kind,
                [
                    number(&user_numbers),
                    number(&character_numbers),
                    number(&conversation_numbers),
                    number(&scene_numbers),
                ],
            )
        });
        let (scopes, scope_numbers) = ScopeIndex::build(scope_keys, rows.len());
        Ok(Self {
            ids,
            slots: rows.iter().map(|r| r.scope.slot()).collect(),
            scope_numbers,
            key_ranks,
            targets,
            statuses: rows.iter().map(|r| r.status).collect(),
            authorities: rows.iter().map(|r| r.authority).collect(),
            versions: rows.iter().map(|r| r.version).collect(),
            valid_from: rows.iter().map(|r| r.valid_from).collect(),
            valid_until: rows.iter().map(|r| r.valid_until).collect(),
            observed_at: rows.iter().map(|r| r.observed_at).collect(),
            keys,
            scope_ids: [users, characters, conversations, scenes],
            scopes,
            blocked_by_sources: Vec::new(),
        })
    }

    /// Sets, by row, the records blocked by the messages they cite, as a
    /// caller that has the message ids decided them (empty: none).
    pub fn set_blocked_by_sources(&mut self, blocked: Vec<bool>) {
        self.blocked_by_sources = blocked;
    }

    /// Whether the record at `row` is blocked by the messages it cites.
    #[must_use]
    pub fn blocked_by_sources(&self, row: usize) -> bool {
        self.blocked_by_sources.get(row).copied().unwrap_or(false)
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

    pub(crate) fn facts(&self, row: usize) -> Option<Facts> {
        Some(Facts {
            status: *self.statuses.get(row)?,
            authority: *self.authorities.get(row)?,
            version: *self.versions.get(row)?,
            valid_from: *self.valid_from.get(row)?,
            valid_until: optional(&self.valid_until, row),
            observed_at: optional(&self.observed_at, row),
        })
    }

    /// The texts of the store's keys and scope ids, for output that names
    /// them (built on demand: resolving never reads them).
    #[must_use]
    pub fn texts(&self) -> StoreTexts<'_, 'a> {
        StoreTexts {
            store: self,
            keys: self.keys.texts(),
            columns: self.scope_ids.each_ref().map(Interned::texts),
        }
    }

    /// The number of `scope`, if some record has it.
    #[must_use]
    pub fn scope_number(&self, scope: &ScopeRef<'_>) -> Option<u32> {
        let state = text_hasher();
        let mut numbers = [NO_ROW; 4];
        for column in IdColumn::ALL {
            if let Some(text) = scope.column(column) {
                let position = usize::from(column.code());
                let interned = self.scope_ids.get(position)?;
                *numbers.get_mut(position)? = interned.number_of(&Hashed::new(&state, text))?;
            }
        }
        self.scopes.number_of(scope_key(scope.kind, numbers))
    }

    /// The numbers of the scopes a context can see, that some record has:
    /// every row of its output is a row of one of them.
    pub fn scopes_of<'s>(&'s self, context: &'s Context<'_>) -> impl Iterator<Item = u32> + 's {
        Slot::ALL
            .into_iter()
            .filter_map(|slot| self.scope_number(&context.scope_of(slot)?))
    }
}

/// A store's key and scope id texts, by number.
pub struct StoreTexts<'s, 'a> {
    store: &'s Store<'a>,
    keys: Vec<&'a str>,
    columns: [Vec<&'a str>; 4],
}

impl<'a> StoreTexts<'_, 'a> {
    /// The key of the record at `row`.
    #[must_use]
    pub fn key(&self, row: u32) -> Option<&'a str> {
        let rank = *self.store.key_ranks.get(row as usize)?;
        self.keys.get(rank as usize).copied()
    }

    /// The scope of the record at `row`: its kind, ids in order and owner.
    #[must_use]
    pub fn scope(&self, row: u32) -> Option<(ScopeKind, Vec<&'a str>, Option<&'a str>)> {
        let number = *self.store.scope_numbers.get(row as usize)?;
        let key = self.store.scopes.key_of(number)?;
        let text = |column: IdColumn, number: u32| {
            self.columns
                .get(usize::from(column.code()))?
                .get(number as usize)
                .copied()
        };
        let fields = key
            .kind
            .id_columns()
            .iter()
            .zip([key.first, key.second])
            .map(|(&column, number)| text(column, number))
            .collect::<Option<Vec<_>>>()?;
        let owner = match key.kind.owner_column() {
            Some(column) if key.owner != NO_ROW => Some(text(column, key.owner)?),
            _ => None,
        };
        Some((key.kind, fields, owner))
    }
}

/// Row `row` of an optional column (an absent column is empty).
fn optional(column: &[Option<i64>], row: usize) -> Option<i64> {
    column.get(row).copied().flatten()
}

/// One context's candidates: the store rows of its scopes.
pub struct ContextRows<'v, 'a> {
    store: &'v Store<'a>,
    rows: &'v [u32],
    /// The number of the context's scope of each slot ([`NO_ROW`]: none).
    scope_of_slot: [u32; 6],
    tombstones: [Option<&'v Map<u32, i64>>; 6],
}

impl ContextRows<'_, '_> {
    fn row(&self, index: usize) -> Option<usize> {
        self.rows.get(index).map(|&row| row as usize)
    }
}

impl Candidates for ContextRows<'_, '_> {
    /// A record's id, as its store row (ids are unique).
    type Id = u32;
    /// A key's rank.
    type Key = u32;

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn slot_in_scope(&self, index: usize) -> Option<Slot> {
        let row = self.row(index)?;
        let slot = *self.store.slots.get(row)?;
        let number = *self.store.scope_numbers.get(row)?;
        (self.scope_of_slot.get(slot.index()) == Some(&number)).then_some(slot)
    }

    fn facts(&self, index: usize) -> Option<Facts> {
        self.store.facts(self.row(index)?)
    }

    fn id(&self, index: usize) -> Option<u32> {
        self.rows.get(index).copied()
    }

    fn supersedes(&self, index: usize) -> Option<u32> {
        self.store
            .targets
            .get(self.row(index)?)
            .copied()
            .filter(|&row| row != NO_ROW)
    }

    fn key(&self, index: usize) -> Option<u32> {
        self.store.key_ranks.get(self.row(index)?).copied()
    }

    fn blocked_by_sources(&self, index: usize) -> bool {
        self.row(index)
            .is_some_and(|row| self.store.blocked_by_sources(row))
    }

    fn forget_bound(&self, slot: Slot, key: u32) -> Option<i64> {
        self.tombstones
            .get(slot.index())
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
struct Worker {
    rows: Vec<u32>,
    outcomes: Vec<Option<Reason>>,
    scratch: Scratch<u32, u32>,
    active: Vec<(u64, u32)>,
    excluded: Vec<(u32, Reason)>,
}

fn resolve_one(
    store: &Store<'_>,
    context: &Context<'_>,
    tombstones: &StoreTombstones,
    include_excluded: bool,
    worker: &mut Worker,
    out: &mut DecisionChunk,
) -> Result<(), Broken> {
    const OUTSIDE: Broken = Broken("a decided row is outside the store");
    let mut scope_of_slot = [NO_ROW; 6];
    let mut context_tombstones = [None; 6];
    worker.rows.clear();
    for slot in Slot::ALL {
        let Some(number) = context
            .scope_of(slot)
            .and_then(|scope| store.scope_number(&scope))
        else {
            continue;
        };
        if let Some(entry) = scope_of_slot.get_mut(slot.index()) {
            *entry = number;
        }
        if let Some(entry) = context_tombstones.get_mut(slot.index()) {
            *entry = tombstones.by_scope.get(&number);
        }
        worker.rows.extend_from_slice(store.scopes.rows_of(number));
    }
    let view = ContextRows {
        store,
        rows: &worker.rows,
        scope_of_slot,
        tombstones: context_tombstones,
    };
    decide_into(
        &view,
        context.now,
        &mut worker.scratch,
        &mut worker.outcomes,
    )?;

    // Winners by (scope id, key): the context's scopes ranked once, keys by rank.
    let ranks = scope_ranks(context);
    worker.active.clear();
    worker.excluded.clear();
    for (&row, outcome) in worker.rows.iter().zip(&worker.outcomes) {
        match outcome {
            None => {
                let slot = *store.slots.get(row as usize).ok_or(OUTSIDE)?;
                // A winner is in scope, so the context has a scope of its slot.
                let rank = ranks
                    .get(slot.index())
                    .and_then(|&rank| u64::try_from(rank).ok())
                    .ok_or(Broken("a winner's scope is not the context's"))?;
                let key = *store.key_ranks.get(row as usize).ok_or(OUTSIDE)?;
                worker.active.push(((rank << 32) | u64::from(key), row));
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
        sort_by_text(&mut worker.excluded, |&(row, _)| store.id(row))?;
        out.rows.extend(worker.excluded.iter().map(|&(row, _)| row));
        out.outcomes
            .extend(worker.excluded.iter().map(|&(_, reason)| Some(reason)));
    }
    out.ends.push(out.rows.len());
    Ok(())
}

/// Every context's decisions, in context order, in chunks of consecutive
/// contexts computed in parallel (a few contexts run on the calling thread:
/// waking the pool would cost more).
///
/// # Errors
/// [`Broken`] when the pipeline finds an invariant broken (a bug).
pub fn resolve_contexts(
    store: &Store<'_>,
    contexts: &[Context<'_>],
    tombstones: &StoreTombstones,
    include_excluded: bool,
) -> Result<Vec<DecisionChunk>, Broken> {
    let run = |(chunk, first): (&[Context<'_>], usize), worker: &mut Worker| {
        resolve_chunk(store, chunk, first, tombstones, include_excluded, worker)
    };
    if contexts.len() < PARALLEL_FROM {
        return Ok(vec![run((contexts, 0), &mut Worker::default())?]);
    }
    contexts
        .par_chunks(CHUNK)
        .enumerate()
        .map_init(Worker::default, |worker, (index, chunk)| {
            run((chunk, index * CHUNK), worker)
        })
        .collect()
}

/// Resolves `contexts` as the chunks `ranges` (in order, covering them), in
/// parallel: chunks cut by the caller, as big as their output allows.
///
/// # Errors
/// [`Broken`] for a bug.
pub fn resolve_chunks(
    store: &Store<'_>,
    contexts: &[Context<'_>],
    ranges: &[Range<usize>],
    tombstones: &StoreTombstones,
    include_excluded: bool,
) -> Result<Vec<DecisionChunk>, Broken> {
    ranges
        .par_iter()
        .map_init(Worker::default, |worker, range| {
            let chunk = contexts
                .get(range.clone())
                .ok_or(Broken("a chunk names contexts outside the input"))?;
            resolve_chunk(
                store,
                chunk,
                range.start,
                tombstones,
                include_excluded,
                worker,
            )
        })
        .collect()
}

/// The decisions of `contexts`, the input's contexts from `first` on.
fn resolve_chunk(
    store: &Store<'_>,
    contexts: &[Context<'_>],
    first: usize,
    tombstones: &StoreTombstones,
    include_excluded: bool,
    worker: &mut Worker,
) -> Result<DecisionChunk, Broken> {
    let mut out = DecisionChunk {
        contexts: first..first + contexts.len(),
        ends: Vec::with_capacity(contexts.len()),
        ..DecisionChunk::default()
    };
    for context in contexts {
        resolve_one(
            store,
            context,
            tombstones,
            include_excluded,
            worker,
            &mut out,
        )?;
    }
    Ok(out)
}

/// From this many contexts on, they are resolved on the rayon pool.
const PARALLEL_FROM: usize = 16;
/// Contexts per chunk of output.
pub const CHUNK: usize = 512;

#[cfg(test)]
mod tests;
