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

/// The kinds of action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Click `ref` (`double` for a double click).
    Click,
    /// Move the mouse over `ref`.
    Hover,
    /// Type `text` into `ref` (or what has focus); `submit` presses Enter after.
    Type,
    /// Set several `fields` at once.
    Fill,
    /// Choose `values` (values or labels) in the select `ref`.
    Select,
    /// Check `ref` (`checked: false` unchecks).
    Check,
    /// Press `key` in `ref` (or where focus is).
    Press,
    /// Scroll `ref` into view, or the page by `dy` pixels.
    Scroll,
    /// Load `url` of the preview's origin.
    Navigate,
    /// Go back in history.
    Back,
    /// Go forward in history.
    Forward,
    /// Reload the page.
    Reload,
    /// Wait for `text`, `selector` or `network_idle` (`gone`, `timeout_ms`).
    Wait,
    /// Put project files `paths` into the file input `ref`.
    Upload,
    /// Set the viewport: `preset`, or `width` and `height`.
    Viewport,
}

/// One action on the page, as the model writes it: `action` says which, the other fields are
/// those the action takes. Refs (`e12`) come from the latest preview_snapshot or action result.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// click, hover, type, fill, select, check, press, scroll, navigate, back, forward, reload,
    /// wait, upload or viewport.
    pub action: Kind,
    /// The element (click, hover, select, check, upload; optional for type, press, scroll).
    #[serde(default, rename = "ref")]
    pub target: Option<String>,
    /// type: the text typed (added to what the field holds); wait: the text to wait for.
    #[serde(default)]
    pub text: Option<String>,
    /// type: press Enter after the text.
    #[serde(default)]
    pub submit: Option<bool>,
    /// click: a double click.
    #[serde(default)]
    pub double: Option<bool>,
    /// fill: the fields, in order.
    #[serde(default)]
    pub fields: Option<Vec<Field>>,
    /// select: values or labels (several for a multiple select).
    #[serde(default)]
    pub values: Option<Vec<String>>,
    /// check: false unchecks (default true).
    #[serde(default)]
    pub checked: Option<bool>,
    /// press: the key, with `+`-joined modifiers: `Enter`, `Tab`, `Escape`, `ArrowDown`,
    /// `Control+a`, `a`.
    #[serde(default)]
    pub key: Option<String>,
    /// scroll: pixels down (negative: up; default one screen).
    #[serde(default)]
    pub dy: Option<f64>,
    /// navigate: a path such as `/about`, or a URL of the preview's origin.
    #[serde(default)]
    pub url: Option<String>,
    /// wait: a CSS selector an element matches.
    #[serde(default)]
    pub selector: Option<String>,
    /// wait: no request in flight for 500 ms.
    #[serde(default)]
    pub network_idle: Option<bool>,
    /// wait: until the text or selector is gone instead.
    #[serde(default)]
    pub gone: Option<bool>,
    /// wait: longest wait in milliseconds (default 5000, at most 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// upload: paths relative to the project root.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// viewport: mobile, tablet or desktop.
    #[serde(default)]
    pub preset: Option<Preset>,
    /// viewport: width in CSS pixels.
    #[serde(default)]
    pub width: Option<u32>,
    /// viewport: height in CSS pixels.
    #[serde(default)]
    pub height: Option<u32>,
}

impl Step {
    /// The action, when the fields it needs are there (else what is missing).
    pub fn action(&self) -> Result<Action, String> {
        let kind = self.action;
        let word = format!("{kind:?}").to_lowercase();
        let need = |field: &str| format!("{word} needs `{field}`");
        let target = || self.target.clone().ok_or_else(|| need("ref"));
        Ok(match kind {
            Kind::Click => {
                Action::Click { target: target()?, double: self.double.unwrap_or(false) }
            }
            Kind::Hover => Action::Hover { target: target()? },
            Kind::Type => Action::Type {
                target: self.target.clone(),
                text: self.text.clone().ok_or_else(|| need("text"))?,
                submit: self.submit.unwrap_or(false),
            },
            Kind::Fill => {
                Action::Fill { fields: self.fields.clone().ok_or_else(|| need("fields"))? }
            }
            Kind::Select => Action::Select {
                target: target()?,
                values: self.values.clone().ok_or_else(|| need("values"))?,
            },
            Kind::Check => Action::Check { target: target()?, checked: self.checked },
            Kind::Press => Action::Press {
                key: self.key.clone().ok_or_else(|| need("key"))?,
                target: self.target.clone(),
            },
            Kind::Scroll => Action::Scroll { target: self.target.clone(), dy: self.dy },
            Kind::Navigate => {
                Action::Navigate { url: self.url.clone().ok_or_else(|| need("url"))? }
            }
            Kind::Back => Action::Back,
            Kind::Forward => Action::Forward,
            Kind::Reload => Action::Reload,
            Kind::Wait => Action::Wait {
                text: self.text.clone(),
                selector: self.selector.clone(),
                network_idle: self.network_idle.unwrap_or(false),
                gone: self.gone.unwrap_or(false),
                timeout_ms: self.timeout_ms,
            },
            Kind::Upload => Action::Upload {
                target: target()?,
                paths: self.paths.clone().ok_or_else(|| need("paths"))?,
            },
            Kind::Viewport => {
                Action::Viewport { preset: self.preset, width: self.width, height: self.height }
            }
        })
    }
}

/// One action, checked: what [`Step::action`] makes of a step.
#[derive(Debug, Clone)]
pub enum Action {
    /// See [`Kind::Click`].
    Click {
        /// The element's ref.
        target: String,
        /// A double click.
        double: bool,
    },
    /// See [`Kind::Hover`].
    Hover {
        /// The element's ref.
        target: String,
    },
    /// See [`Kind::Type`].
    Type {
        /// The element's ref (default: what has focus).
        target: Option<String>,
        /// The text.
        text: String,
        /// Press Enter after it.
        submit: bool,
    },
    /// See [`Kind::Fill`].
    Fill {
        /// The fields.
        fields: Vec<Field>,
    },
    /// See [`Kind::Select`].
    Select {
        /// The select's ref.
        target: String,
        /// Values or labels.
        values: Vec<String>,
    },
    /// See [`Kind::Check`].
    Check {
        /// The element's ref.
        target: String,
        /// `false` unchecks.
        checked: Option<bool>,
    },
    /// See [`Kind::Press`].
    Press {
        /// The key.
        key: String,
        /// The element's ref (default: what has focus).
        target: Option<String>,
    },
    /// See [`Kind::Scroll`].
    Scroll {
        /// The element's ref.
        target: Option<String>,
        /// Pixels down.
        dy: Option<f64>,
    },
    /// See [`Kind::Navigate`].
    Navigate {
        /// A path or URL of the preview's origin.
        url: String,
    },
    /// See [`Kind::Back`].
    Back,
    /// See [`Kind::Forward`].
    Forward,
    /// See [`Kind::Reload`].
    Reload,
    /// See [`Kind::Wait`].
    Wait {
        /// Text the page shows.
        text: Option<String>,
        /// A CSS selector.
        selector: Option<String>,
        /// No request in flight for 500 ms.
        network_idle: bool,
        /// Wait until gone.
        gone: bool,
        /// Longest wait.
        timeout_ms: Option<u64>,
    },
    /// See [`Kind::Upload`].
    Upload {
        /// The file input's ref.
        target: String,
        /// Paths relative to the project root.
        paths: Vec<String>,
    },
    /// See [`Kind::Viewport`].
    Viewport {
        /// A preset.
        preset: Option<Preset>,
        /// Width.
        width: Option<u32>,
        /// Height.
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
        let steps: Vec<Step> = serde_json::from_value(serde_json::json!([
            {"action": "click", "ref": "e3"},
            {"action": "fill", "fields": [{"ref": "e1", "value": "alice"}]},
            {"action": "back"},
            {"action": "wait", "text": "Welcome"}
        ]))
        .unwrap();
        let actions: Vec<Action> = steps.iter().map(|s| s.action().unwrap()).collect();
        assert_eq!(
            actions.iter().map(Action::word).collect::<Vec<_>>(),
            ["click", "fill", "back", "wait"]
        );
        assert_eq!(actions[1].refs(), ["e1"]);
        let bad =
            serde_json::from_value::<Step>(serde_json::json!({"action": "click", "reff": "e1"}));
        assert!(bad.is_err());
        let step: Step = serde_json::from_value(serde_json::json!({"action": "click"})).unwrap();
        assert_eq!(step.action().unwrap_err(), "click needs `ref`");
    }
}
