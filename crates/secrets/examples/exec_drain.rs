//! The bash tool's output drain (`bench/exec.sh`'s flood) with the redaction engine installed,
//! against the same drain without one: `yes | head -c` (bench/exec.sh's text) and output-like
//! text (words, paths, `sk_`, `ghp`, `-----`) `cat` from a file. `bash bench/exec.sh N MIB SECRETS`
//! runs it.
//!
//! `cargo run --release -p hands-secrets --example exec_drain -- [SECRETS] [MIB]`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use hands_core::redact::{self, Nothing};
use hands_core::{CoreConfig, Registry, Session, ToolCall};
use hands_secrets::Engine;
use serde_json::json;

/// A small deterministic generator (xorshift), so every run measures the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn secrets(rng: &mut Rng, count: usize) -> Vec<(String, String)> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-/+=";
    (0..count)
        .map(|i| {
            let len = 20 + (rng.next() % 44) as usize;
            let value: String = (0..len)
                .map(|_| ALPHABET[(rng.next() % ALPHABET.len() as u64) as usize] as char)
                .collect();
            (format!("SECRET_{i}"), value)
        })
        .collect()
}

fn output_text(rng: &mut Rng, len: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "Compiling",
        "warning:",
        "error[E0308]:",
        "src/main.rs:42:7",
        "test",
        "ok",
        "passed",
        "  --> ",
        "Finished",
        "release",
        "in",
        "0.42s",
        "GET /api/users 200",
        "npm",
        "WARN",
        "node_modules/.bin/vite",
        "localhost:5173",
        "{\"level\":\"info\"}",
        "sk_",
        "ghp",
        "AKID",
        "-----",
        "a3f9c2e1d0b4",
        "Downloading",
        "serde_json",
        "v1.0.140",
        "=>",
        "|",
        "#",
    ];
    let mut out = Vec::with_capacity(len + 200);
    while out.len() < len {
        for _ in 0..4 + rng.next() % 12 {
            out.extend_from_slice(WORDS[(rng.next() % WORDS.len() as u64) as usize].as_bytes());
            out.push(b' ');
        }
        out.push(b'\n');
    }
    out.truncate(len);
    out
}

/// MB/s of the bash tool draining `command`, which prints `bytes` bytes.
async fn flood(registry: &Registry, session: &Session, command: &str, bytes: u64) -> f64 {
    let call = json!({"command": command, "timeout": 600000});
    let started = Instant::now();
    let out = registry.dispatch(session, ToolCall::new("flood", "bash", call)).await.unwrap();
    let took = started.elapsed();
    let structured = out.structured.clone().unwrap_or_default();
    assert_eq!(structured["output_bytes"], json!(bytes), "{structured}");
    bytes as f64 / 1e6 / took.as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().map_or(1000, |a| a.parse().expect("SECRETS: a number"));
    let mib: u64 = args.next().map_or(1024, |a| a.parse().expect("MIB: a number"));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let stored = secrets(&mut rng, count);
    let engine =
        Arc::new(Engine::new(stored.iter().map(|(n, v)| (n.as_str(), v.as_str()))).unwrap());

    let root = tempfile::tempdir().unwrap();
    // 8 MiB of output-like text, printed mib / 8 times.
    std::fs::write(root.path().join("out.txt"), output_text(&mut rng, 8 << 20)).unwrap();
    let registry =
        hands_exec::register(Registry::builder(CoreConfig::default()), &Default::default()).build();
    let session = Session::new("bench", root.path());
    let bytes = mib << 20;
    let yes = format!("yes | head -c {bytes}");
    let text = format!("for i in $(seq {}); do cat out.txt; done", mib.div_ceil(8));
    let text_bytes = mib.div_ceil(8) << 23;

    println!("bash tool drain of {mib} MiB, {count} stored secrets (MB/s):");
    println!("  {:<28} {:>10} {:>12} {:>7}", "output", "no engine", "with engine", "ratio");
    for (name, command, bytes) in
        [("yes | head -c", &yes, bytes), ("output-like text (cat)", &text, text_bytes)]
    {
        redact::install(Arc::new(Nothing));
        flood(&registry, &session, "true", 0).await;
        let plain = flood(&registry, &session, command, bytes).await;
        redact::install(engine.clone());
        let scrubbed = flood(&registry, &session, command, bytes).await;
        println!("  {name:<28} {plain:>10.0} {scrubbed:>12.0} {:>6.0}%", scrubbed / plain * 100.0);
    }
    session.close().await;
}
