//! Handles that say which node made them. With several `hands serve` nodes on one database, a
//! 2026-07-28 client keeps no session, so its next request may reach any node: the
//! `requestState` of a parked call and the id of a task start with the node that holds them
//! (`n` + the node id in URL-safe base64 + `.`), and a node that gets a handle of another one
//! sends the request on to it (`hands-server`'s forwarding). The tag is no capability: what it
//! refers to is found only on the node that made it, under the whole tagged handle (256 random
//! bits for a call, checked against the call's binding; a task id checked against the session
//! that started it), so a client that writes another node into a handle reaches nothing there.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// `handle` tagged with `node` (unchanged for a node alone, `None`).
pub fn tagged(node: Option<&str>, handle: &str) -> String {
    match node {
        Some(node) => format!("n{}.{handle}", URL_SAFE_NO_PAD.encode(node)),
        None => handle.to_owned(),
    }
}

/// The node a tagged handle names; `None` for an untagged or malformed one.
pub fn node_of(handle: &str) -> Option<String> {
    let (node, rest) = handle.strip_prefix('n')?.split_once('.')?;
    if rest.is_empty() {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(node).ok()?;
    String::from_utf8(bytes).ok().filter(|n| !n.is_empty())
}

/// The handle `node` made, without its tag; `None` when `handle` is not tagged with `node`.
pub(crate) fn untagged<'a>(node: Option<&str>, handle: &'a str) -> Option<&'a str> {
    let Some(node) = node else { return Some(handle) };
    let (_, rest) = handle.split_once('.')?;
    (node_of(handle).as_deref() == Some(node)).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_handle_names_its_node_and_only_that_node_takes_it_back() {
        let handle = tagged(Some("host-1.example:42"), "0a1b");
        assert!(handle.starts_with('n') && handle.ends_with(".0a1b"), "{handle}");
        assert_eq!(node_of(&handle).as_deref(), Some("host-1.example:42"));
        assert_eq!(untagged(Some("host-1.example:42"), &handle), Some("0a1b"));
        assert_eq!(untagged(Some("host-2"), &handle), None);
        assert_eq!(tagged(None, "0a1b"), "0a1b");
        assert_eq!(untagged(None, "0a1b"), Some("0a1b"));
        // Plain handles (random hex, rmcp's UUIDs) and junk name no node.
        for plain in ["0a1b", "6f9619ff-8b86-d011-b42d-00c04fc964ff", "n.", "n!!.x", "nAA", "n.x"] {
            assert_eq!(node_of(plain), None, "{plain}");
        }
        assert_eq!(untagged(Some("a"), "0a1b"), None);
    }
}
