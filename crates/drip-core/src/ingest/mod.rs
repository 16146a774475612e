//! Reading logs: everything that turns bytes into time-ordered rows.
//! Files and compression, CSV and line formats (`log`), timestamps, keys,
//! re-sorting and merging. Nothing here imports a command or the CLI.

pub mod batch;
mod columns;
pub mod csv_lines;
pub mod input;
pub mod key_values;
pub mod keys;
mod line_rows;
pub mod lines;
pub mod log;
pub mod marks;
pub mod open;
pub mod order;
pub mod peek;
pub mod quotes;
pub mod reader;
pub mod rotated;
mod rows;
pub mod stream;
pub mod timestamp;
pub mod window;
