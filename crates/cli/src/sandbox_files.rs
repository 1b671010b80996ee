//! What the host tells a bwrap sandbox about hands' own files beyond the default folders: the
//! folders and files its settings moved them to (the session database, the checkpoint folder),
//! and the copy of the user's configuration the inner hands reads instead of the user's file —
//! without the sections only the host reads and without any key that looks like a credential.

use std::path::{Path, PathBuf};

use hands_mcp::sandbox::HostFiles;
use toml::{Table, Value};

use crate::settings;

/// Sections of the user's file the inner hands never gets: they configure the host (its server,
/// sandbox, model, MCP servers, session store, cluster) and may hold tokens and URLs.
use hands_core::config::HOST_ONLY_SECTIONS as HOST_ONLY;

/// Words that mark a key as a credential wherever it sits (as for `HANDS_*` variables).
const SECRET_WORDS: [&str; 6] = ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// The [`HostFiles`] of `loaded`'s settings.
pub fn host_files(loaded: &settings::Loaded) -> HostFiles {
    let mut host = HostFiles::default();
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let store = &loaded.settings.store.path;
    match store.parent().filter(|p| !p.as_os_str().is_empty()) {
        // A folder of its own: hidden whole. The home folder or one above it: only the files.
        Some(folder) if !holds_home(folder, home.as_deref()) => host.folders.push(folder.into()),
        _ => {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut name = store.as_os_str().to_owned();
                name.push(suffix);
                host.files.push(name.into());
            }
        }
    }
    if let Some(dir) = &loaded.settings.checkpoints.state_dir
        && !holds_home(dir, home.as_deref())
    {
        host.folders.push(dir.clone());
    }
    host.user_config = settings::user_config_file()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| inner_config(&text));
    host
}

/// True for `/`, the home folder and any folder above it.
fn holds_home(folder: &Path, home: Option<&Path>) -> bool {
    folder.parent().is_none() || home.is_some_and(|home| home.starts_with(folder))
}

/// The user's configuration `text` without the host's sections and credential-like keys; `None`
/// when it is not TOML (the host has refused to start then anyway).
fn inner_config(text: &str) -> Option<String> {
    let mut table: Table = toml::from_str(text).ok()?;
    for &section in HOST_ONLY {
        table.remove(section);
    }
    strip_secrets(&mut table);
    toml::to_string(&table).ok()
}

fn strip_secrets(table: &mut Table) {
    table.retain(|key, _| {
        let key = key.to_ascii_uppercase();
        !SECRET_WORDS.iter().any(|word| key.contains(word))
    });
    for (_, value) in table.iter_mut() {
        strip_value(value);
    }
}

fn strip_value(value: &mut Value) {
    match value {
        Value::Table(table) => strip_secrets(table),
        Value::Array(items) => items.iter_mut().for_each(strip_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inner_config_has_no_host_section_and_no_credential() {
        let text = "approval = \"never\"\n[server]\ntoken = \"t-canary\"\n[model]\napi_key = \"k\"\n\
                    [bash]\ndefault_timeout_ms = 5\n[web_search]\napi_key = \"ws-canary\"\n\
                    [[x]]\npassword = \"p-canary\"\nkeep = 1\n";
        let inner = inner_config(text).unwrap_or_default();
        for gone in ["t-canary", "ws-canary", "p-canary", "[server]", "[model]"] {
            assert!(!inner.contains(gone), "{gone}: {inner}");
        }
        for kept in ["approval = \"never\"", "default_timeout_ms = 5", "keep = 1"] {
            assert!(inner.contains(kept), "{kept}: {inner}");
        }
    }

    #[test]
    fn a_store_beside_the_home_folder_hides_its_files_only() {
        let home = Path::new("/home/u");
        assert!(holds_home(Path::new("/home/u"), Some(home)));
        assert!(holds_home(Path::new("/home"), Some(home)));
        assert!(holds_home(Path::new("/"), None));
        assert!(!holds_home(Path::new("/home/u/.local/share/hands"), Some(home)));
    }
}
