//! A server-sent-events parser (the WHATWG `text/event-stream` format) fed with body chunks as
//! they arrive. Chunks may split lines, CRLF pairs and UTF-8 characters anywhere: bytes are kept
//! until a whole line is in, and an event is handed out at the blank line that ends it.

use crate::model::ProviderError;

/// Longest line or event we hold in memory; a stream that exceeds it is not an event stream.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SseEvent {
    /// The `event:` field; empty when the event had none (the spec's "message").
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental parser: [`push`](Self::push) chunks, then [`finish`](Self::finish) at the end.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes of the line not yet terminated.
    line: Vec<u8>,
    /// The last byte seen was a CR: a LF right after it belongs to the same line break.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feed one chunk; returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, ProviderError> {
        let mut out = Vec::new();
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(b'\n') = rest.first() {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..pos]);
            let cr = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.line_done(&line)? {
                out.push(event);
            }
        }
        self.line.extend_from_slice(rest);
        if self.line.len() + self.data.len() > MAX_EVENT_BYTES {
            return Err(ProviderError::Protocol(format!(
                "an event-stream event is longer than {MAX_EVENT_BYTES} bytes"
            )));
        }
        Ok(out)
    }

    /// The body ended: an event not closed by a blank line is dispatched anyway (servers often
    /// omit the final blank line before closing).
    pub fn finish(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.line_done(&line)? {
                return Ok(Some(event));
            }
        }
        Ok(self.dispatch())
    }

    fn line_done(&mut self, line: &[u8]) -> Result<Option<SseEvent>, ProviderError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        let line = std::str::from_utf8(line).map_err(|e| {
            ProviderError::Protocol(format!("the event stream is not valid UTF-8: {e}"))
        })?;
        if line.starts_with(':') {
            return Ok(None); // a comment (keep-alive)
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` steer browser reconnection, which a model call never does.
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            // The spec drops an event without data lines.
            return None;
        }
        Some(SseEvent { event, data: std::mem::take(&mut self.data) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        for chunk in input.chunks(size) {
            events.extend(parser.push(chunk).unwrap());
        }
        events.extend(parser.finish().unwrap());
        events
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent { event: event.into(), data: data.into() }
    }

    #[test]
    fn events_split_at_every_byte_parse_the_same() {
        let input = "event: a\ndata: {\"x\":\"é\"}\n\n: keep-alive\r\n\r\nevent:b\r\ndata:1\r\ndata: 2\r\n\r\ndata: last\rid: 7\r\r";
        let want = vec![ev("a", "{\"x\":\"é\"}"), ev("b", "1\n2"), ev("", "last")];
        for size in 1..input.len() {
            assert_eq!(parse_in_chunks(input.as_bytes(), size), want, "chunk size {size}");
        }
    }

    #[test]
    fn an_unterminated_last_event_is_dispatched_at_the_end() {
        assert_eq!(parse_in_chunks(b"data: [DONE]", 4), vec![ev("", "[DONE]")]);
        assert_eq!(parse_in_chunks(b"data: [DONE]\n", 100), vec![ev("", "[DONE]")]);
    }

    #[test]
    fn events_without_data_are_dropped() {
        assert_eq!(parse_in_chunks(b"event: ping\n\n", 100), vec![]);
        assert_eq!(parse_in_chunks(b"data\n\n", 100), vec![ev("", "")]);
    }

    #[test]
    fn invalid_utf8_is_a_protocol_error() {
        let mut parser = SseParser::default();
        let err = parser.push(b"data: \xff\xfe\n\n").unwrap_err();
        assert!(matches!(err, ProviderError::Protocol(m) if m.contains("UTF-8")));
    }
}
