use std::fmt::Write as _;

use super::*;
use crate::model::ScopeKind;

#[test]
fn floats_read_as_pythons_repr() {
    // Each pair: the number, and what Python 3.11 prints for it (repr and JSON).
    let cases: [(f64, &str); 20] = [
        (0.5, "0.5"),
        (1.0, "1.0"),
        (0.1, "0.1"),
        (1e-05, "1e-05"),
        (0.0001, "0.0001"),
        (0.000_123_45, "0.00012345"),
        (1.5e-05, "1.5e-05"),
        (5e-324, "5e-324"),
        (2.225_073_858_507_201_4e-308, "2.2250738585072014e-308"),
        (1e16, "1e+16"),
        (123_456_789_012_345_680.0, "1.2345678901234568e+17"),
        (1_234_567_890_123_456.0, "1234567890123456.0"),
        (1e15, "1000000000000000.0"),
        (f64::MAX, "1.7976931348623157e+308"),
        (0.300_000_000_000_000_04, "0.30000000000000004"),
        (-2.5, "-2.5"),
        (100.0, "100.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (f64::NEG_INFINITY, "-Infinity"),
    ];
    for (number, python) in cases {
        assert_eq!(python_float_repr(number), python, "{number:e}");
    }
    assert_eq!(python_float_repr(f64::NAN), "NaN");
}

#[test]
fn a_row_reads_as_pythons_canonical_json_and_hash() {
    let ids = ["a", "b\u{8}\u{c}\r"];
    let row = RowFields {
        id: "m\"1",
        key: "pet\\name",
        value: "Tab\tNew\nline\u{1}\u{1f}\u{7f} é 😀 \u{2028}",
        scope: ScopeRef {
            kind: ScopeKind::Scene,
            first: "k:1",
            second: "s1",
            owner: Some("u1"),
        },
        status: Status::Active,
        authority: Authority::ModelInferred,
        confidence: 0.6,
        valid_from: 1_782_864_000_000_000,
        valid_until: None,
        source_message_ids: &ids,
        supersedes: None,
        version: 3,
        observed_at: Some(-5),
    };
    // json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode(row) in Python 3.11.
    let python = "{\"id\":\"m\\\"1\",\"key\":\"pet\\\\name\",\
        \"value\":\"Tab\\tNew\\nline\\u0001\\u001f\u{7f} é 😀 \u{2028}\",\
        \"scope_kind\":\"scene\",\"user_id\":\"u1\",\"character_id\":null,\
        \"conversation_id\":\"k:1\",\"scene_id\":\"s1\",\"status\":\"active\",\
        \"authority\":\"model-inferred\",\"confidence\":0.6,\"valid_from\":1782864000000000,\
        \"valid_until\":null,\"source_message_ids\":[\"a\",\"b\\b\\f\\r\"],\
        \"supersedes\":null,\"version\":3,\"observed_at\":-5}";
    assert_eq!(canonical_json(&row), python);
    let hex = content_hash(&row)
        .iter()
        .fold(String::new(), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        });
    assert_eq!(
        hex,
        "128c96d35415b9f045d32a5a99815eaa1f880c6b2376a4a92078701c0352523f"
    );
    assert_eq!(source_ids_json(&ids), "[\"a\", \"b\\b\\f\\r\"]");
    assert_eq!(source_ids_json(&[]), "[]");
}

#[test]
fn each_kind_fills_its_own_columns() {
    let character = ScopeRef::character("u1", "c1");
    let columns = IdColumn::ALL.map(|column| character.column(column));
    assert_eq!(columns, [Some("u1"), Some("c1"), None, None]);
    let unowned = ScopeRef {
        kind: ScopeKind::Conversation,
        first: "k1",
        second: "",
        owner: None,
    };
    let columns = IdColumn::ALL.map(|column| unowned.column(column));
    assert_eq!(columns, [None, None, Some("k1"), None]);
}
