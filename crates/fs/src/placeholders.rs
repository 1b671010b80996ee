//! The `.env` round trip: a model sees `[secret:NAME]` where a stored secret's value is (the
//! redaction step hides it), so what it writes back holds the placeholder. In a `.env*` file
//! (`.env`, `.env.local`, `.env.production`, …) write_file and edit_file turn each placeholder back
//! into the value granted to the project, so that editing `.env` keeps its keys. Anywhere else a
//! placeholder in new text is refused: a key is read from the environment, never copied into code.

use std::borrow::Cow;
use std::path::Path;

use hands_core::ToolError;
use hands_core::env::ChildEnv;

use crate::workspace::RelPath;

const OPEN: &str = "[secret:";

/// True for a file whose name starts with `.env`.
pub(crate) fn is_env_file(path: &RelPath) -> bool {
    path.file_name().is_some_and(|name| name.as_encoded_bytes().starts_with(b".env"))
}

/// `text` (the argument `field`) with its placeholders replaced by the values granted to the
/// project at `root`; refused in a file other than `.env*` unless `anywhere` (an old_string only
/// finds text, it never copies a key into the file).
pub(crate) fn resolve<'t>(
    root: &Path,
    path: &RelPath,
    field: &str,
    text: &'t str,
    anywhere: bool,
) -> Result<Cow<'t, str>, ToolError> {
    let names = names(text);
    let Some(first) = names.first() else { return Ok(Cow::Borrowed(text)) };
    if !anywhere && !is_env_file(path) {
        return Err(ToolError::model(format!(
            "`{field}` holds [secret:{first}], the placeholder of a stored secret; its value is \
             written only into .env files, never into {}. Nothing was written. Read the secret \
             from the environment instead: process.env.{first} (JavaScript), \
             os.environ[\"{first}\"] (Python), std::env::var(\"{first}\") (Rust), $\"{first}\" in a \
             shell — processes of this project get it as an environment variable.",
            path.display()
        )));
    }
    let granted = ChildEnv::granted(root);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        let after = &rest[at + OPEN.len()..];
        match placeholder_name(after) {
            Some(name) => {
                let Some((_, value)) = granted.iter().find(|(n, _)| n == name) else {
                    let known: Vec<&str> = granted.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(ToolError::model(format!(
                        "`{field}` holds [secret:{name}], but no secret {name} is granted to this \
                         project ({}); nothing was written. Ask the user to store it (the secrets \
                         tool, or `hands secrets set {name} --project .`), or use the name of one \
                         that is granted.",
                        if known.is_empty() {
                            "none is".to_owned()
                        } else {
                            format!("granted: {}", known.join(", "))
                        }
                    )));
                };
                out.push_str(&rest[..at]);
                out.push_str(value);
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push_str(&rest[..at + OPEN.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

/// The names of the placeholders in `text`, in order.
fn names(text: &str) -> Vec<&str> {
    text.match_indices(OPEN)
        .filter_map(|(at, _)| placeholder_name(&text[at + OPEN.len()..]))
        .collect()
}

/// The secret name at the start of `after` (what follows `[secret:`) when a `]` closes it: the
/// store's names, `^[A-Z][A-Z0-9_]{1,63}$`.
fn placeholder_name(after: &str) -> Option<&str> {
    let end = after.find(']')?;
    let name = &after[..end];
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && (2..=64).contains(&name.len())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    ok.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_names_follow_the_store_rules() {
        assert_eq!(
            names("a [secret:API_KEY] b [secret:x] [secret:B] [secret:OK_2]"),
            ["API_KEY", "OK_2"]
        );
        assert_eq!(placeholder_name("NO_CLOSE"), None);
    }

    #[test]
    fn env_files_are_dot_env_and_its_variants() {
        let rel = |p: &str| RelPath::default().join(p);
        assert!(is_env_file(&rel(".env")));
        assert!(is_env_file(&rel("app/.env.production")));
        assert!(!is_env_file(&rel("env.js")));
        assert!(!is_env_file(&rel("config/.envrc.d/x.js")));
    }
}
