//! The readers on small tables built in Rust: what they read, and the kind,
//! column and row of each rule they enforce.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    TimestampNanosecondArray,
};
use arrow_schema::{Field, Schema};

use super::{read_contexts, read_records, read_tombstones, Table};
use crate::error::{Error, ErrorKind};
use crate::model::{Authority, ScopeKind, Status};

/// A table's columns, by name, in order.
type Columns = Vec<(&'static str, ArrayRef)>;
/// An error's kind, column and row.
type Expected = (ErrorKind, &'static str, Option<usize>);

fn strings(values: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

fn instants(values: &[Option<i64>]) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from(values.to_vec()).with_timezone("UTC"))
}

/// A batch of `columns`, in order.
fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, array)| array).collect();
    match RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays) {
        Ok(batch) => batch,
        Err(error) => panic!("bad test batch: {error}"),
    }
}

/// Three records: two of user u1 (the second supersedes the first), one scene record.
fn record_columns() -> Vec<(&'static str, ArrayRef)> {
    vec![
        ("id", strings(&[Some("m1"), Some("m2"), Some("m3")])),
        ("key", strings(&[Some("pet"), Some("pet"), Some("outfit")])),
        (
            "scope_kind",
            strings(&[Some("user"), Some("user"), Some("scene")]),
        ),
        ("user_id", strings(&[Some("u1"), Some("u1"), None])),
        ("character_id", strings(&[None, None, None])),
        ("conversation_id", strings(&[None, None, Some("k1")])),
        ("scene_id", strings(&[None, None, Some("s1")])),
        (
            "status",
            strings(&[Some("active"), Some("active"), Some("expired")]),
        ),
        (
            "authority",
            strings(&[
                Some("model-inferred"),
                Some("user-corrected"),
                Some("rule-extracted"),
            ]),
        ),
        ("valid_from", instants(&[Some(1), Some(2), Some(3)])),
        ("supersedes", strings(&[None, Some("m1"), None])),
        ("version", Arc::new(Int64Array::from(vec![1, 2, 1]))),
    ]
}

fn with(
    mut columns: Vec<(&'static str, ArrayRef)>,
    name: &'static str,
    array: Option<ArrayRef>,
) -> Vec<(&'static str, ArrayRef)> {
    columns.retain(|(column, _)| *column != name);
    if let Some(array) = array {
        columns.push((name, array));
    }
    columns
}

/// The (kind, column, row, record id) of reading `columns` as records.
fn records_error(
    columns: Vec<(&str, ArrayRef)>,
) -> (ErrorKind, String, Option<usize>, Option<String>) {
    let batches = [batch(columns)];
    let table = Table::new("records", batches[0].schema(), &batches);
    match read_records(&table) {
        Err(Error::Input(error)) => {
            assert!(
                error.message.starts_with("records: column '"),
                "{}",
                error.message
            );
            (error.kind, error.field, error.row, error.record_id)
        }
        Err(Error::Broken(broken)) => panic!("{broken}"),
        Ok(_) => panic!("the table was accepted"),
    }
}

#[test]
fn a_valid_table_reads_every_column() {
    let batches = [batch(record_columns())];
    let table = Table::new("records", batches[0].schema(), &batches);
    let store = match read_records(&table) {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(store.len(), 3);
    assert_eq!(store.id(2), Some("m3"));
    assert_eq!(
        store.kinds,
        [ScopeKind::User, ScopeKind::User, ScopeKind::Scene]
    );
    assert_eq!(
        store.statuses,
        [Status::Active, Status::Active, Status::Expired]
    );
    assert_eq!(store.authorities.get(1), Some(&Authority::UserCorrected));
    assert_eq!(store.valid_from, [1, 2, 3]);
    assert!(
        store.valid_until.is_empty(),
        "an absent optional column is no buffer"
    );
    assert_eq!(
        store.supersedes.get(1).and_then(|s| s.map(|h| h.text)),
        Some("m1")
    );
}

#[test]
fn each_rule_reports_its_kind_column_and_row() {
    let cases: Vec<(Columns, Expected)> = vec![
        (
            with(record_columns(), "status", None),
            (ErrorKind::MissingColumn, "status", None),
        ),
        (
            with(
                record_columns(),
                "status",
                Some(strings(&[Some("active"), Some("Active"), Some("active")])),
            ),
            (ErrorKind::UnknownValue, "status", Some(1)),
        ),
        (
            with(
                record_columns(),
                "key",
                Some(strings(&[Some("pet"), None, Some("x")])),
            ),
            (ErrorKind::Missing, "key", Some(1)),
        ),
        (
            with(
                record_columns(),
                "id",
                Some(strings(&[Some("m1"), Some(""), Some("m3")])),
            ),
            (ErrorKind::Empty, "id", Some(1)),
        ),
        (
            with(
                record_columns(),
                "version",
                Some(strings(&[Some("1"), Some("2"), Some("3")])),
            ),
            (ErrorKind::WrongType, "version", None),
        ),
        (
            with(
                record_columns(),
                "valid_from",
                Some(Arc::new(TimestampNanosecondArray::from(vec![1, 2, 3]))),
            ),
            (ErrorKind::NaiveTime, "valid_from", None),
        ),
        (
            with(
                record_columns(),
                "scene_id",
                Some(strings(&[None, None, None])),
            ),
            (ErrorKind::Missing, "scene_id", Some(2)),
        ),
        (
            with(
                record_columns(),
                "user_id",
                Some(strings(&[Some("u1"), Some(""), None])),
            ),
            (ErrorKind::Empty, "user_id", Some(1)),
        ),
    ];
    for (columns, (kind, column, row)) in cases {
        let (got_kind, got_column, got_row, _) = records_error(columns);
        assert_eq!(
            (got_kind, got_column.as_str(), got_row),
            (kind, column, row)
        );
    }
}

#[test]
fn a_repeated_id_names_the_record_and_the_later_row() {
    let columns = with(
        record_columns(),
        "id",
        Some(strings(&[Some("m1"), Some("m2"), Some("m1")])),
    );
    assert_eq!(
        records_error(columns),
        (
            ErrorKind::DuplicateId,
            "id".to_owned(),
            Some(2),
            Some("m1".to_owned())
        )
    );
}

#[test]
fn column_rules_come_before_scope_rules_before_unique_ids() {
    // A repeated id, a missing scope id and a bad status: the status is reported.
    let columns = with(
        with(
            with(
                record_columns(),
                "id",
                Some(strings(&[Some("m1"), Some("m1"), Some("m3")])),
            ),
            "scene_id",
            Some(strings(&[None, None, None])),
        ),
        "status",
        Some(strings(&[Some("gone"), Some("active"), Some("active")])),
    );
    assert_eq!(records_error(columns).0, ErrorKind::UnknownValue);
}

#[test]
fn contexts_and_tombstones_are_read_in_row_order() {
    let contexts = [batch(vec![
        ("context_id", strings(&[Some("a"), Some("b")])),
        ("now", instants(&[Some(10), Some(20)])),
        ("user_id", strings(&[Some("u1"), Some("u2")])),
        ("character_id", strings(&[Some("c"), Some("c")])),
        ("conversation_id", strings(&[Some("k1"), Some("k2")])),
        ("scene_id", strings(&[None, Some("s1")])),
    ])];
    let table = Table::new("contexts", contexts[0].schema(), &contexts);
    let (ids, read) = match read_contexts(&table) {
        Ok(read) => read,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(
        read.get(1).map(|c| (c.now, c.scene_id)),
        Some((20, Some("s1")))
    );

    let tombstones = [batch(vec![
        ("key", strings(&[Some("pet")])),
        ("scope_kind", strings(&[Some("character")])),
        ("user_id", strings(&[Some("u1")])),
        ("character_id", strings(&[None])),
        ("conversation_id", strings(&[None])),
        ("scene_id", strings(&[None])),
        ("blocks_sources_before", instants(&[Some(5)])),
    ])];
    let table = Table::new("tombstones", tombstones[0].schema(), &tombstones);
    match read_tombstones(&table) {
        Err(error) => assert_eq!(
            (error.kind, error.field.as_str(), error.row),
            (ErrorKind::Missing, "character_id", Some(0))
        ),
        Ok(_) => panic!("a character tombstone without a character id was accepted"),
    }
}
