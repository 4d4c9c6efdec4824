//! Reading a vocabulary column (scope kinds, statuses, authorities): each
//! row's name to its entry.

use crate::model::Vocabulary;
use crate::resolve::hash::same_bytes;

/// A vocabulary's names by a small hash of each name's length and end bytes:
/// a row's name is found with one table read and one comparison. Searching
/// the names in turn mispredicts a branch on nearly every row of a column
/// whose values vary, and that cost more than the rest of reading it.
pub(super) struct NameTable<V> {
    /// Each hash's code plus one (0: no name), or [`SEARCH`] when two names share it.
    slots: [u8; 64],
    entries: std::marker::PhantomData<V>,
}

/// A slot two names share: those rows search the names in turn.
const SEARCH: u8 = u8::MAX;

impl<V: Vocabulary> NameTable<V> {
    pub(super) fn new() -> Self {
        let mut slots = [0_u8; 64];
        for (code, name) in V::NAMES.iter().enumerate() {
            if let Some(slot) = slots.get_mut(Self::hash(name.as_bytes())) {
                *slot = match (*slot, u8::try_from(code + 1)) {
                    (0, Ok(numbered)) if numbered != SEARCH => numbered,
                    _ => SEARCH,
                };
            }
        }
        Self {
            slots,
            entries: std::marker::PhantomData,
        }
    }

    fn hash(bytes: &[u8]) -> usize {
        let first = usize::from(bytes.first().copied().unwrap_or(0));
        let middle = usize::from(bytes.get(bytes.len() / 2).copied().unwrap_or(0));
        let last = usize::from(bytes.last().copied().unwrap_or(0));
        (bytes.len() * 7 + first * 3 + middle * 5 + last) % 64
    }

    pub(super) fn entry(&self, text: &str) -> Option<V> {
        let code = match self.slots.get(Self::hash(text.as_bytes())).copied()? {
            0 => return None,
            SEARCH => return Self::search(text),
            numbered => usize::from(numbered - 1),
        };
        let name = V::NAMES.get(code)?;
        if same_bytes(name.as_bytes(), text.as_bytes()) {
            V::ALL.get(code).copied()
        } else {
            None
        }
    }

    fn search(text: &str) -> Option<V> {
        V::NAMES
            .iter()
            .position(|name| same_bytes(name.as_bytes(), text.as_bytes()))
            .and_then(|code| V::ALL.get(code).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::{NameTable, SEARCH};
    use crate::model::{Authority, ScopeKind, Status, Vocabulary};

    fn finds_every_name_and_nothing_else<V: Vocabulary + PartialEq + std::fmt::Debug>() {
        let table = NameTable::<V>::new();
        for (name, entry) in V::NAMES.iter().zip(V::ALL) {
            assert_eq!(table.entry(name), Some(*entry), "{name}");
            for other in [
                &name[..name.len() - 1],
                &format!("{name} "),
                &name.to_uppercase(),
                &format!("x{}", &name[1..]),
            ] {
                assert_eq!(table.entry(other), None, "{other}");
            }
        }
        for other in ["", "a", "\u{e9}", "unknown", "active-ish"] {
            if !V::NAMES.contains(&other) {
                assert_eq!(table.entry(other), None, "{other}");
            }
        }
    }

    #[test]
    fn every_vocabulary_is_found_by_its_table() {
        finds_every_name_and_nothing_else::<ScopeKind>();
        finds_every_name_and_nothing_else::<Status>();
        finds_every_name_and_nothing_else::<Authority>();
    }

    #[test]
    fn the_read_vocabularies_need_no_search() {
        for slots in [
            NameTable::<ScopeKind>::new().slots,
            NameTable::<Status>::new().slots,
            NameTable::<Authority>::new().slots,
        ] {
            assert!(
                !slots.contains(&SEARCH),
                "two names share a slot: pick another hash"
            );
        }
    }
}
