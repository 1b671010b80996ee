//! hands-fs's integration tests as one test binary (one link, not one per file).
//! Each file here is a module: a test's name is `file::test`.
// Tests may unwrap: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod apply_patch;
mod approval;
mod common;
mod edit_corpus;
mod edit_file;
mod edit_props;
mod env_secrets;
mod read_file;
mod search;
mod workspace_cache;
mod write_file;
