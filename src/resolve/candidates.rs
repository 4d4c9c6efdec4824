//! The input of one resolution, columnar: one `Vec` per field, strings
//! borrowed from whoever owns the records (Python objects, Arrow buffers),
//! instants as `i64` microseconds since the Unix epoch, UTC (`docs/spec.md` §1.6).

use super::source_hashes::SourceHashes;
use crate::model::{Authority, IdColumn, ScopeKind, Status};

/// A scope, borrowed: its kind, up to two ids and, for conversation and scene
/// scopes, an optional owner. One-field kinds keep `""` in `second` (ids are
/// never empty), so derived equality and hashing are structural
/// (`docs/spec.md` §1.1): the owner is part of the scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScopeRef<'a> {
    pub kind: ScopeKind,
    pub first: &'a str,
    pub second: &'a str,
    pub owner: Option<&'a str>,
}

impl<'a> ScopeRef<'a> {
    #[must_use]
    pub fn user(user_id: &'a str) -> Self {
        Self {
            kind: ScopeKind::User,
            first: user_id,
            second: "",
            owner: None,
        }
    }

    #[must_use]
    pub fn character(user_id: &'a str, character_id: &'a str) -> Self {
        Self {
            kind: ScopeKind::Character,
            first: user_id,
            second: character_id,
            owner: None,
        }
    }

    #[must_use]
    pub fn conversation(conversation_id: &'a str) -> Self {
        Self {
            kind: ScopeKind::Conversation,
            first: conversation_id,
            second: "",
            owner: None,
        }
    }

    #[must_use]
    pub fn scene(conversation_id: &'a str, scene_id: &'a str) -> Self {
        Self {
            kind: ScopeKind::Scene,
            first: conversation_id,
            second: scene_id,
            owner: None,
        }
    }

    /// The same scope owned by `user_id` (meaningful for conversation and
    /// scene scopes, the kinds that have an owner column).
    #[must_use]
    pub fn owned_by(self, user_id: &'a str) -> Self {
        Self {
            owner: Some(user_id),
            ..self
        }
    }

    /// The text this scope holds in `column` of a flat row: one of its ids,
    /// its owner, or none (`user_id`, `character_id`, `conversation_id`,
    /// `scene_id`, as the batch form's tables and the store's rows lay it out).
    #[must_use]
    pub fn column(&self, column: IdColumn) -> Option<&'a str> {
        match self.kind.id_columns().iter().position(|c| *c == column) {
            Some(position) => self.fields().nth(position),
            None if self.kind.owner_column() == Some(column) => self.owner,
            None => None,
        }
    }

    /// The scope's ids in order: one for `user` and `conversation`, two otherwise.
    pub fn fields(&self) -> impl Iterator<Item = &'a str> {
        let two_fields = self.kind.id_columns().len() == 2;
        std::iter::once(self.first).chain(two_fields.then_some(self.second))
    }

    /// The user that owns this scope (`docs/spec.md` §4.3): the user of a
    /// user or character scope, the owner of a conversation or scene scope
    /// (none when unowned). What a user-wide tombstone reaches by.
    #[must_use]
    pub fn owning_user(&self) -> Option<&'a str> {
        match self.kind {
            ScopeKind::User | ScopeKind::Character => Some(self.first),
            ScopeKind::Conversation | ScopeKind::Scene => self.owner,
        }
    }

    /// Which of a context's scopes this would be (see [`Slot`]).
    #[must_use]
    pub fn slot(&self) -> Slot {
        Slot {
            kind: self.kind,
            owned: self.owner.is_some(),
        }
    }
}

/// One of the (at most six) scopes a context sees (`docs/spec.md` §1.1): its
/// user, its character, its conversation unowned and owned by its user, and
/// when it has a scene, that scene unowned and owned by its user. Every
/// in-scope record has exactly the context's scope of its slot, so within
/// one context a slot names a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    pub kind: ScopeKind,
    pub owned: bool,
}

impl Slot {
    /// Every slot a context can have, by [`Slot::index`].
    pub const ALL: [Slot; 6] = [
        Slot::unowned(ScopeKind::User),
        Slot::unowned(ScopeKind::Character),
        Slot::unowned(ScopeKind::Conversation),
        Slot {
            kind: ScopeKind::Conversation,
            owned: true,
        },
        Slot::unowned(ScopeKind::Scene),
        Slot {
            kind: ScopeKind::Scene,
            owned: true,
        },
    ];

    const fn unowned(kind: ScopeKind) -> Self {
        Self { kind, owned: false }
    }

    /// A dense number for arrays indexed by slot: `0..6` for the slots a
    /// context can have (6 and 7 only for owned user or character scopes,
    /// which no context sees).
    #[must_use]
    pub const fn index(self) -> usize {
        match (self.kind, self.owned) {
            (ScopeKind::User, false) => 0,
            (ScopeKind::Character, false) => 1,
            (ScopeKind::Conversation, false) => 2,
            (ScopeKind::Conversation, true) => 3,
            (ScopeKind::Scene, false) => 4,
            (ScopeKind::Scene, true) => 5,
            (ScopeKind::User, true) => 6,
            (ScopeKind::Character, true) => 7,
        }
    }
}

/// A candidate's fields that rules compare, identity aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    pub status: Status,
    pub authority: Authority,
    pub version: i64,
    pub valid_from: i64,
    pub valid_until: Option<i64>,
    pub observed_at: Option<i64>,
}

/// One candidate, as the pipeline reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub id: &'a str,
    pub key: &'a str,
    pub scope: ScopeRef<'a>,
    pub status: Status,
    pub authority: Authority,
    pub version: i64,
    pub valid_from: i64,
    pub valid_until: Option<i64>,
    pub observed_at: Option<i64>,
    pub supersedes: Option<&'a str>,
}

impl<'a> Record<'a> {
    /// A record of these parts.
    #[must_use]
    pub fn of(
        id: &'a str,
        key: &'a str,
        scope: ScopeRef<'a>,
        facts: Facts,
        supersedes: Option<&'a str>,
    ) -> Self {
        Self {
            id,
            key,
            scope,
            status: facts.status,
            authority: facts.authority,
            version: facts.version,
            valid_from: facts.valid_from,
            valid_until: facts.valid_until,
            observed_at: facts.observed_at,
            supersedes,
        }
    }

    /// The fields rules compare.
    #[must_use]
    pub fn facts(&self) -> Facts {
        Facts {
            status: self.status,
            authority: self.authority,
            version: self.version,
            valid_from: self.valid_from,
            valid_until: self.valid_until,
            observed_at: self.observed_at,
        }
    }
}

/// The candidates of one resolution, one column per field.
///
/// Rows are positions; results name candidates by row. Ids must be unique
/// (`first_duplicate_id` finds a violation); with duplicates the pipeline
/// still terminates and never panics, but its answer is unspecified.
#[derive(Clone, Debug, Default)]
pub struct CandidateSet<'a> {
    ids: Vec<&'a str>,
    keys: Vec<&'a str>,
    scopes: Vec<ScopeRef<'a>>,
    statuses: Vec<Status>,
    authorities: Vec<Authority>,
    versions: Vec<i64>,
    valid_from: Vec<i64>,
    valid_until: Vec<Option<i64>>,
    observed_at: Vec<Option<i64>>,
    supersedes: Vec<Option<&'a str>>,
    /// Rows the messages they cite block (`super::sources`); empty when
    /// none is (the usual case: no tombstone has hashes).
    blocked_by_sources: Vec<bool>,
}

impl<'a> CandidateSet<'a> {
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            ids: Vec::with_capacity(capacity),
            keys: Vec::with_capacity(capacity),
            scopes: Vec::with_capacity(capacity),
            statuses: Vec::with_capacity(capacity),
            authorities: Vec::with_capacity(capacity),
            versions: Vec::with_capacity(capacity),
            valid_from: Vec::with_capacity(capacity),
            valid_until: Vec::with_capacity(capacity),
            observed_at: Vec::with_capacity(capacity),
            supersedes: Vec::with_capacity(capacity),
            blocked_by_sources: Vec::new(),
        }
    }

    pub fn push(&mut self, record: Record<'a>) {
        self.ids.push(record.id);
        self.keys.push(record.key);
        self.scopes.push(record.scope);
        self.statuses.push(record.status);
        self.authorities.push(record.authority);
        self.versions.push(record.version);
        self.valid_from.push(record.valid_from);
        self.valid_until.push(record.valid_until);
        self.observed_at.push(record.observed_at);
        self.supersedes.push(record.supersedes);
        if !self.blocked_by_sources.is_empty() {
            self.blocked_by_sources.push(false);
        }
    }

    /// Marks row `row` as blocked by the messages it cites (a tombstone with
    /// hashes decided it: `super::sources::SourceIndex::mark`).
    pub fn mark_blocked_by_sources(&mut self, row: usize) {
        if self.blocked_by_sources.is_empty() {
            self.blocked_by_sources = vec![false; self.len()];
        }
        if let Some(flag) = self.blocked_by_sources.get_mut(row) {
            *flag = true;
        }
    }

    /// Whether row `row` is blocked by the messages it cites.
    #[must_use]
    pub fn blocked_by_sources(&self, row: usize) -> bool {
        self.blocked_by_sources.get(row).copied().unwrap_or(false)
    }

    pub fn clear(&mut self) {
        self.ids.clear();
        self.keys.clear();
        self.scopes.clear();
        self.statuses.clear();
        self.authorities.clear();
        self.versions.clear();
        self.valid_from.clear();
        self.valid_until.clear();
        self.observed_at.clear();
        self.supersedes.clear();
        self.blocked_by_sources.clear();
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The candidate at `row`, or `None` past the end.
    #[must_use]
    pub fn get(&self, row: usize) -> Option<Record<'a>> {
        Some(Record::of(
            self.ids.get(row)?,
            self.keys.get(row)?,
            *self.scopes.get(row)?,
            self.facts(row)?,
            *self.supersedes.get(row)?,
        ))
    }

    /// Every candidate with its row, in row order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, Record<'a>)> + '_ {
        (0..self.len()).filter_map(|row| self.get(row).map(|record| (row, record)))
    }

    /// The ids column.
    #[must_use]
    pub fn ids(&self) -> &[&'a str] {
        &self.ids
    }

    /// The keys column.
    #[must_use]
    pub fn keys(&self) -> &[&'a str] {
        &self.keys
    }

    /// The id row `row` names in `supersedes`, if any.
    #[must_use]
    pub fn supersedes(&self, row: usize) -> Option<&'a str> {
        self.supersedes.get(row).copied().flatten()
    }

    /// The fields of row `row` that rules compare.
    #[must_use]
    pub fn facts(&self, row: usize) -> Option<Facts> {
        Some(Facts {
            status: *self.statuses.get(row)?,
            authority: *self.authorities.get(row)?,
            version: *self.versions.get(row)?,
            valid_from: *self.valid_from.get(row)?,
            valid_until: *self.valid_until.get(row)?,
            observed_at: *self.observed_at.get(row)?,
        })
    }

    /// The scopes column.
    #[must_use]
    pub fn scopes(&self) -> &[ScopeRef<'a>] {
        &self.scopes
    }

    /// The first pair of rows `(earlier, later)` sharing an id, if any: the
    /// smallest `later` whose id appears at an earlier row.
    ///
    /// Sorts (hash, row) pairs instead of filling a hash map: for a million
    /// ids that is several times faster (sequential memory, no probing), and
    /// it runs on all cores for large inputs.
    #[must_use]
    pub fn first_duplicate_id(&self) -> Option<(usize, usize)> {
        let state = foldhash::fast::FixedState::with_seed(0x6d65_6d72_6573_6f6c);
        let mut hashed: Vec<(u64, usize)> = self
            .ids
            .iter()
            .enumerate()
            .map(|(row, id)| (std::hash::BuildHasher::hash_one(&state, id), row))
            .collect();
        if hashed.len() >= PARALLEL_FROM {
            rayon::slice::ParallelSliceMut::par_sort_unstable(hashed.as_mut_slice());
        } else {
            hashed.sort_unstable();
        }
        let mut first: Option<(usize, usize)> = None;
        for run in hashed
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|run| run.len() > 1)
        {
            // Equal hashes: compare the ids themselves (rows ascending within the run).
            for (position, &(_, later)) in run.iter().enumerate() {
                let id = self.ids.get(later);
                let earlier = run
                    .iter()
                    .take(position)
                    .map(|&(_, row)| row)
                    .find(|&row| self.ids.get(row) == id);
                if let Some(earlier) = earlier {
                    if first.is_none_or(|(_, best)| later < best) {
                        first = Some((earlier, later));
                    }
                    break;
                }
            }
        }
        first
    }
}

/// From this many ids on, the duplicate check sorts on all cores.
const PARALLEL_FROM: usize = 100_000;

/// Where and when the records are retrieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context<'a> {
    pub now: i64,
    pub user_id: &'a str,
    /// `None`: the context sees no character scope (a profile page's context).
    pub character_id: Option<&'a str>,
    /// `None`: the context sees no conversation scope, and has no scene.
    pub conversation_id: Option<&'a str>,
    pub scene_id: Option<&'a str>,
}

impl<'a> Context<'a> {
    /// The context's scope of `slot` (`None`: a slot whose ids the context
    /// lacks, such as a scene slot without a current scene). Every in-scope
    /// record has exactly its slot's scope.
    #[must_use]
    pub fn scope_of(&self, slot: Slot) -> Option<ScopeRef<'a>> {
        let unowned = match slot.kind {
            ScopeKind::User => Some(ScopeRef::user(self.user_id)),
            ScopeKind::Character => self
                .character_id
                .map(|character_id| ScopeRef::character(self.user_id, character_id)),
            ScopeKind::Conversation => self.conversation_id.map(ScopeRef::conversation),
            ScopeKind::Scene => self
                .conversation_id
                .zip(self.scene_id)
                .map(|(conversation_id, scene_id)| ScopeRef::scene(conversation_id, scene_id)),
        }?;
        match (slot.owned, slot.kind.owner_column()) {
            (false, _) => Some(unowned),
            (true, Some(_)) => Some(unowned.owned_by(self.user_id)),
            (true, None) => None,
        }
    }
}

/// A forget: blocks `key` in `scope` for evidence up to `blocks_sources_before`,
/// and records citing a message whose salted hash `sources` holds. A
/// `user_wide` one (always on a user scope) reaches every scope its user
/// owns (`docs/spec.md` §1.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tombstone<'a> {
    pub key: &'a str,
    pub scope: ScopeRef<'a>,
    pub blocks_sources_before: i64,
    pub user_wide: bool,
    pub sources: Option<&'a SourceHashes>,
}

impl Slot {
    /// Whether a context's scope of this slot is owned by the context's user:
    /// its user and character scopes, its owned conversation and scene.
    #[must_use]
    pub const fn owned_by_context_user(self) -> bool {
        matches!(self.kind, ScopeKind::User | ScopeKind::Character) || self.owned
    }
}
