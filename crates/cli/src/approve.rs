//! The terminal as the approver and the asker: under `approval = "ask"`, `hands call` asks on the
//! terminal before a tool changes anything, and ask_user's questions are put to the person at the
//! terminal. Installed only when someone is there to answer; otherwise nobody can be asked, and the
//! core refuses such calls (ask_user says so) at once.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::Arc;

use hands_core::approval::{ApprovalRequest, Approver, ApproverHandle, Decision};
use hands_core::ask::{AskError, Asker, AskerHandle, Question};
use hands_core::{BoxFuture, CancellationToken, Session};

/// Asks on stderr, reads the answer from stdin.
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        let prompt = format!("hands: allow {}? [y/N] ", request.summary);
        Box::pin(async move {
            let ask = tokio::task::spawn_blocking(move || {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(prompt.as_bytes());
                let _ = err.flush();
                let mut line = String::new();
                std::io::stdin().lock().read_line(&mut line).map(|_| line)
            });
            tokio::select! {
                answer = ask => match answer {
                    Ok(Ok(line)) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                        Decision::Approve
                    }
                    Ok(Ok(line)) if line.trim().len() > 1 && !line.trim().eq_ignore_ascii_case("no") => {
                        Decision::Deny(Some(line.trim().to_owned()))
                    }
                    _ => Decision::Deny(None),
                },
                () = cancel.cancelled() => Decision::Deny(Some("aborted".into())),
            }
        })
    }
}

/// Where the terminal asker talks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// The question on stderr, the answer from stdin (stdin is the terminal).
    Stdio,
    /// Both on `/dev/tty` (stdin is a pipe, e.g. the arguments came on it, but a person watches).
    Tty,
}

/// Puts ask_user's questions to the person at the terminal: the question, the options numbered,
/// and one line of answer (an option's number picks it; an empty line declines).
pub struct TerminalAsker {
    line: Line,
}

impl Asker for TerminalAsker {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        let prompt = prompt(question);
        let line = self.line;
        Box::pin(async move {
            // A blocking read cannot be interrupted: on cancel the thread is left to finish (or
            // to die with the process) and its line is dropped.
            let read = tokio::task::spawn_blocking(move || read_answer(line, &prompt));
            tokio::select! {
                answer = read => match answer {
                    Ok(Ok(Some(text))) => interpret(&text, &question.options),
                    Ok(Ok(None)) => Err(AskError::Declined(None)),
                    Ok(Err(err)) => Err(AskError::Unavailable(format!("the terminal: {err}"))),
                    Err(err) => Err(AskError::Unavailable(err.to_string())),
                },
                () = cancel.cancelled() => Err(AskError::Cancelled),
            }
        })
    }
}

/// The prompt for `question`.
fn prompt(question: &Question) -> String {
    let mut text = format!("\nhands: the agent asks: {}\n", question.question);
    for (n, option) in question.options.iter().enumerate() {
        text.push_str(&format!("  {}) {option}\n", n + 1));
    }
    text.push_str(if question.options.is_empty() {
        "answer (an empty line declines): "
    } else {
        "answer (a number or your own words; an empty line declines): "
    });
    text
}

/// Show `prompt` and read one line; `None` at end of input.
fn read_answer(line: Line, prompt: &str) -> std::io::Result<Option<String>> {
    let mut answer = String::new();
    let read = match line {
        Line::Stdio => {
            let mut err = std::io::stderr().lock();
            err.write_all(prompt.as_bytes())?;
            err.flush()?;
            std::io::stdin().lock().read_line(&mut answer)?
        }
        Line::Tty => {
            let mut tty = std::fs::File::options().read(true).write(true).open("/dev/tty")?;
            tty.write_all(prompt.as_bytes())?;
            tty.flush()?;
            BufReader::new(tty).read_line(&mut answer)?
        }
    };
    Ok((read > 0).then_some(answer))
}

/// The answer a typed line gives: an option's number picks the option, other text is the answer,
/// an empty line declines.
fn interpret(text: &str, options: &[String]) -> Result<String, AskError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AskError::Declined(None));
    }
    match text.parse::<usize>() {
        Ok(n) if (1..=options.len()).contains(&n) => Ok(options[n - 1].clone()),
        _ => Ok(text.to_owned()),
    }
}

/// Give `session` the terminal as its approver and asker when a person is there: the approver
/// when stdin is a terminal, the asker then too, or through `/dev/tty` when only stderr is one.
pub fn install(session: &Session) {
    if std::io::stdin().is_terminal() {
        session.insert_extension(ApproverHandle(Arc::new(TerminalApprover)));
        session.insert_extension(AskerHandle(Arc::new(TerminalAsker { line: Line::Stdio })));
    } else if std::io::stderr().is_terminal()
        && std::fs::File::options().read(true).write(true).open("/dev/tty").is_ok()
    {
        session.insert_extension(AskerHandle(Arc::new(TerminalAsker { line: Line::Tty })));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn question(options: &[&str]) -> Question {
        Question {
            session: "s".into(),
            id: "q".into(),
            question: "Which colour?".into(),
            options: options.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn the_prompt_numbers_the_options() {
        assert_eq!(
            prompt(&question(&["red", "blue"])),
            "\nhands: the agent asks: Which colour?\n  1) red\n  2) blue\nanswer (a number or \
             your own words; an empty line declines): "
        );
        assert!(prompt(&question(&[])).ends_with("?\nanswer (an empty line declines): "));
    }

    #[test]
    fn a_number_picks_an_option_and_other_text_is_the_answer() {
        let options = ["red".to_owned(), "blue".to_owned()];
        assert_eq!(interpret(" 2\n", &options), Ok("blue".into()));
        assert_eq!(interpret("3", &options), Ok("3".into()));
        assert_eq!(interpret("0", &options), Ok("0".into()));
        assert_eq!(interpret("green, please\n", &options), Ok("green, please".into()));
        assert_eq!(interpret("1", &[]), Ok("1".into()));
        assert_eq!(interpret("  \n", &options), Err(AskError::Declined(None)));
    }
}
