//! The errors of the core: bad input, with a closed kind (`docs/spec.md`
//! §5.1), and broken internal invariants. No `PyO3` here: the binding maps
//! [`InputError`] to `memresolve.InvalidInputError` and [`Broken`] to
//! `memresolve.InternalError`.

use std::fmt;

use crate::model::vocabulary;

vocabulary! {
    /// What is wrong with an input, as a closed set (the Python package's
    /// `memresolve.ErrorKind` has the same names, in the same order).
    ErrorKind {
        /// A value or column of the wrong type.
        WrongType = "wrong-type",
        /// A required field, argument or value is absent or null.
        Missing = "missing",
        /// A required column is absent.
        MissingColumn = "missing-column",
        /// An empty string where a non-empty one is required.
        Empty = "empty",
        /// A value outside its vocabulary.
        UnknownValue = "unknown-value",
        /// A field the schema does not have.
        UnknownField = "unknown-field",
        /// An object names a field twice, or a table a column.
        DuplicateField = "duplicate-field",
        /// A time without a time zone.
        NaiveTime = "naive-time",
        /// A number or instant outside its range.
        OutOfRange = "out-of-range",
        /// NaN or infinity.
        NotFinite = "not-finite",
        /// A lone surrogate, or bytes that are not UTF-8.
        InvalidUnicode = "invalid-unicode",
        /// Two records (or contexts) of one call share an id.
        DuplicateId = "duplicate-id",
        /// Data that cannot be parsed or read.
        Malformed = "malformed",
        /// Fields valid on their own that contradict each other.
        Inconsistent = "inconsistent",
    }
}

/// A rule broken by an input table: what kind of problem, which column
/// (`field`), which row, and the message a person reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub kind: ErrorKind,
    pub field: String,
    pub row: Option<usize>,
    pub record_id: Option<String>,
    pub message: String,
}

impl InputError {
    /// The error for `field` of the table `what` (`records`, `contexts`...),
    /// at `row` when one row is at fault. The message is rendered from these
    /// parts, as the Python reader renders its own: `records: column 'key'
    /// row 3 is empty; a non-empty string is required`.
    #[must_use]
    pub fn in_table(
        what: &str,
        kind: ErrorKind,
        field: &str,
        row: Option<usize>,
        problem: impl fmt::Display,
    ) -> Self {
        let place = match row {
            Some(row) => format!("column '{field}' row {row}"),
            None => format!("column '{field}'"),
        };
        Self {
            kind,
            field: field.to_owned(),
            row,
            record_id: None,
            message: format!("{what}: {place} {problem}"),
        }
    }

    /// The same error, naming the record it is about.
    #[must_use]
    pub fn with_record_id(mut self, record_id: &str) -> Self {
        self.record_id = Some(record_id.to_owned());
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

/// An internal invariant found broken: a bug, never the input's fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Broken(pub &'static str);

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "internal invariant broken: {}", self.0)
    }
}

impl std::error::Error for Broken {}

/// Any failure of the core: the input's fault, or a bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    Input(InputError),
    Broken(Broken),
}

impl From<InputError> for Error {
    fn from(error: InputError) -> Self {
        Self::Input(error)
    }
}

impl From<Broken> for Error {
    fn from(broken: Broken) -> Self {
        Self::Broken(broken)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Input(error) => error.fmt(f),
            Self::Broken(broken) => broken.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Vocabulary;

    #[test]
    fn kinds_have_distinct_kebab_case_names() {
        let mut names: Vec<&str> = ErrorKind::NAMES.to_vec();
        assert!(names
            .iter()
            .all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
    }

    #[test]
    fn messages_name_the_table_column_and_row() {
        let error = InputError::in_table(
            "records",
            ErrorKind::Empty,
            "key",
            Some(3),
            "is empty; a non-empty string is required",
        );
        assert_eq!(
            error.message,
            "records: column 'key' row 3 is empty; a non-empty string is required"
        );
        let whole = InputError::in_table(
            "contexts",
            ErrorKind::MissingColumn,
            "now",
            None,
            "is missing",
        );
        assert_eq!(whole.to_string(), "contexts: column 'now' is missing");
        assert_eq!(whole.with_record_id("m1").record_id.as_deref(), Some("m1"));
    }
}
