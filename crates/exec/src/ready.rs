//! When is a background process ready? By a `ready_pattern` over its output, by a local URL it
//! prints (`http://localhost:5173/`), or by a TCP port in LISTEN state that belongs to it or one of
//! its descendants (found through `/proc/net/tcp{,6}` and the `socket:[inode]` links under
//! `/proc/<pid>/fd`, then confirmed by connecting). Without anything to wait for, it waits a short
//! settle time for the first output instead.
//!
//! Flow of [`wait`]: on every output or exit event (and every poll tick for ports) scan the new
//! output (with a little overlap, ANSI colours stripped) for the pattern and URL, then the process's
//! listening ports, until one answers, the process exits, the deadline passes or the call is
//! cancelled.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::supervisor::{Proc, Status};

/// How often listening ports are looked up while waiting.
const PORT_POLL: Duration = Duration::from_millis(200);
/// In settle mode: once output has come, this much quiet ends the wait.
const QUIET: Duration = Duration::from_millis(300);
/// Bytes of earlier output scanned again with new output, so that a match split across two reads
/// is still found.
const OVERLAP: usize = 4096;

/// A local URL found in the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The URL, with `0.0.0.0` and `[::]` reported as `localhost`.
    pub url: String,
    /// Its port (80/443 when it names none).
    pub port: u16,
}

/// What showed that the process is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// `ready_pattern` matched this line.
    Pattern(String),
    /// It printed a local URL.
    Url,
    /// It listens on a port.
    Port,
}

/// The process is ready, and what is known of where it listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// What showed it.
    pub by: Signal,
    /// A URL it printed.
    pub url: Option<String>,
    /// The port it listens on (the URL's, or the lowest it listens on).
    pub port: Option<u16>,
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Ready.
    Ready(Found),
    /// The main process exited first.
    Exited(Status),
    /// The deadline passed without a sign of readiness; it is still running.
    NotConfirmed,
    /// Settle mode: first output came (or the settle time passed); it is still running.
    Settled,
    /// The call was cancelled.
    Cancelled,
}

/// What to wait for.
#[derive(Debug, Clone)]
pub struct Checks {
    /// A regex over the output.
    pub pattern: Option<Regex>,
    /// Also accept a printed local URL or a listening port.
    pub detect: bool,
    /// How long to wait for one of them.
    pub timeout: Duration,
    /// When there is nothing to wait for: how long to wait for first output.
    pub settle: Duration,
}

impl Checks {
    fn waits_for_something(&self) -> bool {
        self.pattern.is_some() || self.detect
    }
}

/// Compile a `ready_pattern`; `^` and `$` match at line ends.
pub fn pattern(source: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(source)
        .multi_line(true)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| e.to_string())
}

/// Wait until `proc` is ready, exits, the deadline passes or `cancel` fires.
pub async fn wait(proc: &Proc, checks: &Checks, cancel: &CancellationToken) -> Outcome {
    let mut events = proc.subscribe();
    let start = Instant::now();
    // An explicit ready_pattern is waited for up to the ready timeout; a URL or port that may or
    // may not come only ~settle (about 3 s: spawn_process.md says so to the model).
    let deadline = start + if checks.pattern.is_some() { checks.timeout } else { checks.settle };
    let mut cursor = 0u64;
    let mut window: Vec<u8> = Vec::new();
    let mut last_output: Option<Instant> = None;
    loop {
        if !matches!(proc.status(), Status::Running) {
            // Let the last words arrive before the caller shows them.
            let _ = tokio::time::timeout(Duration::from_secs(1), proc.wait_drained()).await;
            return Outcome::Exited(proc.status());
        }
        let (new, next, _dropped) = proc.read_since(cursor);
        cursor = next;
        if !new.is_empty() {
            last_output = Some(Instant::now());
            let keep = window.len().min(OVERLAP);
            window.drain(..window.len() - keep);
            window.extend_from_slice(&new);
            if let Some(found) = scan(&window, checks) {
                return Outcome::Ready(with_listening_port(found, proc));
            }
        }
        if checks.detect
            && let Some(port) = confirmed_port(&proc.pids()).await
        {
            return Outcome::Ready(Found { by: Signal::Port, url: None, port: Some(port) });
        }
        let now = Instant::now();
        if !checks.waits_for_something()
            && last_output.is_some_and(|at| now.duration_since(at) >= QUIET)
        {
            return Outcome::Settled;
        }
        if now >= deadline {
            return if checks.waits_for_something() {
                Outcome::NotConfirmed
            } else {
                Outcome::Settled
            };
        }
        let tick = if checks.detect || last_output.is_some() { PORT_POLL } else { deadline - now };
        tokio::select! {
            changed = events.changed() => {
                if changed.is_err() {
                    // The sender is gone: the process is over; poll instead of spinning.
                    tokio::time::sleep(PORT_POLL.min(deadline - now)).await;
                }
            }
            () = tokio::time::sleep(tick.min(deadline - now)) => {}
            () = cancel.cancelled() => return Outcome::Cancelled,
        }
    }
}

/// Pattern first (the caller asked for it), then a URL.
fn scan(window: &[u8], checks: &Checks) -> Option<Found> {
    let text = strip_ansi(&String::from_utf8_lossy(window));
    if let Some(re) = &checks.pattern {
        let m = re.find(&text)?;
        let line_start = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[m.end()..].find('\n').map_or(text.len(), |i| m.end() + i);
        let line = text[line_start..line_end].trim().to_owned();
        let url = find_url(&text);
        return Some(Found {
            by: Signal::Pattern(line),
            port: url.as_ref().map(|u| u.port),
            url: url.map(|u| u.url),
        });
    }
    if checks.detect {
        return find_url(&text).map(|u| Found {
            by: Signal::Url,
            url: Some(u.url),
            port: Some(u.port),
        });
    }
    None
}

/// After a pattern without a URL, say which port it listens on if it already does.
fn with_listening_port(mut found: Found, proc: &Proc) -> Found {
    if found.port.is_none() {
        found.port = listening_ports(&proc.pids()).first().map(|l| l.port);
    }
    found
}

static ANSI: LazyLock<Option<Regex>> = LazyLock::new(|| {
    // CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks), two-byte escapes.
    Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]").ok()
});

/// `text` without ANSI escape sequences.
pub fn strip_ansi(text: &str) -> String {
    match ANSI.as_ref() {
        Some(re) if text.contains('\x1b') => re.replace_all(text, "").into_owned(),
        _ => text.to_owned(),
    }
}

static LOCAL_URL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(https?)://(localhost|(?:[a-z0-9-]+\.)+localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[::1?\])(?::(\d{1,5}))?(/[^\s'`<>()\[\]{}]*)?",
    )
    .ok()
});

/// The first local URL (localhost, 127.x, 0.0.0.0, `[::1]`, `[::]`) in `text` (ANSI already
/// stripped); an unspecified address is reported as `localhost`, which is where a browser reaches
/// it.
pub fn find_url(text: &str) -> Option<Url> {
    let caps = LOCAL_URL.as_ref()?.captures(text)?;
    let scheme = caps[1].to_ascii_lowercase();
    let host = match &caps[2] {
        "0.0.0.0" | "[::]" => "localhost",
        host => host,
    };
    let port = match caps.get(3) {
        Some(p) => p.as_str().parse::<u16>().ok()?,
        None if scheme == "https" => 443,
        None => 80,
    };
    let path = caps.get(4).map_or("", |p| p.as_str()).trim_end_matches(['.', ',', ';', ':', '!']);
    let port_part = caps.get(3).map_or(String::new(), |p| format!(":{}", p.as_str()));
    Some(Url { url: format!("{scheme}://{host}{port_part}{path}"), port })
}

/// A socket in LISTEN state, from `/proc/net/tcp` or `/proc/net/tcp6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    /// The local address it is bound to.
    pub addr: IpAddr,
    /// The local port.
    pub port: u16,
    /// The socket's inode (matches `socket:[inode]` under `/proc/<pid>/fd`).
    pub inode: u64,
}

/// The LISTEN sockets of a `/proc/net/tcp` or `/proc/net/tcp6` table.
pub fn parse_listeners(table: &str) -> Vec<Listener> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode …
            let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
            if *state != LISTEN {
                return None;
            }
            let (addr, port) = local.split_once(':')?;
            Some(Listener {
                addr: parse_addr(addr)?,
                port: u16::from_str_radix(port, 16).ok()?,
                inode: inode.parse().ok()?,
            })
        })
        .collect()
}

/// The kernel prints addresses as 32-bit words in host byte order (little-endian here).
fn parse_addr(hex: &str) -> Option<IpAddr> {
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_le_bytes())
    };
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(0)?))),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            Some(IpAddr::V6(Ipv6Addr::from(bytes)))
        }
        _ => None,
    }
}

/// Inodes of the sockets `pid` has open.
fn socket_inodes(pid: u32, into: &mut HashSet<u64>) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return };
    for entry in dir.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else { continue };
        let target = target.to_string_lossy();
        if let Some(inode) = target.strip_prefix("socket:[").and_then(|s| s.strip_suffix(']'))
            && let Ok(inode) = inode.parse()
        {
            into.insert(inode);
        }
    }
}

/// The listening sockets owned by any of `pids`, lowest port first, one per port.
pub fn listening_ports(pids: &[u32]) -> Vec<Listener> {
    let mut inodes = HashSet::new();
    for pid in pids {
        socket_inodes(*pid, &mut inodes);
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<Listener> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|table| parse_listeners(&table))
        .filter(|l| inodes.contains(&l.inode))
        .collect();
    found.sort_by_key(|l| l.port);
    found.dedup_by_key(|l| l.port);
    found
}

/// The lowest listening port of `pids` that accepts a connection.
async fn confirmed_port(pids: &[u32]) -> Option<u16> {
    for listener in listening_ports(pids) {
        let target = SocketAddr::new(connect_addr(listener.addr), listener.port);
        let attempt = tokio::time::timeout(
            Duration::from_millis(500),
            tokio::net::TcpStream::connect(target),
        );
        if matches!(attempt.await, Ok(Ok(_))) {
            return Some(listener.port);
        }
    }
    None
}

/// Where to connect to reach a socket bound to `addr`.
fn connect_addr(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_found_through_colours() {
        let cases = [
            ("  ➜  Local:   http://localhost:5173/\n", "http://localhost:5173/", 5173),
            (
                "  \x1b[32m➜\x1b[39m  \x1b[1mLocal\x1b[22m:   \x1b[36mhttp://localhost:\x1b[1m5173\x1b[22m/\x1b[39m\n",
                "http://localhost:5173/",
                5173,
            ),
            (
                "Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)",
                "http://127.0.0.1:8000",
                8000,
            ),
            (
                "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...",
                "http://localhost:8000/",
                8000,
            ),
            ("listening at http://[::1]:3000.", "http://[::1]:3000", 3000),
            ("ready on https://app.localhost/", "https://app.localhost/", 443),
            (
                "- Local:        http://localhost:3000\n- Network: http://10.0.0.5:3000",
                "http://localhost:3000",
                3000,
            ),
        ];
        for (output, url, port) in cases {
            let found = find_url(&strip_ansi(output));
            assert_eq!(found, Some(Url { url: url.into(), port }), "in {output:?}");
        }
    }

    #[test]
    fn remote_and_documentation_urls_are_not_the_server() {
        for output in [
            "Learn more: https://nextjs.org/telemetry",
            "Network: http://192.168.1.5:5173/",
            "no url here, localhost:3000 without a scheme",
            "http://localhost:99999/",
        ] {
            assert_eq!(find_url(output), None, "in {output:?}");
        }
    }

    #[test]
    fn ansi_is_stripped() {
        assert_eq!(strip_ansi("\x1b[1;32mready\x1b[0m in \x1b]0;title\x07 3ms"), "ready in  3ms");
        assert_eq!(strip_ansi("plain"), "plain");
    }

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 40471 1 0000000000000000 100 0 0 10 0
   1: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 40472 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 40999 1 0000000000000000 20 4 30 10 -1
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 51234 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 51235 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn proc_net_tcp_listeners_are_parsed() {
        let v4 = parse_listeners(TCP);
        assert_eq!(
            v4,
            [
                Listener { addr: IpAddr::V4(Ipv4Addr::LOCALHOST), port: 8080, inode: 40471 },
                Listener { addr: IpAddr::V4(Ipv4Addr::UNSPECIFIED), port: 5201, inode: 40472 },
            ],
            "the ESTABLISHED row (01) is not a listener"
        );
        let v6 = parse_listeners(TCP6);
        assert_eq!(
            v6,
            [
                Listener { addr: IpAddr::V6(Ipv6Addr::LOCALHOST), port: 3000, inode: 51234 },
                Listener { addr: IpAddr::V6(Ipv6Addr::UNSPECIFIED), port: 8000, inode: 51235 },
            ]
        );
        assert!(parse_listeners("header only\n   0: garbage").is_empty());
    }

    #[test]
    fn a_listener_of_this_process_is_found_by_inode() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let ports: Vec<u16> =
            listening_ports(&[std::process::id()]).iter().map(|l| l.port).collect();
        assert!(ports.contains(&port), "{port} not in {ports:?}");
        drop(listener);
        let ports: Vec<u16> =
            listening_ports(&[std::process::id()]).iter().map(|l| l.port).collect();
        assert!(!ports.contains(&port), "{port} still in {ports:?} after close");
    }

    #[test]
    fn ready_pattern_matches_per_line_and_reports_the_line() {
        let checks = Checks {
            pattern: Some(pattern(r"^ready in \d+ ms").unwrap()),
            detect: true,
            timeout: Duration::from_secs(1),
            settle: Duration::from_secs(1),
        };
        assert_eq!(scan(b"compiling...\nnot ready in 3 ms\n", &checks), None, "^ anchors a line");
        let found = scan(b"compiling...\n\x1b[32mready in 12 ms\x1b[0m\n", &checks).unwrap();
        assert_eq!(found.by, Signal::Pattern("ready in 12 ms".into()));
        assert_eq!(found.url, None);
        let found = scan(b"at http://localhost:4000/\nready in 12 ms\n", &checks).unwrap();
        assert_eq!(found.port, Some(4000), "a URL seen with the pattern is reported");
        // With a pattern, a URL alone is not enough: the caller asked for the pattern.
        assert_eq!(scan(b"at http://localhost:4000/\n", &checks), None);
        assert!(pattern("(unclosed").is_err());
    }

    #[test]
    fn without_a_pattern_a_url_is_enough() {
        let checks = Checks {
            pattern: None,
            detect: true,
            timeout: Duration::from_secs(1),
            settle: Duration::from_secs(1),
        };
        let found = scan(b"VITE v5 ready\n  Local: http://0.0.0.0:5173/\n", &checks).unwrap();
        assert_eq!(
            found,
            Found { by: Signal::Url, url: Some("http://localhost:5173/".into()), port: Some(5173) }
        );
    }
}
