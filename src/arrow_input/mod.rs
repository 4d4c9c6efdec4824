//! Reading the batch form's Arrow tables (`docs/spec.md` §4.1), checking
//! every rule of `memresolve._io._arrow` in the same order (§5.2): column by
//! column (the first bad row of the first bad column), then the scope ids
//! row by row, then unique record ids.
//!
//! One module per concern: `utf8` checks each chunk in full (string columns
//! in two tight passes), [`text`] reads string columns in place,
//! [`columns`] checks and reads one column of each type, [`scopes`] turns the
//! four scope id columns into scopes, and one module per input table
//! ([`records`], [`contexts`], [`tombstones`]) lists its columns. A column
//! the rules read is one line in its table's module.
//!
//! Strings are borrowed from the Arrow buffers, never copied. Every chunk is
//! validated in full before it is read, so a malformed producer gives an
//! error, never an out-of-bounds read.

pub mod check;
mod columns;
pub mod contexts;
mod lists;
mod names;
pub mod records;
mod scopes;
pub mod text;
pub mod tombstones;
mod utf8;
pub mod values;

#[cfg(test)]
mod tests;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};

use crate::error::{ErrorKind, InputError};

pub use check::{check_records, id_hashes, lasting_edges};
pub use contexts::read_contexts;
pub use records::read_records;
pub use tombstones::{mark_cited, read_cited, read_tombstones, TombstoneTable};
pub use values::{read_values, Values};

type Checked<T> = Result<T, InputError>;

/// One input table: its schema and batches (chunks), read column by column.
pub struct Table<'t> {
    what: &'static str,
    schema: SchemaRef,
    batches: &'t [RecordBatch],
    rows: usize,
    /// Added to every row an error names: the table's first row in a
    /// larger input read batch by batch.
    row_offset: usize,
}

impl<'t> Table<'t> {
    /// The table called `what` in errors (`records`, `contexts`, `tombstones`).
    #[must_use]
    pub fn new(what: &'static str, schema: SchemaRef, batches: &'t [RecordBatch]) -> Self {
        let rows = batches.iter().map(RecordBatch::num_rows).sum();
        Self {
            what,
            schema,
            batches,
            rows,
            row_offset: 0,
        }
    }

    /// The same table, as rows `row_offset..` of a larger input: errors name
    /// rows of that input.
    #[must_use]
    pub fn starting_at(self, row_offset: usize) -> Self {
        Self { row_offset, ..self }
    }

    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }

    pub(super) fn fail(
        &self,
        column: &str,
        kind: ErrorKind,
        problem: impl std::fmt::Display,
        row: Option<usize>,
    ) -> InputError {
        let row = row.map(|row| row + self.row_offset);
        InputError::in_table(self.what, kind, column, row, problem)
    }

    #[must_use]
    pub fn has(&self, column: &str) -> bool {
        self.schema.index_of(column).is_ok()
    }

    /// The column's type in the schema; a missing column is an error.
    fn field_type(&self, column: &str) -> Checked<DataType> {
        self.schema
            .field_with_name(column)
            .map(|field| field.data_type().clone())
            .map_err(|_| self.fail(column, ErrorKind::MissingColumn, "is missing", None))
    }

    fn wrong_type(&self, column: &str, expected: &str, got: &DataType) -> InputError {
        self.fail(
            column,
            ErrorKind::WrongType,
            format_args!("must be {expected}, got {got}"),
            None,
        )
    }

    /// The chunks of `column`, each validated in full (call after the type check).
    fn chunks(&self, column: &str) -> Checked<Vec<&'t ArrayRef>> {
        let index = self
            .schema
            .index_of(column)
            .map_err(|_| self.fail(column, ErrorKind::MissingColumn, "is missing", None))?;
        let expected = self.schema.field(index).data_type();
        let mut chunks = Vec::with_capacity(self.batches.len());
        for batch in self.batches {
            let malformed = |problem: &str| self.fail(column, ErrorKind::Malformed, problem, None);
            let array = batch
                .columns()
                .get(index)
                .ok_or_else(|| malformed("is missing from a batch"))?;
            if array.data_type() != expected {
                return Err(malformed("changes type between batches"));
            }
            utf8::validate_fully(&array.to_data())
                .map_err(|error| malformed(&format!("is not valid Arrow data: {error}")))?;
            chunks.push(array);
        }
        Ok(chunks)
    }
}

/// From this many rows on, a table's columns are read concurrently.
const PARALLEL_FROM: usize = 50_000;

/// A unit of reading that fills its own result slot.
type Task<'s> = Box<dyn FnOnce() + Send + 's>;

/// Runs every task, concurrently on the rayon pool for large tables (for a
/// few thousand rows, waking the pool costs more than reading).
fn run_all(rows: usize, tasks: Vec<Task<'_>>) {
    if rows >= PARALLEL_FROM {
        rayon::scope(|scope| {
            for task in tasks {
                scope.spawn(move |_| task());
            }
        });
    } else {
        for task in tasks {
            task();
        }
    }
}
