#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Properties: an edit followed by its inverse restores the file byte for byte (LF, CRLF, mixed line
//! endings, with and without BOM), and read_file never panics whatever the offset and limit.

use crate::common;

use common::Project;
use proptest::prelude::*;
use serde_json::json;

/// The marker in new_string; the generated files never contain it, so the inverse edit is unique.
const MARK: &str = "\u{2603}";

#[derive(Debug, Clone, Copy)]
enum Endings {
    Lf,
    Crlf,
    Mixed,
}

fn file() -> impl Strategy<Value = (bool, Endings, Vec<String>, Vec<bool>)> {
    (
        any::<bool>(),
        prop_oneof![Just(Endings::Lf), Just(Endings::Crlf), Just(Endings::Mixed)],
        prop::collection::vec("[abc x\t]{0,6}", 1..12),
        prop::collection::vec(any::<bool>(), 12),
    )
}

fn render(bom: bool, endings: Endings, lines: &[String], crlf: &[bool]) -> (String, Vec<usize>) {
    let mut out = String::from(if bom { "\u{FEFF}" } else { "" });
    let mut starts = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        starts.push(out.len());
        out.push_str(line);
        let cr = match endings {
            Endings::Lf => false,
            Endings::Crlf => true,
            Endings::Mixed => crlf[i],
        };
        out.push_str(if cr { "\r\n" } else { "\n" });
    }
    starts.push(out.len());
    (out, starts)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn edit_then_inverse_restores_the_bytes(
        (bom, endings, lines, crlf) in file(),
        a in 0usize..12,
        len in 1usize..4,
        new_text in "[abc\n]{0,8}",
        lf_old in any::<bool>(),
    ) {
        let (content, starts) = render(bom, endings, &lines, &crlf);
        // old_string: whole lines a..a+len (line ending included).
        let a = a % lines.len();
        let b = (a + len).min(lines.len());
        let exact = content[starts[a]..starts[b]].trim_start_matches('\u{FEFF}').to_owned();
        // In a CRLF file, sometimes send old_string with LF line breaks, as a model would; the
        // inverse then puts back the exact original text.
        // (Only when that LF form does not occur verbatim, which would be an exact match elsewhere.)
        let lf = exact.replace("\r\n", "\n");
        let crlf_path = lf_old && matches!(endings, Endings::Crlf) && !content.contains(&lf);
        let old = if crlf_path { lf } else { exact.clone() };
        prop_assume!(!old.is_empty());
        let new = format!("{MARK}{new_text}");
        let p = Project::new();
        p.put("f.txt", &content);
        let rt = runtime();
        let forward = rt.block_on(p.call(
            "edit_file",
            json!({"path": "f.txt", "old_string": old, "new_string": new, "replace_all": true}),
        ));
        prop_assert!(!forward.is_error, "{}", forward.joined_text());
        let edited = String::from_utf8(p.get("f.txt")).unwrap();
        prop_assert_eq!(edited.starts_with('\u{FEFF}'), bom);
        let replacements = forward.structured.unwrap()["replacements"].as_u64().unwrap();
        // Putting bare LFs back into a file that is now CRLF throughout gives them CRLF (the rule
        // for new text in CRLF files), so the bytes cannot come back in that one case.
        let all_crlf = |t: &str| t.contains("\r\n") && t.matches('\n').count() == t.matches("\r\n").count();
        let bare_lf = exact.matches('\n').count() > exact.matches("\r\n").count();
        prop_assume!(!(all_crlf(&edited) && bare_lf));
        let inverse = rt.block_on(p.call(
            "edit_file",
            json!({"path": "f.txt", "old_string": new, "new_string": exact, "replace_all": replacements > 1}),
        ));
        prop_assert!(!inverse.is_error, "{}", inverse.joined_text());
        prop_assert_eq!(p.get("f.txt"), content.into_bytes());
    }

    #[test]
    fn lf_edits_keep_every_crlf_whole(
        lines in prop::collection::vec("[ab x]{0,5}", 2..10),
        from in 0usize..60,
        len in 1usize..12,
        new_text in "[cd\n]{0,6}",
    ) {
        // A pure CRLF file; old_string is any slice of its LF form (it may start or end with \n),
        // new_string uses LF. Whatever edit_file accepts must leave no lone \r or \n behind.
        let content: String = lines.iter().map(|l| format!("{l}\r\n")).collect();
        let lf = content.replace("\r\n", "\n");
        let from = from % lf.len();
        let to = (from + len).min(lf.len());
        let old = lf[from..to].to_owned();
        let new = format!("{MARK}{new_text}");
        let p = Project::new();
        p.put("f.txt", &content);
        let out = runtime().block_on(p.call(
            "edit_file",
            json!({"path": "f.txt", "old_string": old, "new_string": new, "replace_all": true}),
        ));
        let edited = String::from_utf8(p.get("f.txt")).unwrap();
        if out.is_error {
            prop_assert_eq!(edited, content);
        } else {
            let bytes = edited.as_bytes();
            for (i, &b) in bytes.iter().enumerate() {
                if b == b'\n' {
                    prop_assert!(i > 0 && bytes[i - 1] == b'\r', "lone LF in {:?}", edited);
                }
                if b == b'\r' {
                    prop_assert!(bytes.get(i + 1) == Some(&b'\n'), "lone CR in {:?}", edited);
                }
            }
        }
    }

    #[test]
    fn read_file_never_panics(
        content in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'\n'), Just(b'\r'), Just(0xe9u8), Just(b' ')], 0..200),
        offset in prop_oneof![Just(None), Just(Some(0u64)), Just(Some(u64::MAX)), (0u64..300).prop_map(Some)],
        limit in prop_oneof![Just(None), Just(Some(0u64)), Just(Some(u64::MAX)), (0u64..300).prop_map(Some)],
    ) {
        let p = Project::new();
        p.put("f.txt", &content);
        let mut args = json!({"path": "f.txt"});
        if let Some(o) = offset { args["offset"] = json!(o); }
        if let Some(l) = limit { args["limit"] = json!(l); }
        let out = runtime().block_on(p.call("read_file", args));
        if !out.is_error {
            let text = out.joined_text();
            let numbered = text.lines().filter(|l| l.len() > 7 && l.as_bytes()[6] == b'\t').count() as u64;
            prop_assert!(numbered <= limit.unwrap_or(2000).max(1), "{}", text);
        }
    }
}
