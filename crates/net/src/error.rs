//! What can go wrong with a fetch, each message telling the model what to do next.

use std::net::IpAddr;

use crate::Forbidden;

/// A refused or failed fetch.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NetError {
    /// The URL does not parse.
    #[error("{url:?} is not a valid URL ({reason}). Give an absolute http:// or https:// URL.")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What the parser said.
        reason: String,
    },
    /// Not http or https.
    #[error(
        "{scheme}:// URLs are not fetched: hands fetches only http:// and https:// URLs. Give the \
         http(s) URL of the resource."
    )]
    Scheme {
        /// The URL's scheme.
        scheme: String,
    },
    /// A user name or password in the URL.
    #[error(
        "{url} carries a user name or password, which hands never sends in a URL. Give the URL \
         without `user:password@`; a credential belongs in a stored secret that a tool sends as \
         a header."
    )]
    Userinfo {
        /// The URL with its credentials removed.
        url: String,
    },
    /// The host resolves to (or is) an address of this machine's own network.
    #[error(
        "{host} is {reason} ({addr}): hands does not fetch from this machine or its network \
         unless the user allows the host in [net] allow_hosts of their own config. Use a public \
         URL, or ask the user to allow {host}."
    )]
    Forbidden {
        /// The host as the URL names it.
        host: String,
        /// The refused address.
        addr: IpAddr,
        /// Why it is refused.
        reason: Forbidden,
    },
    /// The name did not resolve.
    #[error("{host} could not be resolved ({message}). Check the host name.")]
    Dns {
        /// The host.
        host: String,
        /// What the resolver said.
        message: String,
    },
    /// More redirects than `[net] max_redirects`.
    #[error(
        "{url} redirected more than {max} times; hands stopped following. Fetch the final URL \
         directly if you know it."
    )]
    TooManyRedirects {
        /// The URL first asked for.
        url: String,
        /// The limit.
        max: u8,
    },
    /// A redirect without a usable `Location`.
    #[error("{url} answered with a redirect whose Location {location:?} is not a valid URL.")]
    BadRedirect {
        /// The URL that redirected.
        url: String,
        /// Its Location header.
        location: String,
    },
    /// The body is larger than allowed.
    #[error(
        "{url} sent more than {limit} bytes (after decompression), the most allowed; the \
         download was stopped and nothing was kept. Ask for a larger max_bytes if the resource \
         is meant to be that large."
    )]
    TooLarge {
        /// The URL.
        url: String,
        /// The cap in bytes.
        limit: u64,
    },
    /// A connect or read timeout.
    #[error(
        "{url} did not answer in time (the {what} timeout of {ms} ms); nothing was kept. Try \
         again later or use another source."
    )]
    Timeout {
        /// The URL.
        url: String,
        /// `connect` or `read`.
        what: &'static str,
        /// The limit.
        ms: u64,
    },
    /// The call was cancelled.
    #[error("the fetch of {url} was stopped (timeout or abort); nothing was kept.")]
    Cancelled {
        /// The URL.
        url: String,
    },
    /// Any other connection or protocol failure.
    #[error("fetching {url} failed: {message}")]
    Http {
        /// The URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The `[net]` settings cannot build a client.
    #[error("the [net] settings are invalid: {0}")]
    Config(String),
}
