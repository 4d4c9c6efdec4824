//! The shared vocabulary: scope kinds, the scope id columns, statuses,
//! authorities, exclusion reasons and batch decisions as small integer codes,
//! and the canonical scope identifier.
//!
//! Each table is defined here once, for the whole crate: names, codes and the
//! conversions between them (`name`, `from_code`, `FromStr`). Every other
//! module derives from these tables. The Python package defines the same
//! tables in `_types.py`; a test compares them, entry by entry, with the ones
//! this module exports through the binding.

/// Version of the resolution contract (`docs/spec.md`) this crate implements.
/// Written into every trace, so it must be identical in both implementations.
pub const RESOLVER_VERSION: &str = "memresolve-spec-3";

/// A name that belongs to no entry of a vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownName;

/// A closed vocabulary of names with codes: the code of an entry is its
/// position in [`Vocabulary::NAMES`].
pub trait Vocabulary: Copy + Sized + 'static {
    /// Every entry, in code order.
    const ALL: &'static [Self];
    /// The name of every entry, in code order.
    const NAMES: &'static [&'static str];

    /// The entry with this code, if there is one.
    #[must_use]
    fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code)).copied()
    }

    /// The entry with this name, if there is one (exact, byte for byte).
    #[must_use]
    fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|candidate| *candidate == name)
            .and_then(|code| Self::ALL.get(code).copied())
    }
}

/// Declares an enum whose variants are the entries of a vocabulary, in code
/// order, with their names: `name`, `code`, [`Vocabulary`] and `FromStr`.
macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every entry, in code order.
            pub const ALL: [Self; [$(stringify!($variant)),+].len()] = [$(Self::$variant),+];

            /// The entry's name: the vocabulary users write.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            /// The entry's code: its position in the vocabulary.
            #[must_use]
            pub const fn code(self) -> u8 {
                self as u8
            }
        }

        impl $crate::model::Vocabulary for $name {
            const ALL: &'static [Self] = &$name::ALL;
            const NAMES: &'static [&'static str] = &[$($text),+];
        }

        impl std::str::FromStr for $name {
            type Err = $crate::model::UnknownName;

            fn from_str(name: &str) -> Result<Self, Self::Err> {
                <Self as $crate::model::Vocabulary>::from_name(name).ok_or($crate::model::UnknownName)
            }
        }
    };
}
pub(crate) use vocabulary;

vocabulary! {
    /// The four kinds of scope.
    ScopeKind {
        User = "user",
        Character = "character",
        Conversation = "conversation",
        Scene = "scene",
    }
}

vocabulary! {
    /// The columns (and Python field names) that hold a scope's ids, in the
    /// order a scope id lists them.
    IdColumn {
        UserId = "user_id",
        CharacterId = "character_id",
        ConversationId = "conversation_id",
        SceneId = "scene_id",
    }
}

vocabulary! {
    /// A record's stored status.
    Status {
        Active = "active",
        Superseded = "superseded",
        Expired = "expired",
        Forgotten = "forgotten",
        /// Written by a retraction ("that is no longer true"): never active,
        /// and, like every status but `expired`, it bears its edge.
        Retracted = "retracted",
    }
}

vocabulary! {
    /// Who vouches for a record. The code is the precedence rank: higher wins.
    Authority {
        ModelInferred = "model-inferred",
        RuleExtracted = "rule-extracted",
        UserConfirmed = "user-confirmed",
        UserCorrected = "user-corrected",
    }
}

vocabulary! {
    /// Why a candidate was excluded, in pipeline order: the first stage that
    /// excludes a candidate names its reason.
    Reason {
        Scope = "scope",
        StatusOrTime = "status-or-time",
        Forgotten = "forgotten",
        Superseded = "superseded",
        LowerPrecedence = "lower-precedence",
    }
}

vocabulary! {
    /// How firmly a winner may be stated in the prompt (`docs/spec.md` §2.8).
    Certainty {
        Confirmed = "confirmed",
        Likely = "likely",
        Uncertain = "uncertain",
    }
}

/// From this confidence on, a winner no user vouched for is `likely`.
pub const LIKELY_CONFIDENCE: f64 = 0.85;

/// The certainty of a winner: `confirmed` when a user vouched for it
/// (`user-confirmed`, `user-corrected`), else `likely` from
/// [`LIKELY_CONFIDENCE`] on, else `uncertain`.
#[must_use]
pub fn certainty(authority: Authority, confidence: f64) -> Certainty {
    match authority {
        Authority::UserConfirmed | Authority::UserCorrected => Certainty::Confirmed,
        _ if confidence >= LIKELY_CONFIDENCE => Certainty::Likely,
        _ => Certainty::Uncertain,
    }
}

impl ScopeKind {
    /// The ids a scope of this kind is made of, in scope-id order. A kind's
    /// ids are the same fields in every form: Python attributes, JSON keys,
    /// Arrow columns.
    #[must_use]
    pub const fn id_columns(self) -> &'static [IdColumn] {
        match self {
            ScopeKind::User => &[IdColumn::UserId],
            ScopeKind::Character => &[IdColumn::UserId, IdColumn::CharacterId],
            ScopeKind::Conversation => &[IdColumn::ConversationId],
            ScopeKind::Scene => &[IdColumn::ConversationId, IdColumn::SceneId],
        }
    }

    /// The column holding the optional owner of a scope of this kind
    /// (`docs/spec.md` §1.1): the `user_id` of conversation and scene scopes;
    /// user and character scopes have none (their user is one of their ids).
    #[must_use]
    pub const fn owner_column(self) -> Option<IdColumn> {
        match self {
            ScopeKind::User | ScopeKind::Character => None,
            ScopeKind::Conversation | ScopeKind::Scene => Some(IdColumn::UserId),
        }
    }
}

/// The status of a record whose status is not given (`docs/spec.md` §1.3);
/// the Python package's `RECORD_DEFAULTS` has the same (a test compares).
pub const DEFAULT_STATUS: Status = Status::Active;
/// The version of a record whose version is not given.
pub const DEFAULT_VERSION: i64 = 1;

/// The first and last instants, in microseconds since the epoch, that an aware
/// Python datetime can name (`datetime.min` at UTC+23:59:59.999999 and
/// `datetime.max` at UTC-23:59:59.999999). Arrow instants outside them are
/// `out-of-range` (`docs/spec.md` §1.6): no Python record could hold them, so
/// the two storages could not give the same answer for them.
pub const INSTANT_MIN: i64 = -62_135_683_199_999_999;
/// See [`INSTANT_MIN`].
pub const INSTANT_MAX: i64 = 253_402_387_199_999_998;
/// Why an instant outside [`INSTANT_MIN`]..=[`INSTANT_MAX`] is refused.
pub const INSTANT_RANGE_PROBLEM: &str = "is outside the instants a Python datetime can name \
(years 1 to 9999, give or take a day of UTC offset); write null for an open end";

/// The names of a batch row's `decision`, by code: `active` (code 0), then
/// each reason in stage order (code = reason code + 1).
pub const DECISION_NAMES: [&str; 6] = {
    let mut names = ["active"; 6];
    let mut code = 0;
    while code < 5 {
        names[code + 1] = <Reason as Vocabulary>::NAMES[code];
        code += 1;
    }
    names
};

/// The decision code of an outcome: 0 for a winner, else its reason's code + 1.
#[must_use]
pub const fn decision_code(outcome: Option<Reason>) -> u8 {
    match outcome {
        None => 0,
        Some(reason) => reason.code() + 1,
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
/// escaped, joined by `:`, then for an owned scope `::` and the escaped
/// owner (`docs/spec.md` §1.2). Fields are never empty, so `::` cannot occur
/// in an unowned id, and unowned ids without `:` or `%` are the tutorial's
/// strings, e.g. `character:u1:c1`.
#[must_use]
pub fn scope_id(kind: ScopeKind, fields: &[&str], owner: Option<&str>) -> String {
    let owner_len = owner.map_or(0, |owner| owner.len() + 2);
    let capacity =
        kind.name().len() + fields.iter().map(|f| f.len() + 1).sum::<usize>() + owner_len;
    let mut out = String::with_capacity(capacity);
    out.push_str(kind.name());
    for field in fields {
        out.push(':');
        push_escaped(&mut out, field);
    }
    if let Some(owner) = owner {
        out.push_str("::");
        push_escaped(&mut out, owner);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ids_give_the_tutorials_strings() {
        assert_eq!(scope_id(ScopeKind::User, &["u1"], None), "user:u1");
        assert_eq!(
            scope_id(ScopeKind::Character, &["u1", "c1"], None),
            "character:u1:c1"
        );
        assert_eq!(
            scope_id(ScopeKind::Conversation, &["k"], None),
            "conversation:k"
        );
        assert_eq!(scope_id(ScopeKind::Scene, &["k", "s"], None), "scene:k:s");
    }

    #[test]
    fn an_owner_follows_an_empty_field() {
        assert_eq!(
            scope_id(ScopeKind::Conversation, &["k"], Some("u1")),
            "conversation:k::u1"
        );
        assert_eq!(
            scope_id(ScopeKind::Scene, &["k", "s"], Some("a:b")),
            "scene:k:s::a%3Ab"
        );
        // An unowned scene whose scene id is the owner's text is another id.
        assert_ne!(
            scope_id(ScopeKind::Conversation, &["k"], Some("s")),
            scope_id(ScopeKind::Scene, &["k", "s"], None)
        );
    }

    #[test]
    fn the_tutorials_colliding_scopes_get_distinct_ids() {
        let left = scope_id(ScopeKind::Character, &["a:b", "c"], None);
        let right = scope_id(ScopeKind::Character, &["a", "b:c"], None);
        assert_eq!(left, "character:a%3Ab:c");
        assert_eq!(right, "character:a:b%3Ac");
        assert_ne!(left, right);
    }

    #[test]
    fn percent_is_escaped_before_colon() {
        // "%3A" typed by a user must not look like an escaped ":".
        assert_eq!(scope_id(ScopeKind::User, &["%3A"], None), "user:%253A");
        assert_ne!(
            scope_id(ScopeKind::User, &["%3A"], None),
            scope_id(ScopeKind::User, &[":"], None)
        );
    }

    #[test]
    fn non_bmp_characters_pass_through() {
        assert_eq!(scope_id(ScopeKind::User, &["𝔘:1"], None), "user:𝔘%3A1");
    }

    fn round_trips<V: Vocabulary + PartialEq + std::fmt::Debug>(name_of: fn(V) -> &'static str) {
        assert_eq!(V::ALL.len(), V::NAMES.len());
        for (code, entry) in V::ALL.iter().enumerate() {
            let code = u8::try_from(code).unwrap_or(u8::MAX);
            assert_eq!(V::from_code(code), Some(*entry));
            assert_eq!(V::from_name(name_of(*entry)), Some(*entry));
            assert_eq!(V::NAMES.get(usize::from(code)), Some(&name_of(*entry)));
        }
        assert_eq!(
            V::from_code(u8::try_from(V::ALL.len()).unwrap_or(u8::MAX)),
            None
        );
        assert_eq!(V::from_name(""), None);
    }

    #[test]
    fn every_vocabulary_round_trips_names_and_codes() {
        round_trips::<ScopeKind>(ScopeKind::name);
        round_trips::<IdColumn>(IdColumn::name);
        round_trips::<Status>(Status::name);
        round_trips::<Authority>(Authority::name);
        round_trips::<Reason>(Reason::name);
    }

    #[test]
    fn names_are_exact() {
        assert_eq!("user-corrected".parse(), Ok(Authority::UserCorrected));
        assert_eq!("Active".parse::<Status>(), Err(UnknownName));
        assert_eq!("scene ".parse::<ScopeKind>(), Err(UnknownName));
        assert!(Authority::UserCorrected > Authority::UserConfirmed);
        assert!(Authority::RuleExtracted > Authority::ModelInferred);
    }

    #[test]
    fn certainty_follows_the_authority_then_the_confidence() {
        assert_eq!(
            certainty(Authority::UserCorrected, 0.0),
            Certainty::Confirmed
        );
        assert_eq!(
            certainty(Authority::UserConfirmed, 0.1),
            Certainty::Confirmed
        );
        assert_eq!(certainty(Authority::RuleExtracted, 0.85), Certainty::Likely);
        assert_eq!(certainty(Authority::ModelInferred, 1.0), Certainty::Likely);
        assert_eq!(
            certainty(Authority::RuleExtracted, 0.849_999_999_999_999_9),
            Certainty::Uncertain
        );
        assert_eq!(
            certainty(Authority::ModelInferred, 0.0),
            Certainty::Uncertain
        );
    }

    #[test]
    fn decisions_are_active_then_the_reasons() {
        assert_eq!(
            DECISION_NAMES,
            [
                "active",
                "scope",
                "status-or-time",
                "forgotten",
                "superseded",
                "lower-precedence"
            ]
        );
        assert_eq!(decision_code(None), 0);
        for reason in Reason::ALL {
            let name = DECISION_NAMES.get(usize::from(decision_code(Some(reason))));
            assert_eq!(name, Some(&reason.name()));
        }
    }

    #[test]
    fn each_kind_names_its_id_columns_in_scope_id_order() {
        let names =
            |kind: ScopeKind| -> Vec<&str> { kind.id_columns().iter().map(|c| c.name()).collect() };
        assert_eq!(names(ScopeKind::User), ["user_id"]);
        assert_eq!(names(ScopeKind::Character), ["user_id", "character_id"]);
        assert_eq!(names(ScopeKind::Conversation), ["conversation_id"]);
        assert_eq!(names(ScopeKind::Scene), ["conversation_id", "scene_id"]);
    }
}
