//! One reader per column type: each checks the column's type, validates its
//! chunks, applies the row rules of `docs/spec.md` §4.1 and returns (or
//! visits) the values. The first bad row is the error.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};

use super::names::NameTable;
use super::text::{TextChunk, TextColumn};
use super::{Checked, Table};
use crate::error::ErrorKind;
use crate::model::{Vocabulary, INSTANT_MAX, INSTANT_MIN, INSTANT_RANGE_PROBLEM};

const REQUIRED: &str = "is null; a value is required";
const NON_EMPTY: &str = "is empty; a non-empty string is required";
const INTEGER_COLUMN: &str = "a signed integer column of at most 64 bits";

impl<'t> Table<'t> {
    fn check_text_type(&self, column: &str) -> Checked<()> {
        let kind = self.field_type(column)?;
        let value_kind = match &kind {
            DataType::Dictionary(_, values) => values.as_ref(),
            other => other,
        };
        if matches!(
            value_kind,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
        ) {
            Ok(())
        } else {
            Err(self.wrong_type(column, "a string column", &kind))
        }
    }

    /// A string column, type checked and validated; its rows are not checked.
    pub(super) fn text_column(&self, column: &str) -> Checked<TextColumn<'t>> {
        self.check_text_type(column)?;
        let mut chunks = Vec::new();
        for array in self.chunks(column)? {
            let chunk = TextChunk::of(array)
                .ok_or_else(|| self.wrong_type(column, "a string column", array.data_type()))?;
            if chunk.len() != array.len() {
                return Err(self.fail(
                    column,
                    ErrorKind::Malformed,
                    "has a chunk of the wrong length",
                    None,
                ));
            }
            chunks.push(chunk);
        }
        Ok(TextColumn { chunks })
    }

    /// A required string column (non-empty when `nonempty`), each row visited
    /// in the same pass that checks it.
    pub(super) fn visit_required_text(
        &self,
        column: &str,
        nonempty: bool,
        visit: impl FnMut(&'t str),
    ) -> Checked<()> {
        self.map_required_text(column, nonempty, |text| text, visit)
    }

    /// A required string column (non-empty when `nonempty`): each distinct
    /// value checked and mapped once per dictionary (once per row when not
    /// dictionary-encoded), each row visited with its value's mapping.
    pub(super) fn map_required_text<T: Copy>(
        &self,
        column: &str,
        nonempty: bool,
        mut map: impl FnMut(&'t str) -> T,
        mut visit: impl FnMut(T),
    ) -> Checked<()> {
        self.text_column(column)?.try_for_each_mapped(
            |row, text| {
                if nonempty && text.is_empty() {
                    return Err(self.fail(column, ErrorKind::Empty, NON_EMPTY, Some(row)));
                }
                Ok(map(text))
            },
            |row, mapped| match mapped {
                None => Err(self.fail(column, ErrorKind::Missing, REQUIRED, Some(row))),
                Some(mapped) => {
                    visit(mapped);
                    Ok(())
                }
            },
        )
    }

    /// An optional string column (non-empty when present and `nonempty`),
    /// each row visited; an absent column visits every row as null.
    pub(super) fn visit_optional_text(
        &self,
        column: &str,
        nonempty: bool,
        mut visit: impl FnMut(Option<&'t str>),
    ) -> Checked<()> {
        if !self.has(column) {
            (0..self.rows).for_each(|_| visit(None));
            return Ok(());
        }
        self.text_column(column)?.try_for_each_mapped(
            |row, text| {
                if nonempty && text.is_empty() {
                    return Err(self.fail(column, ErrorKind::Empty, NON_EMPTY, Some(row)));
                }
                Ok(text)
            },
            |_, text| {
                visit(text);
                Ok(())
            },
        )
    }

    /// A required string column's values.
    pub(super) fn required_texts(&self, column: &str, nonempty: bool) -> Checked<Vec<&'t str>> {
        let mut texts = Vec::with_capacity(self.rows);
        self.visit_required_text(column, nonempty, |text| texts.push(text))?;
        Ok(texts)
    }

    /// An optional string column's values (all null when absent).
    pub(super) fn optional_texts(
        &self,
        column: &str,
        nonempty: bool,
    ) -> Checked<Vec<Option<&'t str>>> {
        let mut texts = Vec::with_capacity(self.rows);
        self.visit_optional_text(column, nonempty, |text| texts.push(text))?;
        Ok(texts)
    }

    /// A string column that must exist but may hold nulls (a context's
    /// `character_id`: a table without the column is more likely a mistake
    /// than a table of profile pages).
    pub(super) fn nullable_texts(
        &self,
        column: &str,
        nonempty: bool,
    ) -> Checked<Vec<Option<&'t str>>> {
        self.check_text_type(column)?;
        self.optional_texts(column, nonempty)
    }

    /// A column of vocabulary names (`status`, `scope_kind`...): each row's entry.
    pub(super) fn vocabulary<V: Vocabulary>(&self, column: &str) -> Checked<Vec<V>> {
        let text_column = self.text_column(column)?;
        let mut entries = Vec::with_capacity(self.rows);
        let names = NameTable::<V>::new();
        // A null or empty row anywhere is reported before an unknown value
        // (the checks of a string column come first, as in the Python reader).
        let mut first_unknown: Option<(usize, &str)> = None;
        text_column.try_for_each_mapped(
            |row, text| {
                if text.is_empty() {
                    return Err(self.fail(column, ErrorKind::Empty, NON_EMPTY, Some(row)));
                }
                Ok(names.entry(text).ok_or(text))
            },
            |row, entry| {
                match entry {
                    None => return Err(self.fail(column, ErrorKind::Missing, REQUIRED, Some(row))),
                    Some(Ok(entry)) => entries.push(entry),
                    Some(Err(text)) => {
                        first_unknown.get_or_insert((row, text));
                    }
                }
                Ok(())
            },
        )?;
        if let Some((row, text)) = first_unknown {
            let allowed: Vec<String> = V::NAMES.iter().map(|n| format!("'{n}'")).collect();
            let problem = format!(
                "has unknown value '{text}'; expected one of {}",
                allowed.join(", ")
            );
            return Err(self.fail(column, ErrorKind::UnknownValue, problem, Some(row)));
        }
        Ok(entries)
    }

    /// Visits each row of a timestamp column with a time zone as
    /// microseconds, floored (`None` for null).
    fn visit_instants(
        &self,
        column: &str,
        mut visit: impl FnMut(usize, Option<i64>) -> Checked<()>,
    ) -> Checked<()> {
        let kind = self.field_type(column)?;
        match &kind {
            // Every row null (a producer's type for an all-null column).
            DataType::Null => {
                self.chunks(column)?;
                for row in 0..self.rows {
                    visit(row, None)?;
                }
                return Ok(());
            }
            DataType::Timestamp(_, Some(_)) => {}
            DataType::Timestamp(_, None) => {
                return Err(self.fail(
                    column,
                    ErrorKind::NaiveTime,
                    format_args!(
                        "is a timestamp without a time zone ({kind}); memresolve never assumes one"
                    ),
                    None,
                ))
            }
            other => return Err(self.wrong_type(column, "a timestamp with a time zone", other)),
        }
        let mut row = 0;
        for array in self.chunks(column)? {
            let (ticks, nulls, per_second) = match array.data_type() {
                DataType::Timestamp(TimeUnit::Second, _) => {
                    ticks_of::<TimestampSecondType>(array, 1)
                }
                DataType::Timestamp(TimeUnit::Millisecond, _) => {
                    ticks_of::<TimestampMillisecondType>(array, 1_000)
                }
                DataType::Timestamp(TimeUnit::Microsecond, _) => {
                    ticks_of::<TimestampMicrosecondType>(array, 1_000_000)
                }
                DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                    ticks_of::<TimestampNanosecondType>(array, 1_000_000_000)
                }
                other => {
                    return Err(self.wrong_type(column, "a timestamp with a time zone", other))
                }
            };
            for (index, &tick) in ticks.iter().enumerate() {
                if nulls.is_some_and(|nulls| nulls.is_null(index)) {
                    visit(row, None)?;
                } else {
                    let micros = floor_to_micros(tick, per_second)
                        .filter(|micros| (INSTANT_MIN..=INSTANT_MAX).contains(micros))
                        .ok_or_else(|| {
                            self.fail(
                                column,
                                ErrorKind::OutOfRange,
                                INSTANT_RANGE_PROBLEM,
                                Some(row),
                            )
                        })?;
                    visit(row, Some(micros))?;
                }
                row += 1;
            }
        }
        Ok(())
    }

    /// A column of the Arrow `null` type where values are required: its
    /// first row is the error (none in an empty table).
    fn all_null(&self, column: &str) -> Checked<()> {
        self.chunks(column)?;
        match self.rows {
            0 => Ok(()),
            _ => Err(self.fail(column, ErrorKind::Missing, REQUIRED, Some(0))),
        }
    }

    /// A required timestamp column, as microseconds.
    pub(super) fn required_instants(&self, column: &str) -> Checked<Vec<i64>> {
        let mut micros = Vec::with_capacity(self.rows);
        self.visit_instants(column, |row, instant| match instant {
            Some(instant) => {
                micros.push(instant);
                Ok(())
            }
            None => Err(self.fail(column, ErrorKind::Missing, REQUIRED, Some(row))),
        })?;
        Ok(micros)
    }

    /// An optional timestamp column: absent means every row is null, and
    /// reads as an empty vector (no row-sized buffer of nulls).
    pub(super) fn optional_instants(&self, column: &str) -> Checked<Vec<Option<i64>>> {
        if !self.has(column) {
            return Ok(Vec::new());
        }
        let mut micros = Vec::with_capacity(self.rows);
        self.visit_instants(column, |_, instant| {
            micros.push(instant);
            Ok(())
        })?;
        Ok(micros)
    }

    /// An optional bool column: absent means every row is null, and reads as
    /// an empty vector.
    pub(super) fn optional_bools(&self, column: &str) -> Checked<Vec<Option<bool>>> {
        if !self.has(column) {
            return Ok(Vec::new());
        }
        let kind = self.field_type(column)?;
        if kind == DataType::Null {
            // Every row null: an empty vector, as for an absent column.
            return self.chunks(column).map(|_| Vec::new());
        }
        if kind != DataType::Boolean {
            return Err(self.wrong_type(column, "a bool column", &kind));
        }
        let mut values = Vec::with_capacity(self.rows);
        for array in self.chunks(column)? {
            let bools = array
                .as_boolean_opt()
                .ok_or_else(|| self.wrong_type(column, "a bool column", array.data_type()))?;
            values.extend(bools.iter());
        }
        Ok(values)
    }

    /// A signed integer column of at most 64 bits (or unsigned of at most 32), non-null.
    pub(super) fn integers(&self, column: &str) -> Checked<Vec<i64>> {
        let kind = self.field_type(column)?;
        if kind == DataType::Null {
            return self.all_null(column).map(|()| Vec::new());
        }
        if !is_integer(&kind) {
            return Err(self.wrong_type(column, INTEGER_COLUMN, &kind));
        }
        let mut numbers = Vec::with_capacity(self.rows);
        for array in self.chunks(column)? {
            let values: Vec<Option<i64>> = match array.data_type() {
                DataType::Int8 => widen::<Int8Type, i64>(array),
                DataType::Int16 => widen::<Int16Type, i64>(array),
                DataType::Int32 => widen::<Int32Type, i64>(array),
                DataType::Int64 => widen::<Int64Type, i64>(array),
                DataType::UInt8 => widen::<UInt8Type, i64>(array),
                DataType::UInt16 => widen::<UInt16Type, i64>(array),
                DataType::UInt32 => widen::<UInt32Type, i64>(array),
                _ => return Err(self.wrong_type(column, INTEGER_COLUMN, &kind)),
            };
            for value in values {
                let row = numbers.len();
                let value = value
                    .ok_or_else(|| self.fail(column, ErrorKind::Missing, REQUIRED, Some(row)))?;
                numbers.push(value);
            }
        }
        Ok(numbers)
    }

    /// The optional `confidence` column: floats, non-null, finite, 0 to 1.
    pub(super) fn check_confidences(&self, column: &str) -> Checked<()> {
        if !self.has(column) {
            return Ok(());
        }
        self.visit_confidences(column, |_| {})
    }

    /// Visits each row of a `confidence` column (floats, non-null, finite, 0
    /// to 1) as `f64`.
    pub(super) fn visit_confidences(
        &self,
        column: &str,
        mut visit: impl FnMut(f64),
    ) -> Checked<()> {
        let kind = self.field_type(column)?;
        if kind == DataType::Null {
            return self.all_null(column);
        }
        if !matches!(
            kind,
            DataType::Float16 | DataType::Float32 | DataType::Float64
        ) {
            return Err(self.wrong_type(column, "a float column", &kind));
        }
        let mut row = 0;
        for array in self.chunks(column)? {
            let values: Vec<Option<f64>> = match array.data_type() {
                DataType::Float16 => widen::<Float16Type, f64>(array),
                DataType::Float32 => widen::<Float32Type, f64>(array),
                _ => widen::<Float64Type, f64>(array),
            };
            for value in values {
                let fail = |kind, problem: String| self.fail(column, kind, problem, Some(row));
                match value {
                    None => return Err(fail(ErrorKind::Missing, REQUIRED.to_owned())),
                    Some(number) if !number.is_finite() => {
                        let problem = format!("must be a finite number, got {number}");
                        return Err(fail(ErrorKind::NotFinite, problem));
                    }
                    Some(number) if !(0.0..=1.0).contains(&number) => {
                        let problem = format!("must be between 0 and 1, got {number}");
                        return Err(fail(ErrorKind::OutOfRange, problem));
                    }
                    Some(number) => visit(number),
                }
                row += 1;
            }
        }
        Ok(())
    }
}

fn is_integer(kind: &DataType) -> bool {
    matches!(
        kind,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
    )
}

/// A timestamp chunk's raw ticks, its nulls, and its ticks per second.
fn ticks_of<T>(
    array: &ArrayRef,
    per_second: i64,
) -> (&[i64], Option<&arrow_buffer::NullBuffer>, i64)
where
    T: arrow_array::ArrowPrimitiveType<Native = i64>,
{
    let array = array.as_primitive::<T>();
    (array.values().as_ref(), array.nulls(), per_second)
}

/// A primitive chunk's values, widened to `U` (`None` for null).
fn widen<T, U>(array: &ArrayRef) -> Vec<Option<U>>
where
    T: arrow_array::ArrowPrimitiveType,
    T::Native: Into<U>,
{
    array
        .as_primitive::<T>()
        .iter()
        .map(|value| value.map(Into::into))
        .collect()
}

/// `tick / per_second` seconds as microseconds, floored (`None` on overflow).
fn floor_to_micros(tick: i64, per_second: i64) -> Option<i64> {
    if per_second >= 1_000_000 {
        Some(tick.div_euclid(per_second / 1_000_000))
    } else {
        tick.checked_mul(1_000_000 / per_second)
    }
}

#[cfg(test)]
mod tests {
    use super::floor_to_micros;

    #[test]
    fn finer_units_are_floored_not_truncated() {
        assert_eq!(floor_to_micros(1_999, 1_000_000_000), Some(1));
        assert_eq!(floor_to_micros(-1, 1_000_000_000), Some(-1));
        assert_eq!(floor_to_micros(-1_000, 1_000_000_000), Some(-1));
        assert_eq!(floor_to_micros(-1_001, 1_000_000_000), Some(-2));
        assert_eq!(floor_to_micros(7, 1_000_000), Some(7));
        assert_eq!(floor_to_micros(-3, 1_000), Some(-3_000));
        assert_eq!(floor_to_micros(2, 1), Some(2_000_000));
        assert_eq!(floor_to_micros(i64::MAX, 1), None);
    }
}
