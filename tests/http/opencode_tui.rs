//! The routes OpenCode's TUI awaits before it draws (`opencode attach URL --session ID`):
//! empty providers, agents and config, and any session id as a session in the configured
//! directory, behind the same tokens as every other route.

use askbus::question::{Identity, Role};
use askbus_http::{AccessToken, HttpConfig};
use axum::http::StatusCode;
use serde_json::json;

use super::{TestApp, request};

const ADMIN: &str = "admin-secret-0123456789";
const SCOPED: &str = "scoped-secret-0123456789";
const DIRECTORY: &str = "/srv/askbus-opencode-tui";

fn app() -> TestApp {
    TestApp::with_config(HttpConfig {
        tokens: vec![
            AccessToken::all_sessions(ADMIN),
            AccessToken::new(SCOPED, Identity::new("scoped", Role::Reviewer)).in_session("mine"),
        ],
        directory: DIRECTORY.to_owned(),
        ..HttpConfig::default()
    })
}

#[tokio::test]
async fn providers_agents_and_config_are_empty() {
    let app = app();
    for (uri, expected) in [
        ("/config/providers", json!({"providers": [], "default": {}})),
        (
            "/provider",
            json!({"all": [], "default": {}, "connected": []}),
        ),
        ("/agent", json!([])),
        ("/config", json!({})),
        // OpenCode clients add `?directory=`; it is accepted and ignored.
        ("/config?directory=%2Ftmp", json!({})),
    ] {
        assert_eq!(
            app.call(request("GET", uri, Some(ADMIN), None)).await,
            (StatusCode::OK, expected),
            "{uri}"
        );
        let (status, _) = app.call(request("GET", uri, None, None)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri} without a token");
    }
}

#[tokio::test]
async fn any_session_id_is_a_session_in_the_configured_directory() {
    let app = app();
    let (status, session) = app
        .call(request("GET", "/session/ses_x", Some(ADMIN), None))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(session["id"], "ses_x");
    assert_eq!(session["slug"], "ses_x");
    assert_eq!(session["projectID"], "global");
    assert_eq!(session["directory"], DIRECTORY);
    assert_eq!(session["title"], "askbus session ses_x");
    assert_eq!(session["version"], env!("CARGO_PKG_VERSION"));
    let created = session["time"]["created"].as_u64().expect("created in ms");
    let updated = session["time"]["updated"].as_u64().expect("updated in ms");
    assert!(created > 0 && updated >= created, "{session}");
    // The static `/session/pending` and the longer `/session/{id}/...` routes still win.
    let (status, pending) = app
        .call(request("GET", "/session/pending", Some(ADMIN), None))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(pending.get("projectID").is_none(), "{pending}");
    let (status, grants) = app
        .call(request("GET", "/session/ses_x/grant", Some(ADMIN), None))
        .await;
    assert_eq!((status, grants), (StatusCode::OK, json!([])));
}

#[tokio::test]
async fn a_scoped_token_reads_only_its_own_session() {
    let app = app();
    let (status, session) = app
        .call(request("GET", "/session/mine", Some(SCOPED), None))
        .await;
    assert_eq!((status, &session["id"]), (StatusCode::OK, &json!("mine")));
    // As every other session route answers such a token.
    for uri in ["/session/theirs", "/session/theirs/grant"] {
        let (status, body) = app.call(request("GET", uri, Some(SCOPED), None)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {body}");
    }
    let (status, _) = app.call(request("GET", "/session/mine", None, None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
