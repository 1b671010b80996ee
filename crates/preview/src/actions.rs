//! The actions preview_act runs, as typed arguments, and the checks that need no browser: where a
//! navigation may go (the preview's origin only, never `file:`), and which files an upload may
//! take (files of the project, never through a symlink out of it).

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

/// One field of a `fill`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Field {
    /// The field's ref (`e12`).
    #[serde(rename = "ref")]
    pub target: String,
    /// The text for a text field; an option's value or label for a select; `true`/`false` for a
    /// checkbox.
    pub value: String,
}

/// A viewport preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// 390×844, a phone (touch, mobile layout).
    Mobile,
    /// 820×1180, a tablet.
    Tablet,
    /// 1280×800, the default.
    Desktop,
}

impl Preset {
    /// Width, height, device scale factor, mobile.
    pub fn metrics(self) -> (u32, u32, f64, bool) {
        match self {
            Self::Mobile => (390, 844, 3.0, true),
            Self::Tablet => (820, 1180, 2.0, true),
            Self::Desktop => (1280, 800, 1.0, false),
        }
    }
}

/// One action on the page. Refs (`e12`) come from the latest preview_snapshot or action result.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Click an element (a real mouse click at its centre, scrolled into view).
    Click {
        /// The element's ref.
        #[serde(rename = "ref")]
        target: String,
        /// A double click.
        #[serde(default)]
        double: bool,
    },
    /// Move the mouse over an element.
    Hover {
        /// The element's ref.
        #[serde(rename = "ref")]
        target: String,
    },
    /// Type text into an element (focused first) or into what has focus; `submit` presses Enter
    /// after it.
    Type {
        /// The element's ref (default: what has focus).
        #[serde(default, rename = "ref")]
        target: Option<String>,
        /// The text typed (added to what the field holds).
        text: String,
        /// Press Enter after the text.
        #[serde(default)]
        submit: bool,
    },
    /// Set several fields at once: text fields are cleared and typed into, selects choose,
    /// checkboxes take `true`/`false`.
    Fill {
        /// The fields, in order.
        fields: Vec<Field>,
    },
    /// Choose options of a select by value or label.
    Select {
        /// The select's ref.
        #[serde(rename = "ref")]
        target: String,
        /// Values or labels (one, or several for a multiple select).
        values: Vec<String>,
    },
    /// Check (or uncheck) a checkbox, radio button or switch; nothing happens when it is already so.
    Check {
        /// The element's ref.
        #[serde(rename = "ref")]
        target: String,
        /// `false` unchecks (default true).
        #[serde(default)]
        checked: Option<bool>,
    },
    /// Press a key, in an element (focused first) or where focus is: `Enter`, `Tab`, `Escape`,
    /// `ArrowDown`, `Control+a`, `a`.
    Press {
        /// The key, with `+`-joined modifiers (Alt, Control, Meta, Shift).
        key: String,
        /// The element's ref (default: what has focus).
        #[serde(default, rename = "ref")]
        target: Option<String>,
    },
    /// Scroll an element into view, or the page by `dy` pixels (default one screen down; negative:
    /// up).
    Scroll {
        /// The element's ref.
        #[serde(default, rename = "ref")]
        target: Option<String>,
        /// Pixels down (negative: up).
        #[serde(default)]
        dy: Option<f64>,
    },
    /// Load a URL of the preview (a path such as `/about`, or a full URL of the same origin).
    Navigate {
        /// A path or URL of the preview's origin.
        url: String,
    },
    /// Go back in the page's history.
    Back,
    /// Go forward in the page's history.
    Forward,
    /// Reload the page.
    Reload,
    /// Wait until a text shows (or is `gone`), an element matches a CSS selector, or the network
    /// has been idle for half a second.
    Wait {
        /// Text the page shows.
        #[serde(default)]
        text: Option<String>,
        /// A CSS selector an element matches.
        #[serde(default)]
        selector: Option<String>,
        /// No request in flight for 500 ms.
        #[serde(default)]
        network_idle: bool,
        /// Wait until the text or selector is gone instead.
        #[serde(default)]
        gone: bool,
        /// Longest wait, in milliseconds (default 5000, at most 30000).
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// Put project files into a file input (`<input type=file>`).
    Upload {
        /// The file input's ref.
        #[serde(rename = "ref")]
        target: String,
        /// Paths relative to the project root.
        paths: Vec<String>,
    },
    /// Set the viewport: a preset, or a width and height in CSS pixels.
    Viewport {
        /// mobile, tablet or desktop.
        #[serde(default)]
        preset: Option<Preset>,
        /// Width in CSS pixels.
        #[serde(default)]
        width: Option<u32>,
        /// Height in CSS pixels.
        #[serde(default)]
        height: Option<u32>,
    },
}

impl Action {
    /// The action's word.
    pub fn word(&self) -> &'static str {
        match self {
            Self::Click { .. } => "click",
            Self::Hover { .. } => "hover",
            Self::Type { .. } => "type",
            Self::Fill { .. } => "fill",
            Self::Select { .. } => "select",
            Self::Check { .. } => "check",
            Self::Press { .. } => "press",
            Self::Scroll { .. } => "scroll",
            Self::Navigate { .. } => "navigate",
            Self::Back => "back",
            Self::Forward => "forward",
            Self::Reload => "reload",
            Self::Wait { .. } => "wait",
            Self::Upload { .. } => "upload",
            Self::Viewport { .. } => "viewport",
        }
    }

    /// The refs the action names.
    pub fn refs(&self) -> Vec<&str> {
        match self {
            Self::Click { target, .. }
            | Self::Hover { target }
            | Self::Select { target, .. }
            | Self::Check { target, .. }
            | Self::Upload { target, .. } => vec![target.as_str()],
            Self::Type { target, .. }
            | Self::Press { target, .. }
            | Self::Scroll { target, .. } => target.iter().map(String::as_str).collect(),
            Self::Fill { fields } => fields.iter().map(|f| f.target.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

/// `target` resolved against the page at `current`, when it stays on the origin of `preview`.
pub fn same_origin(target: &str, current: &str, preview: &str) -> Result<String, String> {
    let preview = url::Url::parse(preview).map_err(|e| format!("the preview's URL: {e}"))?;
    let base = url::Url::parse(current).ok().filter(|u| u.origin() == preview.origin());
    let resolved = base
        .as_ref()
        .unwrap_or(&preview)
        .join(target.trim())
        .map_err(|e| format!("{target:?} is not a URL or path ({e})"))?;
    if resolved.origin() != preview.origin() {
        return Err(format!(
            "{resolved} is not on the preview's origin ({}): the preview's browser only goes to \
             the app itself (file:, other hosts and ports are refused). Give a path such as \
             \"/about\".",
            preview.origin().ascii_serialization()
        ));
    }
    Ok(resolved.into())
}

/// The absolute paths of `paths` (relative to `root`) when each is a file inside the project.
pub fn project_files(root: &Path, paths: &[String]) -> Result<Vec<PathBuf>, String> {
    let root = root.canonicalize().map_err(|e| format!("the project root: {e}"))?;
    let mut out = Vec::new();
    for path in paths {
        let given = Path::new(path);
        let joined = if given.is_absolute() { given.to_path_buf() } else { root.join(given) };
        let real = joined.canonicalize().map_err(|e| format!("{path}: {e}"))?;
        if !real.starts_with(&root) {
            return Err(format!(
                "{path} is outside the project: only the project's own files can be uploaded"
            ));
        }
        if !real.is_file() {
            return Err(format!("{path} is not a file"));
        }
        out.push(real);
    }
    if out.is_empty() {
        return Err("upload needs at least one path".to_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn navigation_stays_on_the_preview_origin() {
        let preview = "http://127.0.0.1:5173/";
        let current = "http://127.0.0.1:5173/app/list";
        assert_eq!(same_origin("/about", current, preview).unwrap(), "http://127.0.0.1:5173/about");
        assert_eq!(
            same_origin("edit", current, preview).unwrap(),
            "http://127.0.0.1:5173/app/edit"
        );
        for elsewhere in [
            "file:///etc/passwd",
            "http://127.0.0.2:5173/",
            "http://127.0.0.1:1/",
            "https://example.com/",
        ] {
            let err = same_origin(elsewhere, current, preview).unwrap_err();
            assert!(err.contains("not on the preview's origin"), "{elsewhere}: {err}");
        }
    }

    #[test]
    fn uploads_take_project_files_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hi").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("out")).unwrap();
        assert_eq!(project_files(dir.path(), &["notes.txt".into()]).unwrap().len(), 1);
        assert!(project_files(dir.path(), &["out".into()]).unwrap_err().contains("outside"));
        assert!(project_files(dir.path(), &["../x".into()]).is_err());
        assert!(
            project_files(dir.path(), &["/etc/passwd".into()]).unwrap_err().contains("outside")
        );
    }

    #[test]
    fn actions_parse_from_their_json() {
        let actions: Vec<Action> = serde_json::from_value(serde_json::json!([
            {"action": "click", "ref": "e3"},
            {"action": "fill", "fields": [{"ref": "e1", "value": "alice"}]},
            {"action": "back"},
            {"action": "wait", "text": "Welcome"}
        ]))
        .unwrap();
        assert_eq!(
            actions.iter().map(Action::word).collect::<Vec<_>>(),
            ["click", "fill", "back", "wait"]
        );
        assert_eq!(actions[1].refs(), ["e1"]);
        let bad =
            serde_json::from_value::<Action>(serde_json::json!({"action": "click", "reff": "e1"}));
        assert!(bad.is_err());
    }
}
