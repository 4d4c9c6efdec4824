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

use super::errors::invalid_input;
use crate::arrow_input::{
    mark_cited, read_contexts, read_records, read_tombstones, read_values, Table,
};
use crate::arrow_output::output_schema;
use crate::arrow_output::stream::{Decisions, Flush};
use crate::batch::{Store, StoreTombstones};
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

/// The three inputs of a batch call, imported.
fn import_inputs(
    records: &Bound<'_, PyAny>,
    contexts: &Bound<'_, PyAny>,
    tombstones: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Imported, Imported, Option<Imported>)> {
    Ok((
        import(records, "records")?,
        import(contexts, "contexts")?,
        tombstones.map(|t| import(t, "tombstones")).transpose()?,
    ))
}

/// The tombstones of a batch call (none when not given), read after the records and
/// indexed on their store, whose records the tombstones' hashes block are marked
/// (reading the records' `source_message_ids` only then).
pub(super) fn read_forgets(
    store: &mut Store<'_>,
    records: &Table<'_>,
    tombstones: Option<&Imported>,
) -> Result<StoreTombstones, Error> {
    let Some((schema, batches)) = tombstones else {
        return Ok(store.index_tombstones(&[]));
    };
    let table = read_tombstones(&Table::new("tombstones", schema.clone(), batches))?;
    let forgets = table.tombstones();
    mark_cited(store, records, &forgets)?;
    Ok(store.index_tombstones(&forgets))
}

/// Resolves every context and hands the output to `flush` in order: once,
/// whole (`flush_bytes` of `usize::MAX`), or in groups of about
/// `flush_bytes`, so that only one group's output is ever held.
fn run(
    records: &Imported,
    contexts: &Imported,
    tombstones: Option<&Imported>,
    options: Options,
    flush: &mut Flush<'_>,
) -> Result<(), Error> {
    let record_table = Table::new("records", records.0.clone(), &records.1);
    let mut store = read_records(&record_table)?;
    let context_table = Table::new("contexts", contexts.0.clone(), &contexts.1);
    let (context_ids, targets) = read_contexts(&context_table)?;
    let index = read_forgets(&mut store, &record_table, tombstones)?;
    let values = if options.with_values {
        Some(read_values(&record_table)?)
    } else {
        None
    };
    let decisions = Decisions {
        store: &store,
        context_ids: &context_ids,
        contexts: &targets,
        tombstones: &index,
        include_excluded: options.include_excluded,
        values: values.as_ref(),
    };
    if options.flush_bytes == usize::MAX {
        flush(decisions.whole()?)
    } else {
        decisions.stream(options.flush_bytes, flush)
    }
}

/// What a call asks for beyond the winners.
#[derive(Clone, Copy)]
struct Options {
    include_excluded: bool,
    with_values: bool,
    /// Output bytes handed over at a time; `usize::MAX`: the whole result at once.
    flush_bytes: usize,
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
    let (records, contexts, tombstones) = import_inputs(records, contexts, tombstones)?;
    let options = Options {
        include_excluded,
        with_values,
        flush_bytes: usize::MAX,
    };
    let mut result = Vec::new();
    let mut keep = |batches: Vec<RecordBatch>| {
        result = batches;
        Ok(())
    };
    // Arrow's own code runs here too: a panic in it must not escape as
    // PanicException (`docs/spec.md` §5), so it is caught and reported as a bug.
    py.detach(|| guarded(|| run(&records, &contexts, tombstones.as_ref(), options, &mut keep)))?;
    PyTable::try_new(result, output_schema(with_values))?.into_pyarrow(py)
}

/// Like [`resolve_batch`], but hands the result to `sink` as it is built:
/// `sink(table)` is called with pyarrow tables in output order, each of
/// about `max_bytes` of Arrow or more (the last may be smaller), and only
/// one is held at a time, so a call whose contexts see many records each
/// never holds its whole output. Returns how many rows it handed over.
#[pyfunction]
#[pyo3(signature = (
    records, contexts, sink, *, tombstones = None, include_excluded = false,
    with_values = false, max_bytes = 67_108_864
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve_batch_into(
    py: Python<'_>,
    records: &Bound<'_, PyAny>,
    contexts: &Bound<'_, PyAny>,
    sink: &Bound<'_, PyAny>,
    tombstones: Option<&Bound<'_, PyAny>>,
    include_excluded: bool,
    with_values: bool,
    #[pyo3(from_py_with = byte_count)] max_bytes: usize,
) -> PyResult<usize> {
    if !sink.is_callable() {
        return Err(invalid_input(&InputError {
            kind: ErrorKind::WrongType,
            field: "sink".to_owned(),
            row: None,
            record_id: None,
            message: format!("sink: expected a callable, got {}", sink.get_type().name()?),
        }));
    }
    let (records, contexts, tombstones) = import_inputs(records, contexts, tombstones)?;
    let options = Options {
        include_excluded,
        with_values,
        flush_bytes: max_bytes.clamp(1, usize::MAX - 1),
    };
    let sink = sink.clone().unbind();
    let schema = output_schema(with_values);
    let mut rows = 0_usize;
    // A failure of the sink stops the call; it is raised as it was raised.
    let mut failed: Option<PyErr> = None;
    let mut hand_over = |batches: Vec<RecordBatch>| {
        rows += batches.iter().map(RecordBatch::num_rows).sum::<usize>();
        Python::attach(|py| {
            let table = PyTable::try_new(batches, schema.clone())?.into_pyarrow(py)?;
            sink.call1(py, (table,)).map(drop)
        })
        .map_err(|error| {
            failed = Some(error);
            Error::Broken(Broken("the sink failed"))
        })
    };
    let outcome = py.detach(|| {
        guarded(|| {
            run(
                &records,
                &contexts,
                tombstones.as_ref(),
                options,
                &mut hand_over,
            )
        })
    });
    if let Some(error) = failed {
        return Err(error);
    }
    outcome?;
    Ok(rows)
}

/// `max_bytes`: a positive `int` (not `True`); counts past `usize` are as good as no limit.
fn byte_count(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    use pyo3::types::{PyBool, PyInt};
    let fail = |kind, message: String| {
        invalid_input(&InputError {
            kind,
            field: "max_bytes".to_owned(),
            row: None,
            record_id: None,
            message: format!("max_bytes: {message}"),
        })
    };
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        let name = value.get_type().name()?;
        return Err(fail(
            ErrorKind::WrongType,
            format!("expected an int, got {name}"),
        ));
    }
    if value.lt(1)? {
        // Not echoed: a Python int past 4,300 digits cannot even be printed.
        return Err(fail(ErrorKind::OutOfRange, "must be 1 or more".to_owned()));
    }
    Ok(value.extract::<usize>().unwrap_or(usize::MAX))
}

/// Runs `job`, a panic in it (Arrow's code runs there too) reported as a bug.
fn guarded(job: impl FnOnce() -> Result<(), Error>) -> Result<(), Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
        .unwrap_or_else(|_| Err(Broken("a panic in the batch resolver").into()))
}
