//! The records table as a [`Store`]: ids hashed, keys and scope ids
//! interned in the same pass that checks them, the columns read
//! concurrently for large tables.

use foldhash::fast::FixedState;

use super::scopes::{index_scopes, intern_id_column, InternedColumn};
use super::{run_all, Checked, Table, Task, PARALLEL_FROM};
use crate::batch::ids::{index_ids, IdIndex};
use crate::batch::intern::{KeyRanks, Numbering, NO_ROW};
use crate::batch::Store;
use crate::error::{Broken, Error, ErrorKind};
use crate::model::{Authority, IdColumn, ScopeKind, Status, DEFAULT_STATUS, DEFAULT_VERSION};
use crate::resolve::hash::{text_hasher, Hashed};

/// The result of a reading task that ran.
fn ran<T>(slot: Option<T>) -> Result<T, Broken> {
    slot.ok_or(Broken("a column reader did not run"))
}

/// The records table as a store (rows in table order).
///
/// Every column is read (concurrently for large tables, one task per
/// column: a new column is one more task), then the results are taken in
/// column order, so the error reported is the first bad column's whichever
/// task finished first.
///
/// # Errors
/// [`Error::Input`] for the first broken rule, [`Error::Broken`] for a bug.
pub fn read_records<'t>(table: &Table<'t>) -> Result<Store<'t>, Error> {
    check_store_size(table)?;
    let state = &text_hasher();
    let (mut ids, mut keys, mut kinds, mut statuses, mut authorities) =
        (None, None, None, None, None);
    let (mut valid_from, mut valid_until, mut supersedes) = (None, None, None);
    let (mut versions, mut observed_at, mut confidences) = (None, None, None);
    let [mut users, mut characters, mut conversations, mut scenes] = [None, None, None, None];
    let tasks: Vec<Task<'_>> = vec![
        Box::new(|| ids = Some(read_ids(table, state))),
        Box::new(|| keys = Some(read_keys(table, state))),
        Box::new(|| kinds = Some(table.vocabulary::<ScopeKind>("scope_kind"))),
        Box::new(|| users = Some(intern_id_column(table, IdColumn::UserId, state))),
        Box::new(|| characters = Some(intern_id_column(table, IdColumn::CharacterId, state))),
        Box::new(|| conversations = Some(intern_id_column(table, IdColumn::ConversationId, state))),
        Box::new(|| scenes = Some(intern_id_column(table, IdColumn::SceneId, state))),
        Box::new(|| statuses = Some(read_statuses(table))),
        Box::new(|| authorities = Some(table.vocabulary::<Authority>("authority"))),
        Box::new(|| valid_from = Some(table.required_instants("valid_from"))),
        Box::new(|| valid_until = Some(table.optional_instants("valid_until"))),
        Box::new(|| supersedes = Some(read_supersedes(table, state))),
        Box::new(|| versions = Some(read_versions(table))),
        Box::new(|| observed_at = Some(table.optional_instants("observed_at"))),
        Box::new(|| confidences = Some(table.check_confidences("confidence"))),
    ];
    run_all(table.rows(), tasks);

    // Column order: the first bad column is the error.
    let ids = ran(ids)??;
    let (keys, key_ranks) = ran(keys)??;
    let kinds = ran(kinds)??;
    let id_columns: [InternedColumn<'t>; 4] = [
        ran(users)??,
        ran(characters)??,
        ran(conversations)??,
        ran(scenes)??,
    ];
    let statuses = ran(statuses)??;
    let authorities = ran(authorities)??;
    let valid_from = ran(valid_from)??;
    let valid_until = ran(valid_until)??;
    let supersedes = ran(supersedes)??;
    let versions = ran(versions)??;
    let observed_at = ran(observed_at)??;
    ran(confidences)??;

    // Then the scope ids row by row, then unique record ids: the two indexes
    // are independent, so on large tables they are built at once (the scope
    // index is one sequential pass), and a bad scope is reported before a
    // repeated id either way.
    let [(users, user_numbers), (characters, character_numbers), (conversations, conversation_numbers), (scenes, scene_numbers)] =
        id_columns;
    let build_scopes = || {
        index_scopes(
            table,
            &kinds,
            [&users, &characters, &conversations, &scenes],
            [
                &user_numbers,
                &character_numbers,
                &conversation_numbers,
                &scene_numbers,
            ],
        )
    };
    let build_ids = || index_ids(&ids, &supersedes);
    let ((scopes, scope_numbers, slots), targets) = if table.rows() >= PARALLEL_FROM {
        let (scopes, targets) = rayon::join(build_scopes, build_ids);
        (scopes?, targets)
    } else {
        (build_scopes()?, build_ids())
    };
    let targets = match targets {
        IdIndex::Unique(targets) => targets,
        IdIndex::Duplicate(earlier, row) => return Err(duplicate_id(table, &ids, earlier, row)),
    };
    Ok(Store {
        ids,
        slots,
        scope_numbers,
        key_ranks,
        targets,
        statuses,
        authorities,
        versions,
        valid_from,
        valid_until,
        observed_at,
        keys,
        scope_ids: [users, characters, conversations, scenes],
        scopes,
        blocked_by_sources: Vec::new(),
    })
}

/// The error of a record id repeated at rows `earlier` and `row`.
fn duplicate_id(table: &Table<'_>, ids: &[Hashed<'_>], earlier: usize, row: usize) -> Error {
    let Some(id) = ids.get(row).map(|id| id.text) else {
        return Broken("a duplicate row is out of range").into();
    };
    let error = table.fail(
        "id",
        ErrorKind::DuplicateId,
        format_args!("repeats the id of row {}", earlier + table.row_offset),
        Some(row),
    );
    error.with_record_id(id).into()
}

/// Rows are numbered in `u32`, with one value kept for "no row".
fn check_store_size(table: &Table<'_>) -> Checked<()> {
    if u32::try_from(table.rows()).is_ok_and(|rows| rows < NO_ROW) {
        return Ok(());
    }
    Err(table.fail(
        "id",
        ErrorKind::OutOfRange,
        format_args!(
            "has {} rows; a store holds fewer than {NO_ROW}",
            table.rows()
        ),
        None,
    ))
}

/// The `status` column; absent, every record has the default status.
fn read_statuses(table: &Table<'_>) -> Checked<Vec<Status>> {
    if table.has("status") {
        table.vocabulary::<Status>("status")
    } else {
        Ok(vec![DEFAULT_STATUS; table.rows()])
    }
}

/// The `version` column; absent, every record has the default version.
fn read_versions(table: &Table<'_>) -> Checked<Vec<i64>> {
    if table.has("version") {
        table.integers("version")
    } else {
        Ok(vec![DEFAULT_VERSION; table.rows()])
    }
}

/// The `id` column hashed (unique ids are checked with the targets, by
/// [`index_ids`]).
fn read_ids<'t>(table: &Table<'t>, state: &FixedState) -> Checked<Vec<Hashed<'t>>> {
    let mut ids: Vec<Hashed<'t>> = Vec::with_capacity(table.rows());
    table.visit_required_text("id", true, |id| ids.push(Hashed::new(state, id)))?;
    Ok(ids)
}

/// The `key` column, ranked.
fn read_keys<'t>(table: &Table<'t>, state: &FixedState) -> Checked<(KeyRanks<'t>, Vec<u32>)> {
    let keys = std::cell::RefCell::new(Numbering::with_capacity(table.rows()));
    table.map_required_text(
        "key",
        true,
        |key| keys.borrow_mut().number(Hashed::new(state, key)),
        |number| keys.borrow_mut().push_number(number),
    )?;
    Ok(KeyRanks::build(keys.into_inner()))
}

/// The `supersedes` column hashed.
fn read_supersedes<'t>(table: &Table<'t>, state: &FixedState) -> Checked<Vec<Option<Hashed<'t>>>> {
    let mut named = Vec::with_capacity(table.rows());
    table.visit_optional_text("supersedes", true, |id| {
        named.push(id.map(|id| Hashed::new(state, id)));
    })?;
    Ok(named)
}
