//! How logs are read: each server's format, several logs merged by time,
//! rows out of order and rotated files.

mod deployed;
mod formats;
mod merge;
mod order;
