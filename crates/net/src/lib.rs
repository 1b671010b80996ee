//! The egress guard of hands: the one HTTP client every fetching tool uses, which cannot be
//! pointed at this machine or its network.
//!
//! http and https only; no credentials in URLs; every address — written in the URL in any form
//! or resolved from a name — is classified ([`classify`]) and loopback, private, link-local
//! (cloud metadata), CGNAT, unique-local, multicast and reserved addresses are refused unless the
//! user allows the host (`[net] allow_hosts`, `allow_private`); redirects are followed by hand and
//! each target re-checked; the body is capped after decompression; connect and read timeouts;
//! proxy variables ignored unless `[net] proxy` is set.
//!
//! ```no_run
//! # async fn demo() -> Result<(), hands_net::NetError> {
//! let guard = hands_net::Guard::new(&hands_net::NetConfig::default())?;
//! let token = hands_core::CancellationToken::new();
//! let page = guard.send(hands_net::Request::get("https://example.com/").max_bytes(1 << 20), &token).await?;
//! assert!(page.body.len() <= 1 << 20);
//! # Ok(()) }
//! ```

mod allow;
mod classify;
mod config;
mod error;
mod guard;

pub use allow::{check_addr, host_allowed};
pub use classify::{Forbidden, classify};
pub use config::NetConfig;
pub use error::NetError;
pub use guard::{DEFAULT_MAX_BYTES, Fetched, Guard, Method, Request};
