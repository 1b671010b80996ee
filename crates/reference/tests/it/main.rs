//! The integration tests of hands-reference in one test binary (one link instead of one per file): each
//! file of tests/it is a module, and a test's name is `file::test`.

mod reference;
