//! Key shapes redacted even when they are not stored: a key pasted into a file or printed by a
//! tool is hidden as `[redacted:RULE]`. Each rule is a literal prefix (found by the engine's
//! automaton with the stored values) and a check of what follows it. Not JWTs: a Supabase anon
//! key is public, and hiding every JWT would hide what the user needs to see.

/// A rule token longer than this is cut: the part seen is redacted as it is.
pub(crate) const MAX_TOKEN: usize = 4096;
/// A PEM private key block longer than this is cut: the part seen is redacted as it is.
pub(crate) const MAX_PEM: usize = 64 * 1024;

/// One key shape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rule {
    /// The literal the token starts with.
    pub prefix: &'static str,
    /// The name in `[redacted:NAME]`.
    pub name: &'static str,
    /// Where in the prefix its anchor starts: the rest of the prefix from here is what the
    /// engine searches for, since it is rarer in ordinary text than the prefix's first bytes
    /// (`sk_`, `---` and `gh` are common; `_live_`, `-BEGIN ` and `b_pat_` are not).
    pub anchor: usize,
    shape: Shape,
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    /// At least `min` bytes of `class` after the prefix.
    Token { min: usize, class: Class },
    /// Exactly `len` bytes of `class` after the prefix, then no more of it.
    Exact { len: usize, class: Class },
    /// A PEM block: `-----BEGIN … PRIVATE KEY-----` to `-----END … PRIVATE KEY-----`.
    Pem,
}

#[derive(Debug, Clone, Copy)]
enum Class {
    /// `[A-Za-z0-9]`
    Alnum,
    /// `[A-Z0-9]`
    Upper,
    /// `[A-Za-z0-9_]`
    Word,
    /// `[A-Za-z0-9_-]`
    Dashed,
}

impl Class {
    fn has(self, b: u8) -> bool {
        match self {
            Class::Alnum => b.is_ascii_alphanumeric(),
            Class::Upper => b.is_ascii_uppercase() || b.is_ascii_digit(),
            Class::Word => b.is_ascii_alphanumeric() || b == b'_',
            Class::Dashed => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
        }
    }
}

const fn token(
    prefix: &'static str,
    anchor: usize,
    name: &'static str,
    min: usize,
    class: Class,
) -> Rule {
    Rule { prefix, name, anchor, shape: Shape::Token { min, class } }
}

/// Every rule.
pub(crate) const RULES: &[Rule] = &[
    token("sk_live_", 2, "stripe_key", 16, Class::Alnum),
    token("rk_live_", 2, "stripe_key", 16, Class::Alnum),
    // A test key is still a key.
    token("sk_test_", 1, "stripe_key", 16, Class::Alnum),
    token("rk_test_", 1, "stripe_key", 16, Class::Alnum),
    token("sk-ant-", 1, "anthropic_key", 20, Class::Dashed),
    token("sk-proj-", 1, "openai_key", 20, Class::Dashed),
    token("ghp_", 0, "github_token", 30, Class::Alnum),
    token("github_pat_", 5, "github_token", 30, Class::Word),
    Rule {
        prefix: "AKIA",
        anchor: 0,
        name: "aws_access_key",
        shape: Shape::Exact { len: 16, class: Class::Upper },
    },
    Rule { prefix: "-----BEGIN ", anchor: 4, name: "private_key", shape: Shape::Pem },
];

/// What a rule makes of the text at a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not a key: go on after the prefix's first byte.
    No,
    /// A key ending at this offset of the input.
    Key(usize),
    /// Could be a key, but the input ends before it does: wait for more.
    Wait,
}

impl Rule {
    /// The verdict on the text of `input` at `start` (where the prefix was found); `more` when
    /// more input follows.
    pub(crate) fn check(&self, input: &[u8], start: usize, more: bool) -> Verdict {
        // A token starts a word: `task_live_…` or `mask-ant-…` is not a key.
        if !matches!(self.shape, Shape::Pem) && start > 0 && Class::Dashed.has(input[start - 1]) {
            return Verdict::No;
        }
        let body = start + self.prefix.len();
        match self.shape {
            Shape::Token { min, class } => {
                let end = run(input, body, class, MAX_TOKEN);
                if end == input.len() && more && end - start < MAX_TOKEN {
                    Verdict::Wait
                } else if end - body >= min {
                    Verdict::Key(end)
                } else {
                    Verdict::No
                }
            }
            Shape::Exact { len, class } => {
                let end = run(input, body, class, len + 1);
                if end == input.len() && more && end - body <= len {
                    Verdict::Wait
                } else if end - body == len
                    && input.get(end).is_none_or(|b| !b.is_ascii_alphanumeric())
                {
                    Verdict::Key(end)
                } else {
                    Verdict::No
                }
            }
            Shape::Pem => pem(input, start, body, more),
        }
    }
}

/// The end of the run of `class` bytes from `from`, at most `max` bytes long.
fn run(input: &[u8], from: usize, class: Class, max: usize) -> usize {
    run_of(input, from, |b| class.has(b), max)
}

fn pem(input: &[u8], start: usize, body: usize, more: bool) -> Verdict {
    const LABEL: &[u8] = b"PRIVATE KEY";
    const DASHES: &[u8] = b"-----";
    const END: &[u8] = b"-----END ";
    let label = |b: u8| b.is_ascii_uppercase() || b == b' ';
    // The BEGIN line: `[A-Z ]*PRIVATE KEY-----`.
    let header_end = run_of(input, body, label, 64);
    if !input[body..header_end].ends_with(LABEL)
        || input.get(header_end..header_end + DASHES.len()) != Some(DASHES)
    {
        // The input ends inside what could still be such a line.
        let seen = &input[body..];
        let open = seen.len() < 64 + DASHES.len() && seen.iter().all(|&b| label(b) || b == b'-');
        return if more && open { Verdict::Wait } else { Verdict::No };
    }
    let from = header_end + DASHES.len();
    let limit = input.len().min(start + MAX_PEM).max(from);
    if let Some(at) = memchr::memmem::find(&input[from..limit], END) {
        let after = from + at + END.len();
        let label_end = run_of(input, after, label, 64);
        if input[after..label_end].ends_with(LABEL)
            && input.get(label_end..label_end + DASHES.len()) == Some(DASHES)
        {
            return Verdict::Key(label_end + DASHES.len());
        }
        if more && label_end + DASHES.len() > input.len() {
            return Verdict::Wait;
        }
        // An END line of another shape: hide up to it.
        return Verdict::Key(after);
    }
    if more && limit == input.len() && input.len() - start < MAX_PEM {
        return Verdict::Wait;
    }
    // No end in sight, or a block too long: hide what there is.
    Verdict::Key(limit)
}

fn run_of(input: &[u8], from: usize, keep: impl Fn(u8) -> bool, max: usize) -> usize {
    let limit = input.len().min(from + max);
    input[from..limit].iter().position(|&b| !keep(b)).map_or(limit, |n| from + n)
}
