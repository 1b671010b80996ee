//! Helpers of the add_dependency tests.
#![allow(dead_code)]

pub mod registry;
