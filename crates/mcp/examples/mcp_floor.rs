//! The floors of the MCP round-trip benchmark (see `bench/mcp.sh`).
//!
//! - `mcp_floor`: a "server" that answers every JSON-RPC request line at once with an empty
//!   result, doing no work at all — what this machine's pipes and scheduler allow.
//! - `mcp_floor --read ROOT`: the same, but it also does the least work a read_file answer needs:
//!   for a `tools/call`, open the `path` argument under ROOT (`openat`), `fstat` it, read it,
//!   close it, and answer with its text in a CallToolResult — the pipes plus the file system
//!   calls, with no protocol library, no runtime and no confinement.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, Read, Write};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = match args.as_slice() {
        [flag, root] if flag == "--read" => Some(std::fs::File::open(root).unwrap()),
        _ => None,
    };
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut reply = String::new();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        // Only requests (with an id) get an answer; notifications do not.
        let Some(at) = line.find("\"id\":") else { continue };
        let rest = &line[at + 5..];
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        let id = rest[..end].trim();
        reply.clear();
        match (&root, field(&line, "\"path\":\"")) {
            (Some(root), Some(path)) if line.contains("tools/call") => {
                let text = read_under(root, path);
                reply.push_str(&format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"isError\":false}}}}\n",
                    serde_json::to_string(&text).unwrap()
                ));
            }
            _ => reply.push_str(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n")),
        }
        out.write_all(reply.as_bytes()).unwrap();
        out.flush().unwrap();
    }
}

/// The string value that follows `key` (no escapes expected).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(key)? + key.len();
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

/// openat(root, path) + fstat + read + close.
fn read_under(root: &std::fs::File, path: &str) -> String {
    use std::os::fd::AsFd;
    let fd = rustix::fs::openat(
        root.as_fd(),
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let mut file = std::fs::File::from(fd);
    let size = file.metadata().unwrap().len() as usize;
    let mut bytes = vec![0; size + 1];
    let n = file.read(&mut bytes).unwrap();
    bytes.truncate(n);
    String::from_utf8_lossy(&bytes).into_owned()
}
