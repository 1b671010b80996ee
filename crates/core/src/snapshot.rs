//! One immutable state of the registry's tool list: the tools in listing order and every name and
//! alias they answer to. Built from the sources' current tools by one rule for conflicts: the
//! first source wins (built-ins come first), so a remote tool can never shadow a built-in; within
//! one source a later tool with the same name replaces an earlier one. An alias that collides with
//! a name or another alias is an error among the built-ins (a bug in the code that lists them) and
//! drops the later tool, logged, from any other source.

use std::collections::HashMap;
use std::sync::Arc;

use crate::DynTool;

/// Why the built-in tools cannot form a registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// `name`, a name or alias of `tool`, is already the name or an alias of `holder`.
    #[error(
        "`{name}` (a name or alias of {tool}) is already taken by {holder}: give one of them \
         another alias in its policy()"
    )]
    NameTaken {
        /// The colliding name or alias.
        name: String,
        /// The tool that wanted it.
        tool: String,
        /// The tool that has it.
        holder: String,
    },
}

/// See the module docs.
#[derive(Default)]
pub(crate) struct Snapshot {
    /// The tools, in listing order.
    pub(crate) tools: Vec<Arc<dyn DynTool>>,
    /// Name or alias → index in `tools`.
    names: HashMap<String, usize>,
}

impl Snapshot {
    /// From each source's tools, in source order. The first source's conflicts are errors; later
    /// sources' conflicting tools are dropped with a warning.
    pub(crate) fn build(
        sources: Vec<(&str, Vec<Arc<dyn DynTool>>)>,
    ) -> Result<Self, RegistryError> {
        let mut snapshot = Self::default();
        for (index, (source, tools)) in sources.into_iter().enumerate() {
            for tool in dedup(tools) {
                match snapshot.add(tool) {
                    Ok(()) => {}
                    Err(err) if index == 0 => return Err(err),
                    Err(err) => tracing::warn!(source, %err, "a tool is not offered"),
                }
            }
        }
        Ok(snapshot)
    }

    fn add(&mut self, tool: Arc<dyn DynTool>) -> Result<(), RegistryError> {
        let spec = tool.spec();
        let mut wanted = vec![spec.name.as_str()];
        wanted.extend(spec.policy.aliases.iter().copied());
        for (i, name) in wanted.iter().enumerate() {
            let holder = match self.names.get(*name) {
                Some(&at) => self.tools[at].spec().name.clone(),
                None if wanted[..i].contains(name) => spec.name.clone(),
                None => continue,
            };
            return Err(RegistryError::NameTaken {
                name: (*name).to_owned(),
                tool: spec.name.clone(),
                holder,
            });
        }
        let at = self.tools.len();
        for name in wanted {
            self.names.insert(name.to_owned(), at);
        }
        self.tools.push(tool);
        Ok(())
    }

    /// The tool answering to `name` (its name or an alias).
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.names.get(name).map(|&at| &self.tools[at])
    }

    /// True when both hold the same tools in the same order.
    pub(crate) fn same(&self, other: &Self) -> bool {
        self.tools.len() == other.tools.len()
            && self.tools.iter().zip(&other.tools).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// Within one source, a later tool with the same name replaces an earlier one (in its place).
fn dedup(tools: Vec<Arc<dyn DynTool>>) -> Vec<Arc<dyn DynTool>> {
    let mut out: Vec<Arc<dyn DynTool>> = Vec::with_capacity(tools.len());
    for tool in tools {
        match out.iter_mut().find(|t| t.spec().name == tool.spec().name) {
            Some(slot) => *slot = tool,
            None => out.push(tool),
        }
    }
    out
}
