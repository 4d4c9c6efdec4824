//! A store's record ids, indexed once: the first repeated id (a store's ids
//! are unique), and the row each `supersedes` names. Resolving a context then
//! compares row numbers, never id texts: with 36-character ids, reading the
//! texts of the superseded-id set was the largest cost of deciding a context.
//!
//! Ids and targets are split into partitions by the top bits of their hashes
//! and each partition is indexed on its own, in parallel: a partition's table
//! is small enough for the cache.

use rayon::prelude::*;

use super::intern::NO_ROW;
use crate::resolve::hash::{map_with_capacity, Hashed, Map};

/// From this many ids on, ids are indexed in partitions, in parallel.
const PARTITION_FROM: usize = 65_536;
const PARTITION_BITS: u32 = 8;

/// What indexing a store's ids finds.
#[derive(Debug, PartialEq, Eq)]
pub enum IdIndex {
    /// The first pair of rows `(earlier, later)` sharing an id: the smallest
    /// `later` whose id appears at an earlier row.
    Duplicate(usize, usize),
    /// The ids are unique; for each row, the row its `supersedes` names
    /// ([`NO_ROW`] for none, or an id no record has).
    Unique(Vec<u32>),
}

/// `(hash, position)` of the present values, grouped by partition (positions
/// ascending within each), and where each partition starts: a counting sort.
fn group(hashes: impl Iterator<Item = Option<u64>> + Clone, count: usize) -> Grouped {
    let partition_of = |hash: u64| {
        if count == 1 {
            0
        } else {
            usize::try_from(hash >> (64 - PARTITION_BITS)).unwrap_or(0)
        }
    };
    let mut starts = vec![0_usize; count + 1];
    for hash in hashes.clone().flatten() {
        if let Some(slot) = starts.get_mut(partition_of(hash) + 1) {
            *slot += 1;
        }
    }
    for index in 1..starts.len() {
        let before = starts.get(index - 1).copied().unwrap_or(0);
        if let Some(slot) = starts.get_mut(index) {
            *slot += before;
        }
    }
    let mut next = starts.clone();
    let mut entries = vec![(0_u64, 0_u32); starts.last().copied().unwrap_or(0)];
    for (position, hash) in hashes.enumerate() {
        let Some(hash) = hash else { continue };
        if let Some(at) = next.get_mut(partition_of(hash)) {
            if let Some(slot) = entries.get_mut(*at) {
                *slot = (hash, u32::try_from(position).unwrap_or(NO_ROW));
            }
            *at += 1;
        }
    }
    Grouped { starts, entries }
}

struct Grouped {
    starts: Vec<usize>,
    entries: Vec<(u64, u32)>,
}

impl Grouped {
    fn partition(&self, index: usize) -> &[(u64, u32)] {
        match (self.starts.get(index), self.starts.get(index + 1)) {
            (Some(&start), Some(&end)) => self.entries.get(start..end).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// One partition's ids by hash; ids whose hash an earlier, different id
/// already has (rare: 64-bit hashes) are kept aside.
struct Table {
    first: Map<u64, u32>,
    collided: Vec<(u64, u32)>,
}

impl Table {
    /// The table of `entries`, or the partition's first repeat `(earlier, later)`.
    fn build<'t>(
        entries: &[(u64, u32)],
        text: &impl Fn(u32) -> &'t str,
    ) -> Result<Self, (u32, u32)> {
        let mut table = Self {
            first: map_with_capacity(entries.len()),
            collided: Vec::new(),
        };
        // Rows ascend within a partition: the first repeat found has this
        // partition's smallest `later`.
        for &(hash, row) in entries {
            let earlier = *table.first.entry(hash).or_insert(row);
            if earlier == row {
                continue;
            }
            if let Some(earlier) = table.find(hash, text(row), text) {
                return Err((earlier, row));
            }
            table.collided.push((hash, row));
        }
        Ok(table)
    }

    /// The row whose id is `wanted` (of hash `hash`), if any.
    fn find<'t>(&self, hash: u64, wanted: &str, text: &impl Fn(u32) -> &'t str) -> Option<u32> {
        let first = *self.first.get(&hash)?;
        if text(first) == wanted {
            return Some(first);
        }
        self.collided
            .iter()
            .find(|&&(other, row)| other == hash && text(row) == wanted)
            .map(|&(_, row)| row)
    }
}

/// A partition's resolved targets: (position, row named).
type Found = Vec<(u32, u32)>;

/// Indexes `ids` (one per row) and resolves `targets` (each row's
/// `supersedes`, or an empty slice when no record has one).
#[must_use]
pub fn index_ids(ids: &[Hashed<'_>], targets: &[Option<Hashed<'_>>]) -> IdIndex {
    let count = if ids.len() >= PARTITION_FROM {
        1_usize << PARTITION_BITS
    } else {
        1
    };
    let id_groups = group(ids.iter().map(|id| Some(id.hash)), count);
    let target_groups = group(targets.iter().map(|t| t.map(|t| t.hash)), count);
    let text = |row: u32| ids.get(row as usize).map_or("", |id| id.text);
    // Per partition: its first repeat, or each present target's (position, row).
    let partitions: Vec<Result<Found, (u32, u32)>> = (0..count)
        .into_par_iter()
        .map(|partition| {
            let table = Table::build(id_groups.partition(partition), &text)?;
            Ok(target_groups
                .partition(partition)
                .iter()
                .filter_map(|&(hash, position)| {
                    let wanted = targets.get(position as usize).copied().flatten()?.text;
                    Some((position, table.find(hash, wanted, &text)?))
                })
                .collect())
        })
        .collect();
    let mut rows = vec![NO_ROW; if targets.is_empty() { 0 } else { ids.len() }];
    let mut duplicate: Option<(u32, u32)> = None;
    for partition in partitions {
        match partition {
            Ok(found) => {
                for (position, row) in found {
                    if let Some(slot) = rows.get_mut(position as usize) {
                        *slot = row;
                    }
                }
            }
            Err(pair) if duplicate.is_none_or(|(_, later)| pair.1 < later) => {
                duplicate = Some(pair);
            }
            Err(_) => {}
        }
    }
    match duplicate {
        Some((earlier, later)) => IdIndex::Duplicate(earlier as usize, later as usize),
        None => IdIndex::Unique(rows),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::hash::text_hasher;

    fn first_duplicate(ids: &[Hashed<'_>]) -> Option<(usize, usize)> {
        match index_ids(ids, &[]) {
            IdIndex::Duplicate(earlier, later) => Some((earlier, later)),
            IdIndex::Unique(_) => None,
        }
    }

    #[test]
    fn the_first_repeat_is_found_with_and_without_partitions() {
        for size in [10, PARTITION_FROM + 10] {
            let owned: Vec<String> = (0..size).map(|n| format!("id-{n}")).collect();
            let state = text_hasher();
            let mut ids: Vec<Hashed<'_>> = owned.iter().map(|id| Hashed::new(&state, id)).collect();
            assert_eq!(first_duplicate(&ids), None);
            // Three repeats: the one whose second occurrence comes first is reported.
            let repeat = |n: usize| Hashed::new(&state, owned[n].as_str());
            ids[size - 1] = repeat(2);
            ids[size - 3] = repeat(5);
            ids[size - 2] = repeat(1);
            assert_eq!(first_duplicate(&ids), Some((5, size - 3)));
        }
    }

    #[test]
    fn equal_hashes_are_not_duplicates_unless_the_ids_are_equal() {
        let ids = [
            Hashed { hash: 1, text: "a" },
            Hashed { hash: 1, text: "b" },
            Hashed { hash: 1, text: "a" },
        ];
        assert_eq!(first_duplicate(&ids), Some((0, 2)));
        assert_eq!(first_duplicate(&ids[..2]), None);
        let colliding = [
            Hashed { hash: 1, text: "a" },
            Hashed { hash: 1, text: "b" },
            Hashed { hash: 1, text: "c" },
            Hashed { hash: 1, text: "b" },
        ];
        assert_eq!(first_duplicate(&colliding), Some((1, 3)));
    }

    #[test]
    fn targets_name_rows_and_dangling_ones_name_none() {
        for size in [10, PARTITION_FROM + 10] {
            let owned: Vec<String> = (0..size).map(|n| format!("id-{n}")).collect();
            let state = text_hasher();
            let ids: Vec<Hashed<'_>> = owned.iter().map(|id| Hashed::new(&state, id)).collect();
            let mut targets = vec![None; size];
            targets[0] = Some(Hashed::new(&state, owned[size - 1].as_str()));
            targets[3] = Some(Hashed::new(&state, "nobody"));
            targets[size - 1] = Some(Hashed::new(&state, owned[size - 1].as_str()));
            let IdIndex::Unique(rows) = index_ids(&ids, &targets) else {
                panic!("the ids are unique");
            };
            let last = u32::try_from(size - 1).unwrap_or(NO_ROW);
            assert_eq!(rows[0], last);
            assert_eq!(rows[3], NO_ROW);
            assert_eq!(rows[size - 1], last, "a self-edge names its own row");
            assert_eq!(rows.iter().filter(|&&row| row != NO_ROW).count(), 2);
        }
    }

    #[test]
    fn a_target_whose_hash_collides_is_matched_by_text() {
        let ids = [
            Hashed { hash: 1, text: "a" },
            Hashed { hash: 1, text: "b" },
            Hashed { hash: 2, text: "c" },
        ];
        let targets = [
            Some(Hashed { hash: 1, text: "b" }),
            Some(Hashed { hash: 1, text: "z" }),
            Some(Hashed { hash: 1, text: "a" }),
        ];
        assert_eq!(
            index_ids(&ids, &targets),
            IdIndex::Unique(vec![1, NO_ROW, 0])
        );
    }
}
