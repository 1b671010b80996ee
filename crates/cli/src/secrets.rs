//! `hands secrets set|list|rm`: the user's side of the secret store. A value is read from a
//! no-echo prompt (stdin a terminal) or as exactly one line of stdin, and is never printed: what
//! is shown of it is its masked hint.

use std::io::{BufRead as _, IsTerminal as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Subcommand;
use hands_core::secret::{SecretScope, SecretValue};
use hands_secrets::Store;

use crate::term;

/// What `hands secrets` does.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Store a secret: asked without echo at a terminal, else read as one line of stdin. It is
    /// given to the processes of the project at --root (default: the current directory) as the
    /// environment variable NAME, or to every project's with --global.
    Set {
        /// The variable's name: 2 to 64 of A-Z, 0-9 and _, starting with a letter.
        name: String,
        /// The project it is for (default: --root, else the current directory).
        #[arg(long, value_name = "DIR", conflicts_with = "global")]
        project: Option<PathBuf>,
        /// For every project.
        #[arg(long)]
        global: bool,
        /// The only host a connector may send this secret to (e.g. api.example.com): a
        /// repository's connector file cannot send it anywhere else.
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
    },
    /// List the secrets granted to the project (its own and the global ones): name, scope and a
    /// masked hint, never the value.
    List {
        /// Every scope: all projects' secrets and the global ones.
        #[arg(long)]
        all: bool,
        /// Print JSON: `[{"name", "scope": {"kind", "root"?}, "hint"}]`.
        #[arg(long)]
        json: bool,
    },
    /// Delete a secret of the project (default: --root, else the current directory), or a global
    /// one with --global.
    Rm {
        /// The secret's name.
        name: String,
        /// The project it belongs to.
        #[arg(long, value_name = "DIR", conflicts_with = "global")]
        project: Option<PathBuf>,
        /// The global secret of that name.
        #[arg(long)]
        global: bool,
    },
}

/// Run `action` on `store`; `root` is the project of `--root` (or the current directory).
pub fn run(store: &Store, root: &Path, action: Action) -> Result<ExitCode> {
    match action {
        Action::Set { name, project, global, host } => {
            hands_secrets::check_name(&name)?;
            let host = host.as_deref().map(hands_secrets::check_host).transpose()?;
            let scope = scope(root, project.as_deref(), global)?;
            let value = read_value(&name)?;
            let stored = store.put_in(&scope, &name, &value)?;
            if let Some(host) = &host {
                store.set_host_in(&scope, &name, Some(host))?;
                term::out(&format!("{name} may be sent by connectors to {host} only\n"));
            }
            term::out(&format!(
                "stored {name} for {} ({})\n",
                describe(&stored.scope),
                stored.hint
            ));
            Ok(ExitCode::SUCCESS)
        }
        Action::List { all, json } => {
            let list = if all {
                store.list_all()
            } else {
                hands_core::secret::SecretStore::list(store, root)
            };
            if json {
                let text = serde_json::to_string_pretty(&list).context("the list as JSON")?;
                term::data(&format!("{text}\n"))?;
            } else if list.is_empty() {
                term::out("no secrets stored; add one with `hands secrets set NAME`\n");
            } else {
                let width = list.iter().map(|s| s.name.len()).max().unwrap_or(0);
                for secret in &list {
                    term::out(&format!(
                        "{:width$}  {}  {}\n",
                        secret.name,
                        secret.hint,
                        describe(&secret.scope)
                    ));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Action::Rm { name, project, global } => {
            let scope = scope(root, project.as_deref(), global)?;
            if store.delete_in(&scope, &name)? {
                term::out(&format!("deleted {name} of {}\n", describe(&scope)));
                Ok(ExitCode::SUCCESS)
            } else {
                term::errln(&format!(
                    "hands: there is no secret {name} for {}; `hands secrets list --all` shows \
                     every stored one",
                    describe(&scope)
                ));
                Ok(ExitCode::from(1))
            }
        }
    }
}

fn scope(root: &Path, project: Option<&Path>, global: bool) -> Result<SecretScope> {
    if global {
        return Ok(SecretScope::Global);
    }
    let dir = project.unwrap_or(root);
    if !dir.is_dir() {
        bail!("the project {} is not a directory", dir.display());
    }
    Ok(hands_secrets::project_scope(dir))
}

fn describe(scope: &SecretScope) -> String {
    match scope {
        SecretScope::Global => "every project (global)".into(),
        SecretScope::Project(root) => format!("project {root}"),
    }
}

/// The value: typed at a no-echo prompt when stdin is a terminal, else one line of stdin.
fn read_value(name: &str) -> Result<SecretValue> {
    let stdin = std::io::stdin();
    let mut line = String::new();
    if stdin.is_terminal() {
        term::err(&format!("value of {name} (not shown): "));
        let echo = NoEcho::new(&stdin);
        stdin.lock().read_line(&mut line).context("reading the value")?;
        drop(echo);
        term::errln("");
    } else {
        stdin.lock().read_line(&mut line).context("reading the value from stdin")?;
    }
    let value = line.strip_suffix('\n').unwrap_or(&line);
    let value = value.strip_suffix('\r').unwrap_or(value);
    if value.is_empty() {
        bail!("no value given: type it at the prompt, or pipe it as one line on stdin");
    }
    Ok(SecretValue::new(value))
}

/// The terminal's echo off until dropped.
struct NoEcho<'a> {
    stdin: &'a std::io::Stdin,
    saved: Option<rustix::termios::Termios>,
}

impl<'a> NoEcho<'a> {
    fn new(stdin: &'a std::io::Stdin) -> Self {
        use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
        let saved = tcgetattr(stdin).ok();
        if let Some(saved) = &saved {
            let mut quiet = saved.clone();
            quiet.local_modes.remove(LocalModes::ECHO);
            let _ = tcsetattr(stdin, OptionalActions::Now, &quiet);
        }
        Self { stdin, saved }
    }
}

impl Drop for NoEcho<'_> {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = rustix::termios::tcsetattr(
                self.stdin,
                rustix::termios::OptionalActions::Now,
                saved,
            );
        }
    }
}
