//! The OpenAPI document is generated from the code; the snapshot makes drift fail CI.

use axum::http::StatusCode;

use super::{TestApp, get};

#[test]
fn openapi_document() {
    let document = serde_json::to_value(askbus_http::openapi()).expect("serialisable");
    // Key order is not part of the document, and depends on whether some crate in the build
    // turned on serde_json's `preserve_order`: the snapshot sorts it.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("openapi", document);
    });
}

#[tokio::test]
async fn openapi_json_is_served_and_matches() {
    let app = TestApp::with_config(askbus_http::HttpConfig {
        tokens: vec![askbus_http::AccessToken::all_sessions("secret-token")],
        ..Default::default()
    });
    let (status, served) = app.call(get("/openapi.json")).await;
    assert_eq!(status, StatusCode::OK);
    let generated = serde_json::to_value(askbus_http::openapi()).expect("serialisable");
    assert_eq!(served, generated);
    for path in [
        "/question",
        "/question/{id}",
        "/question/{id}/reply",
        "/question/{id}/reject",
        "/question/{id}/wait",
        "/session/{id}/cancel",
        "/event",
        "/global/event",
        "/health",
        "/audit",
    ] {
        assert!(served["paths"].get(path).is_some(), "{path} is documented");
    }
}
