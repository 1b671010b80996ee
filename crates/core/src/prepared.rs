//! A call prepared once, at dispatch: its arguments parsed into the tool's typed `Args`, and what
//! the tool says of this call — whether it needs the user's yes, whether it may change things,
//! whether an identical call may be answered from the dedup cache. Every step of the chain after
//! dispatch (approval, dedup, the endpoint, a proxy to a sandbox) reads the prepared call; nothing
//! parses the arguments again.

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

/// What a tool says of one call, from its parsed arguments ([`Tool::call_policy`](crate::Tool::call_policy)).
///
/// By default it is the tool's ([`ToolSpec::call_policy`](crate::ToolSpec::call_policy)): a read-only tool's calls neither ask nor change anything and may
/// be cached. A tool whose calls differ says so per call: connector_call's GET asks nobody and
/// changes nothing, its POST asks; supabase_setup's `status` asks nobody.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPolicy {
    /// Under `approval = "ask"`, the call waits for the user's yes.
    pub needs_approval: bool,
    /// The call may change the project or the world: it clears the dedup cache, runs alone in
    /// the agent loop and makes the tool sources look again afterwards.
    pub mutates: bool,
    /// An identical call within the same turn may be answered from the dedup cache.
    pub cacheable: bool,
    /// The call may outlast a client's request timeout (about a minute): waiting for a server to
    /// be ready, a build, a clone, a sub-agent. A front end may run it as a task the client
    /// polls (MCP's Tasks extension).
    pub outlasts: bool,
}

impl CallPolicy {
    /// A call that asks nobody, changes nothing and is not cached (an answer made without running
    /// a tool: an unknown name, a tool another mode offers, arguments that do not parse).
    pub const ANSWER: Self =
        Self { needs_approval: false, mutates: false, cacheable: false, outlasts: false };
}

/// A call of one tool with its arguments parsed: made by [`DynTool::prepare`](crate::DynTool::prepare)
/// when the call arrives, read by every step after it.
pub struct Prepared {
    policy: CallPolicy,
    /// The typed arguments (`Arc<T::Args>`), until the tool takes them. A proxied tool (an MCP
    /// server's, a sandbox's) has none: it sends the raw JSON on.
    typed: Mutex<Option<Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl Prepared {
    /// A call whose arguments were parsed into `args`.
    pub fn typed<A: Any + Send + Sync>(policy: CallPolicy, args: A) -> Self {
        Self { policy, typed: Mutex::new(Some(Arc::new(args))) }
    }

    /// A call of a tool that takes its arguments as raw JSON.
    pub fn untyped(policy: CallPolicy) -> Self {
        Self { policy, typed: Mutex::new(None) }
    }

    /// What the tool says of this call.
    pub fn policy(&self) -> CallPolicy {
        self.policy
    }

    /// The parsed arguments, shared (for a step that reads them before the call runs).
    pub fn args<A: Any + Send + Sync>(&self) -> Option<Arc<A>> {
        let typed = self.typed.lock().unwrap_or_else(PoisonError::into_inner).clone()?;
        typed.downcast::<A>().ok()
    }

    /// The parsed arguments, taken to run the call. `None` when they were taken already (a step
    /// that runs the call again, such as a retry after a lost sandbox) or are still shared: the
    /// caller then parses the raw arguments again.
    pub fn take_args<A: Any + Send + Sync>(&self) -> Option<A> {
        let typed = self.typed.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        Arc::try_unwrap(typed.downcast::<A>().ok()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_arguments_are_read_shared_then_taken_once() {
        let prepared = Prepared::typed(CallPolicy::ANSWER, String::from("x"));
        assert_eq!(prepared.args::<String>().as_deref().map(String::as_str), Some("x"));
        assert!(prepared.args::<u32>().is_none(), "another type is not these arguments");
        assert_eq!(prepared.take_args::<String>().as_deref(), Some("x"));
        assert!(prepared.take_args::<String>().is_none(), "taken once");
        assert!(Prepared::untyped(CallPolicy::ANSWER).args::<String>().is_none());
    }

    #[test]
    fn arguments_still_shared_are_not_taken() {
        let prepared = Prepared::typed(CallPolicy::ANSWER, 7_u32);
        let shared = prepared.args::<u32>();
        assert!(prepared.take_args::<u32>().is_none(), "a reader still holds them");
        drop(shared);
    }
}
