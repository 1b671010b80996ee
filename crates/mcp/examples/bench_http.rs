//! Load over Streamable HTTP: C concurrent MCP clients (rmcp's own client), each making N
//! sequential `tools/call`s of read_file on a small file against a running `hands serve`.
//! Prints p50/p99 latency, throughput and the number of errors. See `bench/mcp.sh`.
//!
//! Usage: HANDS_TOKEN=T bench_http URL [C=64] [N=1000] (`hands serve` always wants a token)
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("usage: bench_http URL [C] [N]");
    let clients: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let calls: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let token = std::env::var("HANDS_TOKEN").expect("HANDS_TOKEN: the token hands serve wants");
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let url = url.clone();
            let token = token.clone();
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(calls);
                let mut errors = 0usize;
                let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
                let transport = StreamableHttpClientTransport::from_config(config);
                let client = match ().serve(transport).await {
                    Ok(client) => client,
                    Err(_) => return (times, calls),
                };
                let mut arguments = serde_json::Map::new();
                arguments.insert("path".into(), "small.txt".into());
                for _ in 0..calls {
                    let t = Instant::now();
                    let params =
                        CallToolRequestParams::new("read_file").with_arguments(arguments.clone());
                    match client.call_tool(params).await {
                        Ok(result) if result.is_error != Some(true) => times.push(t.elapsed()),
                        _ => errors += 1,
                    }
                }
                let _ = client.cancel().await;
                (times, errors)
            })
        })
        .collect();
    let mut all: Vec<Duration> = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (times, e) = task.await.unwrap();
        all.extend(times);
        errors += e;
    }
    let elapsed = started.elapsed();
    all.sort();
    let pick =
        |q: f64| all.get(((all.len() as f64 - 1.0) * q) as usize).copied().unwrap_or_default();
    println!(
        "http\tclients={clients}\tcalls={}\terrors={errors}\tp50_ms={:.2}\tp99_ms={:.2}\tcalls_per_s={:.0}",
        all.len(),
        pick(0.50).as_secs_f64() * 1e3,
        pick(0.99).as_secs_f64() * 1e3,
        all.len() as f64 / elapsed.as_secs_f64()
    );
}
