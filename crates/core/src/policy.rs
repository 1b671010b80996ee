//! A tool's policy as data: which modes offer it, its aliases, whether a sub-agent may use it,
//! whether it needs a user, how a terminal line labels a call, and its family for the docs.
//!
//! Every front end decides by these fields (plan mode, sub-agent filtering, `hands run`'s lines),
//! so adding a tool never means touching a list in another crate. [`Policy::from_annotations`] is
//! the default the [`Tool`](crate::Tool) trait derives; a tool overrides what differs with the
//! chained setters.

use serde::Serialize;
use serde_json::Value;

use crate::{Annotations, Mode};

/// The modes that offer a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Modes {
    /// Plan mode (read-only: the model explores and plans).
    pub plan: bool,
    /// Build mode (everything that changes the project).
    pub build: bool,
}

impl Modes {
    /// Offered in plan and build mode.
    pub const BOTH: Self = Self { plan: true, build: true };
    /// Offered in build mode only.
    pub const BUILD: Self = Self { plan: false, build: true };
    /// Offered in plan mode only.
    pub const PLAN: Self = Self { plan: true, build: false };

    /// True when `mode` is among these.
    pub fn contains(self, mode: Mode) -> bool {
        match mode {
            Mode::Plan => self.plan,
            Mode::Build => self.build,
        }
    }
}

/// How a terminal line shows a call: the tool's name and its main argument(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Label {
    /// The arguments as compact JSON (nothing when there are none): tools without a main argument.
    Arguments,
    /// Nothing but the name.
    Nothing,
    /// The string argument `key`: `bash npm test`.
    Key {
        /// The argument's name.
        key: &'static str,
    },
    /// The first of these string arguments that is present.
    FirstOf {
        /// The arguments' names, in order of preference.
        keys: &'static [&'static str],
    },
    /// `what in where`: `grep fn main in src`; `what` alone when `where` is absent.
    In {
        /// The main argument.
        what: &'static str,
        /// The place it applies to.
        place: &'static str,
    },
    /// A plan for the user to read whole and approve: the string argument `key`, shown as a block
    /// before the call's line (which shows only the name), and its approval asked as a plan's.
    Plan {
        /// The argument holding the plan.
        key: &'static str,
    },
    /// How many items the array argument `key` holds: `todo_write 3 items`.
    Count {
        /// The array argument.
        key: &'static str,
        /// The item's noun, singular (`item`); the plural adds an `s`.
        noun: &'static str,
    },
    /// One line per item of the array argument `key`: its string field `word`, then the first of
    /// its string fields `details` it has (`click e3`, `navigate /about`). Front ends show the
    /// call's line with the count and each item under it.
    Steps {
        /// The array argument.
        key: &'static str,
        /// The field naming what each item does.
        word: &'static str,
        /// The fields that say what it applies to, in order of preference.
        details: &'static [&'static str],
    },
}

impl Label {
    /// The main argument of a call with `args`, as one string (not cut, not escaped); `None`
    /// when the arguments lack it (the caller then shows the arguments as they are).
    pub fn text(&self, args: &Value) -> Option<String> {
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        match *self {
            Self::Arguments => None,
            Self::Nothing | Self::Plan { .. } => Some(String::new()),
            Self::Key { key } => text(key),
            Self::FirstOf { keys } => keys.iter().find_map(|key| text(key)),
            Self::In { what, place } => text(what).map(|w| match text(place) {
                Some(p) => format!("{w} in {p}"),
                None => w,
            }),
            Self::Steps { key, word, details } => {
                args.get(key).and_then(Value::as_array).map(|items| {
                    let line = |item: &Value| {
                        let what = item.get(word).and_then(Value::as_str).unwrap_or("?");
                        match details.iter().find_map(|d| item.get(*d).and_then(Value::as_str)) {
                            Some(detail) => format!("{what} {detail}"),
                            None => what.to_owned(),
                        }
                    };
                    items.iter().map(line).collect::<Vec<_>>().join("\n")
                })
            }
            Self::Count { key, noun } => {
                args.get(key).and_then(Value::as_array).map(|list| match list.len() {
                    1 => format!("1 {noun}"),
                    n => format!("{n} {noun}s"),
                })
            }
        }
    }
}

/// What kind of tool it is, for the docs and `hands tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Reading and changing files.
    Files,
    /// Finding files and text.
    Search,
    /// Commands and background processes.
    Processes,
    /// The web app's preview in a browser.
    Preview,
    /// The session's own state: plan mode, todos, questions, skills.
    Session,
    /// Handing work to a sub-agent.
    Delegation,
    /// Tools of configured MCP servers.
    Mcp,
    /// Searching and reading the web.
    Web,
    /// Connected outside services (connector files).
    Connectors,
    /// Databases and data files.
    Data,
    /// The project's own commands and metadata.
    Project,
    /// Anything else.
    Other,
}

/// A tool's policy. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// The modes that offer the tool.
    pub modes: Modes,
    /// Other names accepted in calls and never listed (`read` for read_file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<&'static str>,
    /// A sub-agent may use it.
    pub subagent: bool,
    /// It needs a person to answer (ask_user): not for sub-agents or unattended runs.
    pub needs_user: bool,
    /// How a terminal line shows a call.
    pub label: Label,
    /// Its family, for the docs.
    pub family: Family,
    /// It acts for the session's host rather than in the project (it changes the host session's
    /// mode or todo list, reaches its user or model, or other MCP servers): with a proxy sandbox
    /// (bwrap, remote) it runs on the host, not in the inner hands.
    pub on_host: bool,
    /// It needs the front end's model (spawn_subagent): hidden where there is none.
    pub needs_model: bool,
    /// Every call is the user's own decision (a plan): an allowance for the session
    /// ([`Decision::ApproveForSession`](crate::approval::Decision::ApproveForSession)) never
    /// covers its later calls.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub asks_each_time: bool,
    /// The arguments an allowance for the session is bound to, besides the tool: a tool that
    /// dispatches to others (mcp_call's `server` and `tool`, connector_call's `connector`,
    /// `method` and `path`) allowed for one target must still ask for another. Empty: the tool
    /// whatever its arguments.
    #[serde(skip_serializing_if = "no_scope")]
    pub session_scope: &'static [&'static str],
    /// Its time limit in milliseconds when the configuration sets none (`timeouts.tools.NAME`
    /// overrides it); `None`: `timeouts.default_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A line the agent's system prompt adds to its guidelines while the tool is offered (how to
    /// use it well beside the others: "Prefer edit_file for changes to existing files"), so that
    /// the prompt names only tools that exist and no crate names another's tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guideline: Option<&'static str>,
}

impl Policy {
    /// The default for a tool with `annotations`: a read-only tool is offered in both modes and to
    /// sub-agents; any other only in build mode.
    pub fn from_annotations(annotations: Annotations) -> Self {
        let modes = if annotations.read_only { Modes::BOTH } else { Modes::BUILD };
        Self {
            modes,
            aliases: Vec::new(),
            subagent: modes.plan,
            needs_user: false,
            label: Label::Arguments,
            family: Family::Other,
            on_host: false,
            needs_model: false,
            asks_each_time: false,
            session_scope: &[],
            timeout_ms: None,
            guideline: None,
        }
    }

    /// Offered in `modes`. A sub-agent (which works in plan mode) may use the tool when plan mode
    /// offers it and it needs no user; call [`Policy::subagent`] after this to decide otherwise.
    #[must_use]
    pub fn modes(mut self, modes: Modes) -> Self {
        self.modes = modes;
        self.subagent = modes.plan && !self.needs_user;
        self
    }

    /// Whether a sub-agent may use the tool.
    #[must_use]
    pub fn subagent(mut self, allowed: bool) -> Self {
        self.subagent = allowed;
        self
    }

    /// The tool needs a person to answer; no sub-agent gets it.
    #[must_use]
    pub fn needs_user(mut self) -> Self {
        self.needs_user = true;
        self.subagent = false;
        self
    }

    /// Also accept `alias` as the tool's name in calls.
    #[must_use]
    pub fn alias(mut self, alias: &'static str) -> Self {
        self.aliases.push(alias);
        self
    }

    /// How a terminal line shows a call.
    #[must_use]
    pub fn label(mut self, label: Label) -> Self {
        self.label = label;
        self
    }

    /// The tool's family.
    #[must_use]
    pub fn family(mut self, family: Family) -> Self {
        self.family = family;
        self
    }

    /// The tool acts for the host session: see [`Policy::on_host`].
    #[must_use]
    pub fn on_host(mut self) -> Self {
        self.on_host = true;
        self
    }

    /// The tool needs the front end's model: see [`Policy::needs_model`].
    #[must_use]
    pub fn needs_model(mut self) -> Self {
        self.needs_model = true;
        self
    }

    /// Each call asks, whatever the user allowed for the session: see
    /// [`Policy::asks_each_time`].
    #[must_use]
    pub fn asks_each_time(mut self) -> Self {
        self.asks_each_time = true;
        self
    }

    /// An allowance for the session covers only calls with the same values of `args`: see
    /// [`Policy::session_scope`].
    #[must_use]
    pub fn session_scope(mut self, args: &'static [&'static str]) -> Self {
        self.session_scope = args;
        self
    }

    /// The tool's own time limit, in milliseconds (the configuration may still change it).
    #[must_use]
    pub fn timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }

    /// The line the agent's system prompt adds while the tool is offered: see
    /// [`Policy::guideline`].
    #[must_use]
    pub fn guideline(mut self, line: &'static str) -> Self {
        self.guideline = Some(line);
        self
    }

    /// True when `mode` offers the tool.
    pub fn offered(&self, mode: Mode) -> bool {
        self.modes.contains(mode)
    }
}

fn no_scope(args: &&'static [&'static str]) -> bool {
    args.is_empty()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_default_follows_the_annotations() {
        let read = Policy::from_annotations(Annotations::READ_ONLY);
        assert!(read.offered(Mode::Plan) && read.offered(Mode::Build) && read.subagent);
        let write = Policy::from_annotations(Annotations::default());
        assert!(!write.offered(Mode::Plan) && write.offered(Mode::Build) && !write.subagent);
        let ask = Policy::from_annotations(Annotations::READ_ONLY).needs_user();
        assert!(ask.offered(Mode::Plan) && !ask.subagent);
        let plan_only = Policy::from_annotations(Annotations::READ_ONLY).modes(Modes::PLAN);
        assert!(!plan_only.offered(Mode::Build) && plan_only.subagent);
        let build_only = Policy::from_annotations(Annotations::READ_ONLY).modes(Modes::BUILD);
        assert!(!build_only.subagent);
    }

    #[test]
    fn labels_pick_the_main_argument() {
        let args = json!({"pattern": "fn main", "path": "src", "todos": [1, 2]});
        assert_eq!(Label::Key { key: "path" }.text(&args).as_deref(), Some("src"));
        assert_eq!(
            Label::In { what: "pattern", place: "path" }.text(&args).as_deref(),
            Some("fn main in src")
        );
        assert_eq!(
            Label::In { what: "pattern", place: "none" }.text(&args).as_deref(),
            Some("fn main")
        );
        assert_eq!(
            Label::Count { key: "todos", noun: "item" }.text(&args).as_deref(),
            Some("2 items")
        );
        assert_eq!(
            Label::FirstOf { keys: &["description", "path"] }.text(&args).as_deref(),
            Some("src")
        );
        assert_eq!(Label::Nothing.text(&args).as_deref(), Some(""));
        assert_eq!(Label::Arguments.text(&args), None);
        assert_eq!(Label::Key { key: "command" }.text(&args), None);
    }

    #[test]
    fn steps_are_one_line_each() {
        let args = serde_json::json!({"actions": [
            {"action": "click", "ref": "e3"}, {"action": "navigate", "url": "/about"}, {"action": "back"}
        ]});
        let label = Label::Steps { key: "actions", word: "action", details: &["ref", "url"] };
        assert_eq!(label.text(&args).as_deref(), Some("click e3\nnavigate /about\nback"));
    }
}
