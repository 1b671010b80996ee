//! image_gen against a fake fal (`POST /<model>` with `Authorization: Key`, answering
//! `images[].url` on another loopback server) and a fake OpenAI images API (`b64_json`), as their
//! documentation gives them: request shapes, files written through the workspace, the images
//! returned, the errors, the refusals before anything is paid for, and no key in any result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::{Fake, MemoryStore, Reply};
use hands_core::config::Approval;
use hands_core::secret::{SecretStore, SecretValue};
use hands_core::{Content, CoreConfig, Mode, Registry, Session, ToolCall, ToolOutput};
use hands_web::{FAL_KEY, ImageConfig, ImageProvider, OPENAI_KEY};
use serde_json::{Value, json};

const FAL: &str = "fal-CANARYkey:0123456789abcdef";
const OPENAI: &str = "sk-CANARYopenai0123456789abcdef";

struct Setup {
    registry: Registry,
    session: Session,
    store: Arc<MemoryStore>,
    _tmp: tempfile::TempDir,
}

fn setup_with(config: ImageConfig, keys: &[(&str, &str)], core: CoreConfig) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    for (name, value) in keys {
        store.put(tmp.path(), name, &SecretValue::new(*value)).unwrap();
    }
    let reader = common::conditions_of(&store, tmp.path());
    let dynstore: Arc<dyn SecretStore> = store.clone();
    let builder = Registry::builder(core).conditions_with(reader);
    let registry =
        hands_web::register_image(builder, &common::guard(5_000), &config, Some(dynstore)).build();
    let session = Session::new("s1", tmp.path());
    Setup { registry, session, store, _tmp: tmp }
}

fn fal_at(url: &str) -> ImageConfig {
    ImageConfig { base_url: Some(url.to_owned()), ..ImageConfig::default() }
}

fn fal(url: &str) -> Setup {
    setup_with(fal_at(url), &[(FAL_KEY, FAL)], CoreConfig::default())
}

async fn call(s: &Setup, args: Value) -> ToolOutput {
    s.registry.dispatch(&s.session, ToolCall::new("c1", "image_gen", args)).await.unwrap()
}

fn shown(out: &ToolOutput) -> String {
    format!("{}\n{}", out.joined_text(), out.structured.clone().unwrap_or(Value::Null))
}

fn images(out: &ToolOutput) -> Vec<(Vec<u8>, String)> {
    out.content
        .iter()
        .filter_map(|c| match c {
            Content::Image { data, mime_type } => Some((data.clone(), mime_type.clone())),
            Content::Text { .. } => None,
        })
        .collect()
}

/// fal's documented answer: `images` with URLs on `host`.
fn fal_answer(host: &str, names: &[&str], prompt: &str) -> Reply {
    let images: Vec<Value> = names
        .iter()
        .map(|n| json!({"url": format!("{host}/files/{n}"), "width": 4, "height": 3, "content_type": "image/png"}))
        .collect();
    Reply::json(
        "200 OK",
        &json!({"images": images, "timings": {"inference": 0.41}, "seed": 15860307465884635512u64,
                "has_nsfw_concepts": vec![false; names.len()], "prompt": prompt}),
    )
}

/// The host of fal's result files: `/files/NAME.png` is a PNG, `.jpg` a JPEG, else HTML.
async fn media() -> Fake {
    Fake::serve(|seen, _| {
        let line = seen.line();
        if line.ends_with(".png") {
            Reply::new("200 OK", "image/png", common::png(4, 3))
        } else if line.ends_with(".jpg") {
            Reply::new("200 OK", "image/jpeg", common::jpeg(8, 6))
        } else {
            Reply::new("200 OK", "text/html", "<html>not an image</html>")
        }
    })
    .await
}

#[tokio::test]
async fn fal_request_result_urls_and_files() {
    let media = media().await;
    let host = media.url.clone();
    let fake = Fake::serve(move |seen, _| {
        let prompt = seen.json()["prompt"].as_str().unwrap().to_owned();
        fal_answer(&host, &["a.png", "b.png"], &prompt)
    })
    .await;
    let s = fal(&fake.url);
    let out = call(&s, json!({"prompt": "A red fox in snow", "n": 2, "size": "landscape"})).await;
    assert!(!out.is_error, "{}", out.joined_text());

    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].line(), "POST /fal-ai/flux/schnell");
    assert_eq!(seen[0].header("authorization").unwrap(), format!("Key {FAL}"));
    assert_eq!(seen[0].header("content-type").unwrap(), "application/json");
    assert_eq!(
        seen[0].json(),
        json!({"prompt": "A red fox in snow", "image_size": "landscape_4_3", "num_images": 2,
               "output_format": "png", "enable_safety_checker": true})
    );
    // The result files are fetched without the key.
    let fetched = media.seen();
    assert_eq!(
        fetched.iter().map(|s| s.line()).collect::<Vec<_>>(),
        ["GET /files/a.png", "GET /files/b.png"]
    );
    assert!(
        fetched.iter().all(|s| s.header("authorization").is_none() && !s.head.contains("CANARY"))
    );

    let png = common::png(4, 3);
    for name in ["a-red-fox-in-snow.png", "a-red-fox-in-snow-2.png"] {
        assert_eq!(std::fs::read(s.session.root().join(".hands/media").join(name)).unwrap(), png);
    }
    let result = out.structured.clone().unwrap();
    assert_eq!(result["provider"], "fal");
    assert_eq!(result["model"], "fal-ai/flux/schnell");
    assert_eq!(
        result["images"][1],
        json!({"path": ".hands/media/a-red-fox-in-snow-2.png", "action": "created",
               "mime_type": "image/png", "width": 4, "height": 3, "bytes": png.len()})
    );
    let text = out.joined_text();
    assert!(text.contains("Generated 2 images with fal (fal-ai/flux/schnell)"), "{text}");
    assert!(text.contains("- .hands/media/a-red-fox-in-snow.png (4×3 px, image/png"), "{text}");
    assert_eq!(images(&out), vec![(png.clone(), "image/png".to_owned()); 2]);
    assert!(!shown(&out).contains("CANARY"));
}

#[tokio::test]
async fn sizes_data_urls_and_the_safety_flag() {
    let png = common::png(4, 3);
    let data =
        format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(&png));
    let fake = Fake::serve(move |_, _| {
        Reply::json(
            "200 OK",
            &json!({"images": [{"url": data, "content_type": "image/png"}],
                                      "has_nsfw_concepts": [true], "prompt": "p"}),
        )
    })
    .await;
    let s = fal(&fake.url);
    for (size, expected) in [
        (json!("square"), json!("square_hd")),
        (json!("portrait"), json!("portrait_4_3")),
        (json!("1280x720"), json!({"width": 1280, "height": 720})),
        (Value::Null, json!("square_hd")),
    ] {
        let out = call(&s, json!({"prompt": "a logo", "size": size})).await;
        assert!(!out.is_error, "{}", out.joined_text());
        assert!(out.joined_text().contains("safety checker flagged 1"), "{}", out.joined_text());
        assert_eq!(fake.seen().last().unwrap().json()["image_size"], expected, "{size}");
        assert_eq!(images(&out)[0].0, png);
    }
    let names: Vec<String> = std::fs::read_dir(s.session.root().join(".hands/media"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 4, "the default path never replaces a file: {names:?}");
}

#[tokio::test]
async fn an_existing_path_is_refused_before_anything_is_paid_for() {
    let media = media().await;
    let host = media.url.clone();
    let fake = Fake::serve(move |_, _| fal_answer(&host, &["a.png"], "p")).await;
    let s = fal(&fake.url);
    let root = s.session.root().to_path_buf();
    std::fs::create_dir_all(root.join("public")).unwrap();
    std::fs::write(root.join("public/hero.png"), b"old").unwrap();
    let out = call(&s, json!({"prompt": "hero", "path": "public/hero.png"})).await;
    assert!(out.is_error);
    assert!(
        out.joined_text().contains("public/hero.png already exists; nothing was generated"),
        "{}",
        out.joined_text()
    );
    // n = 2 checks the sibling too.
    std::fs::write(root.join("public/icon-2.png"), b"old").unwrap();
    let out = call(&s, json!({"prompt": "icon", "path": "public/icon.png", "n": 2})).await;
    assert!(
        out.is_error && out.joined_text().contains("public/icon-2.png already exists"),
        "{}",
        out.joined_text()
    );
    assert!(fake.seen().is_empty());
    assert_eq!(std::fs::read(root.join("public/hero.png")).unwrap(), b"old");

    let out =
        call(&s, json!({"prompt": "hero", "path": "public/hero.png", "overwrite": true})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(out.structured.clone().unwrap()["images"][0]["action"], "replaced");
    assert_eq!(std::fs::read(root.join("public/hero.png")).unwrap(), common::png(4, 3));
}

#[tokio::test]
async fn a_jpeg_for_a_png_path_is_saved_with_its_own_extension() {
    let media = media().await;
    let host = media.url.clone();
    let fake = Fake::serve(move |_, _| fal_answer(&host, &["a.jpg"], "p")).await;
    let s = fal(&fake.url);
    let out = call(&s, json!({"prompt": "photo", "path": "img/photo.png"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let result = out.structured.clone().unwrap();
    assert_eq!(result["images"][0]["path"], "img/photo.jpg");
    assert_eq!(result["images"][0]["mime_type"], "image/jpeg");
    assert_eq!(
        (result["images"][0]["width"].clone(), result["images"][0]["height"].clone()),
        (json!(8), json!(6))
    );
    assert!(
        result["notes"][0]
            .as_str()
            .unwrap()
            .contains("Saved as img/photo.jpg (image/jpeg) instead of img/photo.png")
    );
    assert!(s.session.root().join("img/photo.jpg").exists());
    assert!(!s.session.root().join("img/photo.png").exists());
}

#[tokio::test]
async fn what_is_not_an_image_or_not_allowed_is_never_written() {
    let media = media().await;
    let host = media.url.clone();
    let fake = Fake::serve(move |_, _| fal_answer(&host, &["page.html"], "p")).await;
    let s = fal(&fake.url);
    let out = call(&s, json!({"prompt": "x"})).await;
    assert!(out.is_error);
    assert!(
        out.joined_text().contains("not an image (its bytes are text/html)"),
        "{}",
        out.joined_text()
    );
    assert!(!s.session.root().join(".hands/media").exists());

    // A result URL on another loopback address is refused by the guard, and never reached.
    let inside =
        Fake::serve_on("127.0.0.2", |_, _| Reply::new("200 OK", "image/png", common::png(4, 3)))
            .await;
    let host = inside.url.clone();
    let fake = Fake::serve(move |_, _| fal_answer(&host, &["a.png"], "p")).await;
    let s = fal(&fake.url);
    let out = call(&s, json!({"prompt": "x"})).await;
    assert!(out.is_error);
    let text = out.joined_text();
    assert!(
        text.contains("fal's image could not be fetched") && text.contains("127.0.0.2"),
        "{text}"
    );
    assert!(inside.seen().is_empty());
    assert!(!s.session.root().join(".hands/media").exists());
}

#[tokio::test]
async fn fal_errors_say_what_to_do_and_never_show_the_key() {
    let cases: Vec<(Reply, &str)> = vec![
        (
            Reply::json("401 Unauthorized", &json!({"detail": format!("Invalid key {FAL}")})),
            "fal refused the key in FAL_KEY (HTTP 401)",
        ),
        (
            Reply::json(
                "403 Forbidden",
                &json!({"detail": "User is locked. Reason: Exhausted balance."}),
            ),
            "Exhausted balance",
        ),
        (
            Reply::json(
                "422 Unprocessable Entity",
                &json!({"detail": [{"loc": ["body", "image_size"], "msg": "Image size too large", "type": "value_error"}]}),
            ),
            "It said: Image size too large",
        ),
        (
            Reply::json("500 Internal Server Error", &json!({"detail": "Internal error"})),
            "HTTP status 500",
        ),
        (Reply::new("200 OK", "text/html", "<html>captive portal</html>"), "not JSON"),
        (Reply::json("200 OK", &json!({"images": [], "prompt": "p"})), "without images"),
    ];
    for (reply, needle) in cases {
        let fake = Fake::serve(move |_, _| reply.clone()).await;
        let s = fal(&fake.url);
        let out = call(&s, json!({"prompt": "x"})).await;
        let text = out.joined_text();
        assert!(out.is_error, "{needle}: {text}");
        assert!(text.contains(needle), "{needle}: {text}");
        assert!(!shown(&out).contains("CANARY"), "{text}");
        assert!(!s.session.root().join(".hands/media").exists());
    }
}

#[tokio::test]
async fn fal_429_is_retried_once_and_a_silent_provider_times_out() {
    let media = media().await;
    let host = media.url.clone();
    let fake = Fake::serve(move |_, n| {
        if n == 0 {
            Reply::json("429 Too Many Requests", &json!({"detail": "Too many requests"}))
                .header("retry-after", "1")
        } else {
            fal_answer(&host, &["a.png"], "p")
        }
    })
    .await;
    let start = Instant::now();
    let out = call(&fal(&fake.url), json!({"prompt": "x"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(start.elapsed() >= Duration::from_millis(900));
    assert_eq!(fake.seen().len(), 2);

    let fake = Fake::serve(|_, _| Reply::hang()).await;
    let config = ImageConfig { timeout_ms: 300, ..fal_at(&fake.url) };
    let s = setup_with(config, &[(FAL_KEY, FAL)], CoreConfig::default());
    let start = Instant::now();
    let out = call(&s, json!({"prompt": "x"})).await;
    assert!(
        out.is_error && out.joined_text().contains("could not reach fal"),
        "{}",
        out.joined_text()
    );
    assert!(out.joined_text().contains("300 ms"), "{}", out.joined_text());
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn openai_only_when_chosen_with_b64_json() {
    let png = common::png(4, 3);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    let fake = Fake::serve(move |_, _| {
        Reply::json(
            "200 OK",
            &json!({"created": 1_713_833_628, "data": [{"b64_json": b64}],
            "usage": {"total_tokens": 100, "input_tokens": 50, "output_tokens": 50}}),
        )
    })
    .await;
    let config = ImageConfig {
        provider: ImageProvider::Openai,
        base_url: Some(fake.url.clone()),
        ..ImageConfig::default()
    };
    // Only FAL_KEY: not offered when the user chose OpenAI.
    let s = setup_with(config.clone(), &[(FAL_KEY, FAL)], CoreConfig::default());
    assert!(s.registry.get("image_gen").is_none());
    let s = setup_with(config.clone(), &[(OPENAI_KEY, OPENAI)], CoreConfig::default());
    let out =
        call(&s, json!({"prompt": "A banner", "size": "landscape", "path": "banner.png"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    let seen = fake.seen();
    assert_eq!(seen[0].line(), "POST /v1/images/generations");
    assert_eq!(seen[0].header("authorization").unwrap(), format!("Bearer {OPENAI}"));
    assert_eq!(
        seen[0].json(),
        json!({"model": "gpt-image-1", "prompt": "A banner", "n": 1, "size": "1536x1024"})
    );
    assert_eq!(std::fs::read(s.session.root().join("banner.png")).unwrap(), png);
    assert_eq!(out.structured.clone().unwrap()["provider"], "openai");
    assert!(!shown(&out).contains("CANARY"));

    // A DALL·E model is asked for base64 explicitly.
    let dalle = ImageConfig { model: Some("dall-e-3".into()), ..config.clone() };
    let s = setup_with(dalle, &[(OPENAI_KEY, OPENAI)], CoreConfig::default());
    let out = call(&s, json!({"prompt": "A banner"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(fake.seen().last().unwrap().json()["response_format"], "b64_json");

    let fake = Fake::serve(|_, _| {
        Reply::json("401 Unauthorized", &json!({"error": {"message": format!("Incorrect API key provided: {OPENAI}"), "type": "invalid_request_error", "code": "invalid_api_key"}}))
    })
    .await;
    let config = ImageConfig { base_url: Some(fake.url.clone()), ..config };
    let out = call(
        &setup_with(config.clone(), &[(OPENAI_KEY, OPENAI)], CoreConfig::default()),
        json!({"prompt": "x"}),
    )
    .await;
    assert!(
        out.is_error && out.joined_text().contains("OPENAI_API_KEY (HTTP 401)"),
        "{}",
        out.joined_text()
    );
    assert!(!shown(&out).contains("CANARY"));

    let fake = Fake::serve(|_, _| {
        Reply::json("400 Bad Request", &json!({"error": {"message": "Your request was rejected as a result of our safety system.", "type": "image_generation_user_error", "code": "moderation_blocked"}}))
    })
    .await;
    let config = ImageConfig { base_url: Some(fake.url.clone()), ..config };
    let out = call(
        &setup_with(config, &[(OPENAI_KEY, OPENAI)], CoreConfig::default()),
        json!({"prompt": "x"}),
    )
    .await;
    assert!(
        out.is_error && out.joined_text().contains("rejected as a result of our safety system"),
        "{}",
        out.joined_text()
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_before_anything_is_sent() {
    let fake = Fake::serve(|_, _| Reply::json("200 OK", &json!({"images": []}))).await;
    let s = fal(&fake.url);
    std::fs::create_dir_all(s.session.root().join(".git/hooks")).unwrap();
    for (args, needle) in [
        (json!({}), "prompt"),
        (json!({"prompt": 5}), "prompt"),
        (json!({"prompt": "   "}), "1 to 4000"),
        (json!({"prompt": "p".repeat(4001)}), "1 to 4000"),
        (json!({"prompt": "p".repeat(1_000_000)}), "1 to 4000"),
        (json!({"prompt": "x", "n": 0}), "1 to 4"),
        (json!({"prompt": "x", "n": 5}), "1 to 4"),
        (json!({"prompt": "x", "n": "2"}), "`n`"),
        (json!({"prompt": "x", "size": "huge"}), "not a size"),
        (json!({"prompt": "x", "size": "10x10"}), "not a size"),
        (json!({"prompt": "x", "size": 1024}), "size"),
        (json!({"prompt": "x", "path": "../outside.png"}), "outside the project"),
        (json!({"prompt": "x", "path": "/etc/evil.png"}), "outside the project"),
        (json!({"prompt": "x", "path": ".git/hooks/pre-commit.png"}), ".git"),
        (json!({"prompt": "x", "path": "notes.txt"}), "must end in .png"),
        (json!({"prompt": "x", "path": "a\u{0}b.png"}), "NUL"),
        (json!({"prompt": "x", "style": "anime"}), "unknown"),
    ] {
        let out = call(&s, args.clone()).await;
        assert!(out.is_error, "{args}");
        let text = out.joined_text();
        assert!(text.contains(needle), "{args}: {text}");
    }
    assert!(fake.seen().is_empty());
    let entries: Vec<_> =
        std::fs::read_dir(s.session.root()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(entries.iter().all(|e| e == ".git" || e == ".hands"), "{entries:?}");
    assert!(!s.session.root().join(".hands/media").exists());
}

#[tokio::test]
async fn it_needs_approval_under_ask() {
    let fake = Fake::serve(|_, _| Reply::json("200 OK", &json!({"images": []}))).await;
    let core = CoreConfig { approval: Approval::Ask, ..CoreConfig::default() };
    let s = setup_with(fal_at(&fake.url), &[(FAL_KEY, FAL)], core);
    let spec = s.registry.get("image_gen").unwrap().spec().clone();
    assert!(spec.needs_approval && !spec.annotations.read_only);
    assert!(s.registry.list(Mode::Plan).iter().all(|t| t.name != "image_gen"));
    // No approver on the session: nobody can say yes, so nothing is generated.
    let out = call(&s, json!({"prompt": "x"})).await;
    assert!(out.is_error, "{}", out.joined_text());
    assert!(fake.seen().is_empty());
}

#[tokio::test]
async fn offered_while_its_key_is_stored() {
    let fake = Fake::serve(|_, _| Reply::json("200 OK", &json!({"images": []}))).await;
    let s = setup_with(fal_at(&fake.url), &[], CoreConfig::default());
    assert!(s.registry.get("image_gen").is_none());
    s.store.put(s.session.root(), FAL_KEY, &SecretValue::new(FAL)).unwrap();
    assert!(s.registry.refresh());
    assert!(s.registry.list(Mode::Build).iter().any(|t| t.name == "image_gen"));
    s.store.delete(s.session.root(), FAL_KEY).unwrap();
    assert!(s.registry.refresh());
    assert!(s.registry.get("image_gen").is_none());
}

#[test]
fn spec_snapshot() {
    let s = fal("http://127.0.0.1:9");
    let spec = s.registry.list(Mode::Build).into_iter().find(|s| s.name == "image_gen").unwrap();
    insta::assert_snapshot!("description", spec.description);
    insta::assert_json_snapshot!(
        "schemas",
        json!({"input": spec.input_schema, "output": spec.output_schema, "annotations": spec.annotations})
    );
}
