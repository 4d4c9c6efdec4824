//! The readers on small tables built in Rust: what they read, and the kind,
//! column and row of each rule they enforce.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    TimestampNanosecondArray,
};
use arrow_schema::{Field, Schema};

use super::{read_contexts, read_records, read_tombstones, Table};

mod layouts;
use crate::batch::intern::NO_ROW;
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
    let kinds: Vec<ScopeKind> = store.slots.iter().map(|slot| slot.kind).collect();
    assert_eq!(kinds, [ScopeKind::User, ScopeKind::User, ScopeKind::Scene]);
    assert!(store.slots.iter().all(|slot| !slot.owned));
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
    // Row 1 supersedes "m1", the id of row 0; the others name none.
    assert_eq!(store.targets, [NO_ROW, 0, NO_ROW]);
}

#[test]
fn each_rule_reports_its_kind_column_and_row() {
    let cases: Vec<(Columns, Expected)> = vec![
        (
            with(record_columns(), "authority", None),
            (ErrorKind::MissingColumn, "authority", None),
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

/// `rows` user records of distinct ids, but row 1 repeats row 0's id; the
/// last row is a scene record, with its scene id or without.
fn a_repeated_id_and_a_scene(rows: usize, scene_id: Option<&str>) -> Columns {
    let last = rows - 1;
    let per_row = |value: &dyn Fn(usize) -> Option<String>| -> ArrayRef {
        Arc::new((0..rows).map(value).collect::<StringArray>())
    };
    let on_last = |value: Option<&str>| -> ArrayRef {
        let mut values = vec![None; rows];
        values[last] = value;
        Arc::new(StringArray::from(values))
    };
    vec![
        (
            "id",
            per_row(&|row| Some(format!("m{}", if row == 1 { 0 } else { row }))),
        ),
        ("key", per_row(&|_| Some("pet".to_owned()))),
        (
            "scope_kind",
            per_row(&|row| Some(if row == last { "scene" } else { "user" }.to_owned())),
        ),
        ("user_id", per_row(&|_| Some("u1".to_owned()))),
        ("character_id", per_row(&|_| None)),
        ("conversation_id", on_last(Some("k1"))),
        ("scene_id", on_last(scene_id)),
        ("status", per_row(&|_| Some("active".to_owned()))),
        ("authority", per_row(&|_| Some("user-corrected".to_owned()))),
        (
            "valid_from",
            Arc::new(TimestampMicrosecondArray::from(vec![1_i64; rows]).with_timezone("UTC")),
        ),
        ("supersedes", per_row(&|_| None)),
        ("version", Arc::new(Int64Array::from(vec![1_i64; rows]))),
    ]
}

#[test]
fn a_bad_scope_is_reported_before_a_repeated_id_below_and_above_the_parallel_size() {
    // From `PARALLEL_FROM` rows on, the scope index and the id index are built at once.
    for rows in [4, super::PARALLEL_FROM + 7] {
        let (kind, column, row, _) = records_error(a_repeated_id_and_a_scene(rows, None));
        assert_eq!(
            (kind, column.as_str(), row),
            (ErrorKind::Missing, "scene_id", Some(rows - 1))
        );
        let (kind, column, row, id) = records_error(a_repeated_id_and_a_scene(rows, Some("s1")));
        assert_eq!(
            (kind, column.as_str(), row, id.as_deref()),
            (ErrorKind::DuplicateId, "id", Some(1), Some("m0"))
        );
    }
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

#[test]
fn a_user_id_on_a_conversation_or_scene_row_is_its_owner() {
    let owned = with(
        record_columns(),
        "user_id",
        Some(strings(&[Some("u1"), Some("u1"), Some("u7")])),
    );
    let batches = [batch(owned)];
    let table = Table::new("records", batches[0].schema(), &batches);
    let store = match read_records(&table) {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(store.slots.get(2).map(|slot| slot.owned), Some(true));
    let owned_scene = crate::resolve::ScopeRef::scene("k1", "s1").owned_by("u7");
    assert!(store.scope_number(&owned_scene).is_some());
    assert!(store
        .scope_number(&crate::resolve::ScopeRef::scene("k1", "s1"))
        .is_none());
    // An empty owner is an error, not "unowned".
    let empty_owner = with(
        record_columns(),
        "user_id",
        Some(strings(&[Some("u1"), Some("u1"), Some("")])),
    );
    let (kind, column, row, _) = records_error(empty_owner);
    assert_eq!(
        (kind, column.as_str(), row),
        (ErrorKind::Empty, "user_id", Some(2))
    );
}

#[test]
fn columns_of_the_null_type_read_as_all_null() {
    let null_column = || -> ArrayRef { Arc::new(arrow_array::NullArray::new(3)) };
    let columns = with(
        with(record_columns(), "character_id", Some(null_column())),
        "valid_until",
        Some(null_column()),
    );
    let batches = [batch(columns)];
    let table = Table::new("records", batches[0].schema(), &batches);
    assert!(read_records(&table).is_ok());
    // ...but a required column of nulls is a missing value at its first row.
    let (kind, column, row, _) =
        records_error(with(record_columns(), "version", Some(null_column())));
    assert_eq!(
        (kind, column.as_str(), row),
        (ErrorKind::Missing, "version", Some(0))
    );
}

fn tombstone_columns(bound: ArrayRef, forgotten: Option<ArrayRef>) -> Columns {
    let mut columns: Columns = vec![
        ("key", strings(&[Some("pet"), Some("pet")])),
        ("scope_kind", strings(&[Some("user"), Some("conversation")])),
        ("user_id", strings(&[Some("u1"), Some("u1")])),
        ("character_id", strings(&[None, None])),
        ("conversation_id", strings(&[None, Some("k1")])),
        ("scene_id", strings(&[None, None])),
        ("blocks_sources_before", bound),
    ];
    if let Some(forgotten) = forgotten {
        columns.push(("forgotten_at", forgotten));
    }
    columns
}

fn read_tombstone_table(columns: Columns) -> Result<Vec<(i64, Option<String>)>, Expected> {
    let batches = [batch(columns)];
    let table = Table::new("tombstones", batches[0].schema(), &batches);
    match read_tombstones(&table) {
        Ok(read) => Ok(read
            .tombstones()
            .iter()
            .map(|t| (t.blocks_sources_before, t.scope.owner.map(str::to_owned)))
            .collect()),
        Err(error) => Err((
            error.kind,
            match error.field.as_str() {
                "blocks_sources_before" => "blocks_sources_before",
                "forgotten_at" => "forgotten_at",
                _ => "other",
            },
            error.row,
        )),
    }
}

#[test]
fn tombstone_instants_default_to_each_other_and_must_agree() {
    // A missing bound is the forget's own time; a conversation row's user_id is its owner.
    let read = read_tombstone_table(tombstone_columns(
        instants(&[Some(5), None]),
        Some(instants(&[Some(9), Some(7)])),
    ));
    assert_eq!(read, Ok(vec![(5, None), (7, Some("u1".to_owned()))]));
    assert_eq!(
        read_tombstone_table(tombstone_columns(
            instants(&[Some(5), Some(8)]),
            Some(instants(&[Some(9), Some(7)])),
        )),
        Err((ErrorKind::Inconsistent, "blocks_sources_before", Some(1)))
    );
    assert_eq!(
        read_tombstone_table(tombstone_columns(
            instants(&[Some(5), None]),
            Some(instants(&[Some(9), None])),
        )),
        Err((ErrorKind::Missing, "blocks_sources_before", Some(1)))
    );
    let no_times = tombstone_columns(instants(&[Some(5), None]), None)
        .into_iter()
        .filter(|(name, _)| *name != "blocks_sources_before")
        .collect();
    assert_eq!(
        read_tombstone_table(no_times),
        Err((ErrorKind::MissingColumn, "blocks_sources_before", None))
    );
}

#[test]
fn a_repeated_context_id_is_refused() {
    let contexts = [batch(vec![
        ("context_id", strings(&[Some("a"), Some("b"), Some("a")])),
        ("now", instants(&[Some(1), Some(2), Some(3)])),
        ("user_id", strings(&[Some("u"), Some("u"), Some("u")])),
        ("character_id", strings(&[Some("c"), Some("c"), Some("c")])),
        (
            "conversation_id",
            strings(&[Some("k"), Some("k"), Some("k")]),
        ),
    ])];
    let table = Table::new("contexts", contexts[0].schema(), &contexts);
    match read_contexts(&table) {
        Err(error) => assert_eq!(
            (error.kind, error.field.as_str(), error.row),
            (ErrorKind::DuplicateId, "context_id", Some(2))
        ),
        Ok(_) => panic!("a repeated context id was accepted"),
    }
}

#[test]
fn absent_status_and_version_columns_take_the_record_defaults() {
    let columns = with(with(record_columns(), "status", None), "version", None);
    let batches = [batch(columns)];
    let table = Table::new("records", batches[0].schema(), &batches);
    let store = match read_records(&table) {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(store.statuses, [crate::model::DEFAULT_STATUS; 3]);
    assert_eq!(store.versions, [crate::model::DEFAULT_VERSION; 3]);
}

#[test]
fn an_id_the_kind_does_not_use_is_inconsistent() {
    // A character id on a user row would mean a character scope: refused, not ignored.
    let columns = with(
        record_columns(),
        "character_id",
        Some(strings(&[None, Some("c1"), None])),
    );
    let (kind, column, row, _) = records_error(columns);
    assert_eq!(
        (kind, column.as_str(), row),
        (ErrorKind::Inconsistent, "character_id", Some(1))
    );
}

#[test]
fn context_ids_may_be_null_but_a_scene_needs_its_conversation() {
    let columns = |conversations: &[Option<&str>]| {
        vec![
            ("context_id", strings(&[Some("a"), Some("b")])),
            ("now", instants(&[Some(1), Some(2)])),
            ("user_id", strings(&[Some("u"), Some("u")])),
            ("character_id", strings(&[None, Some("c")])),
            ("conversation_id", strings(conversations)),
            ("scene_id", strings(&[None, Some("s")])),
        ]
    };
    let batches = [batch(columns(&[None, Some("k")]))];
    let table = Table::new("contexts", batches[0].schema(), &batches);
    match read_contexts(&table) {
        Ok((_, read)) => assert_eq!(
            read.iter()
                .map(|c| (c.character_id, c.conversation_id))
                .collect::<Vec<_>>(),
            [(None, None), (Some("c"), Some("k"))]
        ),
        Err(error) => panic!("{error}"),
    }
    let batches = [batch(columns(&[None, None]))];
    let table = Table::new("contexts", batches[0].schema(), &batches);
    match read_contexts(&table) {
        Err(error) => assert_eq!(
            (error.kind, error.field.as_str(), error.row),
            (ErrorKind::Inconsistent, "scene_id", Some(1))
        ),
        Ok(_) => panic!("a scene without a conversation was accepted"),
    }
    // The columns must still exist: a table without them is likelier a mistake.
    let batches = [batch(
        columns(&[None, None])
            .into_iter()
            .filter(|(name, _)| *name != "character_id")
            .collect(),
    )];
    let table = Table::new("contexts", batches[0].schema(), &batches);
    match read_contexts(&table) {
        Err(error) => assert_eq!(
            (error.kind, error.field.as_str()),
            (ErrorKind::MissingColumn, "character_id")
        ),
        Ok(_) => panic!("a contexts table without character_id was accepted"),
    }
}
