//! Checking a batch of records without building a store: the streamed batch
//! job checks every batch of its input as it routes it to a part, so that a
//! rule holds for the whole input, not only for the rows some part keeps.
//! The rules and their order are [`super::read_records`]'s, unique ids
//! aside (the job checks those across all batches, by [`id_hashes`]).

use super::scopes::{id_columns, scopes};
use super::tombstones::read_cited;
use super::{Checked, Table};
use crate::model::{Authority, ScopeKind, Status};
use crate::partition::id_hash;
use crate::resolve::ScopeRef;

/// Every rule of a records table but unique ids; each row's scope.
///
/// # Errors
/// The first broken rule, as [`super::read_records`] reports it.
pub fn check_records<'t>(table: &Table<'t>) -> Checked<Vec<ScopeRef<'t>>> {
    table.visit_required_text("id", true, |_| {})?;
    table.visit_required_text("key", true, |_| {})?;
    let kinds = table.vocabulary::<ScopeKind>("scope_kind")?;
    let ids = id_columns(table)?;
    if table.has("status") {
        table.vocabulary::<Status>("status")?;
    }
    table.vocabulary::<Authority>("authority")?;
    table.required_instants("valid_from")?;
    table.optional_instants("valid_until")?;
    table.visit_optional_text("supersedes", true, |_| {})?;
    if table.has("version") {
        table.integers("version")?;
    }
    table.optional_instants("observed_at")?;
    table.check_confidences("confidence")?;
    let scopes = scopes(table, &kinds, &ids)?;
    // A job selects it only when a tombstone carries hashes, and reads it after the
    // tables' rules, as `resolve_batch` does.
    if table.has("source_message_ids") {
        read_cited(table)?;
    }
    Ok(scopes)
}

/// The 128-bit hash of every row's text in a required string column
/// already checked (`id`, `context_id`), in row order.
///
/// # Errors
/// The column's rules, should it not have been checked.
pub fn id_hashes(table: &Table<'_>, column: &str) -> Checked<Vec<(u64, u64)>> {
    let mut hashes = Vec::with_capacity(table.rows());
    table.visit_required_text(column, false, |id| hashes.push(id_hash(id)))?;
    Ok(hashes)
}

/// For each row of a checked records table, the 128-bit hash of its
/// `supersedes` when it bears that edge at every instant from `now` on
/// (valid by `now`, no `valid_until`, not stored `expired`: the corrections
/// that can normalise what they name, `docs/spec.md` §7.1), else `None`.
///
/// # Errors
/// The columns' rules, should they not have been checked.
pub fn lasting_edges(table: &Table<'_>, now: i64) -> Checked<Vec<Option<(u64, u64)>>> {
    let valid_from = table.required_instants("valid_from")?;
    let valid_until = table.optional_instants("valid_until")?;
    let statuses = if table.has("status") {
        Some(table.vocabulary::<Status>("status")?)
    } else {
        None
    };
    let mut edges = Vec::with_capacity(table.rows());
    table.visit_optional_text("supersedes", false, |target| {
        let row = edges.len();
        let lasting = valid_from.get(row).is_some_and(|&from| from <= now)
            && valid_until.get(row).is_some_and(Option::is_none)
            && statuses
                .as_ref()
                .and_then(|s| s.get(row))
                .is_none_or(|&status| status != Status::Expired);
        edges.push(target.filter(|_| lasting).map(id_hash));
    })?;
    Ok(edges)
}
