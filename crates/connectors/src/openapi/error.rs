//! Why an OpenAPI document was refused, and how large one may be.

/// The largest document read.
pub const MAX_DOCUMENT_BYTES: usize = 10 * 1024 * 1024;

/// Why a document was refused.
#[derive(Debug, thiserror::Error)]
pub enum OpenApiError {
    /// Over [`MAX_DOCUMENT_BYTES`].
    #[error("the document is {0} bytes; at most {MAX_DOCUMENT_BYTES} are read")]
    TooLarge(usize),
    /// Not JSON or YAML, not OpenAPI 3, or not the shape OpenAPI says.
    #[error("{0}")]
    Malformed(String),
    /// A `$ref` that points nowhere, outside the document, or into a loop.
    #[error("{0}")]
    Reference(String),
    /// Something the connector cannot express.
    #[error("{0}")]
    Unsupported(String),
}
