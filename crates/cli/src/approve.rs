//! The terminal as the approver: under `approval = "ask"`, `hands call` asks on the terminal before
//! a tool changes anything. Installed only when stdin is a terminal; otherwise nobody can be asked
//! and the core refuses such calls at once.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use hands_core::approval::{ApprovalRequest, Approver, ApproverHandle, Decision};
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

/// Give `session` the terminal as its approver when there is one.
pub fn install(session: &Session) {
    if std::io::stdin().is_terminal() {
        session.insert_extension(ApproverHandle(Arc::new(TerminalApprover)));
    }
}
