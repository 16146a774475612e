//! The replay engine: time-ordered rows × policies → counts, waits and
//! decisions. One engine serves `audit`, `size` and `pace --replay`'s
//! checks; the nginx.conf executor (`conf`) is one more kind of policy run.

pub mod compare;
pub mod conf;
pub mod exec;
mod lanes;
pub mod loops;
pub mod outcome;
pub mod replay;
pub mod run;
pub mod tally;
