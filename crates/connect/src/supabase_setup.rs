//! supabase_setup: link a PostgreSQL (Supabase) database, write a migration, apply the pending
//! ones, show their status, and make PostgREST reload.
//!
//! Flow: the arguments are checked for the action; every action but `status` waits for the
//! user's yes under `approval = "ask"`, asked (by the approval step, before `call`) with what
//! approve.rs computed it will do (the target database, and for `migrate` each pending file with
//! its first lines), and computes it again when it runs: only what was shown runs. `link`
//! verifies the database URL (stored, else asked of
//! the user out of band) and records the secret's name in `.hands/project.toml`; `new` writes
//! local.rs's file; `migrate` and `status` compare local.rs's folder with migrate.rs's history
//! (the Supabase CLI's table), `migrate` applying what is pending under an advisory lock and
//! ending with `NOTIFY pgrst, 'reload schema'`; `restart` sends PostgREST's two reloads and
//! connects again. A database URL is only ever shown redacted.

mod approve;
mod link;
mod local;
mod migrate;
mod report;
mod split;
mod types;

use crate::postgres::UrlFrom;
use std::borrow::Cow;

use hands_core::approval::Review;
use hands_core::secret::SecretValue;
use hands_core::{
    Annotations, CallPolicy, Context, Family, Label, Policy, Tool, ToolError, ToolOutput,
};

use crate::ask;
use crate::database::{self, Database};
use crate::postgres::{self, DbError};

pub use approve::FIRST_LINES;
pub use migrate::{Failure, LOCK_KEY, TABLE};
pub use split::{Statement, statements};
use types::TOOL;
pub use types::{Action, MigrationState, SetupResult, SupabaseSetup, SupabaseSetupArgs};

impl Tool for SupabaseSetup {
    type Args = SupabaseSetupArgs;

    fn name(&self) -> &'static str {
        TOOL
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("supabase_setup.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: false, open_world: true }
    }

    /// `status` asks nobody and changes nothing; every other action asks under `approval =
    /// "ask"`, shown what [`review`](Tool::review) computed it will do.
    fn call_policy(&self, args: &SupabaseSetupArgs) -> CallPolicy {
        let status = args.action == Action::Status;
        CallPolicy { needs_approval: !status, mutates: !status, cacheable: false, outlasts: false }
    }

    async fn review(&self, ctx: &Context, args: &SupabaseSetupArgs) -> Result<Review, ToolError> {
        self.review_action(ctx, args).await
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "action" })
            .family(Family::Project)
            .timeout_ms(ask::ASK_TIMEOUT_MS)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<SetupResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check_args(&args)?;
        // Every action but `status` was approved with what review computed it would do; each
        // computes it again and runs only that.
        let (result, error) = match args.action {
            Action::Link => (self.link(&ctx, &args).await?, false),
            Action::New => {
                self.check_approved(&ctx, &args, &approve::new_details(&args))?;
                (create(&ctx, &args)?, false)
            }
            Action::Migrate => self.migrate(&ctx, &args).await?,
            Action::Status => (self.status(&ctx).await?, false),
            Action::Restart => (self.restart(&ctx, &args).await?, false),
        };
        let text = report::render(&result);
        let structured = serde_json::to_value(&result)
            .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?;
        let out = if error { ToolOutput::error(text) } else { ToolOutput::text(text) };
        Ok(out.with_structured(structured))
    }
}

pub(super) fn check_args(args: &SupabaseSetupArgs) -> Result<(), ToolError> {
    let only = |field: &str, value: bool, action: &str| {
        if value {
            Err(ToolError::model(format!(
                "`{field}` is only for action {action}; call again without it"
            )))
        } else {
            Ok(())
        }
    };
    let new = args.action == Action::New;
    let link = args.action == Action::Link;
    only("name", args.name.is_some() && !new, "new")?;
    only("sql", args.sql.is_some() && !new, "new")?;
    only("project_ref", args.project_ref.is_some() && !link, "link")?;
    only("secret", args.secret.is_some() && !link, "link")?;
    if new {
        let name = args.name.as_deref().ok_or_else(|| {
            ToolError::model("action new needs `name` (like create_todos) and `sql`")
        })?;
        local::check_name(name)?;
        let sql = args.sql.as_deref().ok_or_else(|| {
            ToolError::model("action new needs `sql`: the migration's statements")
        })?;
        local::check_sql(sql)?;
    }
    if let Some(secret) = &args.secret {
        link::check_secret_name(secret)?;
    }
    if let Some(reference) = &args.project_ref
        && !link::is_ref(reference)
    {
        return Err(ToolError::model(
            "`project_ref` must be the Supabase project's ref: 20 lowercase letters and digits \
             (Supabase dashboard → Project Settings → General)",
        ));
    }
    Ok(())
}

fn db_error(err: &DbError) -> ToolError {
    ToolError::model(format!("supabase_setup could not reach the database: {err}"))
}

fn sql_failed(what: &str, err: &tokio_postgres::Error) -> ToolError {
    ToolError::model(format!("supabase_setup could not {what}: {}", migrate::sql_error(err)))
}

impl SupabaseSetup {
    /// The linked PostgreSQL database's URL and secret name.
    fn postgres(&self, ctx: &Context) -> Result<(SecretValue, String), ToolError> {
        match database::linked(ctx, &*self.store, &self.database)? {
            Database::Postgres { url, secret } => Ok((url, secret)),
            Database::Sqlite { path } => Err(ToolError::model(format!(
                "the project's database is the SQLite file {path} (`[database] sqlite`); \
                 supabase_setup works on PostgreSQL (Supabase) databases. Link one with action \
                 link."
            ))),
        }
    }

    async fn connect(&self, url: &str) -> Result<tokio_postgres::Client, ToolError> {
        postgres::connect(url, UrlFrom::User, &self.net).await.map_err(|err| db_error(&err))
    }

    async fn status(&self, ctx: &Context) -> Result<SetupResult, ToolError> {
        let ws = hands_fs::Workspace::of(ctx)?;
        let (local, skipped) = local::list(&ws)?;
        let (url, secret) = self.postgres(ctx)?;
        let client = self.connect(url.expose()).await?;
        let remote =
            migrate::history(&client).await.map_err(|e| sql_failed("read the history", &e))?;
        let plan = migrate::plan(&local, &remote);
        Ok(SetupResult {
            action: "status".to_owned(),
            database: Some(database::redacted(url.expose())),
            secret: Some(secret),
            migrations: report::states(&local, &remote, &plan, &[]),
            warnings: report::warnings(&plan),
            skipped,
            ..SetupResult::default()
        })
    }

    async fn migrate(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
    ) -> Result<(SetupResult, bool), ToolError> {
        let ws = hands_fs::Workspace::of(ctx)?;
        // The files are read once: what is applied is the text the user was shown.
        let (local, skipped) = local::list(&ws)?;
        let (url, secret) = self.postgres(ctx)?;
        let target = database::redacted(url.expose());
        let client = self.connect(url.expose()).await?;
        // Under `ask`, only the pending files the user was shown may run: computed again here
        // (read-only, as review did) and compared with what was approved. Nobody asked (review
        // found nothing pending) means nothing may run.
        let approved = if self.asks() {
            let remote =
                migrate::history(&client).await.map_err(|e| sql_failed("read the history", &e))?;
            let plan = migrate::plan(&local, &remote);
            if plan.pending.is_empty() || !plan.missing.is_empty() || ctx.approved().is_none() {
                Some(Vec::new())
            } else {
                let details = approve::migrate_details(&target, &secret, &plan.pending);
                self.check_approved(ctx, args, &details)?;
                Some(plan.pending.iter().map(|m| m.file.clone()).collect::<Vec<_>>())
            }
        } else {
            None
        };
        let mut result = SetupResult {
            action: "migrate".to_owned(),
            database: Some(database::redacted(url.expose())),
            secret: Some(secret),
            skipped,
            ..SetupResult::default()
        };
        match migrate::lock(&client, ctx.cancel_token()).await {
            Ok(()) => {}
            Err(migrate::LockError::Busy) => {
                return Err(ToolError::model(format!(
                    "another migrate has held the migration lock for {} s; nothing was applied. \
                     Call again when it is done (status shows what it applied).",
                    migrate::LOCK_WAIT.as_secs()
                )));
            }
            Err(migrate::LockError::Cancelled) => {
                return Err(ToolError::model("migrate was stopped while waiting for the lock"));
            }
            Err(migrate::LockError::Sql(err)) => return Err(sql_failed("take the lock", &err)),
        }
        let outcome = self
            .migrate_locked(ctx, &client, url.expose(), &local, approved.as_deref(), &mut result)
            .await;
        migrate::unlock(&client).await;
        outcome.map(|error| (result, error))
    }

    /// The part of migrate under the lock; true when the result is an error.
    async fn migrate_locked(
        &self,
        ctx: &Context,
        client: &tokio_postgres::Client,
        url: &str,
        local: &[local::Local],
        approved: Option<&[String]>,
        result: &mut SetupResult,
    ) -> Result<bool, ToolError> {
        let remote =
            migrate::history(client).await.map_err(|e| sql_failed("read the history", &e))?;
        let plan = migrate::plan(local, &remote);
        result.warnings = report::warnings(&plan);
        // Another migrate (or a repair) changed the history between the question and the lock:
        // only what the user was shown may run.
        let unasked: Vec<&str> = plan
            .pending
            .iter()
            .filter(|m| approved.is_some_and(|a| !a.contains(&m.file)))
            .map(|m| m.file.as_str())
            .collect();
        if !unasked.is_empty() {
            result.migrations = report::states(local, &remote, &plan, &[]);
            result.refused = Some(format!(
                "the database's history changed after the user approved; {} would now run but \
                 were not in what the user approved. Nothing was applied; call migrate again to \
                 be asked about them.",
                unasked.join(", ")
            ));
            return Ok(true);
        }
        if !plan.missing.is_empty() {
            result.migrations = report::states(local, &remote, &plan, &[]);
            result.refused = Some(format!(
                "the database has migrations that {} does not: {}. Nothing was applied. Restore \
                 those files (from git or whoever wrote them); if they were removed on purpose, \
                 the user can mark them reverted with the Supabase CLI (`supabase migration \
                 repair --status reverted VERSION`).",
                local::DIR,
                plan.missing.join(", ")
            ));
            return Ok(true);
        }
        if !plan.pending.is_empty() {
            migrate::create_history(client)
                .await
                .map_err(|e| sql_failed("create the history table", &e))?;
        }
        let runner = migrate::Runner { client, cancel: ctx.cancel_token(), url, net: &self.net };
        for m in &plan.pending {
            match migrate::apply(&runner, m).await {
                Ok(()) => result.applied.push(m.file.clone()),
                Err(failure) => {
                    result.failed = Some(failure);
                    break;
                }
            }
        }
        if !result.applied.is_empty() {
            migrate::notify(client, &["reload schema"])
                .await
                .map_err(|e| sql_failed("notify PostgREST", &e))?;
            result.notified.push("reload schema".to_owned());
        }
        result.migrations = report::states(local, &remote, &plan, &result.applied);
        Ok(result.failed.is_some())
    }

    async fn restart(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
    ) -> Result<SetupResult, ToolError> {
        let (url, secret) = self.postgres(ctx)?;
        let (_, details) = self.restart_shown(ctx, args)?;
        self.check_approved(ctx, args, &details)?;
        let client = self.connect(url.expose()).await?;
        let payloads = ["reload schema", "reload config"];
        migrate::notify(&client, &payloads)
            .await
            .map_err(|e| sql_failed("notify PostgREST", &e))?;
        drop(client);
        let version = postgres::version(url.expose(), UrlFrom::User, &self.net, ctx.cancel_token())
            .await
            .map_err(|err| db_error(&err))?;
        Ok(SetupResult {
            action: "restart".to_owned(),
            database: Some(database::redacted(url.expose())),
            secret: Some(secret),
            postgres_version: Some(version),
            notified: payloads.map(str::to_owned).to_vec(),
            ..SetupResult::default()
        })
    }
}

impl SupabaseSetup {
    /// What the user is shown before `args`' action runs ([`Tool::review`](hands_core::Tool::review)):
    /// computed the way the action will compute it, read-only. A migrate with nothing pending
    /// (or refused for a missing file) has nothing to ask.
    pub(super) async fn review_action(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
    ) -> Result<Review, ToolError> {
        check_args(args)?;
        let (what, details) = match args.action {
            Action::Status => return Ok(Review::nothing_to_ask()),
            Action::New => (approve::what(Action::New, args, None), approve::new_details(args)),
            Action::Link => self.link_shown(ctx, args)?,
            Action::Restart => self.restart_shown(ctx, args)?,
            Action::Migrate => match self.migrate_shown(ctx).await? {
                Some(shown) => shown,
                None => return Ok(Review::nothing_to_ask()),
            },
        };
        Ok(Review::summary(format!("{TOOL}: {what}")).with_details(details))
    }

    /// What `restart` shows: the target, and the two reloads.
    pub(super) fn restart_shown(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
    ) -> Result<(String, String), ToolError> {
        let (url, secret) = self.postgres(ctx)?;
        let target = database::redacted(url.expose());
        let what = approve::what(Action::Restart, args, Some(&target));
        let details = format!(
            "database: {target} (the URL in the secret {secret})\nsends NOTIFY pgrst, 'reload \
             schema' and NOTIFY pgrst, 'reload config', then connects again"
        );
        Ok((what, details))
    }

    /// What `migrate` shows: the target and each pending file, read-only (`None` when nothing is
    /// pending or a missing file refuses the migrate: nothing would run).
    pub(super) async fn migrate_shown(
        &self,
        ctx: &Context,
    ) -> Result<Option<(String, String)>, ToolError> {
        let ws = hands_fs::Workspace::of(ctx)?;
        let (local, _) = local::list(&ws)?;
        let (url, secret) = self.postgres(ctx)?;
        let target = database::redacted(url.expose());
        let client = self.connect(url.expose()).await?;
        let remote =
            migrate::history(&client).await.map_err(|e| sql_failed("read the history", &e))?;
        let plan = migrate::plan(&local, &remote);
        if plan.pending.is_empty() || !plan.missing.is_empty() {
            return Ok(None);
        }
        Ok(Some((
            approve::migrate_what(&plan.pending, &target),
            approve::migrate_details(&target, &secret, &plan.pending),
        )))
    }
}

fn create(ctx: &Context, args: &SupabaseSetupArgs) -> Result<SetupResult, ToolError> {
    let (Some(name), Some(sql)) = (&args.name, &args.sql) else {
        return Err(ToolError::model("action new needs `name` and `sql`"));
    };
    let ws = hands_fs::Workspace::of(ctx)?;
    let (file, version) = local::create(&ws, name, sql, std::time::SystemTime::now())?;
    let mut warnings = Vec::new();
    if sql.lines().skip(1).any(|l| l.trim_end() == local::NO_TRANSACTION) {
        warnings.push(format!("`{}` only counts on the file's first line", local::NO_TRANSACTION));
    }
    Ok(SetupResult {
        action: "new".to_owned(),
        file: Some(file),
        version: Some(version),
        warnings,
        ..SetupResult::default()
    })
}
