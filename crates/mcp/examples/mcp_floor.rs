//! The floor of the MCP round-trip benchmark: a "server" that answers every JSON-RPC request line
//! at once with an empty result, doing no work at all. What this machine's pipes and scheduler
//! allow; see `bench/mcp.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        // Only requests (with an id) get an answer; notifications do not.
        let Some(at) = line.find("\"id\":") else { continue };
        let rest = &line[at + 5..];
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        let id = rest[..end].trim();
        writeln!(out, "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}").unwrap();
        out.flush().unwrap();
    }
}
