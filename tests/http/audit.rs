//! `GET /audit`: the receipts of decisions, unsealed then sealed, paged, and who may read
//! them.

use std::sync::Arc;

use askbus::bus::Bus;
use askbus::question::{ApprovalConfig, Identity, QuestionConfig, RequestHub, Role, Timeout};
use askbus_audit::{AuditLine, Sealer, SigningKey};
use askbus_http::{AccessToken, HttpConfig};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::Value;

use super::{TestApp, get, language};

const ADMIN: &str = "admin-secret-0123456789";
const SCOPED: &str = "scoped-secret-0123456789";
const REVIEWER: &str = "reviewer-secret-0123456789";
const AGENT: &str = "agent-secret-0123456789";
const SCOPED_REVIEWER: &str = "scoped-reviewer-secret-0123456789";

/// A router over a hub recording in a memory store, with an all-sessions and a scoped
/// token, and `answered` questions answered.
async fn app_with_answers(answered: usize) -> TestApp {
    let hub = RequestHub::with_store(
        Bus::new(),
        QuestionConfig::default(),
        ApprovalConfig::default(),
        Arc::new(askbus_store::MemoryStore::new()),
    )
    .await
    .unwrap();
    let app = TestApp::with_hub(
        hub,
        HttpConfig {
            tokens: vec![
                AccessToken::all_sessions(ADMIN),
                AccessToken::for_session(SCOPED, "mine"),
                AccessToken::new(REVIEWER, Identity::new("alice", Role::Reviewer)),
                AccessToken::new(AGENT, Identity::new("bot", Role::Agent)),
                AccessToken::new(SCOPED_REVIEWER, Identity::new("bob", Role::Reviewer))
                    .in_session("mine"),
            ],
            ..HttpConfig::default()
        },
    );
    for n in 0..answered {
        let asked = app
            .questions
            .ask("mine", vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        app.questions
            .reply(asked.id(), vec![vec![format!("answer {n}")]])
            .unwrap()
            .await
            .unwrap();
        assert!(asked.await.is_ok());
    }
    app
}

fn with_token(uri: &str, token: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap()
}

/// The entries of an answer, as lines.
fn lines(body: &Value) -> Vec<AuditLine> {
    serde_json::from_value(body.clone()).unwrap()
}

#[tokio::test]
async fn entries_show_unsealed_then_sealed_and_verify() {
    let app = app_with_answers(3).await;
    let (status, body) = app.call(with_token("/audit", ADMIN)).await;
    assert_eq!(status, StatusCode::OK);
    let unsealed = lines(&body);
    assert_eq!(
        unsealed.iter().map(|line| line.seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(
        unsealed
            .iter()
            .all(|line| line.hash.is_none() && line.prev.is_none())
    );
    assert_eq!(
        body[0]["hash"],
        Value::Null,
        "an unsealed hash is shown as null"
    );
    let draft: Value = serde_json::from_str(&unsealed[0].draft).unwrap();
    assert_eq!(draft["outcome"], "replied");
    assert_eq!(draft["decision"], serde_json::json!([["answer 0"]]));

    let key = SigningKey::from_bytes(&[3; 32]);
    let store = Arc::clone(app.hub.store().unwrap());
    Sealer::new(store, Some(key.clone()))
        .seal_pending()
        .await
        .unwrap();
    let (_, body) = app.call(with_token("/audit", ADMIN)).await;
    let export: String = lines(&body)
        .iter()
        .map(|line| format!("{}\n", line.to_json()))
        .collect();
    let verified = askbus_audit::verify(export.as_bytes(), Some(&key.verifying_key())).unwrap();
    assert_eq!((verified.entries, verified.signed), (3, 3));
}

#[tokio::test]
async fn pages_follow_the_cursor_and_bad_paging_is_400() {
    let app = app_with_answers(3).await;
    let (status, headers, body) = app
        .call_with_headers(with_token("/audit?limit=2", ADMIN))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        lines(&body).iter().map(|line| line.seq).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(headers["x-next-cursor"], "2");
    assert_eq!(
        headers[header::LINK],
        "</audit?limit=2&after=2>; rel=\"next\""
    );

    let (_, headers, body) = app
        .call_with_headers(with_token("/audit?limit=2&after=2", ADMIN))
        .await;
    assert_eq!(
        lines(&body).iter().map(|line| line.seq).collect::<Vec<_>>(),
        [3]
    );
    assert!(headers.get("x-next-cursor").is_none());
    assert!(headers.get(header::LINK).is_none());
    let (_, body) = app.call(with_token("/audit?after=3", ADMIN)).await;
    assert_eq!(body, serde_json::json!([]));

    for bad in ["/audit?limit=0", "/audit?after=que_1", "/audit?limit=-1"] {
        let (status, body) = app.call(with_token(bad, ADMIN)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
}

/// Admins and reviewers with a token for every session read the log; agents, and tokens
/// of one session, are 403; no token is 401.
#[tokio::test]
async fn only_admins_and_reviewers_read_the_log() {
    let app = app_with_answers(1).await;
    for (token, expected) in [
        (ADMIN, StatusCode::OK),
        (REVIEWER, StatusCode::OK),
        (AGENT, StatusCode::FORBIDDEN),
        (SCOPED, StatusCode::FORBIDDEN),
        (SCOPED_REVIEWER, StatusCode::FORBIDDEN),
    ] {
        let (status, body) = app.call(with_token("/audit", token)).await;
        assert_eq!(status, expected, "{token}: {body}");
        if expected == StatusCode::FORBIDDEN {
            assert_eq!(body["code"], "forbidden", "{token}");
        }
    }
    let (status, _) = app.call(get("/audit")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_hub_without_a_store_keeps_no_log() {
    let app = TestApp::new();
    let (status, body) = app.call(get("/audit")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, serde_json::json!([]));
}
