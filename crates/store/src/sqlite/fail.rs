//! [`Fail`]: the error of a closure run on a connection, turned into the trait's error at the edge.

use crate::StoreError;

/// Why a database closure failed: a store error of its own making, or SQLite's.
#[derive(Debug)]
pub(crate) enum Fail {
    Store(StoreError),
    Sqlite(rusqlite::Error),
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

impl Fail {
    /// The trait's error; SQLite's failures become `Backend`, prefixed with `context` (the call,
    /// or the file being opened).
    pub(crate) fn into_store(self, context: &str) -> StoreError {
        match self {
            Self::Store(e) => e,
            Self::Sqlite(e) => {
                let hint = match e.sqlite_error_code() {
                    Some(rusqlite::ErrorCode::NotADatabase) => {
                        " (not a hands session database: move it away or set [store] path)"
                    }
                    _ => "",
                };
                StoreError::Backend(format!("{context}: {e}{hint}"))
            }
        }
    }
}
