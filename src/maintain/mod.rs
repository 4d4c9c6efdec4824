//! The background jobs over a whole store (`docs/spec.md` §7): status
//! normalisation ([`normalize`]) and the forget sweep ([`purge`]).
//!
//! Both read a [`Store`](crate::batch::Store), the batch form's indexed
//! records, so the per-turn and batch forms share one implementation:
//! a per-turn call builds a store from its candidates
//! ([`Store::from_candidates`](crate::batch::Store::from_candidates)).

pub mod cover;
pub mod normalize;
pub mod purge;

pub use cover::covers;
pub use normalize::{normalize, StatusChange};
pub use purge::{purge, Purge, PurgeCause};

#[cfg(test)]
mod tests;
