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
    /// A value assigned to the prefix (a setting's name): an optional closing quote, blanks,
    /// `=` or `:` (unless the prefix ends with one), blanks, an optional opening quote, then
    /// `min` to `max` bytes of `class` (exactly `min` when `exact`). Only the value is replaced;
    /// a reference to a variable (`${NPM_TOKEN}`) is not a value.
    Assigned { min: usize, max: usize, exact: bool, class: Class },
    /// A `.netrc` entry: `machine HOST` then `login`, `account` or `port` pairs, up to a
    /// `password TOKEN` (after a login, or for a host name with a dot); only the token is
    /// replaced.
    Netrc,
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
    /// `[A-Za-z0-9+/]`: standard base64, as an AWS secret key is written.
    Base64,
    /// Anything but blanks, line ends and quotes.
    Value,
}

impl Class {
    fn has(self, b: u8) -> bool {
        match self {
            Class::Alnum => b.is_ascii_alphanumeric(),
            Class::Upper => b.is_ascii_uppercase() || b.is_ascii_digit(),
            Class::Word => b.is_ascii_alphanumeric() || b == b'_',
            Class::Dashed => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
            Class::Base64 => b.is_ascii_alphanumeric() || b == b'+' || b == b'/',
            Class::Value => !b.is_ascii_whitespace() && b != b'"' && b != b'\'',
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

const fn assigned(
    prefix: &'static str,
    anchor: usize,
    name: &'static str,
    (min, max, exact): (usize, usize, bool),
    class: Class,
) -> Rule {
    Rule { prefix, name, anchor, shape: Shape::Assigned { min, max, exact, class } }
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
    // npm's access tokens; `.npmrc`'s and Yarn's settings, whatever the token's shape.
    token("npm_", 0, "npm_token", 36, Class::Alnum),
    assigned("_authToken=", 0, "npm_token", (8, MAX_TOKEN, false), Class::Value),
    assigned("_auth=", 0, "npm_token", (8, MAX_TOKEN, false), Class::Value),
    assigned("_password=", 0, "npm_token", (8, MAX_TOKEN, false), Class::Value),
    assigned("npmAuthToken", 3, "npm_token", (8, MAX_TOKEN, false), Class::Value),
    // An AWS secret key: 40 base64 characters after its setting's name (it has no prefix).
    assigned("aws_secret_access_key", 4, "aws_secret_key", (40, 40, true), Class::Base64),
    assigned("AWS_SECRET_ACCESS_KEY", 4, "aws_secret_key", (40, 40, true), Class::Base64),
    Rule { prefix: "machine ", anchor: 0, name: "netrc_password", shape: Shape::Netrc },
];

/// What a rule makes of the text at a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not a key: go on after the prefix's first byte.
    No,
    /// A key ending at this offset of the input.
    Key(usize),
    /// A value from the first offset to the second: the text before it (a setting's name)
    /// stays.
    Value(usize, usize),
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
            Shape::Assigned { min, max, exact, class } => {
                assigned_value(input, start, body, more, (min, max, exact), class)
            }
            Shape::Netrc => netrc(input, start, body, more),
        }
    }
}

/// The verdict when the input ran out at `at` (from a rule found at `start`).
fn ran_out(input: &[u8], start: usize, at: usize, more: bool) -> Verdict {
    if more && at >= input.len() && input.len() - start < MAX_TOKEN {
        Verdict::Wait
    } else {
        Verdict::No
    }
}

fn assigned_value(
    input: &[u8],
    start: usize,
    body: usize,
    more: bool,
    (min, max, exact): (usize, usize, bool),
    class: Class,
) -> Verdict {
    let blank = |b: u8| b == b' ' || b == b'\t';
    let quote = |b: u8| b == b'"' || b == b'\'';
    let mut at = body;
    let prefix_end = input[start..body].last().copied();
    if !matches!(prefix_end, Some(b'=' | b':')) {
        // A name inside quotes (`"npmAuthToken": …`), then blanks, then `=` or `:`.
        if input.get(at).is_some_and(|&b| quote(b)) {
            at += 1;
        }
        at = run_of(input, at, blank, 64);
        match input.get(at) {
            Some(b'=' | b':') => at += 1,
            Some(_) => return Verdict::No,
            None => return ran_out(input, start, at, more),
        }
    }
    at = run_of(input, at, blank, 64);
    if input.get(at).is_some_and(|&b| quote(b)) {
        at += 1;
    }
    if at >= input.len() {
        return ran_out(input, start, at, more);
    }
    if input[at..].starts_with(b"${") {
        return Verdict::No;
    }
    let end = run(input, at, class, max + 1);
    if end == input.len() && more && end - at <= max && input.len() - start < MAX_TOKEN {
        return Verdict::Wait;
    }
    let len = end - at;
    let fits = if exact { len == min } else { len >= min };
    if fits { Verdict::Value(at, end.min(at + max)) } else { Verdict::No }
}

fn netrc(input: &[u8], start: usize, body: usize, more: bool) -> Verdict {
    let space = |b: u8| b.is_ascii_whitespace();
    let word = |b: u8| !b.is_ascii_whitespace();
    // `machine HOST`, then pairs.
    let mut at = body;
    let mut pairs = 0;
    // Prose says "machine … password" too: a host name with a dot, or a login first, tells.
    let mut netrc_like = false;
    loop {
        // The host (first), or a pair's value.
        at = run_of(input, at, space, 256);
        let token_end = run_of(input, at, word, 1024);
        if token_end == at || token_end == input.len() {
            return ran_out(input, start, token_end, more);
        }
        if pairs == 0 {
            netrc_like = input[at..token_end].contains(&b'.');
        }
        at = token_end;
        if pairs == 4 {
            return Verdict::No;
        }
        pairs += 1;
        at = run_of(input, at, space, 256);
        let key_end = run_of(input, at, word, 16);
        if key_end == input.len() {
            return ran_out(input, start, key_end, more);
        }
        let key = &input[at..key_end];
        at = key_end;
        if key == b"password" && netrc_like {
            let from = run_of(input, at, space, 256);
            let end = run_of(input, from, word, MAX_TOKEN);
            if end == input.len() && more && input.len() - start < MAX_TOKEN {
                return Verdict::Wait;
            }
            return if end > from { Verdict::Value(from, end) } else { Verdict::No };
        }
        match key {
            b"login" => netrc_like = true,
            b"account" | b"port" => {}
            _ => return Verdict::No,
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

/// A key shape's token cut short at the end of `before` (see [`crate::cut`]): its prefix, then
/// only bytes of its class up to the end, at least `min_cut` of them. The longest such end, with
/// `[redacted:NAME]`.
pub(crate) fn cut(before: &[u8], min_cut: usize) -> Option<(usize, Vec<u8>)> {
    let window = &before[before.len().saturating_sub(MAX_TOKEN)..];
    let mut best: Option<(usize, &Rule)> = None;
    for rule in RULES {
        let class = match rule.shape {
            Shape::Token { class, .. } | Shape::Exact { class, .. } => class,
            Shape::Pem | Shape::Assigned { .. } | Shape::Netrc => continue,
        };
        let prefix = rule.prefix.as_bytes();
        // The token runs back from the end over bytes of its class; the prefix must end there.
        let token = window.iter().rev().take_while(|b| class.has(**b)).count();
        for taken in (min_cut..=token).rev() {
            let start = window.len() - taken;
            if start >= prefix.len() && &window[start - prefix.len()..start] == prefix {
                let len = taken + prefix.len();
                if best.is_none_or(|(l, _)| len > l) {
                    best = Some((len, rule));
                }
                break;
            }
        }
    }
    best.map(|(len, rule)| (len, format!("[redacted:{}]", rule.name).into_bytes()))
}
