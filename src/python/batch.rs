//! `resolve_batch`: Arrow tables in (any producer of the Arrow `PyCapsule`
//! interface), a pyarrow table out.
//!
//! Importing the streams needs the interpreter; reading, checking, indexing,
//! resolving every context (in parallel) and building the output run with it
//! released.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, DictionaryArray, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyTable;

use super::{InternalError, InvalidInputError};
use crate::arrow_input::{read_contexts, read_records, read_tombstones, InputError, Table};
use crate::batch::{resolve_contexts, ContextDecisions, Store};
use crate::resolve::TombstoneIndex;

/// The values of the `decision` column, by code: `active`, then each reason.
const DECISIONS: [&str; 6] = [
    "active",
    "scope",
    "status-or-time",
    "forgotten",
    "superseded",
    "lower-precedence",
];

fn invalid_input(py: Python<'_>, error: &InputError) -> PyErr {
    let raise = || -> PyResult<PyErr> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("field", &error.column)?;
        kwargs.set_item("row", error.row)?;
        kwargs.set_item("record_id", &error.record_id)?;
        let exception = py
            .get_type::<InvalidInputError>()
            .call((&error.message,), Some(&kwargs))?;
        Ok(PyErr::from_value(exception))
    };
    raise().unwrap_or_else(|failure| failure)
}

/// Every batch of one input, imported through the Arrow `PyCapsule` interface.
fn import(input: &Bound<'_, PyAny>, what: &str) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let py = input.py();
    let not_arrow = || {
        let got = input
            .get_type()
            .name()
            .map_or_else(|_| "object".to_owned(), |name| name.to_string());
        invalid_input(
            py,
            &InputError {
                message: format!(
                    "{what}: expected an Arrow table (an object with __arrow_c_stream__ or \
                     __arrow_c_array__), got {got}"
                ),
                column: what.to_owned(),
                row: None,
                record_id: None,
            },
        )
    };
    let any: AnyRecordBatch = input.extract().map_err(|_| not_arrow())?;
    let reader = any.into_reader()?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|error| {
        invalid_input(
            py,
            &InputError {
                message: format!("{what}: the Arrow stream failed: {error}"),
                column: what.to_owned(),
                row: None,
                record_id: None,
            },
        )
    })?;
    Ok((schema, batches))
}

type Imported = (SchemaRef, Vec<RecordBatch>);

/// The output table: one row per (context, record) decision.
fn output(
    context_ids: &[&str],
    store: &Store<'_>,
    decisions: &[ContextDecisions],
) -> Result<RecordBatch, String> {
    let rows: usize = decisions
        .iter()
        .map(|d| d.active.len() + d.excluded.len())
        .sum();
    let mut context_column = StringBuilder::with_capacity(rows, rows * 8);
    let mut record_column = StringBuilder::with_capacity(rows, rows * 12);
    let mut codes: Vec<i8> = Vec::with_capacity(rows);
    let ids = store.records().ids();
    for (context_id, decided) in context_ids.iter().zip(decisions) {
        let excluded = decided
            .excluded
            .iter()
            .map(|&(row, reason)| (row, reason as i8 + 1));
        for (row, code) in decided.active.iter().map(|&row| (row, 0)).chain(excluded) {
            let id = ids
                .get(row)
                .ok_or("a decision names a row outside the store")?;
            context_column.append_value(context_id);
            record_column.append_value(id);
            codes.push(code);
        }
    }
    let decision = DictionaryArray::<Int8Type>::try_new(
        Int8Array::from(codes),
        Arc::new(StringArray::from(DECISIONS.to_vec())),
    )
    .map_err(|error| error.to_string())?;
    let schema = Schema::new(vec![
        Field::new("context_id", DataType::Utf8, false),
        Field::new("record_id", DataType::Utf8, false),
        Field::new(
            "decision",
            DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            false,
        ),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(context_column.finish()),
        Arc::new(record_column.finish()),
        Arc::new(decision),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).map_err(|error| error.to_string())
}

enum Failure {
    Input(InputError),
    Internal(String),
}

fn run(
    records: &Imported,
    contexts: &Imported,
    tombstones: Option<&Imported>,
    include_excluded: bool,
) -> Result<RecordBatch, Failure> {
    let record_table = Table::new("records", records.0.clone(), &records.1);
    let candidates = read_records(&record_table).map_err(Failure::Input)?;
    let context_table = Table::new("contexts", contexts.0.clone(), &contexts.1);
    let (context_ids, targets) = read_contexts(&context_table).map_err(Failure::Input)?;
    let forgets = match tombstones {
        Some((schema, batches)) => {
            read_tombstones(&Table::new("tombstones", schema.clone(), batches))
                .map_err(Failure::Input)?
        }
        None => Vec::new(),
    };
    let store = Store::new(candidates);
    let index = TombstoneIndex::new(&forgets);
    let decisions = resolve_contexts(&store, &targets, &index, include_excluded);
    output(&context_ids, &store, &decisions).map_err(Failure::Internal)
}

/// Resolves every context over one store of records (SPEC §4).
#[pyfunction]
#[pyo3(signature = (records, contexts, *, tombstones = None, include_excluded = false))]
pub(crate) fn resolve_batch<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    contexts: &Bound<'py, PyAny>,
    tombstones: Option<&Bound<'py, PyAny>>,
    include_excluded: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let records = import(records, "records")?;
    let contexts = import(contexts, "contexts")?;
    let tombstones = tombstones.map(|t| import(t, "tombstones")).transpose()?;
    // Arrow's own code runs here too: a panic in it must not escape as
    // PanicException (SPEC §5), so it is caught and reported as a bug.
    let result = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(&records, &contexts, tombstones.as_ref(), include_excluded)
        }))
        .unwrap_or_else(|_| {
            Err(Failure::Internal(
                "a panic in the batch resolver".to_owned(),
            ))
        })
    });
    match result {
        Ok(batch) => {
            let schema = batch.schema();
            PyTable::try_new(vec![batch], schema)?.into_pyarrow(py)
        }
        Err(Failure::Input(error)) => Err(invalid_input(py, &error)),
        Err(Failure::Internal(message)) => Err(InternalError::new_err(message)),
    }
}
