//! The agent's dev server: a background process of the session (spawn_process, or bash's
//! dev-server start) that serves this project, which the preview attaches to instead of starting
//! a second server on another port.
//!
//! A process is the project's dev server when it runs in the project root (its working folder, as
//! `/proc` says) and either listens on the port the preview is configured for (`preview.port`), or
//! runs the same server as the plan's serve command: both are reduced to a [`Server`] identity
//! (wrappers such as `npx` and `env` dropped, a package manager's script replaced by its text
//! from package.json, an interpreter's script named) and, when the plan's command is a dev server
//! by bash's rule ([`is_dev_server`]), the process's command must be one too (`npm run build --
//! --watch` runs `vite` as well, but does not serve). A built-in static server has no command:
//! only the port matches it. Its URL is one it printed, or one of the loopback ports it (or a
//! descendant) listens on, and it must answer over HTTP.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hands_exec::devserver::is_dev_server;
use hands_exec::{Proc, Status, Supervisor};
use tokio_util::sync::CancellationToken;

use crate::detect::{self, Plan};
use crate::launch::printed_urls;

/// How deep package.json scripts that run other scripts are followed.
const SCRIPT_DEPTH: usize = 4;

/// A process's URLs tried at most (printed ones and listened ports each).
const MAX_URLS: usize = 8;

/// The newest running background process of `supervisor` that is this project's dev server by
/// the rule of the module docs; `exclude` are ids of the preview's own processes.
pub(crate) fn find(
    supervisor: &Supervisor,
    root: &Path,
    plan: &Plan,
    exclude: &[String],
) -> Option<Arc<Proc>> {
    let scripts = scripts(root);
    let wanted = match &plan.server {
        detect::Server::Command(template) => Some(Wanted::of(template, &scripts)),
        detect::Server::Static(_) => None,
    };
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    supervisor.list().into_iter().rev().find(|proc| {
        proc.status() == Status::Running
            && !exclude.contains(&proc.id)
            && runs_in(proc.pid, &root)
            && (wanted.as_ref().is_some_and(|w| w.matches(&proc.command, &scripts))
                || (plan.port != 0
                    && listening(proc).unwrap_or_default().iter().any(|(_, p)| *p == plan.port)))
    })
}

/// What the plan's serve command runs.
struct Wanted {
    server: Option<Server>,
    /// The plan's command is a dev server by bash's rule, so the process's must be one too.
    strict: bool,
}

impl Wanted {
    /// What the serve command `template` runs.
    fn of(template: &str, scripts: &serde_json::Value) -> Self {
        Self {
            server: identity(&detect::with_port(template, 0), scripts, 0),
            strict: is_dev_server(&resolved_text(template, scripts)),
        }
    }

    fn matches(&self, command: &str, scripts: &serde_json::Value) -> bool {
        let Some(wanted) = &self.server else { return false };
        identity(command, scripts, 0).as_ref() == Some(wanted)
            && (!self.strict
                || is_dev_server(command)
                || is_dev_server(&resolved_text(command, scripts)))
    }
}

/// The `scripts` of the root's package.json (`null` without one).
fn scripts(root: &Path) -> serde_json::Value {
    let path = root.join("package.json");
    std::fs::metadata(&path)
        .is_ok_and(|m| m.is_file())
        .then(|| std::fs::read_to_string(&path).ok())
        .flatten()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .map(|p| p["scripts"].clone())
        .unwrap_or_default()
}

/// True when the process's working folder is `root` (or cannot be read: every background
/// process starts in the session's root).
fn runs_in(pid: u32, root: &Path) -> bool {
    std::fs::read_link(format!("/proc/{pid}/cwd")).map_or(true, |cwd| cwd == root)
}

/// What a command serves, as far as the preview compares: a program (`vite`, `next`), a script
/// run by an interpreter (`node server.js`, `bun server.ts` → the same), a Python module, or a
/// package.json script that is not defined.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Server {
    Program(String),
    Script(String),
    Module(String),
    UndefinedScript(String),
}

/// Interpreters whose first argument that is not an option is the program.
const INTERPRETERS: &[&str] =
    &["node", "nodejs", "deno", "python", "python3", "ruby", "php", "tsx", "ts-node"];

/// The [`Server`] of `command` (`None`: nothing runs in the foreground).
fn identity(command: &str, scripts: &serde_json::Value, depth: usize) -> Option<Server> {
    let words = foreground(command)?;
    let words = unwrap(&words);
    let program = basename(words.first()?);
    let args = &words[1..];
    let script = |name: &str| match scripts[name].as_str() {
        Some(text) if depth < SCRIPT_DEPTH => identity(text, scripts, depth + 1),
        _ => Some(Server::UndefinedScript(name.to_owned())),
    };
    match program {
        "npm" => match options(args) {
            [run, name, ..] if run == "run" || run == "run-script" => script(name),
            [start, ..] if start == "start" => script("start"),
            _ => None,
        },
        "pnpm" | "yarn" | "bun" => match options(args) {
            [run, name, ..] if run == "run" => script(name),
            [name, ..] if scripts[name.as_str()].is_string() => script(name),
            [file, ..] if program == "bun" && file.contains('.') => {
                Some(Server::Script(basename(file).to_owned()))
            }
            [_, ..] => identity(&shell_join(options(args)), scripts, depth),
            [] => None,
        },
        _ if INTERPRETERS.contains(&program) => {
            let args = match program {
                "deno" => options(args).get(1..).unwrap_or_default(),
                _ => args,
            };
            match args.iter().position(|w| w == "-m" || !w.starts_with('-')) {
                Some(i) if args[i] == "-m" => args.get(i + 1).map(|m| Server::Module(m.clone())),
                Some(i) => Some(Server::Script(basename(&args[i]).to_owned())),
                None => Some(Server::Program(program.to_owned())),
            }
        }
        _ => Some(Server::Program(program.to_owned())),
    }
}

/// `command` with a package manager's script replaced by the script's text (followed as deep as
/// [`identity`] does), for bash's dev-server rule.
fn resolved_text(command: &str, scripts: &serde_json::Value) -> String {
    let mut text = command.to_owned();
    for _ in 0..SCRIPT_DEPTH {
        let Some(words) = foreground(&text) else { break };
        let words = unwrap(&words);
        let args = words.get(1..).unwrap_or_default();
        let name = match (words.first().map(|w| basename(w)), options(args)) {
            (Some("npm"), [run, name, ..]) if run == "run" || run == "run-script" => name,
            (Some("pnpm" | "yarn" | "bun"), [run, name, ..]) if run == "run" => name,
            (Some("pnpm" | "yarn" | "bun"), [name, ..]) => name,
            _ => break,
        };
        match scripts[name.as_str()].as_str() {
            Some(script) => text = script.to_owned(),
            None => break,
        }
    }
    text
}

/// Leading assignments and wrappers (`env`, `exec`, `npx`, `npm exec`, `pnpm dlx`, `bunx` …)
/// dropped.
fn unwrap(words: &[String]) -> &[String] {
    let mut rest = assignments(words);
    loop {
        match rest.first().map(|w| basename(w)) {
            Some("env") => rest = assignments(options(&rest[1..])),
            Some("exec" | "command" | "npx" | "pnpx" | "bunx") => rest = options(&rest[1..]),
            Some("npm" | "pnpm" | "yarn" | "bun")
                if matches!(rest.get(1).map(String::as_str), Some("exec" | "dlx" | "x")) =>
            {
                rest = options(&rest[2..]);
            }
            _ => return rest,
        }
    }
}

fn assignments(words: &[String]) -> &[String] {
    let is_assignment = |w: &String| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    &words[words.iter().position(|w| !is_assignment(w)).unwrap_or(words.len())..]
}

/// The words from the first one that is not an option (the options of package managers and
/// wrappers read here take no value, or are written `--name=value`).
fn options(words: &[String]) -> &[String] {
    &words[words.iter().position(|w| !w.starts_with('-')).unwrap_or(words.len())..]
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn shell_join(words: &[String]) -> String {
    words.iter().map(|w| crate::launch::quote(w)).collect::<Vec<_>>().join(" ")
}

/// The words of the command the shell leaves running last: after the last `&&`, `||`, `;` or
/// newline; `None` when that one runs in the background (`&`) or a pipeline ends the line, or a
/// quote is left open. Quotes and backslashes are honoured.
fn foreground(line: &str) -> Option<Vec<String>> {
    let mut commands: Vec<(Vec<String>, Option<char>)> = Vec::new();
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    let end_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if std::mem::take(in_word) {
            words.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            ';' | '\n' | '&' | '|' | '(' | ')' => {
                end_word(&mut words, &mut word, &mut in_word);
                let op = match (c, chars.peek()) {
                    ('&', Some('&')) | ('|', Some('|')) => {
                        chars.next();
                        ';'
                    }
                    ('&' | '|', _) => c,
                    _ => ';',
                };
                commands.push((std::mem::take(&mut words), Some(op)));
            }
            c if c.is_whitespace() => end_word(&mut words, &mut word, &mut in_word),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut words, &mut word, &mut in_word);
    commands.push((words, None));
    let last = commands.iter().rposition(|(w, _)| !w.is_empty())?;
    let piped = last > 0 && commands[last - 1].1 == Some('|');
    let (words, after) = commands.swap_remove(last);
    (!piped && matches!(after, None | Some(';'))).then_some(words)
}

/// Loopback (or any-address) TCP ports in LISTEN state held by `proc` or its descendants, with
/// the address to reach each: `/proc/net/tcp{,6}` joined with the `socket:[inode]` links under
/// each pid's `fd`. `None` when no pid's descriptors could be read.
fn listening(proc: &Proc) -> Option<Vec<(IpAddr, u16)>> {
    let mut inodes = HashSet::new();
    let mut readable = false;
    for pid in proc.pids() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        readable = true;
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else { continue };
            let link = link.to_string_lossy();
            if let Some(inode) = link.strip_prefix("socket:[").and_then(|l| l.strip_suffix(']')) {
                inodes.extend(inode.parse::<u64>().ok());
            }
        }
    }
    let mut found = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let Ok(table) = std::fs::read_to_string(file) else { continue };
        for (addr, port, inode) in listeners(&table, v6) {
            let reach = match addr {
                IpAddr::V4(a) if a.is_loopback() || a.is_unspecified() => {
                    IpAddr::V4(if a.is_unspecified() { Ipv4Addr::LOCALHOST } else { a })
                }
                IpAddr::V6(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(a) if a.is_loopback() => IpAddr::V6(a),
                IpAddr::V6(a) => match a.to_ipv4_mapped() {
                    Some(v4) if v4.is_loopback() => IpAddr::V4(v4),
                    _ => continue,
                },
                IpAddr::V4(_) => continue,
            };
            if inodes.contains(&inode) && !found.contains(&(reach, port)) {
                found.push((reach, port));
            }
        }
    }
    found.sort_by_key(|(_, port)| *port);
    readable.then_some(found)
}

/// The LISTEN rows of a `/proc/net/tcp{,6}` table: address, port, socket inode.
fn listeners(table: &str, v6: bool) -> Vec<(IpAddr, u16, u64)> {
    let mut rows = Vec::new();
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(&"0A"), Some(inode)) = (fields.get(1), fields.get(3), fields.get(9))
        else {
            continue;
        };
        let Some((addr, port)) = local.split_once(':') else { continue };
        let (Ok(port), Ok(inode)) = (u16::from_str_radix(port, 16), inode.parse::<u64>()) else {
            continue;
        };
        // The kernel writes each 32-bit word of the address as a number in host byte order.
        let words: Vec<[u8; 4]> = (0..addr.len() / 8)
            .filter_map(|i| u32::from_str_radix(addr.get(i * 8..i * 8 + 8)?, 16).ok())
            .map(u32::to_ne_bytes)
            .collect();
        let addr = match (v6, words.as_slice()) {
            (false, [a]) => IpAddr::V4(Ipv4Addr::from(*a)),
            (true, [a, b, c, d]) => {
                let mut octets = [0u8; 16];
                for (i, w) in [a, b, c, d].into_iter().enumerate() {
                    octets[i * 4..i * 4 + 4].copy_from_slice(w);
                }
                IpAddr::V6(Ipv6Addr::from(octets))
            }
            _ => continue,
        };
        rows.push((addr, port, inode));
    }
    rows
}

/// The URLs `proc` may serve the app at, best first: those it printed on a port it listens on,
/// then its listening ports (through `plan.url` when the preview's URL is configured), and,
/// when its ports cannot be read at all, whatever local URL it printed.
fn urls(proc: &Proc, plan: &Plan, configured_url: bool) -> Vec<String> {
    let output = strip_ansi(&proc.snapshot().text());
    let printed: Vec<String> = printed_urls(&output).into_iter().take(MAX_URLS).collect();
    let wanted = |port: u16| plan.port == 0 || port == plan.port;
    let Some(ports) = listening(proc) else {
        return printed.into_iter().filter(|u| url_port(u).is_some_and(wanted)).collect();
    };
    let mut urls: Vec<String> = Vec::new();
    if !configured_url {
        urls.extend(
            printed
                .into_iter()
                .filter(|u| url_port(u).is_some_and(|p| ports.iter().any(|(_, l)| *l == p))),
        );
    }
    for (addr, port) in ports.into_iter().filter(|(_, p)| wanted(*p)).take(MAX_URLS) {
        urls.push(if configured_url {
            detect::with_port(&plan.url, port)
        } else {
            match addr {
                IpAddr::V4(a) => format!("http://{a}:{port}/"),
                IpAddr::V6(a) => format!("http://[{a}]:{port}/"),
            }
        });
    }
    let mut seen = HashSet::new();
    urls.retain(|u| seen.insert(u.clone()));
    urls
}

fn url_port(url: &str) -> Option<u16> {
    url::Url::parse(url).ok()?.port_or_known_default()
}

/// Output without its colours and cursor movements (Vite prints its port in bold).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters up to a final byte in @..~.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Why no URL of the agent's process was found.
pub(crate) enum Wait {
    /// It ended first.
    Exited,
    /// Time ran out.
    Timeout,
    /// The call was cancelled.
    Cancelled,
}

/// Wait until one of `proc`'s URLs answers over HTTP (any status); `plan.url` is used with its
/// port when the preview's URL is configured.
pub(crate) async fn wait_url(
    proc: &Proc,
    plan: &Plan,
    configured_url: bool,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<String, Wait> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .no_proxy()
        .build()
        .unwrap_or_default();
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(25);
    loop {
        if proc.status() != Status::Running {
            return Err(Wait::Exited);
        }
        for url in urls(proc, plan, configured_url) {
            if client.get(&url).send().await.is_ok() {
                return Ok(url);
            }
        }
        if Instant::now() >= deadline {
            return Err(Wait::Timeout);
        }
        tokio::select! {
            () = tokio::time::sleep(delay.min(deadline.saturating_duration_since(Instant::now()))) => {}
            _ = proc.wait_exit() => {}
            () = cancel.cancelled() => return Err(Wait::Cancelled),
        }
        delay = (delay * 2).min(Duration::from_millis(250));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(command: &str, scripts: &serde_json::Value) -> Option<Server> {
        identity(command, scripts, 0)
    }

    #[test]
    fn commands_are_reduced_to_what_they_serve() {
        let s = serde_json::json!({
            "dev": "vite --host", "build": "vite build", "serve": "npm run dev", "api": "node api.js"
        });
        let vite = Some(Server::Program("vite".into()));
        for command in [
            "vite --port 0 --strictPort --host 127.0.0.1",
            "npm run dev",
            "pnpm dev",
            "bun dev",
            "bun run dev",
            "yarn dev",
            "npx vite --port 3000",
            "./node_modules/.bin/vite",
            "PORT=3000 npm run serve",
            "cd . && npm run dev",
            "env FOO=1 pnpm exec vite",
        ] {
            assert_eq!(id(command, &s), vite, "{command}");
        }
        assert_eq!(id("npm run build -- --watch", &s), vite, "the same program, not a server");
        let api = Some(Server::Script("api.js".into()));
        assert_eq!(id("npm run api", &s), api);
        assert_eq!(id("bun api.js", &s), api, "any interpreter of the same script");
        assert_eq!(id("node --watch ./api.js", &s), api);
        assert_eq!(
            id("python3 -m http.server 8000", &s),
            Some(Server::Module("http.server".into()))
        );
        assert_eq!(id("npm run nope", &s), Some(Server::UndefinedScript("nope".into())));
        assert_eq!(id("npm run dev &", &s), None, "in the background");
        assert_eq!(id("npm run dev | tee log", &s), None, "a pipeline ends in another program");
        assert_eq!(id("next dev", &s), Some(Server::Program("next".into())));
    }

    #[test]
    fn a_dev_server_plan_wants_a_dev_server_process() {
        let s = serde_json::json!({"dev": "vite", "build": "vite build"});
        let plan = "vite --port {port} --strictPort --host 127.0.0.1";
        let wanted = Wanted::of(plan, &s);
        assert!(wanted.strict);
        assert!(wanted.matches("npm run dev", &s));
        assert!(wanted.matches("vite", &s));
        assert!(!wanted.matches("npm run build -- --watch", &s), "a build does not serve");
        assert!(!wanted.matches("next dev", &s));
        // A custom serve command: the same script is enough.
        let s = serde_json::json!({"dev": "python3 server.py"});
        let plan = "npm run dev -- --port {port}";
        let wanted = Wanted::of(plan, &s);
        assert!(!wanted.strict, "python3 server.py is no dev server by bash's rule");
        assert!(wanted.matches("npm run dev", &s));
        assert!(wanted.matches("python3 server.py --port 4000", &s));
        assert!(!wanted.matches("python3 other.py", &s));
    }

    #[test]
    fn listen_tables_are_read() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 100 0 0 10 0\n   1: 0100007F:1436 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 4243 1 0 100 0 0 10 0\n";
        assert_eq!(listeners(v4, false), [(IpAddr::V4(Ipv4Addr::LOCALHOST), 5173, 4242)]);
        let v6 = "  sl  local_address                         remote_address                        st\n   0: 00000000000000000000000001000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 77 1\n";
        assert_eq!(listeners(v6, true), [(IpAddr::V6(Ipv6Addr::LOCALHOST), 3000, 77)]);
    }

    #[test]
    fn colours_are_stripped() {
        let vite = "  \u{1b}[32m➜\u{1b}[39m  \u{1b}[1mLocal\u{1b}[22m:   \u{1b}[36mhttp://localhost:\u{1b}[1m5173\u{1b}[22m/\u{1b}[39m\n";
        assert_eq!(strip_ansi(vite), "  ➜  Local:   http://localhost:5173/\n");
        assert_eq!(printed_urls(&strip_ansi(vite)), ["http://localhost:5173/"]);
    }
}
