//! The `hands` binary.
fn main() {}
