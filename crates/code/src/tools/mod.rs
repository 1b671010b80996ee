//! The tools: diagnostics and code_navigation.

pub mod diagnostics;
pub mod navigate;
