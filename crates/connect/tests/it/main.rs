//! hands-connect's integration tests as one test binary (one link, not one per file).
//! Each file here is a module: a test's name is `file::test`.

mod common;
mod db_schema;
mod project_secrets;
mod stripe;
mod supabase;
mod supabase_setup;
