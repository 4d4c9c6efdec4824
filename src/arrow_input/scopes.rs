//! A table's scopes, from `scope_kind` and the four scope id columns
//! (`docs/spec.md` §4.1): each row's kind names the ids it needs
//! ([`ScopeKind::id_columns`]), which must be non-null and non-empty there.
//! On a conversation or scene row a non-null `user_id` is the scope's owner
//! ([`ScopeKind::owner_column`]), never ignored; it must not be empty. The
//! other id columns are ignored on that row.

use foldhash::fast::FixedState;

use super::text::TextColumn;
use super::{Checked, Table};
use crate::batch::intern::{Interned, Numbering, ScopeIndex, NO_ROW};
use crate::batch::scope_key;
use crate::error::{ErrorKind, InputError};
use crate::model::{IdColumn, ScopeKind};
use crate::resolve::hash::{text_hasher, Hashed};
use crate::resolve::{ScopeRef, Slot};

/// One scope id column's distinct values, and each row's number among them.
pub(super) type InternedColumn<'t> = (Interned<'t>, Vec<u32>);

/// The error for an owner that is empty.
fn empty_owner(table: &Table<'_>, kind: ScopeKind, column: IdColumn, row: usize) -> InputError {
    table.fail(
        column.name(),
        ErrorKind::Empty,
        format_args!(
            "is empty; on a {} row it is the owner, null or a non-empty id",
            kind.name()
        ),
        Some(row),
    )
}

/// The error for an id a row's kind does not use (it would mean another kind).
fn foreign_id(table: &Table<'_>, kind: ScopeKind, column: IdColumn, row: usize) -> InputError {
    table.fail(
        column.name(),
        ErrorKind::Inconsistent,
        format_args!(
            "is set, but a {} scope has no {}",
            kind.name(),
            column.name()
        ),
        Some(row),
    )
}

/// Whether a row of `kind` may hold a value in `column`: one of its ids or its owner.
fn uses(kind: ScopeKind, column: IdColumn) -> bool {
    kind.id_columns().contains(&column) || kind.owner_column() == Some(column)
}

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
    // A shared cell: the value's number is given where it is first met
    // (per distinct value of a dictionary chunk), the row's where it is visited.
    let numbering = std::cell::RefCell::new(Numbering::with_capacity(table.rows()));
    let _: Result<(), std::convert::Infallible> = text_column.try_for_each_mapped(
        |_, text| Ok(numbering.borrow_mut().number(Hashed::new(state, text))),
        |_, number| {
            numbering.borrow_mut().push_number(number.unwrap_or(NO_ROW));
            Ok(())
        },
    );
    Ok(Interned::build(numbering.into_inner()))
}

/// The rows' scopes indexed from the id columns' numbers: the index, each
/// row's scope number, and each row's slot (kind, owned or not). Each row
/// is checked on the way (its kind's ids non-null and non-empty, its owner
/// null or non-empty): the first bad row stops the index and is the error.
pub(super) fn index_scopes(
    table: &Table<'_>,
    kinds: &[ScopeKind],
    interned: [&Interned<'_>; 4],
    numbers: [&[u32]; 4],
) -> Checked<(ScopeIndex, Vec<u32>, Vec<Slot>)> {
    let state = text_hasher();
    let empty = interned.map(|column| column.number_of(&Hashed::new(&state, "")));
    let is_empty = |column: IdColumn, number: u32| {
        empty.get(usize::from(column.code())).copied().flatten() == Some(number)
    };
    let mut bad = None;
    let mut slots = Vec::with_capacity(kinds.len());
    let keys = kinds.iter().enumerate().map_while(|(row, &kind)| {
        let row_numbers = numbers.map(|column| column.get(row).copied().unwrap_or(NO_ROW));
        let number = |column: IdColumn| {
            row_numbers
                .get(usize::from(column.code()))
                .copied()
                .unwrap_or(NO_ROW)
        };
        for &column in kind.id_columns() {
            if number(column) == NO_ROW || is_empty(column, number(column)) {
                let null = number(column) == NO_ROW;
                bad = Some(missing_scope_id(table, kind, column, null, row));
                return None;
            }
        }
        if let Some(column) = IdColumn::ALL
            .into_iter()
            .find(|&column| !uses(kind, column) && number(column) != NO_ROW)
        {
            bad = Some(foreign_id(table, kind, column, row));
            return None;
        }
        let owned = kind
            .owner_column()
            .is_some_and(|column| number(column) != NO_ROW);
        if let Some(column) = kind.owner_column().filter(|&c| is_empty(c, number(c))) {
            bad = Some(empty_owner(table, kind, column, row));
            return None;
        }
        slots.push(Slot { kind, owned });
        Some(scope_key(kind, row_numbers))
    });
    let (index, scope_numbers) = ScopeIndex::build(keys, kinds.len());
    match bad {
        Some(error) => Err(error),
        None => Ok((index, scope_numbers, slots)),
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
        for column in IdColumn::ALL {
            let set = values
                .get(usize::from(column.code()))
                .and_then(|column| column.get(row).copied().flatten())
                .is_some();
            if set && !uses(kind, column) {
                return Err(foreign_id(table, kind, column, row));
            }
        }
        let mut owner = None;
        if let Some(column) = kind.owner_column() {
            owner = values
                .get(usize::from(column.code()))
                .and_then(|column| column.get(row).copied().flatten());
            if owner == Some("") {
                return Err(empty_owner(table, kind, column, row));
            }
        }
        // One-field kinds keep "" in `second`.
        let [first, second] = fields;
        scopes.push(ScopeRef {
            kind,
            first,
            second,
            owner,
        });
    }
    Ok(scopes)
}
