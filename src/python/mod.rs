//! The `PyO3` binding, `memresolve._native`. Thin by design: the semantics
//! live in [`crate::resolve`]; this layer stores records natively
//! (`record.rs`), reads the other inputs and runs the pipeline (`kernel.rs`).

use pyo3::prelude::*;

// The system allocator. mimalloc (v3, default options) was tried: it purges
// freed memory back to the kernel 10 ms after a free and re-faults it as huge
// pages, so the first batch call in a process ran about twice as slow (1M
// records: 0.5-0.65 s against 0.23-0.30 s, 2 to 5 times the system time);
// its options can only be set through the environment or unsafe code.

mod batch;
mod cache;
mod convert;
mod dataset;
mod errors;
mod kernel;
mod maintain;
mod record;
mod rows;
mod sources;
mod store_row;

// The exception classes are defined once, in Python (memresolve/errors.py), and
// raised from here as the very same classes.
pyo3::import_exception!(memresolve.errors, InvalidInputError);
pyo3::import_exception!(memresolve.errors, InternalError);

/// An `InvalidInputError` of `kind` about `field` (no row, no record).
fn invalid_input(kind: crate::error::ErrorKind, field: &str, message: String) -> PyErr {
    errors::invalid_input(&crate::error::InputError {
        kind,
        field: field.to_owned(),
        row: None,
        record_id: None,
        message,
    })
}

#[pymodule(gil_used = false)]
mod _native {
    use super::PyResult;
    use crate::error::ErrorKind;
    use crate::model::{self, Vocabulary};
    use pyo3::prelude::pyfunction;

    /// Version of the crate; the Python package refuses a stale build.
    #[pymodule_export]
    #[allow(non_upper_case_globals)] // Python's dunder name, by convention.
    const __version__: &str = env!("CARGO_PKG_VERSION");

    #[pymodule_export]
    use super::kernel::resolve_rows;

    #[pymodule_export]
    use super::kernel::PreparedCandidates;

    #[pymodule_export]
    use super::batch::{resolve_batch, resolve_batch_into};

    #[pymodule_export]
    use super::maintain::{forget_sweep_batch, normalize_batch, normalize_rows, purge_rows};

    #[pymodule_export]
    const PURGE_CAUSE_NAMES: &[&str] = <crate::maintain::PurgeCause as Vocabulary>::NAMES;

    #[pymodule_export]
    use super::record::RecordCore;

    #[pymodule_export]
    use super::store_row::store_row;

    #[pymodule_export]
    use super::dataset::{route_by_id, Router};

    #[pymodule_export]
    const RESOLVER_VERSION: &str = model::RESOLVER_VERSION;

    // The code tables, exported so that a test compares them with the
    // Python package's, entry by entry.
    #[pymodule_export]
    const SCOPE_KIND_NAMES: &[&str] = <model::ScopeKind as Vocabulary>::NAMES;

    #[pymodule_export]
    const ID_COLUMN_NAMES: &[&str] = <model::IdColumn as Vocabulary>::NAMES;

    #[pymodule_export]
    const STATUS_NAMES: &[&str] = <model::Status as Vocabulary>::NAMES;

    #[pymodule_export]
    const AUTHORITY_NAMES: &[&str] = <model::Authority as Vocabulary>::NAMES;

    #[pymodule_export]
    const REASON_NAMES: &[&str] = <model::Reason as Vocabulary>::NAMES;

    #[pymodule_export]
    const DECISION_NAMES: [&str; 6] = model::DECISION_NAMES;

    #[pymodule_export]
    const CERTAINTY_NAMES: &[&str] = <model::Certainty as Vocabulary>::NAMES;

    #[pymodule_export]
    const LIKELY_CONFIDENCE: f64 = model::LIKELY_CONFIDENCE;

    /// The status and version of a record that does not give them.
    #[pymodule_export]
    const DEFAULT_STATUS: &str = model::DEFAULT_STATUS.name();

    #[pymodule_export]
    const DEFAULT_VERSION: i64 = model::DEFAULT_VERSION;

    #[pymodule_export]
    const ERROR_KIND_NAMES: &[&str] = <crate::error::ErrorKind as Vocabulary>::NAMES;

    /// The id columns each scope kind is made of, by kind code.
    #[pyfunction]
    fn scope_id_columns() -> Vec<Vec<&'static str>> {
        model::ScopeKind::ALL
            .iter()
            .map(|kind| kind.id_columns().iter().map(|c| c.name()).collect())
            .collect()
    }

    /// The owner column of each scope kind (`None`: the kind has no owner), by kind code.
    #[pyfunction]
    fn scope_owner_columns() -> Vec<Option<&'static str>> {
        model::ScopeKind::ALL
            .iter()
            .map(|kind| kind.owner_column().map(model::IdColumn::name))
            .collect()
    }

    /// Panics inside the guard every entry point uses: a test checks that the
    /// panic reaches Python as `InternalError` and the process goes on.
    #[pyfunction]
    fn _panic_for_tests() -> PyResult<()> {
        super::errors::guarded(|| panic!("forced by a test of the panic guard"))
    }

    /// The canonical scope identifier, computed by the Rust core.
    #[pyfunction]
    #[pyo3(signature = (kind, fields, owner = None))]
    #[allow(clippy::needless_pass_by_value)] // PyO3 extracts arguments as owned values.
    fn scope_id(kind: &str, fields: Vec<String>, owner: Option<&str>) -> PyResult<String> {
        let kind: model::ScopeKind = kind.parse().map_err(|_| {
            super::invalid_input(
                ErrorKind::UnknownValue,
                "kind",
                format!(
                    "unknown scope kind {kind:?}; expected one of {}",
                    <model::ScopeKind as Vocabulary>::NAMES.join(", ")
                ),
            )
        })?;
        let borrowed: Vec<&str> = fields.iter().map(String::as_str).collect();
        Ok(model::scope_id(kind, &borrowed, owner))
    }
}
