//! `/rewind` in `hands chat`: the session's recent checkpoints with their turns and change
//! counts; the one picked is restored — the code, the conversation or both — through the host,
//! which checkpoints the state before so that the rewind can be undone the same way.

use anyhow::Result;
use hands_agent::host::{CheckpointInfo, Host, RestoreScope};

use crate::approve::Lines;
use crate::term;

/// How many checkpoints `/rewind` lists.
const SHOWN: usize = 12;

/// `/rewind [N [code|conversation|both]]`: without `N`, list and ask; without a scope, ask.
pub async fn rewind(host: &Host, id: &str, input: &Lines, args: &str) -> Result<()> {
    let mut words = args.split_whitespace();
    let list = host.checkpoints(id).await?;
    if list.is_empty() {
        term::errln("no checkpoints yet: a turn is checkpointed when it changes something");
        return Ok(());
    }
    let n = match words.next() {
        Some(word) => word,
        None => {
            term::errln(&render(&list, &turn_messages(host, id).await));
            input.show("rewind to checkpoint (its number; empty: cancel): ");
            let Some(line) = input.next().await else { return Ok(()) };
            if line.trim().is_empty() {
                term::errln("rewind cancelled");
                return Ok(());
            }
            return pick(host, id, input, line.trim(), words.next()).await;
        }
    };
    pick(host, id, input, n, words.next()).await
}

async fn pick(host: &Host, id: &str, input: &Lines, n: &str, scope: Option<&str>) -> Result<()> {
    let Ok(n) = n.trim_start_matches('#').parse::<u64>() else {
        term::errln(&format!("hands: {n:?} is not a checkpoint number; /rewind lists them"));
        return Ok(());
    };
    let scope = match scope {
        Some(word) => word.to_owned(),
        None => {
            input.show("restore [b]oth, [c]ode or c[o]nversation? (default both): ");
            input.next().await.unwrap_or_default()
        }
    };
    let Some(scope) = parse_scope(&scope) else {
        term::errln(&format!(
            "hands: {scope:?} is not a scope: both, code or conversation; nothing restored"
        ));
        return Ok(());
    };
    match host.restore_checkpoint(id, n, scope).await {
        Ok(done) => {
            let what = match scope {
                RestoreScope::Code => "the files",
                RestoreScope::Conversation => "the conversation",
                RestoreScope::Both => "the files and the conversation",
            };
            let s = if done.files_changed == 1 { "" } else { "s" };
            term::errln(&format!(
                "rewound {what} to checkpoint {n} ({} file{s} changed); undo with /rewind {} {}",
                done.files_changed,
                done.undo,
                scope_word(scope)
            ));
            for u in &done.uncaptured {
                let line = format!("not captured by the undo checkpoint: {u}");
                term::errln(&hands_core::redact::text(&line));
            }
        }
        Err(err) => term::errln(&format!("hands: {err}")),
    }
    Ok(())
}

fn parse_scope(word: &str) -> Option<RestoreScope> {
    match word.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "both" => Some(RestoreScope::Both),
        "c" | "code" | "files" => Some(RestoreScope::Code),
        "o" | "conv" | "conversation" => Some(RestoreScope::Conversation),
        _ => None,
    }
}

fn scope_word(scope: RestoreScope) -> &'static str {
    match scope {
        RestoreScope::Code => "code",
        RestoreScope::Conversation => "conversation",
        RestoreScope::Both => "both",
    }
}

/// Turn id → the first line of its user message.
async fn turn_messages(host: &Host, id: &str) -> std::collections::HashMap<String, String> {
    host.turns(id)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.id, t.user_message.lines().next().unwrap_or_default().to_owned()))
        .collect()
}

/// The last [`SHOWN`] checkpoints, oldest first, one line each.
fn render(list: &[CheckpointInfo], turns: &std::collections::HashMap<String, String>) -> String {
    let mut out = String::from("checkpoints of this session (newest last):");
    for cp in &list[list.len().saturating_sub(SHOWN)..] {
        let when = match cp.kind {
            hands_checkpoint::Kind::TurnStart => "before",
            hands_checkpoint::Kind::TurnEnd => "after",
            hands_checkpoint::Kind::Restore => "before a restore",
        };
        let turn = cp.turn.as_ref().and_then(|t| turns.get(t)).map(|m| {
            let cut: String = m.chars().take(48).collect();
            let more = if m.chars().count() > 48 { "…" } else { "" };
            format!(" \"{}{more}\"", term::line(&cut))
        });
        let s = if cp.files_changed == 1 { "" } else { "s" };
        let time = cp.created_at.get(11..19).unwrap_or_default();
        out.push_str(&format!(
            "\n  {:>4}  {time}  {when}{}  ({} file{s} changed, +{} \u{2212}{})",
            cp.n,
            turn.unwrap_or_default(),
            cp.files_changed,
            cp.additions,
            cp.deletions
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_take_their_words_and_initials() {
        assert_eq!(parse_scope(""), Some(RestoreScope::Both));
        assert_eq!(parse_scope("Code"), Some(RestoreScope::Code));
        assert_eq!(parse_scope("o"), Some(RestoreScope::Conversation));
        assert_eq!(parse_scope("everything"), None);
    }
}
