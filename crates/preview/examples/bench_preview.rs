//! Benchmark of the preview on the Vite fixture (bench/preview.sh runs it): time from preview_open
//! to `ready` (cold, then warm, with the time spent in each stage), preview_open on a running
//! preview, the time from an error thrown in the page to its appearance in read_runtime_errors,
//! and the memory of the browser's processes. Everything goes through the tools, dispatched by a
//! registry as a front end would.
//!
//! Usage: bench_preview [RUNS, default 5] [ERRORS, default 30] [--screenshot FILE]
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hands_core::{Content, CoreConfig, Registry, Session, ToolCall, ToolOutput};
use hands_exec::ExecConfig;
use hands_preview::PreviewConfig;
use serde_json::{Value, json};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/preview/fixtures/vite-app")
}

/// A copy of the fixture with its node_modules linked.
fn project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy(&fixture(), tmp.path());
    tmp
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let name = entry.file_name();
        if [".vite-cache", "dist", ".hands"].iter().any(|s| name == *s) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if name == "node_modules" {
            std::os::unix::fs::symlink(&src, &dst).unwrap();
        } else if entry.file_type().unwrap().is_dir() {
            copy(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

struct Bench {
    registry: Registry,
    session: Session,
    _project: tempfile::TempDir,
}

impl Bench {
    fn new(n: usize) -> Self {
        let project = project();
        let exec = ExecConfig::default();
        let builder = hands_exec::register(Registry::builder(CoreConfig::default()), &exec);
        let registry =
            hands_preview::register(builder, &PreviewConfig::default(), &exec, project.path())
                .build();
        let session = Session::new(format!("bench-preview-{n}"), project.path());
        Self { registry, session, _project: project }
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        let call = ToolCall::new(self.session.next_call_id(), tool, args);
        self.registry.dispatch(&self.session, call).await.unwrap()
    }

    fn root(&self) -> &Path {
        self.session.root()
    }
}

/// Open, while another task polls preview_status to see when each stage begins.
async fn timed_open(bench: &Bench) -> (Duration, Vec<(String, Duration)>) {
    let began = Instant::now();
    let mut stages: Vec<(String, Duration)> = Vec::new();
    let open = bench.call("preview_open", json!({}));
    tokio::pin!(open);
    let out = loop {
        tokio::select! {
            out = &mut open => break out,
            () = tokio::time::sleep(Duration::from_millis(2)) => {
                let status = bench.call("preview_status", json!({})).await;
                let stage = status.structured.as_ref().and_then(|s| s["stage"].as_str()).unwrap_or("").to_owned();
                if stages.last().is_none_or(|(s, _)| *s != stage) {
                    stages.push((stage, began.elapsed()));
                }
            }
        }
    };
    let took = began.elapsed();
    assert!(!out.is_error, "preview_open failed: {}", out.joined_text());
    stages.push(("ready".into(), took));
    (took, stages)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn now_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let i = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[i]
}

/// Evaluate `expression` in the preview's page through the discovery file's endpoint.
struct Page {
    cdp: std::sync::Arc<hands_preview::cdp::Cdp>,
    session: String,
}

impl Page {
    async fn attach(root: &Path) -> Self {
        let text = std::fs::read_to_string(root.join(".hands/devtools.json")).unwrap();
        let discovery: Value = serde_json::from_str(&text).unwrap();
        let (cdp, _events) =
            hands_preview::cdp::Cdp::connect(discovery["browserWsEndpoint"].as_str().unwrap())
                .await
                .unwrap();
        let attached = cdp
            .call(
                "Target.attachToTarget",
                json!({"targetId": discovery["targetId"], "flatten": true}),
                None,
            )
            .await
            .unwrap();
        Self { cdp, session: attached["sessionId"].as_str().unwrap().to_owned() }
    }

    async fn evaluate(&self, expression: &str) -> Value {
        let result = self
            .cdp
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
                Some(&self.session),
            )
            .await
            .unwrap();
        result["result"]["value"].clone()
    }
}

/// (RSS, PSS) in KiB of `pid`.
fn memory(pid: u32) -> (u64, u64) {
    let field = |text: &str, name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    (field(&status, "VmRSS:"), field(&rollup, "Pss:"))
}

/// Processes whose environment holds `HANDS_PROCESS=<marker>`.
fn marked(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}

fn process_marker(pid: u32) -> String {
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    env.split(|b| *b == 0)
        .find_map(|v| v.strip_prefix(b"HANDS_PROCESS="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap()
}

fn group_memory(pid: u32) -> (usize, u64, u64) {
    let pids = marked("HANDS_PROCESS", &process_marker(pid));
    let (rss, pss) = pids.iter().map(|p| memory(*p)).fold((0, 0), |a, m| (a.0 + m.0, a.1 + m.1));
    (pids.len(), rss, pss)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let screenshot =
        args.iter().position(|a| a == "--screenshot").map(|i| PathBuf::from(&args[i + 1]));
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let runs = numbers.first().copied().unwrap_or(5).max(2);
    let errors = numbers.get(1).copied().unwrap_or(30).max(1);
    if !fixture().join("node_modules/.bin/vite").exists() {
        eprintln!("run `npm ci` in tests/preview/fixtures/vite-app first");
        std::process::exit(2);
    }

    // 1. open → ready: the first run is cold (Vite optimises its dependencies, Chromium's files
    // are not in the page cache yet); the rest are warm, each in a fresh project and session.
    let mut warm = Vec::new();
    let mut warm_stages: Vec<Vec<(String, Duration)>> = Vec::new();
    let mut cold = None;
    for n in 0..runs {
        let bench = Bench::new(n);
        let (took, stages) = timed_open(&bench).await;
        if n == 0 {
            cold = Some((took, stages));
        } else {
            warm.push(ms(took));
            warm_stages.push(stages);
        }
        bench.session.close().await;
    }
    let (cold_took, cold_stages) = cold.unwrap();
    println!("preview benchmark: Vite fixture, {runs} opens, {errors} errors");
    println!("open → ready, cold (first run):   {:7.0} ms", ms(cold_took));
    let mut sorted = warm.clone();
    println!(
        "open → ready, warm (median of {}): {:7.0} ms  (min {:.0}, max {:.0})",
        warm.len(),
        median(&mut sorted),
        sorted[0],
        sorted[sorted.len() - 1]
    );
    let describe = |stages: &[(String, Duration)]| {
        stages
            .windows(2)
            .map(|w| format!("{} {:.0} ms", w[0].0, ms(w[1].1 - w[0].1)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("  stages, cold: {}", describe(&cold_stages));
    if let Some(last) = warm_stages.last() {
        println!("  stages, warm: {}", describe(last));
    }

    // 2. A running preview: reuse, error latency, memory.
    let bench = Bench::new(runs);
    let (_, _) = timed_open(&bench).await;
    let began = Instant::now();
    let reused = bench.call("preview_open", json!({})).await;
    assert!(reused.joined_text().contains("reused"));
    println!("preview_open on a running preview: {:.2} ms", ms(began.elapsed()));

    if let Some(path) = &screenshot {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let shot = bench.call("preview_screenshot", json!({})).await;
        let Some(Content::Image { data, .. }) = shot.content.first() else {
            panic!("no screenshot: {}", shot.joined_text())
        };
        std::fs::write(path, data).unwrap();
        println!("screenshot: {} ({} bytes)", path.display(), data.len());
    }

    let page = Page::attach(bench.root()).await;
    let _ = bench.call("read_runtime_errors", json!({})).await;
    let mut latencies = Vec::new();
    for i in 0..errors {
        let message = format!("bench error {i}");
        // The page notes the time just before it throws; the error is thrown from a timer, as an
        // uncaught exception, not inside the evaluation.
        page.evaluate(&format!(
            "setTimeout(() => {{ window.__thrownAt = performance.timeOrigin + performance.now(); \
             throw new Error('{message}'); }}, 0); 1"
        ))
        .await;
        let seen = loop {
            let out = bench.call("read_runtime_errors", json!({"warnings": false})).await;
            let found = out.structured.as_ref().and_then(|s| s["errors"].as_array()).is_some_and(
                |errors| {
                    errors
                        .iter()
                        .any(|e| e["message"].as_str().is_some_and(|m| m.ends_with(&message)))
                },
            );
            if found {
                break now_ms();
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        };
        let thrown = page.evaluate("window.__thrownAt").await.as_f64().unwrap();
        latencies.push(seen - thrown);
    }
    let mut sorted = latencies.clone();
    println!(
        "error thrown → read_runtime_errors: median {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} errors)",
        median(&mut sorted),
        percentile(&mut sorted, 0.95),
        sorted[sorted.len() - 1],
        latencies.len()
    );

    let status = bench.call("preview_status", json!({})).await.structured.unwrap();
    let (count, rss, pss) = group_memory(status["browserPid"].as_u64().unwrap() as u32);
    println!(
        "browser memory: {count} processes, RSS {:.0} MB (summed), PSS {:.0} MB",
        rss as f64 / 1024.0,
        pss as f64 / 1024.0
    );
    let (count, rss, pss) = group_memory(status["serverPid"].as_u64().unwrap() as u32);
    println!(
        "server memory (vite on node): {count} processes, RSS {:.0} MB, PSS {:.0} MB",
        rss as f64 / 1024.0,
        pss as f64 / 1024.0
    );
    bench.session.close().await;
}
