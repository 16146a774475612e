//! drip's one integration-test binary: the built executable run end to end
//! on `fixtures/`, with real pipes, signals, shells, nginx and Redis. A
//! module per command and per theme; `common` holds what they share.
//!
//! Run one module with `cargo test --test drip pace::`, one test by its
//! name.

mod common;

mod architecture;
mod audit;
mod cli;
mod docs;
mod hardening;
mod logs;
mod outputs;
mod pace;
mod report;
mod share;
mod size;
