//! Per-turn de-duplication: an identical cacheable call (same tool, same arguments by canonical JSON)
//! within one turn returns the first call's result without running again. Any call that may change
//! things (its [`CallPolicy`](crate::CallPolicy) says it mutates) clears the session's cache before
//! and after it runs, and bumps a generation
//! counter: a read that was already running when a mutating call started does not store its (maybe
//! stale) result, so a read after an edit is never stale, even with parallel calls. Error results
//! are not cached. Calls outside a turn, and calls whose answer changes by itself (not cacheable: a
//! process's output), are never de-duplicated.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use super::{Middleware, Next, Request};
use crate::{ChainError, ToolOutput};

/// The dedup middleware (stateless; the cache lives in the session).
#[derive(Debug, Default, Clone, Copy)]
pub struct Dedup;

/// The session's cache: results of read-only calls of the current turn.
#[derive(Debug, Default)]
pub struct DedupCache(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    /// Bumped by every mutating call, when it starts and when it ends.
    generation: u64,
    /// Mutating calls in flight: nothing is stored while one runs.
    mutating: usize,
    cache: Option<TurnCache>,
}

#[derive(Debug)]
struct TurnCache {
    turn: String,
    results: HashMap<String, ToolOutput>,
}

impl DedupCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A mutating call starts: forget everything.
    fn begin_mutation(&self) {
        let mut state = self.lock();
        state.generation += 1;
        state.mutating += 1;
        state.cache = None;
    }

    /// A mutating call ended: forget everything read meanwhile.
    fn end_mutation(&self) {
        let mut state = self.lock();
        state.generation += 1;
        state.mutating = state.mutating.saturating_sub(1);
        state.cache = None;
    }

    fn generation(&self) -> u64 {
        self.lock().generation
    }

    fn get(&self, turn: &str, key: &str) -> Option<ToolOutput> {
        let state = self.lock();
        state.cache.as_ref().filter(|c| c.turn == turn).and_then(|c| c.results.get(key).cloned())
    }

    /// Store a result read during `generation`, unless a mutating call started since.
    fn put(&self, turn: &str, key: String, output: ToolOutput, generation: u64) {
        let mut state = self.lock();
        if state.generation != generation || state.mutating > 0 {
            return;
        }
        let guard = &mut state.cache;
        match guard.as_mut() {
            Some(cache) if cache.turn == turn => {
                cache.results.insert(key, output);
            }
            _ => {
                *guard = Some(TurnCache {
                    turn: turn.to_owned(),
                    results: HashMap::from([(key, output)]),
                });
            }
        }
    }

    /// Forget everything.
    pub fn clear(&self) {
        self.lock().cache = None;
    }
}

/// The cache key: tool name and arguments as canonical JSON (object keys sorted at every level).
pub fn key(tool: &str, args: &Value) -> String {
    let mut out = String::with_capacity(64);
    out.push_str(tool);
    out.push('\0');
    canonical(args, &mut out);
    out
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

impl Middleware for Dedup {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        let cache = req.ctx.session().extension::<DedupCache>();
        let policy = req.policy();
        if policy.mutates {
            // Ends the mutation even if this future is dropped (timeout, abort).
            struct Mutation<'c>(&'c DedupCache);
            impl Drop for Mutation<'_> {
                fn drop(&mut self) {
                    self.0.end_mutation();
                }
            }
            cache.begin_mutation();
            let _mutation = Mutation(&cache);
            return next.run(req).await;
        }
        let Some(turn) = req.call.turn.clone().filter(|_| policy.cacheable) else {
            return next.run(req).await;
        };
        let key = key(&req.call.name, &req.call.args);
        if let Some(hit) = cache.get(&turn, &key) {
            tracing::debug!(tool = %req.call.name, call_id = %req.call.id, "dedup hit");
            return Ok(hit);
        }
        let generation = cache.generation();
        let result = next.run(req).await;
        if let Ok(output) = &result
            && !output.is_error
        {
            cache.put(&turn, key, output.clone(), generation);
        }
        result
    }

    /// A call that changes things (it clears the cache), or a cacheable read within a turn.
    fn applies(&self, req: &Request<'_>) -> bool {
        let policy = req.policy();
        policy.mutates || (req.call.turn.is_some() && policy.cacheable)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_ignores_object_key_order() {
        let a = key("grep", &json!({"pattern": "x", "path": "src", "opts": {"a": 1, "b": [1, 2]}}));
        let b = key("grep", &json!({"opts": {"b": [1, 2], "a": 1}, "path": "src", "pattern": "x"}));
        assert_eq!(a, b);
        assert_ne!(a, key("grep", &json!({"pattern": "x", "path": "src"})));
        assert_ne!(
            a,
            key("glob", &json!({"pattern": "x", "path": "src", "opts": {"a": 1, "b": [1, 2]}}))
        );
    }
}
