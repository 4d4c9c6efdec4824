//! The hash maps and sets of the pipeline. `foldhash` is several times faster
//! than `SipHash` on short strings and seeds itself per process, so a crafted
//! set of keys cannot be tuned offline to collide. Results never depend on
//! iteration order: maps are only probed, and outputs are sorted.

use std::collections::{HashMap, HashSet};

pub(crate) type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type Set<K> = HashSet<K, foldhash::fast::RandomState>;

#[must_use]
pub(crate) fn map_with_capacity<K, V>(capacity: usize) -> Map<K, V> {
    Map::with_capacity_and_hasher(capacity, foldhash::fast::RandomState::default())
}

#[must_use]
pub(crate) fn set_with_capacity<K>(capacity: usize) -> Set<K> {
    Set::with_capacity_and_hasher(capacity, foldhash::fast::RandomState::default())
}

/// A string with its hash computed once: hashing it writes the stored hash,
/// and equality compares the hashes before the bytes, so a table probe reads
/// the text only on a match. Equal exactly when the strings are equal.
#[derive(Clone, Copy, Debug)]
pub struct Hashed<'a> {
    pub hash: u64,
    pub text: &'a str,
}

impl<'a> Hashed<'a> {
    #[must_use]
    pub fn new(state: &foldhash::fast::FixedState, text: &'a str) -> Self {
        Self {
            hash: std::hash::BuildHasher::hash_one(state, text),
            text,
        }
    }
}

impl PartialEq for Hashed<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && same_bytes(self.text.as_bytes(), other.text.as_bytes())
    }
}

impl Eq for Hashed<'_> {}

impl std::hash::Hash for Hashed<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Byte equality for the short strings ids and keys are, eight bytes at a
/// time, inline (a library `memcmp` call costs more than the comparison).
#[must_use]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    // The tails have equal lengths, so zero padding keeps them apart.
    let tails_equal = word(a_words.remainder()) == word(b_words.remainder());
    tails_equal && a_words.zip(b_words).all(|(x, y)| word(x) == word(y))
}

/// Up to eight bytes as one word, zero padded: one load for eight, else
/// shifted in one by one in a register (copying them to a buffer and
/// loading that back stalls on store forwarding, see `order::word`).
fn word(bytes: &[u8]) -> u64 {
    if let Some(&whole) = bytes.first_chunk::<8>() {
        return u64::from_ne_bytes(whole);
    }
    bytes
        .iter()
        .take(8)
        .fold(0_u64, |word, &byte| (word << 8) | u64::from(byte))
}

/// The seed of the hashes stored with [`Hashed`] texts: one per process.
#[must_use]
pub fn text_hasher() -> foldhash::fast::FixedState {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        std::hash::BuildHasher::hash_one(&foldhash::fast::RandomState::default(), 0_u64)
    });
    foldhash::fast::FixedState::with_seed(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_equality_at_every_length() {
        let texts = [
            "",
            "a",
            "ab",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
            "abcdefghX",
            "é",
            "abcdefgh12345678",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(
                    same_bytes(a.as_bytes(), b.as_bytes()),
                    a == b,
                    "{a:?} {b:?}"
                );
                let state = text_hasher();
                assert_eq!(Hashed::new(&state, a) == Hashed::new(&state, b), a == b);
            }
        }
    }

    #[test]
    fn equal_hashes_of_different_texts_are_not_equal() {
        let one = Hashed {
            hash: 7,
            text: "one",
        };
        let two = Hashed {
            hash: 7,
            text: "two",
        };
        assert_ne!(one, two);
        assert_eq!(
            one,
            Hashed {
                hash: 7,
                text: "one"
            }
        );
    }
}
