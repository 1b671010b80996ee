//! Starting what the preview runs: the server (a supervised daemon, or the built-in static server)
//! until it answers at the URL, and Chromium (a supervised daemon with a fresh profile folder)
//! until its DevTools endpoint is written to the profile's `DevToolsActivePort`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hands_exec::{Kind, Proc, SpawnSpec, Status, Supervisor};
use tokio_util::sync::CancellationToken;

use crate::detect::{self, Server};
use crate::preview::ServerHandle;
use crate::static_server::StaticServer;
use crate::steps::last_lines;

/// Output kept of the server and the browser (head and tail).
const DAEMON_OUTPUT: usize = 256 * 1024;

/// Why a start failed: a message for the model, or a cancellation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchError {
    /// What went wrong and what to do.
    Failed(String),
    /// The call was cancelled or the preview closed.
    Cancelled,
}

/// `'text'` for the shell.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `command` with the project's `node_modules/.bin` first in PATH and `PORT` set.
pub fn with_env(root: &Path, command: &str, port: Option<u16>) -> String {
    let bin = root.join("node_modules").join(".bin");
    let port = port.map_or(String::new(), |p| format!("export PORT={p}; "));
    format!("export PATH={}:\"$PATH\"; {port}{command}", quote(&bin.to_string_lossy()))
}

/// A free port on 127.0.0.1 (bound, read, released).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// True when something listens on `port` (binding 127.0.0.1 there fails).
pub fn port_taken(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_err()
}

/// What every start needs: the session's supervisor, the project root, the grace period of a stop,
/// and the token that cancels the start.
#[derive(Clone, Copy)]
pub struct Launch<'a> {
    pub supervisor: &'a Arc<Supervisor>,
    pub root: &'a Path,
    pub grace: Duration,
    pub cancel: &'a CancellationToken,
}

/// What a started server is.
pub struct Started {
    pub handle: ServerHandle,
    pub port: u16,
    pub url: String,
}

/// Start the server of `server` on `port` (0: a free one) and wait until `url_template` answers.
pub async fn start_server(
    launch: Launch<'_>,
    server: &Server,
    port: u16,
    url_template: &str,
    ready_timeout: Duration,
) -> Result<Started, LaunchError> {
    let Launch { supervisor, root, grace, cancel } = launch;
    let configured_port = port != 0;
    let port = if configured_port {
        if port_taken(port) {
            return Err(LaunchError::Failed(format!(
                "Port {port} is already in use on 127.0.0.1, so the preview server cannot listen \
                 there. Stop what listens on it (list_processes shows this session's processes), \
                 or set preview.port to another port (0 picks a free one)."
            )));
        }
        port
    } else {
        free_port().map_err(|err| LaunchError::Failed(format!("No free port: {err}.")))?
    };
    let url = detect::with_port(url_template, port);
    match server {
        Server::Static(dir) => {
            let folder = root.join(dir);
            if !folder.is_dir() {
                return Err(LaunchError::Failed(format!(
                    "The folder to serve, {}, does not exist{}. Set preview.static_dir to the \
                     folder that holds index.html.",
                    dir.display(),
                    if dir.as_os_str() == "dist" { " (the build should have made it)" } else { "" }
                )));
            }
            let server = StaticServer::start(&folder, port).await.map_err(|err| {
                LaunchError::Failed(format!(
                    "The built-in static server could not listen on 127.0.0.1:{port}: {err}."
                ))
            })?;
            let port = server.addr.port();
            Ok(Started { handle: ServerHandle::Builtin(server), port, url })
        }
        Server::Command(template) => {
            let shown = detect::with_port(template, port);
            let spec = SpawnSpec {
                command: with_env(root, &shown, Some(port)),
                kind: Kind::Daemon,
                name: Some(format!("preview server: {shown}")),
                cwd: root.to_path_buf(),
                head: DAEMON_OUTPUT / 4,
                tail: DAEMON_OUTPUT - DAEMON_OUTPUT / 4,
                log: true,
            };
            let proc = supervisor.spawn(spec).map_err(|err| {
                LaunchError::Failed(format!(
                    "The serve command `{shown}` could not be started: {err}."
                ))
            })?;
            let waited = wait_answer(&proc, &url, ready_timeout, cancel).await;
            match waited {
                Ok(url) => Ok(Started { handle: ServerHandle::Process(proc), port, url }),
                Err(err) => {
                    proc.stop("preview failed", grace).await;
                    supervisor.forget(&proc.id);
                    Err(match err {
                        Wait::Cancelled => LaunchError::Cancelled,
                        Wait::Exited(status) => LaunchError::Failed(format!(
                            "The serve command `{shown}` {} before the server answered at {url}. \
                             Last output:\n{}\nFix the command (preview.serve) or what it \
                             complains about, then call preview_open again.",
                            describe(&status),
                            output_end(&proc)
                        )),
                        Wait::Timeout => LaunchError::Failed(format!(
                            "The server did not answer at {url} within {} s \
                             (preview.ready_timeout_ms); it was stopped. Last output:\n{}\nCheck \
                             that the command serves on port {port} (use `{{port}}` in \
                             preview.serve, or set preview.url), or raise \
                             preview.ready_timeout_ms for a slow start.",
                            ready_timeout.as_secs_f32(),
                            output_end(&proc)
                        )),
                    })
                }
            }
        }
    }
}

enum Wait {
    Exited(Status),
    Timeout,
    Cancelled,
}

/// Wait until `url` answers over HTTP (any status), the process exits, or time runs out. A local
/// URL on another port printed by the server is followed (servers that ignore `{port}`).
async fn wait_answer(
    proc: &Arc<Proc>,
    url: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<String, Wait> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .no_proxy()
        .build()
        .unwrap_or_default();
    let deadline = Instant::now() + timeout;
    let mut url = url.to_owned();
    let mut delay = Duration::from_millis(25);
    loop {
        if proc.status() != Status::Running {
            return Err(Wait::Exited(proc.status()));
        }
        if client.get(&url).send().await.is_ok() {
            return Ok(url);
        }
        if let Some(printed) = printed_url(&proc.snapshot().text())
            && printed != url
            && client.get(&printed).send().await.is_ok()
        {
            url = printed;
            return Ok(url);
        }
        if Instant::now() >= deadline {
            return Err(Wait::Timeout);
        }
        tokio::select! {
            () = tokio::time::sleep(delay.min(deadline.saturating_duration_since(Instant::now()))) => {}
            _ = proc.wait_exit() => {}
            () = cancel.cancelled() => return Err(Wait::Cancelled),
        }
        delay = (delay * 2).min(Duration::from_millis(200));
    }
}

/// The first local URL a server printed (`http://localhost:5173/`, `http://127.0.0.1:3000`).
pub fn printed_url(output: &str) -> Option<String> {
    for start in output.match_indices("http://").map(|(i, _)| i) {
        let rest = &output[start + 7..];
        let end =
            rest.find(|c: char| c.is_whitespace() || c == '"' || c == '\'').unwrap_or(rest.len());
        let candidate = &rest[..end];
        let host_port = candidate.split('/').next().unwrap_or("");
        let Some((host, port)) = host_port.rsplit_once(':') else { continue };
        let local = matches!(host, "localhost" | "127.0.0.1" | "0.0.0.0" | "[::1]");
        if local && port.parse::<u16>().is_ok() {
            let host = if host == "0.0.0.0" { "127.0.0.1" } else { host };
            let path = &candidate[host_port.len()..];
            return Some(format!(
                "http://{host}:{port}{}",
                if path.is_empty() { "/" } else { path }
            ));
        }
    }
    None
}

fn output_end(proc: &Proc) -> String {
    let text = last_lines(&proc.snapshot().text(), 20);
    if text.trim().is_empty() { "(no output)".to_owned() } else { text }
}

/// "exited with code 3", "was killed by signal 9".
pub fn describe(status: &Status) -> String {
    match status {
        Status::Running => "is still running".to_owned(),
        Status::Exited { code: Some(code), .. } => format!("exited with code {code}"),
        Status::Exited { signal: Some(signal), .. } => format!("was killed by signal {signal}"),
        Status::Exited { .. } => "exited".to_owned(),
        Status::Stopped { reason } => format!("was stopped ({reason})"),
    }
}

/// A started browser.
pub struct Browser {
    pub proc: Arc<Proc>,
    pub profile: tempfile::TempDir,
    pub cdp_port: u16,
    pub ws_endpoint: String,
}

/// The flags that keep Chromium headless, off the network and quiet.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--use-mock-keychain",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// Start Chromium (`chromium`: the setting's value) with a fresh profile and wait for its
/// DevTools endpoint.
pub async fn start_browser(
    launch: Launch<'_>,
    chromium: &str,
    window_size: &str,
    timeout: Duration,
) -> Result<Browser, LaunchError> {
    let Launch { supervisor, root, grace, cancel } = launch;
    let Some(program) = detect::find_program(root, chromium) else {
        return Err(LaunchError::Failed(format!(
            "Chromium was not found at `{chromium}` (setting preview.chromium). Install it (on \
             Debian: apt-get install chromium) or set preview.chromium to the browser's path, e.g. \
             `-c preview.chromium=/usr/bin/chromium-browser`."
        )));
    };
    let profile =
        tempfile::Builder::new().prefix("hands-preview-profile-").tempdir().map_err(|err| {
            LaunchError::Failed(format!("Cannot create a browser profile folder: {err}."))
        })?;
    let mut command = format!("exec {}", quote(&program.to_string_lossy()));
    for flag in CHROMIUM_FLAGS {
        command.push(' ');
        command.push_str(flag);
    }
    command.push_str(&format!(
        " --user-data-dir={} --window-size={} about:blank",
        quote(&profile.path().to_string_lossy()),
        quote(window_size)
    ));
    let spec = SpawnSpec {
        command,
        kind: Kind::Daemon,
        name: Some("preview browser".into()),
        cwd: root.to_path_buf(),
        head: DAEMON_OUTPUT / 8,
        tail: DAEMON_OUTPUT / 8,
        log: true,
    };
    let proc = supervisor.spawn(spec).map_err(|err| {
        LaunchError::Failed(format!(
            "Chromium ({}) could not be started: {err}.",
            program.display()
        ))
    })?;
    let active = profile.path().join("DevToolsActivePort");
    let deadline = Instant::now() + timeout;
    let failure = loop {
        if let Ok(text) = std::fs::read_to_string(&active)
            && let Some((port, path)) = parse_active_port(&text)
        {
            let ws_endpoint = format!("ws://127.0.0.1:{port}{path}");
            return Ok(Browser { proc, profile, cdp_port: port, ws_endpoint });
        }
        if proc.status() != Status::Running {
            break LaunchError::Failed(format!(
                "Chromium ({}) {} at start. Last output:\n{}",
                program.display(),
                describe(&proc.status()),
                output_end(&proc)
            ));
        }
        if Instant::now() >= deadline {
            break LaunchError::Failed(format!(
                "Chromium ({}) did not open its DevTools port within {} s \
                 (preview.browser_timeout_ms). Last output:\n{}",
                program.display(),
                timeout.as_secs_f32(),
                output_end(&proc)
            ));
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
            () = cancel.cancelled() => break LaunchError::Cancelled,
        }
    };
    proc.stop("preview failed", grace).await;
    supervisor.forget(&proc.id);
    Err(failure)
}

/// `DevToolsActivePort`: the port on the first line, the browser endpoint's path on the second.
pub fn parse_active_port(text: &str) -> Option<(u16, String)> {
    let mut lines = text.lines();
    let port = lines.next()?.trim().parse::<u16>().ok()?;
    let path = lines.next()?.trim();
    path.starts_with("/devtools/browser/").then(|| (port, path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_port_file_is_parsed() {
        assert_eq!(
            parse_active_port("41235\n/devtools/browser/4f1c-aa\n"),
            Some((41235, "/devtools/browser/4f1c-aa".to_owned()))
        );
        assert_eq!(parse_active_port("41235\n"), None, "written halfway");
        assert_eq!(parse_active_port("x\n/devtools/browser/a"), None);
    }

    #[test]
    fn printed_urls_are_found() {
        let out = "  VITE v7.3.8  ready in 312 ms\n\n  ➜  Local:   http://localhost:5174/\n";
        assert_eq!(printed_url(out).as_deref(), Some("http://localhost:5174/"));
        assert_eq!(
            printed_url("listening on http://0.0.0.0:3000").as_deref(),
            Some("http://127.0.0.1:3000/")
        );
        assert_eq!(printed_url("see https://vite.dev for docs"), None);
    }

    #[test]
    fn commands_get_node_modules_bin_and_port() {
        let cmd = with_env(Path::new("/p/it's"), "vite", Some(5173));
        assert_eq!(
            cmd,
            r#"export PATH='/p/it'\''s/node_modules/.bin':"$PATH"; export PORT=5173; vite"#
        );
    }
}
