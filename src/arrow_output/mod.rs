//! The batch result as Arrow record batches (`docs/spec.md` §4.2): one row
//! per (context, candidate) decision, and with values, each winner's key,
//! value and certainty.

pub mod stream;

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, DictionaryArray, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::arrow_input::Values;
use crate::batch::{DecisionChunk, Store};
use crate::error::Broken;
use crate::model::{certainty, decision_code, Certainty, Vocabulary, DECISION_NAMES};

/// The type of a column of codes over a vocabulary: `dictionary<int8, string>`.
#[must_use]
pub fn dictionary() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8))
}

/// The schema of the result: `context_id`, `record_id`, `decision`, and with
/// values `key`, `value`, `certainty` (null on the rows that do not win).
#[must_use]
pub fn output_schema(with_values: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("context_id", DataType::Utf8, false),
        Field::new("record_id", DataType::Utf8, false),
        Field::new("decision", dictionary(), false),
    ];
    if with_values {
        fields.push(Field::new("key", DataType::Utf8, true));
        fields.push(Field::new("value", DataType::Utf8, true));
        fields.push(Field::new("certainty", dictionary(), true));
    }
    Arc::new(Schema::new(fields))
}

/// A dictionary column of codes over `names` (null where `codes` has none).
///
/// # Errors
/// [`Broken`] when a code is outside `names` (a bug).
pub fn dictionary_column(codes: Vec<Option<i8>>, names: &[&str]) -> Result<ArrayRef, Broken> {
    let column = DictionaryArray::<Int8Type>::try_new(
        Int8Array::from(codes),
        Arc::new(StringArray::from(names.to_vec())),
    )
    .map_err(|_| Broken("a dictionary column is invalid"))?;
    Ok(Arc::new(column))
}

/// One batch of the result: a chunk's rows, in order.
///
/// # Errors
/// [`Broken`] when the chunk names a context or a row that does not exist.
pub fn decision_batch(
    schema: &SchemaRef,
    context_ids: &[&str],
    store: &Store<'_>,
    chunk: &DecisionChunk,
    values: Option<&Values<'_>>,
) -> Result<RecordBatch, Broken> {
    const OUTSIDE: Broken = Broken("a decision names a row outside the store");
    let rows = chunk.rows.len();
    let id_bytes: usize = chunk
        .rows
        .iter()
        .map(|&row| store.id(row).map_or(0, str::len))
        .sum();
    let contexts = context_ids
        .get(chunk.contexts.clone())
        .ok_or(Broken("a chunk names contexts outside the input"))?;
    let context_bytes: usize = contexts
        .iter()
        .zip(chunk.per_context())
        .map(|(id, (decided, _))| id.len() * decided.len())
        .sum();
    let mut context_column = StringBuilder::with_capacity(rows, context_bytes);
    let mut record_column = StringBuilder::with_capacity(rows, id_bytes);
    for (context_id, (decided, _)) in contexts.iter().zip(chunk.per_context()) {
        for &row in decided {
            context_column.append_value(context_id);
            record_column.append_value(store.id(row).ok_or(OUTSIDE)?);
        }
    }
    let codes = chunk
        .outcomes
        .iter()
        .map(|&outcome| i8::try_from(decision_code(outcome)).ok())
        .collect::<Option<Vec<i8>>>()
        .ok_or(Broken("a decision code does not fit in int8"))?;
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(context_column.finish()),
        Arc::new(record_column.finish()),
        dictionary_column(codes.into_iter().map(Some).collect(), &DECISION_NAMES)?,
    ];
    if let Some(values) = values {
        // Sized exactly, as the id columns are: a builder that grows doubles,
        // and a caller counting the batch's bytes would not see that slack.
        let (mut key_bytes, mut text_bytes) = (0_usize, 0_usize);
        for (&row, outcome) in chunk.rows.iter().zip(&chunk.outcomes) {
            if outcome.is_none() {
                let (key, value, _) = values.of(row as usize).ok_or(OUTSIDE)?;
                key_bytes += key.len();
                text_bytes += value.len();
            }
        }
        let mut keys = StringBuilder::with_capacity(rows, key_bytes);
        let mut texts = StringBuilder::with_capacity(rows, text_bytes);
        let mut certainties = Vec::with_capacity(rows);
        for (&row, outcome) in chunk.rows.iter().zip(&chunk.outcomes) {
            if outcome.is_some() {
                keys.append_null();
                texts.append_null();
                certainties.push(None);
                continue;
            }
            // Only a winner's text is read.
            let (key, value, confidence) = values.of(row as usize).ok_or(OUTSIDE)?;
            let authority = *store.authorities.get(row as usize).ok_or(OUTSIDE)?;
            keys.append_value(key);
            texts.append_value(value);
            let code = certainty(authority, confidence).code();
            certainties.push(Some(i8::try_from(code).map_err(|_| OUTSIDE)?));
        }
        columns.push(Arc::new(keys.finish()));
        columns.push(Arc::new(texts.finish()));
        columns.push(dictionary_column(certainties, Certainty::NAMES)?);
    }
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|_| Broken("an output batch does not match its schema"))
}

#[cfg(test)]
mod tests;
