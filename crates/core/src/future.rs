//! The boxed future that the crate's object-safe traits return (kept out of `lib.rs`, which only
//! declares modules and re-exports, so that no file depends on the crate root).

/// A boxed, sendable future: the return type of the object-safe traits in this crate.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
