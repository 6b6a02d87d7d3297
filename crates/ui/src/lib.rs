//! The askbus web UI: the human end of askbus, served at `/` by the server.
//!
//! A small ES-module app (plain HTML, CSS and JavaScript, no framework, no build step) lives
//! in `assets/` and is embedded in the binary with `include_bytes!`, so `cargo run` serves
//! it without Node. It lists pending questions and approvals a page at a time (so a
//! runaway agent's thousands cost one page), live from `GET /event`, with each session's
//! count, answers them (or all of a session at once) through the JSON API of
//! `askbus-http`, and shows a chosen session's
//! timeline in the seeds' group style from `GET /session/{id}/history` followed by
//! `GET /session/{id}/stream`. A second page, at `/answer/{token}`, is where a single-use
//! answer link lands: it shows that one request's card and sends its answer through the
//! link's own routes (`GET /answer/{token}/request`, `POST /answer/{token}`), so a reviewer
//! answers from a phone or a chat without any token. This crate knows nothing about
//! questions: it serves files. The pages are the only clients of the API here, and they
//! talk to it exactly as any other client does.
//!
//! Policy, in exact words:
//!
//! - **The UI routes are public.** `GET /`, `GET /answer/{token}` and
//!   `GET /ui/{version}/{file}` need no token: they hold no data (the answer page is the
//!   same shell for every link; its script reads the link from the address). Every API call
//!   the app makes sends `Authorization: Bearer` with the token the human entered (kept in
//!   `sessionStorage`); a 401 brings up a token prompt. The answer page sends none: the
//!   link is its authority, and it acts as the identity it was minted for, whatever token
//!   the tab holds.
//! - **No external requests.** Every asset comes from this router, and the page's
//!   `Content-Security-Policy` allows only its own origin (`default-src 'none'` plus
//!   `'self'` for scripts, styles, images and `connect-src`), so neither a CDN nor any other
//!   host can be reached from the page.
//! - **Caching by content.** Asset URLs carry [`version`], a hash of every embedded file:
//!   under the current version they are `immutable` for a year; the page itself is
//!   `no-cache` with that version as its `ETag`, so a new binary is picked up on the next
//!   load and an unchanged one costs a `304`. A page of an older version still gets the
//!   current files (uncached) rather than a 404. Both pages are served alike.
//! - **No referrer.** Every UI response says `Referrer-Policy: no-referrer`, so the answer
//!   link in the address bar never leaves the page in a `Referer` header.
//!
//! # Files
//!
//! Each file of `assets/` opens with its own design notes (its policy, in exact words):
//!
//! - `index.html` and `app.js`: the pending list, a window of pages on the snapshot plus
//!   the event stream, each session's count, the token prompt, "Reject all pending in this
//!   session";
//! - `question.js`, `approval.js`: the cards, each naming who asked and who answered;
//! - `session.js`, `timeline.js`: a session's timeline (history, then stream) in seed
//!   004's groups; `grants.js`: its standing grants;
//! - `notify.js`: desktop notifications and the title's count; `deliveries.js`: webhook
//!   deliveries, for whoever may read them;
//! - `sse.js` (streams read with `fetch`, so they carry the token), `api.js` (the JSON
//!   API), `dom.js` (`h()`: text only as text, hidden characters marked);
//! - `i18n.js`, `texts.js`: every text is written in English in the code and passed
//!   through `t('…')`, the English being the key; `texts.js` holds the Vietnamese and
//!   Chinese, and this crate's tests check that both hold every text the code and the
//!   markup (`data-i18n`) show, and nothing else;
//! - `answer.html`, `answer.js`: the page of an answer link.
//!
//! The pages are tested in Debian's chromium (`tests/ui.rs`, scripts in `tests/ui/`).
//!
//! ```
//! # use axum::Router;
//! // Merge the UI into the API router (it has no fallback, so merging cannot clash).
//! let api: Router = Router::new();
//! let app = api.merge(askbus_ui::router());
//! # drop(app);
//! ```

use std::sync::LazyLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The routes of the UI: `GET /` (the page), `GET /answer/{token}` (the page of an answer
/// link) and `GET /ui/{version}/{file}` (their assets).
///
/// Stateless, without a fallback, so it merges into any router whose own paths are not
/// `/` or under `/ui/`, and whose routes at `/answer/{token}` (the API's `POST`) use other
/// methods than `GET`: axum merges the methods of one path.
///
/// # Examples
///
/// ```
/// let ui: axum::Router = askbus_ui::router();
/// # drop(ui);
/// ```
pub fn router() -> Router {
    Router::new()
        .route("/", get(index))
        .route("/answer/{token}", get(answer))
        .route("/ui/{version}/{file}", get(asset))
}

/// The hash of every embedded asset, as 16 hex digits: it changes whenever any of them
/// does, and is part of every asset URL.
pub fn version() -> &'static str {
    &VERSION
}

/// One embedded file.
struct Asset {
    /// Its name under `/ui/{version}/`.
    name: &'static str,
    /// Its `Content-Type`.
    content_type: &'static str,
    /// Its bytes.
    body: &'static [u8],
}

/// `text/javascript` for the modules (what browsers require for `type="module"`).
const JS: &str = "text/javascript; charset=utf-8";

/// Every asset the pages load. The pages are not among them: `index.html` is served at
/// `/`, `answer.html` at `/answer/{token}`.
const ASSETS: &[Asset] = &[
    Asset {
        name: "app.js",
        content_type: JS,
        body: include_bytes!("../assets/app.js"),
    },
    Asset {
        name: "answer.js",
        content_type: JS,
        body: include_bytes!("../assets/answer.js"),
    },
    Asset {
        name: "api.js",
        content_type: JS,
        body: include_bytes!("../assets/api.js"),
    },
    Asset {
        name: "sse.js",
        content_type: JS,
        body: include_bytes!("../assets/sse.js"),
    },
    Asset {
        name: "dom.js",
        content_type: JS,
        body: include_bytes!("../assets/dom.js"),
    },
    Asset {
        name: "question.js",
        content_type: JS,
        body: include_bytes!("../assets/question.js"),
    },
    Asset {
        name: "approval.js",
        content_type: JS,
        body: include_bytes!("../assets/approval.js"),
    },
    Asset {
        name: "session.js",
        content_type: JS,
        body: include_bytes!("../assets/session.js"),
    },
    Asset {
        name: "notify.js",
        content_type: JS,
        body: include_bytes!("../assets/notify.js"),
    },
    Asset {
        name: "deliveries.js",
        content_type: JS,
        body: include_bytes!("../assets/deliveries.js"),
    },
    Asset {
        name: "grants.js",
        content_type: JS,
        body: include_bytes!("../assets/grants.js"),
    },
    Asset {
        name: "timeline.js",
        content_type: JS,
        body: include_bytes!("../assets/timeline.js"),
    },
    Asset {
        name: "i18n.js",
        content_type: JS,
        body: include_bytes!("../assets/i18n.js"),
    },
    Asset {
        name: "texts.js",
        content_type: JS,
        body: include_bytes!("../assets/texts.js"),
    },
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../assets/style.css"),
    },
    Asset {
        name: "icon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("../assets/icon.svg"),
    },
];

/// The page, with `{{version}}` still to be filled in.
const INDEX_TEMPLATE: &str = include_str!("../assets/index.html");
/// The page of an answer link, likewise.
const ANSWER_TEMPLATE: &str = include_str!("../assets/answer.html");

/// What the page may load and connect to: its own origin only.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// See [`version`].
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let mut hash = FNV_OFFSET;
    for asset in ASSETS {
        hash = fnv1a(hash, asset.name.as_bytes());
        hash = fnv1a(hash, asset.body);
    }
    hash = fnv1a(hash, INDEX_TEMPLATE.as_bytes());
    hash = fnv1a(hash, ANSWER_TEMPLATE.as_bytes());
    format!("{hash:016x}")
});

/// The page with its asset URLs.
static INDEX: LazyLock<String> = LazyLock::new(|| INDEX_TEMPLATE.replace("{{version}}", &VERSION));
/// The page of an answer link with its asset URLs.
static ANSWER: LazyLock<String> =
    LazyLock::new(|| ANSWER_TEMPLATE.replace("{{version}}", &VERSION));

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// 64-bit FNV-1a: a cache key, not a security measure, and ten lines instead of a crate.
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

async fn index(headers: HeaderMap) -> Response {
    page(&headers, &INDEX)
}

/// The same shell for every link: the token stays in the address, for the script to read.
async fn answer(headers: HeaderMap) -> Response {
    page(&headers, &ANSWER)
}

/// `body`, a page: revalidated on every load by [`version`] as its `ETag`, under the CSP.
fn page(headers: &HeaderMap, body: &'static str) -> Response {
    let etag = format!("\"{}\"", version());
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    common_headers(headers);
    response
}

async fn asset(Path((asked_version, file)): Path<(String, String)>) -> Response {
    let Some(asset) = ASSETS.iter().find(|asset| asset.name == file) else {
        let mut response = (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "no such asset",
        )
            .into_response();
        common_headers(response.headers_mut());
        return response;
    };
    let cache = if asked_version == version() {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut response = (
        [
            (header::CONTENT_TYPE, asset.content_type),
            (header::CACHE_CONTROL, cache),
        ],
        asset.body,
    )
        .into_response();
    common_headers(response.headers_mut());
    response
}

/// Headers on every UI response.
fn common_headers(headers: &mut HeaderMap) {
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get(uri: &str, if_none_match: Option<&str>) -> (StatusCode, HeaderMap, String) {
        let mut request = Request::get(uri);
        if let Some(tag) = if_none_match {
            request = request.header(header::IF_NONE_MATCH, tag);
        }
        let response = router()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        (
            parts.status,
            parts.headers,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    fn header(headers: &HeaderMap, name: header::HeaderName) -> &str {
        headers.get(name).unwrap().to_str().unwrap()
    }

    #[tokio::test]
    async fn the_pages_link_versioned_assets_and_forbid_other_origins() {
        for (uri, script) in [("/", "app.js"), ("/answer/some.link-token_1", "answer.js")] {
            let (status, headers, body) = get(uri, None).await;
            assert_eq!(status, StatusCode::OK, "{uri}");
            assert_eq!(
                header(&headers, header::CONTENT_TYPE),
                "text/html; charset=utf-8"
            );
            assert_eq!(header(&headers, header::CACHE_CONTROL), "no-cache");
            assert_eq!(header(&headers, header::ETAG), format!("\"{}\"", version()));
            assert_eq!(header(&headers, header::REFERRER_POLICY), "no-referrer");
            let policy = header(&headers, header::CONTENT_SECURITY_POLICY);
            assert!(policy.starts_with("default-src 'none'"), "{policy}");
            assert!(policy.contains("connect-src 'self'"), "{policy}");
            assert!(!body.contains("{{version}}"), "{uri}");
            assert!(
                body.contains(&format!("/ui/{}/{script}", version())),
                "{uri}"
            );
            // No absolute URL to anywhere: the page is self-contained.
            assert!(!body.contains("http://") && !body.contains("https://"));
        }
    }

    #[tokio::test]
    async fn an_unchanged_page_is_not_modified() {
        let tag = format!("\"{}\"", version());
        for uri in ["/", "/answer/some-token"] {
            let (status, headers, body) = get(uri, Some(&tag)).await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{uri}");
            assert_eq!(header(&headers, header::ETAG), tag);
            assert!(body.is_empty());
            let (status, ..) = get(uri, Some("\"0000\"")).await;
            assert_eq!(status, StatusCode::OK, "{uri}");
        }
    }

    #[tokio::test]
    async fn assets_have_their_types_and_are_immutable_under_the_current_version() {
        let check = |file: &'static str, content_type: &'static str| async move {
            let (status, headers, body) = get(&format!("/ui/{}/{file}", version()), None).await;
            assert_eq!(status, StatusCode::OK, "{file}");
            assert_eq!(
                header(&headers, header::CONTENT_TYPE),
                content_type,
                "{file}"
            );
            assert_eq!(
                header(&headers, header::CACHE_CONTROL),
                "public, max-age=31536000, immutable",
                "{file}"
            );
            assert_eq!(header(&headers, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
            assert!(!body.is_empty(), "{file}");
        };
        for asset in ASSETS {
            check(asset.name, asset.content_type).await;
        }
        check("app.js", "text/javascript; charset=utf-8").await;
        check("style.css", "text/css; charset=utf-8").await;
        check("icon.svg", "image/svg+xml").await;
    }

    #[tokio::test]
    async fn an_old_version_gets_current_files_uncached_and_unknown_files_404() {
        let (status, headers, _) = get("/ui/0123456789abcdef/app.js", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(header(&headers, header::CACHE_CONTROL), "no-cache");
        let (status, ..) = get(&format!("/ui/{}/secret.txt", version()), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, ..) = get(&format!("/ui/{}/../Cargo.toml", version()), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    /// The English texts the code passes to a translator as literals (`t('…')`,
    /// `text('…')`, `pageText('…')`, `t.parts('…')`) and the markup marks `data-i18n`.
    fn texts_shown() -> Vec<String> {
        let mut texts = Vec::new();
        for asset in ASSETS.iter().filter(|asset| asset.name != "texts.js") {
            let source = std::str::from_utf8(asset.body).unwrap();
            for call in ["t('", "text('", "pageText('", "t.parts('"] {
                for (at, _) in source.match_indices(call) {
                    let before = source[..at].chars().next_back();
                    if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                        continue;
                    }
                    let rest = &source[at + call.len()..];
                    texts.push(rest[..rest.find('\'').unwrap()].to_owned());
                }
            }
        }
        for page in [INDEX_TEMPLATE, ANSWER_TEMPLATE] {
            for (at, _) in page.match_indices("data-i18n>") {
                let rest = &page[at + "data-i18n>".len()..];
                texts.push(rest[..rest.find('<').unwrap()].trim().to_owned());
            }
        }
        texts
    }

    /// The keys of one language's table in `texts.js` (`export const VI = {`).
    fn translated(table: &str) -> Vec<String> {
        let texts = ASSETS
            .iter()
            .find(|asset| asset.name == "texts.js")
            .unwrap();
        let source = std::str::from_utf8(texts.body).unwrap();
        let start = source.find(&format!("export const {table} = {{")).unwrap();
        let end = start + source[start..].find("};").unwrap();
        source[start..end]
            .lines()
            .filter_map(|line| line.trim().strip_prefix('"'))
            .map(|line| {
                let key = &line[..line.find("\": ").unwrap()];
                key.replace("\\\"", "\"")
            })
            .collect()
    }

    #[test]
    fn every_text_the_ui_shows_has_its_vietnamese_and_chinese() {
        let shown = texts_shown();
        assert!(shown.len() > 150, "the scan found {} texts", shown.len());
        for table in ["VI", "ZH"] {
            let keys = translated(table);
            for text in &shown {
                assert!(keys.contains(text), "{table} lacks {text:?}");
            }
        }
    }

    #[test]
    fn every_translation_is_of_a_text_the_ui_has() {
        let sources: Vec<&str> = ASSETS
            .iter()
            .filter(|asset| asset.name != "texts.js" && asset.name.ends_with(".js"))
            .map(|asset| std::str::from_utf8(asset.body).unwrap())
            .chain([INDEX_TEMPLATE, ANSWER_TEMPLATE])
            .collect();
        for key in translated("VI") {
            let quoted = [format!("'{key}'"), format!(">{key}<"), format!("`{key}`")];
            assert!(
                sources
                    .iter()
                    .any(|source| quoted.iter().any(|quoted| source.contains(quoted.as_str()))),
                "texts.js translates {key:?}, which no page or module shows"
            );
        }
        assert_eq!(
            translated("VI"),
            translated("ZH"),
            "both languages, the same texts"
        );
    }

    #[test]
    fn every_module_the_app_imports_is_served() {
        for asset in ASSETS.iter().filter(|asset| asset.name.ends_with(".js")) {
            let text = std::str::from_utf8(asset.body).unwrap();
            for line in text.lines().filter(|line| line.starts_with("import ")) {
                let module = line
                    .rsplit_once("'./")
                    .and_then(|(_, rest)| rest.split_once('\''))
                    .map(|(name, _)| name)
                    .unwrap_or_else(|| panic!("{}: unexpected import {line:?}", asset.name));
                assert!(
                    ASSETS.iter().any(|served| served.name == module),
                    "{} imports {module}, which is not embedded",
                    asset.name
                );
            }
        }
    }
}
