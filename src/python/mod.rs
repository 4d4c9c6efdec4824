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
mod kernel;
mod record;

// The exception classes are defined once, in Python (memresolve/errors.py), and
// raised from here as the very same classes.
pyo3::import_exception!(memresolve.errors, InvalidInputError);
pyo3::import_exception!(memresolve.errors, InternalError);

#[pymodule(gil_used = false)]
mod _native {
    use super::PyResult;
    use crate::model;
    use pyo3::prelude::pyfunction;

    /// Version of the crate; the Python package refuses a stale build.
    #[pymodule_export]
    #[allow(non_upper_case_globals)] // Python's dunder name, by convention.
    const __version__: &str = env!("CARGO_PKG_VERSION");

    #[pymodule_export]
    use super::kernel::resolve_rows;

    #[pymodule_export]
    use super::batch::resolve_batch;

    #[pymodule_export]
    use super::record::RecordCore;

    #[pymodule_export]
    const RESOLVER_VERSION: &str = model::RESOLVER_VERSION;

    #[pymodule_export]
    const SCOPE_KIND_NAMES: [&str; 4] = model::SCOPE_KIND_NAMES;

    #[pymodule_export]
    const STATUS_NAMES: [&str; 4] = model::STATUS_NAMES;

    #[pymodule_export]
    const AUTHORITY_NAMES: [&str; 4] = model::AUTHORITY_NAMES;

    #[pymodule_export]
    const REASON_NAMES: [&str; 5] = model::REASON_NAMES;

    /// The canonical scope identifier, computed by the Rust core.
    #[pyfunction]
    #[allow(clippy::needless_pass_by_value)] // PyO3 extracts arguments as owned values.
    fn scope_id(kind: &str, fields: Vec<String>) -> PyResult<String> {
        let kind = match kind {
            "user" => model::ScopeKind::User,
            "character" => model::ScopeKind::Character,
            "conversation" => model::ScopeKind::Conversation,
            "scene" => model::ScopeKind::Scene,
            other => {
                return Err(super::InvalidInputError::new_err(format!(
                    "unknown scope kind {other:?}; expected user, character, conversation or scene"
                )))
            }
        };
        let borrowed: Vec<&str> = fields.iter().map(String::as_str).collect();
        Ok(model::scope_id(kind, &borrowed))
    }
}
