//! Benchmark of using the app in the preview (bench/preview_interact.sh runs it): click-to-result
//! (a preview_act call: the action, the page settling, the delta) on the interact fixture, the
//! time of a snapshot of a 5,000-node page, and the size of hands' snapshots of both pages (whole,
//! and within the default budget) for comparison with Playwright MCP's. The pages are written to
//! `--pages DIR` as static files, so that the script can serve the same ones to Playwright MCP.
//!
//! Usage: bench_interact [RUNS, default 30] [--pages DIR]; with HANDS_BENCH_DUMP set, the first
//! snapshot of each page is printed on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hands_core::{CoreConfig, Registry, Session, ToolCall};
use hands_exec::ExecConfig;
use hands_preview::PreviewConfig;
use serde_json::{Value, json};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/preview/fixtures/interact-app")
}

/// The 5,000-node page: 2,500 list items, each with a text and a button.
pub fn big_page() -> String {
    let rows: String =
        (0..2500).map(|i| format!("<li>Row number {i} <button>Edit {i}</button></li>")).collect();
    format!("<!doctype html><title>Big</title><h1>Big</h1><ul>{rows}</ul>")
}

struct Bench {
    registry: Registry,
    session: Session,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn new(files: &[(&str, String)], serve: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let config = PreviewConfig { serve: serve.to_owned(), ..PreviewConfig::default() };
        let exec = ExecConfig::default();
        let builder = hands_exec::register(Registry::builder(CoreConfig::default()), &exec);
        let registry = hands_preview::register(builder, &config, &exec, dir.path()).build();
        let session = Session::new(format!("bench-interact-{}", std::process::id()), dir.path());
        Self { registry, session, _dir: dir }
    }

    async fn text(&self, tool: &str, args: Value) -> String {
        let call = ToolCall::new(self.session.next_call_id(), tool, args.clone());
        let out = self.registry.dispatch(&self.session, call).await.unwrap();
        assert!(!out.is_error, "{tool} {args}: {}", out.joined_text());
        out.joined_text()
    }
}

fn ref_of(text: &str, needle: &str) -> String {
    let line =
        text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {text}"));
    line.split([' ', ':'])
        .find(|w| w.len() > 1 && w.starts_with('e') && w[1..].bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no ref on {line:?}"))
        .to_owned()
}

fn median(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(v[v.len() / 2]), ms(v[(v.len() * 95 / 100).min(v.len() - 1)]))
}

/// Bytes of the whole outline: the latest snapshot file.
fn whole_bytes(text: &str, root: &Path) -> usize {
    let path = text.split("whole: ").nth(1).unwrap().split(')').next().unwrap();
    std::fs::metadata(root.join(path)).unwrap().len() as usize
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(30);
    let pages =
        args.iter().position(|a| a == "--pages").and_then(|i| args.get(i + 1)).map(PathBuf::from);

    let mut files: Vec<(&str, String)> = Vec::new();
    for name in ["index.html", "app.js", "server.py", "notes.txt"] {
        files.push((name, std::fs::read_to_string(fixture().join(name)).unwrap()));
    }
    let app = Bench::new(&files, "python3 server.py {port}");
    app.text("preview_open", json!({})).await;
    let first = app.text("preview_snapshot", json!({})).await;
    let app_whole = whole_bytes(&first, app.session.root());
    let dump = std::env::var_os("HANDS_BENCH_DUMP").is_some();
    if dump {
        eprintln!("{first}");
    }
    let login = json!([
        {"action": "fill", "fields": [{"ref": ref_of(&first, "textbox \"User\""), "value": "alice"},
                                      {"ref": ref_of(&first, "textbox \"Password\""), "value": "wonderland"}]},
        {"action": "click", "ref": ref_of(&first, "button \"Log in\"")},
        {"action": "wait", "text": "Welcome"}
    ]);
    app.text("preview_act", json!({"actions": login})).await;
    let full = app.text("preview_snapshot", json!({"full": true})).await;
    let (field, broken) =
        (ref_of(&full, "textbox \"New item\""), ref_of(&full, "button \"Break\""));
    let mut clicks = Vec::new();
    let mut adds = Vec::new();
    let mut delta_bytes = Vec::new();
    for i in 0..runs {
        let began = Instant::now();
        app.text("preview_act", json!({"actions": [{"action": "click", "ref": broken}]})).await;
        clicks.push(began.elapsed());
        let began = Instant::now();
        let added = app
            .text("preview_act", json!({"actions": [{"action": "type", "ref": field, "text": format!("item {i}"), "submit": true}]}))
            .await;
        adds.push(began.elapsed());
        delta_bytes.push(added.len());
    }
    let (click_median, click_p95) = median(clicks);
    let (add_median, add_p95) = median(adds);
    delta_bytes.sort();
    println!(
        "click → result (console only), median {click_median:.1} ms, p95 {click_p95:.1} ms ({runs} runs)"
    );
    println!(
        "type+Enter → result (fetch, list re-rendered, delta), median {add_median:.1} ms, p95 {add_p95:.1} ms"
    );
    println!(
        "answer of type+Enter: median {} bytes; full snapshot of that page {} bytes",
        delta_bytes[runs / 2],
        full.len()
    );
    app.session.close().await;

    let big = Bench::new(&[("index.html", big_page())], "");
    big.text("preview_open", json!({})).await;
    let mut times = Vec::new();
    let mut shown = 0;
    let mut whole = 0;
    for _ in 0..10 {
        let began = Instant::now();
        let text = big.text("preview_snapshot", json!({"full": true})).await;
        times.push(began.elapsed());
        if dump && shown == 0 {
            eprintln!("{}", &text[..text.len().min(600)]);
        }
        shown = text.len();
        whole = whole_bytes(&text, big.session.root());
    }
    let (snap_median, snap_p95) = median(times);
    println!(
        "snapshot of the 5,000-node page: median {snap_median:.1} ms, p95 {snap_p95:.1} ms; shown {shown} bytes (default budget 3000 tokens = 12000 bytes), whole {whole} bytes"
    );
    println!("HANDS_WHOLE app {app_whole} big {whole}");
    println!("HANDS_SHOWN app {} big {shown}", first.len());
    big.session.close().await;

    if let Some(dir) = pages {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in &files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        std::fs::write(dir.join("big.html"), big_page()).unwrap();
    }
}
