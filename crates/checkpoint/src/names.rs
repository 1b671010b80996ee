//! Names and link targets as bytes. A file name (or a symlink's target) is any bytes but `/` and
//! NUL on Unix, not always UTF-8; the store keeps paths as `/`-separated text. A name that is
//! UTF-8 is stored as it is (so the trees of stores made before names were bytes read the same,
//! and a tree of UTF-8 names keeps its id); one that is not is stored as a NUL followed by the
//! lower-case hex of its bytes (`caf\xe9.txt` → `"\0636166e92e747874"`). No real name or target
//! holds a NUL, so the two forms never meet, and an older store never holds the second.
//!
//! What people see is [`escaped`]: the UTF-8 parts as they are, each other byte as `\xNN`.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

const MARK: char = '\0';

/// The stored form of `name` (one name, or a link's target).
pub(crate) fn encode(name: &OsStr) -> String {
    match name.to_str() {
        Some(text) => text.to_string(),
        None => {
            let mut out = String::with_capacity(1 + 2 * name.len());
            out.push(MARK);
            for b in name.as_bytes() {
                out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
                out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
            }
            out
        }
    }
}

/// The bytes of a stored name or target (`None`: a damaged hex form).
pub(crate) fn decode(stored: &str) -> Option<OsString> {
    let Some(hex) = stored.strip_prefix(MARK) else { return Some(OsString::from(stored)) };
    if hex.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16).and_then(|d| u8::try_from(d).ok());
    let bytes: Option<Vec<u8>> =
        hex.as_bytes().chunks(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect();
    Some(OsString::from_vec(bytes?))
}

/// A stored path (or target) as people read it: each name's UTF-8 parts as they are and every
/// other byte as `\xNN` (`caf\xe9.txt`). Equal to the stored form when every name is UTF-8.
pub fn escaped(stored: &str) -> String {
    if !stored.contains(MARK) {
        return stored.to_string();
    }
    let parts: Vec<String> = stored
        .split('/')
        .map(|part| match decode(part) {
            Some(bytes) if part.starts_with(MARK) => escape_bytes(bytes.as_bytes()),
            _ => part.to_string(),
        })
        .collect();
    parts.join("/")
}

/// A stored path (or target) with every byte that is not UTF-8 shown as U+FFFD.
pub fn lossy(stored: &str) -> String {
    if !stored.contains(MARK) {
        return stored.to_string();
    }
    let parts: Vec<String> = stored
        .split('/')
        .map(|part| match decode(part) {
            Some(bytes) => bytes.to_string_lossy().into_owned(),
            None => part.to_string(),
        })
        .collect();
    parts.join("/")
}

/// The raw bytes of a stored path (or target), names joined by `/`; `None` when damaged.
pub fn bytes(stored: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(stored.len());
    for (i, part) in stored.split('/').enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(decode(part)?.as_bytes());
    }
    Some(out)
}

/// `bytes` with each byte of an invalid UTF-8 sequence as `\xNN`.
fn escape_bytes(mut bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    while !bytes.is_empty() {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                out.push_str(text);
                break;
            }
            Err(err) => {
                let (good, rest) = bytes.split_at(err.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                let bad = err.error_len().unwrap_or(rest.len());
                for b in &rest[..bad] {
                    let _ = write!(out, "\\x{b:02x}");
                }
                bytes = &rest[bad..];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_round_trip_and_read_escaped() {
        let raw = OsStr::from_bytes(b"caf\xe9.txt");
        let stored = encode(raw);
        assert_eq!(stored, "\u{0}636166e92e747874");
        assert_eq!(decode(&stored).unwrap(), raw);
        assert_eq!(encode(OsStr::new("plain é.txt")), "plain é.txt");
        assert_eq!(escaped(&format!("dir/{stored}")), "dir/caf\\xe9.txt");
        assert_eq!(lossy(&format!("dir/{stored}")), "dir/caf\u{fffd}.txt");
        assert_eq!(bytes(&format!("dir/{stored}")).unwrap(), b"dir/caf\xe9.txt");
        assert_eq!(escape_bytes(b"\xff\xfe\xc3\xa9"), "\\xff\\xfe\u{e9}");
        assert!(decode("\0abc").is_none() && decode("\0zz").is_none());
    }
}
