//! Helpers of the supervisor and bash tests: an independent /proc scan for marked processes and
//! zombie children, unique session ids, and a test configuration.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hands_core::Session;
use hands_exec::ExecConfig;

/// A session over a fresh temp root with an id no other test (or test binary) uses.
pub fn session(name: &str) -> (tempfile::TempDir, Session) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = tempfile::tempdir().unwrap();
    let id = format!("{name}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    let s = Session::new(id, dir.path());
    (dir, s)
}

/// The default configuration with a short grace period (the escalation is what is tested).
pub fn config() -> ExecConfig {
    let mut config = ExecConfig::default();
    config.processes.stop_grace_ms = 300;
    config
}

/// Live (non-zombie) processes whose environment carries `HANDS_SESSION=<session>`, read straight
/// from /proc without the crate's code.
pub fn marked(session: &str) -> Vec<u32> {
    let needle = format!("HANDS_SESSION={session}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == std::process::id() {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        if environ.split(|&b| b == 0).any(|var| var == needle.as_bytes()) && !is_zombie(pid) {
            found.push(pid);
        }
    }
    found
}

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

fn is_zombie(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f[0] == "Z")
}

/// Zombies whose parent is this test process.
pub fn zombies() -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Some(f) = stat_fields(pid)
            && f[0] == "Z"
            && f[1] == me
        {
            found.push(pid);
        }
    }
    found
}

/// Wait (bounded) until `check` returns an empty list; the last list.
pub async fn settle(mut check: impl FnMut() -> Vec<u32>, within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left = check();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
