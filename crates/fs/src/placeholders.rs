//! The `.env` round trip: a model sees `[secret:NAME]` where a stored secret's value is (the
//! redaction step hides it), so what it writes back holds the placeholder. write_file and
//! edit_file turn each placeholder back into the value granted to the project only in an env file
//! that stays on this machine ([`refusal`]), so that editing `.env` keeps its keys. Anywhere else
//! a placeholder in new text is refused: a key is read from the environment, never copied into
//! code, a template that is committed (`.env.example`), or a file a server hands out.
//!
//! An env file stays on this machine when
//! - its name is `.env`, `.env.local`, `.env.<mode>` or `.env.<mode>.local`, where no part is a
//!   template's (`example`, `sample`, `template`, …) or a file type's (`js`, `json`, `sh`, …):
//!   `.envrc`, `.env.example` and `public/.env.js` are not env files;
//! - no folder on its way is one that servers or deploys hand out (`public/`, `static/`, `dist/`,
//!   `build/`, …);
//! - in a git repository (found as git does, from the root upwards, a worktree's or submodule's
//!   `.git` file too): git ignores it (`.gitignore` files from the repository's top down to its
//!   folder, and `.git/info/exclude`, with git's precedence; a file in an ignored folder is ignored
//!   whatever a `!` rule says) and does not track it (a tracked file is committed whatever the
//!   ignore rules say); the user's global excludes are not read, so a file ignored only there is
//!   refused;
//! - outside any git repository: its name is `.env`, `.env.local` or `.env.<mode>.local`
//!   (`.env.production` is committed by convention once the project becomes a repository).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use hands_core::ToolError;
use hands_core::env::ChildEnv;

use crate::workspace::RelPath;

const OPEN: &str = "[secret:";

/// Parts of an env file's name that make it a template, an encrypted copy or a backup: committed,
/// or not meant to hold the value in clear.
const NOT_ENV: &[&str] = &[
    "example",
    "examples",
    "sample",
    "samples",
    "template",
    "templates",
    "tmpl",
    "tpl",
    "dist",
    "default",
    "defaults",
    "schema",
    "skel",
    "stub",
    "orig",
    "bak",
    "backup",
    "old",
    "save",
    "swp",
    "copy",
    "enc",
    "encrypted",
    "gpg",
    "age",
    "asc",
    "vault",
    "sops",
    "d",
    // File types: code, data and documents named after `.env`.
    "js",
    "mjs",
    "cjs",
    "jsx",
    "ts",
    "mts",
    "cts",
    "tsx",
    "json",
    "json5",
    "jsonc",
    "yaml",
    "yml",
    "toml",
    "ini",
    "cfg",
    "conf",
    "xml",
    "html",
    "htm",
    "php",
    "py",
    "rb",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "cmd",
    "go",
    "rs",
    "java",
    "kt",
    "swift",
    "md",
    "txt",
    "vue",
    "svelte",
    "astro",
    "lock",
];

/// Folders whose files a server or a deploy hands out as they are.
const SERVED: &[&str] = &[
    "public",
    "static",
    "dist",
    "build",
    "out",
    "www",
    "wwwroot",
    "htdocs",
    "public_html",
    "_site",
    ".next",
    ".nuxt",
    ".output",
    ".vercel",
    ".netlify",
    ".svelte-kit",
    "storybook-static",
];

/// An env file's kind, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EnvName {
    /// `.env`, `.env.local`, `.env.<mode>.local`: local by every convention.
    Local,
    /// `.env.<mode>`: committed in some conventions (Next.js), local in others.
    Mode,
}

fn env_name(name: &str) -> Option<EnvName> {
    let rest = name.strip_prefix(".env")?;
    if rest.is_empty() {
        return Some(EnvName::Local);
    }
    let parts: Vec<&str> = rest.strip_prefix('.')?.split('.').collect();
    let word = |p: &&str| {
        !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && !NOT_ENV.contains(&p.to_ascii_lowercase().as_str())
    };
    if !parts.iter().all(word) {
        return None;
    }
    Some(if parts.last().is_some_and(|p| p.eq_ignore_ascii_case("local")) {
        EnvName::Local
    } else {
        EnvName::Mode
    })
}

/// Why the file at `path` (beneath `root`) may not get a stored value; `None` when it may (see
/// the module docs).
pub(crate) fn refusal(root: &Path, path: &RelPath) -> Option<String> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let Some(kind) = env_name(name) else {
        return Some(if name.starts_with(".env") {
            format!("{name} is not an env file of the project (a template, a script or code)")
        } else {
            format!("{name} is not an env file")
        });
    };
    let folders = path.parent();
    if let Some(served) = folders.as_path().iter().find_map(|c| {
        let c = c.to_str()?;
        SERVED.iter().any(|s| s.eq_ignore_ascii_case(c)).then_some(c)
    }) {
        return Some(format!(
            "{served}/ is a folder whose files are served or deployed as they are"
        ));
    }
    let file = root.join(path.as_path());
    match file.parent().and_then(git::repository) {
        None if kind == EnvName::Local => None,
        None => Some(format!(
            "{name} is committed by some conventions, and the project is not a git repository              that could ignore it; use .env.local or {name}.local"
        )),
        Some(repo) => {
            let rel = repo.relative(&file);
            match repo.tracked(&rel) {
                Err(why) => Some(why),
                Ok(true) => Some(format!(
                    "git tracks {}, so it is committed whatever .gitignore says",
                    path.display()
                )),
                Ok(false) if repo.ignored(&rel) => None,
                Ok(false) => Some(format!(
                    "git does not ignore {}, so it would be committed; add it to .gitignore first",
                    path.display()
                )),
            }
        }
    }
}

/// Read a small file without following a symlink and without blocking on a FIFO; `None` when
/// it is missing, not a regular file, larger than `max`, or unreadable.
fn read_small(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(max).read_to_end(&mut out).ok()?;
    Some(out)
}

mod git {
    //! Just enough of git to tell whether it ignores or tracks a path: where the repository is,
    //! its ignore rules, and the paths of its index.

    use super::*;
    use ignore::Match;
    use ignore::gitignore::{Gitignore, GitignoreBuilder};

    /// Ignore files are read up to this size; a larger one counts as absent.
    const MAX_IGNORE: u64 = 1 << 20;
    /// The index is read up to this size; a larger one cannot be checked (refused).
    const MAX_INDEX: u64 = 256 << 20;

    /// A repository: its top folder, the folder of its index (a worktree's own) and its common
    /// folder (`info/exclude`, `config`).
    pub(super) struct Repo {
        top: PathBuf,
        git_dir: PathBuf,
        common: PathBuf,
    }

    /// The repository folder `dir` is in, as git finds it: the nearest `.git` folder or file
    /// from `dir` upwards (a nested repository's own, then).
    pub(super) fn repository(dir: &Path) -> Option<Repo> {
        for top in dir.ancestors() {
            let dot_git = top.join(".git");
            let Ok(meta) = std::fs::metadata(&dot_git) else { continue };
            if meta.is_dir() {
                return Some(Repo {
                    top: top.to_path_buf(),
                    git_dir: dot_git.clone(),
                    common: dot_git,
                });
            }
            // A worktree or a submodule: `gitdir: PATH`, PATH relative to the `.git` file's folder.
            let text = read_small(&dot_git, 4096)?;
            let text = String::from_utf8(text).ok()?;
            let git_dir = top.join(text.lines().next()?.strip_prefix("gitdir: ")?.trim_end());
            let common = read_small(&git_dir.join("commondir"), 4096)
                .and_then(|t| String::from_utf8(t).ok())
                .and_then(|t| t.lines().next().map(|l| git_dir.join(l.trim_end())))
                .unwrap_or_else(|| git_dir.clone());
            return Some(Repo { top: top.to_path_buf(), git_dir, common });
        }
        None
    }

    impl Repo {
        /// `file` (absolute, beneath the top) relative to the repository's top.
        pub(super) fn relative(&self, file: &Path) -> PathBuf {
            file.strip_prefix(&self.top).unwrap_or(file).to_path_buf()
        }

        /// Whether the index lists `rel` (or a sparse folder entry holding it); an error saying
        /// why when the index cannot be read.
        pub(super) fn tracked(&self, rel: &Path) -> Result<bool, String> {
            let index = self.git_dir.join("index");
            let bytes = match std::fs::symlink_metadata(&index) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                _ => read_small(&index, MAX_INDEX),
            };
            let unreadable = || {
                format!(
                    "hands could not read git's index ({}) to tell whether git tracks the file",
                    index.display()
                )
            };
            let bytes = bytes.ok_or_else(unreadable)?;
            let want = rel.as_os_str().as_encoded_bytes();
            index_has(&bytes, want, self.hash_len()).ok_or_else(unreadable)
        }

        /// 32 for a SHA-256 repository, else 20.
        fn hash_len(&self) -> usize {
            let config = read_small(&self.common.join("config"), MAX_IGNORE).unwrap_or_default();
            let config = String::from_utf8_lossy(&config).to_ascii_lowercase();
            let sha256 = config.lines().any(|l| {
                let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
                l == "objectformat=sha256"
            });
            if sha256 { 32 } else { 20 }
        }

        /// True when git's ignore rules (the `.gitignore` files from the top down and
        /// `info/exclude`) ignore `rel`: it, or a folder on its way.
        pub(super) fn ignored(&self, rel: &Path) -> bool {
            let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
            // One matcher per folder from the top down to the file's folder (deepest last).
            let mut levels: Vec<Gitignore> = Vec::new();
            let exclude = self.exclude();
            let mut dir = self.top.clone();
            for (i, part) in parts.iter().enumerate() {
                levels.push(matcher(&dir, &[dir.join(".gitignore")]));
                let path = dir.join(part);
                let is_dir = i + 1 < parts.len();
                // The deepest rule that says anything decides; info/exclude comes below them all.
                let decided = levels
                    .iter()
                    .rev()
                    .chain(std::iter::once(&exclude))
                    .map(|g| g.matched(&path, is_dir))
                    .find(|m| !m.is_none());
                match decided {
                    Some(Match::Ignore(_)) => return true,
                    _ if !is_dir => return false,
                    _ => {}
                }
                dir = path;
            }
            false
        }

        fn exclude(&self) -> Gitignore {
            matcher(&self.top, &[self.common.join("info").join("exclude")])
        }
    }

    /// The rules of `files`, relative to `dir`; a file that cannot be read has none.
    fn matcher(dir: &Path, files: &[PathBuf]) -> Gitignore {
        let mut builder = GitignoreBuilder::new(dir);
        for file in files {
            let Some(text) = read_small(file, MAX_IGNORE) else { continue };
            for line in String::from_utf8_lossy(&text).lines() {
                // A line git cannot read is skipped, as git skips it.
                let _ = builder.add_line(Some(file.clone()), line);
            }
        }
        builder.build().unwrap_or_else(|_| Gitignore::empty())
    }

    /// Whether the index `bytes` (versions 2 to 4) has an entry for `want` or a sparse folder
    /// entry (`dir/`) holding it; `None` when it cannot be parsed.
    pub(super) fn index_has(bytes: &[u8], want: &[u8], hash_len: usize) -> Option<bool> {
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        };
        if bytes.get(..4)? != b"DIRC" {
            return None;
        }
        let version = u32_at(4)?;
        if !(2..=4).contains(&version) {
            return None;
        }
        let count = u32_at(8)?;
        let mut at = 12;
        let mut name: Vec<u8> = Vec::new();
        let holds = |name: &[u8]| name == want || (name.ends_with(b"/") && want.starts_with(name));
        for _ in 0..count {
            let start = at;
            let flags_at = at + 40 + hash_len;
            let flags = u16::from_be_bytes(bytes.get(flags_at..flags_at + 2)?.try_into().ok()?);
            at = flags_at + 2;
            if version >= 3 && flags & 0x4000 != 0 {
                at += 2;
            }
            if version == 4 {
                // How many bytes of the previous name to drop, as git's offset varint.
                let mut byte = *bytes.get(at)?;
                at += 1;
                let mut strip = usize::from(byte & 0x7f);
                while byte & 0x80 != 0 {
                    byte = *bytes.get(at)?;
                    at += 1;
                    strip = strip.checked_add(1)?.checked_mul(128)? + usize::from(byte & 0x7f);
                }
                name.truncate(name.len().checked_sub(strip)?);
                let end = at + memchr_nul(bytes.get(at..)?)?;
                name.extend_from_slice(&bytes[at..end]);
                at = end + 1;
            } else {
                let end = at + memchr_nul(bytes.get(at..)?)?;
                name.clear();
                name.extend_from_slice(&bytes[at..end]);
                // Padded with 1 to 8 NULs to a multiple of 8 bytes.
                let len = end - start;
                at = start + (len + 8) / 8 * 8;
            }
            if holds(&name) {
                return Some(true);
            }
        }
        Some(false)
    }

    fn memchr_nul(bytes: &[u8]) -> Option<usize> {
        bytes.iter().position(|&b| b == 0)
    }
}

/// `text` (the argument `field`) with its placeholders replaced by the values granted to the
/// project at `root`; refused in a file other than an env file that stays on this machine
/// ([`refusal`]) unless `anywhere` (an old_string only finds text, it never copies a key into the
/// file).
pub(crate) fn resolve<'t>(
    root: &Path,
    path: &RelPath,
    field: &str,
    text: &'t str,
    anywhere: bool,
) -> Result<Cow<'t, str>, ToolError> {
    let names = names(text);
    let Some(first) = names.first() else { return Ok(Cow::Borrowed(text)) };
    if !anywhere && let Some(why) = refusal(root, path) {
        return Err(ToolError::model(format!(
            "`{field}` holds [secret:{first}], the placeholder of a stored secret; its value is \
             written only into an env file git ignores (.env, .env.local, .env.<mode>.local, or \
             .env.<mode> when ignored), never into {} ({why}). Nothing was written. Read the \
             secret from the environment instead: process.env.{first} (JavaScript), \
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
    fn env_file_names() {
        for name in [".env", ".env.local", ".env.development.local", ".env.Test.LOCAL"] {
            assert_eq!(env_name(name), Some(EnvName::Local), "{name}");
        }
        for name in [".env.production", ".env.staging-2", ".env.ci"] {
            assert_eq!(env_name(name), Some(EnvName::Mode), "{name}");
        }
        for name in [
            ".envrc",
            ".env.example",
            ".env.EXAMPLE",
            ".env.sample",
            ".env.template",
            ".env.js",
            ".env.local.example",
            ".env.",
            ".env..local",
            "env.local",
            ".env.d",
            ".env.json",
        ] {
            assert_eq!(env_name(name), None, "{name}");
        }
    }

    #[test]
    fn index_entries_of_every_version() {
        // Entries as git writes them: 40 bytes of stat data, the hash, flags, the name.
        fn entry(version: u32, name: &[u8], prev: &[u8]) -> Vec<u8> {
            let mut e = vec![0u8; 40 + 20];
            let extended = version == 3;
            let flags = (name.len() as u16) | if extended { 0x4000 } else { 0 };
            e.extend_from_slice(&flags.to_be_bytes());
            if extended {
                e.extend_from_slice(&[0, 0]);
            }
            if version == 4 {
                let common = prev.iter().zip(name).take_while(|(a, b)| a == b).count();
                e.push((prev.len() - common) as u8);
                e.extend_from_slice(&name[common..]);
                e.push(0);
            } else {
                e.extend_from_slice(name);
                let len = e.len();
                e.resize((len + 8) / 8 * 8, 0);
            }
            e
        }
        for version in 2u32..=4 {
            let names: [&[u8]; 3] = [b".env.production", b"app/.env", b"sparse/"];
            let mut bytes = b"DIRC".to_vec();
            bytes.extend_from_slice(&version.to_be_bytes());
            bytes.extend_from_slice(&3u32.to_be_bytes());
            let mut prev: &[u8] = b"";
            for name in names {
                bytes.extend(entry(version, name, prev));
                prev = name;
            }
            let has = |p: &str| git::index_has(&bytes, p.as_bytes(), 20);
            assert_eq!(has(".env.production"), Some(true), "v{version}");
            assert_eq!(has("app/.env"), Some(true), "v{version}");
            assert_eq!(has("sparse/deep/.env"), Some(true), "v{version}");
            assert_eq!(has(".env"), Some(false), "v{version}");
            assert_eq!(has("app/.env.local"), Some(false), "v{version}");
            assert_eq!(git::index_has(&bytes[..bytes.len() - 3], b".env", 20), None);
        }
        assert_eq!(git::index_has(b"NOPE\0\0\0\x02", b".env", 20), None);
    }
}
