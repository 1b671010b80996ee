//! Secrets a producer cut short before `...` (the engine's `Redactor::cut` and `redact::text_cut`).

use std::sync::Arc;

use hands_core::redact::{MIN_CUT, Redactor, text_cut, text_with};
use hands_secrets::Engine;

const VALUE: &str = "hx_CANARY_JKxJ0zYBS2FyDQenyMrwK1EjqAv6FjAZ5c5sFXWRLvpmMZ5Dhg8ro63gWMW0";

fn engine() -> Engine {
    Engine::new([("API_TOKEN", VALUE)]).expect("engine")
}

#[test]
fn a_stored_value_cut_before_an_ellipsis_is_hidden() {
    let engine = engine();
    // TypeScript's shape: the literal type printed to its first bytes, then `...'`.
    let message = format!(
        "Type 'number' is not assignable to type '{{ a: \"{VALUE}\"; b: \"{}...'.",
        &VALUE[..40]
    );
    let before = text_with(&engine, &message).into_owned();
    assert!(before.contains(&VALUE[..40]), "the plain scan misses the cut value: {before}");
    hands_core::redact::install(Arc::new(engine));
    let shown = text_cut(&message).into_owned();
    hands_core::redact::install(Arc::new(hands_core::redact::Nothing));
    assert!(!shown.contains(&VALUE[..MIN_CUT]), "{shown}");
    assert_eq!(
        shown,
        "Type 'number' is not assignable to type '{ a: \"[secret:API_TOKEN]\"; b: \"[secret:API_TOKEN]...'."
    );
}

#[test]
fn short_or_unrelated_ends_are_left() {
    let engine = engine();
    assert_eq!(engine.cut(&VALUE.as_bytes()[..MIN_CUT - 1]), None, "too few bytes to say much");
    assert_eq!(engine.cut(b"and so on"), None);
    assert_eq!(engine.cut(b""), None);
    let (len, with) = engine.cut(format!("x = {}", &VALUE[..MIN_CUT]).as_bytes()).expect("cut");
    assert_eq!((len, with.as_slice()), (MIN_CUT, b"[secret:API_TOKEN]".as_slice()));
}

#[test]
fn a_key_shape_cut_short_is_hidden_without_being_stored() {
    let engine = Engine::new(std::iter::empty()).expect("engine");
    let (len, with) = engine.cut(b"key \"sk_live_51Habcdefgh").expect("a Stripe key cut short");
    assert_eq!(len, "sk_live_51Habcdefgh".len());
    assert_eq!(with, b"[redacted:stripe_key]");
    assert_eq!(engine.cut(b"sk_live_"), None, "the prefix alone says nothing");
}
