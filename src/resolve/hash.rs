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
