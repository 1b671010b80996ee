//! Keeping a long turn inside the model's context window.
//!
//! Before each model call the loop estimates the request's size in tokens (text and JSON at about
//! four bytes a token, each image at a fixed cost). When the estimate reaches
//! `elide_at × context_window`, the content of the oldest tool results is replaced by a short note
//! that tells the model how to get it back, oldest first, until the estimate is below
//! [`TARGET_AFTER_ELIDING`] of that threshold (so that the next few steps do not elide again, and the
//! provider's prompt cache keeps a stable prefix). The results of the latest step are never elided:
//! the model has not read them yet. Elision changes the conversation the model sees; the store
//! keeps every result in full.

use crate::model::{Block, Message, ModelRequest, ResultPart, Role};

/// What an image costs, in tokens (a 1000×1000 screenshot is about this much with both providers).
pub const IMAGE_TOKENS: u64 = 1_600;

/// After eliding, the estimate is brought below this fraction of the threshold.
pub const TARGET_AFTER_ELIDING: f64 = 0.75;

/// The prefix of every elision note (a result that starts with it is not elided again).
pub const NOTE_PREFIX: &str = "[elided to save context";

/// Tokens of `bytes` bytes of text or JSON.
fn bytes_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Estimated tokens of one block.
pub fn block_tokens(block: &Block) -> u64 {
    match block {
        Block::Text { text } => bytes_tokens(text.len()),
        Block::Image { .. } => IMAGE_TOKENS,
        Block::ToolUse { id, name, input } => {
            bytes_tokens(id.len() + name.len() + input.to_string().len()) + 8
        }
        Block::ToolResult { tool_use_id, content, .. } => {
            bytes_tokens(tool_use_id.len()) + 8 + content.iter().map(part_tokens).sum::<u64>()
        }
    }
}

fn part_tokens(part: &ResultPart) -> u64 {
    match part {
        ResultPart::Text { text } => bytes_tokens(text.len()),
        ResultPart::Image { .. } => IMAGE_TOKENS,
    }
}

/// Estimated tokens of one message (a few tokens of framing each).
pub fn message_tokens(message: &Message) -> u64 {
    4 + message.content.iter().map(block_tokens).sum::<u64>()
}

/// Estimated tokens of a whole request: system prompt, tool definitions and messages.
pub fn request_tokens(request: &ModelRequest) -> u64 {
    let tools: u64 = request
        .tools
        .iter()
        .map(|t| {
            bytes_tokens(t.name.len() + t.description.len() + t.input_schema.to_string().len())
        })
        .sum();
    bytes_tokens(request.system.len())
        + tools
        + request.messages.iter().map(message_tokens).sum::<u64>()
}

/// The note that replaces an elided result of `tool`.
pub fn note(tool: Option<&str>) -> String {
    match tool {
        Some(tool) => format!(
            "{NOTE_PREFIX}: this {tool} result was removed from the conversation; call {tool} again \
             if you need it]"
        ),
        None => format!(
            "{NOTE_PREFIX}: this tool result was removed from the conversation; make the call \
             again if you need it]"
        ),
    }
}

fn is_elided(content: &[ResultPart]) -> bool {
    matches!(content, [ResultPart::Text { text }] if text.starts_with(NOTE_PREFIX))
}

/// The index of the last user message that carries tool results: the latest step's results,
/// which are never elided.
fn latest_results(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|m| {
        m.role == Role::User && m.content.iter().any(|b| matches!(b, Block::ToolResult { .. }))
    })
}

/// The tool name of the call `id` answers, from the assistant messages before `before`.
fn tool_name(messages: &[Message], before: usize, id: &str) -> Option<String> {
    messages[..before].iter().rev().find_map(|m| {
        m.content.iter().find_map(|b| match b {
            Block::ToolUse { id: use_id, name, .. } if use_id == id => Some(name.clone()),
            _ => None,
        })
    })
}

/// What [`elide`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Elided {
    /// Tool results replaced by a note.
    pub results: usize,
    /// Estimated tokens saved.
    pub tokens_saved: u64,
}

/// If `overhead` (system prompt and tools) plus `messages` reach `threshold` tokens, replace the
/// content of the oldest tool results by a note until the estimate is below
/// `TARGET_AFTER_ELIDING × threshold` or only the latest step's results are left.
pub fn elide(messages: &mut [Message], overhead: u64, threshold: u64) -> Elided {
    let mut total = overhead + messages.iter().map(message_tokens).sum::<u64>();
    let mut done = Elided::default();
    if total < threshold {
        return done;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    let target = (threshold as f64 * TARGET_AFTER_ELIDING) as u64;
    let Some(protected) = latest_results(messages) else { return done };
    for index in 0..protected {
        if total < target {
            break;
        }
        if messages[index].role != Role::User {
            continue;
        }
        for b in 0..messages[index].content.len() {
            if total < target {
                break;
            }
            let (id, tokens_before) = match &messages[index].content[b] {
                Block::ToolResult { tool_use_id, content, .. } if !is_elided(content) => {
                    (tool_use_id.clone(), block_tokens(&messages[index].content[b]))
                }
                _ => continue,
            };
            let name = tool_name(messages, index, &id);
            let replacement = vec![ResultPart::Text { text: note(name.as_deref()) }];
            if let Block::ToolResult { content, .. } = &mut messages[index].content[b] {
                *content = replacement;
            }
            let tokens_after = block_tokens(&messages[index].content[b]);
            let saved = tokens_before.saturating_sub(tokens_after);
            total = total.saturating_sub(saved);
            done.results += 1;
            done.tokens_saved += saved;
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn step(id: &str, text_len: usize) -> [Message; 2] {
        [
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolUse {
                    id: id.into(),
                    name: "read_file".into(),
                    input: json!({"path": "a"}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_use_id: id.into(),
                    content: vec![ResultPart::Text { text: "x".repeat(text_len) }],
                    is_error: false,
                }],
            },
        ]
    }

    #[test]
    fn estimates_bytes_over_four_and_images_at_a_fixed_cost() {
        assert_eq!(block_tokens(&Block::Text { text: "abcdefgh".into() }), 2);
        assert_eq!(
            block_tokens(&Block::Image {
                media_type: "image/png".into(),
                data: "A".repeat(10_000)
            }),
            IMAGE_TOKENS
        );
    }

    #[test]
    fn under_the_threshold_nothing_changes() {
        let mut messages = vec![Message::user("hi")];
        messages.extend(step("a", 400));
        let before = messages.clone();
        assert_eq!(elide(&mut messages, 0, 10_000), Elided::default());
        assert_eq!(messages, before);
    }

    #[test]
    fn oldest_results_go_first_and_the_latest_step_stays() {
        let mut messages = vec![Message::user("hi")];
        for id in ["a", "b", "c"] {
            messages.extend(step(id, 4_000)); // ~1000 tokens each
        }
        // ~3000 tokens, threshold 2500: eliding a (→ ~2000) is below the 1875 target? No: b too.
        let done = elide(&mut messages, 0, 2_500);
        assert_eq!(done.results, 2);
        let results: Vec<bool> = messages
            .iter()
            .filter_map(|m| match m.content.first() {
                Some(Block::ToolResult { content, .. }) => Some(is_elided(content)),
                _ => None,
            })
            .collect();
        assert_eq!(results, vec![true, true, false]);
        let Block::ToolResult { content, .. } = &messages[2].content[0] else { panic!() };
        let ResultPart::Text { text } = &content[0] else { panic!() };
        assert!(text.contains("call read_file again"), "{text}");
        // Eliding again changes nothing more: only the latest step is left.
        assert_eq!(elide(&mut messages, 0, 10).results, 0);
    }
}
