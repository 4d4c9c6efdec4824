//! `RecordCore`: the native storage of `memresolve.MemoryRecord`.
//!
//! Each field is checked once, at construction, in the order and by the rules
//! of the reference (`memresolve._model._records`). Values of the common exact types
//! (`str`, `float`, `int`, `tuple` of `str`, `datetime` in `timezone.utc`, enum
//! members or their names, the scope classes) are accepted here without
//! calling Python; any other value is handed to the reference's rule
//! (`normalize_record_field`), which either normalises it or raises the very
//! `InvalidInputError` the pure-Python storage raises. The record keeps both
//! the Python objects (for attribute access) and a Rust copy of what the
//! resolver reads (a [`PackedRecord`]), so resolving never touches Python objects.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyTuple};

use super::cache::{Field, Package};
use super::convert::{
    exact_text, normalized_datetime_micros, scope_fields, utc_datetime_micros, OwnedScope,
};
use super::errors::guarded;
use super::InternalError;
use crate::error::{ErrorKind, InputError};
use crate::model::{Authority, Status, Vocabulary};
use crate::resolve::{PackedRecord, Record, ScopeRef};

/// The error for a record whose strings exceed what one packed record holds.
fn too_large() -> PyErr {
    super::errors::invalid_input(&InputError {
        kind: ErrorKind::OutOfRange,
        field: "id".to_owned(),
        row: None,
        record_id: None,
        message: "record: its id, key, scope ids and supersedes exceed 4 GiB \
                  together, the most one native record holds"
            .to_owned(),
    })
}

/// The checked Python values, returned by the attribute getters.
pub(crate) struct PythonFields {
    pub(crate) id: Py<PyAny>,
    pub(crate) key: Py<PyAny>,
    pub(crate) value: Py<PyAny>,
    scope: Py<PyAny>,
    status: Py<PyAny>,
    authority: Py<PyAny>,
    pub(crate) confidence: Py<PyAny>,
    valid_from: Py<PyAny>,
    valid_until: Py<PyAny>,
    pub(crate) source_message_ids: Py<PyAny>,
    pub(crate) supersedes: Py<PyAny>,
    pub(crate) version: Py<PyAny>,
    observed_at: Py<PyAny>,
}

/// A constructor argument, given or not: a field left out takes its default
/// (or is a `missing` error), which an explicit `None` must not (`None` is a
/// value the rules judge).
pub(crate) enum Argument<'py> {
    Missing,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Argument<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Self::Given(obj.to_owned()))
    }
}

/// Checks the fields of one record, in order, falling back to the reference.
struct Checker<'py> {
    py: Python<'py>,
    package: &'static Package,
    record_id: Option<Bound<'py, PyAny>>,
}

/// The text of a value a rule has already checked to be an exact, valid `str`.
fn read<'a>(object: &'a Bound<'_, PyAny>, field: &str) -> PyResult<&'a str> {
    exact_text(object).ok_or_else(|| broken_rule(field))
}

fn broken_rule(field: &str) -> PyErr {
    InternalError::new_err(format!(
        "the rule for field {field:?} returned a value the native storage cannot read"
    ))
}

impl<'py> Checker<'py> {
    /// The reference's rule for `field`: the normalised value, or its error.
    fn rule(&self, field: &str, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.package.normalize_record_field.bind(self.py).call1((
            self.record_id_or_none(),
            field,
            value,
        ))
    }

    /// The argument `field` as given, or its default (`_records.RECORD_DEFAULTS`)
    /// when it was not given; a required field not given is the reference's
    /// `missing` error.
    #[inline]
    fn given(&self, field: Field, argument: Argument<'py>) -> PyResult<Bound<'py, PyAny>> {
        match argument {
            Argument::Given(value) => Ok(value),
            Argument::Missing => match self.package.record_default(field) {
                Some(default) => Ok(default.bind(self.py).clone()),
                None => Err(PyErr::from_value(
                    self.package
                        .missing_field_error
                        .bind(self.py)
                        .call1((self.record_id_or_none(), field.name()))?,
                )),
            },
        }
    }

    /// Positional arguments, or keyword arguments that are no field: the
    /// reference's error (`_records.argument_error`), before any field is read.
    #[inline]
    fn refuse_arguments(
        &self,
        args: &Bound<'py, PyTuple>,
        id: &Argument<'py>,
        unknown: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<()> {
        let names = unknown.map_or(0, PyDictMethods::len);
        if args.is_empty() && names == 0 {
            return Ok(());
        }
        let id_value = match id {
            Argument::Given(value) => value.clone(),
            Argument::Missing => self.py.None().into_bound(self.py),
        };
        let names: Vec<Bound<'py, PyAny>> = unknown
            .map(|names| names.keys().iter().collect())
            .unwrap_or_default();
        let error = self.package.argument_error.bind(self.py).call1((
            id_value,
            args.len(),
            PyTuple::new(self.py, names)?,
        ))?;
        Err(PyErr::from_value(error))
    }

    fn record_id_or_none(&self) -> Bound<'py, PyAny> {
        match &self.record_id {
            Some(id) => id.clone(),
            None => self.py.None().into_bound(self.py),
        }
    }

    /// A non-empty valid `str`, as an exact `str` object (read it with `exact_text`).
    fn text(&self, field: &str, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if exact_text(value).is_some_and(|text| !text.is_empty()) {
            return Ok(value.clone());
        }
        let checked = self.rule(field, value)?;
        exact_text(&checked).ok_or_else(|| broken_rule(field))?;
        Ok(checked)
    }

    fn optional_text(
        &self,
        field: &str,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if value.is_none() {
            return Ok(None);
        }
        self.text(field, value).map(Some)
    }

    fn any_text(&self, field: &str, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if exact_text(value).is_some() {
            return Ok(value.clone());
        }
        self.rule(field, value)
    }

    fn scope(&self, value: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, OwnedScope)> {
        if let Some(fields) = scope_fields(self.package, value)? {
            return Ok((value.clone(), fields));
        }
        let checked = self.rule("scope", value)?;
        let fields = scope_fields(self.package, &checked)?.ok_or_else(|| broken_rule("scope"))?;
        Ok((checked, fields))
    }

    /// An enum member, given as a member or its value; returns the member and its code.
    fn member(
        &self,
        field: &str,
        value: &Bound<'py, PyAny>,
        members: &'static [Py<PyAny>],
        names: &[&str],
    ) -> PyResult<(Bound<'py, PyAny>, usize)> {
        let find = |value: &Bound<'py, PyAny>| members.iter().position(|member| value.is(member));
        if let Some(code) = find(value) {
            return Ok((value.clone(), code));
        }
        if let Some(code) =
            exact_text(value).and_then(|text| names.iter().position(|name| *name == text))
        {
            if let Some(member) = members.get(code) {
                return Ok((member.bind(self.py).clone(), code));
            }
        }
        let checked = self.rule(field, value)?;
        let code = find(&checked).ok_or_else(|| broken_rule(field))?;
        Ok((checked, code))
    }

    fn confidence(&self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(number) = value.cast_exact::<PyFloat>() {
            let number = number.value();
            if number.is_finite() && (0.0..=1.0).contains(&number) {
                return Ok(value.clone());
            }
        } else if value.is_exact_instance_of::<PyInt>() {
            match value.extract::<i64>() {
                Ok(0) => return Ok(PyFloat::new(self.py, 0.0).into_any()),
                Ok(1) => return Ok(PyFloat::new(self.py, 1.0).into_any()),
                _ => {}
            }
        }
        self.rule("confidence", value)
    }

    fn instant(
        &self,
        field: &str,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, i64)> {
        if let Some(micros) = utc_datetime_micros(self.package, value) {
            return Ok((value.clone(), micros));
        }
        let checked = self.rule(field, value)?;
        let micros = normalized_datetime_micros(&checked)?;
        Ok((checked, micros))
    }

    fn optional_instant(
        &self,
        field: &str,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, Option<i64>)> {
        if value.is_none() {
            return Ok((value.clone(), None));
        }
        self.instant(field, value)
            .map(|(object, micros)| (object, Some(micros)))
    }

    fn text_tuple(&self, field: &str, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(items) = value.cast_exact::<PyTuple>() {
            let all_text = items
                .iter()
                .all(|item| exact_text(&item).is_some_and(|text| !text.is_empty()));
            if all_text {
                return Ok(value.clone());
            }
        }
        self.rule(field, value)
    }

    fn int64(&self, field: &str, value: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, i64)> {
        if value.is_exact_instance_of::<PyInt>() {
            if let Ok(number) = value.extract::<i64>() {
                return Ok((value.clone(), number));
            }
        }
        let checked = self.rule(field, value)?;
        let number = checked.extract::<i64>().map_err(|_| broken_rule(field))?;
        Ok((checked, number))
    }
}

/// The entry of a vocabulary with the code a rule's member has.
fn entry<V: Vocabulary>(code: usize, field: &str) -> PyResult<V> {
    u8::try_from(code)
        .ok()
        .and_then(V::from_code)
        .ok_or_else(|| broken_rule(field))
}

/// The native storage of a memory record (private: build `memresolve.MemoryRecord`).
#[pyclass(frozen, subclass, module = "memresolve._native")]
pub(crate) struct RecordCore {
    native: PackedRecord,
    python: PythonFields,
}

impl RecordCore {
    pub(crate) fn native(&self) -> &PackedRecord {
        &self.native
    }

    pub(crate) fn id_object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.python.id.bind(py).clone()
    }

    /// The checked Python values of the fields the packed record does not
    /// keep, and the `str` objects of those it does (a row reuses them).
    pub(crate) fn python_fields(&self) -> &PythonFields {
        &self.python
    }
}

#[pymethods]
impl RecordCore {
    #[new]
    #[pyo3(signature = (
        *args, id = Argument::Missing, key = Argument::Missing, value = Argument::Missing,
        scope = Argument::Missing, status = Argument::Missing, authority = Argument::Missing,
        confidence = Argument::Missing, valid_from = Argument::Missing,
        valid_until = Argument::Missing, source_message_ids = Argument::Missing,
        supersedes = Argument::Missing, version = Argument::Missing,
        observed_at = Argument::Missing, **unknown
    ))]
    #[allow(clippy::too_many_arguments)] // The record's fields, keyword-only, as in Python.
    #[allow(clippy::needless_pass_by_value)] // PyO3 hands arguments over by value.
    fn new<'py>(
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        id: Argument<'py>,
        key: Argument<'py>,
        value: Argument<'py>,
        scope: Argument<'py>,
        status: Argument<'py>,
        authority: Argument<'py>,
        confidence: Argument<'py>,
        valid_from: Argument<'py>,
        valid_until: Argument<'py>,
        source_message_ids: Argument<'py>,
        supersedes: Argument<'py>,
        version: Argument<'py>,
        observed_at: Argument<'py>,
        unknown: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Self> {
        guarded(|| {
            let mut checker = Checker {
                py,
                package: Package::get(py)?,
                record_id: None,
            };
            checker.refuse_arguments(args, &id, unknown)?;
            // The field order of `docs/spec.md` §1.3 and of the reference: the first bad field is reported.
            let id_object = checker.text("id", &checker.given(Field::Id, id)?)?;
            checker.record_id = Some(id_object.clone());
            let key_object = checker.text("key", &checker.given(Field::Key, key)?)?;
            let value_object = checker.any_text("value", &checker.given(Field::Value, value)?)?;
            let (scope_object, scope_read) = checker.scope(&checker.given(Field::Scope, scope)?)?;
            let status = checker.given(Field::Status, status)?;
            let (status_object, status_code) =
                checker.member("status", &status, &checker.package.statuses, Status::NAMES)?;
            let authority = checker.given(Field::Authority, authority)?;
            let (authority_object, authority_code) = checker.member(
                "authority",
                &authority,
                &checker.package.authorities,
                Authority::NAMES,
            )?;
            let confidence_object =
                checker.confidence(&checker.given(Field::Confidence, confidence)?)?;
            let (valid_from_object, valid_from_micros) =
                checker.instant("valid_from", &checker.given(Field::ValidFrom, valid_from)?)?;
            let (valid_until_object, valid_until_micros) = checker.optional_instant(
                "valid_until",
                &checker.given(Field::ValidUntil, valid_until)?,
            )?;
            let source_object = checker.text_tuple(
                "source_message_ids",
                &checker.given(Field::SourceMessageIds, source_message_ids)?,
            )?;
            let supersedes_object = checker
                .optional_text("supersedes", &checker.given(Field::Supersedes, supersedes)?)?;
            let (version_object, version_number) =
                checker.int64("version", &checker.given(Field::Version, version)?)?;
            let (observed_object, observed_micros) = checker.optional_instant(
                "observed_at",
                &checker.given(Field::ObservedAt, observed_at)?,
            )?;
            let supersedes_text = supersedes_object
                .as_ref()
                .map(|object| read(object, "supersedes"))
                .transpose()?;
            let native = PackedRecord::new(&Record {
                id: read(&id_object, "id")?,
                key: read(&key_object, "key")?,
                scope: ScopeRef {
                    kind: scope_read.kind,
                    first: &scope_read.first,
                    second: &scope_read.second,
                    owner: scope_read.owner.as_deref(),
                },
                status: entry(status_code, "status")?,
                authority: entry(authority_code, "authority")?,
                version: version_number,
                valid_from: valid_from_micros,
                valid_until: valid_until_micros,
                observed_at: observed_micros,
                supersedes: supersedes_text,
            })
            .map_err(|_| too_large())?;
            Ok(Self {
                native,
                python: PythonFields {
                    id: id_object.unbind(),
                    key: key_object.unbind(),
                    value: value_object.unbind(),
                    scope: scope_object.unbind(),
                    status: status_object.unbind(),
                    authority: authority_object.unbind(),
                    confidence: confidence_object.unbind(),
                    valid_from: valid_from_object.unbind(),
                    valid_until: valid_until_object.unbind(),
                    source_message_ids: source_object.unbind(),
                    supersedes: match supersedes_object {
                        Some(object) => object.unbind(),
                        None => py.None(),
                    },
                    version: version_object.unbind(),
                    observed_at: observed_object.unbind(),
                },
            })
        })
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.id.clone_ref(py)
    }

    #[getter]
    fn key(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.key.clone_ref(py)
    }

    #[getter]
    fn value(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.value.clone_ref(py)
    }

    #[getter]
    fn scope(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.scope.clone_ref(py)
    }

    #[getter]
    fn status(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.status.clone_ref(py)
    }

    #[getter]
    fn authority(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.authority.clone_ref(py)
    }

    #[getter]
    fn confidence(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.confidence.clone_ref(py)
    }

    #[getter]
    fn valid_from(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.valid_from.clone_ref(py)
    }

    #[getter]
    fn valid_until(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.valid_until.clone_ref(py)
    }

    #[getter]
    fn source_message_ids(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.source_message_ids.clone_ref(py)
    }

    #[getter]
    fn supersedes(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.supersedes.clone_ref(py)
    }

    #[getter]
    fn version(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.version.clone_ref(py)
    }

    #[getter]
    fn observed_at(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.observed_at.clone_ref(py)
    }
}
