//! Interning a store's strings, once, so that resolving its contexts hashes
//! and compares integers.
//!
//! - [`KeyRanks`]: key → its rank among the store's distinct keys in code
//!   point order, so comparing ranks orders keys as their strings.
//! - [`Interned`]: the distinct values of one scope id column.
//! - [`ScopeIndex`]: scope (kind and interned ids) → number, and the rows of
//!   each scope contiguous.

use rayon::prelude::*;

use crate::model::ScopeKind;
use crate::resolve::hash::{map_with_capacity, Hashed, Map};

/// Marks "no row" and "no value" in `u32` columns.
pub const NO_ROW: u32 = u32::MAX;

/// Key → rank among the distinct keys, in code point order.
pub struct KeyRanks<'a> {
    ranks: Map<Hashed<'a>, u32>,
}

impl<'a> KeyRanks<'a> {
    /// Each row's key rank, and the table.
    #[must_use]
    pub fn build(keys: Numbering<'a>) -> (Self, Vec<u32>) {
        let Numbering {
            mut numbers,
            distinct,
            mut by_row,
        } = keys;
        // Number of first appearance → rank in key order.
        let mut order: Vec<u32> = (0..u32::try_from(distinct.len()).unwrap_or(NO_ROW)).collect();
        order.par_sort_unstable_by(|&a, &b| {
            let text = |n: u32| distinct.get(n as usize).map(|k| k.text.as_bytes());
            text(a).cmp(&text(b))
        });
        let mut rank_of_number = vec![0_u32; distinct.len()];
        for (rank, &number) in order.iter().enumerate() {
            if let Some(slot) = rank_of_number.get_mut(number as usize) {
                *slot = u32::try_from(rank).unwrap_or(NO_ROW);
            }
        }
        let rank = |number: u32| {
            rank_of_number
                .get(number as usize)
                .copied()
                .unwrap_or(NO_ROW)
        };
        for number in &mut by_row {
            *number = rank(*number);
        }
        for value in numbers.values_mut() {
            *value = rank(*value);
        }
        (Self { ranks: numbers }, by_row)
    }

    /// The rank of `key`, if some record has it.
    #[must_use]
    pub fn rank_of(&self, key: &Hashed<'_>) -> Option<u32> {
        self.ranks.get(key).copied()
    }

    /// Every key's text, by rank.
    #[must_use]
    pub fn texts(&self) -> Vec<&'a str> {
        by_number(&self.ranks)
    }
}

/// The texts of a numbering, by number.
fn by_number<'a>(numbers: &Map<Hashed<'a>, u32>) -> Vec<&'a str> {
    let mut texts = vec![""; numbers.len()];
    for (value, &number) in numbers {
        if let Some(slot) = texts.get_mut(number as usize) {
            *slot = value.text;
        }
    }
    texts
}

/// Numbers values by first appearance, row by row ([`NO_ROW`] for null).
pub struct Numbering<'a> {
    numbers: Map<Hashed<'a>, u32>,
    distinct: Vec<Hashed<'a>>,
    by_row: Vec<u32>,
}

impl<'a> Numbering<'a> {
    #[must_use]
    pub fn with_capacity(rows: usize) -> Self {
        Self {
            numbers: map_with_capacity(rows.min(1024)),
            distinct: Vec::new(),
            by_row: Vec::with_capacity(rows),
        }
    }

    /// Numbers the next row's value.
    pub fn push(&mut self, value: Option<Hashed<'a>>) {
        let number = value.map_or(NO_ROW, |value| self.number(value));
        self.by_row.push(number);
    }

    /// The number of `value`: its own if an earlier row had it, else the
    /// next (the row that has it must be pushed next, by [`Self::push_number`],
    /// so that numbers stay in order of first appearance).
    pub fn number(&mut self, value: Hashed<'a>) -> u32 {
        *self.numbers.entry(value).or_insert_with(|| {
            self.distinct.push(value);
            u32::try_from(self.distinct.len() - 1).unwrap_or(NO_ROW)
        })
    }

    /// Numbers the next row with a number [`Self::number`] gave ([`NO_ROW`] for null).
    pub fn push_number(&mut self, number: u32) {
        self.by_row.push(number);
    }
}

impl<'a> FromIterator<Option<Hashed<'a>>> for Numbering<'a> {
    fn from_iter<I: IntoIterator<Item = Option<Hashed<'a>>>>(values: I) -> Self {
        let mut numbering = Self::with_capacity(0);
        for value in values {
            numbering.push(value);
        }
        numbering
    }
}

/// The distinct values of one scope id column, numbered.
pub struct Interned<'a> {
    numbers: Map<Hashed<'a>, u32>,
}

impl<'a> Interned<'a> {
    /// The column's table, and each row's number ([`NO_ROW`] for null).
    #[must_use]
    pub fn build(values: Numbering<'a>) -> (Self, Vec<u32>) {
        (
            Self {
                numbers: values.numbers,
            },
            values.by_row,
        )
    }

    /// Every value's text, by number.
    #[must_use]
    pub fn texts(&self) -> Vec<&'a str> {
        by_number(&self.numbers)
    }

    /// The number of `value`, if some row has it.
    #[must_use]
    pub fn number_of(&self, value: &Hashed<'_>) -> Option<u32> {
        self.numbers.get(value).copied()
    }
}

/// A scope with its ids interned: the kind, one or two column numbers, and
/// the owner's number in the `user_id` column ([`NO_ROW`]: unowned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScopeKey {
    pub kind: ScopeKind,
    pub first: u32,
    pub second: u32,
    pub owner: u32,
}

/// Scope → number, and each scope's rows (ascending), contiguous.
pub struct ScopeIndex {
    numbers: ScopeNumbers,
    /// Each scope, by number.
    keys: Vec<ScopeKey>,
    starts: Vec<u32>,
    rows: Vec<u32>,
}

/// Scope numbers: unowned one-field scopes (`user`, `conversation`) by their
/// one column number in a plain array, the others by hash.
struct ScopeNumbers {
    by_first: [Vec<u32>; 2],
    by_pair: Map<ScopeKey, u32>,
    /// Arrays grow only to this length; larger column numbers go by hash.
    direct_below: u32,
}

impl ScopeNumbers {
    fn slot(&self, scope: ScopeKey) -> Option<(usize, usize)> {
        let array = match (scope.kind, scope.owner) {
            (ScopeKind::User, NO_ROW) => 0,
            (ScopeKind::Conversation, NO_ROW) => 1,
            _ => return None,
        };
        (scope.first < self.direct_below).then_some((array, scope.first as usize))
    }

    fn get(&self, scope: ScopeKey) -> Option<u32> {
        match self.slot(scope) {
            Some((array, index)) => self
                .by_first
                .get(array)
                .and_then(|numbers| numbers.get(index))
                .copied()
                .filter(|&number| number != NO_ROW),
            None => self.by_pair.get(&scope).copied(),
        }
    }

    /// The number of `scope`, given `next` if it is new.
    fn get_or_insert(&mut self, scope: ScopeKey, next: u32) -> u32 {
        match self.slot(scope) {
            Some((array, index)) => {
                let Some(numbers) = self.by_first.get_mut(array) else {
                    return next;
                };
                if numbers.len() <= index {
                    numbers.resize(index + 1, NO_ROW);
                }
                match numbers.get_mut(index) {
                    Some(slot) if *slot == NO_ROW => {
                        *slot = next;
                        next
                    }
                    Some(slot) => *slot,
                    None => next,
                }
            }
            None => *self.by_pair.entry(scope).or_insert(next),
        }
    }
}

impl ScopeIndex {
    /// The index of the rows' scopes, and each row's scope number.
    #[must_use]
    pub fn build(scopes: impl Iterator<Item = ScopeKey>, rows: usize) -> (Self, Vec<u32>) {
        let mut numbers = ScopeNumbers {
            by_first: [Vec::new(), Vec::new()],
            by_pair: map_with_capacity(rows.min(1024)),
            direct_below: u32::try_from(rows).unwrap_or(NO_ROW),
        };
        let mut counts: Vec<u32> = Vec::new();
        let mut keys = Vec::new();
        let mut by_row = Vec::with_capacity(rows);
        for scope in scopes {
            let next = u32::try_from(counts.len()).unwrap_or(NO_ROW);
            let number = numbers.get_or_insert(scope, next);
            if number == next {
                counts.push(0);
                keys.push(scope);
            }
            if let Some(count) = counts.get_mut(number as usize) {
                *count += 1;
            }
            by_row.push(number);
        }
        let mut starts = Vec::with_capacity(counts.len() + 1);
        let mut total = 0_u32;
        starts.push(0);
        for count in counts {
            total = total.saturating_add(count);
            starts.push(total);
        }
        let mut next: Vec<u32> = starts.clone();
        let mut grouped = vec![0_u32; by_row.len()];
        for (row, &number) in by_row.iter().enumerate() {
            if let Some(position) = next.get_mut(number as usize) {
                if let Some(slot) = grouped.get_mut(*position as usize) {
                    *slot = u32::try_from(row).unwrap_or(NO_ROW);
                }
                *position += 1;
            }
        }
        (
            Self {
                numbers,
                keys,
                starts,
                rows: grouped,
            },
            by_row,
        )
    }

    /// The number of a scope, if some record has it.
    #[must_use]
    pub fn number_of(&self, scope: ScopeKey) -> Option<u32> {
        self.numbers.get(scope)
    }

    /// The scope numbered `number`.
    #[must_use]
    pub fn key_of(&self, number: u32) -> Option<ScopeKey> {
        self.keys.get(number as usize).copied()
    }

    /// Every scope with an owning user, by that user's number in the `user_id`
    /// column: user and character scopes by their user, owned conversations
    /// and scenes by their owner (what a user-wide tombstone reaches).
    #[must_use]
    pub fn by_owner(&self) -> Map<u32, Vec<u32>> {
        let mut by_owner: Map<u32, Vec<u32>> = Map::default();
        for (number, key) in (0..).zip(&self.keys) {
            let owner = match key.kind {
                ScopeKind::User | ScopeKind::Character => key.first,
                ScopeKind::Conversation | ScopeKind::Scene => key.owner,
            };
            if owner != NO_ROW {
                by_owner.entry(owner).or_default().push(number);
            }
        }
        by_owner
    }

    /// How many scopes there are (numbered from 0).
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The rows of scope `number`, ascending.
    #[must_use]
    pub fn rows_of(&self, number: u32) -> &[u32] {
        let index = number as usize;
        match (self.starts.get(index), self.starts.get(index + 1)) {
            (Some(&start), Some(&end)) => {
                self.rows.get(start as usize..end as usize).unwrap_or(&[])
            }
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::hash::text_hasher;

    fn hashed(texts: &[&'static str]) -> Vec<Hashed<'static>> {
        let state = text_hasher();
        texts.iter().map(|t| Hashed::new(&state, t)).collect()
    }

    #[test]
    fn key_ranks_follow_code_point_order() {
        let keys = hashed(&["b", "é", "a", "b", "Z", "ab"]);
        let (ranks, by_row) = KeyRanks::build(keys.iter().copied().map(Some).collect());
        // Z < a < ab < b < é
        assert_eq!(by_row, [3, 4, 1, 3, 0, 2]);
        assert_eq!(ranks.rank_of(&hashed(&["ab"])[0]), Some(2));
        assert_eq!(ranks.rank_of(&hashed(&["c"])[0]), None);
    }

    #[test]
    fn column_values_are_numbered_and_nulls_are_not() {
        let values = hashed(&["u1", "u2"]);
        let column = [Some(values[0]), None, Some(values[1]), Some(values[0])];
        let (interned, by_row) = Interned::build(column.into_iter().collect());
        assert_eq!(by_row, [0, NO_ROW, 1, 0]);
        assert_eq!(interned.number_of(&values[1]), Some(1));
    }

    #[test]
    fn scope_rows_are_grouped_in_row_order() {
        let key = |kind, first, second, owner| ScopeKey {
            kind,
            first,
            second,
            owner,
        };
        let scopes = [
            key(ScopeKind::User, 0, 0, NO_ROW),
            key(ScopeKind::Conversation, 0, 0, NO_ROW),
            key(ScopeKind::User, 0, 0, NO_ROW),
            key(ScopeKind::Character, 0, 1, NO_ROW),
            key(ScopeKind::Conversation, 0, 0, 0),
        ];
        let (index, by_row) = ScopeIndex::build(scopes.iter().copied(), scopes.len());
        assert_eq!(by_row, [0, 1, 0, 2, 3]);
        assert_eq!(index.rows_of(0), [0, 2]);
        assert_eq!(index.rows_of(2), [3]);
        assert_eq!(index.rows_of(9), [] as [u32; 0]);
        assert_eq!(
            index.number_of(key(ScopeKind::Conversation, 0, 0, NO_ROW)),
            Some(1)
        );
        assert_eq!(
            index.number_of(key(ScopeKind::Conversation, 0, 0, 0)),
            Some(3)
        );
        assert_eq!(index.number_of(key(ScopeKind::Conversation, 0, 0, 1)), None);
        assert_eq!(index.number_of(key(ScopeKind::Scene, 0, 0, NO_ROW)), None);
        assert_eq!(index.number_of(key(ScopeKind::User, 1, 0, NO_ROW)), None);
        assert_eq!(
            index.number_of(key(ScopeKind::User, u32::MAX, 0, NO_ROW)),
            None
        );
        assert_eq!(
            index.number_of(key(ScopeKind::Character, 0, 1, NO_ROW)),
            Some(2)
        );
    }
}
