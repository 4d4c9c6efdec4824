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
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyTable;
use rayon::prelude::*;

use super::errors::invalid_input;
use crate::arrow_input::{read_contexts, read_records, read_tombstones, Table};
use crate::batch::{resolve_contexts, DecisionChunk, Store};
use crate::error::{Broken, Error, ErrorKind, InputError};
use crate::model::{decision_code, DECISION_NAMES};

/// Every batch of one input, imported through the Arrow `PyCapsule` interface.
fn import(input: &Bound<'_, PyAny>, what: &str) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let whole = |kind, message: String| {
        invalid_input(&InputError {
            kind,
            field: what.to_owned(),
            row: None,
            record_id: None,
            message,
        })
    };
    let any: AnyRecordBatch = input.extract().map_err(|_| {
        let got = input
            .get_type()
            .name()
            .map_or_else(|_| "object".to_owned(), |name| name.to_string());
        whole(
            ErrorKind::WrongType,
            format!(
                "{what}: expected an Arrow table (an object with __arrow_c_stream__ or \
                 __arrow_c_array__), got {got}"
            ),
        )
    })?;
    let reader = any.into_reader()?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|error| {
        whole(
            ErrorKind::Malformed,
            format!("{what}: the Arrow stream failed: {error}"),
        )
    })?;
    Ok((schema, batches))
}

type Imported = (SchemaRef, Vec<RecordBatch>);

/// The schema of the output table.
fn output_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("context_id", DataType::Utf8, false),
        Field::new("record_id", DataType::Utf8, false),
        Field::new(
            "decision",
            DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            false,
        ),
    ]))
}

/// One batch of the output: a chunk's rows, one per (context, record) decision.
fn output(
    schema: &SchemaRef,
    context_ids: &[&str],
    store: &Store<'_>,
    chunk: &DecisionChunk,
) -> Result<RecordBatch, Broken> {
    let rows = chunk.rows.len();
    let id_bytes: usize = chunk
        .rows
        .iter()
        .map(|&row| store.id(row).map_or(0, str::len))
        .sum();
    let mut context_column = StringBuilder::with_capacity(rows, rows * 8);
    let mut record_column = StringBuilder::with_capacity(rows, id_bytes);
    let contexts = context_ids
        .get(chunk.contexts.clone())
        .ok_or(Broken("a chunk names contexts outside the input"))?;
    for (context_id, (decided, _)) in contexts.iter().zip(chunk.per_context()) {
        for &row in decided {
            let id = store
                .id(row)
                .ok_or(Broken("a decision names a row outside the store"))?;
            context_column.append_value(context_id);
            record_column.append_value(id);
        }
    }
    let codes = chunk
        .outcomes
        .iter()
        .map(|&outcome| i8::try_from(decision_code(outcome)))
        .collect::<Result<Vec<i8>, _>>()
        .map_err(|_| Broken("a decision code does not fit in int8"))?;
    let decision = DictionaryArray::<Int8Type>::try_new(
        Int8Array::from(codes),
        Arc::new(StringArray::from(DECISION_NAMES.to_vec())),
    )
    .map_err(|_| Broken("the decision dictionary is invalid"))?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(context_column.finish()),
        Arc::new(record_column.finish()),
        Arc::new(decision),
    ];
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|_| Broken("an output batch does not match its schema"))
}

fn run(
    records: &Imported,
    contexts: &Imported,
    tombstones: Option<&Imported>,
    include_excluded: bool,
) -> Result<Vec<RecordBatch>, Error> {
    let record_table = Table::new("records", records.0.clone(), &records.1);
    let store = read_records(&record_table)?;
    let context_table = Table::new("contexts", contexts.0.clone(), &contexts.1);
    let (context_ids, targets) = read_contexts(&context_table)?;
    let forgets = match tombstones {
        Some((schema, batches)) => {
            read_tombstones(&Table::new("tombstones", schema.clone(), batches))?
        }
        None => Vec::new(),
    };
    let index = store.index_tombstones(&forgets);
    let chunks = resolve_contexts(&store, &targets, &index, include_excluded)?;
    let schema = output_schema();
    let build = |chunk: &DecisionChunk| output(&schema, &context_ids, &store, chunk);
    let batches: Result<Vec<RecordBatch>, Broken> = if chunks.len() > 1 {
        chunks.par_iter().map(build).collect()
    } else {
        chunks.iter().map(build).collect()
    };
    Ok(batches?)
}

/// Resolves every context over one store of records (`docs/spec.md` §4).
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
    // PanicException (`docs/spec.md` §5), so it is caught and reported as a bug.
    let result = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(&records, &contexts, tombstones.as_ref(), include_excluded)
        }))
        .unwrap_or_else(|_| Err(Broken("a panic in the batch resolver").into()))
    });
    PyTable::try_new(result?, output_schema())?.into_pyarrow(py)
}
