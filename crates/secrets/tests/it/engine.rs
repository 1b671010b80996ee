//! The redaction engine through `hands_core::redact`, as every surface uses it: stored values and
//! their encoded forms, key-shape rules, a value split anywhere across two writes of a stream, and
//! no false positive on ordinary text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Once};

use base64::Engine as _;
use hands_core::redact::{self, Scrubber};
use hands_secrets::Engine;
use proptest::prelude::*;

const TOKEN: &str = "canary-4f2a-Secret/Value+9";
const PEM_VALUE: &str =
    "-----BEGIN KEY-----\nline-one-abcdefgh\nline-two-ijklmnop\n-----END KEY-----";

fn secrets() -> Vec<(&'static str, &'static str)> {
    vec![("API_TOKEN", TOKEN), ("SHORT_ONE", "pw-12345"), ("MULTI", PEM_VALUE)]
}

/// Every test of this binary uses the same engine in the process-wide slot.
fn installed() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| redact::install(Arc::new(Engine::new(secrets()).unwrap())));
}

fn clean(text: &str) -> String {
    installed();
    redact::text(text).into_owned()
}

/// `text` through a Scrubber in pieces cut at `cuts`.
fn streamed(text: &[u8], cuts: &[usize]) -> String {
    installed();
    let mut scrubber = Scrubber::new();
    let mut out = Vec::new();
    let mut last = 0;
    for &cut in cuts {
        scrubber.push(&text[last..cut], &mut out);
        last = cut;
    }
    scrubber.push(&text[last..], &mut out);
    scrubber.finish(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn stored_values_and_their_forms_are_replaced() {
    let b64 = base64::engine::general_purpose::STANDARD;
    let url_safe = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let encoded = [
        TOKEN.to_string(),
        "canary-4f2a-Secret%2FValue%2B9".into(),
        "canary-4f2a-Secret%2fValue%2b9".into(),
        "canary-4f2a-Secret\\/Value+9".into(),
        b64.encode(TOKEN),
        url_safe.encode(TOKEN),
        "line-one-abcdefgh".into(),
    ];
    for form in encoded {
        let out = clean(&format!("before {form} after"));
        assert!(out.contains("[secret:"), "{form}: {out}");
        assert!(!out.contains(&form), "{form}: {out}");
    }
    assert_eq!(clean(&format!("x={TOKEN};")), "x=[secret:API_TOKEN];");
    assert_eq!(clean(PEM_VALUE), "[secret:MULTI]");
}

#[test]
fn base64_of_a_longer_text_hides_the_value_at_every_alignment() {
    for prefix in ["", "a", "ab", "abc"] {
        let text = format!("export API_TOKEN={prefix}{TOKEN}\n");
        for engine in
            [base64::engine::general_purpose::STANDARD, base64::engine::general_purpose::URL_SAFE]
        {
            let encoded = engine.encode(&text);
            let out = clean(&encoded);
            assert!(out.contains("[secret:API_TOKEN]"), "{prefix:?} {encoded} -> {out}");
        }
    }
}

#[test]
fn key_shapes_are_redacted_by_rule() {
    let cases = [
        ("sk_live_51HxAbCdEfGhIjKlMnOpQrSt", "stripe_key"),
        ("rk_live_51HxAbCdEfGhIjKlMnOpQrSt", "stripe_key"),
        ("sk_test_51HxAbCdEfGhIjKlMnOpQrSt", "stripe_key"),
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx_yz-0123", "anthropic_key"),
        ("sk-proj-AbCdEfGhIjKlMnOpQrStUvWx_yz-0123", "openai_key"),
        ("ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "github_token"),
        ("github_pat_11AbCdEfG0123456789_AbCdEfGhIjKlMnOpQrStUvWxYz", "github_token"),
        ("AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "private_key",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----", "private_key"),
    ];
    for (key, rule) in cases {
        let out = clean(&format!("key: {key}\nnext line"));
        assert_eq!(out, format!("key: [redacted:{rule}]\nnext line"), "{key}");
        // Cut anywhere, still redacted.
        for cut in 1..key.len() + 6 {
            let text = format!("key: {key}\nnext line");
            let out = streamed(text.as_bytes(), &[cut]);
            assert_eq!(out, format!("key: [redacted:{rule}]\nnext line"), "{key} cut at {cut}");
        }
    }
}

#[test]
fn no_false_positives() {
    let ordinary = [
        "the task_live_update ran; ask_test_runner; risk_live_feed",
        "sk_test_short and sk_live_ alone",
        "mask-ant-colony sk-ant- is a prefix only",
        "AKIAIOSFODNN7EXAMPLEX is too long, AKIA1234 too short",
        // A JWT (a Supabase anon key is public).
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYW5vbiJ9.dGhpcyBpcyBub3QgYSBzaWc",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        "pw-1234 is short; canary-4f2a-Secret is a prefix only",
    ];
    installed();
    let engine = redact::current();
    for text in ordinary {
        assert!(!engine.finds(text.as_bytes()), "{text}");
        assert_eq!(clean(text), text);
    }
    assert_eq!(clean("a pw-12345 b"), "a [secret:SHORT_ONE] b");
}

#[test]
fn a_clean_stream_is_held_only_where_a_pattern_could_start() {
    installed();
    let mut scrubber = Scrubber::new();
    let mut out = Vec::new();
    scrubber.push(b"compiling 12 crates\n", &mut out);
    assert_eq!(scrubber.held(), 0, "nothing to hold: {:?}", String::from_utf8_lossy(&out));
    scrubber.push(b"value canary-4f", &mut out);
    assert_eq!(scrubber.held(), "canary-4f".len());
    scrubber.push(b"2a-Secret/Value+9 done", &mut out);
    scrubber.finish(&mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "compiling 12 crates\nvalue [secret:API_TOKEN] done"
    );
}

#[test]
fn an_unfinished_pem_block_is_held_then_cut() {
    installed();
    let mut scrubber = Scrubber::new();
    let mut out = Vec::new();
    scrubber.push(b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE", &mut out);
    assert!(out.is_empty());
    scrubber.push(&vec![b'A'; 70 * 1024], &mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("[redacted:private_key]"), "{}", &text[..40.min(text.len())]);
    assert!(!text.contains("MHcCAQEE"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A value split at any position across two writes, with anything around it, is still hidden.
    #[test]
    fn a_secret_split_anywhere_is_still_redacted(
        before in "[a-z \n]{0,40}",
        after in "[a-z \n]{0,40}",
        cut in 0usize..200,
        second in 0usize..200,
        which in 0usize..3,
    ) {
        let b64 = base64::engine::general_purpose::STANDARD.encode(TOKEN);
        let value = [TOKEN, "sk_live_51HxAbCdEfGhIjKlMnOpQrSt", b64.as_str()][which];
        let text = format!("{before} {value} {after}");
        let len = text.len();
        let mut cuts = vec![cut % (len + 1), second % (len + 1)];
        cuts.sort_unstable();
        let out = streamed(text.as_bytes(), &cuts);
        prop_assert!(!out.contains(value), "{out}");
        prop_assert!(out.contains("[secret:API_TOKEN]") || out.contains("[redacted:stripe_key]"), "{out}");
        prop_assert_eq!(out, clean(&text));
    }

    /// Writes longer than the part a held tail is redacted with (4 KiB): a write cut inside a
    /// value, then a long one with more values anywhere in it (across the 4 KiB mark too).
    #[test]
    fn long_writes_after_a_held_tail(
        places in proptest::collection::vec(0usize..460, 1..6),
        offsets in proptest::collection::vec(0usize..48, 1..4),
        which in 0usize..3,
    ) {
        let b64 = base64::engine::general_purpose::STANDARD.encode(TOKEN);
        let values = [TOKEN, "sk_live_51HxAbCdEfGhIjKlMnOpQrSt", b64.as_str()];
        let mut lines = vec!["lorem ipsum dolor sit amet, consectetur\n".to_string(); 460];
        for (i, &place) in places.iter().enumerate() {
            lines[place] = format!("lorem {} amet\n", values[(which + i) % 3]);
        }
        let text = lines.concat();
        let starts: Vec<usize> = text.match_indices("lorem ").map(|(at, _)| at + 6).collect();
        let mut cuts: Vec<usize> = offsets
            .iter()
            .zip(&places)
            .map(|(&off, &place)| (starts[place] + off).min(text.len()))
            .collect();
        cuts.sort_unstable();
        let out = streamed(text.as_bytes(), &cuts);
        for value in values {
            prop_assert!(!out.contains(value));
        }
        prop_assert_eq!(out, clean(&text));
    }

    /// Text without a secret comes out as it went in, however it is cut.
    #[test]
    fn ordinary_text_passes_unchanged(text in "[ -~\n]{0,300}", cut in 0usize..300) {
        prop_assume!(!text.contains("pw-12345") && !text.contains("AKIA") && !text.contains("-----"));
        let cut = cut % (text.len() + 1);
        prop_assert_eq!(streamed(text.as_bytes(), &[cut]), text);
    }
}

/// With a thousand stored values, each one is found wherever it sits (every offset modulo the
/// prefilter's stride), alone and among the others, and nothing else is touched.
#[test]
fn a_thousand_values_are_each_found_at_every_offset() {
    use hands_core::redact::Redactor as _;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    let values: Vec<(String, String)> = (0..1000)
        .map(|i| {
            let len = 8 + (next() % 40) as usize;
            let value = (0..len).map(|_| ALPHABET[(next() % 64) as usize] as char).collect();
            (format!("SECRET_{i}"), value)
        })
        .collect();
    let engine = Engine::new(values.iter().map(|(n, v)| (n.as_str(), v.as_str()))).unwrap();
    for (i, (name, value)) in values.iter().enumerate() {
        let pad = " ".repeat(i % 7);
        let text = format!("{pad}line: {value} end");
        let mut out = Vec::new();
        engine.redact(text.as_bytes(), false, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), format!("{pad}line: [secret:{name}] end"));
    }
    let all: String = values.iter().map(|(_, v)| format!("{v}\n")).collect();
    let mut out = Vec::new();
    engine.redact(all.as_bytes(), false, &mut out);
    let expected: String = values.iter().map(|(n, _)| format!("[secret:{n}]\n")).collect();
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    let ordinary = "Compiling serde v1.0 (registry)\n   Finished release in 0.42s\n".repeat(50);
    assert!(!engine.finds(ordinary.as_bytes()));
}

/// Issue 15, item 5: find_all reports what redact replaces, by place and name, for scanners.
#[test]
fn find_all_reports_each_secret_where_redact_would_replace_it() {
    let engine = Engine::new([("DB_PASSWORD", "CANARYfind-9d8c7b6a")]).unwrap();
    let key = format!("sk_{}_{}", "live", "AbCdEfGhIjKlMnOpQrSt");
    let text = format!("a {key} b CANARYfind-9d8c7b6a c Q0FOQVJZZmluZC05ZDhjN2I2YQ and text\n");
    let hits = engine.find_all(text.as_bytes());
    let shown: Vec<(usize, &str, bool)> =
        hits.iter().map(|h| (h.start, h.name.as_str(), h.stored)).collect();
    assert_eq!(shown[0], (2, "stripe_key", false));
    assert_eq!(shown[1], (text.find("CANARY").unwrap(), "DB_PASSWORD", true));
    assert_eq!(&text[hits[1].start..hits[1].end], "CANARYfind-9d8c7b6a");
    assert_eq!(hits.len(), 3, "the base64 form too: {shown:?}");
    assert!(engine.find_all(b"nothing secret here at all").is_empty());
}

/// Issue 26, item 9: the token shapes of credential files. npm tokens are replaced whole; a value
/// assigned to a credential setting (`.npmrc`, `~/.aws/credentials`, `.netrc`) is replaced and
/// the setting's name stays; every one is still caught when a stream is cut anywhere in it.
#[test]
fn credential_files_token_shapes() {
    let npm = format!("npm_{}", "CanaryNpm0123456789abcdefghijklmnopq");
    let aws = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYCANARYKEY1";
    let cases = [
        (format!("token {npm}\n"), "token [redacted:npm_token]\n".to_owned()),
        (
            "//registry.example.test/:_authToken=9f8e7d6c-canary-npmrc\n".into(),
            "//registry.example.test/:_authToken=[redacted:npm_token]\n".into(),
        ),
        ("_auth=dXNlcjpjYW5hcnktcGFzcw==\n".into(), "_auth=[redacted:npm_token]\n".into()),
        (
            "npmAuthToken: \"canary-yarn-token\"\n".into(),
            "npmAuthToken: \"[redacted:npm_token]\"\n".into(),
        ),
        (
            format!("[default]\naws_secret_access_key = {aws}\n"),
            "[default]\naws_secret_access_key = [redacted:aws_secret_key]\n".into(),
        ),
        (
            format!("export AWS_SECRET_ACCESS_KEY=\"{aws}\"\n"),
            "export AWS_SECRET_ACCESS_KEY=\"[redacted:aws_secret_key]\"\n".into(),
        ),
        (
            format!("{{\"aws_secret_access_key\": \"{aws}\"}}"),
            "{\"aws_secret_access_key\": \"[redacted:aws_secret_key]\"}".into(),
        ),
        (
            "machine api.example.test login me password canary-netrc-pw\n".into(),
            "machine api.example.test login me password [redacted:netrc_password]\n".into(),
        ),
        (
            "machine git.example.test\n  login me\n  password canary-netrc-2\n".into(),
            "machine git.example.test\n  login me\n  password [redacted:netrc_password]\n".into(),
        ),
    ];
    for (text, want) in &cases {
        assert_eq!(&clean(text), want, "{text}");
        for cut in 1..text.len() {
            assert_eq!(&streamed(text.as_bytes(), &[cut]), want, "{text} cut at {cut}");
        }
    }
    for ordinary in [
        "_authToken=${NPM_TOKEN}\n",
        "the machine learning password is long\n",
        "npm_config_cache=/tmp/npm\n",
        "aws_secret_access_key = tooShort\n",
        "my_aws_secret_access_key_name is a setting\n",
    ] {
        assert_eq!(clean(ordinary), ordinary);
    }
}

/// `text` base64-encoded and wrapped at `width` columns with `eol`, as `base64` (76), openssl
/// and PEM (64) write it.
fn wrapped(text: &[u8], width: usize, eol: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let lines: Vec<&str> =
        encoded.as_bytes().chunks(width).map(|l| std::str::from_utf8(l).unwrap()).collect();
    let mut out = lines.join(eol);
    out.push_str(eol);
    out
}

/// Issue 26, item 7: a stored value and a key shape inside a wrapped base64 text (a whole `.env`
/// through `base64`, openssl or a PEM body) are hidden wherever the line breaks fall in them and
/// at every alignment, also when the stream is cut anywhere.
#[test]
fn wrapped_base64_hides_stored_values_and_key_shapes() {
    let stripe = "sk_live_51HxCanaryWrappedKey0123";
    for pad in 0..80 {
        let env = format!(
            "# settings\nNODE_ENV=production\nPAD={}\nAPI_TOKEN={TOKEN}\nSTRIPE={stripe}\nPORT=3000\nTAIL=done\n",
            "p".repeat(pad)
        );
        for (width, eol) in [(76, "\n"), (64, "\n"), (64, "\r\n"), (76, "\r\n")] {
            let text = format!("$ base64 .env\n{}$ done\n", wrapped(env.as_bytes(), width, eol));
            let out = clean(&text);
            assert!(out.contains("[secret:API_TOKEN]"), "pad {pad} width {width}: {out}");
            assert!(out.contains("[redacted:stripe_key]"), "pad {pad} width {width}: {out}");
            assert!(out.starts_with("$ base64 .env\n") && out.ends_with("$ done\n"), "{out}");
            // What is left decodes to nothing of either.
            let rest: String = out
                .replace("[secret:API_TOKEN]", "\n")
                .replace("[redacted:stripe_key]", "\n")
                .lines()
                .filter(|l| !l.starts_with('$'))
                .collect::<Vec<_>>()
                .join("");
            for piece in rest.split('\n') {
                let bytes = piece.as_bytes();
                for skip in 0..4.min(bytes.len()) {
                    let usable = (bytes.len() - skip) / 4 * 4;
                    if let Ok(decoded) = base64::engine::general_purpose::STANDARD
                        .decode(&bytes[skip..skip + usable])
                    {
                        let decoded = String::from_utf8_lossy(&decoded);
                        assert!(!decoded.contains("canary-4f2a"), "pad {pad}: {decoded}");
                        assert!(!decoded.contains("CanaryWrapped"), "pad {pad}: {decoded}");
                    }
                }
            }
            if pad % 7 == 0 {
                for cut in (0..text.len()).step_by(13) {
                    assert_eq!(streamed(text.as_bytes(), &[cut]), out, "pad {pad} cut {cut}");
                }
            }
        }
    }
    // A long base64 line (not wrapped) hides a key shape too.
    let line = base64::engine::general_purpose::STANDARD.encode(format!("STRIPE={stripe}\n"));
    assert!(clean(&format!("{line}\n")).contains("[redacted:stripe_key]"), "{line}");
    // Ordinary wrapped base64 is left alone.
    let plain = wrapped(&[7u8; 300], 76, "\n");
    assert_eq!(clean(&plain), plain);
}
