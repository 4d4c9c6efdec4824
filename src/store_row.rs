//! The row `MemoryStore` writes for a record (`docs/store.md`): its
//! canonical JSON, the SHA-256 of it (the content hash a retry is judged by)
//! and the JSON text of its message ids.
//!
//! A store file may be written by either backend and read by the other, so
//! every byte here is what the pure-Python storage produces: the row fields
//! in order through `json.JSONEncoder(ensure_ascii=False, separators=(",",
//! ":"))` for the hash, and `json.dumps(ids, ensure_ascii=False)` for the
//! ids. That means Python's string escapes (only `"`, `\` and the control
//! characters below U+0020; everything else as UTF-8) and Python's `repr`
//! of a float (shortest round-trip digits, an exponent below 1e-4 and from
//! 1e16 on, `.0` on whole numbers).

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::model::{Authority, IdColumn, Status};
use crate::resolve::ScopeRef;

/// The fields of a record's row, borrowed.
#[derive(Clone, Debug)]
pub struct RowFields<'a> {
    pub id: &'a str,
    pub key: &'a str,
    pub value: &'a str,
    pub scope: ScopeRef<'a>,
    pub status: Status,
    pub authority: Authority,
    pub confidence: f64,
    pub valid_from: i64,
    pub valid_until: Option<i64>,
    pub source_message_ids: &'a [&'a str],
    pub supersedes: Option<&'a str>,
    pub version: i64,
    pub observed_at: Option<i64>,
}

/// The row's canonical JSON: its fields in row order, compact.
#[must_use]
pub fn canonical_json(row: &RowFields<'_>) -> String {
    let mut out = String::with_capacity(256 + row.value.len());
    out.push('{');
    field(&mut out, "id", false);
    json_string(&mut out, row.id);
    field(&mut out, "key", true);
    json_string(&mut out, row.key);
    field(&mut out, "value", true);
    json_string(&mut out, row.value);
    field(&mut out, "scope_kind", true);
    json_string(&mut out, row.scope.kind.name());
    for column in IdColumn::ALL {
        field(&mut out, column.name(), true);
        optional_string(&mut out, row.scope.column(column));
    }
    field(&mut out, "status", true);
    json_string(&mut out, row.status.name());
    field(&mut out, "authority", true);
    json_string(&mut out, row.authority.name());
    field(&mut out, "confidence", true);
    out.push_str(&python_float_repr(row.confidence));
    field(&mut out, "valid_from", true);
    integer(&mut out, row.valid_from);
    field(&mut out, "valid_until", true);
    optional_integer(&mut out, row.valid_until);
    field(&mut out, "source_message_ids", true);
    json_list(&mut out, row.source_message_ids, ",");
    field(&mut out, "supersedes", true);
    optional_string(&mut out, row.supersedes);
    field(&mut out, "version", true);
    integer(&mut out, row.version);
    field(&mut out, "observed_at", true);
    optional_integer(&mut out, row.observed_at);
    out.push('}');
    out
}

/// The SHA-256 of the row's canonical JSON.
#[must_use]
pub fn content_hash(row: &RowFields<'_>) -> [u8; 32] {
    Sha256::digest(canonical_json(row).as_bytes()).into()
}

/// The message ids as the `source_message_ids` column holds them:
/// `json.dumps(list(ids), ensure_ascii=False)`.
#[must_use]
pub fn source_ids_json(ids: &[&str]) -> String {
    let mut out = String::with_capacity(2 + ids.iter().map(|id| id.len() + 4).sum::<usize>());
    json_list(&mut out, ids, ", ");
    out
}

fn field(out: &mut String, name: &str, comma: bool) {
    if comma {
        out.push(',');
    }
    json_string(out, name);
    out.push(':');
}

fn optional_string(out: &mut String, text: Option<&str>) {
    match text {
        Some(text) => json_string(out, text),
        None => out.push_str("null"),
    }
}

fn integer(out: &mut String, number: i64) {
    // Writing to a String cannot fail.
    let _ = write!(out, "{number}");
}

fn optional_integer(out: &mut String, number: Option<i64>) {
    match number {
        Some(number) => integer(out, number),
        None => out.push_str("null"),
    }
}

fn json_list(out: &mut String, items: &[&str], separator: &str) {
    out.push('[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push_str(separator);
        }
        json_string(out, item);
    }
    out.push(']');
}

/// `text` as Python's JSON encoder writes a `str` with `ensure_ascii=False`.
fn json_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            control if u32::from(control) < 0x20 => {
                let code = u32::from(control) as usize;
                out.push_str("\\u00");
                for nibble in [code >> 4, code & 0xf] {
                    out.push(char::from(HEX.get(nibble).copied().unwrap_or(b'0')));
                }
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

/// Python's `repr` of a float, as its JSON encoder writes it (`NaN`,
/// `Infinity` and `-Infinity` for the values JSON has no number for).
#[must_use]
pub fn python_float_repr(number: f64) -> String {
    if number.is_nan() {
        return "NaN".to_owned();
    }
    if number.is_infinite() {
        return if number > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .to_owned();
    }
    if number == 0.0 {
        return if number.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_owned();
    }
    // Rust's `{:e}` gives the shortest digits that round-trip, as Python's
    // repr does: "d.ddde-N". Python places them by the decimal exponent.
    let scientific = format!("{:e}", number.abs());
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if number < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exponent) {
        let point = exponent + 1; // digits before the decimal point
        let text = if point <= 0 {
            let zeros = "0".repeat(usize::try_from(-point).unwrap_or(0));
            format!("0.{zeros}{digits}")
        } else {
            let point = usize::try_from(point).unwrap_or(0);
            if digits.len() <= point {
                let zeros = "0".repeat(point - digits.len());
                format!("{digits}{zeros}.0")
            } else {
                let (whole, fraction) = digits.split_at(point);
                format!("{whole}.{fraction}")
            }
        };
        format!("{sign}{text}")
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{sign}{first}{fraction}e{exponent_sign}{:02}",
            exponent.abs()
        )
    }
}

#[cfg(test)]
mod tests;
