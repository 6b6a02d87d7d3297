//! Question, session and health routes on the happy path.

use std::time::Duration;

use askbus::question::Timeout;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};

use super::{TestApp, get, language, post_json, targets};

#[tokio::test]
async fn health_answers_without_auth() {
    let app = TestApp::with_config(askbus_http::HttpConfig {
        tokens: vec![askbus_http::AccessToken::all_sessions("secret-token")],
        ..Default::default()
    });
    let (status, body) = app.call(get("/health")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["healthy"], true);
}

/// `/ready` says whether the store answers: ready on Redis, not ready (`503`, within its
/// two seconds) once Redis is gone, ready again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_follows_the_store() {
    let mut redis = crate::support::PrivateRedis::start().await;
    let store: std::sync::Arc<dyn askbus_store::Store> = std::sync::Arc::new(redis.open().await);
    let hub = askbus::question::RequestHub::shared(
        askbus::bus::Bus::new(),
        askbus::question::QuestionConfig::default(),
        askbus::question::ApprovalConfig::default(),
        store,
    )
    .await
    .unwrap();
    let app = TestApp::with_hub(
        hub,
        askbus_http::HttpConfig {
            tokens: vec![askbus_http::AccessToken::all_sessions("secret-token")],
            ..Default::default()
        },
    );
    let (status, body) = app.call(get("/ready")).await;
    assert_eq!((status, &body["ready"]), (StatusCode::OK, &json!(true)));
    redis.kill();
    let started = std::time::Instant::now();
    let (status, body) = app.call(get("/ready")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Liveness is another question: the process is up.
    assert_eq!(app.call(get("/health")).await.0, StatusCode::OK);
    redis.restart().await;
    crate::support::until_ok(|| async {
        match app.call(get("/ready")).await {
            (StatusCode::OK, _) => Ok(()),
            (status, body) => Err(format!("{status}: {body}")),
        }
    })
    .await;
}

#[tokio::test]
async fn list_is_ascending_and_filters_by_session() {
    let app = TestApp::new();
    let first = app.ask("s1");
    let second = app.ask("s2");
    let third = app.ask("s1");

    let (status, all) = app.call(get("/question")).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<_> = all
        .as_array()
        .expect("an array")
        .iter()
        .map(|request| request["id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(ids, [first.clone(), second, third.clone()]);

    // OpenCode clients add `directory`; it is accepted and ignored.
    let (_, s1) = app
        .call(get("/question?sessionID=s1&directory=/tmp/x"))
        .await;
    let ids: Vec<_> = s1
        .as_array()
        .expect("an array")
        .iter()
        .map(|request| request["id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(ids, [first, third]);
    assert_eq!(s1[0]["sessionID"], "s1");
    assert_eq!(s1[0]["questions"][0]["question"], "Which language?");
}

#[tokio::test]
async fn reply_resolves_the_asker_and_get_shows_the_outcome() {
    let app = TestApp::new();
    let pending = app
        .questions
        .ask("s1", vec![language(), targets()])
        .timeout(Timeout::Never)
        .submit()
        .expect("valid");
    let id = pending.id().to_string();

    let (status, body) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "pending");
    assert!(body.get("answers").is_none());

    let (status, body) = app
        .call(post_json(
            &format!("/question/{id}/reply"),
            &json!({"answers": [["Rust"], ["Linux", "macOS"]]}),
        ))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)));
    assert_eq!(
        pending.await,
        Ok(vec![
            vec!["Rust".to_owned()],
            vec!["Linux".to_owned(), "macOS".to_owned()]
        ])
    );

    let (_, body) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(body["status"], "replied");
    assert_eq!(body["answers"], json!([["Rust"], ["Linux", "macOS"]]));
    assert_eq!(body["id"], id);
}

#[tokio::test]
async fn keyed_reply_is_converted() {
    let app = TestApp::new();
    let pending = app
        .questions
        .ask("s1", vec![language(), targets()])
        .timeout(Timeout::Never)
        .submit()
        .expect("valid");
    let id = pending.id();
    let (status, body) = app
        .call(post_json(
            &format!("/question/{id}/reply"),
            &json!({"Which language?": "Go", "Which targets?": "Linux, macOS"}),
        ))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)));
    assert_eq!(
        pending.await,
        Ok(vec![
            vec!["Go".to_owned()],
            vec!["Linux".to_owned(), "macOS".to_owned()]
        ])
    );
}

#[tokio::test]
async fn reject_with_and_without_a_body() {
    let app = TestApp::new();
    for (body, content_type, reason) in [
        (String::new(), None, None),
        ("{}".to_owned(), Some("application/json"), None),
        (
            r#"{"reason":"not now"}"#.to_owned(),
            Some("application/json"),
            Some("not now"),
        ),
    ] {
        let pending = app
            .questions
            .ask("s1", vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .expect("valid");
        let mut request = Request::post(format!("/question/{}/reject", pending.id()));
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let (status, answer) = app
            .call(request.body(Body::from(body.clone())).expect("request"))
            .await;
        assert_eq!((status, answer), (StatusCode::OK, json!(true)), "{body}");
        let id = pending.id();
        assert_eq!(
            pending.await,
            Err(askbus::AskError::Rejected {
                reason: reason.map(str::to_owned)
            })
        );
        let (_, state) = app.call(get(&format!("/question/{id}"))).await;
        assert_eq!(state["status"], "rejected");
        assert_eq!(state.get("reason").and_then(|r| r.as_str()), reason);
    }
}

#[tokio::test]
async fn server_mode_create_then_wait_for_the_reply() {
    let app = TestApp::new();
    let (status, created) = app
        .call(post_json(
            "/question",
            &json!({
                "sessionID": "agent-7",
                "questions": [{"question": "Proceed?", "header": "Proceed",
                               "options": [{"label": "Yes", "description": ""}]}],
                "tool": {"messageID": "msg_1", "callID": "call_1"},
                "timeout": 60
            }),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let id = created["id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("que_"));
    assert_eq!(
        created["tool"],
        json!({"messageID": "msg_1", "callID": "call_1"})
    );
    assert_eq!(created["questions"][0]["custom"], true);
    assert!(created["expiresAt"].as_u64() > created["createdAt"].as_u64());

    // The question is pending (detached), and listed.
    let (_, listed) = app.call(get("/question?sessionID=agent-7")).await;
    assert_eq!(listed[0]["id"], id);

    let wait = {
        let app = app.clone();
        let uri = format!("/question/{id}/wait?timeout=30");
        tokio::spawn(async move { app.call(get(&uri)).await })
    };
    tokio::task::yield_now().await;
    let (status, _) = app
        .call(post_json(
            &format!("/question/{id}/reply"),
            &json!({"answers": [["Yes"]]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, waited) = wait.await.expect("wait task");
    assert_eq!(status, StatusCode::OK);
    assert_eq!(waited["status"], "replied");
    assert_eq!(waited["answers"], json!([["Yes"]]));
}

#[tokio::test]
async fn a_reused_call_id_joins_only_a_question_of_the_same_content() {
    let app = TestApp::new();
    let ask = |question: &str| {
        json!({
            "sessionID": "agent",
            "questions": [{"question": question, "header": "Go",
                           "options": [{"label": "Yes", "description": ""}]}],
            "tool": {"messageID": "msg_1", "callID": "call_1"},
        })
    };
    let (_, first) = app
        .call(post_json("/question", &ask("Deploy to staging?")))
        .await;
    let id = first["id"].as_str().unwrap().to_owned();
    let (status, _) = app
        .call(post_json(
            &format!("/question/{id}/reply"),
            &json!({"answers": [["Yes"]]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);

    let (status, again) = app
        .call(post_json("/question", &ask("Deploy to staging?")))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        again["id"],
        id.as_str(),
        "a retry joins the answered question"
    );

    let (status, error) = app
        .call(post_json("/question", &ask("Deploy to production?")))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert_eq!(error["code"], "call_id_reused");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("\"call_1\"") && message.contains(&id),
        "{message:?}"
    );
    let (_, listed) = app.call(get("/question")).await;
    assert_eq!(listed, json!([]), "nothing was asked");
}

#[tokio::test(start_paused = true)]
async fn wait_answers_pending_when_the_time_runs_out() {
    let app = TestApp::new();
    let id = app.ask("s1");
    let started = tokio::time::Instant::now();
    let (status, body) = app
        .call(get(&format!("/question/{id}/wait?timeout=2")))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "pending");
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    // Waiting did not cancel anything.
    let (_, body) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(body["status"], "pending");
}

#[tokio::test(start_paused = true)]
async fn wait_is_capped_by_the_server() {
    let app = TestApp::new();
    let id = app.ask("s1");
    let started = tokio::time::Instant::now();
    let (_, body) = app
        .call(get(&format!("/question/{id}/wait?timeout=100000")))
        .await;
    assert_eq!(body["status"], "pending");
    assert_eq!(
        started.elapsed(),
        askbus_http::HttpConfig::default().max_wait
    );
}

#[tokio::test(start_paused = true)]
async fn server_mode_timeout_resolves_as_timed_out() {
    let app = TestApp::new();
    let (_, created) = app
        .call(post_json(
            "/question",
            &json!({"sessionID": "s1", "timeout": 5,
                    "questions": [{"question": "Q?", "header": "Q", "options": []}]}),
        ))
        .await;
    let id = created["id"].as_str().expect("id");
    let (_, body) = app
        .call(get(&format!("/question/{id}/wait?timeout=60")))
        .await;
    assert_eq!(body["status"], "timed_out");
}

#[tokio::test]
async fn cancel_session_cancels_its_pending_requests() {
    let app = TestApp::new();
    let first = app.ask("s1");
    app.ask("s1");
    let other = app.ask("s2");
    let (status, body) = app
        .call(
            Request::post("/session/s1/cancel")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"cancelled": 2})));
    let (_, body) = app.call(get(&format!("/question/{first}"))).await;
    assert_eq!(body["status"], "cancelled");
    let (_, body) = app.call(get(&format!("/question/{other}"))).await;
    assert_eq!(body["status"], "pending");
}

#[tokio::test]
async fn a_timeout_is_the_default_when_absent_never_when_null_and_at_most_a_year() {
    let app = TestApp::new();
    let ask = |timeout: Option<Value>| {
        let mut body = json!({"sessionID": "s1", "questions": [
            {"question": "Proceed?", "header": "Go", "options": [{"label": "Yes", "description": ""}]}
        ]});
        if let Some(timeout) = timeout {
            body["timeout"] = timeout;
        }
        post_json("/question", &body)
    };
    let (status, default) = app.call(ask(None)).await;
    assert_eq!(status, StatusCode::OK);
    let lasts = |created: &Value| {
        created["expiresAt"].as_u64().unwrap() - created["createdAt"].as_u64().unwrap()
    };
    assert_eq!(lasts(&default), 600_000, "the server's default");
    let (status, never) = app.call(ask(Some(Value::Null))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(never.get("expiresAt"), None, "null waits for good: {never}");
    let (status, year) = app.call(ask(Some(json!(31_536_000)))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(lasts(&year), 31_536_000_000);
    assert!(
        year["expiresAt"].as_u64().unwrap() < 1 << 53,
        "JavaScript reads it exactly"
    );
    for (timeout, says) in [
        (json!(31_536_001), "at most one year"),
        (json!(1.7e19), "at most one year"),
        (json!(1e300), "at most one year"),
        (json!(-1), "at least 0"),
    ] {
        let (status, error) = app.call(ask(Some(timeout.clone()))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{timeout}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(says), "{timeout}: {message}");
    }
    assert_eq!(app.questions.pending_count(), 3);
}

#[tokio::test]
async fn a_whole_list_is_one_json_array_whatever_its_size() {
    let app = TestApp::new();
    let long = "x".repeat(900);
    let mut asked = Vec::new();
    for _ in 0..300 {
        let question = askbus::QuestionInfo::new(
            format!("Which? {long}"),
            "Which",
            [askbus::QuestionOption::new("A", &long)],
        );
        let pending = app
            .questions
            .ask("s1", vec![question])
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        asked.push(pending.detach().id.to_string());
    }
    // Some 600 KB: written a piece at a time, read back as one array, in order.
    let (status, listed) = app.call(get("/question")).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|request| request["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, asked);
    let (_, empty) = app.call(get("/approval")).await;
    assert_eq!(empty, json!([]));
}
