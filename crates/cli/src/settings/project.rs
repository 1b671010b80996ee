//! What a project's own `.hands/config.toml` may set: the keys only the user may set, and the
//! most a project may raise each numeric limit to.

use toml::{Table, Value};

/// Settings a project's own `.hands/config.toml` may not set: each loosens what the user allows
/// (asking before changes, writing under `.git/`, which shell runs commands). A repository could
/// ship them, or a model could write them to escalate its own rights.
/// The server section decides how `hands serve` is reached (its allow-lists open it to other hosts
/// and web pages, a token a repository chose would be known to whoever wrote it, its timeouts and
/// connection cap bound what another local user can hold open).
/// MCP servers are commands hands starts on its own, and the sandbox section chooses whether tools
/// are isolated at all (and `sandbox.recreate` is a shell command).
/// The model section names a server and the variable whose key is sent to it: a repository could
/// send the user's key (or any variable) to a server of its choosing. The store holds every
/// session's transcript.
/// Every setting whose value is a command or a program is the user's only: the preview's
/// `typecheck`, `build` and `serve` commands and its `chromium` program run when the user approves
/// "preview_open", a prompt that cannot show what a repository put there (`bash.shell` and
/// `mcp_servers` above are the others; `[processes]` and `[exec]` hold none). `preview.url` is
/// the page Chromium opens: a `file://` URL would show the model files outside the project.
pub(super) const USER_ONLY: &[&str] = &[
    "mcp_servers",
    "sandbox",
    "model",
    "store",
    // Which node runs a session's turns, and where the others reach it.
    "cluster",
    "approval",
    "fs.writable_protected",
    "bash.shell",
    "exec",
    "server",
    "preview.typecheck",
    "preview.build",
    "preview.serve",
    "preview.chromium",
    "preview.url",
    // Whether the model may run its own JavaScript in the page, and where hands writes the
    // DevTools endpoint (a repository could point it at `.env`, `.git/config` or a served file).
    "preview.evaluate",
    "preview.discovery_file",
    // The egress guard: a repository must not open this machine's network to the tools.
    "net",
    // The user's way back: a repository must not turn checkpoints off, nor shorten how long
    // they are kept, before it changes things.
    "checkpoints",
    // External services' addresses: a repository must not redirect a key (issue 13).
    "stripe",
    "supabase",
    "web_search",
    // Folders outside the project the model may read: a repository must not add one.
    "reference_projects",
    // Where traces go and whether they carry content: a repository must not send its session's
    // tool calls to a collector of its own.
    "otel",
    // The advisory database and the audit commands: a repository must not clear its own
    // vulnerable dependencies, nor send its lock files somewhere (issue 15).
    "security",
    // Which backend fetches pages, which provider is paid for images, and where keys go.
    "web_scrape",
    "image_gen",
    "deps.allow_project_programs",
    "deps.allow_scripts", // add_dependency running repository code
    // Which program runs as a language server: a repository must not name its own.
    "code.servers",
    "code.project_servers",
];

/// The most a project's `.hands/config.toml` may set each limit to (time limits in milliseconds,
/// sizes in bytes, counts as they are). A project may lower any limit; it may raise one only up
/// to this maximum, or up to the value the user's own layers give (the user file, else the
/// default), whichever is larger: a repository cannot keep hands waiting for an hour after
/// SIGTERM, run a model for thousands of steps on the user's key, or fill memory and disk.
/// Values over the maximum are lowered to it, with a warning, and `hands config show` says so.
/// Every number a project can set is listed (a test checks it); `None`: not a limit (a port).
const PROJECT_MAXIMA: &[(&str, Option<u64>)] = &[
    // Grace periods and short waits: they delay shutdown and every stop.
    ("processes.stop_grace_ms", Some(5_000)),
    ("timeouts.grace_ms", Some(5_000)),
    ("recovery.wait_ms", Some(5_000)),
    ("processes.settle_ms", Some(10_000)),
    ("preview.watch_debounce_ms", Some(5_000)),
    ("preview.watch_interval_ms", Some(5_000)),
    // Time limits of calls and waits.
    ("timeouts.default_ms", Some(600_000)),
    ("timeouts.tools.*", Some(1_800_000)),
    ("bash.default_timeout_ms", Some(600_000)),
    ("bash.max_timeout_ms", Some(1_800_000)),
    ("processes.ready_timeout_ms", Some(120_000)),
    ("processes.long_run_timeout_ms", Some(3_600_000)),
    ("preview.build_timeout_ms", Some(600_000)),
    ("deps.timeout_ms", Some(1_800_000)),
    ("preview.ready_timeout_ms", Some(120_000)),
    ("preview.browser_timeout_ms", Some(60_000)),
    ("ask_user.timeout_ms", Some(3_600_000)),
    ("mcp_call_timeout_ms", Some(600_000)),
    ("model.request_timeout_ms", Some(600_000)),
    // db_schema's statement timeout: a read of the catalog needs no minute.
    ("database.statement_timeout_ms", Some(60_000)),
    // Sizes: memory, disk and what goes into the model's context.
    ("output.max_bytes", Some(262_144)),
    ("bash.max_output_bytes", Some(16_777_216)),
    ("processes.buffer_bytes", Some(16_777_216)),
    ("processes.log_max_bytes", Some(268_435_456)),
    ("fs.read_max_bytes", Some(16_777_216)),
    ("fs.image_max_bytes", Some(20_971_520)),
    ("fs.write_max_bytes", Some(67_108_864)),
    ("web.download_max_bytes", Some(104_857_600)),
    // Counts.
    ("fs.glob_limit", Some(10_000)),
    ("fs.grep_limit", Some(1_000)),
    ("fs.grep_max_line_chars", Some(10_000)),
    ("fs.list_depth", Some(10)),
    ("fs.list_max_entries", Some(10_000)),
    ("fs.read_limit", Some(10_000)),
    ("fs.read_max_line_chars", Some(10_000)),
    ("fs.threads", Some(16)),
    ("processes.max_per_session", Some(32)),
    ("recovery.max_per_project", Some(10)),
    ("preview.max_errors", Some(5_000)),
    ("agent.max_steps", Some(200)),
    ("agent.subagent_max_steps", Some(100)),
    ("agent.max_tokens", Some(64_000)),
    ("model.max_retries", Some(10)),
    ("preview.port", None),
    // Language servers: how long a write waits, how long one may hang, what it may hold.
    ("code.diagnostics_wait_ms", Some(10_000)),
    ("code.initialize_timeout_ms", Some(120_000)),
    ("code.request_timeout_ms", Some(60_000)),
    ("code.max_restarts", Some(10)),
    ("code.memory_mb", Some(16_384)),
    ("code.max_diagnostics_per_file", Some(10_000)),
];

/// The project maximum for dotted `key` (`Some(None)`: listed, not a limit).
pub(super) fn project_maximum(key: &str) -> Option<Option<u64>> {
    PROJECT_MAXIMA.iter().find_map(|(pattern, max)| {
        let hit = match pattern.strip_suffix('*') {
            Some(prefix) => key.starts_with(prefix),
            None => key == *pattern,
        };
        hit.then_some(*max)
    })
}

/// Limits whose 0 means "no limit" (a project's 0 is clamped like any value over the maximum).
/// Red-team round 3: a project's `code.memory_mb = 0` lifted its language servers' memory limit.
const ZERO_IS_UNLIMITED: &[&str] = &["code.memory_mb"];

/// Lower every number in the project `layer` that is over its maximum (or over what `base`, the
/// user's layers so far, already gives, when that is more); returns `(key, asked, lowered to)`.
pub(super) fn clamp_limits(layer: &mut Table, base: &Table) -> Vec<(String, i64, i64)> {
    fn walk(
        layer: &mut Table,
        base: Option<&Table>,
        prefix: &str,
        out: &mut Vec<(String, i64, i64)>,
    ) {
        for (key, value) in layer.iter_mut() {
            let dotted = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            let below = base.and_then(|b| b.get(key));
            match value {
                Value::Table(inner) => walk(inner, below.and_then(Value::as_table), &dotted, out),
                Value::Integer(asked) => {
                    // Where 0 means "no limit", 0 is the most a project could ask.
                    let unbounded = |n: i64| {
                        if n == 0 && ZERO_IS_UNLIMITED.contains(&dotted.as_str()) {
                            i64::MAX
                        } else {
                            n
                        }
                    };
                    // An unlisted number is held to the user's value: nothing can slip through.
                    let user = unbounded(below.and_then(Value::as_integer).unwrap_or(0));
                    let max = match project_maximum(&dotted) {
                        Some(None) => continue,
                        Some(Some(max)) => i64::try_from(max).unwrap_or(i64::MAX).max(user),
                        None => user,
                    };
                    if unbounded(*asked) > max {
                        out.push((dotted, *asked, max));
                        *asked = max;
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(layer, Some(base), "", &mut out);
    out
}

/// Remove the user-only keys from a project layer; returns the ones that were there.
pub(super) fn drop_user_only(layer: &mut Table) -> Vec<&'static str> {
    let mut dropped = Vec::new();
    for key in USER_ONLY {
        let removed = match key.split_once('.') {
            None => layer.remove(*key).is_some(),
            Some((section, field)) => layer
                .get_mut(section)
                .and_then(Value::as_table_mut)
                .is_some_and(|t| t.remove(field).is_some()),
        };
        if removed {
            dropped.push(*key);
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::super::tests::load_with;
    use super::super::*;
    use super::*;

    // Red-team finding (issue 11, item 4): a repository's [preview] commands ran after an
    // approval that read `allow preview_open: {}?`.
    #[test]
    fn command_valued_settings_are_the_users_only() {
        let loaded = load_with(
            &[
                ("user", "[preview]\nbuild = \"make site\"\n"),
                (
                    "project",
                    "[preview]\ntypecheck = \"id > MARK\"\nbuild = \"id > MARK\"\n\
                     serve = \"id > MARK\"\nchromium = \"/tmp/evil\"\nwindow_size = \"800,600\"\n",
                ),
            ],
            &[],
            &[],
        )
        .unwrap();
        let preview = &loaded.settings.preview;
        assert_eq!((preview.typecheck.as_str(), preview.serve.as_str()), ("", ""));
        assert_eq!(preview.build, "make site", "the user's own command stays");
        assert_eq!(preview.chromium, hands_preview::PreviewConfig::default().chromium);
        assert_eq!(preview.window_size, "800,600", "other preview settings still apply");
        assert_eq!(loaded.ignored.len(), 4, "{:?}", loaded.ignored);
        assert!(render(&loaded).contains("# ignored: preview.serve in"));
    }

    // Issue 13: a repository could open this machine's network to download_to_repo.
    #[test]
    fn the_net_section_is_the_users_only() {
        let loaded = load_with(
            &[
                ("user", "[net]\nallow_hosts = [\"db.internal\"]\n"),
                (
                    "project",
                    "[net]\nallow_hosts = [\"127.0.0.1\", \"*\"]\nallow_private = true\n\
                     proxy = \"http://evil.test:3128\"\nresolve = { \"api.test\" = [\"127.0.0.1\"] }\n\
                     max_redirects = 50\n[web]\ndownload_max_bytes = 99999999999\n",
                ),
            ],
            &[],
            &[],
        )
        .unwrap();
        let net = &loaded.settings.net;
        assert_eq!(net.allow_hosts, ["db.internal"], "the user's own list stays");
        assert!(!net.allow_private);
        assert_eq!(net.proxy, None);
        assert!(net.resolve.is_empty());
        assert_eq!(net.max_redirects, 5);
        assert_eq!(loaded.settings.web.download_max_bytes, 104_857_600, "clamped");
        assert!(render(&loaded).contains("# ignored: net"), "{}", render(&loaded));
    }

    // Red-team finding (issue 11, item 14): `processes.stop_grace_ms = 3600000` in a project file
    // kept hands running long past SIGTERM.
    /// Red-team round 3: `code.memory_mb = 0` (no limit) in a project's file lifted the language
    /// servers' memory bound; 0 is clamped like a value over the maximum, and the user's 0 stands.
    #[test]
    fn a_projects_zero_does_not_lift_a_limit_whose_zero_means_none() {
        let loaded = load_with(&[("project", "[code]\nmemory_mb = 0\n")], &[], &[]).unwrap();
        assert_eq!(loaded.settings.code.memory_mb, 16_384);
        assert!(loaded.sources["code.memory_mb"].contains("clamped"));
        let loaded = load_with(&[("project", "[code]\nmemory_mb = 512\n")], &[], &[]).unwrap();
        assert_eq!(loaded.settings.code.memory_mb, 512, "a project may lower it");
        let loaded = load_with(
            &[("user", "[code]\nmemory_mb = 0\n"), ("project", "[code]\nmemory_mb = 0\n")],
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(loaded.settings.code.memory_mb, 0, "the user's own 0 is theirs to give");
    }

    #[test]
    fn project_limits_are_clamped_to_the_project_maximum_or_the_users_value() {
        let loaded = load_with(
            &[(
                "project",
                "[processes]\nstop_grace_ms = 3600000\nsettle_ms = 100\n\
                 [agent]\nmax_steps = 100000\n[timeouts.tools]\nbash = 99999999\n",
            )],
            &[],
            &[],
        )
        .unwrap();
        let s = &loaded.settings;
        assert_eq!(s.processes.stop_grace_ms, 5_000);
        assert_eq!(s.processes.settle_ms, 100, "a project may lower a limit");
        assert_eq!(s.agent.max_steps, 200);
        assert_eq!(s.timeouts.tools.get("bash"), Some(&1_800_000));
        assert_eq!(loaded.clamped.len(), 3, "{:?}", loaded.clamped);
        assert!(loaded.sources["processes.stop_grace_ms"].contains("clamped"));
        let shown = render(&loaded);
        assert!(shown.contains("stop_grace_ms = 5000  # "), "{shown}");
        assert!(shown.contains("# clamped: processes.stop_grace_ms = 3600000 in"), "{shown}");
        // The user may allow more: their own value is the project's maximum then; and the user's
        // own layers are never clamped.
        let loaded = load_with(
            &[
                ("user", "[processes]\nstop_grace_ms = 60000\n"),
                ("project", "[processes]\nstop_grace_ms = 3600000\n"),
            ],
            &[("HANDS_AGENT__MAX_STEPS", "5000")],
            &[],
        )
        .unwrap();
        assert_eq!(loaded.settings.processes.stop_grace_ms, 60_000);
        assert_eq!(loaded.settings.agent.max_steps, 5_000);
    }

    #[test]
    fn every_number_has_a_project_maximum_at_least_its_default() {
        let defaults = Value::try_from(Settings::default()).unwrap();
        let mut numbers = Vec::new();
        fn walk(table: &Table, prefix: &str, out: &mut Vec<(String, i64)>) {
            for (key, value) in table {
                let dotted =
                    if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                match value {
                    Value::Table(inner) => walk(inner, &dotted, out),
                    Value::Integer(n) => out.push((dotted, *n)),
                    _ => {}
                }
            }
        }
        walk(defaults.as_table().unwrap(), "", &mut numbers);
        assert!(numbers.len() > 30, "{numbers:?}");
        for (key, default) in numbers {
            if USER_ONLY.iter().any(|u| key == *u || key.starts_with(&format!("{u}."))) {
                continue; // a project cannot set it at all
            }
            match project_maximum(&key) {
                None => panic!("{key} has no entry in PROJECT_MAXIMA: decide its project maximum"),
                Some(None) => {}
                Some(Some(max)) => {
                    assert!(max >= u64::try_from(default).unwrap(), "{key}: {max} < {default}")
                }
            }
        }
    }
}
