//! Checking a package spec before any manager sees it: the name grammar of its ecosystem, then a
//! version, range or tag. Nothing that is not a registry package gets through: no option (a
//! leading `-`), no URL, git, `file:`, `link:`, `workspace:` or alias spec, no path, no tarball.
//!
//! - npm: `name` or `@scope/name` (lower case, at most 214 characters, no leading `.` or `_`),
//!   then `@` and a semver range or a dist-tag;
//! - cargo: a crate name (letters, digits, `-`, `_`, starting with a letter, at most 64), then
//!   `@` and a version requirement;
//! - Python: a PEP 508 name with optional `[extras]`, then version specifiers (`==1.2`,
//!   `>=1,<2`, `~=1.4`); no URL (`name @ https://…`) and no environment marker.

use crate::manager::Ecosystem;

/// A checked spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    /// The spec as the manager gets it.
    pub raw: String,
    /// The package's name as its manifest records it (Python names normalised).
    pub name: String,
}

/// Schemes and protocols that name something other than a registry package.
const NOT_REGISTRY: &[&str] = &[
    "://",
    "git+",
    "git:",
    "github:",
    "gitlab:",
    "bitbucket:",
    "gist:",
    "file:",
    "link:",
    "workspace:",
    "portal:",
    "patch:",
    "npm:",
    "jsr:",
    "exec:",
    "http:",
    "https:",
];

/// Check `raw` for `ecosystem`.
pub(crate) fn check(ecosystem: Ecosystem, raw: &str) -> Result<Spec, String> {
    let shown = raw.escape_debug();
    if raw.trim().is_empty() {
        return Err(
            "a package spec is empty; give a name such as `left-pad` or `left-pad@^1.3`".into()
        );
    }
    if raw.starts_with('-') {
        return Err(format!("`{shown}` starts with `-`: options cannot be passed, only packages"));
    }
    if raw.len() > 300 || raw.chars().any(char::is_control) {
        return Err(format!("`{shown}` is too long or holds control characters"));
    }
    let lower = raw.to_ascii_lowercase();
    if let Some(bad) = NOT_REGISTRY.iter().find(|p| lower.contains(*p)) {
        return Err(format!(
            "`{shown}` is not a registry package (`{bad}`): URLs, git, file, link, workspace and \
             alias specs are refused. Give a package name with an optional version"
        ));
    }
    if raw.starts_with(['.', '/', '~']) || lower.ends_with(".tgz") || lower.ends_with(".tar.gz") {
        return Err(format!("`{shown}` is a path or a tarball, not a registry package"));
    }
    match ecosystem {
        Ecosystem::Js => js(raw),
        Ecosystem::Rust => rust(raw),
        Ecosystem::Python => python(raw),
    }
}

/// Characters of a version, range or tag (npm and cargo): `^1.2.3`, `>=1 <2`, `1.x`, `latest`.
fn version_ok(version: &str) -> bool {
    !version.trim().is_empty()
        && version.len() <= 100
        && version.chars().all(|c| c.is_ascii_alphanumeric() || " .-+^~<>=*|_,".contains(c))
        && !version.trim_start().starts_with('-')
}

fn js(raw: &str) -> Result<Spec, String> {
    // The version starts at the first `@` after the name (a scope's `@` is the first character).
    let split = raw.char_indices().skip(1).find(|(_, c)| *c == '@').map(|(i, _)| i);
    let (name, version) = match split {
        Some(at) => (&raw[..at], Some(&raw[at + 1..])),
        None => (raw, None),
    };
    let part_ok = |part: &str| {
        !part.is_empty()
            && !part.starts_with(['.', '_'])
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._~".contains(c))
    };
    let name_ok = name.len() <= 214
        && match name.strip_prefix('@') {
            Some(scoped) => scoped.split_once('/').is_some_and(|(s, n)| part_ok(s) && part_ok(n)),
            None => part_ok(name),
        };
    if !name_ok {
        return Err(format!(
            "`{name}` is not an npm package name: lower-case letters, digits, `-`, `.`, `_` and \
             `~`, optionally under a scope (`@scope/name`)"
        ));
    }
    if let Some(version) = version
        && !version_ok(version)
    {
        return Err(format!(
            "`{version}` (in `{raw}`) is not a version, range or tag: write `{name}@1.2.3`, \
             `{name}@^1.2` or `{name}@latest`"
        ));
    }
    Ok(Spec { raw: raw.to_owned(), name: name.to_owned() })
}

fn rust(raw: &str) -> Result<Spec, String> {
    let (name, version) = match raw.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (raw, None),
    };
    let name_ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !name_ok {
        return Err(format!(
            "`{name}` is not a crate name: letters, digits, `-` and `_`, starting with a letter"
        ));
    }
    if let Some(version) = version
        && !version_ok(version)
    {
        return Err(format!(
            "`{version}` (in `{raw}`) is not a version requirement: write `{name}@1.2` or \
             `{name}@=1.2.3`"
        ));
    }
    Ok(Spec { raw: raw.to_owned(), name: name.to_owned() })
}

fn python(raw: &str) -> Result<Spec, String> {
    if raw.contains(';') || raw.contains('@') {
        return Err(format!(
            "`{raw}` has an environment marker or a direct reference (`;` or `@`): give a name \
             with version specifiers, such as `requests>=2.31` or `django==5.0.4`"
        ));
    }
    let end =
        raw.find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c))).unwrap_or(raw.len());
    let name = &raw[..end];
    let name_ok = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !name_ok {
        return Err(format!(
            "`{raw}` does not start with a Python package name (letters, digits, `-`, `_`, `.`)"
        ));
    }
    let mut rest = raw[end..].trim_start();
    if let Some(extras) = rest.strip_prefix('[') {
        let Some((inside, after)) = extras.split_once(']') else {
            return Err(format!("`{raw}` opens `[extras]` without closing them"));
        };
        let extras_ok = inside.split(',').all(|e| {
            let e = e.trim();
            !e.is_empty() && e.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        });
        if !extras_ok {
            return Err(format!("`[{inside}]` in `{raw}` is not a list of extras"));
        }
        rest = after.trim_start();
    }
    if !rest.is_empty() {
        let specifiers_ok = rest.split(',').all(|clause| {
            let clause = clause.trim();
            let version = ["===", "==", "!=", "~=", ">=", "<=", ">", "<"]
                .iter()
                .find_map(|op| clause.strip_prefix(op));
            version.is_some_and(|v| {
                let v = v.trim();
                !v.is_empty()
                    && v.chars().all(|c| c.is_ascii_alphanumeric() || ".*+!-_".contains(c))
            })
        });
        if !specifiers_ok {
            return Err(format!(
                "`{rest}` (in `{raw}`) is not a list of version specifiers: write `{name}==1.2.3`, \
                 `{name}>=1.2,<2` or `{name}~=1.4`"
            ));
        }
    }
    Ok(Spec { raw: raw.to_owned(), name: normalize_python(name) })
}

/// A Python package name as indexes compare it: lower case, runs of `-`, `_`, `.` as one `-`.
pub(crate) fn normalize_python(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if "-_.".contains(c) {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_packages_pass() {
        for (eco, raw, name) in [
            (Ecosystem::Js, "left-pad", "left-pad"),
            (Ecosystem::Js, "left-pad@^1.3.0", "left-pad"),
            (Ecosystem::Js, "@types/node@>=20 <21", "@types/node"),
            (Ecosystem::Js, "react@latest", "react"),
            (Ecosystem::Js, "@scope/pkg", "@scope/pkg"),
            (Ecosystem::Rust, "serde", "serde"),
            (Ecosystem::Rust, "tokio@1.40", "tokio"),
            (Ecosystem::Rust, "serde_json@=1.0.100", "serde_json"),
            (Ecosystem::Python, "requests", "requests"),
            (Ecosystem::Python, "Django==5.0.4", "django"),
            (Ecosystem::Python, "uvicorn[standard]>=0.30,<1", "uvicorn"),
            (Ecosystem::Python, "zope.interface~=6.0", "zope-interface"),
        ] {
            let spec = check(eco, raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(spec.name, name, "{raw}");
        }
    }

    #[test]
    fn options_urls_paths_and_bad_names_are_refused() {
        for (eco, raw, says) in [
            (Ecosystem::Js, "--registry=http://evil", "starts with `-`"),
            (Ecosystem::Js, "-D", "starts with `-`"),
            (Ecosystem::Js, "https://example.com/x.tgz", "not a registry package"),
            (Ecosystem::Js, "git+ssh://git@github.com/a/b.git", "not a registry package"),
            (Ecosystem::Js, "github:user/repo", "not a registry package"),
            (Ecosystem::Js, "file:../lib", "not a registry package"),
            (Ecosystem::Js, "foo@file:../lib", "not a registry package"),
            (Ecosystem::Js, "alias@npm:react@18", "not a registry package"),
            (Ecosystem::Js, "x@workspace:*", "not a registry package"),
            (Ecosystem::Js, "../lib", "path or a tarball"),
            (Ecosystem::Js, "./pkg.tgz", "path or a tarball"),
            (Ecosystem::Js, "React", "not an npm package name"),
            (Ecosystem::Js, "user/repo", "not an npm package name"),
            (Ecosystem::Js, "left-pad@$(id)", "not a version"),
            (Ecosystem::Js, "", "empty"),
            (Ecosystem::Rust, "1serde", "not a crate name"),
            (Ecosystem::Rust, "serde/derive", "not a crate name"),
            (Ecosystem::Rust, "serde@`x`", "not a version"),
            (Ecosystem::Python, "pkg @ https://x/y.whl", "not a registry package"),
            (Ecosystem::Python, "pkg; python_version<'3.8'", "environment marker"),
            (Ecosystem::Python, "pkg>=1 && rm", "not a list of version specifiers"),
            (Ecosystem::Python, "-r requirements.txt", "starts with `-`"),
        ] {
            let err = check(eco, raw).expect_err(raw);
            assert!(err.contains(says), "{raw}: {err}");
        }
    }
}
