//! The `hands` binary: parses the command line, loads the configuration, builds the registry and
//! hands the work to a command module. Logic lives in the library crates; this stays thin.

mod approve;
mod call;
mod serve;
mod settings;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use hands_core::{Conditions, Mode, Registry};

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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { 2 } else { 0 });
        }
    };
    init_tracing();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("hands: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HANDS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

fn run(cli: Cli) -> Result<ExitCode> {
    let root = match &cli.root {
        Some(root) => root.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !root.is_dir() {
        anyhow::bail!("the root {} is not a directory", root.display());
    }
    let loaded = settings::load(&settings::Layers {
        user_file: settings::user_config_file(),
        root: &root,
        env: std::env::vars().collect(),
        flags: &cli.set,
    })?;
    match cli.command {
        Command::Config { action: ConfigAction::Show } => {
            print!("{}", settings::render(&loaded));
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools { mode, json } => {
            let (registry, mcp) = build_registry_with_mcp(&loaded, &root)?;
            tools::print(&registry, mode, json)?;
            if !json {
                for server in mcp.status() {
                    if let Some(error) = server.error {
                        println!("MCP server {} unavailable: {error}", server.name);
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
        Command::Mcp { mode } => {
            stop_leftovers();
            let registry = build_registry(&loaded, &root)?;
            serve::stdio(registry, &root, mode)
        }
        Command::Serve { listen, token, mode } => {
            stop_leftovers();
            let registry = build_registry(&loaded, &root)?;
            let mut config = loaded.settings.server.clone();
            if token.is_some() {
                config.token = token;
            }
            let setup = serve::HostSetup {
                store: loaded.settings.store.clone(),
                provider: serve::provider(&loaded.settings.model)?,
                agent: Default::default(),
            };
            serve::http(registry, &root, mode, listen, &config, setup)
        }
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
fn build_registry(loaded: &settings::Loaded, root: &std::path::Path) -> Result<Registry> {
    Ok(build_registry_with_mcp(loaded, root)?.0)
}

/// [`build_registry`], plus the MCP servers it connected (their failures, for `hands tools`).
fn build_registry_with_mcp(
    loaded: &settings::Loaded,
    root: &std::path::Path,
) -> Result<(Registry, hands_mcp::McpClients)> {
    let config_json = serde_json::to_value(&loaded.settings).context("configuration to JSON")?;
    let builder =
        Registry::builder(loaded.settings.core()).conditions(Conditions::from_process(config_json));
    let builder = hands_fs::register(builder, &loaded.settings.fs);
    let builder = hands_exec::register(builder, &loaded.settings.exec());
    let builder = hands_agent::register(builder);
    // The preview tools, when the project has a preview (configured or detected).
    let builder =
        hands_preview::register(builder, &loaded.settings.preview, &loaded.settings.exec(), root);
    // An inner hands of a bwrap sandbox only runs tools; its host talks to the MCP servers.
    let servers = if hands_mcp::sandbox::is_inner() {
        hands_mcp::McpServersConfig::default()
    } else {
        loaded.settings.mcp_servers.clone()
    };
    let mcp =
        hands_mcp::McpClients::connect_blocking(&servers, loaded.settings.mcp_call_timeout_ms);
    let builder = mcp.register(builder);
    let provider = hands_mcp::sandbox::provider(&loaded.settings.sandbox, &loaded.flags)?;
    Ok((builder.sandbox(provider).build(), mcp))
}
