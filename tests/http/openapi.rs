//! The OpenAPI document is generated from the code; the snapshot makes drift fail CI, and
//! probes of every operation make an undocumented refusal fail it.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};

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

/// What a request whose answer the document must list is: a description of the probe, and
/// the request.
type Probe = (&'static str, Request<Body>);

/// Every operation, probed with what the layers and the body reader refuse: no token (on
/// the operations that ask for one), and, on operations with a JSON body, a body over the
/// limit, one that is not JSON, malformed JSON and JSON of another shape. Whatever each
/// answers must be listed for that operation, and each refusal must come somewhere, so the
/// probes reach what they are meant to.
#[tokio::test]
async fn every_operation_documents_what_its_layers_and_body_reader_answer() {
    const TOKEN: &str = "secret-token";
    let app = TestApp::with_config(askbus_http::HttpConfig {
        tokens: vec![askbus_http::AccessToken::all_sessions(TOKEN)],
        body_limit: 1024,
        ..Default::default()
    });
    let document = serde_json::to_value(askbus_http::openapi()).expect("serialisable");
    let mut seen = std::collections::BTreeSet::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        let uri = path
            .replace("/question/{id}", "/question/que_01JZ6Q3V8R5M2K7D4T9WXYZABC")
            .replace("{id}", "apr_01JZ6Q3V8R5M2K7D4T9WXYZABC")
            .replace("{sessionID}", "ses_probe")
            .replace("{token}", "not-a-link");
        for (method, operation) in item.as_object().expect("a path item") {
            let method = method.to_uppercase();
            let with_body = |content_type: &str, body: String| {
                Request::builder()
                    .method(method.as_str())
                    .uri(&uri)
                    .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                    .header(header::CONTENT_TYPE, content_type)
                    .body(Body::from(body))
                    .expect("request")
            };
            let mut probes: Vec<Probe> = Vec::new();
            if operation.get("security").is_none() {
                probes.push((
                    "no token",
                    Request::builder()
                        .method(method.as_str())
                        .uri(&uri)
                        .body(Body::empty())
                        .expect("request"),
                ));
            }
            if operation["requestBody"]["content"]
                .get("application/json")
                .is_some()
            {
                let oversized = format!(r#"{{"padding": "{}"}}"#, "x".repeat(2048));
                probes.push((
                    "a body over the limit",
                    with_body("application/json", oversized),
                ));
                probes.push((
                    "a body that is not JSON",
                    with_body("text/plain", "hi".into()),
                ));
                probes.push(("malformed JSON", with_body("application/json", "{".into())));
                probes.push((
                    "JSON of another shape",
                    with_body("application/json", "[1]".into()),
                ));
            }
            for (probe, request) in probes {
                let (status, _) = app.call(request).await;
                let documented = &operation["responses"][status.as_str()];
                assert!(
                    documented.is_object(),
                    "{method} {path} answers {probe} with {status}, which it does not document"
                );
                seen.insert(status.as_u16());
            }
        }
    }
    for status in [400, 401, 413, 415, 422] {
        assert!(
            seen.contains(&status),
            "no probe was answered {status}: {seen:?}"
        );
    }
}
