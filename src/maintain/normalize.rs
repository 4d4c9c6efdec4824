//! Status normalisation (`docs/spec.md` §7.1): the statuses a background
//! worker may write at `now` so that no resolution at any instant `t >= now`
//! changes its active records.
//!
//! Only records stored `active` change, and each at most once, to the first
//! rule that applies:
//!
//! 1. `forgotten`: a tombstone blocks it, by its bound or by a message the
//!    record cites (tombstones block at every instant,
//!    and a stored `forgotten` is decided at the same stage, 3);
//! 2. `expired`: `valid_until <= now` (outside its interval at every later
//!    instant: it neither wins nor bears an edge again);
//! 3. `superseded`: a record that will bear its edge at every later instant,
//!    in every context that sees this one, names it: valid since `now` or
//!    before, no `valid_until`, not stored `expired`, and its scope covers
//!    this one's ([`covers`]). Its reason moves from `superseded` (stage 4)
//!    to `status-or-time` (stage 2); the active records stay the same.
//!
//! Writing `forgotten`, `superseded` or `expired` never switches an edge off
//! where it was on (only `expired` does, and it is written only on records
//! whose interval has ended), so no other record's outcome moves either, and
//! a second pass finds nothing more: the bearers that qualified still do.

use super::cover::covers;
use crate::batch::intern::NO_ROW;
use crate::batch::{Store, StoreTombstones};
use crate::error::Broken;
use crate::model::Status;
use crate::resolve::forget::evidence_time;

/// One status a worker may write: the record at `row` goes from `active`
/// (its stored status) to `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusChange {
    pub row: u32,
    pub status: Status,
}

/// Whether the record at `row` bears its edge at every instant from `now`
/// on: in its interval at `now` and open-ended, and not stored `expired`.
fn bears_from(store: &Store<'_>, row: usize, now: i64) -> Option<bool> {
    let facts = store.facts(row)?;
    Some(facts.valid_from <= now && facts.valid_until.is_none() && facts.status != Status::Expired)
}

/// The changes to write at `now`, by row ascending.
///
/// # Errors
/// [`Broken`] when the store's columns disagree on its length (a bug).
pub fn normalize(
    store: &Store<'_>,
    tombstones: &StoreTombstones,
    now: i64,
) -> Result<Vec<StatusChange>, Broken> {
    const OUTSIDE: Broken = Broken("a store row is missing from a column");
    let rows = store.len();
    let mut decided: Vec<Option<Status>> = vec![None; rows];
    // A record stored `active` that neither rule 1 nor 2 changes.
    let mut open = vec![false; rows];
    for row in 0..rows {
        let facts = store.facts(row).ok_or(OUTSIDE)?;
        if facts.status != Status::Active {
            continue;
        }
        let scope = *store.scope_numbers.get(row).ok_or(OUTSIDE)?;
        let key = *store.key_ranks.get(row).ok_or(OUTSIDE)?;
        let evidence = evidence_time(facts.valid_from, facts.observed_at);
        let slot = decided.get_mut(row).ok_or(OUTSIDE)?;
        if tombstones
            .bound(scope, key)
            .is_some_and(|bound| evidence <= bound)
            || store.blocked_by_sources(row)
        {
            *slot = Some(Status::Forgotten);
        } else if facts.valid_until.is_some_and(|until| until <= now) {
            *slot = Some(Status::Expired);
        } else if let Some(flag) = open.get_mut(row) {
            *flag = true;
        }
    }
    // Rule 3: one pass over the edges (each names one row: ids are unique).
    for (bearer, &target) in store.targets.iter().enumerate() {
        if target == NO_ROW || !open.get(target as usize).copied().unwrap_or(false) {
            continue;
        }
        if !bears_from(store, bearer, now).ok_or(OUTSIDE)? {
            continue;
        }
        let scope_of = |row: usize| {
            store
                .scope_numbers
                .get(row)
                .and_then(|&number| store.scopes.key_of(number))
                .ok_or(OUTSIDE)
        };
        if covers(scope_of(bearer)?, scope_of(target as usize)?) {
            *decided.get_mut(target as usize).ok_or(OUTSIDE)? = Some(Status::Superseded);
        }
    }
    Ok(decided
        .into_iter()
        .enumerate()
        .filter_map(|(row, status)| {
            Some(StatusChange {
                row: u32::try_from(row).ok()?,
                status: status?,
            })
        })
        .collect())
}
