//! The `hands` binary: parses the command line, loads the configuration, builds the registry and
//! hands the work to a command module. Logic lives in the library crates; this stays thin.

mod acp;
mod approve;
mod call;
mod chat;
mod checkpoints;
mod connectors;
mod log;
mod markdown;
mod profile;
mod rewind;
mod run;
mod sandbox_files;
mod secret_prompt;
mod secrets;
mod serve;
mod settings;
mod store;
mod telemetry;
mod term;
mod tools;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use hands_core::{Conditions, Mode, Registry};

/// mimalloc instead of glibc's malloc: see the dependency's comment in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// hands — the tool runtime for coding agents.
#[derive(Debug, Parser)]
#[command(name = "hands", version, about, propagate_version = true)]
struct Cli {
    /// The project root every path is confined to (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Override a setting, e.g. `-c fs.grep_limit=100` (repeatable; beats files and environment).
    #[arg(short = 'c', long = "set", global = true, value_name = "KEY=VALUE")]
    set: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools with their schemas.
    Tools {
        /// Which mode's tool set.
        #[arg(long, default_value = "build")]
        mode: Mode,
        /// Print JSON (MCP's tools/list shape).
        #[arg(long)]
        json: bool,
        /// Print the README's tool tables (every mode's tools, grouped by the crate that
        /// registers them, each table between `<!-- tools:KEY -->` markers).
        #[arg(long, conflicts_with_all = ["json", "mode"])]
        markdown: bool,
        /// List what `hands mcp --tools LIST` would offer (default: `[mcp] tools`, which
        /// `--markdown` ignores).
        #[arg(long, value_name = "LIST", value_delimiter = ',', allow_hyphen_values = true)]
        tools: Option<Vec<String>>,
    },
    /// Call one tool and print its result; exit 1 if the result is an error.
    Call {
        /// The tool's name.
        tool: String,
        /// Arguments: one JSON object, `-` to read it from stdin, or `key=value` pairs.
        args: Vec<String>,
        /// Print the whole result as JSON (content, structured output, is_error).
        #[arg(long)]
        json: bool,
    },
    /// Serve the tools over MCP on stdin/stdout (one session; ends on stdin EOF).
    Mcp {
        /// The mode the session starts in.
        #[arg(long, default_value = "build")]
        mode: Mode,
        /// The tools the client sees: names and groups (`core`, `files`, `search`, `processes`,
        /// `session`, `preview`, `web`, `data`, …), `-name` to leave one out; overrides
        /// `[mcp] tools`.
        #[arg(long, value_name = "LIST", value_delimiter = ',', allow_hyphen_values = true)]
        tools: Option<Vec<String>>,
    },
    /// Serve over HTTP: MCP at /mcp (one session per MCP session), the session API at /v1 and
    /// the compatibility routes at /vibe.
    Serve {
        /// Address to listen on; anything but loopback needs a token.
        #[arg(long, default_value = "127.0.0.1:7777", value_name = "ADDR")]
        listen: std::net::SocketAddr,
        /// Bearer token required at /mcp, /v1 and /vibe (default: setting server.token, env
        /// HANDS_SERVER__TOKEN). A random token may start with `-`: it is taken as the value.
        #[arg(long, value_name = "T", allow_hyphen_values = true)]
        token: Option<String>,
        /// The mode new sessions start in.
        #[arg(long, default_value = "build")]
        mode: Mode,
        /// Open the web UI in the browser once listening ($BROWSER, else xdg-open/open), signed
        /// in by a one-time link (good once, for 60 s); the token itself is never in a URL.
        #[arg(long)]
        open: bool,
    },
    /// Run the agent on one task: the model's text on stdout, one line per tool call on stderr.
    /// Exit 0 when the turn completed, 1 when it failed or ran out of steps, 130 when aborted
    /// (Ctrl-C; a second one quits at once).
    Run {
        /// The task, in words.
        task: String,
        /// The mode a new session starts in (on --resume: switch to it).
        #[arg(long)]
        mode: Option<Mode>,
        /// Go on with a stored session (its id is printed at the end of each run).
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
        /// The id of the new session (default: a fresh one).
        #[arg(long, value_name = "ID", conflicts_with = "resume")]
        session_id: Option<String>,
    },
    /// Talk with the agent: each line is a turn; /plan, /build, /todos, /exit. Ctrl-C aborts the
    /// running turn, or leaves when none runs.
    Chat {
        /// The mode a new session starts in (on --resume: switch to it).
        #[arg(long)]
        mode: Option<Mode>,
        /// Go on with a stored session.
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
    },
    /// Serve the Agent Client Protocol on stdin/stdout for an editor (Zed's agent_servers): each
    /// session's cwd is its project root; the agent loop runs with the configured [model].
    Acp,
    /// Manage the secrets given to projects' processes as environment variables (and hidden
    /// everywhere hands shows text): set, list, rm. A secret is for the project at --root (the
    /// current directory by default) unless --global.
    Secrets {
        #[command(subcommand)]
        action: secrets::Action,
    },
    /// The project's connectors (`.hands/connectors/<name>.toml`, no secret in them): list, add
    /// (from an OpenAPI 3 document with --from-openapi FILE_OR_URL), rm.
    Connectors {
        #[command(subcommand)]
        action: connectors::Action,
    },
    /// The project's checkpoints (one before and after each turn): list, diff, restore, gc.
    Checkpoints {
        #[command(subcommand)]
        action: checkpoints::Action,
    },
    /// The session store: `migrate` brings its schema up to date (PostgreSQL: under an
    /// advisory lock, once for every node), `check` says whether it answers and is current.
    Store {
        #[command(subcommand)]
        action: store::Action,
    },
    /// Show the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Print the merged configuration and where each value came from.
    Show,
}

fn main() -> ExitCode {
    // parse_document's child: a document parsed under memory and time limits, nothing else run
    // (no settings, no secrets, no tracing).
    if std::env::args().nth(1).as_deref() == Some(hands_document::CHILD_SUBCOMMAND) {
        return hands_document::child_main(std::env::args().skip(2));
    }
    if hands_mcp::sandbox::is_inner() {
        seal_inner();
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            term::errln(&format!("hands: {err:#}"));
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let root = match &cli.root {
        Some(root) => root.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !root.is_dir() {
        anyhow::bail!("the root {} is not a directory", root.display());
    }
    // The settings' own warnings go to the log before the exporter (which they configure) runs.
    let (loaded, root) = tracing::subscriber::with_default(telemetry::early(), || {
        let mut loaded = load_settings(&root, &cli.set)?;
        // `--resume` without `--root`: the session's own project (its configuration, skills,
        // preview), wherever the command is typed.
        let mut root = root;
        if let (
            Command::Run { resume: Some(id), .. } | Command::Chat { resume: Some(id), .. },
            None,
        ) = (&cli.command, &cli.root)
            && let Some(stored) = run::stored_root(&loaded.settings.store, id)?
            && stored.is_dir()
            && !run::same_dir(&stored, &root)
        {
            loaded = load_settings(&stored, &cli.set)?;
            root = stored;
        }
        anyhow::Ok((loaded, root))
    })?;
    // Spans are exported from the commands that run tools; they are flushed when it returns.
    let exports = matches!(
        cli.command,
        Command::Run { .. }
            | Command::Chat { .. }
            | Command::Mcp { .. }
            | Command::Serve { .. }
            | Command::Call { .. }
    );
    let telemetry = telemetry::init(&loaded.settings.otel, exports);
    let result = run_command(cli, root, loaded);
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    result
}

fn run_command(cli: Cli, root: PathBuf, loaded: settings::Loaded) -> Result<ExitCode> {
    // No child (bash, processes, the preview, MCP servers, a sandbox) gets hands' credentials.
    let model_key = loaded.settings.model.api_key_env.iter();
    let store_url = std::iter::once(&loaded.settings.store.url_env);
    hands_core::env::ChildEnv::init(
        model_key.chain(store_url).chain(&loaded.settings.exec.env_remove).cloned(),
    );
    // The user's secrets: granted to their projects' children, hidden on every surface.
    let secrets = open_secrets();
    // Commands that let a model or a client act on the root: not `/`, the home folder, or a
    // folder holding hands' own state, configuration or sessions.
    if matches!(
        cli.command,
        Command::Run { .. } | Command::Chat { .. } | Command::Mcp { .. } | Command::Serve { .. }
    ) {
        let store_dir: Vec<PathBuf> =
            loaded.settings.store.path.parent().map(PathBuf::from).into_iter().collect();
        // Started in the home folder or at `/`: the message names projects to pass instead.
        hands_agent::host::roots::check_start_root(&root, &store_dir)
            .map_err(anyhow::Error::msg)?;
    }
    match cli.command {
        Command::Checkpoints { action } => {
            checkpoints::run(&root, &loaded.settings.checkpoints, action)
        }
        Command::Connectors { action } => {
            let store = secrets.ok();
            let store = store.as_deref().map(|s| s as &dyn hands_core::secret::SecretStore);
            connectors::run(&root, store, &loaded.settings.net, action)
        }
        Command::Secrets { action } => {
            let store = secrets.context("cannot open the secret store")?;
            secrets::run(&store, &root, action)
        }
        Command::Store { action } => store::run(&loaded.settings, action),
        Command::Config { action: ConfigAction::Show } => {
            term::data(&settings::render(&loaded))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools { mode, json, markdown, tools } => {
            let has_model = !loaded.settings.model.model.trim().is_empty();
            let profile = match (markdown, tools) {
                (true, _) => Vec::new(),
                (false, Some(tools)) => tools,
                (false, None) => loaded.settings.mcp.tools.clone(),
            };
            let (registry, mcp) = build_registry_profiled(&loaded, &root, has_model, &profile)?;
            if markdown {
                tools::print_markdown(&registry)?;
                return Ok(ExitCode::SUCCESS);
            }
            tools::print(&registry, mode, json)?;
            if !json {
                for server in mcp.status() {
                    if let Some(error) = server.error {
                        term::out(&format!("MCP server {} unavailable: {error}\n", server.name));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { tool, args, json } => {
            stop_leftovers();
            let registry = build_registry(&loaded, &root)?;
            call::run(&registry, &root, &tool, &args, json)
        }
        Command::Mcp { mode, tools } => {
            stop_leftovers();
            let profile = tools.unwrap_or_else(|| loaded.settings.mcp.tools.clone());
            let registry = build_registry_profiled(&loaded, &root, true, &profile)?.0;
            let subagent = serve::Subagent {
                provider: serve::provider(&loaded.settings.model)?,
                limits: loaded.settings.agent.subagent_limits(),
            };
            serve::stdio(registry, &root, mode, subagent)
        }
        Command::Serve { listen, token, mode, open } => {
            stop_leftovers();
            let registry = build_registry_with_mcp(&loaded, &root, true)?.0;
            let mut config = loaded.settings.server.clone();
            if token.is_some() {
                config.token = token;
            }
            let setup = serve::HostSetup {
                store: loaded.settings.store.clone(),
                cluster: loaded.settings.cluster.clone(),
                provider: serve::provider(&loaded.settings.model)?,
                agent: loaded.settings.agent.clone(),
                checkpoints: loaded.settings.checkpoints.clone(),
            };
            serve::http(registry, &root, mode, listen, &config, setup, open)
        }
        Command::Run { task, mode, resume, session_id } => {
            stop_leftovers();
            let start = match resume {
                Some(id) => run::Start::Resume { id, mode },
                None => run::Start::New { id: session_id, mode: mode.unwrap_or_default() },
            };
            run::run(agent_setup(loaded, root)?, start, task)
        }
        Command::Acp => {
            stop_leftovers();
            let flags = cli.set;
            acp::serve(move |root| {
                let loaded = load_settings(root, &flags)?;
                let store = loaded.settings.store.path.parent().map(PathBuf::from);
                let store_dir: Vec<PathBuf> = store.into_iter().collect();
                hands_agent::host::roots::check_root(root, &store_dir)
                    .map_err(anyhow::Error::msg)?;
                agent_setup(loaded, root.to_path_buf())
            })
        }
        Command::Chat { mode, resume } => {
            stop_leftovers();
            let start = match resume {
                Some(id) => run::Start::Resume { id, mode },
                None => run::Start::New { id: None, mode: mode.unwrap_or_default() },
            };
            chat::chat(agent_setup(loaded, root)?, start)
        }
    }
}

/// Open the secret store and install it (children's environments) and its redaction engine
/// (reinstalled whenever the store changes). Without a store hands runs on, with a warning.
fn open_secrets() -> Result<std::sync::Arc<hands_secrets::Store>> {
    secret_store().ok_or_else(|| {
        anyhow::anyhow!("there is no state folder for the secret store: set HOME or XDG_STATE_HOME")
    })
}

fn load_settings(root: &std::path::Path, flags: &[String]) -> Result<settings::Loaded> {
    settings::load(&settings::Layers {
        user_file: settings::user_config_file(),
        root,
        env: std::env::vars().collect(),
        flags,
    })
}

/// What `hands run` and `hands chat` run on. Their approval policy is `ask` unless a layer says
/// otherwise (the agent loop asks by default; `hands call` and MCP do not).
fn agent_setup(mut loaded: settings::Loaded, root: PathBuf) -> Result<run::Setup> {
    if loaded.sources.get("approval").is_none_or(|source| source == "default") {
        loaded.settings.approval = hands_core::config::Approval::Ask;
    }
    let registry = build_registry(&loaded, &root)?;
    Ok(run::Setup { registry, root, settings: loaded.settings })
}

/// The hands inside a sandbox takes its calls from the host only. The sandboxed commands run as
/// the same user, and a dumpable process's `/proc/<pid>/fd/0` can be opened by any process of its
/// user: they could write calls into its stdin (tools_only: no approval) or forge its answers. A
/// process that is not dumpable has its `/proc` entries owned by root and cannot be traced, so
/// only a process with CAP_SYS_PTRACE (none in the sandbox) reaches it. Its children are
/// dumpable again after their exec, as usual.
fn seal_inner() {
    if let Err(err) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        eprintln!("hands: cannot seal the sandbox's hands from its commands: {err}");
        std::process::exit(1);
    }
}

/// Stop what a crashed hands left running (its records say what), before starting anything new.
fn stop_leftovers() {
    // Inside a sandbox the records and pids are the host's, from another PID namespace.
    if hands_mcp::sandbox::is_inner() {
        return;
    }
    let Some(dir) = hands_exec::records_dir() else { return };
    let report = hands_exec::reap_leftovers(&dir);
    if report.stopped > 0 || report.survivors > 0 {
        tracing::warn!(
            stopped = report.stopped,
            survivors = report.survivors,
            reused_pids = report.reused_pids,
            "stopped processes left running by a hands that is gone"
        );
    }
}

/// The registry with every tool this build has.
/// spawn_subagent is among them when a model is configured.
fn build_registry(loaded: &settings::Loaded, root: &std::path::Path) -> Result<Registry> {
    let has_model = !loaded.settings.model.model.trim().is_empty();
    Ok(build_registry_with_mcp(loaded, root, has_model)?.0)
}

/// [`build_registry`], plus the MCP servers it connected (their failures, for `hands tools`);
/// with spawn_subagent when `subagent` (a model is configured, or an MCP front end whose clients
/// may offer sampling: it hides the tool from a connection that has neither).
fn build_registry_with_mcp(
    loaded: &settings::Loaded,
    root: &std::path::Path,
    subagent: bool,
) -> Result<(Registry, hands_mcp::McpClients)> {
    build_registry_profiled(loaded, root, subagent, &[])
}

/// [`build_registry_with_mcp`] offering only what the tool `profile` takes (see profile.rs).
fn build_registry_profiled(
    loaded: &settings::Loaded,
    root: &std::path::Path,
    subagent: bool,
    profile: &[String],
) -> Result<(Registry, hands_mcp::McpClients)> {
    let config_json = serde_json::to_value(&loaded.settings).context("configuration to JSON")?;
    // Conditions are read again on every Registry::refresh: a variable set since is seen, and so
    // is a secret stored since (the store's change hook below refreshes the registry), so a tool
    // offered "when its key exists" appears the moment the key is stored.
    let store = secret_store();
    let secrets_of = {
        let store = store.clone();
        let root = root.to_path_buf();
        move || -> Vec<String> {
            use hands_core::secret::SecretStore as _;
            store.as_ref().map_or_else(Vec::new, |store| {
                store.list(&root).into_iter().map(|secret| secret.name).collect()
            })
        }
    };
    let builder = Registry::builder(loaded.settings.core())
        .conditions_with(move || {
            Conditions::from_process(config_json.clone()).with_secrets(secrets_of())
        })
        .project_root(root);
    // read_file points to parse_document for PDFs and office files.
    let hints = hands_fs::Hints { documents: Some(hands_document::NAME) };
    let builder = hands_fs::register_with(builder, &loaded.settings.fs, hints);
    let builder = hands_repomap::register(builder, &loaded.settings.fs);
    // parse_document, parsing in a child: this binary again, with the hidden subcommand. The same
    // parser reads the PDFs and office files web_scrape fetches.
    let documents = document_parser()?;
    let builder = hands_document::register(builder, documents.clone());
    let builder = hands_exec::register(builder, &loaded.settings.exec());
    // The session tools with their settings, and use_skill listing the project's skills too.
    let skills =
        hands_agent::UseSkill::discover(Some(root), hands_agent::user_skills_dir().as_deref());
    let builder = hands_agent::register_with(builder, &loaded.settings.session_tools(), skills);
    let builder = hands_agent::subagent::register(builder, subagent);
    // The secrets tool, over the user's store (hosts that cannot ask make it say how to store a
    // secret by hand).
    let builder = match open_secrets() {
        Ok(store) => {
            hands_agent::register_secrets(builder, store, &loaded.settings.session_tools())
        }
        Err(_) => builder,
    };
    // add_dependency, seeing the session's dev servers through the process service.
    let exec = loaded.settings.exec();
    let processes =
        exec.background_processes.then(|| hands_exec::ExecProcesses::service(exec.clone()));
    let builder = hands_deps::register(builder, &loaded.settings.deps, &exec, processes);
    // reference_project, when the user's configuration names another project to read.
    let builder = hands_reference::register(
        builder,
        &loaded.settings.reference_projects,
        &loaded.settings.fs,
    );
    // The preview tools, when the project has a preview (configured or detected).
    let builder = hands_preview::register_with_net(
        builder,
        &loaded.settings.preview,
        &loaded.settings.exec(),
        &loaded.settings.net,
        root,
    );
    // diagnostics and code_navigation, and the language servers' diagnostics after every write.
    let builder = hands_code::register(builder, &loaded.settings.code, &loaded.settings.exec());
    // The web tools, fetching through the egress guard built from the user's [net] settings.
    let guard = hands_net::Guard::new(&loaded.settings.net).context("the [net] settings")?;
    let builder = hands_web::register(builder, &guard, &loaded.settings.web);
    // clone_site, when the preview's Chromium is found: the page loads with every request
    // fetched through the same guard.
    let builder = hands_clone::register(builder, &guard, &loaded.settings.preview.chromium, root);
    // web_search, when a search key is stored or set (or SearXNG is configured).
    let search_secrets =
        store.clone().map(|s| s as std::sync::Arc<dyn hands_core::secret::SecretStore>);
    let builder = hands_web::register_search(
        builder,
        &guard,
        &loaded.settings.web_search,
        search_secrets.clone(),
    );
    // web_scrape, when FIRECRAWL_API_KEY is stored or set or the user turned on the built-in
    // backend, reading fetched documents with parse_document's parser; image_gen, when the
    // chosen image provider's key is.
    let builder = hands_web::register_scrape(
        builder,
        &guard,
        &loaded.settings.web_scrape,
        search_secrets.clone(),
        Some(documents),
    );
    let builder =
        hands_web::register_image(builder, &guard, &loaded.settings.image_gen, search_secrets);
    // enable_stripe and connect_supabase: keys asked of the user, verified (Stripe through the
    // guard, the database under its address rule) and kept in the user's secret store; db_schema
    // and supabase_setup on the linked database.
    let builder = match store.clone() {
        Some(store) => {
            let connect = hands_connect::ConnectConfig {
                stripe: loaded.settings.stripe.clone(),
                supabase: loaded.settings.supabase.clone(),
                net: loaded.settings.net.clone(),
                database: loaded.settings.database.clone(),
                approval: loaded.settings.approval,
            };
            let builder = hands_connect::register(builder, &connect, &guard, store.clone());
            // run_security_scan: the stored secrets are what it looks for.
            let builder = hands_scan::register(
                builder,
                &loaded.settings.security,
                &loaded.settings.net,
                store.clone(),
            );
            // connector_call, when the project has a connector file: a secret goes only to the
            // host recorded with it.
            hands_connectors::register(builder, &loaded.settings.net, store, root)
                .context("the [net] settings")?
        }
        None => builder,
    };
    // An inner hands of a bwrap sandbox only runs tools, and a hands started by another hands as
    // an MCP server would start itself again: their host talks to the MCP servers.
    let servers = if hands_mcp::sandbox::is_inner() || hands_mcp::client_depth() > 0 {
        hands_mcp::McpServersConfig::default()
    } else {
        loaded.settings.mcp_servers.clone()
    };
    let mcp =
        hands_mcp::McpClients::connect_blocking(&servers, loaded.settings.mcp_call_timeout_ms);
    let builder = mcp.register(builder);
    // Where the tools run, and with a proxy sandbox the process service that reaches its processes.
    let host = sandbox_files::host_files(loaded);
    let builder =
        hands_mcp::sandbox::register(builder, &loaded.settings.sandbox, &loaded.flags, &host)?;
    // Inside a sandbox the host's chain approved, timed, truncated and redacted each call once;
    // the hands here only runs the tools.
    let builder = if hands_mcp::sandbox::is_inner() { builder.tools_only() } else { builder };
    let builder = match profile::offer(profile)? {
        Some(offer) => builder.offer_only(move |spec| offer(spec)),
        None => builder,
    };
    let registry = builder.build();
    if let Some(store) = store {
        let refresher = registry.refresher();
        store.on_change(move |_| {
            if refresher.alive() {
                refresher.refresh();
            }
        });
    }
    Ok((registry, mcp))
}

/// The document parser every tool that meets a document uses: children of this binary.
fn document_parser() -> Result<std::sync::Arc<dyn hands_core::document::DocumentParser>> {
    let program = std::env::current_exe().context("cannot find the hands binary's own path")?;
    let command = hands_document::ChildCommand {
        program,
        args: vec![hands_document::CHILD_SUBCOMMAND.into()],
        // hands' allocator (mimalloc) reserves address space 1 GiB at a time, as much as the
        // child's whole limit: a child reserves 16 MiB at a time instead.
        env: vec![("MIMALLOC_ARENA_RESERVE".into(), "16M".into())],
    };
    Ok(hands_document::parser(command, hands_document::Limits::default()))
}

/// The user's secret store, opened once per process, so that the redaction engine and
/// children's environments ([`open_secrets`]) and every tool that stores a secret share one
/// instance (a key a tool stores is hidden at once). `None`, with a warning, when there is no
/// state folder (neither HOME nor XDG_STATE_HOME): the tools that need the store are then off.
fn secret_store() -> Option<std::sync::Arc<hands_secrets::Store>> {
    static STORE: std::sync::OnceLock<Option<std::sync::Arc<hands_secrets::Store>>> =
        std::sync::OnceLock::new();
    STORE
        .get_or_init(|| match hands_secrets::Store::open() {
            Ok(store) => {
                let store = std::sync::Arc::new(store);
                hands_secrets::install(store.clone());
                Some(store)
            }
            Err(err) => {
                tracing::warn!(
                    %err,
                    "no secret store: stored secrets are neither given nor hidden, and \
                     the tools that store secrets are off"
                );
                None
            }
        })
        .clone()
}
