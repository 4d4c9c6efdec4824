//! Reading the batch form's Arrow tables (`SPEC.md` §4) into the pipeline's
//! columnar types, checking every rule of `memresolve._arrow` in the same
//! order: column by column (the first bad row of the first bad column), then
//! the scope ids row by row, then unique record ids.
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

use crate::model::{Authority, ScopeKind, Status, AUTHORITY_NAMES, SCOPE_KIND_NAMES, STATUS_NAMES};
use crate::resolve::{CandidateSet, Context, Record, ScopeRef, Tombstone};

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

/// A string column over all chunks, one entry per row (`None` for null),
/// read once with Arrow's own iterators and then scanned as a slice.
pub struct TextColumn<'t> {
    values: Vec<Option<&'t str>>,
}

impl<'t> TextColumn<'t> {
    fn read(chunks: &[(usize, TextChunk<'t>)], rows: usize) -> Self {
        let mut values = Vec::with_capacity(rows);
        for (len, chunk) in chunks {
            match chunk {
                TextChunk::Plain(Texts::Utf8(array)) => values.extend(array.iter()),
                TextChunk::Plain(Texts::Large(array)) => values.extend(array.iter()),
                TextChunk::Plain(Texts::View(array)) => values.extend(array.iter()),
                TextChunk::Dictionary { .. } => values.extend((0..*len).map(|i| chunk.get(i))),
            }
        }
        Self { values }
    }

    /// Every row's string, `None` for null, in row order.
    pub fn iter(&self) -> impl Iterator<Item = Option<&'t str>> + '_ {
        self.values.iter().copied()
    }

    /// Row `row`'s string (`None` for null, or for a row past the end).
    #[must_use]
    pub fn get(&self, row: usize) -> Option<&'t str> {
        self.values.get(row).copied().flatten()
    }

    /// An absent optional column: every row reads as null.
    fn absent() -> Self {
        Self { values: Vec::new() }
    }
}

fn type_name(data_type: &DataType) -> String {
    format!("{data_type}")
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
        let mut texts = Vec::new();
        for array in self.chunks(column)? {
            let chunk = TextChunk::of(array)
                .ok_or_else(|| self.wrong_type(column, "a string column", array.data_type()))?;
            texts.push((array.len(), chunk));
        }
        Ok(TextColumn::read(&texts, self.rows))
    }

    /// A string column: each row non-null when `required`, non-empty when
    /// non-null and `nonempty`.
    pub fn text(&self, column: &str, required: bool, nonempty: bool) -> Checked<TextColumn<'t>> {
        let text_column = self.text_chunks(column)?;
        for (row, text) in text_column.iter().enumerate() {
            match text {
                None if required => {
                    return Err(self.fail(column, "is null; a value is required", Some(row)))
                }
                Some("") if nonempty => {
                    return Err(self.fail(
                        column,
                        "is empty; a non-empty string is required",
                        Some(row),
                    ))
                }
                _ => {}
            }
        }
        Ok(text_column)
    }

    /// An optional string column: absent means every row is null.
    pub fn optional_text(&self, column: &str, nonempty: bool) -> Checked<TextColumn<'t>> {
        if self.has(column) {
            self.text(column, false, nonempty)
        } else {
            Ok(TextColumn::absent())
        }
    }

    /// An enum column: each row one of `names`; the codes.
    pub fn codes(&self, column: &str, names: &[&str]) -> Checked<Vec<u8>> {
        let text_column = self.text_chunks(column)?;
        let mut codes = Vec::with_capacity(self.rows);
        for (row, text) in text_column.iter().enumerate() {
            let code = match text {
                None => return Err(self.fail(column, "is null; a value is required", Some(row))),
                Some("") => {
                    return Err(self.fail(
                        column,
                        "is empty; a non-empty string is required",
                        Some(row),
                    ))
                }
                Some(text) => names
                    .iter()
                    .position(|name| *name == text)
                    .and_then(|code| u8::try_from(code).ok())
                    .ok_or_else(|| {
                        let allowed: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
                        self.fail(
                            column,
                            &format!(
                                "has unknown value '{text}'; expected one of {}",
                                allowed.join(", ")
                            ),
                            Some(row),
                        )
                    })?,
            };
            codes.push(code);
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
                        "is a timestamp without a time zone ({kind}); memresolve never assumes one"
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
            let (ticks, per_second): (Vec<Option<i64>>, i64) = match array.data_type() {
                DataType::Timestamp(TimeUnit::Second, Some(_)) => (
                    array.as_primitive::<TimestampSecondType>().iter().collect(),
                    1,
                ),
                DataType::Timestamp(TimeUnit::Millisecond, Some(_)) => (
                    array
                        .as_primitive::<TimestampMillisecondType>()
                        .iter()
                        .collect(),
                    1_000,
                ),
                DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => (
                    array
                        .as_primitive::<TimestampMicrosecondType>()
                        .iter()
                        .collect(),
                    1_000_000,
                ),
                DataType::Timestamp(TimeUnit::Nanosecond, Some(_)) => (
                    array
                        .as_primitive::<TimestampNanosecondType>()
                        .iter()
                        .collect(),
                    1_000_000_000,
                ),
                other => {
                    let other = type_name(other);
                    return Err(self.fail(
                        column,
                        &format!("must be a timestamp with a time zone, got {other}"),
                        None,
                    ));
                }
            };
            for tick in ticks {
                let row = micros.len();
                micros.push(match tick {
                    None if required => {
                        return Err(self.fail(column, "is null; a value is required", Some(row)))
                    }
                    None => None,
                    Some(tick) => Some(floor_to_micros(tick, per_second).ok_or_else(|| {
                        self.fail(
                            column,
                            "is out of the range of microseconds in 64 bits",
                            Some(row),
                        )
                    })?),
                });
            }
        }
        Ok(micros)
    }

    /// An optional timestamp column: absent means every row is null.
    pub fn optional_instants(&self, column: &str) -> Checked<Vec<Option<i64>>> {
        if self.has(column) {
            self.instants(column, false)
        } else {
            Ok(vec![None; self.rows])
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
                            &format!("must be a finite number, got {number}"),
                            Some(row),
                        ))
                    }
                    Some(number) if !(0.0..=1.0).contains(&number) => {
                        return Err(self.fail(
                            column,
                            &format!("must be between 0 and 1, got {number}"),
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

    /// The four scope id columns (type and validity checked; rows are checked
    /// per scope kind by `scopes`).
    fn scope_id_columns(&self) -> Checked<[TextColumn<'t>; 4]> {
        Ok([
            self.optional_text("user_id", false)?,
            self.optional_text("character_id", false)?,
            self.optional_text("conversation_id", false)?,
            self.optional_text("scene_id", false)?,
        ])
    }

    /// Each row's scope, from `scope_kind` codes and the four id columns.
    fn scopes(&self, kinds: &[u8], ids: &[TextColumn<'t>; 4]) -> Checked<Vec<ScopeRef<'t>>> {
        let columns = ["user_id", "character_id", "conversation_id", "scene_id"];
        let mut scopes = Vec::with_capacity(self.rows);
        for (row, &code) in kinds.iter().enumerate() {
            let kind = ScopeKind::ALL
                .get(usize::from(code))
                .copied()
                .unwrap_or(ScopeKind::User);
            let needed: &[usize] = match kind {
                ScopeKind::User => &[0],
                ScopeKind::Character => &[0, 1],
                ScopeKind::Conversation => &[2],
                ScopeKind::Scene => &[2, 3],
            };
            let mut fields = ["", ""];
            for (slot, &index) in fields.iter_mut().zip(needed) {
                let value = ids.get(index).and_then(|column| column.get(row));
                match value {
                    Some(text) if !text.is_empty() => *slot = text,
                    _ => {
                        let column = columns.get(index).copied().unwrap_or("scope");
                        let name = kind.name();
                        let problem = if value.is_none() { "null" } else { "empty" };
                        return Err(self.fail(
                            column,
                            &format!("is {problem}; a {name} scope needs it"),
                            Some(row),
                        ));
                    }
                }
            }
            let [first, second] = fields;
            scopes.push(ScopeRef {
                kind,
                first,
                second,
            });
        }
        Ok(scopes)
    }
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

/// The records table as a candidate set (rows in table order).
pub fn read_records<'t>(table: &Table<'t>) -> Checked<CandidateSet<'t>> {
    // The columns are read concurrently (for large tables: waking the pool
    // costs more than reading a few thousand rows); their results are then
    // taken in column order, so the error reported is the same either way.
    let parallel = table.rows() >= PARALLEL_FROM;
    let (((ids, keys), (kinds, scope_ids)), ((statuses, authorities), (times, rest))) = both(
        parallel,
        || {
            both(
                parallel,
                || {
                    both(
                        parallel,
                        || table.text("id", true, true),
                        || table.text("key", true, true),
                    )
                },
                || {
                    both(
                        parallel,
                        || table.codes("scope_kind", &SCOPE_KIND_NAMES),
                        || table.scope_id_columns(),
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
                                table.optional_text("supersedes", true),
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
    let (ids, keys, kinds, scope_ids) = (ids?, keys?, kinds?, scope_ids?);
    let (statuses, authorities) = (statuses?, authorities?);
    let (valid_from, valid_until) = (times.0?, times.1?);
    let (supersedes, versions, observed_at) = (rest.0?, rest.1?, rest.2?);
    rest.3?;
    let scopes = table.scopes(&kinds, &scope_ids)?;
    drop(scope_ids);

    let mut candidates = CandidateSet::with_capacity(table.rows());
    let mut supersedes_values = supersedes.iter();
    let columns = ids
        .iter()
        .zip(keys.iter())
        .zip(scopes)
        .zip(statuses.iter().zip(authorities.iter()))
        .zip(valid_from.iter().zip(valid_until.iter()))
        .zip(versions.iter().zip(observed_at.iter()));
    for (((((id, key), scope), (&status, &authority)), (&from, &until)), (&version, &observed)) in
        columns
    {
        candidates.push(Record {
            id: id.unwrap_or(""),
            key: key.unwrap_or(""),
            scope,
            status: status_of(status),
            authority: authority_of(authority),
            version,
            valid_from: from.unwrap_or(0),
            valid_until: until,
            observed_at: observed,
            supersedes: supersedes_values.next().flatten(),
        });
    }
    if let Some((earlier, row)) = candidates.first_duplicate_id() {
        let id = candidates.ids().get(row).copied().unwrap_or("");
        let mut error = table.fail("id", &format!("repeats the id of row {earlier}"), Some(row));
        error.record_id = Some(id.to_owned());
        return Err(error);
    }
    Ok(candidates)
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
    let scopes = table.scopes(&kinds, &scope_ids)?;
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
