//! The redaction engine: one Aho-Corasick automaton (leftmost-longest) over every form of every
//! stored value ([`crate::forms`]) and the prefixes of the key-shape rules ([`crate::rules`]).
//! A stored form is replaced by `[secret:NAME]`; a rule's prefix is checked by its rule and the
//! key replaced by `[redacted:RULE]`.
//!
//! Streaming (`more == true`): a match that starts where every pattern would still fit in the input
//! is final; from the first position whose rest is a proper prefix of a pattern (at most
//! `longest − 1` bytes from the end), the input is kept back for the next call. A rule token that
//! runs to the end of the input is kept back too, up to [`crate::rules::MAX_TOKEN`] bytes (a PEM
//! block up to [`crate::rules::MAX_PEM`]); past that the part seen is redacted as it is.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Input, MatchKind};
use hands_core::redact::Redactor;

use crate::forms;
use crate::rules::{RULES, Verdict};

/// What a pattern of the automaton stands for.
#[derive(Debug, Clone, Copy)]
enum Pattern {
    /// A form of the stored value with this index in `names`.
    Stored(usize),
    /// The prefix of this rule.
    Rule(usize),
}

/// The redactor built from the stored values (see the module docs).
#[derive(Debug)]
pub struct Engine {
    automaton: AhoCorasick,
    patterns: Vec<Pattern>,
    /// `[secret:NAME]` of each stored value.
    replacements: Vec<Vec<u8>>,
    /// Every pattern, sorted: a binary search tells whether a tail of the input could start one.
    sorted: Vec<Vec<u8>>,
    longest: usize,
}

/// A step of the scan.
enum Found {
    /// Replace `start..end` with this text.
    Replace { start: usize, end: usize, with: Vec<u8> },
    /// Stop: keep back from `start`.
    Hold(usize),
}

impl Engine {
    /// An engine for `secrets` (`(NAME, value)`, every scope); values shorter than 8 bytes are
    /// skipped (the store refuses them). Fails only when the automaton outgrows its limits
    /// (millions of patterns).
    pub fn new<'a>(
        secrets: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, aho_corasick::BuildError> {
        let mut bytes: Vec<Vec<u8>> = Vec::new();
        let mut patterns = Vec::new();
        let mut replacements = Vec::new();
        for (name, value) in secrets {
            if value.len() < forms::MIN_FORM {
                continue;
            }
            let index = replacements.len();
            replacements.push(format!("[secret:{name}]").into_bytes());
            for form in forms::of(value) {
                // The same form under two names (one value stored twice): the first wins.
                if !bytes.contains(&form) {
                    bytes.push(form);
                    patterns.push(Pattern::Stored(index));
                }
            }
        }
        for (index, rule) in RULES.iter().enumerate() {
            bytes.push(rule.prefix.as_bytes().to_vec());
            patterns.push(Pattern::Rule(index));
        }
        let longest = bytes.iter().map(Vec::len).max().unwrap_or(0);
        let automaton =
            AhoCorasickBuilder::new().match_kind(MatchKind::LeftmostLongest).build(&bytes)?;
        let mut sorted = bytes;
        sorted.sort_unstable();
        Ok(Self { automaton, patterns, replacements, sorted, longest })
    }

    /// The length of the longest pattern (a stored form or a rule prefix).
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// The first position of `input` whose rest is a proper prefix of a pattern (at most
    /// `longest − 1` bytes from the end); the length of `input` when there is none.
    fn open_tail(&self, input: &[u8]) -> usize {
        let from = input.len().saturating_sub(self.longest.saturating_sub(1));
        (from..input.len())
            .find(|&p| {
                let tail = &input[p..];
                // The patterns that start with `tail` follow it in the sorted list: the first one
                // longer than it tells.
                let at = self.sorted.partition_point(|pat| pat.as_slice() <= tail);
                self.sorted.get(at).is_some_and(|pat| pat.starts_with(tail))
            })
            .unwrap_or(input.len())
    }

    /// The next thing to do in `input[from..hold]`.
    fn next(&self, input: &[u8], from: usize, hold: usize, more: bool) -> Option<Found> {
        let mut at = from;
        while at < hold {
            let found = self.automaton.find(Input::new(input).span(at..input.len()))?;
            if found.start() >= hold {
                return None;
            }
            let pattern = self.patterns.get(found.pattern().as_usize())?;
            match *pattern {
                Pattern::Stored(index) => {
                    return Some(Found::Replace {
                        start: found.start(),
                        end: found.end(),
                        with: self.replacements[index].clone(),
                    });
                }
                Pattern::Rule(index) => {
                    let rule = &RULES[index];
                    match rule.check(input, found.start(), more) {
                        Verdict::Key(end) => {
                            return Some(Found::Replace {
                                start: found.start(),
                                end,
                                with: format!("[redacted:{}]", rule.name).into_bytes(),
                            });
                        }
                        Verdict::Wait => return Some(Found::Hold(found.start())),
                        Verdict::No => at = found.start() + 1,
                    }
                }
            }
        }
        None
    }
}

impl Redactor for Engine {
    fn redact(&self, input: &[u8], more: bool, out: &mut Vec<u8>) -> usize {
        let hold = if more { self.open_tail(input) } else { input.len() };
        let mut done = 0;
        while let Some(found) = self.next(input, done, hold, more) {
            match found {
                Found::Replace { start, end, with } => {
                    out.extend_from_slice(&input[done..start]);
                    out.extend_from_slice(&with);
                    done = end;
                }
                Found::Hold(start) => {
                    out.extend_from_slice(&input[done..start]);
                    return start;
                }
            }
        }
        let end = hold.max(done);
        out.extend_from_slice(&input[done..end]);
        end
    }

    fn finds(&self, input: &[u8]) -> bool {
        self.next(input, 0, input.len(), false).is_some()
    }
}
