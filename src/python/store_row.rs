//! `store_row`: the `MemoryStore` row of a natively stored record, built by
//! [`crate::store_row`]: the same dict, byte for byte, as the pure-Python
//! storage's `memresolve._store._schema.record_row` (a test compares them on
//! generated records), in a few microseconds instead of tens.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyString, PyTuple};

use super::errors::guarded;
use super::record::RecordCore;
use crate::model::{scope_id, IdColumn};
use crate::store_row::{content_hash, source_ids_json, RowFields};

/// The `records` row of `record` (``erased`` false): its fields with the scope
/// flattened, instants as microseconds, the message ids as JSON text, its
/// scope id and its content hash.
#[pyfunction]
pub(crate) fn store_row<'py>(record: &Bound<'py, RecordCore>) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| {
        let py = record.py();
        let core = record.get();
        let python = core.python_fields();
        let packed = core.native();
        let value = python.value.bind(py).cast::<PyString>()?.to_str()?;
        let confidence = python.confidence.bind(py).cast::<PyFloat>()?.value();
        let sources = python.source_message_ids.bind(py).cast::<PyTuple>()?;
        let source_ids = sources
            .iter()
            .map(|id| id.cast_into::<PyString>().map_err(PyErr::from))
            .collect::<PyResult<Vec<_>>>()?;
        let source_texts = source_ids
            .iter()
            .map(|id| id.to_str())
            .collect::<PyResult<Vec<&str>>>()?;
        let facts = packed.facts();
        let scope = packed.scope();
        let fields = RowFields {
            id: packed.id(),
            key: packed.key(),
            value,
            scope,
            status: facts.status,
            authority: facts.authority,
            confidence,
            valid_from: facts.valid_from,
            valid_until: facts.valid_until,
            source_message_ids: &source_texts,
            supersedes: packed.supersedes(),
            version: facts.version,
            observed_at: facts.observed_at,
        };
        let row = PyDict::new(py);
        row.set_item(intern!(py, "id"), python.id.bind(py))?;
        row.set_item(intern!(py, "key"), python.key.bind(py))?;
        row.set_item(intern!(py, "value"), python.value.bind(py))?;
        row.set_item(intern!(py, "scope_kind"), scope.kind.name())?;
        let columns = [
            intern!(py, "user_id"),
            intern!(py, "character_id"),
            intern!(py, "conversation_id"),
            intern!(py, "scene_id"),
        ];
        for (name, column) in columns.into_iter().zip(IdColumn::ALL) {
            row.set_item(name, scope.column(column))?;
        }
        row.set_item(intern!(py, "status"), facts.status.name())?;
        row.set_item(intern!(py, "authority"), facts.authority.name())?;
        row.set_item(intern!(py, "confidence"), python.confidence.bind(py))?;
        row.set_item(intern!(py, "valid_from"), facts.valid_from)?;
        row.set_item(intern!(py, "valid_until"), facts.valid_until)?;
        row.set_item(
            intern!(py, "source_message_ids"),
            source_ids_json(&source_texts),
        )?;
        row.set_item(intern!(py, "supersedes"), python.supersedes.bind(py))?;
        row.set_item(intern!(py, "version"), python.version.bind(py))?;
        row.set_item(intern!(py, "observed_at"), facts.observed_at)?;
        let scope_fields: Vec<&str> = scope.fields().collect();
        row.set_item(
            intern!(py, "scope_id"),
            scope_id(scope.kind, &scope_fields, scope.owner),
        )?;
        row.set_item(
            intern!(py, "content_hash"),
            PyBytes::new(py, &content_hash(&fields)),
        )?;
        row.set_item(intern!(py, "erased"), 0)?;
        Ok(row)
    })
}
