//! `hands chat`: the turns of `hands run`, one per line typed. Lines come from stdin (a terminal,
//! where a `build>` or `plan>` prompt is shown, or a pipe); a line that is a command (`/exit`,
//! `/plan`, `/build`, `/todos`, `/rewind`, `/help`) is done here, any other line is the next
//! user message.
//! Ctrl-C aborts the running turn, or leaves when no turn runs; the end of the input leaves too.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use hands_core::Mode;

use crate::approve::Lines;
use crate::run::{self, Agent, Prompter, Setup, Start};
use crate::{rewind, term, view};

const HELP: &str = "\
/plan    plan mode: read-only tools; the agent proposes a plan for you to approve
/build   build mode: every tool
/todos   the session's todo list
/rewind  the session's checkpoints; restore one (its files, the conversation, or both)
         (/rewind N [code|conversation|both] restores checkpoint N at once)
/exit    leave (also Ctrl-D; Ctrl-C when no turn runs)
Anything else is a message to the agent; Ctrl-C aborts its turn.";

/// `hands chat`: a session (new, or resumed), then one turn per line until `/exit`, the end of
/// the input, or Ctrl-C while idle (exit code 130).
pub fn chat(setup: Setup, start: Start) -> Result<ExitCode> {
    run::block_on(async move {
        let mut interrupts = run::interrupts()?;
        let input = Lines::stdin();
        let interactive = std::io::stdin().is_terminal();
        let prompter = match Lines::prompts_for(&input) {
            Some(lines) => Prompter::Lines(lines),
            None => Prompter::Nobody,
        };
        let agent = Agent::start(setup, start, prompter).await?;
        let session = agent.host.session(&agent.id).await?;
        if interactive {
            term::errln(&format!(
                "hands chat: session {} ({} mode). /help lists the commands; /exit or Ctrl-D \
                 leaves.",
                agent.id,
                session.mode()
            ));
        }
        let code = loop {
            if interactive {
                input.show(&format!("{}> ", session.mode()));
            }
            let line = tokio::select! {
                line = input.next() => line,
                _ = interrupts.recv() => {
                    term::errln("");
                    break 130;
                }
            };
            let Some(line) = line else {
                if interactive {
                    term::errln("");
                }
                break 0;
            };
            let line = line.trim();
            let (name, args) = match command(line) {
                Some((name, args)) => (Some(name), args),
                None => (None, ""),
            };
            match name {
                Some("exit" | "quit") => break 0,
                Some("rewind") => {
                    let prompts = Lines::prompts_for(&input).unwrap_or_else(|| Arc::clone(&input));
                    if let Err(err) = rewind::rewind(&agent.host, &agent.id, &prompts, args).await {
                        term::errln(&format!("hands: {err:#}"));
                    }
                }
                Some("plan") => {
                    session.set_mode(Mode::Plan);
                    term::errln("mode: plan (read-only tools; the agent proposes a plan)");
                }
                Some("build") => {
                    session.set_mode(Mode::Build);
                    term::errln("mode: build");
                }
                Some("todos") => {
                    let todos = hands_agent::todos(&session).borrow().clone();
                    term::errln(&view::render_todos(&todos));
                }
                Some("help") => term::errln(HELP),
                Some(other) => {
                    term::errln(&format!("hands: unknown command /{other}; /help lists them"));
                }
                None if line.is_empty() => {}
                None => match agent.turn(line.to_owned(), &mut interrupts).await {
                    Ok(reason) => run::explain(&reason),
                    Err(err) => term::errln(&format!("hands: {err:#}")),
                },
            }
        };
        agent.host.close().await;
        term::errln(&format!("resume with: hands chat --resume {}", agent.id));
        Ok(ExitCode::from(code))
    })
}

/// The command a line names and its arguments (`/plan` → `plan`, `/rewind 3 code` → `rewind`,
/// `3 code`), if it is one: a slash and one lowercase word, and arguments only for the commands
/// that take them (so that `/etc is odd` stays a message).
fn command(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix('/')?;
    let (word, args) = rest.split_once(' ').unwrap_or((rest, ""));
    let is_word = !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase());
    (is_word && (args.trim().is_empty() || word == "rewind")).then_some((word, args.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_a_slash_and_one_word() {
        assert_eq!(command("/exit"), Some(("exit", "")));
        assert_eq!(command("/todos"), Some(("todos", "")));
        assert_eq!(command("/rewind 3 code"), Some(("rewind", "3 code")));
        assert_eq!(command("/usr/bin is odd"), None);
        assert_eq!(command("/etc is odd"), None);
        assert_eq!(command("fix /etc"), None);
        assert_eq!(command("/"), None);
    }
}
