//! Session interrupt state and resume (seed 002) over HTTP.

use std::time::Duration;

use askbus::question::{Action, ApprovalError, ApprovalReply, Decision, PendingApproval};
use askbus::{AskError, Timeout};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{TestApp, get, language, post_json};

/// Asks `actions` for approval in session `s1`, with no timeout.
fn approval(app: &TestApp, actions: Vec<Action>) -> PendingApproval {
    app.hub
        .approvals()
        .request("s1", actions)
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
}

/// A pending request in `s1` for [`delete_users`] that times out in 20 s.
fn expiring_approval(app: &TestApp) -> PendingApproval {
    app.hub
        .approvals()
        .request("s1", vec![delete_users()])
        .timeout(Duration::from_secs(20))
        .submit()
        .unwrap()
}

fn delete_users() -> Action {
    Action::new("delete_rows", json!({"table": "users"}))
        .with_description("Please confirm: delete 1,234 expired users")
}

#[tokio::test]
async fn an_idle_session_is_not_interrupted() {
    let app = TestApp::new();
    let (status, body) = app.call(get("/session/nobody/interrupt")).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"interrupted": false}))
    );
}

#[tokio::test]
async fn the_oldest_pending_request_is_the_interrupt_and_resume_answers_it() {
    let app = TestApp::new();
    let approval = approval(&app, vec![delete_users()]);
    let question = app
        .questions
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();

    let (status, body) = app.call(get("/session/s1/interrupt")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["interrupted"], true);
    let state = &body["state"];
    assert_eq!(state["session_id"], "s1");
    // The agent's description, then the call itself: a client that shows the reason alone
    // still shows what a `confirm: true` runs.
    assert_eq!(
        state["reason"],
        "Please confirm: delete 1,234 expired users\ndelete_rows {\"table\":\"users\"}"
    );
    assert_eq!(state["fields"][0]["type"], "confirm");
    assert_eq!(state["checkpoint_id"], approval.id().to_string());
    assert!(state["timestamp"].as_u64().is_some());

    // The seed's own body, agent_id and session_id beside the input, names no request:
    // with two pending, which one it answers is not for the server to guess (the one the
    // human saw may end before the answer lands, and the answer would decide the other).
    let resume =
        json!({"agent_id": "approval-agent", "session_id": "s1", "input": {"confirm": true}});
    let (status, error) = app.call(post_json("/session/s1/resume", &resume)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|message| message.contains("more than one request pending")
                && message.contains("checkpoint_id")),
        "{error}"
    );
    // Named by the interrupt state's checkpoint, it answers that one.
    let mut resume = resume;
    resume["checkpoint_id"] = state["checkpoint_id"].clone();
    let (status, body) = app.call(post_json("/session/s1/resume", &resume)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["checkpoint_id"], approval.id().to_string());
    assert_eq!(approval.await.unwrap().decisions, [Decision::Approve]);

    // Now the question is the oldest pending request, and the only one: the seed's body
    // without a checkpoint answers it.
    let (_, body) = app.call(get("/session/s1/interrupt")).await;
    assert_eq!(body["state"]["checkpoint_id"], question.id().to_string());
    assert_eq!(body["state"]["fields"][0]["type"], "select");
    let answers = json!({"input": {"answers": [["Rust"]]}});
    let (status, _) = app.call(post_json("/session/s1/resume", &answers)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(question.await, Ok(vec![vec!["Rust".to_owned()]]));

    // Consumed once: nothing is pending any more.
    let (status, error) = app.call(post_json("/session/s1/resume", &answers)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error["code"], "already_resolved");
    let (_, body) = app.call(get("/session/s1/interrupt")).await;
    assert_eq!(body, json!({"interrupted": false}));
}

#[tokio::test]
async fn resume_by_checkpoint_rejects_or_decides_that_request() {
    let app = TestApp::new();
    let older = approval(&app, vec![delete_users()]);
    let newer = approval(&app, vec![delete_users(), delete_users()]);
    let decisions = json!({
        "checkpoint_id": newer.id().to_string(),
        "input": {"decisions": [{"type": "reject", "message": "too much"}], "user_edit_content": "later"},
    });
    let (status, _) = app.call(post_json("/session/s1/resume", &decisions)).await;
    assert_eq!(status, StatusCode::OK);
    let reply: ApprovalReply = newer.await.unwrap();
    assert_eq!(reply.decisions.len(), 2, "one decision fills every action");
    assert_eq!(reply.user_edit_content.as_deref(), Some("later"));

    // The same checkpoint again: consumed.
    let (status, _) = app.call(post_json("/session/s1/resume", &decisions)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let refuse = json!({"checkpoint_id": older.id().to_string(), "input": {"confirm": false}});
    let (status, _) = app.call(post_json("/session/s1/resume", &refuse)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!older.await.unwrap().decisions[0].runs());
}

/// The race a checkpoint-less resume must not lose: an agent asks a decoy, then the call
/// that matters; the human looks at the interrupt (the decoy), the decoy expires, and the
/// human's `confirm: true` lands. With the pending limits in force (as the server runs),
/// the session is remembered to have had two pending, so the resume must name its
/// request; once the session was idle, a lone interrupt resumes as the seed's does.
#[tokio::test(start_paused = true)]
async fn a_resume_never_lands_on_a_request_the_human_did_not_see() {
    let hub = askbus::question::RequestHub::new(askbus::bus::Bus::new())
        .with_pending_limits(askbus::question::PendingLimits::default());
    let app = TestApp::with_hub(hub, askbus_http::HttpConfig::default());
    let decoy = app
        .questions
        .ask("s1", vec![language()])
        .timeout(Duration::from_secs(20))
        .submit()
        .unwrap();
    let real = approval(&app, vec![delete_users()]);
    let (_, seen) = app.call(get("/session/s1/interrupt")).await;
    assert_eq!(seen["state"]["checkpoint_id"], decoy.id().to_string());
    assert_eq!(decoy.await, Err(AskError::TimedOut));

    refused_unnamed_then_approved_named(&app, real, "checkpoint_id").await;

    // The session was idle: its next lone interrupt resumes without a checkpoint.
    let confirm = json!({"input": {"confirm": true}});
    let next = approval(&app, vec![delete_users()]);
    let (status, body) = app.call(post_json("/session/s1/resume", &confirm)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(next.await.unwrap().decisions, [Decision::Approve]);
}

/// `{"input": {"confirm": true}}` on session `s1`, which must be refused with a message
/// that says `why` and leave `pending` undecided; then the same naming `pending`, which
/// approves it.
async fn refused_unnamed_then_approved_named(app: &TestApp, pending: PendingApproval, why: &str) {
    let confirm = json!({"input": {"confirm": true}});
    let (status, error) = app.call(post_json("/session/s1/resume", &confirm)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("checkpoint_id") && message.contains(why),
        "{error}"
    );
    let (_, now) = app.call(get(&format!("/approval/{}", pending.id()))).await;
    assert_eq!(now["status"], "pending", "nothing was decided: {now}");
    let mut named = confirm;
    named["checkpoint_id"] = json!(pending.id().to_string());
    let (status, _) = app.call(post_json("/session/s1/resume", &named)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(pending.await.unwrap().decisions, [Decision::Approve]);
}

/// The same swap one request after the other: the interrupt a human looked at ends
/// without them (it expires, or its agent cancels it) and the agent asks another in its
/// place. With the session idle between, no count remembers two pending; the last of the
/// session's remembered requests to end tells it. Without pending limits too.
#[tokio::test(start_paused = true)]
async fn a_resume_never_lands_on_a_request_asked_after_one_ended_unseen() {
    let app = TestApp::new();
    let confirm = json!({"input": {"confirm": true}});
    let expiring = expiring_approval(&app);
    let (_, seen) = app.call(get("/session/s1/interrupt")).await;
    assert_eq!(seen["state"]["checkpoint_id"], expiring.id().to_string());
    assert!(expiring.await.is_err(), "it expired");
    let swapped = approval(&app, vec![delete_users()]);
    refused_unnamed_then_approved_named(&app, swapped, "timed_out").await;

    // A human decided the one before: the next resumes unnamed, as the seed's client does.
    let next = approval(&app, vec![delete_users()]);
    let (status, body) = app.call(post_json("/session/s1/resume", &confirm)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(next.await.unwrap().decisions, [Decision::Approve]);

    // Its agent cancels it (drops its future), then asks another: named again.
    drop(approval(&app, vec![delete_users()]));
    let after_cancel = approval(&app, vec![delete_users()]);
    refused_unnamed_then_approved_named(&app, after_cancel, "cancelled").await;

    // Two at once (no pending limits here): the later one answered by name, then the
    // earlier times out. What ended last counts, not what was asked last: named again.
    let earlier = expiring_approval(&app);
    let later = approval(&app, vec![delete_users()]);
    let named = json!({"input": {"confirm": true}, "checkpoint_id": later.id().to_string()});
    let (status, body) = app.call(post_json("/session/s1/resume", &named)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(earlier.await.is_err(), "it expired");
    let third = approval(&app, vec![delete_users()]);
    refused_unnamed_then_approved_named(&app, third, "timed_out").await;
}

#[tokio::test(start_paused = true)]
async fn an_expired_interrupt_is_409() {
    let app = TestApp::new();
    let question = app
        .questions
        .ask("s1", vec![language()])
        .timeout(Duration::from_secs(60))
        .submit()
        .unwrap();
    assert_eq!(question.await, Err(AskError::TimedOut));
    let (status, error) = app
        .call(post_json(
            "/session/s1/resume",
            &json!({"input": {"answers": [["Rust"]]}}),
        ))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("no pending request")
    );
}

#[tokio::test]
async fn bad_resumes_are_refused_with_the_right_status() {
    let app = TestApp::new();
    let approval = approval(&app, vec![delete_users()]);
    let check = |session: &'static str, body: Value, expected: StatusCode, says: &'static str| {
        let app = app.clone();
        async move {
            let (status, error) = app
                .call(post_json(&format!("/session/{session}/resume"), &body))
                .await;
            assert_eq!(status, expected, "{body}");
            let message = error["message"].as_str().unwrap();
            assert!(message.contains(says), "{message:?} says {says:?}");
        }
    };
    check("s1", json!({}), StatusCode::BAD_REQUEST, "expected `input`").await;
    check(
        "s1",
        json!({"input": {"yes": 1}}),
        StatusCode::BAD_REQUEST,
        "expected `input`",
    )
    .await;
    check(
        "s1",
        json!({"input": {"confirm": "yes"}}),
        StatusCode::UNPROCESSABLE_ENTITY,
        "true or false",
    )
    .await;
    check(
        "s1",
        json!({"session_id": "s2", "input": {"confirm": true}}),
        StatusCode::BAD_REQUEST,
        "another session",
    )
    .await;
    check(
        "s1",
        json!({"checkpoint_id": "nope", "input": {"confirm": true}}),
        StatusCode::BAD_REQUEST,
        "not a request id",
    )
    .await;
    check(
        "s1",
        json!({"input": {"answers": [["Rust"]]}}),
        StatusCode::UNPROCESSABLE_ENTITY,
        "is an approval",
    )
    .await;
    check(
        "nobody",
        json!({"input": {"confirm": true}}),
        StatusCode::NOT_FOUND,
        "has no requests",
    )
    .await;
    check(
        "s2",
        json!({"checkpoint_id": approval.id().to_string(), "input": {"confirm": true}}),
        StatusCode::NOT_FOUND,
        "no request of this session",
    )
    .await;
    assert_eq!(
        app.hub.approvals().pending_count(),
        1,
        "nothing was decided"
    );
    app.hub.cancel_session("s1");
    assert_eq!(approval.await, Err(ApprovalError::Cancelled));
}

/// Seed 002's detector over HTTP: the model's text (the seed's own, verbatim) that asks for
/// confirmation becomes an approval the session waits on, answered by resume; other text
/// changes nothing.
#[tokio::test]
async fn text_asking_for_confirmation_becomes_a_request_and_other_text_does_not() {
    let app = TestApp::new();
    let reason = "Please confirm: 即将删除 1,234 条记录,此操作不可逆。";
    let (status, found) = app
        .call(post_json(
            "/session/session-123/confirmation",
            &json!({"text": reason}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["phrase"], "please confirm");
    assert_eq!(found["interrupted"], true);
    assert_eq!(found["state"]["reason"], reason);
    assert_eq!(found["state"]["fields"][0]["name"], "confirm");
    let (_, interrupt) = app.call(get("/session/session-123/interrupt")).await;
    assert_eq!(
        interrupt["state"]["checkpoint_id"],
        found["state"]["checkpoint_id"]
    );
    let (status, _) = app
        .call(post_json(
            "/session/session-123/resume",
            &json!({"agent_id": "approval-agent", "session_id": "session-123", "input": {"confirm": true}}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);

    let (status, quiet) = app
        .call(post_json(
            "/session/quiet/confirmation",
            &json!({"text": "I am sure it went fine."}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(quiet, json!({"phrase": null, "interrupted": false}));
    let (_, interrupt) = app.call(get("/session/quiet/interrupt")).await;
    assert_eq!(interrupt["interrupted"], false);
    let (status, _) = app
        .call(post_json(
            "/session/quiet/confirmation",
            &json!({"words": "please confirm"}),
        ))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// The interrupt state's form, filled in by its own field names, resumes the session, and
/// the state names the asking agent as the seed's `agent_name`.
#[tokio::test]
async fn the_forms_own_field_names_answer_it() {
    let app = TestApp::new();
    let id = app.ask("form");
    let (_, interrupt) = app.call(get("/session/form/interrupt")).await;
    let state = &interrupt["state"];
    assert_eq!(state["agent_name"], "local");
    let field = state["fields"][0]["name"].as_str().unwrap().to_owned();
    assert_eq!(field, "answers.0");
    let label = state["fields"][0]["options"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = app
        .call(post_json(
            "/session/form/resume",
            &json!({"input": {field: label.clone()}}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, answered) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(answered["answers"], json!([[label]]));
    let id = app.ask("form");
    for bad in [
        json!({"answers.x": "A"}),
        json!({"answers.9999": "A"}),
        json!({"answers.0": 7}),
    ] {
        let (status, body) = app
            .call(post_json("/session/form/resume", &json!({"input": bad})))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
    }
    let (_, pending) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(pending["status"], "pending");
}
