//! `[sandbox] network = true` for bwrap: the sandbox still gets its own network namespace
//! (`--unshare-net`), and slirp4netns gives it a user-mode network stack there — outgoing
//! connections work, but with `--disable-host-loopback` nothing inside reaches the host's loopback
//! (hands' own server, databases and dev servers bound to 127.0.0.1).
//!
//! slirp4netns is attached once the inner hands has answered the MCP handshake (bwrap has set the
//! namespace up by then: attached earlier, it races bwrap's own loopback setup) and before the
//! first call, so no tool runs before the network is up. It is killed with the sandbox (the
//! [`Slirp`] guard lives as long as the inner hands' connection).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The interface slirp4netns creates inside the sandbox.
const TAP: &str = "tap0";

/// How long bwrap gets to create the namespace, and slirp4netns to configure it.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);

/// How often the namespace and the route are looked for.
const POLL: Duration = Duration::from_millis(10);

/// The slirp4netns command line (after the program) for the namespace of `pid`.
pub(crate) fn slirp_args(pid: u32) -> Vec<String> {
    vec![
        // Address, route and DNS inside (10.0.2.100/24, gateway 10.0.2.2, DNS 10.0.2.3).
        "--configure".into(),
        // 10.0.2.2 would otherwise be the host's 127.0.0.1.
        "--disable-host-loopback".into(),
        "--mtu=65520".into(),
        // Its stdin is a pipe whose write end only hands holds: should hands die without
        // killing it, slirp4netns ends by itself.
        "--exit-fd=0".into(),
        pid.to_string(),
        TAP.into(),
    ]
}

/// A running slirp4netns, killed (and reaped by the runtime) when dropped.
pub(crate) struct Slirp {
    _child: tokio::process::Child,
    /// The write end of its exit pipe.
    _exit: std::io::PipeWriter,
}

/// Give the sandbox started as `bwrap_pid` its network through `slirp` (the slirp4netns binary).
pub(crate) async fn attach(slirp: &Path, bwrap_pid: u32) -> Result<Slirp, String> {
    let deadline = Instant::now() + ATTACH_TIMEOUT;
    let inner = loop {
        if let Some(pid) = namespaced_child(bwrap_pid) {
            break pid;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "bwrap (pid {bwrap_pid}) made no network namespace within {} s",
                ATTACH_TIMEOUT.as_secs()
            ));
        }
        tokio::time::sleep(POLL).await;
    };
    let (exit_read, exit_write) =
        std::io::pipe().map_err(|err| format!("cannot make slirp4netns's exit pipe: {err}"))?;
    let mut child = tokio::process::Command::new(slirp)
        .args(slirp_args(inner))
        .env_clear()
        .envs(hands_core::env::ChildEnv::vars())
        .stdin(Stdio::from(exit_read))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot start {}: {err}", slirp.display()))?;
    let said = drain(child.stderr.take());
    let route = PathBuf::from(format!("/proc/{inner}/net/route"));
    loop {
        if has_default_route(&route) {
            return Ok(Slirp { _child: child, _exit: exit_write });
        }
        if let Ok(Some(status)) = child.try_wait() {
            // Let the drain read its last words.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let said = said.lock().unwrap_or_else(PoisonError::into_inner).join("\n");
            return Err(format!(
                "{} ended before the network was up ({status}); it said:\n{said}",
                slirp.display()
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{} did not configure the sandbox's network within {} s",
                slirp.display(),
                ATTACH_TIMEOUT.as_secs()
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Read slirp4netns's chatter (it writes progress to stderr) into the debug log, keeping the last
/// lines for an error message.
fn drain(stderr: Option<tokio::process::ChildStderr>) -> Arc<Mutex<Vec<String>>> {
    use tokio::io::AsyncBufReadExt as _;
    let said = Arc::new(Mutex::new(Vec::new()));
    if let Some(stderr) = stderr {
        let keep = Arc::clone(&said);
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "slirp4netns", "{line}");
                let mut kept = keep.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.len() == 10 {
                    kept.remove(0);
                }
                kept.push(line);
            }
        });
    }
    said
}

/// A child of `pid` that is in another network namespace than hands.
fn namespaced_child(pid: u32) -> Option<u32> {
    let own = std::fs::read_link("/proc/self/ns/net").ok()?;
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children
        .split_whitespace()
        .filter_map(|c| c.parse::<u32>().ok())
        .find(|child| std::fs::read_link(format!("/proc/{child}/ns/net")).is_ok_and(|ns| ns != own))
}

/// True once `route` (a `/proc/PID/net/route`) has a default route through the tap device.
fn has_default_route(route: &Path) -> bool {
    std::fs::read_to_string(route).is_ok_and(|text| {
        text.lines().skip(1).any(|line| {
            let mut fields = line.split_whitespace();
            fields.next() == Some(TAP) && fields.next() == Some("00000000")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slirp_cannot_reach_the_host_loopback() {
        let args = slirp_args(4242);
        assert_eq!(
            args,
            [
                "--configure",
                "--disable-host-loopback",
                "--mtu=65520",
                "--exit-fd=0",
                "4242",
                "tap0"
            ]
        );
    }

    #[test]
    fn default_route_is_read_from_the_route_table() {
        let dir = tempfile::tempdir().unwrap();
        let route = dir.path().join("route");
        let head = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n";
        std::fs::write(&route, format!("{head}tap0\t0002000A\t00000000\t0001\n")).unwrap();
        assert!(!has_default_route(&route));
        std::fs::write(&route, format!("{head}tap0\t00000000\t0202000A\t0003\n")).unwrap();
        assert!(has_default_route(&route));
    }
}
