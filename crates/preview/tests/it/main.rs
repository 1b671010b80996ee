//! hands-preview's integration tests as one test binary (one link, not one per file).
//! Each file here is a module: a test's name is `file::test`.
// Tests may unwrap: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attach;
mod bad_input;
mod bun;
mod common;
mod interact;
mod lifecycle;
mod specs;
mod static_site;
mod vite;
