//! hands-code's integration tests as one test binary: real language servers (typescript-language-
//! server and pyright, installed by `npm ci` in tests/lsp) and misbehaving fake ones, driven
//! through a real registry with the file tools, as a front end would.
// Tests may unwrap: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fake;
mod python;
mod rust;
mod specs;
mod typescript;
