//! hands-server's integration tests as one test binary (one link, not one per file).
//! Each file here is a module: a test's name is `file::test`.

mod checkpoints;
mod common;
mod events;
mod preview;
mod requests;
mod secrets;
mod sessions;
mod turns;
