//! supabase_setup's `link`: the database URL from the store (else asked of the user out of
//! band), verified with `select version()`, only then stored, and the secret's name (with the
//! project's ref) recorded under `[supabase]` in `.hands/project.toml`.

use crate::postgres::UrlFrom;
use hands_core::secret::{ProjectSecret, project_secret};
use hands_core::{Context, ToolError};

use super::approve;
use super::types::{Action, SetupResult, SupabaseSetup, SupabaseSetupArgs, TOOL};
use crate::{DB_URL_NAME, ask, database, files, postgres};

impl SupabaseSetup {
    pub(super) async fn link(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
    ) -> Result<SetupResult, ToolError> {
        let (name, stored) = self.link_target(ctx, args);
        let asked = stored.is_none();
        let (_, details) = self.link_shown(ctx, args)?;
        self.check_approved(ctx, args, &details)?;
        let url = match stored {
            Some(url) => url,
            None => {
                ask::project_secret(
                    ctx,
                    &*self.store,
                    TOOL,
                    &name,
                    "the database's connection URL with its password \
                     (postgresql://postgres:PASSWORD@db.REF.supabase.co:5432/postgres: Supabase \
                     dashboard → Connect)",
                )
                .await?
            }
        };
        let version = postgres::version(url.expose(), UrlFrom::User, &self.net, ctx.cancel_token())
            .await
            .map_err(|err| {
                ToolError::model(format!(
                    "the database could not be verified: {err}. Nothing was stored or recorded; \
                     ask the user to check {name}, then call again."
                ))
            })?;
        if asked {
            self.store.put(ctx.root(), &name, &url).map_err(|err| {
                ToolError::model(format!("the database answered but {name} was not stored: {err}"))
            })?;
        }
        let reference = args.project_ref.clone().or_else(|| ref_of(url.expose()));
        let path = ".hands/project.toml";
        let ws = hands_fs::Workspace::of(ctx)?;
        let dir = files::hands_dir(ws.dir()).map_err(|err| files::error(path, &err))?;
        let existing = files::read(&dir, "project.toml").map_err(|err| files::error(path, &err))?;
        let mut entries = vec![(database::LINK_KEY, name.as_str())];
        if let Some(reference) = &reference {
            entries.push(("ref", reference.as_str()));
        }
        let text = files::project_toml_with(&existing, "supabase", &entries).map_err(|why| {
            ToolError::model(format!(
                "{path} was not changed because {why}; fix the file (or remove it) and call \
                 again."
            ))
        })?;
        files::write(&dir, "project.toml", text.as_bytes())
            .map_err(|err| files::error(path, &err))?;
        Ok(SetupResult {
            action: "link".to_owned(),
            database: Some(database::redacted(url.expose())),
            secret: Some(name),
            project_ref: reference,
            postgres_version: Some(version),
            file: Some(path.to_owned()),
            ..SetupResult::default()
        })
    }

    /// The secret `link` uses, and its value when it is stored for this project.
    fn link_target(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
    ) -> (String, Option<hands_core::secret::SecretValue>) {
        let name = args
            .secret
            .clone()
            .or_else(|| database::recorded_secret(ctx))
            .unwrap_or_else(|| DB_URL_NAME.to_owned());
        // A name the model or the project chose: only a value stored for this project counts;
        // else the user is asked (a global secret of that name is never taken).
        let stored = match project_secret(&*self.store, ctx.root(), &name) {
            ProjectSecret::Stored(url) => Some(url),
            ProjectSecret::GlobalOnly | ProjectSecret::Missing => None,
        };
        (name, stored)
    }

    /// What `link` shows: the database (or that the user will be asked for it) and what is
    /// recorded.
    pub(super) fn link_shown(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
    ) -> Result<(String, String), ToolError> {
        let (name, stored) = self.link_target(ctx, args);
        let target = stored.as_ref().map(|url| database::redacted(url.expose()));
        let what = approve::what(Action::Link, args, target.as_deref());
        let details = match &target {
            Some(target) => format!(
                "database: {target} (the URL in the secret {name}, stored for this project)\n"
            ),
            None => format!(
                "the secret {name} is not stored for this project: the user is asked for the \
                 database URL, out of band\n"
            ),
        } + &format!(
            "verifies it with `select version()`, then records `[supabase] {} = \"{name}\"` in \
             .hands/project.toml (migrate, restart and db_schema then use that database)",
            database::LINK_KEY
        );
        Ok((what, details))
    }
}

pub(super) fn check_secret_name(name: &str) -> Result<(), ToolError> {
    let ok = (2..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(ToolError::model(format!(
            "`secret` must be a secret's name: 2 to 64 of A-Z, 0-9 and _, starting with a letter \
             (like {DB_URL_NAME})"
        )))
    }
}

pub(super) fn is_ref(text: &str) -> bool {
    text.len() == 20 && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The project ref a Supabase database URL names: `db.<ref>.supabase.co`, or the pooler's user
/// `postgres.<ref>`.
fn ref_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    let from_host = host
        .strip_prefix("db.")
        .and_then(|rest| rest.strip_suffix(".supabase.co"))
        .filter(|r| is_ref(r))
        .map(str::to_owned);
    from_host.or_else(|| {
        parsed.username().strip_prefix("postgres.").filter(|r| is_ref(r)).map(str::to_owned)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_come_from_supabase_urls() {
        assert_eq!(
            ref_of("postgresql://postgres:pw@db.abcdefghijklmnopqrst.supabase.co:5432/postgres")
                .as_deref(),
            Some("abcdefghijklmnopqrst")
        );
        assert_eq!(
            ref_of("postgres://postgres.abcdefghijklmnopqrst:pw@aws-0-eu.pooler.supabase.com/x")
                .as_deref(),
            Some("abcdefghijklmnopqrst")
        );
        assert_eq!(ref_of("postgres://u:p@127.0.0.1/x"), None);
        assert!(check_secret_name("MY_DB_URL").is_ok());
        assert!(check_secret_name("lower").is_err() && check_secret_name("A").is_err());
    }
}
