//! Reading the batch form's Arrow tables (`SPEC.md` §4), checking every rule
//! of `memresolve._arrow` in the same order: column by column (the first bad
//! row of the first bad column), then the scope ids row by row, then unique
//! record ids. Records become a [`Store`]: ids hashed, keys and scope ids
//! interned in the same pass that checks them, the columns read concurrently.
//!
//! Strings are borrowed from the Arrow buffers, never copied: `string`,
//! `large_string`, `string_view` and dictionary-encoded strings, chunked and
//! sliced. Timestamps of any unit with a time zone are floored to
//! microseconds. Every chunk is validated in full before it is read, so a
//! malformed producer gives an error, never an out-of-bounds read.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef, TimeUnit};

use crate::batch::intern::{first_duplicate, Interned, KeyRanks, Numbering, ScopeIndex, NO_ROW};
use crate::batch::{scope_key, Store};
use crate::model::{Authority, ScopeKind, Status, AUTHORITY_NAMES, SCOPE_KIND_NAMES, STATUS_NAMES};
use crate::resolve::hash::{same_bytes, text_hasher, Hashed};
use crate::resolve::{Context, ScopeRef, Tombstone};
use foldhash::fast::FixedState;

/// A rule broken by an input table: which column, which row, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub message: String,
    pub column: String,
    pub row: Option<usize>,
    pub record_id: Option<String>,
}

type Checked<T> = Result<T, InputError>;

/// One input table: its schema and batches (chunks), read column by column.
pub struct Table<'t> {
    what: &'static str,
    schema: SchemaRef,
    batches: &'t [RecordBatch],
    rows: usize,
}

/// The strings of one chunk.
enum Texts<'t> {
    Utf8(&'t arrow_array::StringArray),
    Large(&'t arrow_array::LargeStringArray),
    View(&'t arrow_array::StringViewArray),
}

impl<'t> Texts<'t> {
    fn of(array: &'t dyn Array) -> Option<Self> {
        if let Some(strings) = array.as_string_opt::<i32>() {
            Some(Self::Utf8(strings))
        } else if let Some(strings) = array.as_string_opt::<i64>() {
            Some(Self::Large(strings))
        } else {
            array.as_string_view_opt().map(Self::View)
        }
    }

    fn get(&self, index: usize) -> Option<&'t str> {
        let (len, valid) = match self {
            Self::Utf8(a) => (a.len(), a.is_valid(index)),
            Self::Large(a) => (a.len(), a.is_valid(index)),
            Self::View(a) => (a.len(), a.is_valid(index)),
        };
        if index >= len || !valid {
            return None;
        }
        Some(match self {
            Self::Utf8(a) => a.value(index),
            Self::Large(a) => a.value(index),
            Self::View(a) => a.value(index),
        })
    }
}

/// The strings of one chunk, plain or dictionary-encoded.
enum TextChunk<'t> {
    Plain(Texts<'t>),
    Dictionary {
        array: &'t dyn Array,
        keys: Vec<usize>,
        values: Texts<'t>,
    },
}

impl<'t> TextChunk<'t> {
    fn of(array: &'t ArrayRef) -> Option<Self> {
        if let Some(dictionary) = array.as_any_dictionary_opt() {
            let values = Texts::of(dictionary.values().as_ref())?;
            // `normalized_keys` asserts on an empty dictionary (every row null).
            let keys = if dictionary.values().is_empty() {
                Vec::new()
            } else {
                dictionary.normalized_keys()
            };
            return Some(Self::Dictionary {
                array: array.as_ref(),
                keys,
                values,
            });
        }
        Texts::of(array.as_ref()).map(Self::Plain)
    }

    fn get(&self, index: usize) -> Option<&'t str> {
        match self {
            Self::Plain(texts) => texts.get(index),
            Self::Dictionary {
                array,
                keys,
                values,
            } => {
                if array.is_null(index) {
                    return None;
                }
                keys.get(index).and_then(|&key| values.get(key))
            }
        }
    }
}

/// A string column over all chunks, read in place: rows are visited chunk by
/// chunk, never copied into a row-sized buffer.
pub struct TextColumn<'t> {
    chunks: Vec<TextChunk<'t>>,
    rows: usize,
}

impl TextChunk<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Plain(Texts::Utf8(a)) => a.len(),
            Self::Plain(Texts::Large(a)) => a.len(),
            Self::Plain(Texts::View(a)) => a.len(),
            Self::Dictionary { array, .. } => array.len(),
        }
    }
}

/// The rows of a [`TextColumn`], in order.
struct Rows<'c, 't> {
    chunks: &'c [TextChunk<'t>],
    chunk: usize,
    index: usize,
    absent: usize,
}

impl<'t> Iterator for Rows<'_, 't> {
    type Item = Option<&'t str>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some(chunk) = self.chunks.get(self.chunk) else {
                // An absent column: its rows, all null.
                return self.absent.checked_sub(1).map(|left| {
                    self.absent = left;
                    None
                });
            };
            if self.index < chunk.len() {
                let text = chunk.get(self.index);
                self.index += 1;
                return Some(text);
            }
            self.chunk += 1;
            self.index = 0;
        }
    }
}

impl<'t> TextColumn<'t> {
    /// Every row's string, `None` for null, in row order.
    pub fn iter(&self) -> impl Iterator<Item = Option<&'t str>> + '_ {
        Rows {
            chunks: &self.chunks,
            chunk: 0,
            index: 0,
            absent: if self.chunks.is_empty() { self.rows } else { 0 },
        }
    }

    /// Calls `visit(row, text)` on every row in order, stopping at the first
    /// error. The hot loop of reading: each chunk is walked with its own
    /// array type, without nulls to test when it has none.
    pub fn try_for_each<E>(
        &self,
        mut visit: impl FnMut(usize, Option<&'t str>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.chunks.is_empty() {
            return (0..self.rows).try_for_each(|row| visit(row, None));
        }
        let mut base = 0;
        for chunk in &self.chunks {
            match chunk {
                TextChunk::Plain(Texts::Utf8(a)) => visit_strings(a, base, &mut visit)?,
                TextChunk::Plain(Texts::Large(a)) => visit_strings(a, base, &mut visit)?,
                TextChunk::Plain(Texts::View(a)) => {
                    if a.null_count() == 0 {
                        for index in 0..a.len() {
                            visit(base + index, Some(a.value(index)))?;
                        }
                    } else {
                        for (index, text) in a.iter().enumerate() {
                            visit(base + index, text)?;
                        }
                    }
                }
                TextChunk::Dictionary { .. } => {
                    for index in 0..chunk.len() {
                        visit(base + index, chunk.get(index))?;
                    }
                }
            }
            base += chunk.len();
        }
        Ok(())
    }

    /// An absent optional column: every row reads as null.
    fn absent(rows: usize) -> Self {
        Self {
            chunks: Vec::new(),
            rows,
        }
    }
}

fn visit_strings<'t, O: arrow_array::OffsetSizeTrait, E>(
    array: &'t arrow_array::GenericStringArray<O>,
    base: usize,
    visit: &mut impl FnMut(usize, Option<&'t str>) -> Result<(), E>,
) -> Result<(), E> {
    if array.null_count() == 0 {
        for index in 0..array.len() {
            visit(base + index, Some(array.value(index)))?;
        }
    } else {
        for (index, text) in array.iter().enumerate() {
            visit(base + index, text)?;
        }
    }
    Ok(())
}

/// A type as pyarrow prints it, so that both readers word an error alike
/// (arrow-rs' own spelling for types pyarrow has no simple name for).
fn type_name(data_type: &DataType) -> String {
    let unit = |unit: &TimeUnit| match unit {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    };
    let simple = match data_type {
        DataType::Null => "null",
        DataType::Boolean => "bool",
        DataType::Int8 => "int8",
        DataType::Int16 => "int16",
        DataType::Int32 => "int32",
        DataType::Int64 => "int64",
        DataType::UInt8 => "uint8",
        DataType::UInt16 => "uint16",
        DataType::UInt32 => "uint32",
        DataType::UInt64 => "uint64",
        DataType::Float16 => "halffloat",
        DataType::Float32 => "float",
        DataType::Float64 => "double",
        DataType::Utf8 => "string",
        DataType::LargeUtf8 => "large_string",
        DataType::Utf8View => "string_view",
        DataType::Binary => "binary",
        DataType::LargeBinary => "large_binary",
        DataType::BinaryView => "binary_view",
        DataType::Date32 => "date32[day]",
        DataType::Date64 => "date64[ms]",
        DataType::Timestamp(time_unit, None) => return format!("timestamp[{}]", unit(time_unit)),
        DataType::Timestamp(time_unit, Some(zone)) => {
            return format!("timestamp[{}, tz={zone}]", unit(time_unit))
        }
        DataType::Duration(time_unit) => return format!("duration[{}]", unit(time_unit)),
        DataType::Dictionary(keys, values) => {
            return format!(
                "dictionary<values={}, indices={}, ordered=0>",
                type_name(values),
                type_name(keys)
            )
        }
        other => return format!("{other}"),
    };
    simple.to_owned()
}

/// A float as Python's `str` prints it (`nan`, `inf`, `1.0`, `1e+20`).
fn python_float(number: f64) -> String {
    if number.is_nan() {
        return "nan".to_owned();
    }
    if number.is_infinite() {
        return if number > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let magnitude = number.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        // Rust's shortest digits, Python's exponent: a sign and two digits at least.
        let scientific = format!("{number:e}");
        if let Some((digits, exponent)) = scientific.split_once('e') {
            let exponent: i32 = exponent.parse().unwrap_or(0);
            let sign = if exponent < 0 { '-' } else { '+' };
            return format!("{digits}e{sign}{:02}", exponent.unsigned_abs());
        }
        return scientific;
    }
    let plain = format!("{number}");
    if plain.contains('.') {
        plain
    } else {
        format!("{plain}.0")
    }
}

impl<'t> Table<'t> {
    #[must_use]
    pub fn new(what: &'static str, schema: SchemaRef, batches: &'t [RecordBatch]) -> Self {
        let rows = batches.iter().map(RecordBatch::num_rows).sum();
        Self {
            what,
            schema,
            batches,
            rows,
        }
    }

    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }

    fn fail(&self, column: &str, problem: &str, row: Option<usize>) -> InputError {
        let place = match row {
            Some(row) => format!("column '{column}' row {row}"),
            None => format!("column '{column}'"),
        };
        InputError {
            message: format!("{}: {place} {problem}", self.what),
            column: column.to_owned(),
            row,
            record_id: None,
        }
    }

    #[must_use]
    pub fn has(&self, column: &str) -> bool {
        self.schema.index_of(column).is_ok()
    }

    /// The column's type in the schema; a missing column is an error.
    fn field_type(&self, column: &str) -> Checked<DataType> {
        self.schema
            .field_with_name(column)
            .map(|field| field.data_type().clone())
            .map_err(|_| self.fail(column, "is missing", None))
    }

    fn wrong_type(&self, column: &str, expected: &str, got: &DataType) -> InputError {
        self.fail(
            column,
            &format!("must be {expected}, got {}", type_name(got)),
            None,
        )
    }

    /// The chunks of `column`, each validated in full (call after the type check).
    fn chunks(&self, column: &str) -> Checked<Vec<&'t ArrayRef>> {
        let index = self
            .schema
            .index_of(column)
            .map_err(|_| self.fail(column, "is missing", None))?;
        let expected = self.schema.field(index).data_type();
        let mut chunks = Vec::with_capacity(self.batches.len());
        for batch in self.batches {
            let array = batch
                .columns()
                .get(index)
                .ok_or_else(|| self.fail(column, "is missing from a batch", None))?;
            if array.data_type() != expected {
                return Err(self.fail(column, "changes type between batches", None));
            }
            array.to_data().validate_full().map_err(|error| {
                self.fail(column, &format!("is not valid Arrow data: {error}"), None)
            })?;
            chunks.push(array);
        }
        Ok(chunks)
    }

    fn check_text_type(&self, column: &str) -> Checked<()> {
        let kind = self.field_type(column)?;
        let value_kind = match &kind {
            DataType::Dictionary(_, values) => values.as_ref(),
            other => other,
        };
        if matches!(
            value_kind,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ) {
            Ok(())
        } else {
            Err(self.wrong_type(column, "a string column", &kind))
        }
    }

    fn text_chunks(&self, column: &str) -> Checked<TextColumn<'t>> {
        self.check_text_type(column)?;
        let mut chunks = Vec::new();
        for array in self.chunks(column)? {
            let chunk = TextChunk::of(array)
                .ok_or_else(|| self.wrong_type(column, "a string column", array.data_type()))?;
            if chunk.len() != array.len() {
                return Err(self.fail(column, "has a chunk of the wrong length", None));
            }
            chunks.push(chunk);
        }
        Ok(TextColumn {
            chunks,
            rows: self.rows,
        })
    }

    /// A string column: each row non-null when `required`, non-empty when
    /// non-null and `nonempty`.
    pub fn text(&self, column: &str, required: bool, nonempty: bool) -> Checked<TextColumn<'t>> {
        let text_column = self.text_chunks(column)?;
        if !required && !nonempty {
            return Ok(text_column);
        }
        text_column.try_for_each(|row, text| match text {
            None if required => Err(self.fail(column, "is null; a value is required", Some(row))),
            Some("") if nonempty => Err(self.fail(
                column,
                "is empty; a non-empty string is required",
                Some(row),
            )),
            _ => Ok(()),
        })?;
        Ok(text_column)
    }

    /// A string column checked as [`Self::text`] does and visited row by row
    /// in the same pass.
    pub fn visit_text(
        &self,
        column: &str,
        required: bool,
        nonempty: bool,
        mut visit: impl FnMut(Option<&'t str>),
    ) -> Checked<()> {
        if !required && !self.has(column) {
            (0..self.rows).for_each(|_| visit(None));
            return Ok(());
        }
        self.text_chunks(column)?
            .try_for_each(|row, text| match text {
                None if required => {
                    Err(self.fail(column, "is null; a value is required", Some(row)))
                }
                Some("") if nonempty => Err(self.fail(
                    column,
                    "is empty; a non-empty string is required",
                    Some(row),
                )),
                _ => {
                    visit(text);
                    Ok(())
                }
            })
    }

    /// An optional string column: absent means every row is null.
    pub fn optional_text(&self, column: &str, nonempty: bool) -> Checked<TextColumn<'t>> {
        if self.has(column) {
            self.text(column, false, nonempty)
        } else {
            Ok(TextColumn::absent(self.rows))
        }
    }

    /// An enum column: each row one of `names`; the codes.
    pub fn codes(&self, column: &str, names: &[&str]) -> Checked<Vec<u8>> {
        let text_column = self.text_chunks(column)?;
        let mut codes = Vec::with_capacity(self.rows);
        // Only names of the text's length are compared (statuses and scope
        // kinds all differ in length), inline.
        let code_of = |text: &str| {
            names.iter().position(|name| {
                name.len() == text.len() && same_bytes(name.as_bytes(), text.as_bytes())
            })
        };
        // A null or empty row anywhere is reported before an unknown value
        // (the checks of a string column come first, as in the Python reader).
        let mut first_unknown: Option<(usize, &str)> = None;
        text_column.try_for_each(|row, text| {
            let code = match text {
                None => return Err(self.fail(column, "is null; a value is required", Some(row))),
                Some("") => {
                    return Err(self.fail(
                        column,
                        "is empty; a non-empty string is required",
                        Some(row),
                    ))
                }
                Some(text) => code_of(text).and_then(|code| u8::try_from(code).ok()),
            };
            match (code, text) {
                (Some(code), _) => codes.push(code),
                (None, Some(text)) => {
                    first_unknown.get_or_insert((row, text));
                    codes.push(0);
                }
                (None, None) => codes.push(0),
            }
            Ok(())
        })?;
        if let Some((row, text)) = first_unknown {
            let allowed: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
            let problem = format!(
                "has unknown value '{text}'; expected one of {}",
                allowed.join(", ")
            );
            return Err(self.fail(column, &problem, Some(row)));
        }
        Ok(codes)
    }

    /// A timestamp column with a time zone, as microseconds, floored.
    pub fn instants(&self, column: &str, required: bool) -> Checked<Vec<Option<i64>>> {
        let kind = self.field_type(column)?;
        {
            match &kind {
                DataType::Timestamp(_, Some(_)) => {}
                DataType::Timestamp(_, None) => {
                    return Err(self.fail(
                        column,
                        &format!(
                            "is a timestamp without a time zone ({}); memresolve never assumes one",
                            type_name(&kind)
                        ),
                        None,
                    ))
                }
                other => {
                    return Err(self.wrong_type(column, "a timestamp with a time zone", other))
                }
            }
        }
        let chunks = self.chunks(column)?;
        let mut micros = Vec::with_capacity(self.rows);
        for array in chunks {
            let (ticks, nulls, per_second) = match array.data_type() {
                DataType::Timestamp(TimeUnit::Second, Some(_)) => {
                    ticks_of::<TimestampSecondType>(array, 1)
                }
                DataType::Timestamp(TimeUnit::Millisecond, Some(_)) => {
                    ticks_of::<TimestampMillisecondType>(array, 1_000)
                }
                DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => {
                    ticks_of::<TimestampMicrosecondType>(array, 1_000_000)
                }
                DataType::Timestamp(TimeUnit::Nanosecond, Some(_)) => {
                    ticks_of::<TimestampNanosecondType>(array, 1_000_000_000)
                }
                other => {
                    let other = type_name(other);
                    return Err(self.fail(
                        column,
                        &format!("must be a timestamp with a time zone, got {other}"),
                        None,
                    ));
                }
            };
            for (index, &tick) in ticks.iter().enumerate() {
                let row = micros.len();
                if nulls.is_some_and(|nulls| nulls.is_null(index)) {
                    if required {
                        return Err(self.fail(column, "is null; a value is required", Some(row)));
                    }
                    micros.push(None);
                    continue;
                }
                let instant = if per_second == 1_000_000 {
                    Some(tick)
                } else {
                    floor_to_micros(tick, per_second)
                };
                micros.push(Some(instant.ok_or_else(|| {
                    self.fail(
                        column,
                        "is out of the range of microseconds in 64 bits",
                        Some(row),
                    )
                })?));
            }
        }
        Ok(micros)
    }

    /// An optional timestamp column: absent means every row is null, and
    /// reads as an empty vector (no row-sized buffer of nulls).
    pub fn optional_instants(&self, column: &str) -> Checked<Vec<Option<i64>>> {
        if self.has(column) {
            self.instants(column, false)
        } else {
            Ok(Vec::new())
        }
    }

    /// A signed integer column of at most 64 bits (or unsigned of at most 32), non-null.
    pub fn integers(&self, column: &str) -> Checked<Vec<i64>> {
        let kind = self.field_type(column)?;
        if !matches!(
            kind,
            DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt8
                | DataType::UInt16
                | DataType::UInt32
        ) {
            return Err(self.wrong_type(column, INTEGER_COLUMN, &kind));
        }
        let chunks = self.chunks(column)?;
        let mut numbers = Vec::with_capacity(self.rows);
        for array in chunks {
            let values: Vec<Option<i64>> = match array.data_type() {
                DataType::Int8 => widen::<Int8Type, i64>(array),
                DataType::Int16 => widen::<Int16Type, i64>(array),
                DataType::Int32 => widen::<Int32Type, i64>(array),
                DataType::Int64 => widen::<Int64Type, i64>(array),
                DataType::UInt8 => widen::<UInt8Type, i64>(array),
                DataType::UInt16 => widen::<UInt16Type, i64>(array),
                DataType::UInt32 => widen::<UInt32Type, i64>(array),
                other => return Err(self.wrong_type(column, INTEGER_COLUMN, other)),
            };
            for value in values {
                let row = numbers.len();
                numbers.push(
                    value.ok_or_else(|| {
                        self.fail(column, "is null; a value is required", Some(row))
                    })?,
                );
            }
        }
        Ok(numbers)
    }

    /// The optional `confidence` column: floats, non-null, finite, 0 to 1.
    pub fn check_confidences(&self, column: &str) -> Checked<()> {
        if !self.has(column) {
            return Ok(());
        }
        let kind = self.field_type(column)?;
        if !matches!(
            kind,
            DataType::Float16 | DataType::Float32 | DataType::Float64
        ) {
            return Err(self.wrong_type(column, "a float column", &kind));
        }
        let chunks = self.chunks(column)?;
        let mut row = 0;
        for array in chunks {
            let values: Vec<Option<f64>> = match array.data_type() {
                DataType::Float16 => widen::<Float16Type, f64>(array),
                DataType::Float32 => widen::<Float32Type, f64>(array),
                DataType::Float64 => widen::<Float64Type, f64>(array),
                other => return Err(self.wrong_type(column, "a float column", other)),
            };
            for value in values {
                match value {
                    None => {
                        return Err(self.fail(column, "is null; a value is required", Some(row)))
                    }
                    Some(number) if !number.is_finite() => {
                        return Err(self.fail(
                            column,
                            &format!("must be a finite number, got {}", python_float(number)),
                            Some(row),
                        ))
                    }
                    Some(number) if !(0.0..=1.0).contains(&number) => {
                        return Err(self.fail(
                            column,
                            &format!("must be between 0 and 1, got {}", python_float(number)),
                            Some(row),
                        ))
                    }
                    Some(_) => {}
                }
                row += 1;
            }
        }
        Ok(())
    }

    /// Rows are numbered in `u32`, with one value kept for "no row".
    fn check_store_size(&self) -> Checked<()> {
        if u32::try_from(self.rows).is_ok_and(|rows| rows < NO_ROW) {
            return Ok(());
        }
        let message = format!("has {} rows; a store holds fewer than {NO_ROW}", self.rows);
        Err(self.fail("id", &message, None))
    }

    fn duplicate_id(&self, id: &str, earlier: usize, row: usize) -> InputError {
        let mut error = self.fail("id", &format!("repeats the id of row {earlier}"), Some(row));
        error.record_id = Some(id.to_owned());
        error
    }

    /// The four scope id columns (type and validity checked; rows are checked
    /// per scope kind by `scopes`).
    fn scope_id_columns(&self) -> Checked<[TextColumn<'t>; 4]> {
        Ok([
            self.text("user_id", false, false)?,
            self.text("character_id", false, false)?,
            self.text("conversation_id", false, false)?,
            self.text("scene_id", false, false)?,
        ])
    }

    /// Each row's scope, from `scope_kind` codes and the four id columns, in
    /// row order; a row whose kind needs an id that is null or empty is an
    /// error naming that column.
    fn scopes<'s>(
        &'s self,
        kinds: &'s [ScopeKind],
        ids: &'s [TextColumn<'t>; 4],
    ) -> impl Iterator<Item = Checked<ScopeRef<'t>>> + 's {
        let [users, characters, conversations, scenes] = ids;
        let rows = users
            .iter()
            .zip(characters.iter())
            .zip(conversations.iter().zip(scenes.iter()));
        kinds.iter().zip(rows).enumerate().map(
            move |(row, (&kind, ((user, character), (conversation, scene))))| {
                let values = [user, character, conversation, scene];
                let mut fields = ["", ""];
                for (slot, &column) in fields.iter_mut().zip(needed_columns(kind)) {
                    match values.get(column).copied().flatten() {
                        Some(text) if !text.is_empty() => *slot = text,
                        value => {
                            return Err(missing_scope_id(self, kind, column, value.is_none(), row))
                        }
                    }
                }
                // One-field kinds keep "" in `second`.
                let [first, second] = fields;
                Ok(ScopeRef {
                    kind,
                    first,
                    second,
                })
            },
        )
    }
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

const INTEGER_COLUMN: &str = "a signed integer column of at most 64 bits";

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

/// From this many rows on, a table's columns are read concurrently.
const PARALLEL_FROM: usize = 50_000;

/// `a` and `b`, concurrently on the rayon pool when `parallel`.
fn both<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if parallel {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

/// `tick / per_second` seconds as microseconds, floored (`None` on overflow).
fn floor_to_micros(tick: i64, per_second: i64) -> Option<i64> {
    if per_second >= 1_000_000 {
        Some(tick.div_euclid(per_second / 1_000_000))
    } else {
        tick.checked_mul(1_000_000 / per_second)
    }
}

fn kind_of(code: u8) -> ScopeKind {
    ScopeKind::ALL
        .get(usize::from(code))
        .copied()
        .unwrap_or(ScopeKind::User)
}

fn status_of(code: u8) -> Status {
    match code {
        1 => Status::Superseded,
        2 => Status::Expired,
        3 => Status::Forgotten,
        _ => Status::Active,
    }
}

fn authority_of(code: u8) -> Authority {
    match code {
        1 => Authority::RuleExtracted,
        2 => Authority::UserConfirmed,
        3 => Authority::UserCorrected,
        _ => Authority::ModelInferred,
    }
}

/// The records table as a store (rows in table order), ids hashed and keys
/// and scope ids interned as they are read.
pub fn read_records<'t>(table: &Table<'t>) -> Checked<Store<'t>> {
    let rows = table.rows();
    table.check_store_size()?;
    let state = text_hasher();
    // The columns are read concurrently (for large tables: waking the pool
    // costs more than reading a few thousand rows); their results are then
    // taken in column order, so the error reported is the same either way.
    let parallel = rows >= PARALLEL_FROM;
    let read_ids = || read_ids(table, &state);
    let read_keys = || read_keys(table, &state);
    let read_scope_ids = || read_scope_ids(table, &state, parallel);
    let (((ids, keys), (kinds, scope_ids)), ((statuses, authorities), (times, rest))) = both(
        parallel,
        || {
            both(
                parallel,
                || both(parallel, read_ids, read_keys),
                || {
                    both(
                        parallel,
                        || table.codes("scope_kind", &SCOPE_KIND_NAMES),
                        read_scope_ids,
                    )
                },
            )
        },
        || {
            both(
                parallel,
                || {
                    both(
                        parallel,
                        || table.codes("status", &STATUS_NAMES),
                        || table.codes("authority", &AUTHORITY_NAMES),
                    )
                },
                || {
                    both(
                        parallel,
                        || {
                            both(
                                parallel,
                                || table.instants("valid_from", true),
                                || table.optional_instants("valid_until"),
                            )
                        },
                        || {
                            (
                                read_supersedes(table, &state),
                                table.integers("version"),
                                table.optional_instants("observed_at"),
                                table.check_confidences("confidence"),
                            )
                        },
                    )
                },
            )
        },
    );
    let ((ids, duplicate), (keys, key_ranks)) = (ids?, keys?);
    let (kinds, interned) = (kinds?, scope_ids?);
    let [(users, user_numbers), (characters, character_numbers), (conversations, conversation_numbers), (scenes, scene_numbers)] =
        interned;
    let (statuses, authorities) = (statuses?, authorities?);
    let (valid_from, valid_until) = (times.0?, times.1?);
    let (supersedes, versions, observed_at) = (rest.0?, rest.1?, rest.2?);
    rest.3?;

    let kinds: Vec<ScopeKind> = kinds.iter().map(|&code| kind_of(code)).collect();
    let numbers = [
        &user_numbers,
        &character_numbers,
        &conversation_numbers,
        &scene_numbers,
    ];
    let interned = [&users, &characters, &conversations, &scenes];
    let (scopes, scope_numbers) = index_scopes(table, &kinds, interned, numbers)?;
    if let Some((earlier, row)) = duplicate {
        let id = ids.get(row).map_or("", |id| id.text);
        return Err(table.duplicate_id(id, earlier, row));
    }
    Ok(Store {
        ids,
        kinds,
        scope_numbers,
        key_ranks,
        supersedes,
        statuses: statuses.iter().map(|&code| status_of(code)).collect(),
        authorities: authorities.iter().map(|&code| authority_of(code)).collect(),
        versions,
        valid_from: valid_from.iter().map(|from| from.unwrap_or(0)).collect(),
        valid_until,
        observed_at,
        keys,
        scope_ids: [users, characters, conversations, scenes],
        scopes,
    })
}

/// Each row's value numbered (nulls are not).
fn numbered<'t>(column: &TextColumn<'t>, state: &FixedState) -> Numbering<'t> {
    let mut numbering = Numbering::with_capacity(column.rows);
    let _: Result<(), std::convert::Infallible> = column.try_for_each(|_, text| {
        numbering.push(text.map(|text| Hashed::new(state, text)));
        Ok(())
    });
    numbering
}

/// The ids, and the rows of the first repeated one.
type HashedIds<'t> = (Vec<Hashed<'t>>, Option<(usize, usize)>);

/// The `supersedes` column hashed.
fn read_supersedes<'t>(table: &Table<'t>, state: &FixedState) -> Checked<Vec<Option<Hashed<'t>>>> {
    let mut named = Vec::with_capacity(table.rows());
    table.visit_text("supersedes", false, true, |id| {
        named.push(id.map(|id| Hashed::new(state, id)));
    })?;
    Ok(named)
}

/// The `id` column hashed, and its first repeated id.
fn read_ids<'t>(table: &Table<'t>, state: &FixedState) -> Checked<HashedIds<'t>> {
    let mut ids: Vec<Hashed<'t>> = Vec::with_capacity(table.rows());
    table.visit_text("id", true, true, |id| {
        ids.push(Hashed::new(state, id.unwrap_or("")));
    })?;
    let duplicate = first_duplicate(&ids);
    Ok((ids, duplicate))
}

/// The `key` column, ranked.
fn read_keys<'t>(table: &Table<'t>, state: &FixedState) -> Checked<(KeyRanks<'t>, Vec<u32>)> {
    let mut keys = Numbering::with_capacity(table.rows());
    table.visit_text("key", true, true, |key| {
        keys.push(Some(Hashed::new(state, key.unwrap_or(""))));
    })?;
    Ok(KeyRanks::build(keys))
}

type InternedColumn<'t> = (Interned<'t>, Vec<u32>);

/// The four scope id columns, checked and interned.
fn read_scope_ids<'t>(
    table: &Table<'t>,
    state: &FixedState,
    parallel: bool,
) -> Checked<[InternedColumn<'t>; 4]> {
    let columns = table.scope_id_columns()?;
    let intern = |column: &TextColumn<'t>| Interned::build(numbered(column, state));
    let [users, characters, conversations, scenes] = &columns;
    let ((user, character), (conversation, scene)) = both(
        parallel,
        || both(parallel, || intern(users), || intern(characters)),
        || both(parallel, || intern(conversations), || intern(scenes)),
    );
    Ok([user, character, conversation, scene])
}

/// The ids a scope kind needs, as indices into the four scope id columns.
fn needed_columns(kind: ScopeKind) -> &'static [usize] {
    match kind {
        ScopeKind::User => &[0],
        ScopeKind::Character => &[0, 1],
        ScopeKind::Conversation => &[2],
        ScopeKind::Scene => &[2, 3],
    }
}

const SCOPE_ID_COLUMNS: [&str; 4] = ["user_id", "character_id", "conversation_id", "scene_id"];

/// The error for a scope id a row's kind needs that is null or empty.
fn missing_scope_id(
    table: &Table<'_>,
    kind: ScopeKind,
    column: usize,
    null: bool,
    row: usize,
) -> InputError {
    let name = SCOPE_ID_COLUMNS.get(column).copied().unwrap_or("scope");
    let problem = if null { "null" } else { "empty" };
    table.fail(
        name,
        &format!("is {problem}; a {} scope needs it", kind.name()),
        Some(row),
    )
}

/// The rows' scopes indexed from the id columns' numbers, each row checked
/// on the way (its kind's ids non-null and non-empty): the first bad row
/// stops the index and is the error.
fn index_scopes(
    table: &Table<'_>,
    kinds: &[ScopeKind],
    interned: [&Interned<'_>; 4],
    numbers: [&Vec<u32>; 4],
) -> Checked<(ScopeIndex, Vec<u32>)> {
    let state = text_hasher();
    let empty = interned.map(|column| column.number_of(&Hashed::new(&state, "")));
    let mut bad = None;
    let keys = kinds.iter().enumerate().map_while(|(row, &kind)| {
        let row_numbers = numbers.map(|column| column.get(row).copied().unwrap_or(NO_ROW));
        for &column in needed_columns(kind) {
            let number = row_numbers.get(column).copied().unwrap_or(NO_ROW);
            let is_empty = empty.get(column).copied().flatten() == Some(number);
            if number == NO_ROW || is_empty {
                bad = Some(missing_scope_id(table, kind, column, number == NO_ROW, row));
                return None;
            }
        }
        Some(scope_key(kind, row_numbers))
    });
    let index = ScopeIndex::build(keys, kinds.len());
    match bad {
        Some(error) => Err(error),
        None => Ok(index),
    }
}

/// The contexts table: each row's `context_id` and context.
pub fn read_contexts<'t>(table: &Table<'t>) -> Checked<(Vec<&'t str>, Vec<Context<'t>>)> {
    let context_ids = table.text("context_id", true, false)?;
    let now = table.instants("now", true)?;
    let users = table.text("user_id", true, true)?;
    let characters = table.text("character_id", true, true)?;
    let conversations = table.text("conversation_id", true, true)?;
    let scenes = table.optional_text("scene_id", true)?;
    let mut contexts = Vec::with_capacity(table.rows());
    let mut scene_values = scenes.iter();
    for (((now, user), character), conversation) in now
        .iter()
        .zip(users.iter())
        .zip(characters.iter())
        .zip(conversations.iter())
    {
        contexts.push(Context {
            now: now.unwrap_or(0),
            user_id: user.unwrap_or(""),
            character_id: character.unwrap_or(""),
            conversation_id: conversation.unwrap_or(""),
            scene_id: scene_values.next().flatten(),
        });
    }
    Ok((
        context_ids.iter().map(|id| id.unwrap_or("")).collect(),
        contexts,
    ))
}

/// The tombstones table.
pub fn read_tombstones<'t>(table: &Table<'t>) -> Checked<Vec<Tombstone<'t>>> {
    let keys = table.text("key", true, true)?;
    let kinds = table.codes("scope_kind", &SCOPE_KIND_NAMES)?;
    let scope_ids = table.scope_id_columns()?;
    let bounds = table.instants("blocks_sources_before", true)?;
    table.optional_instants("forgotten_at")?;
    let kinds: Vec<ScopeKind> = kinds.iter().map(|&code| kind_of(code)).collect();
    let scopes = table
        .scopes(&kinds, &scope_ids)
        .collect::<Checked<Vec<ScopeRef<'t>>>>()?;
    Ok(keys
        .iter()
        .zip(scopes)
        .zip(bounds)
        .map(|((key, scope), bound)| Tombstone {
            key: key.unwrap_or(""),
            scope,
            blocks_sources_before: bound.unwrap_or(i64::MIN),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{floor_to_micros, python_float, type_name};
    use arrow_schema::{DataType, TimeUnit};

    #[test]
    fn floats_print_as_python_prints_them() {
        let cases = [
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1.0, "1.0"),
            (1.5, "1.5"),
            (-0.25, "-0.25"),
            (0.0, "0.0"),
            (1e20, "1e+20"),
            (1.5e16, "1.5e+16"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123_456_789_012_345.0, "123456789012345.0"),
        ];
        for (number, python) in cases {
            assert_eq!(python_float(number), python, "{number}");
        }
    }

    #[test]
    fn types_print_as_pyarrow_prints_them() {
        assert_eq!(type_name(&DataType::Float64), "double");
        assert_eq!(
            type_name(&DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("UTC".into())
            )),
            "timestamp[us, tz=UTC]"
        );
        assert_eq!(
            type_name(&DataType::Dictionary(
                Box::new(DataType::Int32),
                Box::new(DataType::Utf8)
            )),
            "dictionary<values=string, indices=int32, ordered=0>"
        );
    }

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
