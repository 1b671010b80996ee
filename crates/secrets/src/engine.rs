//! The redaction engine: every form of every stored value ([`crate::forms`]) replaced by
//! `[secret:NAME]`, and the keys the rules find ([`crate::rules`]) by `[redacted:RULE]`.
//!
//! Finding them fast, with a thousand values and their forms (about ten thousand patterns, each at
//! least 8 bytes): a general automaton runs at a few hundred MB/s over so many patterns, too slow
//! for process output. So the text is sampled every [`STRIDE`] bytes: each sample's 4 bytes are
//! looked up in a bit set of the hashes of every pattern's first five 4-byte windows (any pattern
//! of 8 bytes or more that starts in the text covers one sample with one of those windows). Only
//! around a hit does an anchored Aho-Corasick automaton (leftmost-longest) look for a pattern
//! starting there. The rules' prefixes are few: each is found by its anchor, a rarer part of it
//! (`_live_` of `sk_live_`, `-BEGIN ` of `-----BEGIN `), with a packed SIMD searcher (Teddy), once
//! per call; text full of `sk_`, `gh` or `-----` then costs no more than other text. A stored form
//! wins over a rule that starts at the same place or later.
//!
//! Base64 wrapped in lines (`base64 .env` at 76 columns, openssl and PEM at 64, with `\n` or
//! `\r\n`) and long base64 lines: found by one pass over the line ends ([`blocks`]), each such
//! block is decoded and searched like any text (stored values and rules), and what is found there
//! is replaced in the input by the base64 characters that carry its bits (line breaks inside
//! included). Lines of a block but its last have one width, a multiple of 4 of at least
//! [`MIN_WIDTH`], so each line starts a 4-character group; streaming holds a block that runs to
//! the end of the input from the start of a line.
//!
//! Streaming (`more == true`): a match that starts where every pattern would still fit in the input
//! is final; from the first position whose rest is a proper prefix of a pattern (at most
//! `longest − 1` bytes from the end), the input is kept back for the next call. A rule token that
//! runs to the end of the input is kept back too, up to [`crate::rules::MAX_TOKEN`] bytes (a PEM
//! block up to [`crate::rules::MAX_PEM`]); past that the part seen is redacted as it is.

use std::collections::HashSet;

use aho_corasick::{
    AhoCorasick, AhoCorasickBuilder, Anchored, Input, MatchKind, Span, StartKind, packed,
};
use hands_core::redact::Redactor;

use crate::forms;
use crate::rules::{RULES, Verdict};

/// Bytes of a sampled window.
const GRAM: usize = 4;
/// Distance between samples: a pattern of [`forms::MIN_FORM`] bytes starting anywhere covers one.
const STRIDE: usize = forms::MIN_FORM - GRAM + 1;
/// The bit set has `1 << BITS` bits (256 KiB: stays in the cache).
const BITS: u32 = 21;
/// Samples tested together, without a branch (their loads overlap).
const BLOCK: usize = 8;
/// Bytes a block of samples reads.
const BLOCK_SPAN: usize = (BLOCK - 1) * STRIDE + GRAM;

/// The redactor built from the stored values (see the module docs).
#[derive(Debug)]
pub struct Engine {
    /// Every stored form, matched anchored where the filter says one may start.
    stored: AhoCorasick,
    /// The index in `replacements` of each stored form.
    owner: Vec<usize>,
    /// `[secret:NAME]` of each stored value.
    replacements: Vec<Vec<u8>>,
    /// Hashes of the windows a stored form can be sampled at.
    filter: Vec<u64>,
    /// Hashes of every stored form's first 8 bytes: checked at each possible start around a
    /// sample the first filter let through, before the automaton runs.
    starts: Vec<u64>,
    /// The rules' anchors.
    anchors: Anchors,
    /// The rules (indexes into [`RULES`]) of each anchor.
    anchored: Vec<Vec<usize>>,
    /// Every pattern, sorted: a binary search tells whether a tail of the input could start one.
    sorted: Vec<Vec<u8>>,
    /// Hashes of the first 1 to 8 bytes of every pattern: most tails are no pattern's start, and
    /// are told so without the search.
    opens: Vec<u64>,
    longest: usize,
    /// Every stored form with the index of its replacement, sorted: where a producer cut a
    /// value short, a binary search tells whether the text before the cut starts one.
    cuts: Vec<(Vec<u8>, usize)>,
}

/// The searcher of the rules' anchors: Teddy where the processor has it, else an automaton.
#[derive(Debug)]
enum Anchors {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

impl Anchors {
    /// The first anchor starting at `from` or later: `(start, anchor)`.
    fn find(&self, input: &[u8], from: usize) -> Option<(usize, usize)> {
        let span = Span { start: from, end: input.len() };
        let found = match self {
            Anchors::Packed(searcher) => searcher.find_in(input, span),
            Anchors::Automaton(automaton) => automaton.find(Input::new(input).span(span)),
        };
        found.map(|m| (m.start(), m.pattern().as_usize()))
    }
}

/// Lines of base64 this wide or wider are decoded and searched.
const MIN_WIDTH: usize = 32;
/// Lines wider than this are not taken for wrapped base64.
const MAX_WIDTH: usize = 1024;

/// True for the bytes of standard and URL-safe base64 and its padding.
const fn b64_table() -> [u8; 256] {
    let mut t = [255u8; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'+' as usize] = 62;
    t[b'-' as usize] = 62;
    t[b'/' as usize] = 63;
    t[b'_' as usize] = 63;
    t[b'=' as usize] = 64;
    t
}
const B64: [u8; 256] = b64_table();

fn all_b64(line: &[u8]) -> bool {
    line.iter().all(|&b| B64[b as usize] != 255)
}

/// A block of base64: its lines (start and length in the input; all but the last `width` long).
#[derive(Debug)]
struct Block {
    lines: Vec<(usize, usize)>,
    width: usize,
    /// It reaches the end of the input: more lines may follow.
    open: bool,
}

impl Block {
    fn joined(&self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.lines.len() * self.width);
        for &(start, len) in &self.lines {
            out.extend_from_slice(&input[start..start + len]);
        }
        out
    }

    /// The input offset of character `c` of the joined text.
    fn offset(&self, c: usize) -> usize {
        let (line, col) = (c / self.width, c % self.width);
        match self.lines.get(line) {
            Some(&(start, len)) => start + col.min(len),
            None => self.lines.last().map_or(0, |&(start, len)| start + len),
        }
    }

    /// The input offset of the start of the line holding character `c`.
    fn line_start(&self, c: usize) -> usize {
        let line = (c / self.width).min(self.lines.len().saturating_sub(1));
        self.lines.get(line).map_or(0, |&(start, _)| start)
    }
}

/// The base64 blocks of `input`: runs of lines of one width (a multiple of 4, at least
/// [`MIN_WIDTH`]) with a last line as wide or narrower, and single base64 lines of at least
/// [`MIN_WIDTH`]. Lines end in `\n` or `\r\n`; the input's last line may be unterminated (and
/// when `more`, such a line of base64 is a block however short: the next input may go on with it).
fn blocks(input: &[u8], more: bool) -> Vec<Block> {
    let mut found = Vec::new();
    // A line of MIN_WIDTH base64 characters or more holds an aligned window of 16 of them: test
    // the windows 8 bytes at a time (no byte below `+`, none above 0x7f), then the ones that pass
    // byte by byte, and only then look at the lines around.
    const ONES: u128 = u128::from_le_bytes([1; 16]);
    const HIGH: u128 = u128::from_le_bytes([0x80; 16]);
    let maybe = |at: usize| {
        let Some(Ok(bytes)) = input.get(at..at + 16).map(<[u8; 16]>::try_from) else {
            return false;
        };
        let x = u128::from_le_bytes(bytes);
        x & HIGH == 0 && x.wrapping_sub(ONES * u128::from(b'+')) & !x & HIGH == 0
    };
    let mut window = 0;
    let mut covered = 0;
    while window + 16 <= input.len() {
        if !maybe(window) || !all_b64(&input[window..window + 16]) {
            window += 16;
            continue;
        }
        let mut start = window;
        while start > 0 && B64[input[start - 1] as usize] != 255 {
            start -= 1;
        }
        let end = match block_from(input, start, &mut found) {
            Some(end) => {
                covered = end;
                end
            }
            // Not a line of base64: go on after this run.
            None => (window..input.len())
                .find(|&i| B64[input[i] as usize] == 255)
                .unwrap_or(input.len()),
        };
        window = end.div_ceil(16).max(window / 16 + 1) * 16;
    }
    // The input's unterminated last line, when more follows: the next input may go on with it.
    let last = memchr::memrchr(b'\n', input).map_or(0, |nl| nl + 1);
    if more && last < input.len() && last >= covered {
        let len = input.len() - last;
        let line = &input[last..];
        if len <= MAX_WIDTH && all_b64(line.strip_suffix(b"\r").unwrap_or(line)) {
            found.push(Block { lines: vec![(last, len)], width: len, open: true });
        }
    }
    found
}

/// The block whose first line starts at `start` (pushed onto `found`), and the offset after it;
/// `None` when no line of base64 of at least [`MIN_WIDTH`] starts there.
fn block_from(input: &[u8], start: usize, found: &mut Vec<Block>) -> Option<usize> {
    if start > 0 && input[start - 1] != b'\n' {
        return None;
    }
    // (start, length without the line end, whether a `\n` ends it, the offset after it)
    let line_at = |from: usize| -> Option<(usize, usize, bool, usize)> {
        if from >= input.len() {
            return None;
        }
        let (end, terminated) = memchr::memchr(b'\n', &input[from..])
            .map_or((input.len(), false), |n| (from + n, true));
        let len = end - from - usize::from(input[from..end].last() == Some(&b'\r'));
        Some((from, len, terminated, if terminated { end + 1 } else { end }))
    };
    let (first, width, terminated, mut after) = line_at(start)?;
    if !(MIN_WIDTH..=MAX_WIDTH).contains(&width) || !all_b64(&input[first..first + width]) {
        return None;
    }
    let mut block = Block { lines: vec![(first, width)], width, open: !terminated };
    if terminated && width % 4 == 0 {
        loop {
            let Some((line, len, terminated, next)) = line_at(after) else {
                // The input ends after a whole line: the next may go on.
                block.open = true;
                break;
            };
            if len == 0 || len > width || !all_b64(&input[line..line + len]) {
                break;
            }
            block.lines.push((line, len));
            after = next;
            if len < width || !terminated {
                block.open = !terminated || len == width;
                break;
            }
        }
    }
    found.push(block);
    Some(after)
}

/// The bytes of `chars` (base64, standard or URL-safe), as far as whole groups go; padding ends it.
fn decode(chars: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(chars.len() / 4 * 3);
    for group in chars.chunks(4) {
        let v: Vec<u8> = group.iter().map(|&b| B64[b as usize]).take_while(|&v| v < 64).collect();
        let bits = v.iter().fold(0u32, |acc, &x| acc << 6 | u32::from(x)) << (6 * (4 - v.len()));
        let bytes = bits.to_be_bytes();
        let whole = match v.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => 0,
        };
        out.extend_from_slice(&bytes[1..1 + whole]);
        if v.len() < 4 {
            break;
        }
    }
    out
}

/// A replacement found in a decoded block: its span in the input.
#[derive(Debug, Clone)]
struct Extra {
    start: usize,
    end: usize,
    with: Vec<u8>,
}

/// A step of the scan.
enum Found {
    /// Replace `start..end` with this text.
    Replace { start: usize, end: usize, with: Vec<u8> },
    /// Stop: keep back from `start`.
    Hold(usize),
}

fn gram_hash(gram: [u8; GRAM]) -> usize {
    (u32::from_le_bytes(gram).wrapping_mul(0x9E37_79B1) >> (32 - BITS)) as usize
}

fn start_hash(head: [u8; forms::MIN_FORM]) -> usize {
    (u64::from_le_bytes(head).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BITS)) as usize
}

fn head_at(input: &[u8], at: usize) -> Option<[u8; forms::MIN_FORM]> {
    input.get(at..at + forms::MIN_FORM)?.try_into().ok()
}

/// The hash of the first (at most 8) bytes of `bytes`, and of how many they are.
fn open_hash(bytes: &[u8]) -> usize {
    let k = bytes.len().min(8);
    let mut word = [0u8; 8];
    word[..k].copy_from_slice(&bytes[..k]);
    let key = u64::from_le_bytes(word) ^ ((k as u64) << 59);
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BITS)) as usize
}

fn set(set: &mut [u64], bit: usize) {
    set[bit / 64] |= 1 << (bit % 64);
}

fn has(set: &[u64], bit: usize) -> bool {
    set[bit / 64] & (1 << (bit % 64)) != 0
}

fn gram_at(input: &[u8], at: usize) -> Option<[u8; GRAM]> {
    input.get(at..at + GRAM)?.try_into().ok()
}

impl Engine {
    /// An engine for `secrets` (`(NAME, value)`, every scope); values shorter than 8 bytes are
    /// skipped (the store refuses them). Fails only when an automaton outgrows its limits
    /// (millions of patterns).
    pub fn new<'a>(
        secrets: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, aho_corasick::BuildError> {
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let mut stored: Vec<Vec<u8>> = Vec::new();
        let mut owner = Vec::new();
        let mut replacements = Vec::new();
        for (name, value) in secrets {
            if value.len() < forms::MIN_FORM {
                continue;
            }
            let index = replacements.len();
            replacements.push(format!("[secret:{name}]").into_bytes());
            for form in forms::of(value) {
                // The same form under two names (one value stored twice): the first wins.
                if seen.insert(form.clone()) {
                    stored.push(form);
                    owner.push(index);
                }
            }
        }
        let mut filter = vec![0u64; (1 << BITS) / 64];
        let mut starts = vec![0u64; (1 << BITS) / 64];
        for form in &stored {
            for offset in 0..STRIDE {
                if let Some(gram) = gram_at(form, offset) {
                    set(&mut filter, gram_hash(gram));
                }
            }
            if let Some(head) = head_at(form, 0) {
                let bit = start_hash(head);
                starts[bit / 64] |= 1 << (bit % 64);
            }
        }
        let prefixes: Vec<&str> = RULES.iter().map(|r| r.prefix).collect();
        let mut anchor_texts: Vec<&str> = Vec::new();
        let mut anchored: Vec<Vec<usize>> = Vec::new();
        for (index, rule) in RULES.iter().enumerate() {
            let anchor = &rule.prefix[rule.anchor..];
            match anchor_texts.iter().position(|a| *a == anchor) {
                Some(at) => anchored[at].push(index),
                None => {
                    anchor_texts.push(anchor);
                    anchored.push(vec![index]);
                }
            }
        }
        let anchors = match packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(&anchor_texts)
            .build()
        {
            Some(searcher) => Anchors::Packed(searcher),
            None => Anchors::Automaton(AhoCorasick::new(&anchor_texts)?),
        };
        let mut cuts: Vec<(Vec<u8>, usize)> =
            stored.iter().cloned().zip(owner.iter().copied()).collect();
        cuts.sort_unstable();
        let mut sorted = stored.clone();
        sorted.extend(prefixes.iter().map(|p| p.as_bytes().to_vec()));
        sorted.sort_unstable();
        sorted.dedup();
        let longest = sorted.iter().map(Vec::len).max().unwrap_or(0);
        let mut opens = vec![0u64; (1 << BITS) / 64];
        for pattern in &sorted {
            for k in 1..=pattern.len().min(8) {
                set(&mut opens, open_hash(&pattern[..k]));
            }
        }
        let stored = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .start_kind(StartKind::Anchored)
            .build(&stored)?;
        Ok(Self {
            stored,
            owner,
            replacements,
            filter,
            starts,
            anchors,
            anchored,
            sorted,
            opens,
            longest,
            cuts,
        })
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
                if !has(&self.opens, open_hash(tail)) {
                    return false;
                }
                // The patterns that start with `tail` follow it in the sorted list: the first one
                // longer than it tells.
                let at = self.sorted.partition_point(|pat| pat.as_slice() <= tail);
                self.sorted.get(at).is_some_and(|pat| pat.starts_with(tail))
            })
            .unwrap_or(input.len())
    }

    /// Which samples of the block at `sample` (`BLOCK` samples, `STRIDE` apart) may be a stored
    /// form's, a bit each; all of them when the block runs past the input.
    fn block_hits(&self, input: &[u8], sample: usize) -> u32 {
        const ALL: u32 = (1 << BLOCK) - 1;
        let Some(window) = input.get(sample..sample + BLOCK_SPAN) else { return ALL };
        let Ok(window) = <&[u8; BLOCK_SPAN]>::try_from(window) else { return ALL };
        let mut hits = 0;
        for i in 0..BLOCK {
            let at = i * STRIDE;
            let bit = gram_hash([window[at], window[at + 1], window[at + 2], window[at + 3]]);
            hits |= (((self.filter[bit / 64] >> (bit % 64)) & 1) as u32) << i;
        }
        hits
    }

    /// The leftmost stored form starting in `from..until`: `(start, end, owner)`.
    fn next_stored(
        &self,
        input: &[u8],
        from: usize,
        until: usize,
    ) -> Option<(usize, usize, usize)> {
        // Samples at `t < end` (and whole: `t + GRAM <= len`).
        let end = (until + STRIDE - 1).min((input.len() + 1).saturating_sub(GRAM));
        let hit = |t: usize| gram_at(input, t).is_some_and(|g| has(&self.filter, gram_hash(g)));
        let mut sample = from;
        // Most text has no hit: a block of samples a branch, then only the samples that hit.
        while sample + (BLOCK - 1) * STRIDE < end {
            let mut hits = self.block_hits(input, sample);
            while hits != 0 {
                let t = sample + hits.trailing_zeros() as usize * STRIDE;
                if let Some(found) = self.stored_around(input, t, from, until) {
                    return Some(found);
                }
                hits &= hits - 1;
            }
            sample += BLOCK * STRIDE;
        }
        while sample < end {
            if hit(sample)
                && let Some(found) = self.stored_around(input, sample, from, until)
            {
                return Some(found);
            }
            sample += STRIDE;
        }
        None
    }

    /// The leftmost stored form starting in `from..until` that may be sampled at `sample` (it
    /// starts at most `STRIDE − 1` bytes before): `(start, end, owner)`.
    fn stored_around(
        &self,
        input: &[u8],
        sample: usize,
        from: usize,
        until: usize,
    ) -> Option<(usize, usize, usize)> {
        let first = sample.saturating_sub(STRIDE - 1).max(from);
        for start in first..=sample.min(until.saturating_sub(1)) {
            if !head_at(input, start).is_some_and(|head| has(&self.starts, start_hash(head))) {
                continue;
            }
            let anchored = Input::new(input).span(start..input.len()).anchored(Anchored::Yes);
            if let Some(found) = self.stored.find(anchored) {
                return Some((start, found.end(), self.owner[found.pattern().as_usize()]));
            }
        }
        None
    }

    /// Where a rule's prefix starts in `input` before `until`: `(start, rule)`, sorted by start
    /// (at most one prefix starts at a place: none is a prefix of another).
    fn rule_starts(&self, input: &[u8], until: usize) -> Vec<(usize, usize)> {
        let max_anchor = RULES.iter().map(|r| r.anchor).max().unwrap_or(0);
        let mut found = Vec::new();
        let mut from = 0;
        // Every anchor, overlapping ones too: the search goes on one byte after each.
        while let Some((at, anchor)) = self.anchors.find(input, from) {
            for &index in &self.anchored[anchor] {
                let rule = &RULES[index];
                let Some(start) = at.checked_sub(rule.anchor) else { continue };
                if start < until && input[start..].starts_with(rule.prefix.as_bytes()) {
                    found.push((start, index));
                }
            }
            if at >= until + max_anchor {
                break;
            }
            from = at + 1;
        }
        found.sort_unstable();
        found
    }

    /// The next thing to do in `input[from..hold]`; `rules` from [`Engine::rule_starts`].
    fn next(
        &self,
        input: &[u8],
        from: usize,
        hold: usize,
        more: bool,
        rules: &[(usize, usize)],
    ) -> Option<Found> {
        let mut at = from;
        let mut next_rule = rules.partition_point(|&(start, _)| start < at);
        while at < hold {
            let rule = rules.get(next_rule).copied().filter(|&(start, _)| start < hold);
            // A stored form up to where the rule starts (it wins a tie).
            let until = rule.map_or(hold, |(start, _)| start + 1);
            if let Some((start, end, owner)) = self.next_stored(input, at, until) {
                return Some(Found::Replace { start, end, with: self.replacements[owner].clone() });
            }
            let (start, index) = rule?;
            let rule = &RULES[index];
            match rule.check(input, start, more) {
                Verdict::Key(end) => {
                    let with = format!("[redacted:{}]", rule.name).into_bytes();
                    return Some(Found::Replace { start, end, with });
                }
                Verdict::Value(from, end) => {
                    let with = format!("[redacted:{}]", rule.name).into_bytes();
                    return Some(Found::Replace { start: from, end, with });
                }
                Verdict::Wait => return Some(Found::Hold(start)),
                Verdict::No => {
                    at = start + 1;
                    next_rule += 1;
                }
            }
        }
        None
    }
}

impl Engine {
    /// What the decoded base64 blocks of `input` hold, as input spans sorted by start, and where
    /// to hold the input back from (`more`: a block that runs to the end may go on).
    fn block_finds(&self, input: &[u8], more: bool) -> (Vec<Extra>, usize) {
        let mut extras = Vec::new();
        let mut hold = input.len();
        for block in blocks(input, more) {
            let joined = block.joined(input);
            let decoded = decode(&joined);
            let open = more && block.open;
            let mut dec_hold = if open { self.open_tail(&decoded) } else { decoded.len() };
            let rules = self.rule_starts(&decoded, dec_hold);
            let mut done = 0;
            let mut found_here: Vec<(usize, Extra)> = Vec::new();
            while let Some(found) = self.next(&decoded, done, dec_hold, open, &rules) {
                match found {
                    Found::Replace { start, end, with } => {
                        // The characters that carry bits of `start..end`.
                        let first = start * 8 / 6;
                        let last = (end * 8).div_ceil(6).min(joined.len()).max(first + 1);
                        let span_start = block.offset(first);
                        let span_end = block.offset(last - 1) + 1;
                        found_here.push((first, Extra { start: span_start, end: span_end, with }));
                        done = end.max(start + 1);
                    }
                    Found::Hold(start) => {
                        dec_hold = start;
                        break;
                    }
                }
            }
            if open {
                // From the line that holds the first character not decided on (whole groups
                // only: the last partial one goes on in the next line), and from the line of a
                // find that runs past that: the next input starts a line.
                let undecided = (dec_hold * 8 / 6).min(joined.len() / 4 * 4);
                let mut from = block.line_start(undecided);
                while let Some((first, _)) =
                    found_here.iter().find(|(_, e)| e.start < from && e.end > from)
                {
                    from = block.line_start(*first);
                }
                found_here.retain(|(_, e)| e.end <= from);
                hold = hold.min(from);
            }
            extras.extend(found_here.into_iter().map(|(_, e)| e));
        }
        extras.retain(|e| e.end <= hold);
        extras.sort_by_key(|e| e.start);
        (extras, hold)
    }

    /// Every replacement in `input` in order (the plain scan and the decoded blocks merged), up
    /// to where the input is held back; returns that place.
    fn scan(&self, input: &[u8], more: bool, mut emit: impl FnMut(usize, usize, Vec<u8>)) -> usize {
        let (extras, block_hold) = self.block_finds(input, more);
        let hold = if more { self.open_tail(input).min(block_hold) } else { input.len() };
        let rules = self.rule_starts(input, hold);
        let mut done = 0;
        let mut next_extra = 0;
        loop {
            while extras.get(next_extra).is_some_and(|e| e.start < done) {
                next_extra += 1;
            }
            let extra = extras.get(next_extra).filter(|e| e.start < hold);
            let limit = extra.map_or(hold, |e| e.start);
            match self.next(input, done, limit, more && extra.is_none(), &rules) {
                Some(Found::Replace { start, end, with }) => {
                    emit(start, end, with);
                    done = end;
                }
                Some(Found::Hold(start)) => return start,
                None => match extra {
                    Some(e) => {
                        emit(e.start, e.end, e.with.clone());
                        done = e.end;
                    }
                    None => return hold.max(done),
                },
            }
        }
    }
}

/// A secret found in a text by [`Engine::find_all`]: where it is and what it is, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Its first byte's offset in the input.
    pub start: usize,
    /// The offset just past it.
    pub end: usize,
    /// The stored secret's name, or the rule's (`stripe_key`).
    pub name: String,
    /// True for a stored secret's value (or one of its forms), false for a key shape.
    pub stored: bool,
}

impl Engine {
    /// Every stored value and key shape in `input`, in order, as [`Redactor::redact`] would
    /// replace them (for scanners that report where secrets are).
    pub fn find_all(&self, input: &[u8]) -> Vec<Hit> {
        let mut found = Vec::new();
        self.scan(input, false, |start, end, with| {
            let label = String::from_utf8_lossy(&with);
            let (stored, name) = match label.strip_prefix("[secret:") {
                Some(rest) => (true, rest.trim_end_matches(']')),
                None => (false, label.trim_start_matches("[redacted:").trim_end_matches(']')),
            };
            found.push(Hit { start, end, name: name.to_owned(), stored });
        });
        found
    }
}

impl Redactor for Engine {
    fn redact(&self, input: &[u8], more: bool, out: &mut Vec<u8>) -> usize {
        let mut done = 0;
        let end = self.scan(input, more, |start, end, with| {
            out.extend_from_slice(&input[done..start]);
            out.extend_from_slice(&with);
            done = end;
        });
        let end = end.max(done);
        out.extend_from_slice(&input[done..end]);
        end
    }

    fn finds(&self, input: &[u8]) -> bool {
        let rules = self.rule_starts(input, input.len());
        self.next(input, 0, input.len(), false, &rules).is_some()
            || !self.block_finds(input, false).0.is_empty()
    }

    fn cut(&self, before: &[u8]) -> Option<(usize, Vec<u8>)> {
        crate::cut::cut(&self.cuts, &self.replacements, before)
    }
}
