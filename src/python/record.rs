//! `RecordCore`: the native storage of `memresolve.MemoryRecord`.
//!
//! Each field is checked once, at construction, in the order and by the rules
//! of the reference (`memresolve._records`). Values of the common exact types
//! (`str`, `float`, `int`, `tuple` of `str`, `datetime` in `timezone.utc`, enum
//! members or their names, the scope classes) are accepted here without
//! calling Python; any other value is handed to the reference's rule
//! (`normalize_record_field`), which either normalises it or raises the very
//! `InvalidInputError` the pure-Python storage raises. The record keeps both
//! the Python objects (for attribute access) and a Rust copy of what the
//! resolver reads, so resolving never touches Python objects.

use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyTuple};

use super::cache::Package;
use super::convert::{exact_text, normalized_datetime_micros, scope_fields, utc_datetime_micros};
use super::{InternalError, InvalidInputError};
use crate::model::{Authority, ScopeKind, Status, Vocabulary};
use crate::resolve::{Record, ScopeRef};

/// What the resolver reads, owned by the record. The record's strings share
/// one allocation (id, key, scope ids, `supersedes`, back to back), so the
/// resolver touches one or two cache lines per record, not five allocations.
pub(crate) struct NativeFields {
    text: Box<str>,
    /// Where each string ends in `text`: id, key, scope first, scope second, supersedes.
    ends: [u32; 5],
    has_supersedes: bool,
    scope_kind: ScopeKind,
    status: Status,
    authority: Authority,
    version: i64,
    valid_from: i64,
    valid_until: Option<i64>,
    observed_at: Option<i64>,
}

/// The strings a record's `NativeFields` hold.
struct NativeText<'a> {
    id: &'a str,
    key: &'a str,
    scope_first: &'a str,
    scope_second: &'a str,
    supersedes: Option<&'a str>,
}

impl NativeFields {
    fn pack_text(parts: &NativeText<'_>) -> PyResult<(Box<str>, [u32; 5])> {
        let pieces = [
            parts.id,
            parts.key,
            parts.scope_first,
            parts.scope_second,
            parts.supersedes.unwrap_or(""),
        ];
        let mut text = String::with_capacity(pieces.iter().map(|piece| piece.len()).sum());
        let mut ends = [0_u32; 5];
        for (end, piece) in ends.iter_mut().zip(pieces) {
            text.push_str(piece);
            *end = u32::try_from(text.len()).map_err(|_| {
                InvalidInputError::new_err("record: its ids and key exceed 4 GiB together")
            })?;
        }
        Ok((text.into_boxed_str(), ends))
    }

    fn piece(&self, index: usize) -> &str {
        let start = match index.checked_sub(1) {
            Some(before) => self.ends.get(before).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(index).copied().unwrap_or(start);
        // Boundaries were taken from the pieces themselves, so `get` always succeeds.
        self.text.get(start as usize..end as usize).unwrap_or("")
    }

    pub(crate) fn record(&self) -> Record<'_> {
        Record {
            id: self.piece(0),
            key: self.piece(1),
            scope: ScopeRef {
                kind: self.scope_kind,
                first: self.piece(2),
                second: self.piece(3),
            },
            status: self.status,
            authority: self.authority,
            version: self.version,
            valid_from: self.valid_from,
            valid_until: self.valid_until,
            observed_at: self.observed_at,
            supersedes: self.has_supersedes.then(|| self.piece(4)),
        }
    }
}

/// The checked Python values, returned by the attribute getters.
struct PythonFields {
    id: Py<PyAny>,
    key: Py<PyAny>,
    value: Py<PyAny>,
    scope: Py<PyAny>,
    status: Py<PyAny>,
    authority: Py<PyAny>,
    confidence: Py<PyAny>,
    valid_from: Py<PyAny>,
    valid_until: Py<PyAny>,
    source_message_ids: Py<PyAny>,
    supersedes: Py<PyAny>,
    version: Py<PyAny>,
    observed_at: Py<PyAny>,
}

/// The argument `source_message_ids`, whose default `()` must differ from an
/// explicit `None` (which the rules reject).
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
        let record_id = match &self.record_id {
            Some(id) => id.clone(),
            None => self.py.None().into_bound(self.py),
        };
        self.package
            .normalize_record_field
            .bind(self.py)
            .call1((record_id, field, value))
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
        value: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        value.map(|value| self.text(field, value)).transpose()
    }

    fn any_text(&self, field: &str, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if exact_text(value).is_some() {
            return Ok(value.clone());
        }
        self.rule(field, value)
    }

    fn scope(
        &self,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, (ScopeKind, String, String))> {
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
        members: &'static [Py<PyAny>; 4],
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
        value: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyAny>, Option<i64>)> {
        match value {
            None => Ok((self.py.None().into_bound(self.py), None)),
            Some(value) => self
                .instant(field, value)
                .map(|(object, micros)| (object, Some(micros))),
        }
    }

    fn text_tuple(&self, field: &str, value: Argument<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = match value {
            Argument::Missing => {
                return Ok(self.package.empty_tuple.bind(self.py).clone().into_any())
            }
            Argument::Given(value) => value,
        };
        if let Ok(items) = value.cast_exact::<PyTuple>() {
            let all_text = items
                .iter()
                .all(|item| exact_text(&item).is_some_and(|text| !text.is_empty()));
            if all_text {
                return Ok(value.clone());
            }
        }
        self.rule(field, &value)
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
    native: NativeFields,
    python: PythonFields,
}

impl RecordCore {
    pub(crate) fn native(&self) -> &NativeFields {
        &self.native
    }

    pub(crate) fn id_object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.python.id.bind(py).clone()
    }
}

#[pymethods]
impl RecordCore {
    #[new]
    #[pyo3(signature = (
        *, id, key, value, scope, status, authority, confidence, valid_from,
        valid_until = None, source_message_ids = Argument::Missing, supersedes = None,
        version, observed_at = None
    ))]
    #[allow(clippy::too_many_arguments)] // The record's fields, keyword-only, as in Python.
    #[allow(clippy::needless_pass_by_value)] // PyO3 hands arguments over by value.
    fn new<'py>(
        py: Python<'py>,
        id: Bound<'py, PyAny>,
        key: Bound<'py, PyAny>,
        value: Bound<'py, PyAny>,
        scope: Bound<'py, PyAny>,
        status: Bound<'py, PyAny>,
        authority: Bound<'py, PyAny>,
        confidence: Bound<'py, PyAny>,
        valid_from: Bound<'py, PyAny>,
        valid_until: Option<Bound<'py, PyAny>>,
        source_message_ids: Argument<'py>,
        supersedes: Option<Bound<'py, PyAny>>,
        version: Bound<'py, PyAny>,
        observed_at: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        let mut checker = Checker {
            py,
            package: Package::get(py)?,
            record_id: None,
        };
        // The field order of `docs/spec.md` §1.3 and of the reference: the first bad field is reported.
        let id_object = checker.text("id", &id)?;
        checker.record_id = Some(id_object.clone());
        let key_object = checker.text("key", &key)?;
        let value_object = checker.any_text("value", &value)?;
        let (scope_object, (scope_kind, scope_first, scope_second)) = checker.scope(&scope)?;
        let (status_object, status_code) =
            checker.member("status", &status, &checker.package.statuses, Status::NAMES)?;
        let (authority_object, authority_code) = checker.member(
            "authority",
            &authority,
            &checker.package.authorities,
            Authority::NAMES,
        )?;
        let confidence_object = checker.confidence(&confidence)?;
        let (valid_from_object, valid_from_micros) = checker.instant("valid_from", &valid_from)?;
        let (valid_until_object, valid_until_micros) =
            checker.optional_instant("valid_until", valid_until.as_ref())?;
        let source_object = checker.text_tuple("source_message_ids", source_message_ids)?;
        let supersedes_object = checker.optional_text("supersedes", supersedes.as_ref())?;
        let (version_object, version_number) = checker.int64("version", &version)?;
        let (observed_object, observed_micros) =
            checker.optional_instant("observed_at", observed_at.as_ref())?;
        let supersedes_text = supersedes_object
            .as_ref()
            .map(|object| read(object, "supersedes"))
            .transpose()?;
        let (text, ends) = NativeFields::pack_text(&NativeText {
            id: read(&id_object, "id")?,
            key: read(&key_object, "key")?,
            scope_first: &scope_first,
            scope_second: &scope_second,
            supersedes: supersedes_text,
        })?;
        Ok(Self {
            native: NativeFields {
                text,
                ends,
                has_supersedes: supersedes_text.is_some(),
                scope_kind,
                status: entry(status_code, "status")?,
                authority: entry(authority_code, "authority")?,
                version: version_number,
                valid_from: valid_from_micros,
                valid_until: valid_until_micros,
                observed_at: observed_micros,
            },
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
