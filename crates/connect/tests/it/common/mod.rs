//! What the connect tests share: an in-memory secret store, scripted askers (secrets and
//! questions), a registry with the connect tools, a grep for canaries, and (supabase.rs) the
//! Supabase-like database fixture.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod postgres;
pub mod supabase;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hands_core::ask::{AskError, Asker, AskerHandle, Question};
use hands_core::secret::{
    SecretAsker, SecretAskerHandle, SecretError, SecretRequest, SecretScope, SecretStore,
    SecretValue, StoredSecret,
};
use hands_core::{
    BoxFuture, CancellationToken, CoreConfig, Registry, Session, ToolCall, ToolOutput,
};
use serde_json::Value;

/// Secrets kept in memory by (root, name).
#[derive(Default)]
pub struct MemoryStore(Mutex<BTreeMap<(PathBuf, String), SecretValue>>);

impl MemoryStore {
    pub fn names(&self) -> Vec<String> {
        self.0.lock().unwrap().keys().map(|(_, n)| n.clone()).collect()
    }
}

fn hint(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let head: String = chars.iter().take(4).collect();
    let tail: String = chars[chars.len().saturating_sub(4)..].iter().collect();
    format!("{head}…{tail}")
}

impl SecretStore for MemoryStore {
    fn put(
        &self,
        root: &Path,
        name: &str,
        value: &SecretValue,
    ) -> Result<StoredSecret, SecretError> {
        if value.expose().len() < 8 {
            return Err(SecretError::TooShort);
        }
        self.0.lock().unwrap().insert((root.to_path_buf(), name.to_owned()), value.clone());
        Ok(StoredSecret {
            name: name.to_owned(),
            scope: SecretScope::Project(root.display().to_string()),
            hint: hint(value.expose()),
        })
    }

    fn get(&self, root: &Path, name: &str) -> Option<SecretValue> {
        self.0.lock().unwrap().get(&(root.to_path_buf(), name.to_owned())).cloned()
    }

    fn list(&self, root: &Path) -> Vec<StoredSecret> {
        let map = self.0.lock().unwrap();
        map.iter()
            .filter(|((r, _), _)| r == root)
            .map(|((r, n), v)| StoredSecret {
                name: n.clone(),
                scope: SecretScope::Project(r.display().to_string()),
                hint: hint(v.expose()),
            })
            .collect()
    }

    fn delete(&self, root: &Path, name: &str) -> Result<bool, SecretError> {
        Ok(self.0.lock().unwrap().remove(&(root.to_path_buf(), name.to_owned())).is_some())
    }
}

/// Answers secret requests from a script (name → value); records the names asked.
#[derive(Default)]
pub struct ScriptedSecrets {
    pub answers: BTreeMap<String, String>,
    pub asked: Mutex<Vec<SecretRequest>>,
}

impl ScriptedSecrets {
    pub fn new(answers: &[(&str, &str)]) -> Arc<Self> {
        Arc::new(Self {
            answers: answers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            asked: Mutex::default(),
        })
    }

    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().iter().map(|r| r.name.clone()).collect()
    }
}

impl SecretAsker for ScriptedSecrets {
    fn request<'a>(
        &'a self,
        request: &'a SecretRequest,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SecretValue, AskError>> {
        self.asked.lock().unwrap().push(request.clone());
        let answer = self.answers.get(&request.name).cloned();
        Box::pin(async move { answer.map(SecretValue::new).ok_or(AskError::Declined(None)) })
    }
}

/// Answers questions from a script, in order; records the questions.
#[derive(Default)]
pub struct ScriptedQuestions {
    pub answers: Mutex<Vec<String>>,
    pub asked: Mutex<Vec<String>>,
}

impl Asker for ScriptedQuestions {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        self.asked.lock().unwrap().push(question.question.clone());
        let mut answers = self.answers.lock().unwrap();
        let answer = if answers.is_empty() { None } else { Some(answers.remove(0)) };
        Box::pin(async move { answer.ok_or(AskError::Declined(None)) })
    }
}

/// A session at `root` with the scripted secret asker (and question asker, when given).
pub fn session(
    root: &Path,
    secrets: Option<Arc<ScriptedSecrets>>,
    questions: Option<Arc<ScriptedQuestions>>,
) -> Session {
    let session = Session::new("s1", root);
    if let Some(secrets) = secrets {
        session.insert_extension(SecretAskerHandle(secrets));
    }
    if let Some(questions) = questions {
        session.insert_extension(AskerHandle(questions));
    }
    session
}

/// The registry with the two tools (the debug build's conformance middleware checks every
/// structured result against its schema).
pub fn registry(config: &hands_connect::ConnectConfig, store: Arc<MemoryStore>) -> Registry {
    let guard = hands_net::Guard::new(&config.net).unwrap();
    // The approval step (the registry's) and the tools ask under the same setting, as in the binary.
    let core = CoreConfig { approval: config.approval, ..CoreConfig::default() };
    hands_connect::register(Registry::builder(core), config, &guard, store).build()
}

pub async fn call(registry: &Registry, session: &Session, tool: &str, args: Value) -> ToolOutput {
    registry.dispatch(session, ToolCall::new("c1", tool, args)).await.unwrap()
}

/// Everything a result shows: its text and its structured part.
pub fn shown(out: &ToolOutput) -> String {
    format!("{}\n{}", out.joined_text(), out.structured.clone().unwrap_or(Value::Null))
}

/// Every file under `dir`, as text (lossy), for canary greps.
pub fn tree_text(dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out
}
