//! Follow-ups over HTTP: the fields `POST /question` and `POST /approval` take, shown back
//! in each kind's spelling; the requests refused (422) and why; reminders and escalations
//! on `GET /event` at their time; a default answer as `GET /question/{id}` and `/wait`
//! report it: timed out, never answered.

use std::time::Duration;

use askbus::question::{Identity, Role};
use askbus_http::{AccessToken, HttpConfig};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Frame, Frames, TestApp, language, request};

const ADMIN: &str = "admin-secret-0123456789";
const AGENT: &str = "agent-secret-0123456789";
const BOB: &str = "bob-secret-0123456789";

/// A router with an admin, an agent (`agent-1`) and a reviewer (`bob`).
fn app() -> TestApp {
    TestApp::with_config(HttpConfig {
        tokens: vec![
            AccessToken::all_sessions(ADMIN),
            AccessToken::new(AGENT, Identity::new("agent-1", Role::Agent)),
            AccessToken::new(BOB, Identity::new("bob", Role::Reviewer)),
        ],
        ..HttpConfig::default()
    })
}

/// `POST uri` with the agent's token and a JSON `body`: the status and the JSON answer.
async fn create(app: &TestApp, uri: &str, body: Value) -> (StatusCode, Value) {
    app.call(request("POST", uri, AGENT, Some(body))).await
}

/// `GET uri` with the admin's token, expected to succeed: the JSON answer.
async fn read(app: &TestApp, uri: &str) -> Value {
    let (status, body) = app.call(request("GET", uri, ADMIN, None)).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    body
}

/// A question body in session `s` with the `follow_up` fields added.
fn question(follow_up: Value) -> Value {
    let mut body = json!({"sessionID": "s", "questions": [language()]});
    merge(&mut body, follow_up);
    body
}

/// An approval body in session `s` with the `follow_up` fields added.
fn approval(follow_up: Value) -> Value {
    let mut body = json!({
        "session_id": "s",
        "action_requests": [{"name": "delete_rows", "args": {"table": "users"}}],
    });
    merge(&mut body, follow_up);
    body
}

fn merge(body: &mut Value, fields: Value) {
    let (Value::Object(body), Value::Object(fields)) = (body, fields) else {
        panic!("JSON objects");
    };
    body.extend(fields);
}

/// `value`'s number at `field` minus its `createdAt`/`created_at` (`created`), in ms.
fn after_creation(value: &Value, field: &str, created: &str) -> Option<u64> {
    Some(value[field].as_u64()? - value[created].as_u64()?)
}

#[tokio::test]
async fn questions_take_and_show_the_follow_up_fields_in_camel_case() {
    let app = app();
    let (status, created) = create(
        &app,
        "/question",
        question(json!({
            "timeout": 600,
            "remindAfter": 60,
            "escalateAfter": 120.5,
            "escalateTo": ["bob"],
            "onTimeout": {"answer": [["Go"]]},
        })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let shown = read(&app, &format!("/question/{id}")).await;
    assert_eq!(shown["status"], "pending");
    for view in [&created, &shown] {
        let at = |field| after_creation(view, field, "createdAt");
        assert_eq!(at("expiresAt"), Some(600_000), "{view}");
        assert_eq!(at("remindAt"), Some(60_000), "{view}");
        assert_eq!(at("escalateAt"), Some(120_500), "{view}");
        assert_eq!(view["escalateTo"], json!(["bob"]), "{view}");
        assert_eq!(view["onTimeout"], json!({"answer": [["Go"]]}), "{view}");
        for snake in ["remind_at", "escalate_at", "escalate_to", "on_timeout"] {
            assert!(
                view.get(snake).is_none(),
                "no {snake} on a question: {view}"
            );
        }
    }
    // A question without a follow-up shows none of the fields.
    let (_, plain) = create(&app, "/question", question(json!({}))).await;
    for field in ["remindAt", "escalateAt", "escalateTo", "onTimeout"] {
        assert!(plain.get(field).is_none(), "{field}: {plain}");
    }
}

#[tokio::test]
async fn approvals_take_and_show_the_follow_up_fields_in_snake_case() {
    let app = app();
    let (status, created) = create(
        &app,
        "/approval",
        approval(json!({
            "timeout": 300,
            "remind_after": 30,
            "escalate_after": 60,
            "escalate_to": ["bob"],
            "on_timeout": "escalate",
        })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let shown = read(&app, &format!("/approval/{id}")).await;
    assert_eq!(shown["status"], "pending");
    for view in [&created, &shown] {
        let at = |field| after_creation(view, field, "created_at");
        // Escalating on expiry gives the deciders the timeout once more.
        assert_eq!(at("expires_at"), Some(600_000), "{view}");
        assert_eq!(at("remind_at"), Some(30_000), "{view}");
        assert_eq!(at("escalate_at"), Some(60_000), "{view}");
        assert_eq!(view["escalate_to"], json!(["bob"]), "{view}");
        assert_eq!(view["on_timeout"], "escalate", "{view}");
        for camel in ["remindAt", "escalateAt", "escalateTo", "onTimeout"] {
            assert!(
                view.get(camel).is_none(),
                "no {camel} on an approval: {view}"
            );
        }
    }
}

/// Creates `body` at `uri` and expects 422 `invalid` with a message containing `expected`.
async fn refused(app: &TestApp, uri: &str, body: Value, expected: &str) {
    let (status, error) = create(app, uri, body.clone()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {error}");
    assert_eq!(error["code"], "invalid", "{body}: {error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(expected),
        "{body}: {message:?} lacks {expected:?}"
    );
}

#[tokio::test]
async fn a_follow_up_that_cannot_apply_is_refused_with_why() {
    let app = app();
    let options_only = json!({"sessionID": "s", "questions": [language().options_only()],
                              "timeout": 30, "onTimeout": {"answer": [["Cobol"]]}});
    for (uri, body, expected) in [
        (
            "/approval",
            approval(json!({"timeout": 30, "on_timeout": {"answer": [["approve"]]}})),
            "never get its own tool call approved by waiting",
        ),
        (
            "/question",
            question(json!({"escalateAfter": 10, "escalateTo": ["carol"]})),
            "`escalateTo` names \"carol\", which is no credential of this server that may decide",
        ),
        (
            "/question",
            question(json!({"escalateAfter": 10, "escalateTo": ["agent-1"]})),
            "`escalateTo` names \"agent-1\"",
        ),
        (
            "/approval",
            approval(json!({"escalate_after": 10, "escalate_to": ["carol"]})),
            "`escalate_to` names \"carol\"",
        ),
        (
            "/question",
            question(json!({"timeout": 30, "remindAfter": 30})),
            "(30 s) must come before the request's deadline (30 s)",
        ),
        (
            "/question",
            question(json!({"timeout": 30, "escalateAfter": 45, "escalateTo": ["bob"]})),
            "(45 s) must come before the request's deadline (30 s)",
        ),
        (
            // The server's default timeout for approvals is 300 s.
            "/approval",
            approval(json!({"remind_after": 301})),
            "must come before the request's deadline (300 s)",
        ),
        (
            "/question",
            question(json!({"remindAfter": -1})),
            "`remindAfter` must be a number of seconds",
        ),
        (
            "/question",
            question(json!({"timeout": 30, "onTimeout": {"answer": [["Rust"], ["Go"]]}})),
            "the default answer on timeout does not fit: expected 1 answers, one per question, but got 2",
        ),
        (
            "/question",
            options_only,
            "the default answer on timeout does not fit: question 1 (\"Which language?\"): \"Cobol\" is not one of the offered options",
        ),
        (
            "/question",
            question(json!({"timeout": null, "onTimeout": {"answer": [["Go"]]}})),
            "needs a deadline",
        ),
    ] {
        refused(&app, uri, body, expected).await;
    }
    assert_eq!(
        read(&app, "/question").await,
        json!([]),
        "nothing was asked"
    );
    assert_eq!(
        read(&app, "/approval").await,
        json!([]),
        "nothing was asked"
    );
}

/// The next frame of `frames` that is no heartbeat.
async fn next_event(frames: &mut Frames) -> Frame {
    loop {
        let frame = frames.next().await;
        if frame.kind() != "server.heartbeat" {
            return frame;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn reminders_and_escalations_reach_the_event_stream_at_their_time() {
    let app = app();
    let bearer = format!("Bearer {ADMIN}");
    let mut frames = app.events("/event", &[("authorization", &bearer)]).await;
    assert_eq!(next_event(&mut frames).await.kind(), "server.connected");
    let started = tokio::time::Instant::now();
    let (_, asked) = create(
        &app,
        "/question",
        question(
            json!({"timeout": 100, "remindAfter": 10, "escalateAfter": 30,
                        "escalateTo": ["bob"]}),
        ),
    )
    .await;
    let (_, requested) = create(
        &app,
        "/approval",
        approval(
            json!({"timeout": 100, "remind_after": 20, "escalate_after": 40,
                        "escalate_to": ["bob"]}),
        ),
    )
    .await;
    assert_eq!(next_event(&mut frames).await.kind(), "question.asked");
    assert_eq!(next_event(&mut frames).await.kind(), "approval.asked");
    let question_id = asked["id"].clone();
    let approval_id = requested["id"].clone();
    let approval_key = requested["approval_key"].clone();
    for (seconds, kind, properties) in [
        (
            10,
            "question.reminded",
            json!({"sessionID": "s", "requestID": question_id}),
        ),
        (
            20,
            "approval.reminded",
            json!({"session_id": "s", "request_id": approval_id, "approval_key": approval_key}),
        ),
        (
            30,
            "question.escalated",
            json!({"sessionID": "s", "requestID": question_id, "escalatedTo": ["bob"]}),
        ),
        (
            40,
            "approval.escalated",
            json!({"session_id": "s", "request_id": approval_id, "approval_key": approval_key,
                   "escalated_to": ["bob"]}),
        ),
    ] {
        let frame = next_event(&mut frames).await;
        assert_eq!(frame.kind(), kind, "{:?}", frame.data);
        assert_eq!(frame.data["properties"], properties, "{kind}");
        assert!(frame.id.is_some(), "{kind} is a bus event, with an id");
        assert_eq!(started.elapsed(), Duration::from_secs(seconds), "{kind}");
    }
    // Each fired once; both still wait for a human.
    assert_eq!(
        read(
            &app,
            &format!("/question/{}", question_id.as_str().unwrap())
        )
        .await["status"],
        "pending"
    );
    let (status, _) = app
        .call(request(
            "POST",
            &format!("/approval/{}/reply", approval_id.as_str().unwrap()),
            BOB,
            Some(json!({"decisions": [{"type": "approve"}]})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let frame = next_event(&mut frames).await;
    assert_eq!(frame.kind(), "approval.replied", "no second follow-up");
}

#[tokio::test(start_paused = true)]
async fn a_default_answer_reads_as_timed_out_with_default_answers_never_answers() {
    let app = app();
    let (status, created) = create(
        &app,
        "/question",
        question(json!({"timeout": 30, "onTimeout": {"answer": [["Go"]]}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let started = tokio::time::Instant::now();
    let waited = read(&app, &format!("/question/{id}/wait?timeout=60")).await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(30),
        "at the deadline"
    );
    let shown = read(&app, &format!("/question/{id}")).await;
    for view in [&waited, &shown] {
        assert_eq!(view["status"], "timed_out", "{view}");
        assert_eq!(view["fallback"], "default_answer", "{view}");
        assert_eq!(view["defaultAnswers"], json!([["Go"]]), "{view}");
        assert!(view.get("answers").is_none(), "nobody answered: {view}");
        assert!(view.get("answeredBy").is_none(), "nobody answered: {view}");
    }
    // Resolved: a wait answers at once, the same.
    let again = read(&app, &format!("/question/{id}/wait?timeout=60")).await;
    assert_eq!(again, shown);
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert_eq!(read(&app, "/question").await, json!([]));
}
