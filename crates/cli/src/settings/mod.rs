//! The merged configuration: built-in defaults, `~/.config/hands/config.toml`,
//! `<root>/.hands/config.toml`, `HANDS_*` environment variables, `-c key=value` flags — later wins.
//! Every layer is checked against the typed [`Settings`] on its own, so that an error names the file
//! (with line and key), the variable or the flag that caused it; the source of every value is kept
//! for `hands config show`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use hands_agent::AskUserConfig;
use hands_agent::host::AgentConfig;
use hands_agent::provider::ModelConfig;
use hands_core::CoreConfig;
use hands_core::config::{Approval, OutputConfig, RecoveryConfig, TimeoutConfig};
use hands_exec::{BashConfig, EnvConfig, ExecConfig, ProcessConfig};
use hands_fs::FsConfig;
use hands_mcp::McpServersConfig;
use hands_mcp::sandbox::SandboxConfig;
use hands_preview::PreviewConfig;
use hands_server::ServerConfig;
use hands_store::StoreConfig;
use serde::{Deserialize, Serialize};
use toml::{Table, Value};

mod approvals;
mod project;
use project::{clamp_limits, drop_user_only};

/// Every setting hands reads. Core keys are top-level; each tool crate owns a section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// `ask` or `auto`.
    pub approval: Approval,
    /// Per-turn de-duplication of read-only calls.
    pub dedup: bool,
    /// `[output]`
    pub output: OutputConfig,
    /// `[timeouts]`
    pub timeouts: TimeoutConfig,
    /// `[recovery]`
    pub recovery: RecoveryConfig,
    /// Offer spawn_process and its companions.
    pub background_processes: bool,
    /// `[fs]`
    pub fs: FsConfig,
    /// `[bash]`
    pub bash: BashConfig,
    /// `[processes]`
    pub processes: ProcessConfig,
    /// `[exec]`: variables no child gets (user-only).
    pub exec: EnvConfig,
    /// `[preview]`: how the web app is built, served and watched in headless Chromium.
    pub preview: PreviewConfig,
    /// `[code]`: the language servers (diagnostics after every write, code_navigation).
    pub code: hands_code::CodeConfig,
    /// `[server]`: who may talk to `hands serve`, and how large a body the session API reads.
    pub server: ServerConfig,
    /// `[store]`: where sessions are kept (one SQLite file by default).
    pub store: StoreConfig,
    /// `[cluster]`: several `hands serve` nodes on one PostgreSQL store (leases, drain, cache).
    pub cluster: hands_agent::host::ClusterConfig,
    /// `[model]`: the model the agent loop talks to; none is configured while `model` is empty.
    pub model: ModelConfig,
    /// `[mcp_servers.NAME]`: MCP servers whose tools are brought in as `mcp__NAME__TOOL`.
    pub mcp_servers: McpServersConfig,
    /// Limit of one call to a configured MCP server, in milliseconds.
    pub mcp_call_timeout_ms: u64,
    /// `[mcp]`: what `hands mcp` offers its client.
    pub mcp: McpFrontEnd,
    /// `[sandbox]`: where tools run (`local`, `bwrap`, `remote`).
    pub sandbox: SandboxConfig,
    /// `[agent]`: the loop's limits (steps per turn, output tokens, when old results are elided).
    pub agent: AgentConfig,
    /// `[checkpoints]`: whether each turn is checkpointed, and how long checkpoints are kept
    /// (the user's only).
    pub checkpoints: hands_checkpoint::Settings,
    /// `[ask_user]`: how long ask_user waits for an answer.
    pub ask_user: AskUserConfig,
    /// `[net]`: what the egress guard of every fetching tool lets through (the user's only).
    pub net: hands_net::NetConfig,
    /// `[web]`: the limits of the web tools (download_to_repo).
    pub web: hands_web::WebConfig,
    /// `[web_search]`: web_search's provider and base URL (the user's only).
    pub web_search: hands_web::SearchConfig,
    /// `[web_scrape]`: web_scrape's built-in backend and Firecrawl's base URL (the user's only).
    pub web_scrape: hands_web::ScrapeConfig,
    /// `[image_gen]`: image_gen's provider, model, base URL and time limit (the user's only).
    pub image_gen: hands_web::ImageConfig,
    /// `[stripe]`: where enable_stripe verifies a key (the user's only).
    pub stripe: hands_connect::StripeConfig,
    /// `[supabase]`: the hosts connect_supabase accepts besides `*.supabase.co` (the user's only).
    pub supabase: hands_connect::SupabaseConfig,
    /// `[deps]`: add_dependency's time limit.
    pub deps: hands_deps::DepsConfig,
    /// `[reference_projects]`: other projects of the user that reference_project reads, name →
    /// root (the user's only).
    pub reference_projects: BTreeMap<String, PathBuf>,
    /// `[security]`: run_security_scan's advisory database and audit commands (the user's only).
    pub security: hands_scan::SecurityConfig,
    /// `[database]`: the database db_schema and supabase_setup read, when it is not
    /// connect_supabase's (a secret of the project holding a PostgreSQL URL, or a SQLite file).
    pub database: hands_connect::DatabaseConfig,
    /// `[otel]`: OpenTelemetry traces of turns, model requests and tool calls (the user's only).
    pub otel: hands_otel::OtelConfig,
}

/// `[mcp]`: how `hands mcp` serves its client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpFrontEnd {
    /// The tool profile: which tools the client sees (empty: all that the project offers). Tool
    /// names and groups (`core`, `files`, `search`, `processes`, `session`, `preview`, `web`,
    /// `data`, …), each may follow a `-` to leave it out; `hands mcp --tools` overrides it.
    pub tools: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        let core = CoreConfig::default();
        Self {
            approval: core.approval,
            dedup: core.dedup,
            output: core.output,
            timeouts: core.timeouts,
            recovery: core.recovery,
            background_processes: true,
            fs: FsConfig::default(),
            bash: BashConfig::default(),
            processes: ProcessConfig::default(),
            exec: EnvConfig::default(),
            preview: PreviewConfig::default(),
            code: hands_code::CodeConfig::default(),
            server: ServerConfig::default(),
            store: StoreConfig::default(),
            cluster: hands_agent::host::ClusterConfig::default(),
            model: ModelConfig::default(),
            mcp_servers: McpServersConfig::default(),
            mcp_call_timeout_ms: hands_mcp::DEFAULT_CALL_TIMEOUT_MS,
            mcp: McpFrontEnd::default(),
            sandbox: SandboxConfig::default(),
            agent: AgentConfig::default(),
            checkpoints: hands_checkpoint::Settings::default(),
            ask_user: AskUserConfig::default(),
            net: hands_net::NetConfig::default(),
            web: hands_web::WebConfig::default(),
            web_search: hands_web::SearchConfig::default(),
            web_scrape: hands_web::ScrapeConfig::default(),
            image_gen: hands_web::ImageConfig::default(),
            stripe: hands_connect::StripeConfig::default(),
            supabase: hands_connect::SupabaseConfig::default(),
            deps: hands_deps::DepsConfig::default(),
            reference_projects: BTreeMap::new(),
            security: hands_scan::SecurityConfig::default(),
            database: hands_connect::DatabaseConfig::default(),
            otel: hands_otel::OtelConfig::default(),
        }
    }
}

impl Settings {
    /// The exec crate's part.
    pub fn exec(&self) -> ExecConfig {
        ExecConfig {
            bash: self.bash.clone(),
            processes: self.processes.clone(),
            background_processes: self.background_processes,
        }
    }

    /// The core's part. (ask_user's own limit, its wait plus a margin, is its policy's: see
    /// `hands_agent::ask`.)
    pub fn core(&self) -> CoreConfig {
        let timeouts = self.timeouts.clone();
        CoreConfig {
            approval: self.approval,
            output: self.output.clone(),
            timeouts,
            recovery: self.recovery.clone(),
            dedup: self.dedup,
        }
    }

    /// The agent's session-tool settings, for `hands_agent::register_with`.
    pub fn session_tools(&self) -> hands_agent::AgentConfig {
        hands_agent::AgentConfig { ask_user: self.ask_user.clone() }
    }
}

/// The merged settings and where each value came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The typed result.
    pub settings: Settings,
    /// The merged table.
    pub table: Table,
    /// Dotted key → source ("default", a file path, `env HANDS_…`, `flag -c …`).
    pub sources: BTreeMap<String, String>,
    /// Settings found but not applied, with why.
    pub ignored: Vec<String>,
    /// Limits a project set higher than it may, lowered to the most it may set.
    pub clamped: Vec<String>,
    /// The `-c key=value` flags applied (an inner sandbox hands gets them too).
    pub flags: Vec<String>,
}

/// Where to look.
pub struct Layers<'a> {
    /// The user's config file (usually `~/.config/hands/config.toml`), if any.
    pub user_file: Option<PathBuf>,
    /// The project root.
    pub root: &'a Path,
    /// The environment.
    pub env: Vec<(String, String)>,
    /// `-c key=value` flags.
    pub flags: &'a [String],
}

/// The user's config file: `$XDG_CONFIG_HOME/hands/config.toml` or `~/.config/hands/config.toml`.
pub fn user_config_file() -> Option<PathBuf> {
    hands_dirs::config_dir().map(|dir| dir.join("config.toml"))
}

/// Load and merge every layer.
pub fn load(layers: &Layers<'_>) -> Result<Loaded> {
    let defaults = Value::try_from(Settings::default()).context("serialising the defaults")?;
    let Value::Table(mut table) = defaults else { bail!("the defaults are not a table") };
    let mut sources = BTreeMap::new();
    let mut ignored = Vec::new();
    let mut clamped = Vec::new();
    mark(&table, "", "default", &mut sources);

    let files = [
        (layers.user_file.clone(), false),
        (Some(layers.root.join(".hands").join("config.toml")), true),
    ];
    for (path, is_project) in files {
        let Some(path) = path else { continue };
        let text = match read_config(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => bail!(
                "cannot read the configuration file {}: {err}; make it a regular TOML file, or \
                 remove it",
                path.display()
            ),
        };
        toml::from_str::<Settings>(&text).map_err(|err| {
            anyhow::anyhow!(
                "invalid configuration in {}: {}",
                path.display(),
                err.to_string().trim_end()
            )
        })?;
        let mut layer: Table = toml::from_str(&text)
            .with_context(|| format!("invalid configuration in {}", path.display()))?;
        let source = path.display().to_string();
        let mut lowered = Vec::new();
        if is_project {
            for key in drop_user_only(&mut layer) {
                tracing::warn!(file = %source, key, "ignored: only the user may set this");
                ignored.push(format!(
                    "{key} in {source} (the project cannot loosen what the user allows: set it \
                     in the user file, HANDS_* or -c)"
                ));
            }
            lowered = clamp_limits(&mut layer, &table);
        }
        mark(&layer, "", &source, &mut sources);
        for (key, asked, max) in lowered {
            tracing::warn!(file = %source, key = %key, asked, max, "clamped: over the most a project may set");
            sources.insert(
                key.clone(),
                format!("{source} (clamped: it asked for {asked}, more than a project may set)"),
            );
            clamped.push(format!(
                "{key} = {asked} in {source} was lowered to {max}, the most a project may set; \
                 set it in the user file, HANDS_* or -c to allow more"
            ));
        }
        merge(&mut table, layer);
    }

    let known = known_keys(&table);
    let mut env: Vec<&(String, String)> = layers.env.iter().collect();
    env.sort();
    for (name, raw) in env {
        let Some(rest) = name.strip_prefix("HANDS_") else { continue };
        let key = rest.to_ascii_lowercase().replace("__", ".");
        if !known.iter().any(|k| key == *k || key.starts_with(&format!("{k}."))) {
            continue; // not a setting (HANDS_LOG, HANDS_SESSION, …)
        }
        apply(&mut table, &mut sources, &key, raw, &format!("environment variable {name}"))?;
    }
    for flag in layers.flags {
        let Some((key, raw)) = flag.split_once('=') else {
            bail!("flag -c {flag:?} is not of the form key=value (e.g. -c fs.grep_limit=100)");
        };
        let key = key.trim();
        if !known.iter().any(|k| key == *k || key.starts_with(&format!("{k}."))) {
            bail!("flag -c {flag:?}: unknown setting `{key}`; `hands config show` lists them all");
        }
        apply(&mut table, &mut sources, key, raw, &format!("flag -c {flag}"))?;
    }

    let mut settings = Value::Table(table.clone())
        .try_into::<Settings>()
        .map_err(|err| anyhow::anyhow!("invalid configuration: {err}"))?;
    // Issue 26: a database secret named by the project's own file resolves only among the
    // project's secrets; one the user named (their file, HANDS_*, -c) may be a global one.
    let project_file = layers.root.join(".hands").join("config.toml").display().to_string();
    settings.database.url_secret_by_user =
        sources.get("database.url_secret").is_some_and(|source| *source != project_file);
    Ok(Loaded { settings, table, sources, ignored, clamped, flags: layers.flags.to_vec() })
}

/// The text of the configuration file at `path`. Only a regular file is read: the open does not
/// wait (`O_NONBLOCK`), so a named pipe a repository put at `.hands/config.toml` is refused at
/// once instead of hanging hands, as are sockets and devices.
fn read_config(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::File::options()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file (a named pipe, socket, device or folder)",
        ));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

/// Set `key` (dotted) to `raw` (a TOML value, or a bare string), checking it on its own first.
fn apply(
    table: &mut Table,
    sources: &mut BTreeMap<String, String>,
    key: &str,
    raw: &str,
    source: &str,
) -> Result<()> {
    let parsed =
        toml::from_str::<Table>(&format!("v = {raw}")).ok().and_then(|mut t| t.remove("v"));
    let layer_of = |value: Value| {
        let mut layer = Table::new();
        insert(&mut layer, key, value);
        layer
    };
    let fits = |layer: &Table| Value::Table(layer.clone()).try_into::<Settings>();
    // A value is read as TOML (numbers, booleans, lists) — unless the setting is a string, as a
    // token `123` or a name `true` may be: then the raw text is taken as it is.
    let as_string = layer_of(Value::String(raw.to_owned()));
    let layer = match parsed.map(layer_of) {
        Some(typed) if fits(&typed).is_ok() => typed,
        Some(_) if fits(&as_string).is_ok() => as_string,
        Some(typed) => typed,
        None => as_string,
    };
    fits(&layer)
        .map_err(|err| anyhow::anyhow!("invalid value for `{key}` from {source}: {err}"))?;
    mark(&layer, "", source, sources);
    merge(table, layer);
    Ok(())
}

fn insert(table: &mut Table, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            table.insert(key.to_owned(), value);
        }
        Some((head, rest)) => {
            let entry = table.entry(head.to_owned()).or_insert_with(|| Value::Table(Table::new()));
            if !entry.is_table() {
                *entry = Value::Table(Table::new());
            }
            if let Value::Table(inner) = entry {
                insert(inner, rest, value);
            }
        }
    }
}

/// Deep merge: tables merge key by key, anything else is replaced.
fn merge(base: &mut Table, layer: Table) {
    for (key, value) in layer {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(old)), Value::Table(new)) => merge(old, new),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Record `source` for every leaf of `table`.
fn mark(table: &Table, prefix: &str, source: &str, sources: &mut BTreeMap<String, String>) {
    for (key, value) in table {
        let dotted = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            Value::Table(inner) => mark(inner, &dotted, source, sources),
            _ => {
                sources.insert(dotted, source.to_owned());
            }
        }
    }
}

/// Every dotted key of the defaults (tables included, so that map sections accept new keys).
fn known_keys(table: &Table) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(table: &Table, prefix: &str, out: &mut Vec<String>) {
        for (key, value) in table {
            let dotted = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            if let Value::Table(inner) = value {
                walk(inner, &dotted, out);
            }
            out.push(dotted);
        }
    }
    walk(table, "", &mut out);
    out
}

/// `hands config show`: the merged TOML, each value followed by its source.
pub fn render(loaded: &Loaded) -> String {
    let mut out = String::new();
    render_table(&loaded.table, "", &loaded.sources, &mut out);
    let source = loaded.sources.get("approval").map_or("default", String::as_str);
    out.push_str(&approvals::render(loaded.settings.approval, source));
    for ignored in &loaded.ignored {
        out.push_str(&format!("\n# ignored: {ignored}"));
    }
    for clamped in &loaded.clamped {
        out.push_str(&format!("\n# clamped: {clamped}"));
    }
    if !loaded.ignored.is_empty() || !loaded.clamped.is_empty() {
        out.push('\n');
    }
    out
}

fn render_table(table: &Table, prefix: &str, sources: &BTreeMap<String, String>, out: &mut String) {
    let mut subtables = Vec::new();
    for (key, value) in table {
        let dotted = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        if let Value::Table(inner) = value {
            subtables.push((dotted, inner));
            continue;
        }
        let source = sources.get(&dotted).map_or("default", String::as_str);
        let key_text = toml_key(key);
        // A secret is shown as set, never printed (a gateway's key may sit in a model header).
        let secret = dotted == "server.token" || dotted.starts_with("model.headers.");
        let shown = if secret { "\"<set>\"".to_owned() } else { value.to_string() };
        out.push_str(&format!("{key_text} = {shown}  # {source}\n"));
    }
    for (dotted, inner) in subtables {
        let header: Vec<String> = dotted.split('.').map(toml_key).collect();
        out.push_str(&format!("\n[{}]\n", header.join(".")));
        render_table(inner, &dotted, sources, out);
    }
}

fn toml_key(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        key.to_owned()
    } else {
        Value::String(key.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn load_with(
        files: &[(&str, &str)],
        env: &[(&str, &str)],
        flags: &[&str],
    ) -> Result<Loaded> {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user.toml");
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join(".hands")).unwrap();
        for (which, text) in files {
            let path =
                if *which == "user" { user.clone() } else { root.join(".hands/config.toml") };
            std::fs::write(path, text).unwrap();
        }
        let flags: Vec<String> = flags.iter().map(|s| (*s).to_owned()).collect();
        load(&Layers {
            user_file: Some(user),
            root: &root,
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            flags: &flags,
        })
    }

    #[test]
    fn later_layers_win_and_sources_are_kept() {
        let loaded = load_with(
            &[
                ("user", "approval = \"ask\"\n[fs]\ngrep_limit = 10\n"),
                ("project", "[fs]\ngrep_limit = 20\n"),
            ],
            &[("HANDS_OUTPUT__MAX_BYTES", "1000"), ("HANDS_LOG", "debug")],
            &["fs.glob_limit=7"],
        )
        .unwrap();
        assert_eq!(loaded.settings.approval, Approval::Ask);
        assert_eq!(loaded.settings.fs.grep_limit, 20);
        assert_eq!(loaded.settings.output.max_bytes, 1000);
        assert_eq!(loaded.settings.fs.glob_limit, 7);
        assert!(loaded.sources["approval"].ends_with("user.toml"));
        assert!(loaded.sources["fs.grep_limit"].ends_with(".hands/config.toml"));
        assert_eq!(
            loaded.sources["output.max_bytes"],
            "environment variable HANDS_OUTPUT__MAX_BYTES"
        );
        assert_eq!(loaded.sources["fs.glob_limit"], "flag -c fs.glob_limit=7");
        assert_eq!(loaded.sources["fs.read_limit"], "default");
        let shown = render(&loaded);
        assert!(shown.contains("grep_limit = 20  # "), "{shown}");
        assert!(shown.contains("approval = \"ask\"  # "), "{shown}");
    }

    #[test]
    fn malformed_file_names_file_line_and_key() {
        let err =
            load_with(&[("project", "approval = \"auto\"\n\n[fs]\ngrep_limt = 3\n")], &[], &[])
                .unwrap_err()
                .to_string();
        assert!(err.contains(".hands/config.toml"), "{err}");
        assert!(err.contains("line 4"), "{err}");
        assert!(err.contains("grep_limt"), "{err}");
    }

    #[test]
    fn wrong_type_in_file_is_reported() {
        let err = load_with(&[("user", "[fs]\ngrep_limit = \"many\"\n")], &[], &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("user.toml") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn bad_env_value_names_the_variable() {
        let err = load_with(&[], &[("HANDS_APPROVAL", "sometimes")], &[]).unwrap_err().to_string();
        assert!(err.contains("HANDS_APPROVAL"), "{err}");
    }

    #[test]
    fn unknown_flag_key_is_refused() {
        let err = load_with(&[], &[], &["fs.nope=1"]).unwrap_err().to_string();
        assert!(err.contains("fs.nope") && err.contains("unknown field `nope`"), "{err}");
    }

    // Review finding: a project file (which a repository or the model can write) set
    // fs.writable_protected and so unlocked .git/config for edit_file.
    #[test]
    fn the_project_file_cannot_loosen_what_the_user_allows() {
        let loaded = load_with(
            &[(
                "project",
                "approval = \"auto\"\n[fs]\nwritable_protected = [\".git/config\"]\ngrep_limit = 7\n\
                 [bash]\nshell = \"/tmp/evil\"\n",
            )],
            &[("HANDS_APPROVAL", "ask")],
            &[],
        )
        .unwrap();
        assert!(loaded.settings.fs.writable_protected.is_empty());
        assert_eq!(loaded.settings.bash.shell, "bash");
        assert_eq!(loaded.settings.fs.grep_limit, 7, "other project settings still apply");
        assert_eq!(loaded.ignored.len(), 3, "{:?}", loaded.ignored);
        assert!(render(&loaded).contains("# ignored: fs.writable_protected in"));
        // The user's own file may set them.
        let loaded = load_with(
            &[("user", "[fs]\nwritable_protected = [\".git/info/exclude\"]\n")],
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(loaded.settings.fs.writable_protected, [".git/info/exclude"]);
    }

    #[test]
    fn a_string_setting_takes_digits_as_text() {
        let loaded = load_with(&[], &[("HANDS_BASH__SHELL", "123")], &["fs.grep_limit=9"]).unwrap();
        assert_eq!(loaded.settings.bash.shell, "123");
        assert_eq!(loaded.settings.fs.grep_limit, 9, "numbers stay numbers where they should be");
    }

    #[test]
    fn the_agent_sections_load_and_model_and_store_are_the_users_only() {
        let loaded = load_with(
            &[
                ("user", "[model]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n"),
                (
                    "project",
                    "[model]\nbase_url = \"http://evil.example\"\n[store]\npath = \"leak.db\"\n\
                     [agent]\nmax_steps = 7\n[ask_user]\ntimeout_ms = 1000\n",
                ),
            ],
            &[("HANDS_MODEL__API_KEY_ENV", "MY_KEY")],
            &["store.backend=memory"],
        )
        .unwrap();
        let s = &loaded.settings;
        assert_eq!(s.model.model, "gpt-4o");
        assert_eq!(s.model.base_url, None, "a project cannot send the key elsewhere");
        assert_eq!(s.model.api_key_env.as_deref(), Some("MY_KEY"));
        assert_ne!(s.store.path, Path::new("leak.db"));
        assert_eq!(s.store.backend, hands_store::StoreBackend::Memory);
        assert_eq!((s.agent.max_steps, s.ask_user.timeout_ms), (7, 1000));
        assert_eq!(loaded.ignored.len(), 2, "{:?}", loaded.ignored);
        let shown = render(&loaded);
        assert!(shown.contains("max_steps = 7  # "), "{shown}");
        assert!(shown.contains("api_key_env = \"MY_KEY\"  # environment variable"), "{shown}");
        assert!(shown.contains("# ignored: model in"), "{shown}");
    }

    #[test]
    fn model_headers_are_shown_as_set_never_printed() {
        let loaded =
            load_with(&[("user", "[model.headers]\nx-gateway-key = \"secret-1\"\n")], &[], &[])
                .unwrap();
        let shown = render(&loaded);
        assert!(!shown.contains("secret-1"), "{shown}");
        assert!(shown.contains("x-gateway-key = \"<set>\""), "{shown}");
    }

    // Issue 11, item 13: a named pipe at .hands/config.toml hung every command.
    #[test]
    fn a_named_pipe_for_a_config_file_is_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join(".hands")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            root.join(".hands/config.toml"),
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let err = load(&Layers { user_file: None, root: &root, env: Vec::new(), flags: &[] })
            .unwrap_err()
            .to_string();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(err.contains(".hands/config.toml") && err.contains("not a regular file"), "{err}");
    }

    // Issue 13: the base URL of an external service is the user's only, so that a repository
    // cannot send the user's Stripe key to its own server, nor make a custom host a Supabase one.
    #[test]
    fn a_project_cannot_redirect_an_integration() {
        let loaded = load_with(
            &[
                ("user", "[supabase]\nallow_custom_url = [\"supa.mine.dev\"]\n"),
                (
                    "project",
                    "[stripe]\nbase_url = \"http://evil.example\"\n\
                     [supabase]\nallow_custom_url = [\"evil.example\"]\n",
                ),
            ],
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(loaded.settings.stripe.base_url, hands_connect::STRIPE_BASE_URL);
        assert_eq!(loaded.settings.supabase.allow_custom_url, ["supa.mine.dev"]);
        assert_eq!(loaded.ignored.len(), 2, "{:?}", loaded.ignored);
        let shown = render(&loaded);
        assert!(shown.contains("# ignored: stripe in"), "{shown}");
        // The user may point it elsewhere (a proxy, a test server).
        let loaded =
            load_with(&[], &[("HANDS_STRIPE__BASE_URL", "http://127.0.0.1:9")], &[]).unwrap();
        assert_eq!(loaded.settings.stripe.base_url, "http://127.0.0.1:9");
    }

    // Issue 14: a repository must not turn on web_scrape's fetching, choose the paid image
    // provider, or send a key to its own server.
    #[test]
    fn the_web_scrape_and_image_gen_sections_are_the_users_only() {
        let loaded = load_with(
            &[
                ("user", "[image_gen]\nmodel = \"fal-ai/flux/dev\"\n"),
                (
                    "project",
                    "[web_scrape]\nbuiltin = true\nbase_url = \"http://evil.example\"\n\
                     [image_gen]\nprovider = \"openai\"\nbase_url = \"http://evil.example\"\n",
                ),
            ],
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(loaded.settings.web_scrape, hands_web::ScrapeConfig::default());
        assert_eq!(loaded.settings.image_gen.provider, hands_web::ImageProvider::Fal);
        assert_eq!(loaded.settings.image_gen.base_url, None);
        assert_eq!(loaded.settings.image_gen.model.as_deref(), Some("fal-ai/flux/dev"));
        let shown = render(&loaded);
        assert!(shown.contains("# ignored: web_scrape in"), "{shown}");
        assert!(shown.contains("# ignored: image_gen in"), "{shown}");
        let loaded = load_with(&[("user", "[web_scrape]\nbuiltin = true\n")], &[], &[]).unwrap();
        assert!(loaded.settings.web_scrape.builtin);
    }

    #[test]
    fn per_tool_timeouts_accept_new_keys() {
        let loaded = load_with(&[], &[("HANDS_TIMEOUTS__TOOLS__BASH", "90000")], &[]).unwrap();
        assert_eq!(loaded.settings.timeouts.tools.get("bash"), Some(&90000));
    }

    // Issue 26, finding 2: the project's `[database] url_secret` may name only a secret stored
    // for the project; the user's own layers may name a global one.
    #[test]
    fn who_named_the_database_secret_is_kept() {
        let project = |files: &[(&str, &str)], env: &[(&str, &str)]| {
            load_with(files, env, &[]).unwrap().settings.database
        };
        let from_project =
            project(&[("project", "[database]\nurl_secret = \"DATABASE_URL\"\n")], &[]);
        assert_eq!(from_project.url_secret.as_deref(), Some("DATABASE_URL"));
        assert!(!from_project.url_secret_by_user);
        let over_user = project(
            &[
                ("user", "[database]\nurl_secret = \"MINE\"\n"),
                ("project", "[database]\nurl_secret = \"DATABASE_URL\"\n"),
            ],
            &[],
        );
        assert!(!over_user.url_secret_by_user, "the project's value is the project's");
        assert!(
            project(&[("user", "[database]\nurl_secret = \"MINE\"\n")], &[]).url_secret_by_user
        );
        assert!(project(&[], &[("HANDS_DATABASE__URL_SECRET", "MINE")]).url_secret_by_user);
        assert!(!project(&[], &[]).url_secret_by_user);
    }
}
