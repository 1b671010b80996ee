//! Hides secrets in what a tool returns: its text blocks, its structured content and an error's
//! message pass through the installed [`crate::redact`] engine, so that the spill files of
//! truncation (outside this step), the dedup cache and every front end get clean text. Images are
//! not scrubbed (a secret drawn in a screenshot stays there). A result with nothing to hide is
//! returned as it is, without a copy: with no secret stored the step costs one check per string.

use std::borrow::Cow;

use super::{Middleware, Next, Request};
use crate::redact::{self, Redactor};
use crate::{ChainError, Content, ToolOutput};

/// The redaction middleware (stateless; the engine is the process-wide one).
#[derive(Debug, Default, Clone, Copy)]
pub struct Redact;

impl Middleware for Redact {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        let result = next.run(req).await;
        let redactor = redact::current();
        match result {
            Ok(output) => Ok(output_with(redactor.as_ref(), output)),
            Err(err) => Err(error_with(redactor.as_ref(), err)),
        }
    }
}

/// `output` with its secrets replaced (text blocks, structured content, notices; not images).
pub fn output(output: ToolOutput) -> ToolOutput {
    output_with(redact::current().as_ref(), output)
}

fn output_with(redactor: &dyn Redactor, mut output: ToolOutput) -> ToolOutput {
    for block in &mut output.content {
        if let Content::Text { text } = block {
            clean(redactor, text);
        }
    }
    if let Some(structured) = &mut output.structured {
        redact::json_with(redactor, structured);
    }
    for notice in &mut output.notices {
        clean(redactor, &mut notice.text);
    }
    output
}

fn error_with(redactor: &dyn Redactor, err: ChainError) -> ChainError {
    match err {
        ChainError::Fatal(mut m) => {
            clean(redactor, &mut m);
            ChainError::Fatal(m)
        }
        ChainError::SandboxGone(mut m) => {
            clean(redactor, &mut m);
            ChainError::SandboxGone(m)
        }
    }
}

/// Replace the secrets in `text` in place; untouched (no copy) when it has none.
fn clean(redactor: &dyn Redactor, text: &mut String) -> bool {
    if let Cow::Owned(clean) = redact::text_with(redactor, text) {
        *text = clean;
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Literals;
    use crate::{Notice, NoticeKind};

    fn engine() -> Literals {
        Literals(vec![("API_TOKEN".into(), "canary-77d1-value".into())])
    }

    #[test]
    fn text_structured_notices_and_errors_are_clean_and_images_untouched() {
        let engine = engine();
        let mut out = ToolOutput::text("echo canary-77d1-value done")
            .with_structured(serde_json::json!({"output": "canary-77d1-value", "n": 1}));
        out.content.push(Content::Image {
            data: b"canary-77d1-value".to_vec(),
            mime_type: "image/png".into(),
        });
        out.notices.push(Notice::new(NoticeKind::Other, "saw canary-77d1-value"));
        let out = output_with(&engine, out);
        assert_eq!(out.joined_text(), "echo [secret:API_TOKEN] done");
        assert_eq!(
            out.structured,
            Some(serde_json::json!({"output": "[secret:API_TOKEN]", "n": 1}))
        );
        assert_eq!(out.notices[0].text, "saw [secret:API_TOKEN]");
        assert!(
            matches!(&out.content[1], Content::Image { data, .. } if data == b"canary-77d1-value")
        );
        let err = error_with(&engine, ChainError::Fatal("bad key canary-77d1-value".into()));
        assert_eq!(err.to_string(), "bad key [secret:API_TOKEN]");
    }

    #[test]
    fn a_clean_result_is_not_copied() {
        let engine = engine();
        let out = ToolOutput::text("x".repeat(32 * 1024));
        let before = match &out.content[0] {
            Content::Text { text } => text.as_ptr(),
            Content::Image { .. } => unreachable!(),
        };
        let out = output_with(&engine, out);
        let Content::Text { text } = &out.content[0] else { unreachable!() };
        assert_eq!(text.as_ptr(), before, "the clean text was reallocated");
    }
}
