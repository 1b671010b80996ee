//! hands-reference's integration tests as one test binary (one link, not one per file).
//! Each file here is a module: a test's name is `file::test`.

mod reference;
