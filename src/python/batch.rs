//! `resolve_batch`: Arrow tables in (any producer of the Arrow `PyCapsule`
//! interface), a pyarrow table out.
//!
//! Importing the streams needs the interpreter; reading, checking, indexing,
//! resolving every context (in parallel) and building the output run with it
//! released.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyTable;
use rayon::prelude::*;

use super::errors::invalid_input;
use crate::arrow_input::{read_contexts, read_records, read_tombstones, read_values, Table};
use crate::arrow_output::{decision_batch, output_schema};
use crate::batch::{resolve_contexts, DecisionChunk};
use crate::error::{Broken, Error, ErrorKind, InputError};

/// Every batch of one input, imported through the Arrow `PyCapsule` interface.
pub(crate) fn import(
    input: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
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
    // The importer decodes every column's type and may panic on one it cannot read (a
    // format string that is not UTF-8, nested in an extension type): the Python side
    // checks the texts first, and a panic that still happens is bad input, not a crash.
    let imported = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let reader = any.into_reader()?;
        let schema = reader.schema();
        let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|error| {
            whole(
                ErrorKind::Malformed,
                format!("{what}: the Arrow stream failed: {error}"),
            )
        })?;
        Ok((schema, batches))
    }));
    imported.unwrap_or_else(|_| {
        Err(whole(
            ErrorKind::Malformed,
            format!("{what}: the Arrow data could not be imported"),
        ))
    })
}

pub(crate) type Imported = (SchemaRef, Vec<RecordBatch>);

fn run(
    records: &Imported,
    contexts: &Imported,
    tombstones: Option<&Imported>,
    options: Options,
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
    let values = if options.with_values {
        Some(read_values(&record_table)?)
    } else {
        None
    };
    let index = store.index_tombstones(&forgets);
    let chunks = resolve_contexts(&store, &targets, &index, options.include_excluded)?;
    let schema = output_schema(options.with_values);
    let build = |chunk: &DecisionChunk| {
        decision_batch(&schema, &context_ids, &store, chunk, values.as_ref())
    };
    let batches: Result<Vec<RecordBatch>, Broken> = if chunks.len() > 1 {
        chunks.par_iter().map(build).collect()
    } else {
        chunks.iter().map(build).collect()
    };
    Ok(batches?)
}

/// What a call asks for beyond the winners.
#[derive(Clone, Copy)]
struct Options {
    include_excluded: bool,
    with_values: bool,
}

/// Resolves every context over one store of records (`docs/spec.md` §4).
#[pyfunction]
#[pyo3(signature = (
    records, contexts, *, tombstones = None, include_excluded = false, with_values = false
))]
pub(crate) fn resolve_batch<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    contexts: &Bound<'py, PyAny>,
    tombstones: Option<&Bound<'py, PyAny>>,
    include_excluded: bool,
    with_values: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let records = import(records, "records")?;
    let contexts = import(contexts, "contexts")?;
    let tombstones = tombstones.map(|t| import(t, "tombstones")).transpose()?;
    let options = Options {
        include_excluded,
        with_values,
    };
    // Arrow's own code runs here too: a panic in it must not escape as
    // PanicException (`docs/spec.md` §5), so it is caught and reported as a bug.
    let result = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(&records, &contexts, tombstones.as_ref(), options)
        }))
        .unwrap_or_else(|_| Err(Broken("a panic in the batch resolver").into()))
    });
    PyTable::try_new(result?, output_schema(with_values))?.into_pyarrow(py)
}
