//! Python objects the binding needs on every call, looked up once per
//! interpreter: the enum members, the scope classes, the reference's
//! validation functions (the one set of rules) and the UTC singleton.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

use crate::model::{IdColumn, ScopeKind, Vocabulary};

// The macro's items are `pub`; this module is private to the binding.
#[allow(unreachable_pub)]
mod fields {
    crate::model::vocabulary! {
        /// The fields of a record, in the order they are checked: the Python
        /// package's `_records.RECORD_FIELDS` (checked equal when it is loaded).
        Field {
            Id = "id",
            Key = "key",
            Value = "value",
            Scope = "scope",
            Status = "status",
            Authority = "authority",
            Confidence = "confidence",
            ValidFrom = "valid_from",
            ValidUntil = "valid_until",
            SourceMessageIds = "source_message_ids",
            Supersedes = "supersedes",
            Version = "version",
            ObservedAt = "observed_at",
        }
    }
}
pub(crate) use fields::Field;

/// Everything looked up in the `memresolve` package, once.
pub(crate) struct Package {
    /// `Status` members in code order.
    pub statuses: [Py<PyAny>; 5],
    /// `Authority` members in code order.
    pub authorities: [Py<PyAny>; 4],
    /// `UserScope`, `CharacterScope`, `ConversationScope`, `SceneScope`: kind order.
    pub scope_types: [Py<PyAny>; 4],
    /// `_records.MemoryRecord`: the one class whose instances are read directly.
    pub memory_record: Py<PyAny>,
    /// `_records.normalize_record_field(record_id, field, value)`.
    pub normalize_record_field: Py<PyAny>,
    /// `_records.RECORD_DEFAULTS`: the value of each field left out, by
    /// [`Field`] code (`None`: the field is required).
    pub record_defaults: Vec<Option<Py<PyAny>>>,
    /// `_records.missing_field_error(record_id, field)`.
    pub missing_field_error: Py<PyAny>,
    /// `_records.argument_error(id_value, positional, unknown)`.
    pub argument_error: Py<PyAny>,
    /// `_records.native_core_of(record, row)`.
    pub native_core_of: Py<PyAny>,
    /// `_records.check_tombstone_scope(tombstone, row)`.
    pub check_tombstone_scope: Py<PyAny>,
    /// `_records.duplicate_id_error(record_id, earlier, row)`.
    pub duplicate_id_error: Py<PyAny>,
    /// The interned names of the scope id attributes, by `IdColumn` code.
    pub id_column_names: [Py<PyString>; 4],
    /// `datetime.timezone.utc`.
    pub utc: Py<PyAny>,
}

static PACKAGE: PyOnceLock<Package> = PyOnceLock::new();

/// The defaults of `_records.RECORD_DEFAULTS` by field code, after checking
/// that `_records.RECORD_FIELDS` lists the fields of [`Field`], in its order.
fn record_defaults(records: &Bound<'_, PyModule>) -> PyResult<Vec<Option<Py<PyAny>>>> {
    let names: Vec<String> = records.getattr("RECORD_FIELDS")?.extract()?;
    if names
        .iter()
        .map(String::as_str)
        .ne(Field::NAMES.iter().copied())
    {
        return Err(super::InternalError::new_err(
            "memresolve._model._records.RECORD_FIELDS differs from the native storage's fields",
        ));
    }
    let defaults = records.getattr("RECORD_DEFAULTS")?.cast_into::<PyDict>()?;
    Field::NAMES
        .iter()
        .map(|name| Ok(defaults.get_item(name)?.map(Bound::unbind)))
        .collect()
}

fn members<const N: usize>(module: &Bound<'_, PyModule>, name: &str) -> PyResult<[Py<PyAny>; N]> {
    let mut found = Vec::with_capacity(N);
    for member in module.getattr(name)?.try_iter()? {
        found.push(member?.unbind());
    }
    found.try_into().map_err(|_| {
        super::InternalError::new_err(format!(
            "memresolve._model._types.{name} does not have {N} members"
        ))
    })
}

impl Package {
    fn load(py: Python<'_>) -> PyResult<Self> {
        let types = py.import("memresolve._model._types")?;
        let scopes = py.import("memresolve._model._scopes")?;
        let records = py.import("memresolve._model._records")?;
        let scope_type = |name: &str| scopes.getattr(name).map(Bound::unbind);
        Ok(Self {
            statuses: members(&types, "Status")?,
            authorities: members(&types, "Authority")?,
            scope_types: [
                scope_type("UserScope")?,
                scope_type("CharacterScope")?,
                scope_type("ConversationScope")?,
                scope_type("SceneScope")?,
            ],
            memory_record: records.getattr("MemoryRecord")?.unbind(),
            normalize_record_field: records.getattr("normalize_record_field")?.unbind(),
            record_defaults: record_defaults(&records)?,
            missing_field_error: records.getattr("missing_field_error")?.unbind(),
            argument_error: records.getattr("argument_error")?.unbind(),
            native_core_of: records.getattr("native_core_of")?.unbind(),
            check_tombstone_scope: py
                .import("memresolve._model._inputs")?
                .getattr("check_tombstone_scope")?
                .unbind(),
            duplicate_id_error: records.getattr("duplicate_id_error")?.unbind(),
            id_column_names: IdColumn::ALL
                .map(|column| PyString::intern(py, column.name()).unbind()),
            utc: py
                .import("datetime")?
                .getattr("timezone")?
                .getattr("utc")?
                .unbind(),
        })
    }

    /// The package's objects, loaded on first use.
    pub(crate) fn get(py: Python<'_>) -> PyResult<&'static Self> {
        PACKAGE.get_or_try_init(py, || Self::load(py))
    }

    /// The value a record takes for `field` when it is not given (`None`: required).
    #[inline]
    pub(crate) fn record_default(&self, field: Field) -> Option<&Py<PyAny>> {
        self.record_defaults
            .get(usize::from(field.code()))
            .and_then(Option::as_ref)
    }

    /// The attribute name of a scope id column.
    pub(crate) fn id_column_name<'py>(
        &self,
        py: Python<'py>,
        column: IdColumn,
    ) -> &Bound<'py, PyString> {
        let [user, character, conversation, scene] = &self.id_column_names;
        match column {
            IdColumn::UserId => user,
            IdColumn::CharacterId => character,
            IdColumn::ConversationId => conversation,
            IdColumn::SceneId => scene,
        }
        .bind(py)
    }

    /// The kind of a scope object of one of the four exact scope classes.
    pub(crate) fn scope_kind(&self, scope: &Bound<'_, PyAny>) -> Option<ScopeKind> {
        let scope_type = scope.get_type();
        ScopeKind::ALL
            .into_iter()
            .zip(&self.scope_types)
            .find_map(|(kind, candidate)| scope_type.is(candidate).then_some(kind))
    }
}
