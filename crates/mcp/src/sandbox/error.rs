//! Why a sandbox provider cannot be built.

/// Why a provider cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// bubblewrap is not installed.
    #[error(
        "sandbox backend \"bwrap\" needs bubblewrap, but `bwrap` is not on PATH; install it \
         (Debian/Ubuntu: apt-get install bubblewrap) or set sandbox.backend = \"local\""
    )]
    BwrapMissing,
    /// `network = true` without slirp4netns: the sandbox would otherwise share the host's network.
    #[error(
        "sandbox.network = true needs slirp4netns (a network for the sandbox that cannot reach \
         the host's loopback), but `slirp4netns` is not on PATH; install it (Debian/Ubuntu: \
         apt-get install slirp4netns) or set sandbox.network = false"
    )]
    SlirpMissing,
    /// `remote` without `url`.
    #[error("sandbox backend \"remote\" needs sandbox.url (the MCP URL of a `hands serve`)")]
    UrlMissing,
    /// The hands binary to run inside could not be found.
    #[error("cannot find the hands binary to run inside the sandbox: {0}")]
    HandsMissing(String),
    /// The client runtime did not start.
    #[error("cannot start the sandbox client runtime: {0}")]
    Runtime(String),
}
