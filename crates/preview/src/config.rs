//! `[preview]`: the commands that typecheck, build and serve the app, where it is served, what is
//! watched, where the discovery file goes, and the browser. Empty strings and zeros mean "detect"
//! (see detect.rs), so that every key shows in `hands config show` and can be set by `HANDS_*`.

use serde::{Deserialize, Serialize};

/// Where the discovery file goes when `discovery_file` is not set.
pub const DEFAULT_DISCOVERY_FILE: &str = ".hands/devtools.json";
/// The discovery file of the bricks compatibility mode.
pub const BRICKS_DISCOVERY_FILE: &str = ".bricks/devtools.json";

/// Which other tool's conventions to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compat {
    /// hands' own: the discovery file is `.hands/devtools.json`.
    #[default]
    None,
    /// bricks: the discovery file is `.bricks/devtools.json`.
    Bricks,
}

/// `[preview]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PreviewConfig {
    /// Command run first; a failure stops the preview at `error` (e.g. `tsc --noEmit`).
    pub typecheck: String,
    /// Command that builds the app (e.g. `vite build`); a failure stops the preview at `error`.
    pub build: String,
    /// Command that serves the app until stopped; `{port}` is replaced by the port. Empty: the
    /// detected server, or the built-in static server over `static_dir`.
    pub serve: String,
    /// Port of the server (0: a free one).
    pub port: u16,
    /// The page to open; `{port}` is replaced (empty: `http://127.0.0.1:{port}/`).
    pub url: String,
    /// Folder the built-in static server serves, relative to the root (empty: `dist` after a
    /// build, the root otherwise).
    pub static_dir: String,
    /// Globs (relative to the root) whose changes rebuild and reload a build-based preview (empty:
    /// every file that is not ignored, outside `node_modules`, `.git`, `dist` and `.hands`).
    pub watch: Vec<String>,
    /// Rebuild and reload build-based and static previews when watched files change.
    pub rebuild_on_change: bool,
    /// Quiet time after the last change before a rebuild starts, in milliseconds.
    pub watch_debounce_ms: u64,
    /// How often watched files are checked, in milliseconds.
    pub watch_interval_ms: u64,
    /// The discovery file, relative to the root (empty: by `compat`).
    pub discovery_file: String,
    /// `none` or `bricks` (the discovery file goes to `.bricks/devtools.json`).
    pub compat: Compat,
    /// The Chromium executable (a path, or a name looked up in PATH).
    pub chromium: String,
    /// The page's viewport (and the browser window), `WIDTH,HEIGHT` in CSS pixels.
    pub window_size: String,
    /// Limit of the typecheck and build commands, each, in milliseconds. The whole preview_open
    /// call has its own limit (`timeouts.tools.preview_open`, else `timeouts.default_ms`, 120 s):
    /// raise both for a longer build.
    pub build_timeout_ms: u64,
    /// How long the server gets to answer at the URL, in milliseconds.
    pub ready_timeout_ms: u64,
    /// How long Chromium gets to start and be attached, in milliseconds.
    pub browser_timeout_ms: u64,
    /// Errors kept per session (the oldest go first; counts of repeats are not limited).
    pub max_errors: usize,
    /// Offer preview_evaluate: the model may run JavaScript of its own in the preview's page
    /// (the page's requests still follow the egress rule). Off unless the user turns it on.
    pub evaluate: bool,
}

impl Default for PreviewConfig {
    fn default() -> Self {
        Self {
            typecheck: String::new(),
            build: String::new(),
            serve: String::new(),
            port: 0,
            url: String::new(),
            static_dir: String::new(),
            watch: Vec::new(),
            rebuild_on_change: true,
            watch_debounce_ms: 300,
            watch_interval_ms: 400,
            discovery_file: String::new(),
            compat: Compat::None,
            chromium: "/usr/bin/chromium".into(),
            window_size: "1280,800".into(),
            build_timeout_ms: 100_000,
            ready_timeout_ms: 30_000,
            browser_timeout_ms: 20_000,
            max_errors: 500,
            evaluate: false,
        }
    }
}

impl PreviewConfig {
    /// The discovery file's path relative to the root.
    pub fn discovery_path(&self) -> &str {
        if !self.discovery_file.trim().is_empty() {
            return self.discovery_file.trim();
        }
        match self.compat {
            Compat::None => DEFAULT_DISCOVERY_FILE,
            Compat::Bricks => BRICKS_DISCOVERY_FILE,
        }
    }

    /// True when a command is configured (the preview tools are offered whatever detection finds).
    pub fn is_configured(&self) -> bool {
        !self.serve.trim().is_empty() || !self.build.trim().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_file_follows_compat_unless_set() {
        let mut config = PreviewConfig::default();
        assert_eq!(config.discovery_path(), ".hands/devtools.json");
        config.compat = Compat::Bricks;
        assert_eq!(config.discovery_path(), ".bricks/devtools.json");
        config.discovery_file = "tmp/dt.json".into();
        assert_eq!(config.discovery_path(), "tmp/dt.json");
    }

    #[test]
    fn round_trips_through_toml_with_every_key() {
        let text = toml_text(&PreviewConfig::default());
        for key in ["typecheck", "serve", "port", "url", "watch", "discovery_file", "compat"] {
            assert!(text.contains(&format!("{key} = ")), "{key} missing from {text}");
        }
    }

    fn toml_text(config: &PreviewConfig) -> String {
        // serde_json stands in for toml here: every key must serialise (no skipped Options).
        serde_json::to_value(config)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .map(|k| format!("{k} = \n"))
            .collect()
    }
}
