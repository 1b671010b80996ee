//! Benchmark of the process machinery, run by `bench/exec.sh`:
//!
//! 1. per-call overhead: N sequential `true` through the bash tool inside one process, against N
//!    sequential `bash -c true` spawned directly with std::process::Command;
//! 2. drain throughput: `yes | head -c 1G` through the bash tool, in MB/s, with the peak RSS of
//!    this process (VmHWM).
//!
//! Usage: `cargo run --release -p hands-exec --example bench_exec -- [N] [MB]`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Instant;

use hands_core::{CoreConfig, Registry, Session, ToolCall};
use serde_json::json;

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let mb: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let root = tempfile::tempdir().unwrap();
    let registry =
        hands_exec::register(Registry::builder(CoreConfig::default()), &Default::default()).build();
    let session = Session::new("bench", root.path());

    // Warm up both paths.
    for i in 0..5 {
        registry
            .dispatch(&session, ToolCall::new(format!("w{i}"), "bash", json!({"command": "true"})))
            .await
            .unwrap();
        std::process::Command::new("bash").args(["-c", "true"]).output().unwrap();
    }

    let started = Instant::now();
    for i in 0..n {
        let out = registry
            .dispatch(&session, ToolCall::new(format!("t{i}"), "bash", json!({"command": "true"})))
            .await
            .unwrap();
        assert!(!out.is_error, "{}", out.joined_text());
    }
    let hands = started.elapsed() / n as u32;

    let started = Instant::now();
    for _ in 0..n {
        let status = std::process::Command::new("bash").args(["-c", "true"]).status().unwrap();
        assert!(status.success());
    }
    let direct = started.elapsed() / n as u32;

    let command = format!("yes | head -c {}", mb * 1024 * 1024);
    let started = Instant::now();
    let out = registry
        .dispatch(
            &session,
            ToolCall::new("flood", "bash", json!({"command": command, "timeout": 600000})),
        )
        .await
        .unwrap();
    let flood = started.elapsed();
    let structured = out.structured.clone().unwrap_or_default();
    assert_eq!(structured["output_bytes"], json!(mb * 1024 * 1024), "{structured}");
    session.close().await;

    println!("per-call overhead ({n} sequential `true`):");
    println!("  hands bash tool      {:>8.2} ms/call", hands.as_secs_f64() * 1e3);
    println!("  bash -c true direct  {:>8.2} ms/call", direct.as_secs_f64() * 1e3);
    println!(
        "  ratio                {:>8.2}x  (target <= 1.3x)",
        hands.as_secs_f64() / direct.as_secs_f64()
    );
    println!("drain of {mb} MiB (`yes | head -c`):");
    println!(
        "  throughput           {:>8.0} MB/s  (target >= 500)",
        (mb * 1024 * 1024) as f64 / 1e6 / flood.as_secs_f64()
    );
    println!("  dropped bytes        {:>8}", structured["dropped_bytes"]);
    println!("  peak RSS (VmHWM)     {:>8.1} MB", vm_hwm_kb() as f64 / 1024.0);
}
