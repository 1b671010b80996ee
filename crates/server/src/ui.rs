//! The web UI at `/`: the files Vite built into `web/dist`, embedded in the binary (a build needs
//! no Node). The page is public behind the Host/Origin checks (it has to load to show its login
//! form); everything it does goes through the token-guarded session API with a bearer header.
//!
//! Every response carries a strict Content-Security-Policy (no inline script, `connect-src
//! 'self'`, nothing from another origin), `frame-ancestors 'none'` and `X-Frame-Options: DENY`.
//! Vite is told to emit fixed names (`app.js`, `app.css`), so each file is revalidated
//! (`no-cache`) against its ETag: a new binary is seen at the next load, an unchanged one costs a
//! 304.

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The policy of every UI response. `img-src data:` is for images in tool results and `blob:` for
/// the preview's screenshots (fetched with the bearer header); `frame-src` allows the preview
/// iframe of an app on the server's loopback, and no other origin. No `http://[::1]:*`: CSP's
/// host-source grammar has no IPv6 literals, and browsers log every load's policy as invalid for
/// it (the preview's URL names 127.0.0.1 or localhost).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; \
     frame-src http://localhost:* http://127.0.0.1:*; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// One embedded file.
struct Asset {
    path: &'static str,
    mime: &'static str,
    body: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        mime: "text/html; charset=utf-8",
        body: include_bytes!("../../../web/dist/index.html"),
    },
    Asset {
        path: "/app.js",
        mime: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../web/dist/app.js"),
    },
    Asset {
        path: "/app.css",
        mime: "text/css; charset=utf-8",
        body: include_bytes!("../../../web/dist/app.css"),
    },
];

/// FNV-1a of the bytes, as a strong ETag.
fn etag(body: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in body {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{hash:016x}\"")
}

fn respond(asset: &'static Asset, request: &HeaderMap) -> Response {
    let tag = etag(asset.body);
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, HeaderValue::from_static(asset.mime))], asset.body).into_response()
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    security_headers(headers);
    response
}

/// The headers that keep the page from being framed, sniffed or made to load foreign code.
pub fn security_headers(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
}

/// The UI's routes (unguarded: the caller puts them behind the Host/Origin checks).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new();
    for asset in ASSETS {
        router = router.route(
            asset.path,
            get(move |headers: HeaderMap| async move { respond(asset, &headers) }),
        );
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_files_and_no_inline_script() {
        let html = std::str::from_utf8(ASSETS[0].body).unwrap();
        assert!(html.contains("src=\"/app.js\""), "{html}");
        assert!(html.contains("href=\"/app.css\""), "{html}");
        // Every <script has a src (an inline one would be refused by the CSP anyway).
        for part in html.split("<script").skip(1) {
            let tag = &part[..part.find('>').unwrap()];
            assert!(tag.contains("src="), "inline script: {part}");
        }
        assert!(!html.contains("http://") && !html.contains("https://"), "{html}");
    }

    #[test]
    fn the_app_passes_no_html_to_the_dom() {
        let js = std::str::from_utf8(ASSETS[1].body).unwrap();
        // Preact handles the prop internally; the app itself never passes HTML to it.
        assert!(!js.contains("dangerouslySetInnerHTML:") && !js.contains("__html:"), "html sink");
        assert!(!js.contains("insertAdjacentHTML") && !js.contains("document.write"));
        assert!(!js.contains("eval("));
    }

    #[test]
    fn the_page_may_frame_loopback_only_and_show_images_of_its_own() {
        let directive = |name: &str| {
            CSP.split(';')
                .map(str::trim)
                .find_map(|d| {
                    d.strip_prefix(name).map(|v| v.split_whitespace().collect::<Vec<_>>())
                })
                .unwrap_or_else(|| panic!("no {name} in {CSP}"))
        };
        let frames = directive("frame-src ");
        assert!(!frames.is_empty());
        for source in frames {
            let host = source.strip_prefix("http://").unwrap_or_else(|| panic!("{source}"));
            assert!(
                ["localhost:*", "127.0.0.1:*"].contains(&host),
                "frame-src {source} is not loopback"
            );
            // What CSP's grammar takes as a host (no IPv6 literal): browsers reject the rest.
            assert!(
                host.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:*".contains(&b)),
                "frame-src {source} is not a valid host-source"
            );
        }
        assert_eq!(directive("img-src "), ["'self'", "data:", "blob:"]);
        assert_eq!(directive("frame-ancestors "), ["'none'"]);
        assert_eq!(directive("script-src "), ["'self'"]);
    }

    #[test]
    fn etags_differ_by_content() {
        assert_ne!(etag(b"a"), etag(b"b"));
        assert_eq!(etag(b"a"), etag(b"a"));
    }
}
