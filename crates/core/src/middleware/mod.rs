//! The middleware every tool call passes through, in the style of axum's `from_fn`/`Next`.
//!
//! The order is written here, once. Outermost first:
//!
//! 0. [`approve::Approve`] — under `approval = "ask"`, tools that change things wait for the user's
//!    yes (outside the timeout, so a slow answer does not time the tool out).
//! 1. [`timeout::Timeout`] — per-tool limit and abort; a timeout fires the call's token so that tools
//!    kill their processes, then gives them a grace period to return what they have.
//! 2. [`dedup::Dedup`] — identical read-only calls within one turn are served from a per-session cache;
//!    any mutating call clears it.
//! 3. [`truncate::Truncate`] — caps the model-facing text (head + tail + marker) and spills the full
//!    text to `.hands/outputs/<call-id>.txt`.
//! 4. [`redact::Redact`] — replaces stored secrets and well-known key shapes in text, structured
//!    content, notices and errors (not images), inside truncation so that the spill files and the
//!    dedup cache are clean too.
//! 5. [`recover::Recover`] — on `SandboxGone`: log, wait, get or create a fresh sandbox, retry once;
//!    at most `max_per_project` recoveries per project.
//!
//! Then the call runs in the project's sandbox. Hand-written rather than tower layers: a failed call
//! must still give the model a result, and the chain is plain data that a front end can inspect.
//!
//! A front end or a later crate adds its own step with
//! [`RegistryBuilder::layer`](crate::RegistryBuilder::layer) at a [`Place`]: outermost, innermost,
//! or just before or after one of the steps above. Layers at the same place run in the order they
//! were added (the first added is the outer one); a place next to a step that is switched off
//! (`dedup = false`) is where that step would be.
//!
//! In debug builds (every test suite, and the debug `hands` binary the black-box suites drive) one
//! more step wraps them all: [`conformance::Conformance`] checks every final result against its
//! tool's output schema.

pub mod approve;
mod chain;
#[cfg(debug_assertions)]
pub mod conformance;
pub mod dedup;
pub mod recover;
pub mod redact;
pub mod timeout;
pub mod truncate;

use std::sync::Arc;

pub use chain::{DynMiddleware, Endpoint, Middleware, Next, Request};

use crate::{CoreConfig, SandboxProvider};

/// A step of the standard chain, in order (outermost first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// [`approve::Approve`].
    Approve,
    /// [`timeout::Timeout`].
    Timeout,
    /// [`dedup::Dedup`] (absent with `dedup = false`).
    Dedup,
    /// [`truncate::Truncate`].
    Truncate,
    /// [`redact::Redact`].
    Redact,
    /// [`recover::Recover`].
    Recover,
}

impl Step {
    /// Every step, outermost first.
    pub const ALL: [Step; 6] =
        [Step::Approve, Step::Timeout, Step::Dedup, Step::Truncate, Step::Redact, Step::Recover];
}

/// Where an added middleware goes in the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Place {
    /// Before every step: it sees the call first and the final result last (what the client
    /// gets, truncated).
    Outermost,
    /// Just outside `Step`: it sees what that step returns.
    Before(Step),
    /// Just inside `Step`: that step sees what it returns.
    After(Step),
    /// After every step, next to the tool: it sees what the tool produced, before truncation.
    Innermost,
}

/// A middleware added at a place ([`RegistryBuilder::layer`](crate::RegistryBuilder::layer)).
pub type Layer = (Place, Arc<dyn DynMiddleware>);

/// The chain for `config`: the standard steps in the order documented above, with `layers` at
/// their places (and the conformance check around everything in debug builds).
pub fn chain(
    config: &CoreConfig,
    provider: Arc<dyn SandboxProvider>,
    layers: &[Layer],
    spill_hint: &'static str,
) -> Vec<Arc<dyn DynMiddleware>> {
    let at = |place: Place| {
        layers.iter().filter(move |(p, _)| *p == place).map(|(_, layer)| Arc::clone(layer))
    };
    let mut chain: Vec<Arc<dyn DynMiddleware>> = Vec::new();
    #[cfg(debug_assertions)]
    chain.push(Arc::new(conformance::Conformance::default()));
    chain.extend(at(Place::Outermost));
    for step in Step::ALL {
        chain.extend(at(Place::Before(step)));
        if let Some(standard) = standard(step, config, &provider, spill_hint) {
            chain.push(standard);
        }
        chain.extend(at(Place::After(step)));
    }
    chain.extend(at(Place::Innermost));
    chain
}

/// The chain of a registry that only runs its tools
/// ([`RegistryBuilder::tools_only`](crate::RegistryBuilder::tools_only)): none of the steps, and
/// the schema check in debug builds.
pub fn tools_only() -> Vec<Arc<dyn DynMiddleware>> {
    #[cfg(debug_assertions)]
    return vec![Arc::new(conformance::Conformance::default())];
    #[cfg(not(debug_assertions))]
    Vec::new()
}

/// The standard middleware for `step`, or `None` when the configuration switches it off.
fn standard(
    step: Step,
    config: &CoreConfig,
    provider: &Arc<dyn SandboxProvider>,
    spill_hint: &'static str,
) -> Option<Arc<dyn DynMiddleware>> {
    Some(match step {
        Step::Approve => Arc::new(approve::Approve::new(config.approval)),
        Step::Timeout => Arc::new(timeout::Timeout::new(config.timeouts.clone())),
        Step::Dedup if !config.dedup => return None,
        Step::Dedup => Arc::new(dedup::Dedup),
        Step::Truncate => {
            Arc::new(truncate::Truncate::new(config.output.max_bytes).with_hint(spill_hint))
        }
        Step::Redact => Arc::new(redact::Redact),
        Step::Recover => {
            Arc::new(recover::Recover::new(config.recovery.clone(), Arc::clone(provider)))
        }
    })
}
