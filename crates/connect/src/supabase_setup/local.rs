//! The project's migrations folder, `supabase/migrations`, as the Supabase CLI reads it: every
//! regular file named `<digits>_<name>.sql` is a migration whose version is the digits, in file
//! name order; other files are skipped and reported. Everything is read and written through the
//! confined workspace. `new` writes `<UTC timestamp>_<name>.sql` without ever replacing a file.

use std::io::{Read as _, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use cap_std::fs::{Dir, OpenOptions};
use hands_core::ToolError;
use hands_fs::Workspace;

use super::split::{self, Statement};

/// The migrations folder, relative to the project root.
pub const DIR: &str = "supabase/migrations";
/// The first line that makes a file run outside a transaction.
pub const NO_TRANSACTION: &str = "-- hands:no-transaction";
/// The largest migration file read.
pub const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;
/// The largest `sql` that `new` writes.
pub const MAX_NEW_BYTES: usize = 1024 * 1024;
/// The longest migration name.
pub const MAX_NAME: usize = 100;

/// One migration file.
#[derive(Debug, Clone)]
pub struct Local {
    /// The digits before the first `_`.
    pub version: String,
    /// What follows them, without `.sql`.
    pub name: String,
    /// The path, relative to the root.
    pub file: String,
    /// The file's text.
    pub text: String,
    /// Its statements, as the Supabase CLI cuts them.
    pub statements: Vec<Statement>,
    /// False when its first line is `-- hands:no-transaction`.
    pub transaction: bool,
}

/// The migration files, in order, and the files of the folder that are not migrations (with
/// why). No folder: none.
pub fn list(ws: &Workspace) -> Result<(Vec<Local>, Vec<String>), ToolError> {
    let dir = match ws.dir().open_dir(DIR) {
        Ok(dir) => dir,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), Vec::new()));
        }
        Err(err) => return Err(folder_error(&err)),
    };
    let mut names = Vec::new();
    for entry in dir.entries().map_err(|err| folder_error(&err))? {
        let entry = entry.map_err(|err| folder_error(&err))?;
        if entry.file_type().map_err(|err| folder_error(&err))?.is_dir() {
            continue;
        }
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let mut found: Vec<Local> = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        let Some((version, label)) = parse_name(&name) else {
            skipped.push(format!(
                "{DIR}/{name} (not a migration: the name must be <timestamp>_<name>.sql)"
            ));
            continue;
        };
        let file = format!("{DIR}/{name}");
        if let Some(twin) = found.iter().find(|m| m.version == version) {
            return Err(ToolError::model(format!(
                "{file} and {} have the same version {version}; a version must be unique. Rename \
                 one of them (a later timestamp) and call again.",
                twin.file
            )));
        }
        let text = read(&dir, &name, &file)?;
        let transaction = text.lines().next().is_none_or(|l| l.trim_end() != NO_TRANSACTION);
        let statements = split::statements(&text);
        found.push(Local {
            version: version.to_owned(),
            name: label.to_owned(),
            file,
            text,
            statements,
            transaction,
        });
    }
    Ok((found, skipped))
}

/// `<digits>_<name>.sql` → (digits, name).
fn parse_name(file: &str) -> Option<(&str, &str)> {
    let stem = file.strip_suffix(".sql")?;
    let (version, name) = stem.split_once('_')?;
    (!version.is_empty() && version.bytes().all(|b| b.is_ascii_digit())).then_some((version, name))
}

fn folder_error(err: &std::io::Error) -> ToolError {
    ToolError::model(format!(
        "cannot read the migrations folder {DIR}: {err}. It must be a folder inside the project."
    ))
}

fn read(dir: &Dir, name: &str, file: &str) -> Result<String, ToolError> {
    let fail = |why: String| ToolError::model(format!("cannot read the migration {file}: {why}"));
    let handle = dir.open(name).map_err(|err| fail(err.to_string()))?;
    let meta = handle.metadata().map_err(|err| fail(err.to_string()))?;
    if !meta.is_file() {
        return Err(fail("it is not a regular file".to_owned()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(fail(format!(
            "it is {} bytes, over the {MAX_FILE_BYTES}-byte limit; split it into smaller files",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    handle.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|err| fail(err.to_string()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| fail("it is not UTF-8 text (a binary file?)".to_owned()))?;
    if text.contains('\0') {
        return Err(fail("it holds a NUL byte, which PostgreSQL cannot take".to_owned()));
    }
    Ok(text)
}

/// Check `name` for `new`: 1 to 100 of letters, digits, `_` and `-`.
pub fn check_name(name: &str) -> Result<(), ToolError> {
    if name.is_empty()
        || name.len() > MAX_NAME
        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(ToolError::model(format!(
            "`name` must be 1 to {MAX_NAME} letters, digits, `_` or `-` (like create_todos); it \
             becomes the file name {DIR}/<timestamp>_<name>.sql, so no `/`, `.` or spaces"
        )));
    }
    Ok(())
}

/// Check `sql` for `new`: text of at most 1 MiB with at least one statement.
pub fn check_sql(sql: &str) -> Result<(), ToolError> {
    if sql.len() > MAX_NEW_BYTES {
        return Err(ToolError::model(format!(
            "`sql` is {} bytes, over the {MAX_NEW_BYTES}-byte limit of one migration written by \
             supabase_setup; split it into several migrations",
            sql.len()
        )));
    }
    if sql.contains('\0') {
        return Err(ToolError::model("`sql` holds a NUL byte, which PostgreSQL cannot take"));
    }
    if split::statements(sql).is_empty() {
        return Err(ToolError::model("`sql` is empty; give the migration's SQL statements"));
    }
    Ok(())
}

/// Write `sql` as a new migration `name`, versioned by the UTC time `now` (one second past the
/// newest file when that is not later). Returns the path and the version.
pub fn create(
    ws: &Workspace,
    name: &str,
    sql: &str,
    now: SystemTime,
) -> Result<(String, String), ToolError> {
    let (existing, _) = list(ws)?;
    let newest = existing.iter().filter_map(|m| unix_of(&m.version)).max();
    let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let mut at = newest.map_or(now, |n| now.max(n + 1));
    ws.dir().create_dir_all(DIR).map_err(|err| folder_error(&err))?;
    let dir = ws.dir().open_dir(DIR).map_err(|err| folder_error(&err))?;
    let temp = format!(".{name}.hands-{}.tmp", std::process::id());
    let written = (|| {
        let mut file = dir.open_with(&temp, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(sql.as_bytes())?;
        if !sql.ends_with('\n') {
            file.write_all(b"\n")?;
        }
        file.sync_all()
    })();
    if let Err(err) = written {
        let _ = dir.remove_file(&temp);
        return Err(ToolError::model(format!("cannot write a migration into {DIR}: {err}")));
    }
    // A hard link never replaces a file: a name taken in the meantime gets the next second.
    let mut result = None;
    for _ in 0..10 {
        let version = timestamp(at);
        let file = format!("{version}_{name}.sql");
        match dir.hard_link(&temp, &dir, &file) {
            Ok(()) => {
                result = Some(Ok((format!("{DIR}/{file}"), version)));
                break;
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => at += 1,
            Err(err) => {
                result = Some(Err(ToolError::model(format!("cannot write {DIR}/{file}: {err}"))));
                break;
            }
        }
    }
    let _ = dir.remove_file(&temp);
    result.unwrap_or_else(|| {
        Err(ToolError::model(format!("{DIR} has no free name for {name}; call again in a second")))
    })
}

/// `YYYYMMDDHHMMSS` of the UTC time `secs` after the epoch.
pub fn timestamp(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    format!("{y:04}{m:02}{d:02}{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The seconds after the epoch of a 14-digit `YYYYMMDDHHMMSS` version.
fn unix_of(version: &str) -> Option<i64> {
    if version.len() != 14 {
        return None;
    }
    let n = |r: std::ops::Range<usize>| version.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (h, mi, s) = (n(8..10)?, n(10..12)?, n(12..14)?);
    Some(days_of(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s)
}

// Howard Hinnant's civil-from-days and days-from-civil algorithms (proleptic Gregorian).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_of(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_and_round_trip() {
        assert_eq!(timestamp(0), "19700101000000");
        assert_eq!(timestamp(1_709_251_199), "20240229235959");
        assert_eq!(timestamp(1_709_251_200), "20240301000000");
        for secs in [0, 951_782_400, 1_709_251_199, 4_102_444_800] {
            assert_eq!(unix_of(&timestamp(secs)), Some(secs));
        }
        assert_eq!(unix_of("2024"), None);
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(
            parse_name("20240101000000_create_todos.sql"),
            Some(("20240101000000", "create_todos"))
        );
        assert_eq!(parse_name("1_x.sql"), Some(("1", "x")));
        for bad in ["create.sql", "_x.sql", "2024a_x.sql", "20240101_x.txt", "README.md"] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
        assert!(check_name("create_todos-2").is_ok());
        for bad in ["", "../evil", "a/b", "a.b", "with space", "é", &"x".repeat(101)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn new_files_never_replace_one_and_keep_order() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::open(tmp.path()).unwrap();
        let now = UNIX_EPOCH + std::time::Duration::from_secs(1_709_251_200);
        let (a, va) = create(&ws, "first", "create table a (id int);", now).unwrap();
        let (b, vb) = create(&ws, "second", "create table b (id int);", now).unwrap();
        assert_eq!(a, "supabase/migrations/20240301000000_first.sql");
        assert_eq!(b, "supabase/migrations/20240301000001_second.sql");
        assert!(vb > va);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(&a)).unwrap(),
            "create table a (id int);\n"
        );
        let (found, skipped) = list(&ws).unwrap();
        assert_eq!(found.len(), 2);
        assert!(skipped.is_empty());
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path().join(DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
