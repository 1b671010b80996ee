//! The cost of redaction with many stored secrets (bench/redact.sh runs it in release):
//! (a) a process-output stream through `hands_core::redact::Scrubber` in 64 KiB chunks, with the
//! engine installed and without, (b) `hands_core::redact::text` on a 32 KiB tool result.
//!
//! `cargo run --release -p hands-secrets --example redact_bench -- [SECRETS] [MIB]`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use hands_core::redact::{self, Nothing, Scrubber};
use hands_secrets::Engine;

/// A small deterministic generator (xorshift), so every run measures the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// Build output-like text: words, paths, numbers, hex ids, lines of 40 to 120 bytes.
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
        "target(s)",
        "in",
        "0.42s",
        "GET /api/users 200",
        "npm",
        "WARN",
        "deprecated",
        "node_modules/.bin/vite",
        "ready",
        "localhost:5173",
        "{\"level\":\"info\",\"msg\":\"request\"}",
        "sk_",
        "ghp",
        "AKID",
        "-----",
        "base64",
        "a3f9c2e1d0b4",
        "Downloading",
        "crates",
        "serde_json",
        "v1.0.140",
        "=>",
        "|",
        "#",
    ];
    let mut out = Vec::with_capacity(len + 200);
    while out.len() < len {
        let words = 4 + rng.next() % 12;
        for _ in 0..words {
            out.extend_from_slice(rng.pick(WORDS).as_bytes());
            out.push(b' ');
        }
        out.push(b'\n');
    }
    out.truncate(len);
    out
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

/// Bytes per second of `total` bytes of `text` pushed through a Scrubber in 64 KiB chunks.
fn drain(text: &[u8], total: usize) -> f64 {
    let mut scrubber = Scrubber::new();
    let mut out = Vec::with_capacity(128 * 1024);
    let start = Instant::now();
    let mut done = 0;
    while done < total {
        for chunk in text.chunks(64 * 1024) {
            out.clear();
            scrubber.push(chunk, &mut out);
            std::hint::black_box(&out);
            done += chunk.len();
        }
    }
    out.clear();
    scrubber.finish(&mut out);
    done as f64 / start.elapsed().as_secs_f64()
}

fn per_call(text: &str, rounds: u32) -> Duration {
    let start = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(redact::text(std::hint::black_box(text)));
    }
    start.elapsed() / rounds
}

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().map_or(1000, |a| a.parse().expect("SECRETS: a number"));
    let mib: usize = args.next().map_or(1024, |a| a.parse().expect("MIB: a number"));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let stored = secrets(&mut rng, count);
    let text = output_text(&mut rng, 8 << 20);
    let total = mib << 20;

    let built = Instant::now();
    let engine = Engine::new(stored.iter().map(|(n, v)| (n.as_str(), v.as_str()))).unwrap();
    let build = built.elapsed();
    let patterns = engine.longest();

    redact::install(Arc::new(Nothing));
    let plain = drain(&text, total);
    redact::install(Arc::new(engine));
    let scrubbed = drain(&text, total);

    // A 32 KiB result, without a secret (the common case) and with one near its end.
    let result = String::from_utf8(text[..32 * 1024].to_vec()).unwrap();
    let mut dirty = result.clone();
    dirty.truncate(32 * 1024 - 100);
    dirty.push_str(&stored[count / 2].1);
    let clean_cost = per_call(&result, 2000);
    let dirty_cost = per_call(&dirty, 2000);
    assert!(redact::text(&dirty).contains(&format!("[secret:{}]", stored[count / 2].0)));

    println!(
        "secrets                 {count} (engine built in {build:.1?}, longest pattern {patterns} B)"
    );
    println!("drain without engine    {:.2} GB/s ({mib} MiB in 64 KiB chunks)", plain / 1e9);
    println!("drain with engine       {:.2} GB/s", scrubbed / 1e9);
    println!(
        "drain ratio             {:.0}% (of a drain that only copies)",
        scrubbed / plain * 100.0
    );
    // bench/exec.sh's drain (pipe read, head/tail buffer) runs at 1.25–1.7 GB/s; scrubbing in the
    // same thread adds its cost per byte.
    for base in [1.25e9, 1.7e9] {
        let with = 1.0 / (1.0 / base + 1.0 / scrubbed);
        println!(
            "exec drain {:.2} GB/s     -> {:.2} GB/s with the scrubber in line ({:.0}%)",
            base / 1e9,
            with / 1e9,
            with / base * 100.0
        );
    }
    println!("text() 32 KiB clean     {clean_cost:.1?} (budget 50 µs)");
    println!("text() 32 KiB w/ secret {dirty_cost:.1?}");
}
