//! What `resolve_batch(..., with_values=True)` adds to a winner's row: its
//! key, its value and its certainty (`docs/spec.md` §4.2). The records table
//! must then have `value` and `confidence`; every row is checked, but text is
//! read only for the rows that win.

use super::text::TextLookup;
use super::{Checked, Table};
use crate::error::ErrorKind;

/// The columns winners' values come from, read by row.
pub struct Values<'t> {
    keys: TextLookup<'t>,
    texts: TextLookup<'t>,
    confidences: Vec<f64>,
}

impl<'t> Values<'t> {
    /// The record's key, value and confidence at `row`.
    #[must_use]
    pub fn of(&self, row: usize) -> Option<(&'t str, &'t str, f64)> {
        Some((
            self.keys.get(row)?,
            self.texts.get(row)?,
            *self.confidences.get(row)?,
        ))
    }
}

/// The key, value and confidence columns of a records table already read by
/// [`super::read_records`] (which checked `key`): `value` must exist and have
/// no null; `confidence` must exist.
///
/// # Errors
/// The first broken rule: `value` missing or null, `confidence` missing or bad.
pub fn read_values<'t>(table: &Table<'t>) -> Checked<Values<'t>> {
    let values = table.text_column("value")?;
    values.try_for_each(|row, text| match text {
        None => Err(table.fail(
            "value",
            ErrorKind::Missing,
            "is null; a value is required",
            Some(row),
        )),
        Some(_) => Ok(()),
    })?;
    if !table.has("confidence") {
        return Err(table.fail(
            "confidence",
            ErrorKind::MissingColumn,
            "is missing; the certainty of a winner needs it",
            None,
        ));
    }
    let mut confidences = Vec::with_capacity(table.rows());
    table.visit_confidences("confidence", |confidence| confidences.push(confidence))?;
    Ok(Values {
        keys: TextLookup::new(table.text_column("key")?),
        texts: TextLookup::new(values),
        confidences,
    })
}
