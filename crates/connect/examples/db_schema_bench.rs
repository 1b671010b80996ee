//! The benchmark side of `bench/db_schema.sh`: db_schema through the registry (its middleware
//! included: truncation and its spill file, redaction), in this process, against the database
//! `--url` names, `--runs` times; prints each run's milliseconds and the median.
//! `--print-sql` prints db_schema's catalog queries instead (for psql, the reference).
//!
//! Usage: db_schema_bench --url postgresql://… [--runs 20] [--root DIR]
//!        db_schema_bench --print-sql

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hands_core::secret::{SecretError, SecretScope, SecretStore, SecretValue, StoredSecret};
use hands_core::{CoreConfig, Registry, Session, ToolCall};

/// The URL, in memory.
#[derive(Default)]
struct OneSecret(Mutex<BTreeMap<(PathBuf, String), SecretValue>>);

impl SecretStore for OneSecret {
    fn put(
        &self,
        root: &Path,
        name: &str,
        value: &SecretValue,
    ) -> Result<StoredSecret, SecretError> {
        let mut map = self.0.lock().map_err(|_| SecretError::Io("poisoned".into()))?;
        map.insert((root.to_path_buf(), name.to_owned()), value.clone());
        Ok(StoredSecret {
            name: name.to_owned(),
            scope: SecretScope::Project(root.display().to_string()),
            hint: "…".to_owned(),
        })
    }

    fn get(&self, root: &Path, name: &str) -> Option<SecretValue> {
        self.0.lock().ok()?.get(&(root.to_path_buf(), name.to_owned())).cloned()
    }

    fn list(&self, _root: &Path) -> Vec<StoredSecret> {
        Vec::new()
    }

    fn delete(&self, _root: &Path, _name: &str) -> Result<bool, SecretError> {
        Ok(false)
    }
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--print-sql") {
        for query in hands_connect::catalog_queries("public", None, &[]) {
            println!("{query};");
        }
        return Ok(());
    }
    let url = arg("--url").ok_or("--url postgresql://… is required")?;
    let runs: usize = arg("--runs").map_or(Ok(20), |r| r.parse())?;
    let root = match arg("--root") {
        Some(root) => PathBuf::from(root),
        None => std::env::temp_dir().join(format!("db-schema-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&root)?;
    let store = Arc::new(OneSecret::default());
    store.put(&root, hands_connect::DB_URL_NAME, &SecretValue::new(url))?;
    let mut config = hands_connect::ConnectConfig::default();
    config.net.allow_hosts = vec!["127.0.0.1".into()];
    let guard = hands_net::Guard::new(&config.net)?;
    let registry =
        hands_connect::register(Registry::builder(CoreConfig::default()), &config, &guard, store)
            .build();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let session = Session::new("bench", &root);
    let mut times = Vec::new();
    for run in 0..runs {
        let call = ToolCall::new(format!("c{run}"), "db_schema", serde_json::json!({}));
        let started = Instant::now();
        let out = runtime.block_on(registry.dispatch(&session, call))?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        if out.is_error {
            return Err(out.joined_text().into());
        }
        let tables = out.structured.as_ref().and_then(|s| s["tables"].as_array().map(Vec::len));
        println!("run {run}: {ms:.1} ms ({} tables shown)", tables.unwrap_or(0));
        times.push(ms);
    }
    times.sort_by(f64::total_cmp);
    println!("median {:.1}", times.get(times.len() / 2).copied().unwrap_or(0.0));
    Ok(())
}
