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
                        character_id,
                        conversation_id: "k",
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
