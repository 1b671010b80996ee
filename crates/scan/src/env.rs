//! Variables a bundler puts into the client: `VITE_*`, `NEXT_PUBLIC_*` and their kin, read from
//! the project's `.env` files (ignored or not: the bundler reads them either way). One holding a
//! secret-shaped value (a key rule, a stored value, a service_role JWT) is in every visitor's
//! download; one whose name says it is secret is suspect. Values are never reported.

use std::path::Path;

use hands_secrets::Engine;

use crate::finding::{Check, Finding, Severity};
use crate::jwt;

/// Prefixes of variables bundlers expose to client code.
pub const PUBLIC_PREFIXES: &[&str] =
    &["VITE_", "NEXT_PUBLIC_", "REACT_APP_", "PUBLIC_", "EXPO_PUBLIC_", "NUXT_PUBLIC_", "GATSBY_"];

/// The `.env` files bundlers read.
const ENV_FILES: &[&str] = &[
    ".env",
    ".env.local",
    ".env.development",
    ".env.development.local",
    ".env.production",
    ".env.production.local",
];

/// Words in a variable's name that say it holds a secret.
const SECRET_WORDS: &[&str] = &["SECRET", "SERVICE_ROLE", "PRIVATE", "PASSWORD"];

/// The findings in the `.env` files of `root`, and the files read.
pub fn scan(root: &Path, engine: &Engine) -> (Vec<Finding>, Vec<String>) {
    let mut findings = Vec::new();
    let mut read = Vec::new();
    for file in ENV_FILES {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        read.push((*file).to_owned());
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((name, value)) = line.split_once('=') else { continue };
            let name = name.trim();
            let Some(prefix) = PUBLIC_PREFIXES.iter().find(|p| name.starts_with(**p)) else {
                continue;
            };
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            if value.is_empty() {
                continue;
            }
            let location = format!("{file}:{}", index + 1);
            let shape = engine
                .find_all(value.as_bytes())
                .first()
                .map(|hit| {
                    if hit.stored {
                        format!("the stored secret {}", hit.name)
                    } else {
                        hit.name.clone()
                    }
                })
                .or_else(|| {
                    (!jwt::service_role_tokens(value.as_bytes()).is_empty())
                        .then(|| "a service_role key".to_owned())
                });
            if let Some(shape) = shape {
                findings.push(Finding {
                    severity: Severity::Critical,
                    check: Check::Bundle,
                    rule: "public_env_secret".into(),
                    location,
                    message: format!(
                        "{name} holds a secret ({shape}), and the {prefix} prefix makes the \
                         bundler put it into client code: drop the prefix, use it on a server \
                         only, and rotate it"
                    ),
                });
            } else if SECRET_WORDS.iter().any(|w| name.contains(w)) {
                findings.push(Finding {
                    severity: Severity::High,
                    check: Check::Bundle,
                    rule: "public_env_name".into(),
                    location,
                    message: format!(
                        "{name} is named like a secret, and the {prefix} prefix makes the \
                         bundler put its value into client code: if it is secret, drop the \
                         prefix and use it on a server only"
                    ),
                });
            }
        }
    }
    (findings, read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_variables_with_secrets_are_critical() {
        let dir = tempfile::tempdir().unwrap();
        let key = format!("sk_live_{}", "Z9y8".repeat(6));
        std::fs::write(
            dir.path().join(".env.local"),
            format!("VITE_STRIPE={key}\nVITE_URL=https://x.example\nNEXT_PUBLIC_SECRET_TOKEN=abc\nSTRIPE_KEY={key}\n"),
        )
        .unwrap();
        let engine = Engine::new(std::iter::empty()).unwrap();
        let (found, read) = scan(dir.path(), &engine);
        assert_eq!(read, [".env.local"]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            (found[0].severity, found[0].location.as_str()),
            (Severity::Critical, ".env.local:1")
        );
        assert!(
            found[0].message.contains("VITE_STRIPE") && found[0].message.contains("stripe_key")
        );
        assert_eq!(
            (found[1].severity, found[1].rule.as_str()),
            (Severity::High, "public_env_name")
        );
        assert!(!format!("{found:?}").contains(&key));
    }
}
