//! The two project files the connect tools change: `.env.example` (variable names, never a value)
//! and `.hands/project.toml` (what the project is linked to). Both are rewritten atomically inside
//! the root's directory handle (a temp file with a fresh name, fsync, rename), never through a
//! symlink, keeping every line they do not own.

use std::io::{self, Read as _, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions};
use hands_core::ToolError;
use toml_edit::{DocumentMut, Item, value};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The lines `names` adds to an `.env.example` whose text is `existing`: `NAME=` for each name no
/// line assigns yet (`NAME=…`, `export NAME=…`, `NAME =…`). `None` when all are there.
pub fn env_example_with(existing: &str, names: &[&str]) -> Option<(String, Vec<String>)> {
    let present = |name: &str| {
        existing.lines().any(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("export ").map_or(line, str::trim_start);
            line.strip_prefix(name).is_some_and(|rest| rest.trim_start().starts_with('='))
        })
    };
    let missing: Vec<String> =
        names.iter().filter(|n| !present(n)).map(|n| (*n).to_owned()).collect();
    if missing.is_empty() {
        return None;
    }
    let mut text = existing.to_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for name in &missing {
        text.push_str(name);
        text.push_str("=\n");
    }
    Some((text, missing))
}

/// `.hands/project.toml`'s text `existing` with `[section]` holding `entries` (other keys,
/// sections and comments kept).
pub fn project_toml_with(
    existing: &str,
    section: &str,
    entries: &[(&str, &str)],
) -> Result<String, String> {
    let mut doc: DocumentMut = existing
        .parse()
        .map_err(|err: toml_edit::TomlError| format!("it is not valid TOML ({})", err.message()))?;
    let table = doc
        .entry(section)
        .or_insert_with(|| Item::Table(toml_edit::Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("its `{section}` is not a table"))?;
    for (key, text) in entries {
        table[*key] = value(*text);
    }
    Ok(doc.to_string())
}

/// The text of `name` in `dir`, `""` when there is none. Refuses a symlink or anything but a
/// regular file.
pub fn read(dir: &Dir, name: &str) -> io::Result<String> {
    match dir.symlink_metadata(name) {
        Ok(meta) if meta.file_type().is_symlink() => Err(not_regular(name, "a symlink")),
        Ok(meta) if !meta.is_file() => Err(not_regular(name, "not a regular file")),
        Ok(_) => {
            let mut text = String::new();
            dir.open(name)?.read_to_string(&mut text)?;
            Ok(text)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(err),
    }
}

fn not_regular(name: &str, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{name} is {what}; hands does not write through it"),
    )
}

/// Replace `name` in `dir` with `bytes` atomically, keeping an existing file's mode.
pub fn write(dir: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    use cap_std::fs::PermissionsExt as _;
    let old_mode = match dir.symlink_metadata(name) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(not_regular(name, "a symlink")),
        Ok(meta) if !meta.is_file() => return Err(not_regular(name, "not a regular file")),
        Ok(meta) => Some(meta.permissions().mode()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err),
    };
    let temp = format!(
        ".{name}.hands-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let result = (|| {
        let mut file = dir.open_with(&temp, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(bytes)?;
        if let Some(mode) = old_mode {
            file.set_permissions(cap_std::fs::Permissions::from_mode(mode))?;
        }
        file.sync_all()?;
        dir.rename(&temp, dir, name)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&temp);
    }
    result
}

/// `.hands` in the root, created when missing; refused when it is a symlink.
pub fn hands_dir(root: &Dir) -> io::Result<Dir> {
    match root.symlink_metadata(".hands") {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(not_regular(".hands", "a symlink"));
        }
        Ok(_) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => root.create_dir(".hands")?,
        Err(err) => return Err(err),
    }
    root.open_dir(".hands")
}

/// The model-facing error of a failed change of the project file `path`.
pub fn error(path: &str, err: &io::Error) -> ToolError {
    ToolError::model(format!("cannot write {path}: {err}. Fix or remove it, then call again."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_example_gets_only_the_missing_names_and_keeps_the_rest() {
        let (text, added) = env_example_with(
            "# keys\nexport STRIPE_SECRET_KEY=\nDATABASE_URL=x",
            &["STRIPE_SECRET_KEY", "STRIPE_PUBLISHABLE_KEY"],
        )
        .unwrap();
        assert_eq!(
            text,
            "# keys\nexport STRIPE_SECRET_KEY=\nDATABASE_URL=x\nSTRIPE_PUBLISHABLE_KEY=\n"
        );
        assert_eq!(added, ["STRIPE_PUBLISHABLE_KEY"]);
        assert_eq!(env_example_with(&text, &["STRIPE_SECRET_KEY", "STRIPE_PUBLISHABLE_KEY"]), None);
        // A name that only starts like another is not it.
        let (text, _) =
            env_example_with("STRIPE_SECRET_KEY_OLD=\n", &["STRIPE_SECRET_KEY"]).unwrap();
        assert_eq!(text, "STRIPE_SECRET_KEY_OLD=\nSTRIPE_SECRET_KEY=\n");
        let (text, _) = env_example_with("", &["A_B"]).unwrap();
        assert_eq!(text, "A_B=\n");
    }

    #[test]
    fn project_toml_keeps_other_content() {
        let text = project_toml_with(
            "# mine\nname = \"app\"\n\n[supabase]\nold = 1\n",
            "supabase",
            &[("url", "https://abc.supabase.co"), ("ref", "abc")],
        )
        .unwrap();
        assert!(text.starts_with("# mine\nname = \"app\"\n"), "{text}");
        let parsed: toml_edit::DocumentMut = text.parse().unwrap();
        assert_eq!(parsed["supabase"]["ref"].as_str(), Some("abc"));
        assert_eq!(parsed["supabase"]["old"].as_integer(), Some(1));
        assert!(
            project_toml_with("supabase = 3\n", "supabase", &[])
                .unwrap_err()
                .contains("not a table")
        );
        assert!(
            project_toml_with("[[x\n", "supabase", &[]).unwrap_err().contains("not valid TOML")
        );
    }

    #[test]
    fn writes_are_atomic_and_refuse_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        write(&dir, "a.txt", b"one").unwrap();
        write(&dir, "a.txt", b"two").unwrap();
        assert_eq!(read(&dir, "a.txt").unwrap(), "two");
        assert_eq!(read(&dir, "none").unwrap(), "");
        std::os::unix::fs::symlink("/etc/passwd", tmp.path().join("link")).unwrap();
        assert!(write(&dir, "link", b"x").unwrap_err().to_string().contains("symlink"));
        assert!(read(&dir, "link").is_err());
        let names: Vec<_> =
            std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "no temp file left: {names:?}");
    }
}
