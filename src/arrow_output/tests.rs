//! The output batches, built from Arrow input as `resolve_batch` builds them.

use std::error::Error as StdError;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, TimestampMicrosecondArray};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};

use super::stream::Decisions;
use crate::arrow_input::{read_contexts, read_records, read_values, Table};

fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, Box<dyn StdError>> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, array)| array).collect();
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

fn texts(values: Vec<Option<String>>) -> ArrayRef {
    Arc::new(StringArray::from(values))
}

fn instants(values: Vec<i64>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from(values).with_timezone("UTC"))
}

#[test]
fn text_columns_hold_no_more_than_their_text() -> Result<(), Box<dyn StdError>> {
    // Forty winners with 5 kB values and 300-byte keys, one context: a
    // builder sized by a guess grows by doubling, and its slack is memory
    // nobody counting the batch's bytes sees.
    let rows = 40;
    let each = |text: &dyn Fn(usize) -> String| (0..rows).map(|n| Some(text(n))).collect();
    let records = batch(vec![
        ("id", texts(each(&|n| format!("m{n}")))),
        ("key", texts(each(&|n| format!("{n:0>300}")))),
        ("scope_kind", texts(each(&|_| "user".to_owned()))),
        ("user_id", texts(each(&|_| "u1".to_owned()))),
        ("character_id", texts(vec![None; rows])),
        ("conversation_id", texts(vec![None; rows])),
        ("scene_id", texts(vec![None; rows])),
        ("status", texts(each(&|_| "active".to_owned()))),
        ("authority", texts(each(&|_| "user-confirmed".to_owned()))),
        ("valid_from", instants(vec![1; rows])),
        ("version", Arc::new(Int64Array::from(vec![1; rows]))),
        ("value", texts(each(&|n| format!("{n:x>5000}")))),
        ("confidence", Arc::new(Float64Array::from(vec![0.5; rows]))),
    ])?;
    let contexts = batch(vec![
        ("context_id", texts(vec![Some("c1".to_owned())])),
        ("now", instants(vec![10])),
        ("user_id", texts(vec![Some("u1".to_owned())])),
        ("character_id", texts(vec![Some("x1".to_owned())])),
        ("conversation_id", texts(vec![Some("k1".to_owned())])),
    ])?;
    let record_batches = [records];
    let record_table = Table::new("records", record_batches[0].schema(), &record_batches);
    let store = read_records(&record_table)?;
    let values = read_values(&record_table)?;
    let context_batches = [contexts];
    let context_table = Table::new("contexts", context_batches[0].schema(), &context_batches);
    let (context_ids, targets) = read_contexts(&context_table)?;
    let index = store.index_tombstones(&[]);
    let decisions = Decisions {
        store: &store,
        context_ids: &context_ids,
        contexts: &targets,
        tombstones: &index,
        include_excluded: false,
        values: Some(&values),
    };
    let output = decisions.whole()?;
    let [batch] = output.as_slice() else {
        return Err("one batch expected".into());
    };
    assert_eq!(batch.num_rows(), rows);
    for name in ["context_id", "record_id", "key", "value"] {
        let column = batch
            .column_by_name(name)
            .and_then(|column| column.as_string_opt::<i32>())
            .ok_or(name)?;
        let text = column.values();
        // Arrow rounds an allocation up to 64 bytes, and no more.
        assert!(
            text.capacity() < text.len() + 64,
            "{name}: {} bytes of capacity for {} of text",
            text.capacity(),
            text.len()
        );
        assert!(column.null_count() == 0 || name == "key");
    }
    Ok(())
}
