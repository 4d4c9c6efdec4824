//! A prepared set kept up to date as its store changes: a record added
//! ([`PreparedSet::push`]), a tombstone told ([`PreparedSet::forget`]), and
//! the checks a caller needs to put an erased record in its candidate's place.

use super::{group_bound, number, KeptTombstone, OwnedScope, PreparedSet, Refused, NO_ROW};
use crate::error::Broken;
use crate::resolve::candidates::{Record, ScopeRef, Tombstone};

impl PreparedSet {
    /// Adds one candidate, as if it had been the last of those the set was
    /// prepared with: linear in the set's size, with no sort and no hashing.
    /// `blocked_by_sources`: the set's tombstones block it by the messages it
    /// cites (decided by the caller, who has its message ids).
    ///
    /// # Errors
    /// [`Refused::RepeatedId`] when a candidate has its id (`later` is the
    /// row it would have had), [`Refused::TooLarge`]; the set is unchanged.
    pub fn push(&mut self, record: &Record<'_>, blocked_by_sources: bool) -> Result<(), Refused> {
        let row = number(self.facts.len())?;
        // Checked before anything changes: the texts that the row adds fit.
        let added = record.id.len() + record.key.len() + record.supersedes.map_or(0, str::len);
        number(self.texts.len().saturating_add(added))?;
        let id_place = self
            .by_id
            .binary_search_by(|&other| self.id_of(other).as_bytes().cmp(record.id.as_bytes()));
        let id_place = match id_place {
            Ok(found) => {
                let earlier = self.by_id.get(found).copied().unwrap_or(0);
                return Err(Refused::RepeatedId {
                    earlier: earlier as usize,
                    later: row as usize,
                });
            }
            Err(place) => place,
        };
        let known = self.scopes.iter().position(|s| s.borrow() == record.scope);
        let scope = if let Some(scope) = known {
            number(scope)?
        } else {
            let scope = self.add_scope(&record.scope)?;
            self.rank_scopes();
            scope
        };
        let scope_rank = self
            .scope_ranks
            .get(scope as usize)
            .copied()
            .unwrap_or(NO_ROW);
        let group_place = self
            .by_scope_and_key
            .binary_search_by(|&other| self.compare_scope_and_key(other, scope_rank, record.key));
        let (group, group_place) = match group_place {
            Ok(found) => {
                let same = self.by_scope_and_key.get(found).copied().unwrap_or(0);
                let group = self.group_of_row.get(same as usize).copied();
                let missing = Refused::Broken(Broken("an ordered row has no group"));
                (group.ok_or(missing)?, found)
            }
            Err(place) => {
                let group = number(self.group_bounds.len())?;
                let bound = group_bound(&self.tombstones, &record.scope, record.key);
                self.group_bounds.push(bound);
                (group, place)
            }
        };
        let target = match record.supersedes {
            Some(named) if named == record.id => row,
            Some(named) => self
                .by_id
                .binary_search_by(|&other| self.id_of(other).as_bytes().cmp(named.as_bytes()))
                .ok()
                .and_then(|found| self.by_id.get(found).copied())
                .unwrap_or(NO_ROW),
            None => NO_ROW,
        };
        self.append_row(record, scope, group, target)?;
        self.blocked_by_sources.push(blocked_by_sources);
        // Rows that named this id before it was a candidate now name it.
        let mut still_dangling = Vec::with_capacity(self.dangling.len());
        for (other, named) in std::mem::take(&mut self.dangling) {
            if other != row && self.text(&named) == record.id {
                if let Some(slot) = self.targets.get_mut(other as usize) {
                    *slot = row;
                }
            } else {
                still_dangling.push((other, named));
            }
        }
        self.dangling = still_dangling;
        self.by_id.insert(id_place, row);
        self.renumber_id_ranks(id_place);
        self.by_scope_and_key.insert(group_place, row);
        Ok(())
    }

    /// Marks row `row` as blocked by the messages it cites: what a tombstone
    /// with hashes told after preparing decides ([`Self::forget`] reads no
    /// message id; its caller marks the rows the hashes block).
    pub fn mark_blocked_by_sources(&mut self, row: u32) {
        if let Some(flag) = self.blocked_by_sources.get_mut(row as usize) {
            *flag = true;
        }
    }

    /// Adds a tombstone, as if the set had been prepared with it: the bound
    /// of its (scope, key) group rises to it, and a group formed later takes
    /// it too (its hashes are the caller's: [`Self::mark_blocked_by_sources`]). Logarithmic in the set's size, plus the set's distinct scopes;
    /// a user-wide one is linear (every group its user owns rises).
    ///
    /// # Errors
    /// [`Broken`] when an invariant of the set is broken (a bug); the set is unchanged.
    pub fn forget(&mut self, tombstone: &Tombstone<'_>) -> Result<(), Broken> {
        const NO_GROUP: Broken = Broken("an ordered row has no group");
        let bound = tombstone.blocks_sources_before;
        // Everything that can fail is looked up before anything changes.
        let groups: Vec<usize> = if tombstone.user_wide {
            self.groups_reached(tombstone)?
        } else {
            match self.group_of(&tombstone.scope, tombstone.key) {
                Some(row) => {
                    let group = *self.group_of_row.get(row as usize).ok_or(NO_GROUP)?;
                    if self.group_bounds.get(group as usize).is_none() {
                        return Err(NO_GROUP);
                    }
                    vec![group as usize]
                }
                None => Vec::new(),
            }
        };
        let kept = self.tombstones.iter_mut().find(|kept| {
            kept.user_wide == tombstone.user_wide
                && kept.scope.borrow() == tombstone.scope
                && kept.key == tombstone.key
        });
        match kept {
            Some(kept) => kept.bound = kept.bound.max(bound),
            None => self.tombstones.push(KeptTombstone {
                scope: OwnedScope::new(&tombstone.scope),
                key: tombstone.key.to_owned(),
                bound,
                user_wide: tombstone.user_wide,
            }),
        }
        for group in groups {
            if let Some(slot) = self.group_bounds.get_mut(group) {
                *slot = Some(slot.map_or(bound, |kept| kept.max(bound)));
            }
        }
        Ok(())
    }

    /// The groups a user-wide `tombstone` reaches: its key, in a scope its
    /// user owns.
    fn groups_reached(&self, tombstone: &Tombstone<'_>) -> Result<Vec<usize>, Broken> {
        const NO_GROUP: Broken = Broken("a row has no group or scope");
        let user = tombstone.scope.owning_user();
        let mut groups = Vec::new();
        for (row, &group) in self.group_of_row.iter().enumerate() {
            let scope = self
                .scope_of_row
                .get(row)
                .and_then(|&scope| self.scopes.get(scope as usize))
                .ok_or(NO_GROUP)?;
            let key = self
                .keys
                .get(row)
                .map(|range| self.text(range))
                .ok_or(NO_GROUP)?;
            if key == tombstone.key && scope.borrow().owning_user() == user {
                if self.group_bounds.get(group as usize).is_none() {
                    return Err(NO_GROUP);
                }
                groups.push(group as usize);
            }
        }
        groups.sort_unstable();
        groups.dedup();
        Ok(groups)
    }

    /// A row of the (`scope`, `key`) group, if the set has one.
    fn group_of(&self, scope: &ScopeRef<'_>, key: &str) -> Option<u32> {
        let scope = self.scopes.iter().position(|s| s.borrow() == *scope)?;
        let rank = *self.scope_ranks.get(scope)?;
        let found = self
            .by_scope_and_key
            .binary_search_by(|&other| self.compare_scope_and_key(other, rank, key))
            .ok()?;
        self.by_scope_and_key.get(found).copied()
    }

    /// The row of the candidate with id `id`, if any.
    #[must_use]
    pub fn row_of_id(&self, id: &str) -> Option<u32> {
        let found = self
            .by_id
            .binary_search_by(|&other| self.id_of(other).as_bytes().cmp(id.as_bytes()))
            .ok()?;
        self.by_id.get(found).copied()
    }

    /// Whether `record` reads, for resolution, exactly as row `row` does: the
    /// same id, key, scope, `supersedes` and facts. A record that differs only
    /// in what resolution never reads (its text, once erased) may stand in
    /// for the row's.
    #[must_use]
    pub fn decides_alike(&self, row: u32, record: &Record<'_>) -> bool {
        let index = row as usize;
        let supersedes_alike = match self.targets.get(index) {
            Some(&NO_ROW) => match record.supersedes {
                None => !self.dangling.iter().any(|(other, _)| *other == row),
                Some(named) => self
                    .dangling
                    .iter()
                    .any(|(other, span)| *other == row && self.text(span) == named),
            },
            Some(&target) => record.supersedes == Some(self.id_of(target)),
            None => false,
        };
        self.facts.get(index) == Some(&record.facts())
            && self.id_of(row) == record.id
            && self.key_of(row) == record.key
            && self
                .scope_of_row
                .get(index)
                .and_then(|&scope| self.scopes.get(scope as usize))
                .is_some_and(|scope| scope.borrow() == record.scope)
            && supersedes_alike
    }
}
