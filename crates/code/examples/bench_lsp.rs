//! Edit-to-diagnostic latency of a warm TypeScript server against `tsc --noEmit --incremental`,
//! on a generated project of FILES files (a chain of imports). Run by bench/lsp.sh (release).
//!
//! Each run breaks one line's type in the middle file with edit_file and times the call until
//! its result carries the new error (the write and the wait for the server's diagnostics), then
//! fixes it; tsc's figure is a warm incremental check of the same broken tree.
// A benchmark: a failure is the run failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use hands_core::{CoreConfig, Registry, Session, ToolCall};
use serde_json::json;

/// A field of /proc/self/status (`VmRSS`, `VmHWM`), in MiB.
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let files: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(500);
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lsp/node_modules/.bin");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("tsconfig.json"), r#"{"compilerOptions": {"strict": true, "noEmit": true, "target": "ES2020"}, "include": ["src"]}"#).unwrap();
    for i in 0..files {
        let body = if i == 0 {
            "export function f0(n: number): number {\n  return n + 1;\n}\n".to_owned()
        } else {
            format!(
                "import {{ f{p} }} from \"./m{p}\";\n\nexport function f{i}(n: number): number {{\n  return f{p}(n) + 1;\n}}\n",
                p = i - 1
            )
        };
        std::fs::write(root.join(format!("src/m{i}.ts")), body).unwrap();
    }
    let mid = files / 2;
    let target = format!("src/m{mid}.ts");
    let good = format!("  return f{}(n) + 1;", mid - 1);
    let bad = "  return \"x\";";

    let mut config = hands_code::CodeConfig::default();
    let server = bin.join("typescript-language-server").to_string_lossy().into_owned();
    config.servers.insert("typescript".into(), vec![server, "--stdio".into()]);
    config.diagnostics_wait_ms = 60_000;
    let builder = hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default());
    let registry = hands_code::register(builder, &config, &Default::default()).build();
    let session = Session::new("bench-lsp", root);
    let call = |n: usize, tool: &str, args: serde_json::Value| {
        registry.dispatch(&session, ToolCall::new(format!("c{n}"), tool, args))
    };
    // The manager's own memory: this process's RSS (the servers are child processes) before the
    // first touch and after every file was checked and the edits ran.
    let rss_before = status_mib("VmRSS");
    let started = Instant::now();
    let warm = call(0, "diagnostics", json!({"path": target})).await.unwrap();
    assert!(!warm.is_error, "{}", warm.joined_text());
    let cold_ms = started.elapsed().as_secs_f64() * 1000.0;

    let mut lsp = Vec::new();
    for run in 0..runs {
        let t = Instant::now();
        let broken = call(
            1 + 2 * run,
            "edit_file",
            json!({"path": target, "old_string": good, "new_string": bad}),
        )
        .await
        .unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let said: String = broken.notices.iter().map(|n| n.text.clone()).collect();
        assert!(said.contains("1 new error"), "run {run}: {said}");
        lsp.push(ms);
        let fixed = call(
            2 + 2 * run,
            "edit_file",
            json!({"path": target, "old_string": bad, "new_string": good}),
        )
        .await
        .unwrap();
        assert!(!fixed.is_error, "{}", fixed.joined_text());
    }
    let all = call(1 + 2 * runs, "diagnostics", json!({})).await.unwrap();
    assert!(!all.is_error, "{}", all.joined_text());
    let (rss_after, rss_peak) = (status_mib("VmRSS"), status_mib("VmHWM"));
    session.close().await;

    // tsc on the same tree, broken the same way, after a first (cold) incremental run.
    let tsc = bin.join("tsc");
    let info = root.join("tsbuildinfo");
    let run_tsc = || {
        let t = Instant::now();
        let out = std::process::Command::new(&tsc)
            .args(["--noEmit", "--incremental", "--tsBuildInfoFile"])
            .arg(&info)
            .current_dir(root)
            .output()
            .unwrap();
        (t.elapsed().as_secs_f64() * 1000.0, String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (tsc_cold, _) = run_tsc();
    let path = root.join(&target);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut tsc_ms = Vec::new();
    for _ in 0..runs {
        std::fs::write(&path, text.replace(&good, bad)).unwrap();
        let (ms, out) = run_tsc();
        assert!(out.contains("TS2322"), "{out}");
        tsc_ms.push(ms);
        std::fs::write(&path, &text).unwrap();
        run_tsc();
    }
    let (l, t) = (median(lsp), median(tsc_ms));
    println!("files: {files}, runs: {runs}");
    println!(
        "cold: server start + first diagnostics {cold_ms:.0} ms; tsc --incremental first run {tsc_cold:.0} ms"
    );
    println!("edit → new error on the edit's result (warm server), median: {l:.0} ms");
    println!("tsc --noEmit --incremental of the same break, median:       {t:.0} ms");
    println!(
        "manager memory (this process; the server is a child): RSS {rss_before:.1} MiB before the \
         first touch, {rss_after:.1} MiB after {files} files checked and {runs} edit pairs \
         (+{:.1} MiB, target at most +20 MiB), peak {rss_peak:.1} MiB",
        rss_after - rss_before
    );
    println!("difference {:+.0} ms (target: at most +300 ms), ratio {:.2}", l - t, l / t);
}
