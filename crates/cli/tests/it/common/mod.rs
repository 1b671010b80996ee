//! Helpers shared by the CLI's black-box tests.
#![allow(dead_code, clippy::unwrap_used)]

/// Pids of live (non-zombie) processes with an environment variable that starts with `prefix`
/// (`NAME=value…`), read straight from /proc, independently of hands' own code.
pub fn live_with_env(prefix: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
        if !zombie && env.split(|b| *b == 0).any(|var| var.starts_with(prefix.as_bytes())) {
            found.push(pid);
        }
    }
    found
}
