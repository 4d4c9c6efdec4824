//! The tombstones table (`docs/spec.md` §1.5, §4.1): `forgotten_at` and
//! `blocks_sources_before` are each optional, but every row needs one of
//! them; a missing one equals the other, and `blocks_sources_before` may not
//! be later than `forgotten_at` (it would block a fact re-told after the
//! forget). An optional `user_wide` bool column (null: false) marks the
//! user-wide tombstones, each on a user scope (§1.5).

use super::scopes::{id_columns, scopes};
use super::{Checked, Table};
use crate::error::ErrorKind;
use crate::model::ScopeKind;
use crate::resolve::Tombstone;

const BOUND: &str = "blocks_sources_before";
const FORGOTTEN: &str = "forgotten_at";
const USER_WIDE: &str = "user_wide";

/// Every row as a tombstone, in row order.
///
/// # Errors
/// The first broken rule: column by column, then the scope ids row by row,
/// then each row's two instants.
pub fn read_tombstones<'t>(table: &Table<'t>) -> Checked<Vec<Tombstone<'t>>> {
    let keys = table.required_texts("key", true)?;
    let kinds = table.vocabulary::<ScopeKind>("scope_kind")?;
    let ids = id_columns(table)?;
    if !table.has(BOUND) && !table.has(FORGOTTEN) {
        return Err(table.fail(
            BOUND,
            ErrorKind::MissingColumn,
            "is missing, and so is forgotten_at: a tombstone needs one of them",
            None,
        ));
    }
    let bounds = table.optional_instants(BOUND)?;
    let forgotten = table.optional_instants(FORGOTTEN)?;
    let user_wide = table.optional_bools(USER_WIDE)?;
    let scopes = scopes(table, &kinds, &ids)?;
    let mut tombstones = Vec::with_capacity(keys.len());
    for (row, (key, scope)) in keys.into_iter().zip(scopes).enumerate() {
        // An absent column reads as an empty vector: every row null.
        let bound = bounds.get(row).copied().flatten();
        let forgotten_at = forgotten.get(row).copied().flatten();
        let blocks_sources_before =
            match (bound, forgotten_at) {
                (Some(bound), Some(at)) if bound > at => return Err(table.fail(
                    BOUND,
                    ErrorKind::Inconsistent,
                    "is later than forgotten_at; it would block a fact re-told after the forget",
                    Some(row),
                )),
                (Some(bound), _) => bound,
                (None, Some(at)) => at,
                (None, None) => {
                    return Err(table.fail(
                        BOUND,
                        ErrorKind::Missing,
                        "is null, and so is forgotten_at; a tombstone needs one of them",
                        Some(row),
                    ))
                }
            };
        // Absent, or null: a tombstone of its scope alone.
        let user_wide = user_wide.get(row).copied().flatten().unwrap_or(false);
        if user_wide && scope.kind != ScopeKind::User {
            return Err(table.fail(
                USER_WIDE,
                ErrorKind::Inconsistent,
                "is true on a tombstone whose scope is not a user scope; a user-wide \
                 tombstone is on the user's scope",
                Some(row),
            ));
        }
        tombstones.push(Tombstone {
            key,
            scope,
            blocks_sources_before,
            user_wide,
        });
    }
    Ok(tombstones)
}
