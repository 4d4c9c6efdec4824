//! A store's tombstones: which scopes each reaches (`docs/spec.md` §2.3),
//! their bounds by scope and key, and the rows they block by the messages
//! those rows cite.

use super::Store;
use crate::model::IdColumn;
use crate::resolve::hash::{map_with_capacity, text_hasher, Hashed, Map};
use crate::resolve::Tombstone;

impl Store<'_> {
    /// The tombstones that can touch a record of this store, by scope number
    /// then key rank (a tombstone on a scope or key no record has is dropped).
    /// Several on one (scope, key) act as the one with the latest bound.
    #[must_use]
    ///
    /// A user-wide tombstone is indexed on every scope of the store its user
    /// owns (`docs/spec.md` §2.3), found through one map of the scopes by
    /// owner, built only when some tombstone is user-wide.
    pub fn index_tombstones(&self, tombstones: &[Tombstone<'_>]) -> StoreTombstones {
        let reach = Reach::new(self, tombstones);
        let mut by_scope: Map<u32, Map<u32, i64>> = map_with_capacity(tombstones.len());
        for tombstone in tombstones {
            let Some((key, reached)) = reach.of(tombstone) else {
                continue;
            };
            for &scope in reached.as_slice() {
                by_scope
                    .entry(scope)
                    .or_insert_with(|| map_with_capacity(1))
                    .entry(key)
                    .and_modify(|bound| *bound = (*bound).max(tombstone.blocks_sources_before))
                    .or_insert(tombstone.blocks_sources_before);
            }
        }
        StoreTombstones { by_scope }
    }

    /// Marks the rows a tombstone blocks by the messages they cite
    /// (`docs/spec.md` §2.3): for each tombstone with hashes, the rows of its
    /// key in the scopes it reaches. `messages(row)` is read only for those
    /// rows, so without hashes no message id is read.
    ///
    /// # Errors
    /// The first error of `messages`.
    pub fn mark_blocked_by_sources<E, M, I>(
        &mut self,
        tombstones: &[Tombstone<'_>],
        mut messages: M,
    ) -> Result<(), E>
    where
        M: FnMut(usize) -> Result<I, E>,
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let hashed: Vec<&Tombstone<'_>> = tombstones
            .iter()
            .filter(|tombstone| tombstone.sources.is_some_and(|sources| !sources.is_empty()))
            .collect();
        if hashed.is_empty() {
            return Ok(());
        }
        let mut blocked = vec![false; self.len()];
        {
            let reach = Reach::new(self, tombstones);
            for tombstone in hashed {
                let (Some(sources), Some((key, reached))) =
                    (tombstone.sources, reach.of(tombstone))
                else {
                    continue;
                };
                for &scope in reached.as_slice() {
                    for &row in self.scopes.rows_of(scope) {
                        let row = row as usize;
                        let unmarked = blocked.get(row) == Some(&false);
                        if unmarked && self.key_ranks.get(row) == Some(&key) {
                            let cited: Vec<I::Item> = messages(row)?.into_iter().collect();
                            if sources.blocks_any(cited.iter().map(AsRef::as_ref)) {
                                if let Some(flag) = blocked.get_mut(row) {
                                    *flag = true;
                                }
                            }
                        }
                    }
                }
            }
        }
        if blocked.contains(&true) {
            self.blocked_by_sources = blocked;
        }
        Ok(())
    }
}

/// Which of a store's scopes each tombstone reaches (`docs/spec.md` §2.3):
/// its own, or, user-wide, every scope its user owns (through one map of the
/// scopes by owner, built only when some tombstone is user-wide).
struct Reach<'s, 'a> {
    store: &'s Store<'a>,
    owned: Map<u32, Vec<u32>>,
}

/// The scopes one tombstone reaches.
enum Reached<'r> {
    One(Option<u32>),
    Owned(&'r [u32]),
}

impl Reached<'_> {
    fn as_slice(&self) -> &[u32] {
        match self {
            Reached::One(scope) => scope.as_slice(),
            Reached::Owned(scopes) => scopes,
        }
    }
}

impl<'s, 'a> Reach<'s, 'a> {
    fn new(store: &'s Store<'a>, tombstones: &[Tombstone<'_>]) -> Self {
        let owned = if tombstones.iter().any(|tombstone| tombstone.user_wide) {
            store.scopes.by_owner()
        } else {
            Map::default()
        };
        Self { store, owned }
    }

    /// The tombstone's key rank and the scopes it reaches (`None`: no
    /// record has its key).
    fn of(&self, tombstone: &Tombstone<'_>) -> Option<(u32, Reached<'_>)> {
        let state = text_hasher();
        let key = self
            .store
            .keys
            .rank_of(&Hashed::new(&state, tombstone.key))?;
        let reached = if tombstone.user_wide {
            let users = self
                .store
                .scope_ids
                .get(usize::from(IdColumn::UserId.code()));
            Reached::Owned(
                tombstone
                    .scope
                    .owning_user()
                    .and_then(|user| users?.number_of(&Hashed::new(&state, user)))
                    .and_then(|user| self.owned.get(&user))
                    .map_or(&[], Vec::as_slice),
            )
        } else {
            Reached::One(self.store.scope_number(&tombstone.scope))
        };
        Some((key, reached))
    }
}

/// A store's tombstones, by scope number, then key rank.
#[derive(Default)]
pub struct StoreTombstones {
    pub(super) by_scope: Map<u32, Map<u32, i64>>,
}

impl StoreTombstones {
    /// The latest bound of the tombstones on scope `scope` and key `key`.
    #[must_use]
    pub fn bound(&self, scope: u32, key: u32) -> Option<i64> {
        self.by_scope.get(&scope)?.get(&key).copied()
    }
}
