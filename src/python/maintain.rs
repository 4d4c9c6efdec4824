//! The background jobs (`crate::maintain`) for Python: per turn over
//! `MemoryRecord` objects (`normalize_rows`, `purge_rows`, row numbers out)
//! and in batch over Arrow tables (`normalize_batch`, `forget_sweep_batch`,
//! a pyarrow table out). Both read a `batch::Store`, so they share every rule.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use pyo3_arrow::PyTable;

use super::batch::{import, read_forgets, Imported};
use super::cache::Package;
use super::errors::{guarded, internal};
use super::kernel::{candidate_set, check_candidates, cores, read_tombstones, OwnedTombstone};
use super::sources::blocked_rows;
use crate::arrow_input::{read_records, Table};
use crate::arrow_output::{dictionary, dictionary_column};
use crate::batch::{Store, StoreTombstones};
use crate::error::{Broken, Error};
use crate::maintain::{normalize, purge, PurgeCause};
use crate::model::{scope_id, Status, Vocabulary};
use crate::resolve::Tombstone;

/// Row numbers as native-endian `u32` bytes, and one code byte per row.
type RowCodes<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>);

fn row_codes(py: Python<'_>, pairs: impl Iterator<Item = (u32, u8)>) -> RowCodes<'_> {
    let (mut rows, mut codes) = (Vec::new(), Vec::new());
    for (row, code) in pairs {
        rows.extend_from_slice(&row.to_ne_bytes());
        codes.push(code);
    }
    (PyBytes::new(py, &rows), PyBytes::new(py, &codes))
}

/// Runs `job` over the store of checked `records` and `tombstones` (the
/// same checks as `resolve_rows`: records, unique ids).
fn with_store<T>(
    records: &Bound<'_, PyTuple>,
    tombstones: &Bound<'_, PyTuple>,
    job: impl FnOnce(&Store<'_>, &StoreTombstones) -> Result<T, Broken>,
) -> PyResult<T> {
    let package = Package::get(records.py())?;
    let (cores, not_a_record) = cores(package, records)?;
    let candidates = candidate_set(cores.iter().map(Bound::get));
    check_candidates(package, &cores, &candidates, not_a_record)?;
    let owned = read_tombstones(package, tombstones)?;
    let borrowed: Vec<Tombstone<'_>> = owned.iter().map(OwnedTombstone::borrow).collect();
    let mut store = Store::from_candidates(&candidates)
        .map_err(|_| internal(Broken("checked candidates repeat an id")))?;
    let blocked = blocked_rows(&cores, &borrowed)?;
    store.set_blocked_by_sources(blocked);
    let index = store.index_tombstones(&borrowed);
    job(&store, &index).map_err(internal)
}

/// The statuses to write at `now` (µs): `(rows, new status codes)`, by row.
#[pyfunction]
pub(crate) fn normalize_rows<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyTuple>,
    tombstones: &Bound<'py, PyTuple>,
    now: i64,
) -> PyResult<RowCodes<'py>> {
    let changes = guarded(|| {
        with_store(records, tombstones, |store, index| {
            normalize(store, index, now)
        })
    })?;
    Ok(row_codes(
        py,
        changes.iter().map(|c| (c.row, c.status.code())),
    ))
}

/// The records to purge: `(rows, cause codes)`, by row.
#[pyfunction]
pub(crate) fn purge_rows<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyTuple>,
    tombstones: &Bound<'py, PyTuple>,
) -> PyResult<RowCodes<'py>> {
    let purged = guarded(|| with_store(records, tombstones, purge))?;
    Ok(row_codes(
        py,
        purged.iter().map(|p| (p.row, p.cause.code())),
    ))
}

fn code(value: u8) -> Result<Option<i8>, Broken> {
    i8::try_from(value)
        .map(Some)
        .map_err(|_| Broken("a code does not fit in int8"))
}

/// `normalize_batch`'s columns, with the input row when asked for.
fn normalize_schema(with_rows: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("record_id", DataType::Utf8, false),
        Field::new("old_status", dictionary(), false),
        Field::new("new_status", dictionary(), false),
    ];
    if with_rows {
        fields.push(Field::new("row", DataType::UInt32, false));
    }
    Arc::new(Schema::new(fields))
}

fn sweep_schema(with_rows: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("record_id", DataType::Utf8, false),
        Field::new("key", DataType::Utf8, false),
        Field::new("scope_id", DataType::Utf8, false),
        Field::new("cause", dictionary(), false),
    ];
    if with_rows {
        fields.push(Field::new("row", DataType::UInt32, false));
    }
    Arc::new(Schema::new(fields))
}

/// The records (and tombstones) of a batch call, read and indexed.
fn read_inputs<'t>(
    records: &'t Imported,
    tombstones: Option<&'t Imported>,
) -> Result<(Store<'t>, StoreTombstones), Error> {
    let record_table = Table::new("records", records.0.clone(), &records.1);
    let mut store = read_records(&record_table)?;
    let index = read_forgets(&mut store, &record_table, tombstones)?;
    Ok((store, index))
}

fn run_normalize(
    records: &Imported,
    tombstones: Option<&Imported>,
    now: i64,
    with_rows: bool,
) -> Result<RecordBatch, Error> {
    const OUTSIDE: Broken = Broken("a change names a row outside the store");
    let (store, index) = read_inputs(records, tombstones)?;
    let changes = normalize(&store, &index, now)?;
    let mut ids = StringBuilder::with_capacity(changes.len(), changes.len() * 36);
    for change in &changes {
        ids.append_value(store.id(change.row).ok_or(OUTSIDE)?);
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(ids.finish()),
        dictionary_column(
            vec![code(Status::Active.code())?; changes.len()],
            Status::NAMES,
        )?,
        dictionary_column(
            changes
                .iter()
                .map(|c| code(c.status.code()))
                .collect::<Result<_, _>>()?,
            Status::NAMES,
        )?,
    ];
    if with_rows {
        columns.push(Arc::new(UInt32Array::from_iter_values(
            changes.iter().map(|c| c.row),
        )));
    }
    RecordBatch::try_new(normalize_schema(with_rows), columns)
        .map_err(|_| Broken("the normalisation batch does not match its schema").into())
}

fn run_sweep(
    records: &Imported,
    tombstones: Option<&Imported>,
    with_rows: bool,
) -> Result<RecordBatch, Error> {
    const OUTSIDE: Broken = Broken("a purge names a row outside the store");
    let (store, index) = read_inputs(records, tombstones)?;
    let purged = purge(&store, &index)?;
    let texts = store.texts();
    let mut ids = StringBuilder::new();
    let mut keys = StringBuilder::new();
    let mut scopes = StringBuilder::new();
    for item in &purged {
        ids.append_value(store.id(item.row).ok_or(OUTSIDE)?);
        keys.append_value(texts.key(item.row).ok_or(OUTSIDE)?);
        let (kind, fields, owner) = texts.scope(item.row).ok_or(OUTSIDE)?;
        scopes.append_value(scope_id(kind, &fields, owner));
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(ids.finish()),
        Arc::new(keys.finish()),
        Arc::new(scopes.finish()),
        dictionary_column(
            purged
                .iter()
                .map(|p| code(p.cause.code()))
                .collect::<Result<_, _>>()?,
            PurgeCause::NAMES,
        )?,
    ];
    if with_rows {
        columns.push(Arc::new(UInt32Array::from_iter_values(
            purged.iter().map(|p| p.row),
        )));
    }
    RecordBatch::try_new(sweep_schema(with_rows), columns)
        .map_err(|_| Broken("the sweep batch does not match its schema").into())
}

/// Runs a batch job with the interpreter released; a panic in Arrow's own
/// code is reported as a bug, never as `PanicException`.
fn detached(
    py: Python<'_>,
    schema: SchemaRef,
    job: impl FnOnce() -> Result<RecordBatch, Error> + Send,
) -> PyResult<Bound<'_, PyAny>> {
    let result = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
            .unwrap_or_else(|_| Err(Broken("a panic in a batch job").into()))
    });
    PyTable::try_new(vec![result?], schema)?.into_pyarrow(py)
}

/// The statuses to write at `now` (µs) over a whole store (`docs/spec.md` §7.1).
#[pyfunction]
#[pyo3(signature = (records, *, now, tombstones = None, with_rows = false))]
pub(crate) fn normalize_batch<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    now: i64,
    tombstones: Option<&Bound<'py, PyAny>>,
    with_rows: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let records = import(records, "records")?;
    let tombstones = tombstones.map(|t| import(t, "tombstones")).transpose()?;
    detached(py, normalize_schema(with_rows), || {
        run_normalize(&records, tombstones.as_ref(), now, with_rows)
    })
}

/// The records whose text must be erased, over a whole store (§7.2).
#[pyfunction]
#[pyo3(signature = (records, tombstones = None, *, with_rows = false))]
pub(crate) fn forget_sweep_batch<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    tombstones: Option<&Bound<'py, PyAny>>,
    with_rows: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let records = import(records, "records")?;
    let tombstones = tombstones.map(|t| import(t, "tombstones")).transpose()?;
    detached(py, sweep_schema(with_rows), || {
        run_sweep(&records, tombstones.as_ref(), with_rows)
    })
}
