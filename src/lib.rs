//! The Rust core of memresolve.
//!
//! memresolve decides which stored memory records are true *now* for a chat
//! turn: in scope, in time, not forgotten, not superseded, one winner per
//! scoped key. The contract is `SPEC.md`; the executable specification is the
//! pure-Python reference (`memresolve.reference`).
//!
//! This crate is a plain Rust library. The `python` feature adds the `PyO3`
//! binding (`memresolve._native`); without it, `cargo test` builds and tests
//! the core with no Python at all.
//!
//! What is here today: the shared vocabulary (the code tables both
//! implementations agree on) and the injective scope identifier. The resolver
//! pipeline itself is not implemented in Rust yet; the Python package runs
//! the reference until it is.

pub mod model;

#[cfg(feature = "python")]
mod python;
