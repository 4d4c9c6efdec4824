//! The forget sweep (`docs/spec.md` §7.2): the records whose private text
//! must be erased from every copy because no resolution, at any instant and
//! in any context, can make them active again: those a tombstone blocks
//! (same key, a scope it reaches, evidence at or before its bound or a
//! cited message it holds the hash of) and those stored
//! `forgotten`. Both are decided at stage 3 whatever the instant.

use crate::batch::{Store, StoreTombstones};
use crate::error::Broken;
use crate::model::Status;
use crate::resolve::forget::evidence_time;

crate::model::vocabulary! {
    /// Why a record's text must go.
    PurgeCause {
        Tombstone = "tombstone",
        StoredForgotten = "stored-forgotten",
    }
}

/// One record to purge: its row and why (a tombstone when one blocks it,
/// even if it is also stored `forgotten`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Purge {
    pub row: u32,
    pub cause: PurgeCause,
}

/// The records to purge, by row ascending.
///
/// # Errors
/// [`Broken`] when the store's columns disagree on its length (a bug).
pub fn purge(store: &Store<'_>, tombstones: &StoreTombstones) -> Result<Vec<Purge>, Broken> {
    const OUTSIDE: Broken = Broken("a store row is missing from a column");
    let mut purged = Vec::new();
    for row in 0..store.len() {
        let facts = store.facts(row).ok_or(OUTSIDE)?;
        let scope = *store.scope_numbers.get(row).ok_or(OUTSIDE)?;
        let key = *store.key_ranks.get(row).ok_or(OUTSIDE)?;
        let evidence = evidence_time(facts.valid_from, facts.observed_at);
        let cause = if tombstones
            .bound(scope, key)
            .is_some_and(|bound| evidence <= bound)
            || store.blocked_by_sources(row)
        {
            PurgeCause::Tombstone
        } else if facts.status == Status::Forgotten {
            PurgeCause::StoredForgotten
        } else {
            continue;
        };
        purged.push(Purge {
            row: u32::try_from(row).map_err(|_| OUTSIDE)?,
            cause,
        });
    }
    Ok(purged)
}
