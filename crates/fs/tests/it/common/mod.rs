//! A project in a temp folder, the fs tools registered, and a session to call them in.
#![allow(dead_code)]

use std::path::PathBuf;

use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use hands_fs::FsConfig;
use serde_json::Value;

pub struct Project {
    pub tmp: tempfile::TempDir,
    pub registry: Registry,
    pub session: Session,
}

impl Project {
    pub fn new() -> Self {
        Self::with_config(FsConfig::default())
    }

    pub fn with_config(config: FsConfig) -> Self {
        Self::with_configs(CoreConfig::default(), config)
    }

    pub fn with_configs(core: CoreConfig, config: FsConfig) -> Self {
        Self::with_hints(core, config, hands_fs::Hints::default())
    }

    /// read_file pointing to the tools `hints` names (the binary's registration).
    pub fn with_hints(core: CoreConfig, config: FsConfig, hints: hands_fs::Hints) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let registry = hands_fs::register_with(Registry::builder(core), &config, hints).build();
        let session = Session::new("test", tmp.path());
        Self { tmp, registry, session }
    }

    pub fn one_shot(mut self) -> Self {
        self.session = Session::one_shot(self.tmp.path());
        self
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    pub fn put(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        let id = self.session.next_call_id();
        self.registry.dispatch(&self.session, ToolCall::new(id, tool, args)).await.unwrap()
    }

    pub async fn call_in(&self, turn: &str, tool: &str, args: Value) -> ToolOutput {
        let id = self.session.next_call_id();
        let call = ToolCall::new(id, tool, args).in_turn(turn);
        self.registry.dispatch(&self.session, call).await.unwrap()
    }

    /// The text of a successful call (panics with the text on an error result).
    pub async fn ok(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args).await;
        assert!(!out.is_error, "{tool} failed: {}", out.joined_text());
        out.joined_text()
    }

    /// The text of a failed call (panics on success).
    pub async fn err(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args).await;
        assert!(out.is_error, "{tool} should fail, got: {}", out.joined_text());
        out.joined_text()
    }
}
