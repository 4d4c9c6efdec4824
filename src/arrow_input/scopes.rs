//! A table's scopes, from `scope_kind` and the four scope id columns
//! (`docs/spec.md` §4.1): each row's kind names the ids it needs
//! ([`ScopeKind::id_columns`]), which must be non-null and non-empty there;
//! the other id columns are ignored on that row.

use foldhash::fast::FixedState;

use super::text::TextColumn;
use super::{Checked, Table};
use crate::batch::intern::{Interned, Numbering, ScopeIndex, NO_ROW};
use crate::batch::scope_key;
use crate::error::{ErrorKind, InputError};
use crate::model::{IdColumn, ScopeKind};
use crate::resolve::hash::{text_hasher, Hashed};
use crate::resolve::ScopeRef;

/// One scope id column's distinct values, and each row's number among them.
pub(super) type InternedColumn<'t> = (Interned<'t>, Vec<u32>);

/// The error for a scope id a row's kind needs that is null or empty.
fn missing_scope_id(
    table: &Table<'_>,
    kind: ScopeKind,
    column: IdColumn,
    null: bool,
    row: usize,
) -> InputError {
    let (error_kind, problem) = if null {
        (ErrorKind::Missing, "null")
    } else {
        (ErrorKind::Empty, "empty")
    };
    table.fail(
        column.name(),
        error_kind,
        format_args!("is {problem}; a {} scope needs it", kind.name()),
        Some(row),
    )
}

/// One scope id column, type checked and interned (its rows are checked per
/// scope kind by [`index_scopes`]).
pub(super) fn intern_id_column<'t>(
    table: &Table<'t>,
    column: IdColumn,
    state: &FixedState,
) -> Checked<InternedColumn<'t>> {
    let text_column = table.text_column(column.name())?;
    let mut numbering = Numbering::with_capacity(table.rows());
    let _: Result<(), std::convert::Infallible> = text_column.try_for_each(|_, text| {
        numbering.push(text.map(|text| Hashed::new(state, text)));
        Ok(())
    });
    Ok(Interned::build(numbering))
}

/// The rows' scopes indexed from the id columns' numbers, each row checked
/// on the way (its kind's ids non-null and non-empty): the first bad row
/// stops the index and is the error.
pub(super) fn index_scopes(
    table: &Table<'_>,
    kinds: &[ScopeKind],
    interned: [&Interned<'_>; 4],
    numbers: [&[u32]; 4],
) -> Checked<(ScopeIndex, Vec<u32>)> {
    let state = text_hasher();
    let empty = interned.map(|column| column.number_of(&Hashed::new(&state, "")));
    let mut bad = None;
    let keys = kinds.iter().enumerate().map_while(|(row, &kind)| {
        let row_numbers = numbers.map(|column| column.get(row).copied().unwrap_or(NO_ROW));
        for &column in kind.id_columns() {
            let slot = usize::from(column.code());
            let number = row_numbers.get(slot).copied().unwrap_or(NO_ROW);
            let is_empty = empty.get(slot).copied().flatten() == Some(number);
            if number == NO_ROW || is_empty {
                bad = Some(missing_scope_id(table, kind, column, number == NO_ROW, row));
                return None;
            }
        }
        Some(scope_key(kind, row_numbers))
    });
    let index = ScopeIndex::build(keys, kinds.len());
    match bad {
        Some(error) => Err(error),
        None => Ok(index),
    }
}

/// The four scope id columns, type checked (rows are checked by [`scopes`]).
pub(super) fn id_columns<'t>(table: &Table<'t>) -> Checked<[TextColumn<'t>; 4]> {
    let mut columns = Vec::with_capacity(4);
    for column in IdColumn::ALL {
        columns.push(table.text_column(column.name())?);
    }
    columns.try_into().map_err(|_| {
        table.fail(
            "scope_kind",
            ErrorKind::Malformed,
            "has no scope id columns",
            None,
        )
    })
}

/// Each row's scope, from its kind and the four id columns, in row order; a
/// row whose kind needs an id that is null or empty is an error naming that
/// column.
pub(super) fn scopes<'t>(
    table: &Table<'t>,
    kinds: &[ScopeKind],
    ids: &[TextColumn<'t>; 4],
) -> Checked<Vec<ScopeRef<'t>>> {
    let mut values: Vec<Vec<Option<&'t str>>> = Vec::with_capacity(ids.len());
    for column in ids {
        let mut rows = Vec::with_capacity(kinds.len());
        let _: Result<(), std::convert::Infallible> = column.try_for_each(|_, text| {
            rows.push(text);
            Ok(())
        });
        values.push(rows);
    }
    let mut scopes = Vec::with_capacity(kinds.len());
    for (row, &kind) in kinds.iter().enumerate() {
        let mut fields = ["", ""];
        for (slot, &column) in fields.iter_mut().zip(kind.id_columns()) {
            let value = values
                .get(usize::from(column.code()))
                .and_then(|column| column.get(row).copied().flatten());
            match value {
                Some(text) if !text.is_empty() => *slot = text,
                value => return Err(missing_scope_id(table, kind, column, value.is_none(), row)),
            }
        }
        // One-field kinds keep "" in `second`.
        let [first, second] = fields;
        scopes.push(ScopeRef {
            kind,
            first,
            second,
        });
    }
    Ok(scopes)
}
