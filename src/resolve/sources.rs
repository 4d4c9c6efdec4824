//! Stage 3 by cited messages (`docs/spec.md` §2.3): a tombstone may hold
//! salted hashes of the message ids the forgotten value came from, and then
//! blocks every record of its key, in a scope it reaches, that cites one of
//! them, whatever the record's times.
//!
//! The test reads the record's key, scope and message ids and the
//! tombstones, never the context or `now`, so each form decides it once per
//! record before the pipeline runs ([`SourceIndex::blocks`]) and hands the
//! pipeline one flag per candidate ([`super::Candidates::blocked_by_sources`]).
//! Tombstones without hashes (nearly all) make the index empty, and then no
//! form reads a message id.

use super::candidates::{CandidateSet, ScopeRef, Tombstone};
use super::hash::Map;
use super::source_hashes::SourceHashes;

/// The hash sets of one call's tombstones, by the (scope, key) they are on,
/// and the user-wide ones by (user, key). Empty when no tombstone has hashes.
#[derive(Debug, Default)]
pub struct SourceIndex<'a> {
    by_scope: Map<(ScopeRef<'a>, &'a str), Vec<&'a SourceHashes>>,
    by_user: Map<(&'a str, &'a str), Vec<&'a SourceHashes>>,
}

impl<'a> SourceIndex<'a> {
    #[must_use]
    pub fn new(tombstones: &[Tombstone<'a>]) -> Self {
        let mut index = Self::default();
        for tombstone in tombstones {
            let Some(sources) = tombstone.sources.filter(|sources| !sources.is_empty()) else {
                continue;
            };
            let entry = match tombstone.scope.owning_user() {
                Some(user) if tombstone.user_wide => {
                    index.by_user.entry((user, tombstone.key)).or_default()
                }
                _ => index
                    .by_scope
                    .entry((tombstone.scope, tombstone.key))
                    .or_default(),
            };
            entry.push(sources);
        }
        index
    }

    /// Whether no tombstone has hashes: then nothing is blocked by its sources.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_scope.is_empty() && self.by_user.is_empty()
    }

    /// The hash sets of the tombstones on `key` that reach `scope`.
    fn reaching<'s>(
        &'s self,
        scope: &ScopeRef<'s>,
        key: &'s str,
    ) -> impl Iterator<Item = &'s SourceHashes> + 's {
        // Covariance: the index's borrows outlive the call's.
        let index: &'s SourceIndex<'s> = self;
        let on_scope = index.by_scope.get(&(*scope, key));
        let user_wide = scope
            .owning_user()
            .and_then(|user| index.by_user.get(&(user, key)));
        on_scope
            .into_iter()
            .chain(user_wide)
            .flat_map(|sets| sets.iter().copied())
    }

    /// Whether a tombstone on `key` that reaches `scope` may block by sources:
    /// when not, a record's message ids need not be read.
    #[must_use]
    pub fn may_block(&self, scope: &ScopeRef<'_>, key: &str) -> bool {
        !self.is_empty() && self.reaching(scope, key).next().is_some()
    }

    /// Whether a record of `key` in `scope` citing `message_ids` is blocked by
    /// the messages it cites.
    #[must_use]
    pub fn blocks(&self, scope: &ScopeRef<'_>, key: &str, message_ids: &[&str]) -> bool {
        self.reaching(scope, key)
            .any(|sources| sources.blocks_any(message_ids.iter().copied()))
    }

    /// Marks the candidates of `set` the messages they cite block, reading a
    /// candidate's message ids (`messages(row)`) only when a tombstone with
    /// hashes is on its key and reaches its scope.
    ///
    /// # Errors
    /// The first error of `messages`.
    pub fn mark<E, M, I>(&self, set: &mut CandidateSet<'_>, mut messages: M) -> Result<(), E>
    where
        M: FnMut(usize) -> Result<I, E>,
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        if self.is_empty() {
            return Ok(());
        }
        let mut blocked = Vec::new();
        for (row, record) in set.iter() {
            if !self.may_block(&record.scope, record.key) {
                continue;
            }
            let cited: Vec<I::Item> = messages(row)?.into_iter().collect();
            let cited: Vec<&str> = cited.iter().map(AsRef::as_ref).collect();
            if self.blocks(&record.scope, record.key, &cited) {
                blocked.push(row);
            }
        }
        for row in blocked {
            set.mark_blocked_by_sources(row);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;

    use super::*;
    use crate::resolve::source_hashes::BadSource;
    use crate::resolve::{decide, CandidateSet, Context, Record, TombstoneIndex};
    use crate::test_support::record;

    /// Computed by Python's `hashlib` (`memresolve.source_hash`).
    const M1_UNDER_ZEROS: &str = "209e3755a331ca9f7d331fa19f74af2a4b38cedb1f008eee26c517d98c22abe4";

    fn hashes(salt: &str, ids: &[&str]) -> SourceHashes {
        let seed = SourceHashes::parse(salt, []).unwrap_or_default();
        let hexes: Vec<String> = ids
            .iter()
            .map(|id| {
                seed.hash(id).iter().fold(String::new(), |mut hex, byte| {
                    let _ = write!(hex, "{byte:02x}");
                    hex
                })
            })
            .collect();
        SourceHashes::parse(salt, hexes.iter().map(String::as_str)).unwrap_or_default()
    }

    fn tombstone<'a>(scope: ScopeRef<'a>, sources: &'a SourceHashes) -> Tombstone<'a> {
        Tombstone {
            key: "k",
            scope,
            blocks_sources_before: i64::MIN,
            user_wide: false,
            sources: Some(sources),
        }
    }

    #[test]
    fn the_hash_is_sha256_of_salt_a_zero_byte_and_the_id() {
        let zeros = "00".repeat(16);
        assert_eq!(
            SourceHashes::parse(&zeros, [M1_UNDER_ZEROS]),
            Ok(hashes(&zeros, &["m1"]))
        );
        assert!(hashes(&zeros, &["m1"]).blocks_any(["m0", "m1"]));
        assert!(!hashes(&zeros, &["m1"]).blocks_any(["m2"]));
        assert!(!hashes(&"01".repeat(16), &["m1"]).is_empty());
        assert_ne!(hashes(&"01".repeat(16), &["m1"]), hashes(&zeros, &["m1"]));
    }

    #[test]
    fn salts_and_hashes_are_lowercase_hex_of_their_sizes() {
        let upper = M1_UNDER_ZEROS.to_uppercase();
        let cases: [(&str, &[&str], Option<BadSource>); 7] = [
            (&"ab".repeat(16), &[], None),
            (&"ab".repeat(64), &[M1_UNDER_ZEROS], None),
            (&"ab".repeat(15), &[], Some(BadSource::Salt)),
            (&"ab".repeat(65), &[], Some(BadSource::Salt)),
            (&"AB".repeat(16), &[], Some(BadSource::Salt)),
            (
                &"ab".repeat(16),
                &[M1_UNDER_ZEROS, &upper],
                Some(BadSource::Hash(1)),
            ),
            (&"ab".repeat(16), &["abc"], Some(BadSource::Hash(0))),
        ];
        for (salt, listed, expected) in cases {
            let got = SourceHashes::parse(salt, listed.iter().copied()).err();
            assert_eq!(got, expected, "{salt} {listed:?}");
        }
    }

    #[test]
    fn hashes_reach_as_their_tombstone_reaches() {
        let sources = hashes(&"00".repeat(16), &["m1"]);
        let owned = ScopeRef::conversation("k1").owned_by("u");
        let index = SourceIndex::new(&[
            Tombstone {
                user_wide: true,
                ..tombstone(ScopeRef::user("u"), &sources)
            },
            tombstone(ScopeRef::character("v", "c"), &sources),
        ]);
        for reached in [
            ScopeRef::user("u"),
            ScopeRef::character("u", "c"),
            owned,
            ScopeRef::character("v", "c"),
        ] {
            assert!(index.blocks(&reached, "k", &["m1"]), "{reached:?}");
            assert!(!index.blocks(&reached, "k", &["m2"]), "{reached:?}");
            assert!(!index.blocks(&reached, "other", &["m1"]), "{reached:?}");
        }
        for unreached in [
            ScopeRef::conversation("k1"),
            ScopeRef::user("v"),
            ScopeRef::character("v", "d"),
            ScopeRef::conversation("k1").owned_by("v"),
        ] {
            assert!(!index.may_block(&unreached, "k"), "{unreached:?}");
        }
        assert!(
            SourceIndex::new(&[tombstone(ScopeRef::user("u"), &SourceHashes::default())])
                .is_empty()
        );
    }

    #[test]
    fn a_marked_candidate_is_forgotten_whatever_its_times() {
        let sources = hashes(&"00".repeat(16), &["m1"]);
        let tombstones = [tombstone(ScopeRef::user("u"), &sources)];
        let mut set = CandidateSet::with_capacity(2);
        for (id, valid_from) in [("a", 100), ("b", 200)] {
            set.push(Record {
                valid_from,
                ..record(id, "k", ScopeRef::user("u"))
            });
        }
        let cited: [&[&str]; 2] = [&["m1"], &["m2"]];
        let index = SourceIndex::new(&tombstones);
        index
            .mark(&mut set, |row| {
                Ok::<_, ()>(cited.get(row).copied().unwrap_or(&[]))
            })
            .ok();
        assert!(set.blocked_by_sources(0));
        assert!(!set.blocked_by_sources(1));
        let context = Context {
            now: 1_000,
            user_id: "u",
            character_id: None,
            conversation_id: None,
            scene_id: None,
        };
        let outcomes = decide(&set, &context, &TombstoneIndex::new(&tombstones));
        assert_eq!(
            outcomes,
            Ok(vec![Some(crate::model::Reason::Forgotten), None])
        );
    }
}
