//! Starting what the preview runs: the server (a supervised daemon, or the built-in static server)
//! until it answers at the URL, and Chromium (a supervised daemon with a fresh profile folder)
//! until it answers on its DevTools pipe (`--remote-debugging-pipe`: FIFOs in the 0700 profile
//! folder, so no TCP port another local user could reach).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hands_exec::{Kind, Proc, SpawnSpec, Status, Supervisor};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cdp::{Cdp, Event};
use crate::confine::{self, Confinement};
use crate::detect::{self, Server};
use crate::preview::ServerHandle;
use crate::static_server::StaticServer;

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

pub use crate::confine::quote;

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
    /// The session's supervisor, which owns the process.
    pub supervisor: &'a Arc<Supervisor>,
    /// The project root (the process's working folder).
    pub root: &'a Path,
    /// How long a stop waits before it kills.
    pub grace: Duration,
    /// Cancels the start.
    pub cancel: &'a CancellationToken,
}

/// What a started server is.
pub struct Started {
    pub handle: ServerHandle,
    pub port: u16,
    pub url: String,
}

/// The host of `url` (`http://HOST[:port]/…`), lower-case, when it has one.
fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
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
                 there. Stop what listens on it (the session's process list shows what it runs), \
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
            let folder = crate::static_server::open_beneath(root, dir).map_err(|err| {
                let built = dir.as_os_str() == "dist" && err.contains("does not exist");
                LaunchError::Failed(if built {
                    format!("{err} (the build should have made it)")
                } else {
                    err
                })
            })?;
            let url_host = url_host(&url);
            let server =
                StaticServer::start(folder, port, url_host.as_deref()).await.map_err(|err| {
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
    printed_urls(output).into_iter().next()
}

/// Every local URL a server printed, in order, each once (`0.0.0.0` read as `127.0.0.1`).
pub fn printed_urls(output: &str) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
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
            let url = format!("http://{host}:{port}{}", if path.is_empty() { "/" } else { path });
            if !urls.contains(&url) {
                urls.push(url);
            }
        }
    }
    urls
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

/// A started browser, answering on its DevTools pipe.
pub struct Browser {
    /// The supervised browser process.
    pub proc: Arc<Proc>,
    /// Its throwaway profile folder, removed when dropped.
    pub profile: tempfile::TempDir,
    /// The connection over the pipe (only hands holds its ends).
    pub cdp: Arc<Cdp>,
    /// Its events.
    pub events: mpsc::UnboundedReceiver<Event>,
}

/// How to start a browser beyond the [`CHROMIUM_FLAGS`].
#[derive(Debug, Clone, Copy, Default)]
pub struct BrowserOptions<'a> {
    /// Chromium's own sandbox and a network namespace with nothing in it (see
    /// [`crate::confine`]), where the platform allows; for a browser whose every request hands
    /// answers over CDP. Without it, the browser runs as the preview's always has: with
    /// `--no-sandbox` and the machine's network (its page must reach the preview's server).
    pub offline: bool,
    /// More flags, each passed as one argument.
    pub flags: &'a [&'a str],
    /// The profile's `Default/Preferences` (JSON), written before the start.
    pub preferences: Option<&'a str>,
}

/// The flags that keep Chromium headless, off the network and quiet.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless=new",
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
    // Background calls of the browser itself; those no flag stops (the profile's Google
    // accounts) are refused by name at the egress proxy.
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,\
     NetworkTimeServiceQuerying,OptimizationGuideModelDownloading,CertificateTransparencyComponentUpdater",
    "--disable-client-side-phishing-detection",
    "--disable-domain-reliability",
    "--disable-field-trial-config",
    "--metrics-recording-only",
    "--no-pings",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--use-mock-keychain",
    // DevTools over fds 3 and 4 rather than a TCP port every local user could reach.
    "--remote-debugging-pipe",
];

/// Names of the FIFOs in the profile folder that become the browser's fd 3 (hands writes) and
/// fd 4 (hands reads). The folder is 0700, so only the hands user can open them.
const PIPE_IN: &str = "devtools-in";
const PIPE_OUT: &str = "devtools-out";

/// Make the two FIFOs of the DevTools pipe in `dir` and open hands' ends. Both are opened
/// read-write, so both opens return at once, the browser's shell then opens its ends without
/// blocking, and a read never sees an end of file before the browser connects; the end of the
/// browser is seen through its process instead (see [`start_browser`]).
fn devtools_pipe(dir: &Path) -> std::io::Result<(pipe::Sender, pipe::Receiver)> {
    let mode = rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR;
    for name in [PIPE_IN, PIPE_OUT] {
        rustix::fs::mkfifoat(rustix::fs::CWD, dir.join(name), mode)?;
    }
    let to_browser = pipe::OpenOptions::new().read_write(true).open_sender(dir.join(PIPE_IN))?;
    let from_browser =
        pipe::OpenOptions::new().read_write(true).open_receiver(dir.join(PIPE_OUT))?;
    Ok((to_browser, from_browser))
}

/// Start Chromium (`chromium`: the setting's value) with a fresh profile and wait for its
/// DevTools endpoint: the preview's browser, with `--no-sandbox` and the machine's network.
pub async fn start_browser(
    launch: Launch<'_>,
    chromium: &str,
    window_size: &str,
    timeout: Duration,
) -> Result<Browser, LaunchError> {
    let options = BrowserOptions::default();
    Ok(start_browser_with(launch, chromium, window_size, timeout, options).await?.0)
}

/// [`start_browser`] with `options`; also says what the browser runs under.
pub async fn start_browser_with(
    launch: Launch<'_>,
    chromium: &str,
    window_size: &str,
    timeout: Duration,
    options: BrowserOptions<'_>,
) -> Result<(Browser, Confinement), LaunchError> {
    let Launch { supervisor, root, grace, cancel } = launch;
    let Some(program) = confine::find_browser(chromium) else {
        return Err(LaunchError::Failed(format!(
            "Chromium was not found at `{chromium}` (setting preview.chromium: an absolute path, \
             or a name on the system's PATH; never a program of the project). Install it (on \
             Debian: apt-get install chromium) or set preview.chromium to the browser's path, e.g. \
             `-c preview.chromium=/usr/bin/chromium-browser`."
        )));
    };
    let profile =
        tempfile::Builder::new().prefix("hands-preview-profile-").tempdir().map_err(|err| {
            LaunchError::Failed(format!("Cannot create a browser profile folder: {err}."))
        })?;
    let (to_browser, from_browser) = devtools_pipe(profile.path()).map_err(|err| {
        LaunchError::Failed(format!("Cannot create the browser's DevTools pipe: {err}."))
    })?;
    // Chromium's scratch folders (`org.chromium.Chromium.*`) go into the profile, which is
    // removed at close, rather than into the shared /tmp where they would stay.
    let scratch = profile.path().join("tmp");
    std::fs::create_dir(&scratch).map_err(|err| {
        LaunchError::Failed(format!("Cannot create the browser's scratch folder: {err}."))
    })?;
    if let Some(preferences) = options.preferences {
        let default = profile.path().join("Default");
        std::fs::create_dir(&default)
            .and_then(|()| std::fs::write(default.join("Preferences"), preferences))
            .map_err(|err| {
                LaunchError::Failed(format!("Cannot write the browser's preferences: {err}."))
            })?;
    }
    let (prefix, confinement) = match options.offline.then(confine::isolating_prefix) {
        Some(Ok(prefix)) => (format!("{prefix} "), Confinement::Isolated),
        Some(Err(why)) => (String::new(), Confinement::Unconfined(why)),
        None => (String::new(), Confinement::Unconfined("not asked for".to_owned())),
    };
    let mut command = format!(
        "TMPDIR={} exec {prefix}{}",
        quote(&scratch.to_string_lossy()),
        quote(&program.to_string_lossy())
    );
    for flag in CHROMIUM_FLAGS {
        command.push(' ');
        command.push_str(flag);
    }
    if confinement != Confinement::Isolated {
        command.push_str(" --no-sandbox");
    }
    for flag in options.flags {
        command.push(' ');
        command.push_str(&quote(flag));
    }
    command.push_str(&format!(
        " --user-data-dir={} --window-size={} about:blank 3<{} 4>{}",
        quote(&profile.path().to_string_lossy()),
        quote(window_size),
        quote(&profile.path().join(PIPE_IN).to_string_lossy()),
        quote(&profile.path().join(PIPE_OUT).to_string_lossy()),
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
    let (cdp, events) = Cdp::over_pipe(to_browser, from_browser);
    // hands holds both ends of each FIFO, so the pipe never reports the browser's end: its
    // process does.
    let (exited, watched) = (Arc::clone(&proc), Arc::downgrade(&cdp));
    tokio::spawn(async move {
        exited.wait_exit().await;
        if let Some(cdp) = watched.upgrade() {
            cdp.close();
        }
    });
    let deadline = Instant::now() + timeout;
    let failure = loop {
        // The first answer on the pipe says the browser is up.
        let asked = cdp.call("Browser.getVersion", serde_json::json!({}), None);
        let answered = tokio::select! {
            answered = tokio::time::timeout(Duration::from_millis(250), asked) => answered,
            () = cancel.cancelled() => break LaunchError::Cancelled,
        };
        if let Ok(Ok(_)) = answered {
            return Ok((Browser { proc, profile, cdp, events }, confinement));
        }
        if proc.status() != Status::Running || cdp.is_closed() {
            // Give the supervisor a moment to see the exit the closed pipe announced.
            tokio::time::sleep(Duration::from_millis(100)).await;
            break LaunchError::Failed(format!(
                "Chromium ({}) {} at start. Last output:\n{}",
                program.display(),
                describe(&proc.status()),
                output_end(&proc)
            ));
        }
        if Instant::now() >= deadline {
            break LaunchError::Failed(format!(
                "Chromium ({}) did not answer on its DevTools pipe within {} s \
                 (preview.browser_timeout_ms). Last output:\n{}",
                program.display(),
                timeout.as_secs_f32(),
                output_end(&proc)
            ));
        }
    };
    cdp.close();
    proc.stop("preview failed", grace).await;
    supervisor.forget(&proc.id);
    Err(failure)
}

/// The last `n` non-empty lines of `text`.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn last_lines_skips_blank_ones() {
        assert_eq!(last_lines("a\n\nb\nc\n\n", 2), "b\nc");
    }
}
