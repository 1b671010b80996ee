//! Why a package manager failed, read from what it printed: the messages of npm, pnpm, yarn,
//! bun, cargo, uv, poetry and pip for a package that does not exist, a version that does not,
//! a peer dependency conflict and a registry that cannot be reached. Each cause comes with what
//! to do next. Warnings of a run that succeeded (pnpm's and bun's unmet peers) are picked out too.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why adding failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The registry has no package of that name.
    UnknownPackage,
    /// The package exists but no version matches what was asked.
    VersionNotFound,
    /// The package's peer dependencies conflict with the project's dependencies.
    PeerConflict,
    /// The registry could not be reached (refused, unknown host, a network error).
    RegistryUnreachable,
    /// The manager ran past the time limit and was stopped with everything it started.
    Timeout,
    /// The call was aborted and the manager stopped.
    Aborted,
    /// Another failure: the manager's last lines say what.
    Failed,
}

impl Cause {
    /// What the model should do about it.
    pub(crate) fn advice(self) -> &'static str {
        match self {
            Self::UnknownPackage => {
                "The registry has no package of that name: check the spelling (and the scope), \
                 or search for the right name before trying again."
            }
            Self::VersionNotFound => {
                "The package exists, but no published version matches: ask for a version that \
                 exists, or leave the version out to get the latest."
            }
            Self::PeerConflict => {
                "The package's peer dependencies conflict with versions this project already \
                 uses: add a version of it that accepts them, or upgrade the conflicting \
                 dependency in the same call. Forcing it (--force, --legacy-peer-deps) is for \
                 the user to decide."
            }
            Self::RegistryUnreachable => {
                "The package registry could not be reached: the network or the registry \
                 configured for this project (.npmrc, pip.conf, Cargo's config) is down or \
                 wrong. Tell the user; retrying at once will not help."
            }
            Self::Timeout => {
                "The package manager took too long and was stopped, with everything it \
                 started; the project may be half-installed. Often the registry does not \
                 answer: tell the user, who may raise `deps.timeout_ms`."
            }
            Self::Aborted => {
                "The call was aborted; the package manager and its children were stopped."
            }
            Self::Failed => "Read the manager's last lines below for what went wrong.",
        }
    }

    /// A short label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::UnknownPackage => "unknown package",
            Self::VersionNotFound => "version not found",
            Self::PeerConflict => "peer dependency conflict",
            Self::RegistryUnreachable => "registry unreachable",
            Self::Timeout => "timeout",
            Self::Aborted => "aborted",
            Self::Failed => "failed",
        }
    }
}

/// Markers of each cause, checked in this order (a version error also says 404 on some
/// managers, so it comes first; pip's "from versions: none" means no such package).
const MARKERS: &[(Cause, &[&str])] = &[
    (Cause::UnknownPackage, &["(from versions: none)"]),
    (
        Cause::VersionNotFound,
        &[
            "etarget",
            "no matching version found",
            "err_pnpm_no_matching_version",
            "no version matching",
            "couldn't find any versions for",
            "failed to select a version for the requirement",
            "could not find a version that satisfies the requirement",
            "because there is no version of",
            "which doesn't match any versions",
        ],
    ),
    (
        Cause::PeerConflict,
        &[
            "eresolve",
            "err_pnpm_peer_dep_issues",
            "conflicting peer dependency",
            "could not resolve dependency",
        ],
    ),
    (
        Cause::UnknownPackage,
        &[
            "e404",
            "err_pnpm_fetch_404",
            "is not in the npm registry",
            "is not in this registry",
            "could not be found in registry index",
            "could not find `",
            "no matching distribution found",
            "couldn't find package",
            "not found in the package registry",
            "was not found in the package registry",
            "could not find a matching version of package",
            "- 404",
            "404 not found",
            "error 404",
        ],
    ),
    (
        Cause::RegistryUnreachable,
        &[
            "econnrefused",
            "enotfound",
            "etimedout",
            "eai_again",
            "econnreset",
            "err_socket_timeout",
            "connection refused",
            "could not connect",
            "failed to establish a new connection",
            "unable to connect",
            "network error",
            "failed to download",
            "spurious network error",
            "connectionrefused",
            "getaddrinfo",
        ],
    ),
];

/// The cause of a failed run that printed `output`.
pub(crate) fn classify(output: &str) -> Cause {
    let lower = output.to_ascii_lowercase();
    MARKERS
        .iter()
        .find(|(_, markers)| markers.iter().any(|m| lower.contains(m)))
        .map_or(Cause::Failed, |(cause, _)| *cause)
}

/// Lines of a successful run that warn about peer dependencies, at most five.
pub(crate) fn peer_warnings(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|line| {
            let lower = line.to_ascii_lowercase();
            lower.contains("unmet peer") || lower.contains("incorrect peer dependency")
        })
        .map(|line| line.trim().trim_start_matches(['└', '─', '┬', '├', '│', ' ']).to_owned())
        .take(5)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_managers_messages_give_their_cause() {
        for (output, cause) in [
            (
                "npm error code E404\nnpm error 404 Not Found - GET http://r/x - Not found",
                Cause::UnknownPackage,
            ),
            (
                "npm error code ETARGET\nnpm error notarget No matching version found for a@9.",
                Cause::VersionNotFound,
            ),
            (
                "npm error code ERESOLVE\nnpm error ERESOLVE unable to resolve dependency tree",
                Cause::PeerConflict,
            ),
            (" ERR_PNPM_FETCH_404  GET http://r/x: Not Found - 404", Cause::UnknownPackage),
            (
                " ERR_PNPM_NO_MATCHING_VERSION  No matching version found for a@9",
                Cause::VersionNotFound,
            ),
            ("error: GET http://127.0.0.1:1/x - 404", Cause::UnknownPackage),
            (
                "error: No version matching \"9.9.9\" found for specifier \"a\"",
                Cause::VersionNotFound,
            ),
            (
                "error: the crate `nope` could not be found in registry index.",
                Cause::UnknownPackage,
            ),
            (
                "ERROR: Could not find a version that satisfies the requirement x==9 (from versions: 1.0)",
                Cause::VersionNotFound,
            ),
            (
                "ERROR: Could not find a version that satisfies the requirement x (from versions: none)\nERROR: No matching distribution found for x",
                Cause::UnknownPackage,
            ),
            (
                "npm error code ECONNREFUSED\nnpm error errno ECONNREFUSED",
                Cause::RegistryUnreachable,
            ),
            ("something else broke", Cause::Failed),
        ] {
            assert_eq!(classify(output), cause, "{output}");
        }
    }

    #[test]
    fn peer_warnings_are_picked_out() {
        let out = ".\n└─┬ peer-host 1.0.0\n  └── ✕ unmet peer peer-base@^2.0.0: found 1.0.0\n";
        assert_eq!(peer_warnings(out), ["✕ unmet peer peer-base@^2.0.0: found 1.0.0"]);
    }
}
