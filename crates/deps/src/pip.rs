//! pip's part: what `pip install --report` says it installed, and the pin written into the
//! requirements file (`requirements-dev.txt` for a dev dependency), since pip keeps no manifest of
//! its own. A line for the same package is replaced where it stands; others are kept as they are.

use std::collections::BTreeMap;

use hands_core::ToolError;
use hands_fs::{RelPath, Workspace};

use crate::spec::normalize_python;

/// The versions pip's JSON report lists as installed, by normalised name.
pub(crate) fn installed(report: &str) -> BTreeMap<String, String> {
    let json: serde_json::Value = serde_json::from_str(report).unwrap_or_default();
    let mut out = BTreeMap::new();
    for item in json.get("install").and_then(|i| i.as_array()).into_iter().flatten() {
        let metadata = item.get("metadata");
        let name = metadata.and_then(|m| m.get("name")).and_then(|n| n.as_str());
        let version = metadata.and_then(|m| m.get("version")).and_then(|v| v.as_str());
        if let (Some(name), Some(version)) = (name, version) {
            out.insert(normalize_python(name), version.to_owned());
        }
    }
    out
}

/// `text` (a requirements file) with `name==version` for each of `pins`: an existing line for the
/// package is replaced, a new one appended.
pub(crate) fn pinned(text: &str, pins: &[(String, String)]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for (name, version) in pins {
        let pin = format!("{name}=={version}");
        let same = |line: &String| {
            let code = line.split('#').next().unwrap_or_default().trim();
            let end = code
                .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
                .unwrap_or(code.len());
            end > 0 && normalize_python(&code[..end]) == normalize_python(name)
        };
        match lines.iter_mut().find(|l| same(l)) {
            Some(line) => *line = pin,
            None => lines.push(pin),
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Write the pins into `file` (relative to the root) atomically, through the root handle.
pub(crate) fn write_pins(
    ws: &Workspace,
    file: &RelPath,
    pins: &[(String, String)],
    cancel: &hands_core::CancellationToken,
) -> Result<(), ToolError> {
    let before = ws.dir().read_to_string(file.for_open()).unwrap_or_default();
    let after = pinned(&before, pins);
    hands_fs::atomic::write(ws, file, after.as_bytes(), cancel)
        .map(|_| ())
        .map_err(|err| hands_fs::atomic::write_error(ws, "add_dependency", file, &err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_lists_what_was_installed() {
        let report = r#"{"version": "1", "install": [
            {"metadata": {"name": "Hands_Wheel", "version": "1.2.0"}, "requested": true},
            {"metadata": {"name": "six", "version": "1.16.0"}, "requested": false}]}"#;
        let got = installed(report);
        assert_eq!(got["hands-wheel"], "1.2.0");
        assert_eq!(got["six"], "1.16.0");
        assert!(installed("not json").is_empty());
    }

    #[test]
    fn pins_replace_the_same_package_and_keep_the_rest() {
        let text = "# deps\nrequests>=2  # http\nHands_Wheel==1.0.0\n";
        let out = pinned(
            text,
            &[("hands-wheel".into(), "1.2.0".into()), ("six".into(), "1.16.0".into())],
        );
        assert_eq!(out, "# deps\nrequests>=2  # http\nhands-wheel==1.2.0\nsix==1.16.0\n");
        assert_eq!(pinned("", &[("a".into(), "1".into())]), "a==1\n");
    }
}
