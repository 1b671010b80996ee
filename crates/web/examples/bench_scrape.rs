//! The benchmark of web_scrape's built-in backend (run by `bench/web_scrape.sh`).
//!
//! `bench_scrape page FILE [MB]` writes an article page of about MB megabytes (default 1): a
//! header and navigation, an article of headings, paragraphs, lists, links and code, a sidebar
//! and a footer. `bench_scrape run URL [N]` scrapes URL N times (default 30) through the real tool
//! in a registry (the egress guard, readability, Markdown), and fetches it N times through the
//! same guard alone; it prints the medians and their difference, hands' own time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hands_core::{CancellationToken, CoreConfig, Registry, Session, ToolCall};
use serde_json::json;

fn page(megabytes: f64) -> String {
    let mut html = String::from(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>A long read on async \
         Rust</title><link rel=stylesheet href=/site.css><script src=/analytics.js></script>\
         </head><body><header class=site-header><a href=/ class=logo>Example Blog</a><nav><ul>",
    );
    for i in 0..40 {
        html.push_str(&format!("<li><a href=/topics/{i}>Topic {i}</a></li>"));
    }
    html.push_str("</ul></nav></header><main><article><h1>A long read on async Rust</h1>");
    let target = (megabytes * 1_000_000.0) as usize;
    let mut section = 0;
    while html.len() < target * 9 / 10 {
        section += 1;
        html.push_str(&format!("<h2 id=s{section}>Section {section}: executors and wakers</h2>"));
        for p in 0..6 {
            html.push_str(&format!(
                "<p>Paragraph {p} of section {section}. A future does nothing until it is \
                 polled; the executor polls it when its <a href=/docs/waker>waker</a> says it \
                 can make progress. <em>Pinning</em> keeps a self-referential future in place, \
                 and <code>select!</code> races several of them, dropping the losers.</p>"
            ));
        }
        html.push_str(
            "<ul><li>Spawn tasks for independent work.</li><li>Use a channel to hand results \
             back.</li><li>Never block the runtime's threads.</li></ul><pre><code>let (tx, mut rx) \
             = tokio::sync::mpsc::channel(16);\ntokio::spawn(async move { tx.send(1).await });\n\
             </code></pre>",
        );
    }
    html.push_str("</article></main><aside class=sidebar><h3>Related</h3><ul>");
    while html.len() < target {
        html.push_str("<li><a href=/related>A related story with a long title</a></li>");
    }
    html.push_str(
        "</ul></aside><footer class=site-footer>© 2026 Example Blog · <a href=/terms>Terms</a>\
         </footer><script>window.track && track('view')</script></body></html>",
    );
    html
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("page") => {
            let megabytes = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1.0);
            let html = page(megabytes);
            std::fs::write(&args[2], &html).unwrap();
            println!("wrote {} bytes to {}", html.len(), args[2]);
        }
        Some("run") => run(&args[2], args.get(3).and_then(|s| s.parse().ok()).unwrap_or(30)).await,
        _ => eprintln!("usage: bench_scrape page FILE [MB] | run URL [N]"),
    }
}

async fn run(url: &str, n: usize) {
    let host = url::Url::parse(url).unwrap().host_str().unwrap().to_owned();
    let net = hands_net::NetConfig { allow_hosts: vec![host], ..Default::default() };
    let guard = hands_net::Guard::new(&net).unwrap();
    let config = hands_web::ScrapeConfig { builtin: true, base_url: None };
    // The default output cap: the result is cut and spilled as in real use.
    let builder = Registry::builder(CoreConfig::default());
    let registry = hands_web::register_scrape(builder, &guard, &config, None, None).build();
    let tmp = tempfile::tempdir().unwrap();
    let session = Session::new("bench", tmp.path());
    let mut scrape = Vec::new();
    let mut chars = 0;
    for i in 0..n + 3 {
        let call = ToolCall::new(format!("c{i}"), "web_scrape", json!({"url": url}));
        let start = Instant::now();
        let out = registry.dispatch(&session, call).await.unwrap();
        let took = start.elapsed();
        assert!(!out.is_error, "{}", out.joined_text());
        chars = out.structured.as_ref().unwrap()["content"].as_str().unwrap().chars().count();
        if i >= 3 {
            scrape.push(took);
        }
    }
    let token = CancellationToken::new();
    let mut fetch = Vec::new();
    let mut bytes = 0;
    for i in 0..n + 3 {
        let start = Instant::now();
        let page = guard.send(hands_net::Request::get(url).max_bytes(20 << 20), &token).await;
        let took = start.elapsed();
        bytes = page.unwrap().body.len();
        if i >= 3 {
            fetch.push(took);
        }
    }
    let (scrape, fetch) = (median(scrape), median(fetch));
    println!("page: {bytes} bytes of HTML; main content: {chars} characters of Markdown");
    println!("web_scrape (fetch + readability + Markdown), median of {n}: {} ms", ms(scrape));
    println!("the same fetch through the egress guard alone, median of {n}: {} ms", ms(fetch));
    println!(
        "hands' own time (parse + extract + convert): {} ms",
        ms(scrape.saturating_sub(fetch))
    );
}
