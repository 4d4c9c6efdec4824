//! The canonical output order (`docs/spec.md` §2.6): winners by (scope id, key),
//! exclusions by id, all by code point. Scope ids are compared as the escaped
//! strings they denote, without building them.

use std::cmp::Ordering;

use super::candidates::{CandidateSet, Context, ScopeRef, Slot};
use crate::error::Broken;
use crate::model::Reason;

/// Compares two scopes by their canonical ids, without building them.
#[must_use]
pub fn compare_scope_ids(a: &ScopeRef<'_>, b: &ScopeRef<'_>) -> Ordering {
    scope_id_bytes(*a).cmp(scope_id_bytes(*b))
}

/// The bytes of `model::scope_id(scope)`, one at a time (`docs/spec.md` §1.2).
fn scope_id_bytes(scope: ScopeRef<'_>) -> impl Iterator<Item = u8> + '_ {
    let fields = scope
        .fields()
        .flat_map(|field| std::iter::once(b':').chain(escaped(field)));
    let owner = scope
        .owner
        .into_iter()
        .flat_map(|owner| b"::".iter().copied().chain(escaped(owner)));
    scope.kind.name().bytes().chain(fields).chain(owner)
}

/// A field's bytes with `%` as `%25` and `:` as `%3A`.
fn escaped(field: &str) -> impl Iterator<Item = u8> + '_ {
    field.bytes().flat_map(|byte| {
        let (bytes, len) = match byte {
            b'%' => (*b"%25", 3),
            b':' => (*b"%3A", 3),
            other => ([other, 0, 0], 1),
        };
        bytes.into_iter().take(len)
    })
}

/// The first sixteen bytes of `text`, big-endian: comparing these integers
/// orders strings as their bytes do, as long as the prefixes differ (most ids
/// and keys differ within 16 bytes, so most comparisons never reach memory).
fn prefix(text: &str) -> u128 {
    let bytes = text.as_bytes();
    (u128::from(word(bytes)) << 64) | u128::from(word(bytes.get(8..).unwrap_or_default()))
}

/// The first eight bytes of `bytes`, big-endian, zero-padded. Read as one load
/// when there are eight (or shifted in one by one, in a register): copying a
/// short string into a buffer and reading the buffer back as an integer stalls
/// on store forwarding, which cost more than the whole comparison it serves.
fn word(bytes: &[u8]) -> u64 {
    if let Some(&first) = bytes.first_chunk::<8>() {
        return u64::from_be_bytes(first);
    }
    let mut word = 0_u64;
    for index in 0..8 {
        word = (word << 8) | u64::from(bytes.get(index).copied().unwrap_or(0));
    }
    word
}

fn compare_text(a: (u128, &str), b: (u128, &str)) -> Ordering {
    a.0.cmp(&b.0)
        .then_with(|| a.1.as_bytes().cmp(b.1.as_bytes()))
}

/// The rank of each slot's scope among the context's (at most six) scopes in
/// scope id order, by [`Slot::index`] (`usize::MAX` for a slot the context
/// has no scope of).
///
/// Winners passed stage 1, so each one's scope is the context's scope of its
/// slot: ranking those scopes once reduces the winners' order to (slot rank, key).
#[must_use]
pub fn scope_ranks(context: &Context<'_>) -> [usize; 8] {
    // On the stack: this runs once per context, for every context of a batch.
    let mut scopes = Slot::ALL.map(|slot| context.scope_of(slot));
    scopes.sort_unstable_by(|a, b| match (a, b) {
        (Some(a), Some(b)) => compare_scope_ids(a, b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    });
    let mut rank_of_slot = [usize::MAX; 8];
    for (rank, scope) in scopes.iter().enumerate() {
        if let Some(entry) = scope.and_then(|scope| rank_of_slot.get_mut(scope.slot().index())) {
            *entry = rank;
        }
    }
    rank_of_slot
}

/// Sorts winner rows by (scope id, key).
///
/// # Errors
/// [`Broken`] when a row is not a candidate of the context's kinds (a bug).
pub fn sort_active(
    candidates: &CandidateSet<'_>,
    context: &Context<'_>,
    rows: &mut [usize],
) -> Result<(), Broken> {
    let rank_of_slot = scope_ranks(context);
    let mut keyed: Vec<(usize, u128, &str, usize)> = Vec::with_capacity(rows.len());
    for &row in rows.iter() {
        let (slot, key) = candidates
            .scopes()
            .get(row)
            .zip(candidates.keys().get(row))
            .map(|(scope, key)| (scope.slot(), *key))
            .ok_or(Broken("a winner row is not a candidate"))?;
        keyed.push(ranked(&rank_of_slot, row, slot, key));
    }
    sort_ranked(&mut keyed);
    for (slot, entry) in rows.iter_mut().zip(keyed) {
        *slot = entry.3;
    }
    Ok(())
}

/// The rows of `winners`, each given with its slot and key, by (scope id, key).
#[must_use]
pub fn winners_in_order<'k>(
    context: &Context<'_>,
    winners: impl IntoIterator<Item = (usize, Slot, &'k str)>,
) -> Vec<usize> {
    let rank_of_slot = scope_ranks(context);
    let mut keyed: Vec<(usize, u128, &str, usize)> = winners
        .into_iter()
        .map(|(row, slot, key)| ranked(&rank_of_slot, row, slot, key))
        .collect();
    sort_ranked(&mut keyed);
    keyed.into_iter().map(|entry| entry.3).collect()
}

/// A winner's sort entry: (its scope's rank, its key's prefix, its key, its row).
/// Gathered once, so comparisons read small tuples, not the columns.
fn ranked<'k>(
    rank_of_slot: &[usize; 8],
    row: usize,
    slot: Slot,
    key: &'k str,
) -> (usize, u128, &'k str, usize) {
    let rank = rank_of_slot
        .get(slot.index())
        .copied()
        .unwrap_or(usize::MAX);
    (rank, prefix(key), key, row)
}

fn sort_ranked(keyed: &mut [(usize, u128, &str, usize)]) {
    keyed.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| compare_text((a.1, a.2), (b.1, b.2)))
    });
}

/// Sorts excluded rows by id.
///
/// # Errors
/// [`Broken`] when a row is not a candidate (a bug).
pub fn sort_excluded(
    candidates: &CandidateSet<'_>,
    rows: &mut [(usize, Reason)],
) -> Result<(), Broken> {
    let ids = candidates.ids();
    sort_by_text(rows, |&(row, _)| ids.get(row).copied())
}

/// The rows `0..` of `ids` (each row's id, in row order) by id, in code
/// point order, or the first repeated id as `(earlier, later)`: the smallest
/// `later` whose id appears at an earlier row, with the first such row (as
/// [`CandidateSet::first_duplicate_id`]). One sort serves both the check the
/// input needs and the order of the exclusions
/// ([`super::resolve_packed_in_id_order`]).
///
/// # Errors
/// The first repeated id, as above.
pub fn rows_by_id<'t>(
    ids: impl ExactSizeIterator<Item = &'t str>,
) -> Result<Vec<usize>, (usize, usize)> {
    let mut keyed: Vec<(u128, &str, usize)> = ids
        .enumerate()
        .map(|(row, id)| (prefix(id), id, row))
        .collect();
    let order = |a: &(u128, &str, usize), b: &(u128, &str, usize)| {
        compare_text((a.0, a.1), (b.0, b.1)).then(a.2.cmp(&b.2))
    };
    if keyed.len() >= PARALLEL_FROM {
        rayon::slice::ParallelSliceMut::par_sort_unstable_by(keyed.as_mut_slice(), order);
    } else {
        keyed.sort_unstable_by(order);
    }
    // Equal ids are adjacent, rows ascending: a run's second row is its first repeat.
    let first_repeat = keyed
        .chunk_by(|a, b| a.0 == b.0 && a.1 == b.1)
        .filter_map(|run| Some((run.first()?.2, run.get(1)?.2)))
        .min_by_key(|&(_, later)| later);
    match first_repeat {
        Some(repeat) => Err(repeat),
        None => Ok(keyed.into_iter().map(|(_, _, row)| row).collect()),
    }
}

/// From this many rows on, [`rows_by_id`] sorts on all cores.
const PARALLEL_FROM: usize = 100_000;

/// Sorts `items` by the string each one names, by code point.
///
/// # Errors
/// [`Broken`] when `text_of` names no string for an item (a bug).
pub fn sort_by_text<'t, T: Copy>(
    items: &mut [T],
    text_of: impl Fn(&T) -> Option<&'t str>,
) -> Result<(), Broken> {
    let mut keyed: Vec<(u128, &str, T)> = Vec::with_capacity(items.len());
    for item in items.iter() {
        let text = text_of(item).ok_or(Broken("an item to sort names no string"))?;
        keyed.push((prefix(text), text, *item));
    }
    keyed.sort_unstable_by(|a, b| compare_text((a.0, a.1), (b.0, b.1)));
    for (slot, (_, _, item)) in items.iter_mut().zip(keyed) {
        *slot = item;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scope_id;

    fn all_scopes() -> Vec<ScopeRef<'static>> {
        let ids = [
            "", "a", "a:b", "a%3Ab", "a%b", "b", ":", "%", "z", "é", "𝔘", "A",
        ];
        let mut scopes = Vec::new();
        for first in ids {
            scopes.push(ScopeRef::user(first));
            scopes.push(ScopeRef::conversation(first));
            for second in ids {
                scopes.push(ScopeRef::character(first, second));
                scopes.push(ScopeRef::scene(first, second));
                scopes.push(ScopeRef::conversation(first).owned_by(second));
            }
        }
        for owner in ["a", "b:", "%"] {
            scopes.push(ScopeRef::scene("a", "b").owned_by(owner));
            scopes.push(ScopeRef::scene("a", ":").owned_by(owner));
        }
        scopes
    }

    #[test]
    fn byte_prefixes_order_like_the_strings() {
        let texts = [
            "",
            "a",
            "ab",
            "abcdefgh",
            "abcdefghi",
            "abcdefgg",
            "é",
            "𝔘",
            "\u{0}",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(
                    compare_text((prefix(a), a), (prefix(b), b)),
                    a.cmp(b),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn lazy_comparison_equals_comparing_the_built_ids() {
        let scopes = all_scopes();
        for a in &scopes {
            for b in &scopes {
                let built_a = scope_id(a.kind, &a.fields().collect::<Vec<_>>(), a.owner);
                let built_b = scope_id(b.kind, &b.fields().collect::<Vec<_>>(), b.owner);
                assert_eq!(
                    compare_scope_ids(a, b),
                    built_a.cmp(&built_b),
                    "{built_a} vs {built_b}"
                );
            }
        }
    }
}
