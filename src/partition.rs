//! Owner partitioning (`docs/spec.md` §4.3): the batch job split into parts
//! that resolve alone, each part holding whole owners.
//!
//! A context belongs to its user. A record or tombstone belongs to the user
//! its scope names: the `user_id` of a user or character scope, the owner of
//! an owned conversation or scene scope. An unowned conversation or scene
//! scope names no user: it belongs to every user whose contexts name its
//! conversation (and to none when no context does). A record can be a
//! candidate of a context only if it belongs to the context's user, so
//! resolving each part alone, with the records, contexts and tombstones
//! that belong to its users, gives every context exactly the rows the whole
//! store gives it: stage 1 sees the same in-scope records, stages 2 to 5
//! read only in-scope records and tombstones.
//!
//! A part is `hash(user) mod parts`; an unowned record is routed to the
//! parts of its conversation's users, found in a table built from the
//! contexts first. The table keys conversations by a 64-bit hash: two
//! conversations sharing a hash only send records to more parts, where they
//! are out of scope, so the result stays exact.

use crate::model::ScopeKind;
use crate::resolve::hash::{map_with_capacity, Map};
use crate::resolve::ScopeRef;

/// Splits owners into `parts` parts by a hash of the owner's id.
#[derive(Clone, Copy, Debug)]
pub struct Partitioner {
    parts: u32,
    seed: u64,
}

impl Partitioner {
    /// `parts` parts (at least one); `seed` varies the split, so a part too
    /// large can be split again with another seed.
    #[must_use]
    pub fn new(parts: u32, seed: u64) -> Self {
        Self {
            parts: parts.max(1),
            seed,
        }
    }

    #[must_use]
    pub fn parts(&self) -> u32 {
        self.parts
    }

    /// The part of a user.
    #[must_use]
    pub fn part_of_user(&self, user_id: &str) -> u32 {
        let state = foldhash::fast::FixedState::with_seed(self.seed);
        let hash = std::hash::BuildHasher::hash_one(&state, user_id);
        // The high bits times the count: an even split for any count.
        u32::try_from((u128::from(hash) * u128::from(self.parts)) >> 64).unwrap_or(0)
    }
}

/// Who a scope belongs to (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner<'a> {
    /// A user: the `user_id` of a user or character scope, or the owner of
    /// a conversation or scene scope.
    User(&'a str),
    /// No user: an unowned conversation or scene scope, by its conversation.
    Conversation(&'a str),
}

impl<'a> Owner<'a> {
    #[must_use]
    pub fn of(scope: &ScopeRef<'a>) -> Self {
        match (scope.kind, scope.owner) {
            (ScopeKind::User | ScopeKind::Character, _) => Owner::User(scope.first),
            (ScopeKind::Conversation | ScopeKind::Scene, Some(owner)) => Owner::User(owner),
            (ScopeKind::Conversation | ScopeKind::Scene, None) => Owner::Conversation(scope.first),
        }
    }
}

/// The parts whose contexts name each conversation, by a 64-bit hash of the
/// conversation id.
#[derive(Debug)]
pub struct ConversationParts {
    partitioner: Partitioner,
    /// The first part seen; further parts in `more`.
    first: Map<u64, u32>,
    more: Map<u64, Vec<u32>>,
}

impl ConversationParts {
    #[must_use]
    pub fn new(partitioner: Partitioner) -> Self {
        Self {
            partitioner,
            first: map_with_capacity(1024),
            more: map_with_capacity(0),
        }
    }

    fn key(conversation_id: &str) -> u64 {
        let state = foldhash::fast::FixedState::with_seed(0x636f_6e76_6572_7361);
        std::hash::BuildHasher::hash_one(&state, conversation_id)
    }

    /// Notes that a context of `user_id` names `conversation_id` (if any: a
    /// context without a conversation sees no unowned scope); returns the
    /// context's part.
    pub fn add_context(&mut self, user_id: &str, conversation_id: Option<&str>) -> u32 {
        let part = self.partitioner.part_of_user(user_id);
        let Some(conversation_id) = conversation_id else {
            return part;
        };
        let key = Self::key(conversation_id);
        match self.first.get(&key) {
            None => {
                self.first.insert(key, part);
            }
            Some(&first) if first == part => {}
            Some(_) => {
                let more = self.more.entry(key).or_default();
                if !more.contains(&part) {
                    more.push(part);
                }
            }
        }
        part
    }

    /// Calls `route(part)` for every part a scope belongs to: one for a
    /// user's scope, the parts of the conversation's users for an unowned
    /// conversation or scene scope (none when no context names it).
    pub fn route(&self, scope: &ScopeRef<'_>, mut route: impl FnMut(u32)) {
        match Owner::of(scope) {
            Owner::User(user_id) => route(self.partitioner.part_of_user(user_id)),
            Owner::Conversation(conversation_id) => {
                let key = Self::key(conversation_id);
                if let Some(&first) = self.first.get(&key) {
                    route(first);
                    for &part in self.more.get(&key).map_or(&[][..], Vec::as_slice) {
                        route(part);
                    }
                }
            }
        }
    }

    /// [`Self::route`] for every scope in order: `route(row, part)`. Rows of
    /// one user tend to come together, and a dictionary-encoded column gives
    /// all of them the very same string: a user's part is kept while the
    /// next row's user id is that string in memory (the same bytes), so it
    /// is hashed once per run of rows rather than once per row.
    pub fn route_each(&self, scopes: &[ScopeRef<'_>], mut route: impl FnMut(usize, u32)) {
        let mut last: Option<(*const u8, usize, u32)> = None;
        for (row, scope) in scopes.iter().enumerate() {
            match Owner::of(scope) {
                Owner::User(user_id) => {
                    let same = |(at, len, _): (*const u8, usize, u32)| {
                        std::ptr::eq(at, user_id.as_ptr()) && len == user_id.len()
                    };
                    let part = if let Some((_, _, part)) = last.filter(|&entry| same(entry)) {
                        part
                    } else {
                        let part = self.partitioner.part_of_user(user_id);
                        last = Some((user_id.as_ptr(), user_id.len(), part));
                        part
                    };
                    route(row, part);
                }
                Owner::Conversation(_) => self.route(scope, |part| route(row, part)),
            }
        }
    }

    /// How many distinct conversations contexts have named (by hash).
    #[must_use]
    pub fn conversations(&self) -> usize {
        self.first.len()
    }
}

/// A 128-bit hash of an id: two ids of one input are taken to be equal when
/// their hashes are (a false match has a chance below 2^-64 even for 10^10
/// ids). Lets a job check ids for uniqueness without keeping them.
#[must_use]
pub fn id_hash(id: &str) -> (u64, u64) {
    let high = foldhash::fast::FixedState::with_seed(0x6964_2d68_6967_6821);
    let low = foldhash::fast::FixedState::with_seed(0x6964_2d6c_6f77_2121);
    (
        std::hash::BuildHasher::hash_one(&high, id),
        std::hash::BuildHasher::hash_one(&low, id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_spread_over_the_parts_and_stay_put() {
        let partitioner = Partitioner::new(8, 1);
        let mut counts = [0_u32; 8];
        for n in 0..8_000 {
            let part = partitioner.part_of_user(&format!("user-{n}"));
            assert!(part < 8);
            assert_eq!(part, partitioner.part_of_user(&format!("user-{n}")));
            counts[part as usize] += 1;
        }
        assert!(
            counts.iter().all(|&count| (800..1200).contains(&count)),
            "{counts:?}"
        );
        assert_eq!(Partitioner::new(0, 1).parts(), 1);
        assert_ne!(
            (0..64)
                .map(|n| Partitioner::new(8, 1).part_of_user(&n.to_string()))
                .collect::<Vec<_>>(),
            (0..64)
                .map(|n| Partitioner::new(8, 2).part_of_user(&n.to_string()))
                .collect::<Vec<_>>(),
            "another seed splits differently"
        );
    }

    #[test]
    fn each_scope_goes_to_its_owners_parts() {
        let partitioner = Partitioner::new(16, 7);
        let mut conversations = ConversationParts::new(partitioner);
        let ada = conversations.add_context("u-ada", Some("conv-1"));
        let bob = conversations.add_context("u-bob", Some("conv-1"));
        conversations.add_context("u-ada", Some("conv-1"));
        let routed = |scope: ScopeRef<'_>| {
            let mut parts = Vec::new();
            conversations.route(&scope, |part| parts.push(part));
            parts
        };
        assert_eq!(routed(ScopeRef::user("u-ada")), [ada]);
        assert_eq!(routed(ScopeRef::character("u-bob", "c")), [bob]);
        assert_eq!(
            routed(ScopeRef::conversation("conv-1").owned_by("u-ada")),
            [ada]
        );
        assert_eq!(
            routed(ScopeRef::scene("conv-9", "s").owned_by("u-bob")),
            [bob]
        );
        // Unowned: every part whose contexts name the conversation, or none.
        let mut shared = routed(ScopeRef::scene("conv-1", "s"));
        shared.sort_unstable();
        let mut expected = vec![ada, bob];
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(shared, expected);
        assert_eq!(routed(ScopeRef::conversation("conv-2")), [] as [u32; 0]);
        assert_eq!(conversations.conversations(), 1);
        // Row by row, the same parts, whether a user's id is one string or copies of it.
        let ada_copy = String::from("u-ada");
        let scopes = [
            ScopeRef::user("u-ada"),
            ScopeRef::user(&ada_copy),
            ScopeRef::character("u-bob", "c"),
            ScopeRef::scene("conv-1", "s"),
            ScopeRef::user("u-ada"),
        ];
        let mut each = Vec::new();
        conversations.route_each(&scopes, |row, part| each.push((row, part)));
        let mut one_by_one = Vec::new();
        for (row, scope) in scopes.iter().enumerate() {
            conversations.route(scope, |part| one_by_one.push((row, part)));
        }
        assert_eq!(each, one_by_one);
    }

    #[test]
    fn id_hashes_are_two_independent_halves() {
        let (high, low) = id_hash("m1");
        assert_ne!(high, low);
        assert_eq!(id_hash("m1"), (high, low));
        assert_ne!(id_hash("m2"), (high, low));
    }
}
