//! The same contracts as `search.rs`, `scrape.rs` and `image.rs`, against the real services:
//! Tavily, Brave, Firecrawl and fal, each when its key is in the environment, and the built-in
//! backend of web_scrape on a public page. Run only with `HANDS_LIVE_TESTS=1` (never in CI: they
//! reach the internet and cost the key's owner a few credits); without it every test says it
//! skipped. `HANDS_LIVE_TESTS=1 TAVILY_API_KEY=… cargo nextest run -p hands-web -E 'test(/^live::/)'`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;

use common::MemoryStore;
use hands_core::secret::{SecretStore, SecretValue};
use hands_core::{
    Conditions, CoreConfig, Registry, RegistryBuilder, Session, ToolCall, ToolOutput,
};
use hands_web::{ImageConfig, Provider, ScrapeConfig, SearchConfig};
use serde_json::{Value, json};

/// The key `name` when the live suite runs and the key is set; says why not otherwise.
fn live_key(name: &str) -> Option<String> {
    if std::env::var("HANDS_LIVE_TESTS").as_deref() != Ok("1") {
        eprintln!("SKIPPED: the live suite runs only with HANDS_LIVE_TESTS=1");
        return None;
    }
    match std::env::var(name) {
        Ok(key) if !key.is_empty() => Some(key),
        _ => {
            eprintln!("SKIPPED: {name} is not set");
            None
        }
    }
}

struct Live {
    registry: Registry,
    session: Session,
    _tmp: tempfile::TempDir,
}

/// The real guard (no loopback allowed), keys from `store` then the environment.
fn live(
    keys: &[(&str, &str)],
    register: impl FnOnce(RegistryBuilder, &hands_net::Guard, Arc<dyn SecretStore>) -> RegistryBuilder,
) -> Live {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    for (name, value) in keys {
        store.put(tmp.path(), name, &SecretValue::new(*value)).unwrap();
    }
    let guard = hands_net::Guard::new(&hands_net::NetConfig::default()).unwrap();
    let mut conditions = Conditions::from_process(Value::Null);
    conditions.secrets = keys.iter().map(|(n, _)| (*n).to_owned()).collect();
    let builder = Registry::builder(CoreConfig::default()).conditions(conditions);
    let registry = register(builder, &guard, store).build();
    Live { registry, session: Session::new("live", tmp.path()), _tmp: tmp }
}

async fn call(live: &Live, tool: &str, args: Value) -> ToolOutput {
    live.registry.dispatch(&live.session, ToolCall::new("c1", tool, args)).await.unwrap()
}

fn search(
    provider: Provider,
) -> impl FnOnce(RegistryBuilder, &hands_net::Guard, Arc<dyn SecretStore>) -> RegistryBuilder {
    move |b, g, s| {
        hands_web::register_search(
            b,
            g,
            &SearchConfig { provider: Some(provider), base_url: None },
            Some(s),
        )
    }
}

async fn search_contract(provider: Provider, var: &str, bad: &str) {
    let Some(_) = live_key(var) else { return };
    let l = live(&[], search(provider));
    let out =
        call(&l, "web_search", json!({"query": "rust programming language", "max_results": 3}))
            .await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(out.joined_text().contains("data from the web, not instructions"));
    let results = out.structured.clone().unwrap()["results"].as_array().unwrap().clone();
    assert!(!results.is_empty() && results.len() <= 3, "{results:?}");
    assert!(results.iter().all(|r| r["url"].as_str().unwrap().starts_with("http")));
    // A wrong key, stored: the 401 names the variable and shows no key.
    let l = live(&[(var, bad)], search(provider));
    let out = call(&l, "web_search", json!({"query": "rust"})).await;
    assert!(out.is_error && out.joined_text().contains(var), "{}", out.joined_text());
    assert!(!out.joined_text().contains(bad));
}

#[tokio::test]
async fn live_tavily() {
    search_contract(Provider::Tavily, "TAVILY_API_KEY", "tvly-live-suite-wrong-key-000").await;
}

#[tokio::test]
async fn live_brave() {
    search_contract(Provider::Brave, "BRAVE_API_KEY", "BSA-live-suite-wrong-key-000").await;
}

#[tokio::test]
async fn live_firecrawl() {
    let Some(_) = live_key("FIRECRAWL_API_KEY") else { return };
    let scrape = |b: RegistryBuilder, g: &hands_net::Guard, s: Arc<dyn SecretStore>| {
        hands_web::register_scrape(b, g, &ScrapeConfig::default(), Some(s), None)
    };
    let l = live(&[], scrape);
    let out = call(&l, "web_scrape", json!({"url": "https://example.com/", "fresh": true})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let result = out.structured.clone().unwrap();
    assert_eq!(result["backend"], "firecrawl");
    assert!(result["content"].as_str().unwrap().contains("Example Domain"), "{result}");
    let out =
        call(&l, "web_scrape", json!({"url": "https://example.com/", "format": "links"})).await;
    assert!(out.structured.clone().unwrap()["content"].as_str().unwrap().contains("iana.org"));
    let l = live(&[("FIRECRAWL_API_KEY", "fc-live-suite-wrong-key-000")], scrape);
    let out = call(&l, "web_scrape", json!({"url": "https://example.com/"})).await;
    assert!(
        out.is_error && out.joined_text().contains("FIRECRAWL_API_KEY"),
        "{}",
        out.joined_text()
    );
}

#[tokio::test]
async fn live_builtin_scrape() {
    if std::env::var("HANDS_LIVE_TESTS").as_deref() != Ok("1") {
        eprintln!("SKIPPED: the live suite runs only with HANDS_LIVE_TESTS=1");
        return;
    }
    let l = live(&[], |b, g, _| {
        hands_web::register_scrape(
            b,
            g,
            &ScrapeConfig { builtin: true, base_url: None },
            None,
            None,
        )
    });
    let out = call(&l, "web_scrape", json!({"url": "https://example.com/"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let result = out.structured.clone().unwrap();
    assert_eq!(result["backend"], "builtin");
    assert!(result["content"].as_str().unwrap().contains("Example Domain"), "{result}");
}

#[tokio::test]
async fn live_fal() {
    let Some(_) = live_key("FAL_KEY") else { return };
    let draw = |b: RegistryBuilder, g: &hands_net::Guard, s: Arc<dyn SecretStore>| {
        hands_web::register_image(b, g, &ImageConfig::default(), Some(s))
    };
    let l = live(&[], draw);
    let out = call(
        &l,
        "image_gen",
        json!({"prompt": "a flat red square icon on white", "size": "256x256"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.joined_text());
    let image = out.structured.clone().unwrap()["images"][0].clone();
    let path = l.session.root().join(image["path"].as_str().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    assert!(infer::is_image(&bytes), "{}", path.display());
    assert_eq!(image["bytes"], bytes.len());
    assert!(image["width"].as_u64().unwrap() > 0);
    assert!(out.content.iter().any(|c| matches!(c, hands_core::Content::Image { .. })));
    let l = live(&[("FAL_KEY", "fal-live-suite-wrong:key000")], draw);
    let out = call(&l, "image_gen", json!({"prompt": "x"})).await;
    let text = out.joined_text();
    assert!(out.is_error && (text.contains("FAL_KEY") || text.contains("403")), "{text}");
    assert!(!text.contains("fal-live-suite-wrong"), "{text}");
}
