//! Files a workspace hides: never read, listed or searched. A session gets such rules with
//! [`Hidden::install`] before its first file call (reference_project's read-only view of another
//! project hides its `.env*` files, keys and `.git/`); an ordinary session has none.
//!
//! A rule is a glob over one path component's name, so a hidden folder hides everything under
//! it. Reads check the path as given and the path its symlinks resolve to (a link named
//! `notes.txt` that points to `.env` is refused too); walks and listings skip hidden entries
//! before they are read, so a hidden file never appears in a result, not even by name.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use hands_core::Session;

/// Name globs of the files hidden from a view of a project that is not the session's own: its
/// environment files, private keys and certificates, and its git folder.
pub const SECRET_FILES: &[&str] = &[".env*", "*.pem", "*.key", ".git"];

/// A set of hidden names.
#[derive(Debug, Clone)]
pub struct Hidden {
    set: GlobSet,
    patterns: Vec<String>,
}

/// The session's rules, when it has any.
#[derive(Debug, Default)]
pub(crate) struct Slot(pub(crate) Option<Arc<Hidden>>);

impl Hidden {
    /// Hide the names matching any of `patterns` (globs over one name; `*` does not cross `/`;
    /// matched without regard to case, as case-insensitive file systems exist).
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, globset::Error> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let glob = GlobBuilder::new(pattern.as_ref())
                .literal_separator(true)
                .case_insensitive(true)
                .build()?;
            builder.add(glob);
        }
        Ok(Self {
            set: builder.build()?,
            patterns: patterns.iter().map(|p| p.as_ref().to_owned()).collect(),
        })
    }

    /// [`SECRET_FILES`].
    pub fn secret_files() -> Self {
        // The patterns are constants that compile (a unit test proves it); an empty set is the
        // only other outcome, and it cannot happen.
        Self::new(SECRET_FILES).unwrap_or_else(|_| Self { set: GlobSet::empty(), patterns: vec![] })
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// True when the name `name` is hidden.
    pub fn hides_name(&self, name: &OsStr) -> bool {
        self.set.is_match(Path::new(name))
    }

    /// True when any component of `rel` (a path relative to the root) is hidden.
    pub fn hides(&self, rel: &Path) -> bool {
        rel.components().any(|c| self.hides_name(c.as_os_str()))
    }

    /// Hide these names from every file tool called in `session` from now on. Call it before the
    /// session's first file call (its workspace reads the rules when it opens the root).
    pub fn install(self, session: &Session) {
        session.insert_extension(Slot(Some(Arc::new(self))));
    }

    /// The rules of `session`, if it has any.
    pub(crate) fn of(session: &Session) -> Option<Arc<Hidden>> {
        session.extension::<Slot>().0.clone()
    }

    /// The error for a hidden `path` (as the model wrote it).
    pub(crate) fn refusal(&self, path: &str) -> hands_core::ToolError {
        hands_core::ToolError::model(format!(
            "{path} is hidden here: files named {} (environment files, keys, the git folder) are \
             never read, listed or searched in this workspace. Read another file.",
            self.patterns.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_files_hide_env_keys_and_git_at_any_depth() {
        let hidden = Hidden::secret_files();
        assert_eq!(hidden.patterns().len(), SECRET_FILES.len());
        for path in
            [".env", ".env.local", "a/.ENV.production", "k.pem", "x/y/id.key", ".git/config"]
        {
            assert!(hidden.hides(Path::new(path)), "{path}");
        }
        for path in ["env.ts", "src/main.rs", "a.pem.txt", "keys/readme.md", ".github/ci.yml"] {
            assert!(!hidden.hides(Path::new(path)), "{path}");
        }
    }
}
