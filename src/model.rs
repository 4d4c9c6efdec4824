//! The shared vocabulary: scope kinds, statuses, authorities and exclusion
//! reasons as small integer codes, and the canonical scope identifier.
//!
//! The code tables are the single Rust-side definition; the Python package
//! defines the same tables in `_types.py` and a test asserts they match the
//! ones this module exports through the binding.

/// Version of the resolution contract (`SPEC.md`) this crate implements.
/// Written into every trace, so it must be identical in both implementations.
pub const RESOLVER_VERSION: &str = "memresolve-spec-1";

/// The four kinds of scope, in code order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ScopeKind {
    User = 0,
    Character = 1,
    Conversation = 2,
    Scene = 3,
}

/// A record's stored status, in code order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Status {
    Active = 0,
    Superseded = 1,
    Expired = 2,
    Forgotten = 3,
}

/// Who vouches for a record. The code is the precedence rank: higher wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Authority {
    ModelInferred = 0,
    RuleExtracted = 1,
    UserConfirmed = 2,
    UserCorrected = 3,
}

/// Why a candidate was excluded, in pipeline order: the first stage that
/// excludes a candidate names its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Reason {
    Scope = 0,
    StatusOrTime = 1,
    Forgotten = 2,
    Superseded = 3,
    LowerPrecedence = 4,
}

/// The string values of each enum, indexed by code. These are the tutorial's
/// vocabulary and the values users write in JSON and Arrow columns.
pub const SCOPE_KIND_NAMES: [&str; 4] = ["user", "character", "conversation", "scene"];
pub const STATUS_NAMES: [&str; 4] = ["active", "superseded", "expired", "forgotten"];
pub const AUTHORITY_NAMES: [&str; 4] = [
    "model-inferred",
    "rule-extracted",
    "user-confirmed",
    "user-corrected",
];
pub const REASON_NAMES: [&str; 5] = [
    "scope",
    "status-or-time",
    "forgotten",
    "superseded",
    "lower-precedence",
];

impl ScopeKind {
    /// Every kind, in code order.
    pub const ALL: [ScopeKind; 4] = [
        ScopeKind::User,
        ScopeKind::Character,
        ScopeKind::Conversation,
        ScopeKind::Scene,
    ];

    /// The kind's name, as used in the scope identifier.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ScopeKind::User => "user",
            ScopeKind::Character => "character",
            ScopeKind::Conversation => "conversation",
            ScopeKind::Scene => "scene",
        }
    }
}

/// Appends `field` to `out` with `%` escaped as `%25`, then `:` as `%3A`.
///
/// Escaping `%` first is what makes the encoding reversible: after it, every
/// `%` in the output starts an escape, so no field can forge a separator.
fn push_escaped(out: &mut String, field: &str) {
    for ch in field.chars() {
        match ch {
            '%' => out.push_str("%25"),
            ':' => out.push_str("%3A"),
            other => out.push(other),
        }
    }
}

/// The canonical, injective identifier of a scope: the kind, then each field
/// escaped, joined by `:` (`SPEC.md` §1). Ids without `:` or `%` give the
/// tutorial's strings, e.g. `character:u1:c1`.
#[must_use]
pub fn scope_id(kind: ScopeKind, fields: &[&str]) -> String {
    let capacity = kind.name().len() + fields.iter().map(|f| f.len() + 1).sum::<usize>();
    let mut out = String::with_capacity(capacity);
    out.push_str(kind.name());
    for field in fields {
        out.push(':');
        push_escaped(&mut out, field);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ids_give_the_tutorials_strings() {
        assert_eq!(scope_id(ScopeKind::User, &["u1"]), "user:u1");
        assert_eq!(
            scope_id(ScopeKind::Character, &["u1", "c1"]),
            "character:u1:c1"
        );
        assert_eq!(scope_id(ScopeKind::Conversation, &["k"]), "conversation:k");
        assert_eq!(scope_id(ScopeKind::Scene, &["k", "s"]), "scene:k:s");
    }

    #[test]
    fn the_tutorials_colliding_scopes_get_distinct_ids() {
        let left = scope_id(ScopeKind::Character, &["a:b", "c"]);
        let right = scope_id(ScopeKind::Character, &["a", "b:c"]);
        assert_eq!(left, "character:a%3Ab:c");
        assert_eq!(right, "character:a:b%3Ac");
        assert_ne!(left, right);
    }

    #[test]
    fn percent_is_escaped_before_colon() {
        // "%3A" typed by a user must not look like an escaped ":".
        assert_eq!(scope_id(ScopeKind::User, &["%3A"]), "user:%253A");
        assert_ne!(
            scope_id(ScopeKind::User, &["%3A"]),
            scope_id(ScopeKind::User, &[":"])
        );
    }

    #[test]
    fn non_bmp_characters_pass_through() {
        assert_eq!(scope_id(ScopeKind::User, &["𝔘:1"]), "user:𝔘%3A1");
    }

    #[test]
    fn code_tables_follow_the_enum_discriminants() {
        assert_eq!(SCOPE_KIND_NAMES[ScopeKind::Scene as usize], "scene");
        assert_eq!(STATUS_NAMES[Status::Forgotten as usize], "forgotten");
        assert_eq!(
            AUTHORITY_NAMES[Authority::UserCorrected as usize],
            "user-corrected"
        );
        assert_eq!(
            REASON_NAMES[Reason::LowerPrecedence as usize],
            "lower-precedence"
        );
        assert!(Authority::UserCorrected > Authority::UserConfirmed);
        assert!(Authority::RuleExtracted > Authority::ModelInferred);
    }
}
