//! hands' own log (stderr, `HANDS_LOG`): every formatted line passes through the redaction engine
//! before it is written, so that a secret in a field or a message never reaches a terminal, a
//! captured MCP stderr or a log file.

use std::io::{self, Write};

/// A writer that redacts each formatted line (the fmt layer writes one event in one call).
pub(crate) struct Redacted<W>(pub(crate) W);

impl<W: Write> Write for Redacted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_all(&hands_core::redact::bytes(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// stderr, redacted: the writer `init_tracing` gives the fmt layer.
pub(crate) fn stderr() -> Redacted<io::Stderr> {
    Redacted(io::stderr())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_line_is_written_with_its_secrets_replaced() {
        hands_core::redact::install(Arc::new(hands_core::redact::Literals(vec![(
            "LOG_TOKEN".into(),
            "canary-3b7e-log-value".into(),
        )])));
        let mut out = Redacted(Vec::new());
        let line = b"WARN hands: request failed key=canary-3b7e-log-value\n";
        assert_eq!(out.write(line).unwrap(), line.len());
        assert_eq!(
            String::from_utf8(out.0).unwrap(),
            "WARN hands: request failed key=[secret:LOG_TOKEN]\n"
        );
        hands_core::redact::install(Arc::new(hands_core::redact::Nothing));
    }
}
