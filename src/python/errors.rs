//! The core's errors as the package's exception classes: an [`InputError`]
//! becomes `memresolve.InvalidInputError` with its kind, field, row and
//! record id; a broken invariant becomes `memresolve.InternalError`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{InternalError, InvalidInputError};
use crate::error::{Broken, Error, InputError};

/// `memresolve.InvalidInputError` carrying every part of `error`.
pub(crate) fn invalid_input(error: &InputError) -> PyErr {
    Python::attach(|py| {
        let raise = || -> PyResult<PyErr> {
            let kwargs = PyDict::new(py);
            kwargs.set_item("kind", error.kind.name())?;
            kwargs.set_item("field", &error.field)?;
            kwargs.set_item("row", error.row)?;
            kwargs.set_item("record_id", &error.record_id)?;
            let exception = py
                .get_type::<InvalidInputError>()
                .call((&error.message,), Some(&kwargs))?;
            Ok(PyErr::from_value(exception))
        };
        raise().unwrap_or_else(|failure| failure)
    })
}

/// `memresolve.InternalError` for a bug the core found.
pub(crate) fn internal(broken: Broken) -> PyErr {
    InternalError::new_err(broken.to_string())
}

/// Runs `body` and turns a panic inside it into `memresolve.InternalError`: no
/// panic reaches Python as `PanicException`, and the process goes on. Every
/// entry point that does work wraps its body in this.
pub(crate) fn guarded<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|_| {
        Err(InternalError::new_err(
            "a panic in the native core (a bug in memresolve; please report it)",
        ))
    })
}

impl From<Error> for PyErr {
    fn from(error: Error) -> Self {
        match error {
            Error::Input(error) => invalid_input(&error),
            Error::Broken(broken) => internal(broken),
        }
    }
}
