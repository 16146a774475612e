//! The replay engine: time-ordered rows × policies → counts, waits and
//! decisions. One engine serves `audit` and `size`; the nginx.conf
//! executor (`conf`) is one more kind of run beside a policy and a stack.

pub mod candidates;
pub mod compare;
pub mod conf;
pub mod config_run;
pub mod counts;
pub mod exec;
pub mod haproxy;
mod hurt;
mod lanes;
pub mod loops;
pub mod merge;
pub mod outcome;
pub mod replay;
pub mod replayer;
pub mod replicas;
pub mod run;
pub mod tally;
pub mod traefik;
