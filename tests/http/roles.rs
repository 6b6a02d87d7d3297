//! Roles and identities over HTTP: an agent's credential never decides, a reviewer's never
//! asks, nobody decides what they asked, and every outcome says who decided it.

use askbus::question::{Duties, Identity, RequestHub, Role};
use askbus_http::{AccessToken, HttpConfig};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{TestApp, language, request};

const ADMIN: &str = "admin-secret-0123456789";
const AGENT: &str = "agent-secret-0123456789";
const SCOPED_AGENT: &str = "scoped-agent-secret-0123456789";
const ALICE: &str = "alice-secret-0123456789";
const BOB: &str = "bob-secret-0123456789";
const BOB_IN_OTHER: &str = "bob-other-secret-0123456789";

/// A router with an admin, two agents (one scoped to `mine`), two reviewers (one scoped to
/// `other`), and the server's duties for such a set: never the asker.
fn app() -> TestApp {
    let hub = RequestHub::new(askbus::bus::Bus::new()).with_duties(Duties {
        never_the_asker: true,
    });
    TestApp::with_hub(
        hub,
        HttpConfig {
            tokens: vec![
                AccessToken::all_sessions(ADMIN),
                AccessToken::new(AGENT, Identity::new("agent-1", Role::Agent)),
                AccessToken::new(SCOPED_AGENT, Identity::new("agent-2", Role::Agent))
                    .in_session("mine"),
                AccessToken::new(ALICE, Identity::new("alice", Role::Reviewer)),
                AccessToken::new(BOB_IN_OTHER, Identity::new("bob", Role::Reviewer))
                    .in_session("other"),
                AccessToken::new(BOB, Identity::new("bob-everywhere", Role::Reviewer)),
            ],
            ..HttpConfig::default()
        },
    )
}

/// `GET uri` with `token`: the JSON answer, whatever its status.
async fn read(app: &TestApp, token: &str, uri: &str) -> Value {
    app.call(request("GET", uri, token, None)).await.1
}

/// `POST uri` with `token` and a JSON `body`: the status and the JSON answer.
async fn post(app: &TestApp, token: &str, uri: &str, body: Value) -> (StatusCode, Value) {
    app.call(request("POST", uri, token, Some(body))).await
}

/// A question created over HTTP with `token` in `session`; its id.
async fn ask(app: &TestApp, token: &str, session: &str) -> String {
    let body =
        json!({"sessionID": session, "questions": [serde_json::to_value(language()).unwrap()]});
    let (status, created) = app
        .call(request("POST", "/question", token, Some(body)))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    created["id"].as_str().expect("an id").to_owned()
}

/// An approval created over HTTP with `token` in `session`; its id.
async fn request_approval(app: &TestApp, token: &str, session: &str) -> String {
    let body = json!({
        "session_id": session,
        "action_requests": [{"name": "delete_rows", "args": {"table": "users"}}],
    });
    let (status, created) = app
        .call(request("POST", "/approval", token, Some(body)))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    created["id"].as_str().expect("an id").to_owned()
}

/// Every route that decides a request, for question `question` and approval `approval`
/// of session `session`.
fn deciding_routes(question: &str, approval: &str, session: &str) -> Vec<(String, Value)> {
    vec![
        (
            format!("/question/{question}/reply"),
            json!({"answers": [["Rust"]]}),
        ),
        (format!("/question/{question}/reject"), json!({})),
        (
            format!("/approval/{approval}/reply"),
            json!({"decisions": [{"type": "approve"}]}),
        ),
        (
            format!("/session/{session}/resume"),
            json!({"input": {"answers": [["Rust"]]}}),
        ),
        (
            format!("/session/{session}/reject"),
            json!({"reason": "stop"}),
        ),
    ]
}

#[tokio::test]
async fn an_agent_token_decides_nothing_it_may_ask_for() {
    let app = app();
    let question = ask(&app, AGENT, "mine").await;
    let approval = request_approval(&app, AGENT, "mine").await;
    for token in [AGENT, SCOPED_AGENT] {
        for (uri, body) in deciding_routes(&question, &approval, "mine") {
            let (status, refused) = app.call(request("POST", &uri, token, Some(body))).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {refused}");
            assert_eq!(refused["code"], "forbidden", "{uri}");
            assert!(
                refused["message"]
                    .as_str()
                    .unwrap()
                    .contains("may not answer"),
                "{uri}: {refused}"
            );
        }
    }
    // Nothing was decided: both still wait for a human.
    for uri in [
        format!("/question/{question}"),
        format!("/approval/{approval}"),
    ] {
        let body = read(&app, ADMIN, &uri).await;
        assert_eq!(body["status"], "pending", "{uri}");
    }
    // The agent may still read, wait on and cancel what it asked.
    let (status, _) = app
        .call(request(
            "GET",
            &format!("/question/{question}"),
            AGENT,
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, cancelled) = app
        .call(request("POST", "/session/mine/cancel", SCOPED_AGENT, None))
        .await;
    assert_eq!(
        (status, cancelled["cancelled"].as_u64()),
        (StatusCode::OK, Some(2))
    );
}

#[tokio::test]
async fn a_reviewer_token_asks_nothing() {
    let app = app();
    let body =
        json!({"sessionID": "mine", "questions": [serde_json::to_value(language()).unwrap()]});
    let approval = json!({
        "session_id": "mine",
        "action_requests": [{"name": "delete_rows", "args": {}}],
    });
    let step = json!({"type": "text", "text": "hello"});
    for (uri, body) in [
        ("/question", body),
        ("/approval", approval),
        ("/session/mine/step", step),
    ] {
        let (status, refused) = app.call(request("POST", uri, ALICE, Some(body))).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {refused}");
        assert_eq!(refused["code"], "forbidden");
    }
    assert_eq!(app.hub.questions().pending_count(), 0);
    assert_eq!(app.hub.approvals().pending_count(), 0);
}

#[tokio::test]
async fn nobody_decides_what_they_asked_not_even_an_admin() {
    let app = app();
    let question = ask(&app, ADMIN, "mine").await;
    let (status, refused) = post(
        &app,
        ADMIN,
        &format!("/question/{question}/reply"),
        json!({"answers": [["Rust"]]}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("asked this request")
    );
    // Another human may.
    let (status, _) = post(
        &app,
        ALICE,
        &format!("/question/{question}/reply"),
        json!({"answers": [["Rust"]]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_session_reject_that_includes_the_callers_own_request_refuses_nothing() {
    let app = app();
    let question = ask(&app, AGENT, "mine").await;
    let own = request_approval(&app, ADMIN, "mine").await;
    let (status, refused) = post(&app, ADMIN, "/session/mine/reject", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    for uri in [format!("/question/{question}"), format!("/approval/{own}")] {
        let body = read(&app, ALICE, &uri).await;
        assert_eq!(body["status"], "pending", "{uri}: nothing was refused");
    }
    let (status, rejected) = post(&app, ALICE, "/session/mine/reject", json!({})).await;
    assert_eq!(
        (status, rejected["rejected"].as_u64()),
        (StatusCode::OK, Some(2))
    );
}

#[tokio::test]
async fn a_scoped_reviewer_cannot_cross_sessions() {
    let app = app();
    let question = ask(&app, AGENT, "mine").await;
    let (status, _) = post(
        &app,
        BOB_IN_OTHER,
        &format!("/question/{question}/reply"),
        json!({"answers": [["Rust"]]}),
    )
    .await;
    // Another session's request does not exist for this token.
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = post(&app, BOB_IN_OTHER, "/session/mine/reject", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let body = read(&app, ADMIN, &format!("/question/{question}")).await;
    assert_eq!(body["status"], "pending");
}

#[tokio::test]
async fn outcomes_say_who_asked_and_who_decided_in_views_events_and_history() {
    let app = app();
    let mut events = app
        .events("/event", &[("authorization", &format!("Bearer {ADMIN}"))])
        .await;
    let question = ask(&app, AGENT, "mine").await;
    let approval = request_approval(&app, SCOPED_AGENT, "mine").await;
    let (status, _) = post(
        &app,
        ALICE,
        &format!("/question/{question}/reply"),
        json!({"answers": [["Rust"]]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = post(
        &app,
        BOB,
        &format!("/approval/{approval}/reply"),
        json!({"decisions": [{"type": "approve"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let answered = read(&app, ADMIN, &format!("/question/{question}")).await;
    assert_eq!(
        answered["askedBy"],
        json!({"name": "agent-1", "role": "agent"})
    );
    assert_eq!(
        answered["answeredBy"],
        json!({"name": "alice", "role": "reviewer"})
    );
    let approved = read(&app, ADMIN, &format!("/approval/{approval}")).await;
    assert_eq!(
        approved["asked_by"],
        json!({"name": "agent-2", "role": "agent"})
    );
    assert_eq!(
        approved["answered_by"],
        json!({"name": "bob-everywhere", "role": "reviewer"})
    );
    // The long poll, which reads the outcome as it comes, says it too.
    let waited = read(&app, AGENT, &format!("/question/{question}/wait")).await;
    assert_eq!(waited["answeredBy"]["name"], "alice");

    let mut seen = Vec::new();
    while seen.len() < 2 {
        let frame = events.next().await;
        match frame.kind() {
            "question.replied" | "approval.replied" => seen.push(frame.data),
            _ => {}
        }
    }
    assert_eq!(seen[0]["properties"]["answeredBy"]["name"], "alice");
    assert_eq!(
        seen[1]["properties"]["answered_by"]["name"],
        "bob-everywhere"
    );

    let history = read(&app, ADMIN, "/session/mine/history").await;
    let deciders: Vec<&str> = history["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|message| message["content"].as_array().into_iter().flatten())
        .filter_map(|part| part["answeredBy"].as_str())
        .collect();
    assert_eq!(deciders, ["alice", "bob-everywhere"], "{history}");
}

#[tokio::test]
async fn without_tokens_everyone_is_local_and_everything_works_as_before() {
    let app = TestApp::new();
    let id = app.ask("s");
    let (status, _) = app
        .call(super::post_json(
            &format!("/question/{id}/reply"),
            &json!({"answers": [["Rust"]]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = app.call(super::get(&format!("/question/{id}"))).await;
    assert_eq!(body["askedBy"], json!({"name": "local", "role": "admin"}));
    assert_eq!(
        body["answeredBy"],
        json!({"name": "local", "role": "admin"})
    );
}

/// An approval of `delete_rows` in `session` that needs `quorum` reviewers alike, asked
/// with `token`; its id.
async fn request_quorum(app: &TestApp, token: &str, session: &str, quorum: u32) -> String {
    let body = json!({
        "session_id": session,
        "action_requests": [{"name": "delete_rows", "args": {"table": "users"}}],
        "review_configs": [{"action_name": "delete_rows", "quorum": quorum}],
    });
    let (status, created) = app
        .call(request("POST", "/approval", token, Some(body)))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    created["id"].as_str().expect("an id").to_owned()
}

/// The names in the `votes` of a view or an event.
fn voter_names(body: &Value) -> Vec<&str> {
    body["votes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|vote| vote["decided_by"]["name"].as_str())
        .collect()
}

#[tokio::test]
async fn two_of_two_over_http_needs_two_reviewers_and_says_each_vote() {
    let app = app();
    let mut events = app
        .events("/event", &[("authorization", &format!("Bearer {ADMIN}"))])
        .await;
    let approval = request_quorum(&app, AGENT, "mine", 2).await;
    let reply = |token: &'static str| {
        let uri = format!("/approval/{approval}/reply");
        let app = &app;
        async move {
            app.call(request(
                "POST",
                &uri,
                token,
                Some(json!({"decisions": [{"type": "approve"}]})),
            ))
            .await
        }
    };
    assert_eq!(reply(AGENT).await.0, StatusCode::FORBIDDEN);
    assert_eq!(reply(ALICE).await.0, StatusCode::OK);
    let half = read(&app, ADMIN, &format!("/approval/{approval}")).await;
    assert_eq!(half["status"], "pending", "{half}");
    assert_eq!(voter_names(&half), ["alice"]);
    let (status, again) = reply(ALICE).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{again}");
    assert!(
        again["message"].as_str().unwrap().contains("already"),
        "{again}"
    );
    assert_eq!(reply(BOB).await.0, StatusCode::OK);
    let done = read(&app, AGENT, &format!("/approval/{approval}")).await;
    assert_eq!(done["status"], "replied", "{done}");
    assert_eq!(done["decisions"], json!([{"type": "approve"}]));
    assert_eq!(done["answered_by"]["name"], "bob-everywhere");
    assert_eq!(voter_names(&done), ["alice", "bob-everywhere"]);

    let mut seen = Vec::new();
    while !seen.iter().any(|(kind, _)| kind == "approval.replied") {
        let frame = events.next().await;
        if frame.kind().starts_with("approval.") {
            seen.push((frame.kind().to_owned(), frame.data["properties"].clone()));
        }
    }
    let kinds: Vec<&str> = seen.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "approval.asked",
            "approval.decided",
            "approval.decided",
            "approval.replied"
        ]
    );
    assert_eq!(
        (
            &seen[1].1["decided_by"]["name"],
            &seen[1].1["agreeing"],
            &seen[1].1["quorum"]
        ),
        (&json!("alice"), &json!(1), &json!(2))
    );
    assert_eq!(voter_names(&seen[3].1), ["alice", "bob-everywhere"]);

    // A session resume is a vote too: every way in counts the same.
    let resumed = request_quorum(&app, AGENT, "mine", 2).await;
    let (status, body) = post(
        &app,
        ALICE,
        "/session/mine/resume",
        json!({"input": {"decisions": [{"type": "approve"}]}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after = read(&app, ADMIN, &format!("/approval/{resumed}")).await;
    assert_eq!(
        (after["status"].as_str(), voter_names(&after)),
        (Some("pending"), vec!["alice"])
    );

    // A quorum its named reviewers could never reach is refused when asked.
    let body = json!({
        "session_id": "mine",
        "action_requests": [{"name": "delete_rows", "args": {}}],
        "review_configs": [{"action_name": "delete_rows", "quorum": 2, "reviewers": ["alice"]}],
    });
    let (status, refused) = app
        .call(request("POST", "/approval", AGENT, Some(body)))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("quorum"),
        "{refused}"
    );
}
