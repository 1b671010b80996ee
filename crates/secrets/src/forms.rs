//! The forms a stored value takes in text: itself, each of its lines, URL-encoded, JSON-escaped
//! and base64 (standard and URL-safe, padded and not, and the stable middle part it has at each of
//! the three alignments inside a longer base64 text). Every form is matched like the value.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// Forms shorter than this are not matched: too likely in ordinary text.
pub(crate) const MIN_FORM: usize = 8;

/// Every form of `value` worth matching (deduplicated, each at least [`MIN_FORM`] bytes).
pub(crate) fn of(value: &str) -> Vec<Vec<u8>> {
    let mut forms: Vec<Vec<u8>> = Vec::new();
    let mut add = |form: Vec<u8>| {
        if form.len() >= MIN_FORM && !forms.contains(&form) {
            forms.push(form);
        }
    };
    add(value.as_bytes().to_vec());
    if value.contains('\n') {
        for line in value.lines() {
            add(line.trim_end_matches('\r').as_bytes().to_vec());
        }
    }
    for upper in [true, false] {
        add(percent(value, COMPONENT_SAFE, false, upper));
        add(percent(value, FORM_SAFE, true, upper));
    }
    if let Ok(json) = serde_json::to_string(value) {
        let inner = &json[1..json.len() - 1];
        add(inner.as_bytes().to_vec());
        // Some encoders also escape `/`.
        add(inner.replace('/', "\\/").into_bytes());
    }
    let bytes = value.as_bytes();
    for engine in [&STANDARD, &URL_SAFE] {
        add(engine.encode(bytes).into_bytes());
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        add(engine.encode(bytes).into_bytes());
        for shift in 0..3 {
            if let Some(middle) = middle(engine, bytes, shift) {
                add(middle);
            }
        }
    }
    forms
}

/// Bytes `encodeURIComponent` leaves as they are (besides ASCII letters and digits).
const COMPONENT_SAFE: &[u8] = b"-_.!~*'()";
/// Bytes form encoding (`application/x-www-form-urlencoded`) leaves as they are.
const FORM_SAFE: &[u8] = b"-_.*";

fn percent(value: &str, safe: &[u8], plus: bool, upper: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 3);
    for &b in value.as_bytes() {
        if b.is_ascii_alphanumeric() || safe.contains(&b) {
            out.push(b);
        } else if plus && b == b' ' {
            out.push(b'+');
        } else if upper {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            out.extend_from_slice(format!("%{b:02x}").as_bytes());
        }
    }
    out
}

/// The part of the base64 of `bytes` that is the same whatever comes before and after it, when
/// `bytes` starts `shift` bytes into a 3-byte group of a longer text.
fn middle(engine: &base64::engine::GeneralPurpose, bytes: &[u8], shift: usize) -> Option<Vec<u8>> {
    // Bytes of the value that complete the group the text before it started.
    let skip = (3 - shift) % 3;
    let rest = bytes.get(skip..)?;
    let whole = rest.len() / 3 * 3;
    (whole >= 6).then(|| engine.encode(&rest[..whole]).into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_middle_part_is_found_at_every_alignment() {
        let value = "canary-4f2a-secret-value";
        let forms = of(value);
        for prefix in ["", "x", "xy", "xyz", "wxyz"] {
            for suffix in ["", "!", "!?", "!?."] {
                let text = format!("{prefix}{value}{suffix}");
                for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD] {
                    let encoded = engine.encode(text.as_bytes());
                    assert!(
                        forms.iter().any(|f| encoded.as_bytes().windows(f.len()).any(|w| w == f)),
                        "{prefix:?} {suffix:?} {encoded}"
                    );
                }
            }
        }
    }

    #[test]
    fn url_and_json_forms() {
        let forms = of("p@ss word/\"quoted\"");
        for form in [
            "p%40ss%20word%2F%22quoted%22",
            "p%40ss+word%2F%22quoted%22",
            "p%40ss%20word%2f%22quoted%22",
            "p@ss word/\\\"quoted\\\"",
            "p@ss word\\/\\\"quoted\\\"",
        ] {
            assert!(forms.contains(&form.as_bytes().to_vec()), "{form}");
        }
    }

    #[test]
    fn lines_of_a_multi_line_value() {
        let forms = of("first-line-1234\r\nsecond-line-5678\nshort");
        assert!(forms.contains(&b"first-line-1234".to_vec()));
        assert!(forms.contains(&b"second-line-5678".to_vec()));
        assert!(!forms.contains(&b"short".to_vec()));
    }
}
