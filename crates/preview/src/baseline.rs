//! The session's latest snapshot: the baseline the next delta is computed against and the refs
//! actions may use, with where the current document's refs begin, so that refs of earlier
//! documents are refused as stale rather than unknown.

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
    /// The first ref number of this document: refs below it are of earlier documents (refused as
    /// stale, with the reason). Ref numbers only grow within a session.
    pub document_from: u64,
    /// The next ref number the page's walker gives (numbers only grow within a session, so that
    /// a ref of an earlier document never names an element of a later one).
    pub next_ref: u64,
}

impl Baseline {
    /// The baseline after `previous` for a snapshot of `lines` in page load `load`, after which
    /// the walker's next ref number is `next_ref`.
    pub fn after(previous: Option<&Baseline>, lines: &[Line], load: u64, next_ref: u64) -> Self {
        let number = previous.map_or(1, |b| b.number + 1);
        let document_from = match previous {
            Some(b) if b.load == load => b.document_from,
            Some(b) => b.next_ref,
            None => 1,
        };
        let next_ref = next_ref.max(previous.map_or(1, |b| b.next_ref));
        Self { load, number, lines: lines.to_vec(), document_from, next_ref }
    }

    /// True when ref number `n` is of an earlier document than this one.
    pub fn is_stale(&self, n: u64) -> bool {
        n < self.document_from
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_of_a_replaced_document_are_stale() {
        let line =
            Line { depth: 0, role: "button".into(), text: "button e7".into(), node: Some(7) };
        let first = Baseline::after(None, std::slice::from_ref(&line), 1, 8);
        let same = Baseline::after(Some(&first), &[], 1, 8);
        assert!(!same.is_stale(7), "a change in the same document is no staleness");
        let next = Baseline::after(Some(&first), &[], 2, 1);
        assert_eq!((next.number, next.is_stale(7), next.is_stale(8)), (2, true, false));
        assert_eq!(next.next_ref, 8, "ref numbers never go back");
        let later = Baseline::after(Some(&next), &[], 2, 12);
        assert_eq!((later.is_stale(7), later.next_ref), (true, 12));
    }
}
