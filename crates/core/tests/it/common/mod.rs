//! Small tools for the core's black-box tests.
#![allow(dead_code, missing_docs)]

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hands_core::{Annotations, Context, Policy, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextArgs {
    /// Some text.
    pub text: String,
    /// A count.
    #[serde(default)]
    pub count: Option<u64>,
}

/// A tool with a configurable name and read-only flag that counts its runs and echoes its text.
pub struct Echo {
    pub name: &'static str,
    pub read_only: bool,
    pub runs: Arc<AtomicUsize>,
    /// Changes the default policy (modes, aliases, …).
    pub policy: fn(Policy) -> Policy,
}

impl Echo {
    pub fn new(name: &'static str, read_only: bool) -> (Self, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        (Self { name, read_only, runs: Arc::clone(&runs), policy: |p| p }, runs)
    }

    /// This tool with its default policy changed by `policy`.
    pub fn with(mut self, policy: fn(Policy) -> Policy) -> Self {
        self.policy = policy;
        self
    }
}

impl Tool for Echo {
    type Args = TextArgs;

    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed("Echo the text.")
    }

    fn annotations(&self) -> Annotations {
        if self.read_only { Annotations::READ_ONLY } else { Annotations::default() }
    }

    fn policy(&self) -> Policy {
        (self.policy)(Policy::from_annotations(self.annotations()))
    }

    async fn call(&self, _ctx: Context, args: TextArgs) -> Result<ToolOutput, ToolError> {
        let n = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        let repeat = usize::try_from(args.count.unwrap_or(1)).unwrap_or(1);
        Ok(ToolOutput::text(format!("{}#{n}", args.text.repeat(repeat))))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SleepArgs {
    /// Milliseconds.
    pub ms: u64,
}

/// Sleeps unless cancelled; reports whether it saw the cancellation.
pub struct Sleep {
    pub saw_cancel: Arc<AtomicUsize>,
}

impl Tool for Sleep {
    type Args = SleepArgs;

    fn name(&self) -> &'static str {
        "sleep"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed("Sleep.")
    }

    fn annotations(&self) -> Annotations {
        Annotations::default()
    }

    async fn call(&self, ctx: Context, args: SleepArgs) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(args.ms)) => Ok(ToolOutput::text("slept")),
            () = ctx.cancel_token().cancelled() => {
                self.saw_cancel.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text("partial output before the stop"))
            }
        }
    }
}
