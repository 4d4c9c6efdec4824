//! A tombstone's salt and the salted hashes of the message ids it blocks
//! (`docs/spec.md` §1.5): SHA-256 over the salt's bytes, a zero byte and the
//! id's UTF-8, held as digests and tested by binary search.

use sha2::{Digest, Sha256};

/// One SHA-256 digest.
pub type Digest32 = [u8; 32];

/// A tombstone's salt and the salted hashes it blocks, owned by whoever owns
/// the tombstone (a [`Tombstone`] borrows it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceHashes {
    salt: Vec<u8>,
    /// Sorted and without repeats, for a binary search.
    hashes: Vec<Digest32>,
}

/// Why a salt or a hash was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadSource {
    /// The salt is not 16 to 64 bytes of lowercase hex.
    Salt,
    /// The hash at this position is not 64 lowercase hex digits.
    Hash(usize),
}

/// The smallest and largest salts, in bytes.
pub const SALT_BYTES: std::ops::RangeInclusive<usize> = 16..=64;

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

/// The bytes of lowercase hex text (`None`: odd length or another character).
fn from_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|pair| match pair {
            [high, low] => Some((hex_value(*high)? << 4) | hex_value(*low)?),
            _ => None,
        })
        .collect()
}

/// Hashes as lowercase hex, parsed in order.
///
/// # Errors
/// [`BadSource::Hash`] naming the first that is not 64 lowercase hex digits.
pub fn parse_hashes<'h>(
    hashes: impl IntoIterator<Item = &'h str>,
) -> Result<Vec<Digest32>, BadSource> {
    hashes
        .into_iter()
        .enumerate()
        .map(|(position, hash)| {
            from_hex(hash)
                .and_then(|bytes| bytes.try_into().ok())
                .ok_or(BadSource::Hash(position))
        })
        .collect()
}

impl SourceHashes {
    /// Parses a salt and its hashes as the Python fields and the Arrow and
    /// JSON forms hold them: lowercase hex.
    ///
    /// # Errors
    /// [`BadSource`] naming the first malformed part.
    pub fn parse<'h>(
        salt: &str,
        hashes: impl IntoIterator<Item = &'h str>,
    ) -> Result<Self, BadSource> {
        let salt = from_hex(salt)
            .filter(|bytes| SALT_BYTES.contains(&bytes.len()))
            .ok_or(BadSource::Salt)?;
        let mut digests = parse_hashes(hashes)?;
        digests.sort_unstable();
        digests.dedup();
        Ok(Self {
            salt,
            hashes: digests,
        })
    }

    /// Whether it blocks no message.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The salted hash of one message id: SHA-256 of salt, a zero byte, and
    /// the id's UTF-8.
    #[must_use]
    pub fn hash(&self, message_id: &str) -> Digest32 {
        let mut hasher = Sha256::new();
        hasher.update(&self.salt);
        hasher.update([0_u8]);
        hasher.update(message_id.as_bytes());
        hasher.finalize().into()
    }

    /// Whether any of `message_ids` is one it blocks.
    pub fn blocks_any<'m>(&self, message_ids: impl IntoIterator<Item = &'m str>) -> bool {
        !self.hashes.is_empty()
            && message_ids
                .into_iter()
                .any(|id| self.hashes.binary_search(&self.hash(id)).is_ok())
    }
}
