//! Version order for advisories' ranges: SemVer for npm and crates.io (a missing minor or patch
//! is 0, a leading `v` dropped), PEP 440's essentials for PyPI (release numbers, then
//! dev < a < b < rc < final < post).

use std::cmp::Ordering;

use crate::lockfiles::Ecosystem;

/// A version that can be compared with others of its ecosystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    /// npm, crates.io.
    Sem(semver::Version),
    /// PyPI.
    Pep(Pep),
}

/// A PEP 440 version's comparable parts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pep {
    epoch: u64,
    release: Vec<u64>,
    /// 0 dev-only, 1 a, 2 b, 3 rc, 4 final; then its number.
    pre: (u8, u64),
    post: Option<u64>,
    dev: Option<u64>,
}

impl Version {
    /// Parse `text` as a version of `ecosystem`; `None` when it is not one.
    pub fn parse(ecosystem: Ecosystem, text: &str) -> Option<Self> {
        let text = text.trim().trim_start_matches(['v', '=']);
        match ecosystem {
            Ecosystem::PyPi => pep(text).map(Self::Pep),
            _ => sem(text).map(Self::Sem),
        }
    }

    /// The order of two versions (of one ecosystem).
    pub fn cmp_to(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Sem(a), Self::Sem(b)) => a.cmp(b),
            (Self::Pep(a), Self::Pep(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }
}

fn sem(text: &str) -> Option<semver::Version> {
    if let Ok(v) = semver::Version::parse(text) {
        return Some(v);
    }
    // `1.2` or `1`: pad; keep a pre-release or build suffix.
    let split = text.find(['-', '+']).unwrap_or(text.len());
    let (core, rest) = text.split_at(split);
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.parse::<u64>().is_err()) {
        return None;
    }
    let mut padded = parts.join(".");
    for _ in parts.len()..3 {
        padded.push_str(".0");
    }
    semver::Version::parse(&format!("{padded}{rest}")).ok()
}

fn pep(text: &str) -> Option<Pep> {
    let text = text.to_ascii_lowercase();
    let text = text.split('+').next().unwrap_or(&text);
    let (epoch, text) = match text.split_once('!') {
        Some((e, rest)) => (e.parse().ok()?, rest),
        None => (0, text),
    };
    let digits_end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (release, mut rest) = text.split_at(digits_end);
    let mut release: Vec<u64> =
        release.trim_end_matches('.').split('.').map(str::parse).collect::<Result<_, _>>().ok()?;
    while release.len() > 1 && release.last() == Some(&0) {
        release.pop();
    }
    let number = |s: &str| -> (u64, usize) {
        let s2 = s.trim_start_matches(['.', '-', '_']);
        let skipped = s.len() - s2.len();
        let end = s2.find(|c: char| !c.is_ascii_digit()).unwrap_or(s2.len());
        (s2[..end].parse().unwrap_or(0), skipped + end)
    };
    let mut pre = (4, 0);
    let mut post = None;
    let mut dev = None;
    while !rest.is_empty() {
        let r = rest.trim_start_matches(['.', '-', '_']);
        let (kind, tail) = if let Some(t) = r.strip_prefix("rc").or_else(|| r.strip_prefix('c')) {
            (3, t)
        } else if let Some(t) = r.strip_prefix("alpha").or_else(|| r.strip_prefix('a')) {
            (1, t)
        } else if let Some(t) = r.strip_prefix("beta").or_else(|| r.strip_prefix('b')) {
            (2, t)
        } else if let Some(t) = r.strip_prefix("post") {
            (5, t)
        } else if let Some(t) = r.strip_prefix("dev") {
            (6, t)
        } else {
            return None;
        };
        let (n, used) = number(tail);
        match kind {
            5 => post = Some(n),
            6 => dev = Some(n),
            k => pre = (k, n),
        }
        rest = &tail[used..];
    }
    // `1.0.dev1` comes before `1.0a1`.
    if dev.is_some() && pre.0 == 4 && post.is_none() {
        pre = (0, 0);
    }
    Some(Pep { epoch, release, pre, post, dev: dev.or(Some(u64::MAX)) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(eco: Ecosystem, list: &[&str]) {
        for pair in list.windows(2) {
            let (a, b) =
                (Version::parse(eco, pair[0]).unwrap(), Version::parse(eco, pair[1]).unwrap());
            assert_eq!(a.cmp_to(&b), Ordering::Less, "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn semver_and_pep440_orders() {
        order(
            Ecosystem::Npm,
            &["0.0.8", "1.0.0-beta.1", "1.0.0", "1.2", "v1.10.0", "4.17.20", "4.17.21"],
        );
        order(
            Ecosystem::PyPi,
            &[
                "1.0.dev1",
                "1.0a1",
                "1.0b2",
                "1.0rc1",
                "1.0",
                "1.0.post1",
                "1.1",
                "2.19.0",
                "2.20",
                "1!0.1",
            ],
        );
        assert_eq!(
            Version::parse(Ecosystem::PyPi, "1.0.0")
                .unwrap()
                .cmp_to(&Version::parse(Ecosystem::PyPi, "1.0").unwrap()),
            Ordering::Equal
        );
        assert!(Version::parse(Ecosystem::Crates, "not.a.version").is_none());
    }
}
