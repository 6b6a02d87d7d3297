//! Every error: status and JSON body, never a panic, never a 500, never plain text.

use askbus::question::Timeout;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};

use super::{TestApp, get, language, post_json};

/// Sends `request` and checks the status, `code`, OpenCode's `_tag` (if expected) and that
/// the message contains `message_part`.
async fn check(
    app: &TestApp,
    request: Request<Body>,
    status: StatusCode,
    code: &str,
    tag: Option<&str>,
    message_part: &str,
) -> Value {
    let (actual, body) = app.call(request).await;
    assert_eq!(actual, status, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["_tag"].as_str(), tag, "{body}");
    let message = body["message"].as_str().expect("a message");
    assert!(
        message.contains(message_part),
        "{message:?} should contain {message_part:?}"
    );
    body
}

fn raw_post(uri: &str, content_type: Option<&str>, body: &str) -> Request<Body> {
    let mut request = Request::post(uri);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    request.body(Body::from(body.to_owned())).expect("request")
}

#[tokio::test]
async fn malformed_json_is_400() {
    let app = TestApp::new();
    let id = app.ask("s1");
    check(
        &app,
        raw_post(
            &format!("/question/{id}/reply"),
            Some("application/json"),
            "{\"answers\": [[",
        ),
        StatusCode::BAD_REQUEST,
        "bad_request",
        None,
        "malformed JSON",
    )
    .await;
    check(
        &app,
        raw_post(
            &format!("/question/{id}/reject"),
            Some("application/json"),
            "{nope",
        ),
        StatusCode::BAD_REQUEST,
        "bad_request",
        None,
        "malformed JSON",
    )
    .await;
    check(
        &app,
        raw_post("/question", Some("application/json"), "not json"),
        StatusCode::BAD_REQUEST,
        "bad_request",
        None,
        "malformed JSON",
    )
    .await;
}

#[tokio::test]
async fn wrong_content_type_is_415() {
    let app = TestApp::new();
    let id = app.ask("s1");
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        check(
            &app,
            raw_post(
                &format!("/question/{id}/reply"),
                content_type,
                r#"{"answers":[["Rust"]]}"#,
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            None,
            "application/json",
        )
        .await;
    }
    check(
        &app,
        raw_post(
            &format!("/question/{id}/reject"),
            Some("text/plain"),
            "because",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        None,
        "application/json",
    )
    .await;
}

#[tokio::test]
async fn malformed_ids_are_400_and_unknown_ids_404() {
    let app = TestApp::new();
    for uri in [
        "/question/nope",
        "/question/que_123",
        "/question/apr_01M81X811YCJJ5QZ7DSS847BYK",
    ] {
        check(
            &app,
            get(uri),
            StatusCode::BAD_REQUEST,
            "bad_request",
            None,
            "not a question id",
        )
        .await;
    }
    let unknown = "que_01M81X811YCJJ5QZ7DSS847BYK";
    for request in [
        get(&format!("/question/{unknown}")),
        get(&format!("/question/{unknown}/wait?timeout=1")),
        post_json(
            &format!("/question/{unknown}/reply"),
            &json!({"answers": [["Rust"]]}),
        ),
        raw_post(&format!("/question/{unknown}/reject"), None, ""),
    ] {
        let body = check(
            &app,
            request,
            StatusCode::NOT_FOUND,
            "not_found",
            Some("QuestionNotFoundError"),
            "not found",
        )
        .await;
        assert_eq!(body["requestID"], unknown);
    }
}

#[tokio::test]
async fn a_second_answer_is_409() {
    let app = TestApp::new();
    let id = app.ask("s1");
    let reply = || {
        post_json(
            &format!("/question/{id}/reply"),
            &json!({"answers": [["Rust"]]}),
        )
    };
    assert_eq!(app.call(reply()).await.0, StatusCode::OK);
    let body = check(
        &app,
        reply(),
        StatusCode::CONFLICT,
        "already_resolved",
        Some("QuestionAlreadyResolvedError"),
        "already replied",
    )
    .await;
    assert_eq!(body["requestID"], id);
    check(
        &app,
        raw_post(&format!("/question/{id}/reject"), None, ""),
        StatusCode::CONFLICT,
        "already_resolved",
        Some("QuestionAlreadyResolvedError"),
        "already replied",
    )
    .await;
}

#[tokio::test]
async fn answers_that_do_not_fit_are_422_naming_the_question() {
    let app = TestApp::new();
    let pending = app
        .questions
        .ask("s1", vec![language(), super::targets()])
        .timeout(Timeout::Never)
        .submit()
        .expect("valid");
    let id = pending.id();
    for (body, part) in [
        (json!({"answers": [["Rust"]]}), "2"),
        (
            json!({"answers": [["Rust"], ["Windows"]]}),
            "Which targets?",
        ),
        (json!({"answers": [["Rust", "Go"], []]}), "Which language?"),
        (json!({"answers": "Rust"}), "answers"),
        (json!({"answers": [[1]]}), "array of strings"),
        (json!({"Which language?": ["Rust"]}), "must be a string"),
        (json!({"What?": "Rust"}), "What?"),
        (json!([["Rust"]]), "JSON object"),
    ] {
        let response = check(
            &app,
            post_json(&format!("/question/{id}/reply"), &body),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            Some("QuestionInvalidError"),
            part,
        )
        .await;
        assert_eq!(response["requestID"], id.to_string(), "{body}");
    }
    // Still pending: invalid answers resolve nothing.
    let (_, state) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(state["status"], "pending");
}

#[tokio::test]
async fn questions_that_cannot_be_asked_are_422() {
    let app = TestApp::new();
    for (body, part) in [
        (
            json!({"sessionID": "s1", "questions": []}),
            "at least one question",
        ),
        (
            json!({"sessionID": "s1", "questions": [{"question": "Q?", "header": "x".repeat(31), "options": []}]}),
            "header",
        ),
        (json!({"sessionID": "s1"}), "questions"),
        (
            json!({"sessionID": "s1", "timeout": -1, "questions": [{"question": "Q?", "header": "Q", "options": []}]}),
            "timeout",
        ),
    ] {
        check(
            &app,
            post_json("/question", &body),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            None,
            part,
        )
        .await;
    }
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let app = TestApp::with_config(askbus_http::HttpConfig {
        body_limit: 1024,
        ..Default::default()
    });
    let id = app.ask("s1");
    let huge = json!({"answers": [["x".repeat(4096)]]});
    check(
        &app,
        post_json(&format!("/question/{id}/reply"), &huge),
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        None,
        "larger than",
    )
    .await;
    check(
        &app,
        raw_post(
            &format!("/question/{id}/reject"),
            Some("application/json"),
            &json!({"reason": "x".repeat(4096)}).to_string(),
        ),
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        None,
        "larger than",
    )
    .await;
}

#[tokio::test]
async fn unknown_routes_methods_and_queries_are_json() {
    let app = TestApp::new();
    check(
        &app,
        get("/nope"),
        StatusCode::NOT_FOUND,
        "not_found",
        None,
        "no such route",
    )
    .await;
    check(
        &app,
        Request::delete("/question")
            .body(Body::empty())
            .expect("request"),
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        None,
        "method",
    )
    .await;
    let id = app.ask("s1");
    check(
        &app,
        get(&format!("/question/{id}/wait?timeout=soon")),
        StatusCode::BAD_REQUEST,
        "bad_request",
        None,
        "query",
    )
    .await;
    check(
        &app,
        get(&format!("/question/{id}/wait?timeout=-3")),
        StatusCode::BAD_REQUEST,
        "bad_request",
        None,
        "timeout",
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn slow_request_bodies_time_out_with_408() {
    let app = TestApp::with_config(askbus_http::HttpConfig {
        request_timeout: std::time::Duration::from_secs(1),
        ..Default::default()
    });
    let id = app.ask("s1");
    // A body that never arrives.
    let (_sender, body) =
        tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(1);
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(body));
    let request = Request::post(format!("/question/{id}/reply"))
        .header("content-type", "application/json")
        .body(body)
        .expect("request");
    check(
        &app,
        request,
        StatusCode::REQUEST_TIMEOUT,
        "request_timeout",
        None,
        "too long",
    )
    .await;
}
