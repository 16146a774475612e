//! The core's integration tests, one binary: a module per theme.

mod candidates;
mod merge;
