//! `hands mcp` and `hands serve`: run the MCP front end of hands-mcp, or the whole HTTP front end
//! of hands-server (MCP at `/mcp`, the session API at `/v1` and `/vibe` over a session host), on a
//! multi-threaded runtime, and shut it down without waiting for a tool that ignored its
//! cancellation.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use hands_agent::host::{AgentConfig, ClusterConfig, Host, HostOptions, HostParts};
use hands_agent::model::Provider;
use hands_agent::provider::ModelConfig;
use hands_core::{Mode, Registry};
use hands_mcp::ServerFactory;
use hands_server::ServerConfig;
use hands_store::StoreConfig;

/// MCP over stdin/stdout until stdin closes or a signal arrives.
pub fn stdio(registry: Registry, root: &Path, mode: Mode, subagent: Subagent) -> Result<ExitCode> {
    let registry = Arc::new(registry);
    let factory = ServerFactory::new(Arc::clone(&registry), root, mode);
    subagent.hook(&factory, registry);
    // One connection, one thread: every message is read, handled and answered on the same
    // thread, with no wake-up of another worker per message (measured: 27 → 21 µs per read_file
    // round trip). Blocking work (large reads, grep, writes, process reaping) still goes to the
    // blocking pool, so the protocol loop never stalls on it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    finish(
        runtime,
        async move { hands_mcp::serve_stdio(factory).await.map_err(anyhow::Error::from) },
    )
}

/// What the session host of `hands serve` is built from besides the tools.
pub struct HostSetup {
    /// `[store]`: where sessions are kept.
    pub store: StoreConfig,
    /// `[cluster]`: this node among others on a shared store.
    pub cluster: ClusterConfig,
    /// The model; `None` when no `[model]` is configured (turns then get 503, direct tool calls
    /// still work).
    pub provider: Option<Arc<dyn Provider>>,
    /// The loop's limits.
    pub agent: AgentConfig,
    /// `[checkpoints]`.
    pub checkpoints: hands_checkpoint::Settings,
}

/// MCP at `/mcp`, the session API at `/v1` and `/vibe` (over a host whose sessions live in the
/// store `setup` names), on `listen` until a signal arrives. MCP sessions start in `mode`.
pub fn http(
    registry: Registry,
    root: &Path,
    mode: Mode,
    listen: SocketAddr,
    config: &ServerConfig,
    setup: HostSetup,
    open: bool,
) -> Result<ExitCode> {
    let registry = Arc::new(registry);
    let factory = ServerFactory::new(Arc::clone(&registry), root, mode);
    let subagent =
        Subagent { provider: setup.provider.clone(), limits: setup.agent.subagent_limits() };
    subagent.hook(&factory, Arc::clone(&registry));
    let mut cluster = setup.cluster;
    if cluster.node_id.trim().is_empty() {
        cluster.node_id = hands_store::default_node_id();
    }
    let opened = crate::store::open(&setup.store, &cluster.node_id)?;
    let config = config.clone();
    run(async move {
        let parts = HostParts {
            store: opened.store,
            registry,
            provider: setup.provider,
            config: setup.agent,
            checkpoints: setup.checkpoints,
        };
        let options = HostOptions { cluster: opened.cluster, config: cluster };
        let host = Host::open_with(parts, options).await.context("cannot open the session host")?;
        if let Err(why) = host.ready().await {
            anyhow::bail!("the session store is not usable: {why}");
        }
        let ready = move |ready: hands_server::Ready| {
            if open {
                open_signed_in(&ready);
            }
        };
        hands_server::serve_with(host, factory, listen, &config, ready).await.map_err(busy_port)
    })
}

/// A busy port said as what to do about it: another `--listen` address, or stop what listens.
fn busy_port(err: hands_server::ServeError) -> anyhow::Error {
    match &err {
        hands_server::ServeError::Http(hands_mcp::HttpError::Io { addr, source })
            if source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            anyhow::anyhow!(
                "{addr} is already in use (another `hands serve`, or another program, listens \
                 there): pass another address with --listen, e.g. --listen 127.0.0.1:{}, or \
                 stop what listens on {addr}",
                addr.port().wrapping_add(1).max(1024)
            )
        }
        _ => err.into(),
    }
}

/// Open the web UI in the user's browser, signed in by a one-time link (the token itself is never
/// in a URL); without randomness for a code, the plain page, which asks for the token.
///
/// The browser is not given the link itself: a program's arguments are readable by every user
/// of the machine (`/proc/PID/cmdline`), and another user quick enough could trade the code
/// for the token. It is given a page in a folder only the user can read, which sends the
/// browser on to the link; the page is removed once the code's lifetime is over.
fn open_signed_in(ready: &hands_server::Ready) {
    let base = format!("http://{}", ready.addr);
    let lifetime = ready.signin.lifetime();
    let what =
        format!("the web UI's one-time sign-in link (good once, for {} s)", lifetime.as_secs());
    let page = ready.signin.link(&base).and_then(|link| redirect_page(&link));
    match page {
        Ok(page) => {
            open_browser(&format!("file://{}", page.display()), &what);
            std::thread::spawn(move || {
                std::thread::sleep(lifetime + std::time::Duration::from_secs(5));
                let _ = std::fs::remove_file(&page);
            });
        }
        Err(e) => {
            eprintln!("hands: cannot make a sign-in link ({e}): the page asks for the token");
            open_browser(&format!("{base}/"), "the web UI");
        }
    }
}

/// A page (0600, in a 0700 folder of hands' state) that sends the browser to `link`.
fn redirect_page(link: &str) -> std::io::Result<std::path::PathBuf> {
    let dir = hands_dirs::state_dir()
        .ok_or_else(|| std::io::Error::other("no state folder (HOME is not set)"))?
        .join("signin");
    hands_dirs::create_private_dir_all(&dir)?;
    let unique = hands_server::token::random_token()?;
    let name = format!("open-{}-{}.html", std::process::id(), &unique[..16]);
    let path = dir.join(name);
    // The link is the server's base and a hex code: nothing in it needs escaping, but it is
    // escaped for HTML and as a JavaScript string all the same.
    let attr: String = link
        .chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '"' => "&quot;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            c => c.to_string(),
        })
        .collect();
    let js = serde_json::to_string(link).unwrap_or_default().replace('<', "\\u003c");
    let html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>hands</title>\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta http-equiv=\"refresh\" content=\"0;url={attr}\">\n\
         <script>location.replace({js})</script></head>\n\
         <body><a id=\"signin\" href=\"{attr}\">Open the hands web UI</a></body></html>\n"
    );
    hands_dirs::write_private(&path, html.as_bytes())?;
    Ok(path)
}

/// Start the user's browser on `url` (`what` says what it is) without waiting for it. stderr says
/// that it was opened, never the URL (a one-time link is the user's alone); only when no browser
/// could open it is the URL printed, for the user to open — a link that is good once, briefly.
fn open_browser(url: &str, what: &str) {
    let program =
        std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty()).unwrap_or_else(|| {
            if cfg!(target_os = "macos") { "open".to_owned() } else { "xdg-open".to_owned() }
        });
    let spawned = std::process::Command::new(&program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            eprintln!("hands: opened {what} with {program}");
            let (url, what) = (url.to_owned(), what.to_owned());
            // Reap it in the background so it does not linger as a zombie; xdg-open without a
            // desktop fails at once, and then the user opens the link.
            std::thread::spawn(move || {
                if let Ok(status) = child.wait()
                    && !status.success()
                {
                    eprintln!("hands: {program} failed ({status}); open {what} yourself: {url}");
                }
            });
        }
        Err(e) => {
            eprintln!(
                "hands: cannot open a browser with {program}: {e}; open {what} yourself: {url}"
            );
        }
    }
}

/// What spawn_subagent runs on for an MCP connection: the configured model when there is one,
/// else the client's sampling when it offers it; with neither, the tool is hidden from that
/// connection. The result says which.
pub struct Subagent {
    /// The configured model, if any.
    pub provider: Option<Arc<dyn Provider>>,
    /// `[agent] subagent_max_steps` and the other limits.
    pub limits: hands_agent::turn::Limits,
}

impl Subagent {
    /// Install the choice on each connection of `factory` as it initializes.
    fn hook(self, factory: &ServerFactory, registry: Arc<Registry>) {
        let Self { provider, limits } = self;
        factory.set_session_hook(Arc::new(move |session, peer, request| {
            // The configured model first: sampling is deprecated (SEP-2577) and a 2026-07-28
            // client has none; the client's sampling only when hands has no model of its own.
            if let Some(provider) = &provider {
                hands_agent::subagent::SubagentEnv {
                    provider: Arc::clone(provider),
                    registry: Arc::clone(&registry),
                    limits,
                    source: hands_agent::subagent::ModelSource::Configured,
                }
                .install(session);
                return;
            }
            // A 2026-07-28 client gets no server-initiated request, so no sampling either.
            let modern = request.protocol_version.as_str() >= "2026-07-28";
            let sampling = !modern
                && hands_agent::provider_sampling::install(
                    session,
                    peer,
                    Arc::clone(&registry),
                    limits,
                );
            if !sampling {
                // No model on this side and none through the client: the tools that need one
                // are not this connection's.
                let specs = registry.list(hands_core::Mode::Build);
                for spec in specs.into_iter().chain(registry.list(hands_core::Mode::Plan)) {
                    if spec.policy.needs_model {
                        session.hide_tool(&spec.name);
                    }
                }
            }
        }));
    }
}

/// The model `[model]` names, or `None` when it names none (`model` empty): then `hands serve`
/// runs without one, and a message to a session gets 503.
pub fn provider(config: &ModelConfig) -> Result<Option<Arc<dyn Provider>>> {
    if config.model.trim().is_empty() {
        return Ok(None);
    }
    let provider = hands_agent::provider::from_config(config).context("cannot use [model]")?;
    Ok(Some(provider))
}

fn run(work: impl std::future::Future<Output = Result<()>>) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    finish(runtime, work)
}

/// Run `work` to its end on `runtime`, then shut the runtime down.
fn finish(
    runtime: tokio::runtime::Runtime,
    work: impl std::future::Future<Output = Result<()>>,
) -> Result<ExitCode> {
    let result = runtime.block_on(work);
    // The stdin reader may still block on a thread: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    result.map(|()| ExitCode::SUCCESS)
}
