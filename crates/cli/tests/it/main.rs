//! hands' integration tests as one test binary (one link, not one per file).
//! Each file here is a module: a test's name is `file::test`.
// Tests may unwrap: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod add_dependency;
mod child_env;
mod cli;
mod code_mcp;
mod common;
mod connect;
mod connectors;
mod download_to_repo;
mod escape;
mod hostile_repo;
mod import_cycles;
mod interrupted;
mod leftovers;
mod mcp_http;
mod mcp_self;
mod mcp_stdio;
mod parse_document;
mod private_files;
mod race;
mod readme;
mod reference_project;
mod results;
mod roots;
mod run;
mod sandbox_bwrap;
mod sandbox_confined;
mod schemas;
mod secrets;
mod secrets_canary;
mod secrets_mcp;
mod serde_defaults;
mod serve_api;
mod session_tools;
mod specs;
mod state_modes;
mod terminal;
mod tool_names;
mod web_tools;
