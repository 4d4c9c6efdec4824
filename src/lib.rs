//! The Rust core of memresolve.
//!
//! memresolve decides which stored memory records are true *now* for a chat
//! turn: in scope, in time, not forgotten, not superseded, one winner per
//! scoped key. The contract is the project's `docs/spec.md`; its executable
//! form is the pure-Python reference (`memresolve.reference`).
//!
//! This crate is a plain Rust library. The `python` feature adds the `PyO3`
//! binding (`memresolve._native`); without it, `cargo test` builds and tests
//! the core with no Python at all.
//!
//! - [`model`]: the shared vocabulary (the code tables both implementations
//!   agree on) and the injective scope identifier;
//! - [`error`]: input errors with their closed kinds, and broken invariants;
//! - [`resolve`]: the pipeline of `docs/spec.md` §2 over a columnar candidate
//!   set, one module per stage;
//! - [`batch`]: the batch form of §4, every context of a store, in parallel;
//! - [`maintain`]: the background jobs, status normalisation and the forget
//!   sweep (§7);
//! - [`partition`]: owner partitioning, the batch job split into parts that
//!   resolve alone (§4.3);
//! - [`arrow_input`], [`arrow_output`]: the batch form's Arrow tables in and out.

#[cfg(feature = "arrow")]
pub mod arrow_input;
#[cfg(feature = "arrow")]
pub mod arrow_output;
pub mod batch;
pub mod error;
pub mod maintain;
pub mod model;
pub mod partition;
pub mod resolve;
pub mod store_row;
#[cfg(test)]
mod test_support;

#[cfg(feature = "python")]
mod python;
