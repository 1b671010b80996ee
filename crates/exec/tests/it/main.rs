//! hands-exec's integration tests as one test binary (one link, not one per file).
//! Each file here is a module: a test's name is `file::test`.
// Tests may unwrap: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bash_basics;
mod bash_output_rss;
mod daemon_reuse;
mod process_long_run;
mod process_ready;
mod process_session;
mod process_support;
mod process_tools;
mod redact_output;
mod supervisor_common;
mod supervisor_drop;
mod supervisor_leftovers;
mod supervisor_survivors;
mod supervisor_unmarked;
mod terminal;
