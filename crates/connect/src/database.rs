//! Which database is linked to the project, for db_schema and supabase_setup.
//!
//! In order: `[database] sqlite` (a SQLite file in the project), `[database] url_secret` (a
//! secret stored for the project holding a PostgreSQL URL), the secret supabase_setup's `link`
//! recorded in `.hands/project.toml` (`[supabase] db_url_secret`), and connect_supabase's
//! `SUPABASE_DB_URL` (stored, or in hands' environment). Only that default name is read from the
//! environment, and only it may resolve to a global secret without the user naming it: a name
//! from a project's own files (`.hands/config.toml`, `.hands/project.toml`) resolves only among
//! the secrets stored for that project, never a global one or one of the user's variables. A URL
//! is only ever shown redacted ([`redacted`]).
//!
//! Every URL found here is the user's own (a secret they stored or typed at hands' prompt, or
//! their environment), never text of the repository's or the model's: connections to it use
//! [`crate::postgres::UrlFrom::User`], which may name this machine.

use hands_core::secret::{ProjectSecret, SecretStore, SecretValue, project_secret};
use hands_core::{Context, ToolError};

use crate::DB_URL_NAME;
use crate::config::DatabaseConfig;
use crate::files;

/// Where `.hands/project.toml` keeps the name of the secret `link` recorded.
pub const LINK_KEY: &str = "db_url_secret";

/// The linked database.
#[derive(Debug, Clone)]
pub enum Database {
    /// A PostgreSQL database: its URL (a secret) and the secret's name.
    Postgres {
        /// The URL, with its password.
        url: SecretValue,
        /// The name of the secret (or variable) it came from.
        secret: String,
    },
    /// A SQLite file in the project, as `[database] sqlite` names it.
    Sqlite {
        /// The path, relative to the root.
        path: String,
    },
}

/// How the model is told to link a database, for a tool that found none.
pub fn how_to_link() -> String {
    format!(
        "No database is linked to this project. Link one in one of three ways: connect_supabase \
         (asks the user for the Supabase database URL and stores it as {DB_URL_NAME}); \
         supabase_setup with `action: \"link\"` (any PostgreSQL database: the user gives its URL, \
         stored as a secret); or, in the project's .hands/config.toml, `[database] url_secret = \
         \"NAME\"` (a secret the user stored with `hands secrets set NAME`) or `[database] sqlite \
         = \"path/to/file.db\"` (a SQLite file in the project)."
    )
}

/// The database linked to the project at `ctx`'s root.
pub fn linked(
    ctx: &Context,
    store: &dyn SecretStore,
    config: &DatabaseConfig,
) -> Result<Database, ToolError> {
    match (&config.sqlite, &config.url_secret) {
        (Some(_), Some(_)) => Err(ToolError::model(
            "the settings name two databases: `[database] sqlite` and `[database] url_secret`. \
             Ask the user to keep one of them in .hands/config.toml.",
        )),
        (Some(path), None) => Ok(Database::Sqlite { path: path.clone() }),
        (None, Some(name)) if config.url_secret_by_user => store
            .get(ctx.root(), name)
            .map(|url| Database::Postgres { url, secret: name.clone() })
            .ok_or_else(|| {
                ToolError::model(format!(
                    "the user's settings name the secret {name} (`[database] url_secret`), but \
                     no secret {name} is stored. Ask the user to store the database URL with \
                     `hands secrets set {name}`, then call again."
                ))
            }),
        (None, Some(name)) => {
            project_stored(ctx, store, name, "`[database] url_secret` in .hands/config.toml")
        }
        (None, None) => match recorded_secret(ctx) {
            Some(name) => {
                project_stored(ctx, store, &name, "`db_url_secret` in .hands/project.toml")
            }
            // hands' own default name, not one a project chose: a global one counts.
            None => store
                .get(ctx.root(), DB_URL_NAME)
                .or_else(|| {
                    std::env::var(DB_URL_NAME).ok().filter(|v| !v.is_empty()).map(SecretValue::new)
                })
                .map(|url| Database::Postgres { url, secret: DB_URL_NAME.to_owned() })
                .ok_or_else(|| ToolError::model(how_to_link())),
        },
    }
}

/// The secret `name` that a project file (`origin`) names: only one stored for the project
/// itself, never a global one (a repository must not choose which of the user's databases is
/// linked).
fn project_stored(
    ctx: &Context,
    store: &dyn SecretStore,
    name: &str,
    origin: &str,
) -> Result<Database, ToolError> {
    match project_secret(store, ctx.root(), name) {
        ProjectSecret::Stored(url) => Ok(Database::Postgres { url, secret: name.to_owned() }),
        ProjectSecret::GlobalOnly => Err(ToolError::model(global_only(name, origin))),
        ProjectSecret::Missing => Err(ToolError::model(format!(
            "{origin} names the secret {name}, but no secret {name} is stored for this project. \
             Ask the user to store the database URL for this project with `hands secrets set \
             {name}` (run in the project), then call again. Nothing was run."
        ))),
    }
}

/// Why a project file may not name the global secret `name`, and the user's two ways out.
pub fn global_only(name: &str, origin: &str) -> String {
    format!(
        "refused: {origin} names {name}, which is stored only as a global secret (for every \
         project); a project's own files may name only a secret stored for that project, so \
         that a repository cannot choose which of the user's databases it reaches. Nothing was \
         run. Ask the user either to store the URL for this project with `hands secrets set \
         {name}` (run in the project, without --global), or, to use the global one on purpose, \
         to set `[database] url_secret = \"{name}\"` in their own ~/.config/hands/config.toml \
         (or HANDS_DATABASE__URL_SECRET={name})."
    )
}

/// The secret name supabase_setup's `link` recorded, if any (a file that cannot be read or
/// parsed counts as none: connect_supabase's default still applies).
pub fn recorded_secret(ctx: &Context) -> Option<String> {
    let ws = hands_fs::Workspace::of(ctx).ok()?;
    let dir = ws.dir().open_dir(".hands").ok()?;
    let text = files::read(&dir, "project.toml").ok()?;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    doc.get("supabase")?.get(LINK_KEY)?.as_str().map(str::to_owned)
}

/// `url` as it may be shown: `user@host:port/database`, never the password or the query.
pub fn redacted(url: &str) -> String {
    match url::Url::parse(url.trim()) {
        Ok(parsed) if parsed.host_str().is_some() => {
            let user = if parsed.username().is_empty() {
                String::new()
            } else {
                format!("{}@", parsed.username())
            };
            format!(
                "{user}{}:{}{}",
                parsed.host_str().unwrap_or_default(),
                parsed.port().unwrap_or(5432),
                parsed.path()
            )
        }
        _ => "(a URL that does not parse)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_password_or_query() {
        assert_eq!(
            redacted("postgresql://postgres:pw-canary@db.abc.supabase.co/postgres?sslmode=require"),
            "postgres@db.abc.supabase.co:5432/postgres"
        );
        assert_eq!(redacted("postgres://u:p@127.0.0.1:6543/x"), "u@127.0.0.1:6543/x");
        assert!(!redacted("pw-canary not a url").contains("canary"));
    }
}
