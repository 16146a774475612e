//! The command line as a person meets it: help, man pages, shell
//! completions and progress on a terminal.

mod completions;
mod help;
mod hostile;
mod man;
mod progress;
