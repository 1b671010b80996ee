//! The session's latest snapshot: the baseline the next delta is computed against and the refs
//! actions may use, with the refs of earlier documents remembered so that they are refused as
//! stale rather than unknown.

use std::collections::HashSet;

use crate::outline::Line;

/// The previous snapshot of the session.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    /// The page load (document) it was taken of.
    pub load: u64,
    /// Its number in the session.
    pub number: u64,
    /// Its lines.
    pub lines: Vec<Line>,
    /// Refs of earlier documents (refused as stale, with the reason).
    pub stale: HashSet<u64>,
    /// The next ref number the page's walker gives (numbers only grow within a session, so that
    /// a ref of an earlier document never names an element of a later one).
    pub next_ref: u64,
}

/// Refs of earlier documents remembered at most.
const MAX_STALE: usize = 50_000;

impl Baseline {
    /// The baseline after `previous` for a snapshot of `lines` in page load `load`.
    pub fn after(previous: Option<&Baseline>, lines: &[Line], load: u64, next_ref: u64) -> Self {
        let number = previous.map_or(1, |b| b.number + 1);
        let mut stale = previous.map(|b| b.stale.clone()).unwrap_or_default();
        if let Some(old) = previous.filter(|b| b.load != load) {
            if stale.len() > MAX_STALE {
                stale.clear();
            }
            stale.extend(old.lines.iter().filter_map(|l| l.node));
        }
        let next_ref = next_ref.max(previous.map_or(1, |b| b.next_ref));
        Self { load, number, lines: lines.to_vec(), stale, next_ref }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_of_a_replaced_document_are_remembered_as_stale() {
        let line =
            Line { depth: 0, role: "button".into(), text: "button e7".into(), node: Some(7) };
        let first = Baseline::after(None, std::slice::from_ref(&line), 1, 8);
        let same = Baseline::after(Some(&first), &[], 1, 8);
        assert!(same.stale.is_empty(), "a change in the same document is no staleness");
        let next = Baseline::after(Some(&first), &[], 2, 1);
        assert_eq!((next.number, next.stale.contains(&7)), (2, true));
        assert_eq!(next.next_ref, 8, "ref numbers never go back");
    }
}
