//! The tombstones table.

use super::scopes::{id_columns, scopes};
use super::{Checked, Table};
use crate::model::ScopeKind;
use crate::resolve::Tombstone;

/// Every row as a tombstone, in row order.
///
/// # Errors
/// The first broken rule: column by column, then the scope ids row by row.
pub fn read_tombstones<'t>(table: &Table<'t>) -> Checked<Vec<Tombstone<'t>>> {
    let keys = table.required_texts("key", true)?;
    let kinds = table.vocabulary::<ScopeKind>("scope_kind")?;
    let ids = id_columns(table)?;
    let bounds = table.required_instants("blocks_sources_before")?;
    table.optional_instants("forgotten_at")?;
    let scopes = scopes(table, &kinds, &ids)?;
    Ok(keys
        .into_iter()
        .zip(scopes)
        .zip(bounds)
        .map(|((key, scope), blocks_sources_before)| Tombstone {
            key,
            scope,
            blocks_sources_before,
        })
        .collect())
}
