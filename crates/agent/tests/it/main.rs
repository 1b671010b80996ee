//! hands-agent's integration tests as one test binary (one link, not one per file).
//! Each file here is a module: a test's name is `file::test`.
// Tests may unwrap: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ask_user;
mod host_redact;
mod host_turns;
mod host_user;
mod loop_sampling;
mod loop_support;
mod loop_turn;
mod provider_anthropic;
mod provider_openai;
mod provider_scripted;
mod provider_support;
mod secrets;
mod todo_write;
mod use_skill;
