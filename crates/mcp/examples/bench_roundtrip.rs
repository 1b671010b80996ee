//! MCP round trips over stdio with one compiled raw JSON-RPC client (no SDK in the measured path):
//! start a server, time start-up until `initialize` is answered, then N sequential `tools/call`s
//! of a read tool on a small file, one line out and one line back each. Prints the median and
//! p99 round trip and calls per second. See `bench/mcp.sh`, which runs it against hands, the
//! reference filesystem server and a do-nothing floor in the same run.
//!
//! Usage: bench_roundtrip NAME TOOL PATH_ARG N -- SERVER_COMMAND…
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").expect("usage: NAME TOOL PATH N -- COMMAND…");
    let (name, tool, path, n) = (&args[0], &args[1], &args[2], args[3].parse::<usize>().unwrap());
    let command = &args[split + 1..];

    let started = Instant::now();
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut ask = |stdin: &mut std::process::ChildStdin, body: String| -> Duration {
        let t = Instant::now();
        stdin.write_all(body.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        loop {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "{name}: server closed its output");
            // Skip notifications and log lines; wait for the response.
            if line.contains("\"id\"") {
                assert!(!line.contains("\"error\""), "{name}: {line}");
                return t.elapsed();
            }
        }
    };
    ask(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#.into(),
    );
    let startup = started.elapsed();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").unwrap();

    let body = |id: usize| {
        serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"path": path}}
        })
        .to_string()
    };
    for i in 0..20 {
        ask(&mut stdin, body(1_000_000 + i)); // warm-up
    }
    let mut times: Vec<Duration> = (1..=n).map(|i| ask(&mut stdin, body(i))).collect();
    let total: Duration = times.iter().sum();
    times.sort();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name}\tstartup_ms={:.1}\tmedian_us={:.1}\tp99_us={:.1}\tcalls_per_s={:.0}",
        startup.as_secs_f64() * 1e3,
        us(times[n / 2]),
        us(times[n * 99 / 100]),
        n as f64 / total.as_secs_f64()
    );
}
