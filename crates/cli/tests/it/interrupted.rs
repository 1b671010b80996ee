//! Interrupted writes: `hands call write_file` of a multi-MB file killed with SIGKILL at a random
//! moment, 200 times. The target must always hold the complete old or the complete new content,
//! and no temp file may be left behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn hands() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("hands"))
}

/// A small deterministic generator (no extra crate): xorshift.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn spawn_write(root: &std::path::Path, payload: &[u8]) -> std::process::Child {
    let mut child = hands()
        .args(["call", "write_file", "-", "--root"])
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The child may be killed before it reads everything: ignore broken pipes.
    let _ = stdin.write_all(payload);
    drop(stdin);
    child
}

#[test]
fn sigkill_during_write_leaves_old_or_new_content() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let versions: Vec<String> =
        (0..2).map(|v| format!("version {v}\n").repeat(400_000 + v * 50_000)).collect();
    assert!(versions[0].len() >= 4_000_000);
    let payloads: Vec<Vec<u8>> = versions
        .iter()
        .map(|content| {
            serde_json::json!({"path": "big.txt", "content": content}).to_string().into_bytes()
        })
        .collect();

    // One uninterrupted write to learn how long a write takes here.
    let started = Instant::now();
    let status = spawn_write(root, &payloads[0]).wait().unwrap();
    assert!(status.success());
    let full = started.elapsed();
    assert_eq!(std::fs::read_to_string(root.join("big.txt")).unwrap(), versions[0]);

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut killed, mut completed) = (0, 0);
    for i in 0..200 {
        let next = &payloads[(i + 1) % 2];
        let delay = Duration::from_micros(rng.next() % (full.as_micros() as u64 * 12 / 10 + 1));
        let mut child = spawn_write(root, next);
        std::thread::sleep(delay.saturating_sub(Duration::from_millis(0)));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        if status.success() {
            completed += 1
        } else {
            killed += 1
        }
        let now = std::fs::read(root.join("big.txt")).unwrap();
        assert!(
            now == versions[0].as_bytes() || now == versions[1].as_bytes(),
            "iteration {i}: big.txt holds {} bytes that are neither version",
            now.len()
        );
    }
    assert!(killed >= 20, "too few writes were interrupted ({killed}) to prove anything");
    // The temp file is anonymous (O_TMPFILE) until the instant before its rename; a kill in that
    // instant leaves its name, which the next write in the folder removes once it is older than
    // a live writer's could be (2 s).
    std::thread::sleep(Duration::from_millis(2100));
    let status = spawn_write(root, &payloads[0]).wait().unwrap();
    assert!(status.success());
    let names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["big.txt"], "interrupted writes left files behind");
    println!("200 writes: {killed} killed mid-way, {completed} completed; target always whole");
}
