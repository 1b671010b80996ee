//! A `[mcp_servers]` entry that runs `hands mcp` with the same user configuration used to start
//! itself without end (every inner hands read the entry and started another one — hundreds of
//! processes within seconds). A hands started by another hands as an MCP server now starts no MCP
//! servers of its own: one inner hands, its tools offered, and nothing more.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn hands_as_its_own_mcp_server_starts_once_not_forever() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root = tmp.path().join("project");
    std::fs::create_dir_all(home.join(".config/hands")).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("hands");
    // The same user configuration for the outer and the inner hands (no env of its own).
    std::fs::write(
        home.join(".config/hands/config.toml"),
        format!(
            "[mcp_servers.me]\ncommand = {:?}\nargs = [\"mcp\", \"--root\", {:?}]\n",
            bin.display().to_string(),
            root.display().to_string()
        ),
    )
    .unwrap();

    let mut child = Command::new(&bin)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove(hands_mcp::DEPTH_ENV)
        .env("HANDS_STATE_DIR", home.join("state"))
        .args(["tools", "--json", "--root"])
        .arg(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes as they fill (the tool list is larger than a pipe's buffer).
    let mut stdout_pipe = child.stdout.take().unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stdout_reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout_pipe, &mut text).unwrap();
        text
    });
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr_pipe, &mut text).unwrap();
        text
    });
    let started = Instant::now();
    let mut most = 0;
    let status = loop {
        most = most.max(descendants(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if most > 5 || started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!(
                "hands tools had {most} descendants (still running after {:?})",
                started.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = stdout_reader.join().unwrap();
    let stderr = stderr_reader.join().unwrap();
    assert!(status.success(), "{stdout}\n{stderr}");
    // The inner hands' tools are offered under the server's name...
    assert!(stdout.contains("mcp__me__read_file"), "{stdout}");
    // ...and the inner hands offers no `mcp__me__mcp__me__…` of a hands it would have started.
    assert!(!stdout.contains("mcp__me__mcp__me__"), "{stdout}");
    // One inner hands at most (it may have exited by the time we look).
    assert!(most <= 1, "{most} descendants of hands tools: the inner hands started more");
}

/// How many processes descend from `pid` (read from /proc).
fn descendants(pid: u32) -> usize {
    let mut parents = std::collections::HashMap::<u32, Vec<u32>>::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The parent is the second field after the command's closing parenthesis.
        let Some(after) = stat.rsplit_once(") ") else { continue };
        let Some(ppid) = after.1.split_whitespace().nth(1).and_then(|p| p.parse().ok()) else {
            continue;
        };
        parents.entry(ppid).or_default().push(child);
    }
    let mut count = 0;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        for &c in parents.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            count += 1;
            stack.push(c);
        }
    }
    count
}
