//! What the Rust tests share: a deterministic generator and the contexts of
//! small generated stores. Compiled only for tests.

use crate::model::{Authority, Status};
use crate::resolve::{CandidateSet, Context, Record, ScopeRef};

/// A deterministic generator (xorshift), so the tests need no dependency.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % 1024).unwrap_or(0) % n
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Every context of users `users`, characters `characters` and scenes `scenes`
/// (`None`: no current scene) in conversation `k`, at each instant of `nows`.
pub(crate) fn contexts(
    nows: &[i64],
    users: &[&'static str],
    characters: &[&'static str],
    scenes: &[Option<&'static str>],
) -> Vec<Context<'static>> {
    let mut out = Vec::new();
    for &now in nows {
        for &user_id in users {
            for &character_id in characters {
                for &scene_id in scenes {
                    out.push(Context {
                        now,
                        user_id,
                        character_id: Some(character_id),
                        conversation_id: Some("k"),
                        scene_id,
                    });
                }
            }
        }
    }
    out
}

/// An active, model-inferred record of version 1, valid from instant 0, with no
/// end, observation time or `supersedes`.
pub(crate) fn record(
    id: &'static str,
    key: &'static str,
    scope: ScopeRef<'static>,
) -> Record<'static> {
    Record {
        id,
        key,
        scope,
        status: Status::Active,
        authority: Authority::ModelInferred,
        version: 1,
        valid_from: 0,
        valid_until: None,
        observed_at: None,
        supersedes: None,
    }
}

/// The records as a candidate set, row for row.
pub(crate) fn set_of(records: &[Record<'static>]) -> CandidateSet<'static> {
    let mut set = CandidateSet::with_capacity(records.len());
    for record in records {
        set.push(*record);
    }
    set
}

/// Small generated stores where ids, keys and scopes collide, and the
/// contexts that see them: what the per-turn forms are checked on against
/// [`crate::resolve::resolve`].
pub(crate) mod generated {
    use super::Rng;
    use crate::model::{Authority, ScopeKind, Status};
    use crate::resolve::{Context, Record, ScopeRef, Tombstone};

    pub(crate) const NOW: i64 = 1_000;

    // Ids in an order that differs from row order, with `:` and non-ASCII.
    const IDS: [&str; 12] = [
        "m", "b", "a:b", "a", "é", "z", "𝔘", "c%", "A", "ab", "b:", "k",
    ];
    const KEYS: [&str; 3] = ["name", "home", "pet:name"];

    pub(crate) fn scopes() -> Vec<ScopeRef<'static>> {
        vec![
            ScopeRef::user("u"),
            ScopeRef::user("v"),
            ScopeRef::character("u", "c"),
            ScopeRef::character("u", "d"),
            ScopeRef::conversation("k"),
            ScopeRef::conversation("k").owned_by("u"),
            ScopeRef::conversation("k").owned_by("v"),
            ScopeRef::conversation("j"),
            ScopeRef::scene("k", "s"),
            ScopeRef::scene("k", "s").owned_by("u"),
            ScopeRef::scene("k", "t"),
        ]
    }

    pub(crate) fn contexts() -> Vec<Context<'static>> {
        super::contexts(
            &[NOW - 1, NOW, NOW + 1, NOW + 100],
            &["u", "v"],
            &["c", "d"],
            &[None, Some("s"), Some("t")],
        )
    }

    pub(crate) fn random_records(rng: &mut Rng) -> Vec<Record<'static>> {
        let scopes = scopes();
        let ends = [
            None,
            Some(NOW - 10),
            Some(NOW),
            Some(NOW + 1),
            Some(NOW + 50),
        ];
        let statuses = [
            Status::Active,
            Status::Active,
            Status::Active,
            Status::Superseded,
            Status::Expired,
            Status::Forgotten,
        ];
        let authorities = [
            Authority::ModelInferred,
            Authority::RuleExtracted,
            Authority::UserConfirmed,
            Authority::UserCorrected,
        ];
        let count = rng.below(IDS.len() + 1);
        (0..count)
            .map(|row| {
                let valid_from = rng.pick(&[NOW - 20, NOW - 5, NOW, NOW + 1]);
                let named = rng.pick(&IDS);
                Record {
                    id: IDS[row],
                    key: rng.pick(&KEYS),
                    scope: rng.pick(&scopes),
                    status: rng.pick(&statuses),
                    authority: rng.pick(&authorities),
                    version: i64::try_from(rng.below(3)).unwrap_or(0),
                    valid_from,
                    valid_until: rng.pick(&ends),
                    observed_at: rng.pick(&[None, None, Some(NOW - 30), Some(NOW - 3)]),
                    // Some name another candidate (or itself), some a missing id.
                    supersedes: rng.pick(&[None, None, Some(named), Some("gone")]),
                }
            })
            .collect()
    }

    pub(crate) fn random_tombstones(rng: &mut Rng) -> Vec<Tombstone<'static>> {
        let scopes = scopes();
        (0..rng.below(4))
            .map(|_| {
                let scope = rng.pick(&scopes);
                Tombstone {
                    key: rng.pick(&["name", "home", "other"]),
                    scope,
                    blocks_sources_before: rng.pick(&[NOW - 30, NOW - 5, NOW, NOW + 10]),
                    // Half the user scopes' tombstones reach all their user owns.
                    user_wide: scope.kind == ScopeKind::User && rng.below(2) == 0,
                    sources: None,
                }
            })
            .collect()
    }
}
