//! The backend's errors: a driver error as a `StoreError`, never with the URL in it.

use crate::StoreError;

/// A `Backend` error for `op` from a driver error; never holds the URL (nor its password).
pub(crate) fn backend(op: &str, e: &tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Backend(format!("{op}: {} ({})", db.message(), db.code().code())),
        None => {
            let mut why = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                why.push_str(&format!(": {inner}"));
                source = inner.source();
            }
            StoreError::Backend(format!("{op}: {why}"))
        }
    }
}
