//! `GET /metrics`: who may read it, and that its figures are what happened.

use std::time::Duration;

use askbus::question::{Identity, Role};
use askbus_http::{AccessToken, HttpConfig};
use axum::http::{StatusCode, header};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

use super::{TestApp, language, request};

const ADMIN: &str = "admin-secret-0123456789";
const SCOPED_ADMIN: &str = "scoped-admin-secret-0123456789";
const REVIEWER: &str = "reviewer-secret-0123456789";
const AGENT: &str = "agent-secret-0123456789";

/// `GET /metrics` with `token`: the status and the body as text.
async fn scrape(app: &TestApp, token: Option<&str>) -> (StatusCode, String) {
    let response = app
        .router
        .clone()
        .oneshot(request("GET", "/metrics", token, None))
        .await
        .expect("the router is infallible");
    let status = response.status();
    if status == StatusCode::OK {
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
    }
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8(bytes.to_vec()).expect("UTF-8"))
}

/// The value of `series` (its name and labels exactly as written) in `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.split(' ').next()?.parse().ok()
    })
}

/// Scrapes until every `(series, value)` of `expected` holds (the bus is counted by a
/// task of its own), failing after 5 s with the last scrape.
async fn scrape_until(app: &TestApp, expected: &[(&str, f64)]) -> String {
    let mut last = String::new();
    let waited = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            last = scrape(app, None).await.1;
            if expected
                .iter()
                .all(|(series, want)| value(&last, series) == Some(*want))
            {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(waited.is_ok(), "expected {expected:?} in\n{last}");
    last
}

#[tokio::test]
async fn only_an_admin_for_every_session_reads_the_metrics() {
    let app = TestApp::with_config(HttpConfig {
        tokens: vec![
            AccessToken::all_sessions(ADMIN),
            AccessToken::all_sessions(SCOPED_ADMIN).in_session("s1"),
            AccessToken::new(REVIEWER, Identity::new("alice", Role::Reviewer)),
            AccessToken::new(AGENT, Identity::new("agent", Role::Agent)),
        ],
        ..HttpConfig::default()
    });
    let (status, text) = scrape(&app, Some(ADMIN)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
    for token in [SCOPED_ADMIN, REVIEWER, AGENT] {
        let (status, body) = scrape(&app, Some(token)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }
    assert_eq!(scrape(&app, None).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn without_tokens_the_local_caller_reads_them() {
    let app = TestApp::new();
    assert_eq!(scrape(&app, None).await.0, StatusCode::OK);
}

#[tokio::test]
async fn turned_off_they_are_not_found() {
    let app = TestApp::with_config(HttpConfig {
        metrics: false,
        ..HttpConfig::default()
    });
    let (status, body) = scrape(&app, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

/// Creates a request over HTTP (`/question` or `/approval`) in `session`; its id.
async fn create(app: &TestApp, kind: &str, session: &str) -> String {
    let body = match kind {
        "question" => json!({"sessionID": session, "questions": [language()]}),
        _ => json!({
            "session_id": session,
            "action_requests": [{"name": "delete_rows", "args": {"table": "users"}}],
        }),
    };
    let (status, created) = app
        .call(request("POST", &format!("/{kind}"), None, Some(body)))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    created["id"].as_str().expect("an id").to_owned()
}

/// `POST uri` with `body`, expected to succeed.
async fn post(app: &TestApp, uri: &str, body: serde_json::Value) {
    let (status, answer) = app.call(request("POST", uri, None, Some(body))).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {answer}");
}

#[tokio::test]
async fn requests_and_their_outcomes_are_counted_by_kind() {
    let app = TestApp::new();
    let replied = create(&app, "question", "s1").await;
    let rejected = create(&app, "question", "s1").await;
    create(&app, "question", "s2").await;
    let approved = create(&app, "approval", "s1").await;
    create(&app, "approval", "s2").await;
    scrape_until(
        &app,
        &[
            ("askbus_pending_requests{kind=\"question\"}", 3.0),
            ("askbus_pending_requests{kind=\"approval\"}", 2.0),
            ("askbus_requests_asked_total{kind=\"question\"}", 3.0),
            ("askbus_requests_asked_total{kind=\"approval\"}", 2.0),
        ],
    )
    .await;

    post(
        &app,
        &format!("/question/{replied}/reply"),
        json!({"answers": [["Rust"]]}),
    )
    .await;
    post(&app, &format!("/question/{rejected}/reject"), json!({})).await;
    post(
        &app,
        &format!("/approval/{approved}/reply"),
        json!({"decisions": [{"type": "approve"}]}),
    )
    .await;
    post(&app, "/session/s2/cancel", json!({})).await;

    let text = scrape_until(
        &app,
        &[
            ("askbus_pending_requests{kind=\"question\"}", 0.0),
            ("askbus_pending_requests{kind=\"approval\"}", 0.0),
            (
                "askbus_outcomes_total{kind=\"question\",outcome=\"replied\"}",
                1.0,
            ),
            (
                "askbus_outcomes_total{kind=\"question\",outcome=\"rejected\"}",
                1.0,
            ),
            (
                "askbus_outcomes_total{kind=\"question\",outcome=\"cancelled\"}",
                1.0,
            ),
            (
                "askbus_outcomes_total{kind=\"approval\",outcome=\"replied\"}",
                1.0,
            ),
            (
                "askbus_outcomes_total{kind=\"approval\",outcome=\"cancelled\"}",
                1.0,
            ),
            (
                "askbus_ask_to_outcome_seconds_count{kind=\"question\",outcome=\"replied\"}",
                1.0,
            ),
            (
                "askbus_ask_to_outcome_seconds_count{kind=\"approval\",outcome=\"cancelled\"}",
                1.0,
            ),
        ],
    )
    .await;
    // Answered within the test: every wait is in the first bucket.
    assert_eq!(
        value(
            &text,
            "askbus_ask_to_outcome_seconds_bucket{le=\"1.0\",kind=\"question\",outcome=\"replied\"}"
        ),
        Some(1.0),
        "{text}"
    );
    // Counted as published, under the bus's lock: nothing to fall behind, no series for it.
    assert!(!text.contains("missed_events"), "{text}");
}

#[tokio::test]
async fn http_requests_are_labelled_by_route_template() {
    let app = TestApp::new();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = create(&app, "question", "s1").await;
        post(
            &app,
            &format!("/question/{id}/reply"),
            json!({"answers": [["Rust"]]}),
        )
        .await;
        ids.push(id);
    }
    // The same route and method with another status: a series of its own.
    let (again, _) = app
        .call(request(
            "POST",
            &format!("/question/{}/reply", ids[0]),
            None,
            Some(json!({"answers": [["Rust"]]})),
        ))
        .await;
    assert_ne!(again, StatusCode::OK);
    let again = again.as_u16();
    for _ in 0..2 {
        let (status, _) = app.call(request("GET", "/no/such/route", None, None)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    let text = scrape(&app, None).await.1;
    let reply_again = format!(
        "askbus_http_request_duration_seconds_count{{method=\"POST\",route=\"/question/{{id}}/reply\",status=\"{again}\"}}"
    );
    for (series, count) in [
        (
            "askbus_http_request_duration_seconds_count{method=\"POST\",route=\"/question\",status=\"200\"}",
            3.0,
        ),
        (
            "askbus_http_request_duration_seconds_count{method=\"POST\",route=\"/question/{id}/reply\",status=\"200\"}",
            3.0,
        ),
        (reply_again.as_str(), 1.0),
        (
            "askbus_http_request_duration_seconds_count{method=\"GET\",route=\"unmatched\",status=\"404\"}",
            2.0,
        ),
    ] {
        assert_eq!(value(&text, series), Some(count), "{series} in\n{text}");
    }
    for id in &ids {
        assert!(!text.contains(id.as_str()), "no raw path: {text}");
    }
}

/// Every outcome's series is there from the start, at 0: a rate over it reads 0 rather
/// than nothing before the first request of its kind ends.
#[tokio::test]
async fn outcome_series_read_zero_before_any_outcome() {
    let app = TestApp::new();
    let text = scrape(&app, None).await.1;
    for (kind, outcome) in [
        ("question", "replied"),
        ("question", "rejected"),
        ("question", "timed_out"),
        ("question", "cancelled"),
        ("approval", "replied"),
        ("approval", "timed_out"),
        ("approval", "cancelled"),
    ] {
        let labels = format!("{{kind=\"{kind}\",outcome=\"{outcome}\"}}");
        for series in [
            format!("askbus_outcomes_total{labels}"),
            format!("askbus_ask_to_outcome_seconds_count{labels}"),
        ] {
            assert_eq!(value(&text, &series), Some(0.0), "{series} in\n{text}");
        }
    }
    for kind in ["question", "approval"] {
        let series = format!("askbus_requests_asked_total{{kind=\"{kind}\"}}");
        assert_eq!(value(&text, &series), Some(0.0), "{series} in\n{text}");
    }
}

#[tokio::test]
async fn open_streams_and_their_resyncs_are_counted() {
    let app = TestApp::new();
    let mut events = app
        .events("/event", &[("last-event-id", "not-a-cursor")])
        .await;
    assert_eq!(events.next().await.kind(), "server.connected");
    assert_eq!(events.next().await.kind(), "server.resync");
    let text = scrape(&app, None).await.1;
    assert_eq!(
        value(&text, "askbus_event_streams_open"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            "askbus_event_stream_resyncs_total{reason=\"unknown_cursor\"}"
        ),
        Some(1.0),
        "{text}"
    );
    drop(events);
    let text = scrape(&app, None).await.1;
    assert_eq!(
        value(&text, "askbus_event_streams_open"),
        Some(0.0),
        "{text}"
    );
}

#[tokio::test]
async fn a_stream_lagging_past_the_history_is_counted() {
    let app = TestApp::with_history(3, 2);
    let mut events = app.events("/event", &[]).await;
    events.next().await;
    for _ in 0..10 {
        app.ask("s1");
    }
    assert_eq!(events.next().await.kind(), "server.resync");
    let text = scrape(&app, None).await.1;
    assert_eq!(value(&text, "askbus_event_stream_lagged_total"), Some(1.0));
    assert_eq!(
        value(
            &text,
            "askbus_event_stream_resyncs_total{reason=\"lagged\"}"
        ),
        Some(1.0),
        "{text}"
    );
}

#[tokio::test]
async fn the_follower_lag_is_served_over_a_shared_store_only() {
    let store: std::sync::Arc<dyn askbus_store::Store> =
        std::sync::Arc::new(askbus_store::MemoryStore::new());
    let hub = askbus::question::RequestHub::builder()
        .bus(askbus::bus::Bus::new())
        .store(store)
        .shared()
        .build()
        .await
        .expect("a memory store is shared");
    let app = TestApp::with_hub(hub, HttpConfig::default());
    create(&app, "question", "s1").await;
    scrape_until(&app, &[("askbus_follower_lag_changes", 0.0)]).await;

    let text = scrape(&TestApp::new(), None).await.1;
    assert!(!text.contains("askbus_follower_lag_changes"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn reminders_and_escalations_are_counted_by_kind_and_step() {
    let app = TestApp::new();
    let asked = json!({"sessionID": "s1", "questions": [language()], "timeout": 10,
                       "remindAfter": 1});
    let requested = json!({
        "session_id": "s1",
        "action_requests": [{"name": "delete_rows", "args": {"table": "users"}}],
        "timeout": 10, "remind_after": 1, "escalate_after": 2, "escalate_to": ["local"],
    });
    for (uri, body) in [("/question", asked), ("/approval", requested)] {
        let (status, created) = app.call(request("POST", uri, None, Some(body))).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {created}");
    }
    let text = scrape(&app, None).await.1;
    assert_eq!(
        value(
            &text,
            "askbus_follow_ups_total{kind=\"question\",step=\"reminded\"}"
        ),
        None,
        "nothing is due yet: {text}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let text = scrape_until(
        &app,
        &[
            (
                "askbus_follow_ups_total{kind=\"question\",step=\"reminded\"}",
                1.0,
            ),
            (
                "askbus_follow_ups_total{kind=\"approval\",step=\"reminded\"}",
                1.0,
            ),
            (
                "askbus_follow_ups_total{kind=\"approval\",step=\"escalated\"}",
                1.0,
            ),
            ("askbus_pending_requests{kind=\"question\"}", 1.0),
        ],
    )
    .await;
    assert_eq!(
        value(
            &text,
            "askbus_follow_ups_total{kind=\"question\",step=\"escalated\"}"
        ),
        None,
        "the question does not escalate: {text}"
    );
}
