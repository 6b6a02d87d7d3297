//! Quotas over the router: creates past a pending limit are 429 `quota` with
//! `Retry-After`; held responses (event streams, long polls) past the server's slots are 503
//! `too_many_streams`, past a token's share 429 `quota`; `/health`, replies and the streams
//! already open keep working; a slot comes back when its stream goes away.

use askbus::bus::Bus;
use askbus::question::{PendingLimits, RequestHub};
use askbus_http::{AccessToken, HttpConfig, StreamSlots};
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::{TestApp, get, post_json};

const FIRST: &str = "first-secret-0123456789";
const SECOND: &str = "second-secret-0123456789";

/// `POST /question` in `session`.
fn ask_body(session: &str) -> Value {
    json!({"sessionID": session, "questions": [
        {"question": "Which language?", "header": "Language",
         "options": [{"label": "Rust", "description": ""}]}
    ]})
}

/// `request` with a bearer token.
fn with_token(mut request: Request<Body>, token: &str) -> Request<Body> {
    request.headers_mut().insert(
        header::AUTHORIZATION,
        format!("Bearer {token}").parse().expect("header value"),
    );
    request
}

/// An app over a hub with `limits`.
fn limited(limits: PendingLimits, config: HttpConfig) -> TestApp {
    TestApp::with_hub(
        RequestHub::new(Bus::new()).with_pending_limits(limits),
        config,
    )
}

/// Sends `request`; the raw response (a stream stays open while it is held).
async fn send(app: &TestApp, request: Request<Body>) -> Response<Body> {
    app.router
        .clone()
        .oneshot(request)
        .await
        .expect("the router is infallible")
}

/// Checks a refusal: `status`, `code`, a message containing `names`, and `Retry-After`
/// of `retry_after` seconds.
#[track_caller]
fn check_refusal(
    (status, body, retry): (StatusCode, Value, Option<String>),
    expected: StatusCode,
    code: &str,
    names: &str,
    retry_after: &str,
) {
    assert_eq!(status, expected, "{body}");
    assert_eq!(body["code"], code, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(names), "{message:?} lacks {names:?}");
    assert_eq!(retry.as_deref(), Some(retry_after));
}

/// Sends `request`; its status, JSON body and `Retry-After`.
async fn refused(app: &TestApp, request: Request<Body>) -> (StatusCode, Value, Option<String>) {
    let response = send(app, request).await;
    let retry = response
        .headers()
        .get(header::RETRY_AFTER)
        .map(|value| value.to_str().unwrap_or_default().to_owned());
    let status = response.status();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    (status, serde_json::from_slice(&bytes).expect("JSON"), retry)
}

#[tokio::test]
async fn creates_past_a_pending_limit_are_429_with_retry_after() {
    let app = limited(
        PendingLimits {
            per_session: 1,
            total: 2,
            ..PendingLimits::default()
        },
        HttpConfig::default(),
    );
    let (status, _) = app.call(post_json("/question", &ask_body("s1"))).await;
    assert_eq!(status, StatusCode::OK);
    check_refusal(
        refused(&app, post_json("/question", &ask_body("s1"))).await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota",
        "\"s1\"",
        "30",
    );
    let approval = |session: &str| json!({"session_id": session, "action_requests": [{"name": "delete_rows", "args": {}}]});
    let (status, _) = app.call(post_json("/approval", &approval("s2"))).await;
    assert_eq!(status, StatusCode::OK);
    check_refusal(
        refused(&app, post_json("/approval", &approval("s3"))).await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota",
        "2 requests are already pending",
        "30",
    );
    let (_, listed) = app.call(get("/question")).await;
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(1),
        "nothing more was made"
    );
}

#[tokio::test]
async fn with_tokens_each_one_is_charged_for_what_it_creates() {
    let app = limited(
        PendingLimits {
            per_account: 1,
            ..PendingLimits::default()
        },
        HttpConfig {
            tokens: vec![
                AccessToken::all_sessions(FIRST),
                AccessToken::all_sessions(SECOND),
            ],
            ..HttpConfig::default()
        },
    );
    let create =
        |session: &str, token: &str| with_token(post_json("/question", &ask_body(session)), token);
    assert_eq!(app.call(create("s1", FIRST)).await.0, StatusCode::OK);
    check_refusal(
        refused(&app, create("s2", FIRST)).await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota",
        "token 1 already holds 1 pending",
        "30",
    );
    assert_eq!(app.call(create("s2", SECOND)).await.0, StatusCode::OK);
}

#[tokio::test]
async fn past_the_stream_slots_503_while_health_replies_and_open_streams_go_on() {
    let slots = StreamSlots::new(2);
    let app = TestApp::with_config(HttpConfig {
        event_streams: slots.clone(),
        ..HttpConfig::default()
    });
    let id = app.ask("s1");
    let mut first = app.events("/event", &[]).await;
    let _second = app.events("/global/event", &[]).await;
    assert_eq!(slots.available(), 0);

    for uri in [
        "/event".to_owned(),
        "/global/event".to_owned(),
        "/session/s1/stream".to_owned(),
        format!("/question/{id}/wait?timeout=1"),
        "/approval/apr_01J00000000000000000000000/wait".to_owned(),
    ] {
        check_refusal(
            refused(&app, get(&uri)).await,
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_streams",
            "2 open event streams",
            "10",
        );
    }

    // Everything else answers: health, a list, a reply; the open stream carries it.
    assert_eq!(app.call(get("/health")).await.0, StatusCode::OK);
    assert_eq!(app.call(get("/question")).await.0, StatusCode::OK);
    let reply = post_json(
        &format!("/question/{id}/reply"),
        &json!({"answers": [["Rust"]]}),
    );
    assert_eq!(app.call(reply).await.0, StatusCode::OK);
    assert_eq!(first.next().await.kind(), "server.connected");
    assert_eq!(first.next().await.kind(), "question.replied");

    // A stream that goes away gives its slot back.
    drop(first);
    assert_eq!(slots.available(), 1);
    let _again = app.events("/event", &[]).await;
}

#[tokio::test(start_paused = true)]
async fn a_long_poll_holds_its_slot_while_it_waits() {
    let slots = StreamSlots::new(1);
    let app = TestApp::with_config(HttpConfig {
        event_streams: slots.clone(),
        ..HttpConfig::default()
    });
    let id = app.ask("s1");
    let wait = app
        .router
        .clone()
        .oneshot(get(&format!("/question/{id}/wait?timeout=60")));
    let waiting = tokio::spawn(wait);
    tokio::task::yield_now().await;
    while slots.available() == 1 {
        tokio::task::yield_now().await;
    }
    let (status, ..) = refused(&app, get("/event")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);

    let reply = post_json(
        &format!("/question/{id}/reply"),
        &json!({"answers": [["Rust"]]}),
    );
    assert_eq!(app.call(reply).await.0, StatusCode::OK);
    let answered = waiting.await.expect("the wait ends").expect("infallible");
    assert_eq!(answered.status(), StatusCode::OK);
    drop(answered);
    assert_eq!(slots.available(), 1, "the answered wait gave its slot back");
}

#[tokio::test]
async fn with_tokens_one_token_cannot_take_every_stream_slot() {
    let slots = StreamSlots::new(10);
    let app = TestApp::with_config(HttpConfig {
        tokens: vec![
            AccessToken::all_sessions(FIRST),
            AccessToken::all_sessions(SECOND),
        ],
        event_streams: slots.clone(),
        max_event_streams_per_token: 1,
        ..HttpConfig::default()
    });
    let stream = |token: &str| with_token(get("/event"), token);
    let first = send(&app, stream(FIRST)).await;
    assert_eq!(first.status(), StatusCode::OK);
    check_refusal(
        refused(&app, stream(FIRST)).await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota",
        "token 1 already holds 1 open event streams",
        "10",
    );
    let second = send(&app, stream(SECOND)).await;
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(slots.available(), 8);
    drop(first);
    assert_eq!(send(&app, stream(FIRST)).await.status(), StatusCode::OK);
}

/// An agent's step is held as a request is (in the bus's history and the session's), so it
/// passes the same bounds: a session id of at most `MAX_ID_BYTES`, and at most
/// `values_per_request` JSON values, whose parsed form costs far more than their text.
#[tokio::test]
async fn steps_past_the_values_or_id_limit_are_422() {
    let app = limited(
        PendingLimits {
            values_per_request: 1_000,
            ..PendingLimits::default()
        },
        HttpConfig::default(),
    );
    let tool_use = |rows: usize| {
        json!({"type": "tool_use", "id": "call-1", "name": "insert_rows",
               "input": {"rows": vec![json!([]); rows]}})
    };
    let (status, body) = app
        .call(post_json("/session/s1/step", &tool_use(1_000)))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "invalid", "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("JSON values"),
        "{body}"
    );
    let long = "s".repeat(askbus::question::MAX_ID_BYTES + 1);
    let (status, body) = app
        .call(post_json(&format!("/session/{long}/step"), &tool_use(1)))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = app.call(get("/session/s1/history")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["messages"], json!([]), "nothing refused was kept");

    let (status, body) = app
        .call(post_json("/session/s1/step", &tool_use(400)))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)));
}
