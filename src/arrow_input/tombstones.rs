//! The tombstones table (`docs/spec.md` §1.5, §4.1): `forgotten_at` and
//! `blocks_sources_before` are each optional, but every row needs one of
//! them; a missing one equals the other, and `blocks_sources_before` may not
//! be later than `forgotten_at` (it would block a fact re-told after the
//! forget). An optional `user_wide` bool column (null: false) marks the
//! user-wide tombstones, each on a user scope (§1.5). Optional
//! `source_salt` (string) and `blocked_sources` (list of strings) hold the
//! salted hashes of the messages a tombstone blocks, in lowercase hex.

use super::scopes::{id_columns, scopes};
use super::{Checked, Table};
use crate::batch::Store;
use crate::error::{ErrorKind, InputError};
use crate::model::ScopeKind;
use crate::resolve::source_hashes::{parse_hashes, BadSource};
use crate::resolve::{SourceHashes, Tombstone};

const BOUND: &str = "blocks_sources_before";
const FORGOTTEN: &str = "forgotten_at";
const USER_WIDE: &str = "user_wide";
const SALT: &str = "source_salt";
const HASHES: &str = "blocked_sources";

/// A tombstones table read: each row's tombstone, and the salt and hashes of
/// the rows that have some (owned here; [`TombstoneTable::tombstones`] lends
/// them).
pub struct TombstoneTable<'t> {
    rows: Vec<Tombstone<'t>>,
    sources: Vec<(usize, SourceHashes)>,
}

impl TombstoneTable<'_> {
    /// Every row's tombstone, in row order, with its hashes.
    #[must_use]
    pub fn tombstones(&self) -> Vec<Tombstone<'_>> {
        let mut tombstones: Vec<Tombstone<'_>> = self.rows.clone();
        for (row, sources) in &self.sources {
            if let Some(tombstone) = tombstones.get_mut(*row) {
                tombstone.sources = Some(sources);
            }
        }
        tombstones
    }

    /// The number of rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it has no row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Every row as a tombstone, in row order.
///
/// # Errors
/// The first broken rule: column by column, then the scope ids row by row,
/// then each row's two instants.
pub fn read_tombstones<'t>(table: &Table<'t>) -> Checked<TombstoneTable<'t>> {
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
    let salts = table.optional_texts(SALT, false)?;
    let hashes = table.optional_text_lists(HASHES)?;
    let scopes = scopes(table, &kinds, &ids)?;
    let mut tombstones = Vec::with_capacity(keys.len());
    let mut sources = Vec::new();
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
        let salt = salts.get(row).copied().flatten();
        let listed = hashes.get(row).map_or(&[][..], Vec::as_slice);
        // The order of the Python fields' checks: the salt, the hashes, then
        // hashes without a salt.
        let malformed_hash = || {
            table.fail(
                HASHES,
                ErrorKind::Malformed,
                "must hold SHA-256 digests as 64 lowercase hex digits",
                Some(row),
            )
        };
        match salt {
            None if parse_hashes(listed.iter().copied()).is_err() => return Err(malformed_hash()),
            None if !listed.is_empty() => {
                return Err(table.fail(
                    SALT,
                    ErrorKind::Missing,
                    "is null but blocked_sources is not empty (the hashes were made with a salt)",
                    Some(row),
                ))
            }
            None => {}
            Some(salt) => match SourceHashes::parse(salt, listed.iter().copied()) {
                Ok(parsed) => sources.push((row, parsed)),
                Err(BadSource::Salt) => {
                    return Err(table.fail(
                        SALT,
                        ErrorKind::Malformed,
                        "must be 16 to 64 bytes as lowercase hex (32 to 128 digits)",
                        Some(row),
                    ))
                }
                Err(BadSource::Hash(_)) => return Err(malformed_hash()),
            },
        }
        tombstones.push(Tombstone {
            key,
            scope,
            blocks_sources_before,
            user_wide,
            sources: None,
        });
    }
    Ok(TombstoneTable {
        rows: tombstones,
        sources,
    })
}

/// Marks the records of `store` (read from `records`) that `tombstones`
/// block by the messages they cite, reading `source_message_ids` only when
/// some tombstone has hashes.
///
/// # Errors
/// As [`read_cited`].
pub fn mark_cited(
    store: &mut Store<'_>,
    records: &Table<'_>,
    tombstones: &[Tombstone<'_>],
) -> Checked<()> {
    if !tombstones
        .iter()
        .any(|tombstone| tombstone.sources.is_some_and(|sources| !sources.is_empty()))
    {
        return Ok(());
    }
    let cited = read_cited(records)?;
    store.mark_blocked_by_sources(tombstones, |row| {
        Ok::<_, InputError>(
            cited
                .get(row)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .copied(),
        )
    })
}

/// The records table's `source_message_ids`, one list per row (an absent
/// column: none cites anything). Read only when a tombstone has hashes.
///
/// # Errors
/// A column that is not a list of strings, or a null or empty id.
pub fn read_cited<'t>(table: &Table<'t>) -> Checked<Vec<Vec<&'t str>>> {
    table.optional_text_lists("source_message_ids")
}
