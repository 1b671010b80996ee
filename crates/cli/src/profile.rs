//! Tool profiles for MCP front ends (`hands mcp --tools …`, `[mcp] tools`): which of the tools
//! hands offers a client sees at all. Every tool it lists costs the client's model its name,
//! description and schema in every request, beside the client's own tools; a profile trims that
//! to what the user wants from hands.
//!
//! Entries, applied in order: `all`; `core` (files, search, processes, session); a family
//! (`files`, `search`, `processes`, `preview`, `session`, `delegation`, `mcp`, `web`,
//! `connectors`, `data`, `project`, `other`); a tool's name; any of them after `-` to take it
//! away again (`all,-terminal_start`). A list that starts with `-` starts from `all`.

use std::sync::Arc;

use anyhow::{Result, bail};
use hands_core::{Family, Offer, ToolSpec};

/// The families a profile may name, by their names in the profile.
const FAMILIES: &[(&str, Family)] = &[
    ("files", Family::Files),
    ("search", Family::Search),
    ("processes", Family::Processes),
    ("preview", Family::Preview),
    ("session", Family::Session),
    ("delegation", Family::Delegation),
    ("mcp", Family::Mcp),
    ("web", Family::Web),
    ("connectors", Family::Connectors),
    ("data", Family::Data),
    ("project", Family::Project),
    ("other", Family::Other),
];
/// What `core` stands for.
const CORE: &[Family] = &[Family::Files, Family::Search, Family::Processes, Family::Session];

/// One entry of a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pick {
    All,
    Families(Vec<Family>),
    Tool(String),
}

impl Pick {
    fn takes(&self, spec: &ToolSpec) -> bool {
        match self {
            Pick::All => true,
            Pick::Families(families) => families.contains(&spec.policy.family),
            Pick::Tool(name) => spec.name == *name,
        }
    }
}

/// The profile `entries` (comma-separated entries are split too), as a filter of tool specs;
/// `None` when it offers everything. An entry that names no group and is not shaped like a tool
/// name is an error naming the groups.
pub fn offer(entries: &[String]) -> Result<Option<Offer>> {
    let mut picks: Vec<(bool, Pick)> = Vec::new();
    for entry in entries.iter().flat_map(|e| e.split(',')).map(str::trim).filter(|e| !e.is_empty())
    {
        let (keep, name) = match entry.strip_prefix('-') {
            Some(rest) => (false, rest.trim()),
            None => (true, entry),
        };
        if picks.is_empty() && !keep {
            picks.push((true, Pick::All));
        }
        picks.push((keep, parse(name)?));
    }
    if picks.is_empty() || picks == [(true, Pick::All)] {
        return Ok(None);
    }
    Ok(Some(Arc::new(move |spec: &ToolSpec| {
        picks.iter().fold(
            false,
            |offered, (keep, pick)| {
                if pick.takes(spec) { *keep } else { offered }
            },
        )
    })))
}

fn parse(name: &str) -> Result<Pick> {
    if name == "all" {
        return Ok(Pick::All);
    }
    if name == "core" {
        return Ok(Pick::Families(CORE.to_vec()));
    }
    if let Some((_, family)) = FAMILIES.iter().find(|(n, _)| *n == name) {
        return Ok(Pick::Families(vec![*family]));
    }
    let tool_like = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    if !tool_like {
        let groups: Vec<&str> = FAMILIES.iter().map(|(n, _)| *n).collect();
        bail!(
            "the tool profile's entry {name:?} is neither a tool's name nor a group; groups: all, \
             core, {} (and any of them after `-` to leave it out)",
            groups.join(", ")
        );
    }
    Ok(Pick::Tool(name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hands_core::{CoreConfig, Mode, Registry};

    fn offered(entries: &[&str]) -> Vec<String> {
        let entries: Vec<String> = entries.iter().map(|e| (*e).to_owned()).collect();
        let builder =
            hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default());
        let builder = hands_exec::register(builder, &Default::default());
        let builder = match offer(&entries).unwrap() {
            Some(offer) => builder.offer_only(move |spec| offer(spec)),
            None => builder,
        };
        builder.build().list(Mode::Build).into_iter().map(|s| s.name).collect()
    }

    #[test]
    fn groups_names_and_exclusions_apply_in_order() {
        let all = offered(&[]);
        assert!(all.len() > 10, "{all:?}");
        assert_eq!(offered(&["all"]), all);
        assert_eq!(offered(&["search"]), ["glob", "grep"]);
        assert_eq!(offered(&["read_file,grep"]), ["read_file", "grep"]);
        let core = offered(&["core"]);
        assert!(core.contains(&"bash".to_owned()) && core.contains(&"read_file".to_owned()));
        let no_terminals = offered(&["-terminal_start", "-terminal_send", "-terminal_read"]);
        assert_eq!(no_terminals.len(), all.len() - 3, "{no_terminals:?}");
        assert!(!no_terminals.iter().any(|n| n.starts_with("terminal_")));
        assert_eq!(offered(&["files", "-write_file", "grep"]).last().unwrap(), "grep");
        assert!(!offered(&["files", "-write_file"]).contains(&"write_file".to_owned()));
    }

    #[test]
    fn a_malformed_entry_names_the_groups() {
        let err = offer(&["Files!".to_owned()]).err().unwrap().to_string();
        assert!(
            err.contains("neither a tool's name nor a group; groups: all, core, files"),
            "{err}"
        );
    }
}
