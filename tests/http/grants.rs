//! OpenCode's permissions over askbus approvals: `always` makes a standing grant that
//! approves the session's later matching calls, visible, revocable and audited; companion
//! frames only for OpenCode clients' streams.

use std::sync::Arc;

use askbus::bus::Bus;
use askbus::question::{Action, ApprovalConfig, Identity, RequestHub, Role, Timeout};
use askbus_http::{AccessToken, HttpConfig};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Frames, TestApp, language, request};

const ADMIN: &str = "admin-secret-0123456789";
const ALICE: &str = "alice-secret-0123456789";
const AGENT: &str = "agent-secret-0123456789";
/// The admin's `Authorization` header, for event streams.
const BEARER: (&str, &str) = ("authorization", "Bearer admin-secret-0123456789");

/// A router over a hub recording in a memory store (for the audit log), with an admin, a
/// reviewer `alice` and an agent, and at most `max_grants` grants per session.
async fn app(max_grants: usize) -> TestApp {
    app_with(max_grants, ApprovalConfig::default().max_grants).await
}

/// [`app`] with at most `per_session` grants per session and `in_all` in all.
async fn app_with(per_session: usize, in_all: usize) -> TestApp {
    let hub = RequestHub::builder()
        .bus(Bus::new())
        .approvals(ApprovalConfig {
            max_grants_per_session: per_session,
            max_grants: in_all,
            ..ApprovalConfig::default()
        })
        .store(Arc::new(askbus_store::MemoryStore::new()))
        .build()
        .await
        .expect("a memory store reads");
    TestApp::with_hub(
        hub,
        HttpConfig {
            tokens: vec![
                AccessToken::all_sessions(ADMIN),
                AccessToken::new(ALICE, Identity::new("alice", Role::Reviewer)),
                AccessToken::new(AGENT, Identity::new("agent-1", Role::Agent)),
            ],
            ..HttpConfig::default()
        },
    )
}

/// The agent asks to run `tool` with `command` in `session`; the request as created.
async fn ask(app: &TestApp, session: &str, tool: &str, command: &str) -> Value {
    let body = json!({
        "session_id": session,
        "action_requests": [{"name": tool, "args": {"command": command}}],
        "timeout": null,
    });
    let (status, created) = app
        .call(request("POST", "/approval", AGENT, Some(body)))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    created
}

/// `GET uri` as the admin: the JSON answer.
async fn read(app: &TestApp, uri: &str) -> Value {
    let (status, body) = app.call(request("GET", uri, ADMIN, None)).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    body
}

/// Where approval `created` stands, as `GET /approval/{id}` says.
async fn status(app: &TestApp, created: &Value) -> Value {
    read(
        app,
        &format!("/approval/{}", created["id"].as_str().unwrap()),
    )
    .await
}

/// `POST /permission/{id}/reply` with `token` and `reply`.
async fn answer(app: &TestApp, token: &str, created: &Value, reply: &str) -> (StatusCode, Value) {
    let uri = format!("/permission/{}/reply", created["id"].as_str().unwrap());
    app.call(request("POST", &uri, token, Some(json!({"reply": reply}))))
        .await
}

/// The next frame of `frames` that is not a heartbeat.
async fn next_event(frames: &mut Frames) -> Value {
    loop {
        let frame = frames.next().await;
        if frame.kind() != "server.heartbeat" {
            return frame.data;
        }
    }
}

#[tokio::test]
async fn always_grants_the_sessions_later_matching_calls_until_revoked() {
    let app = app(32).await;
    let mut events = app.events("/event", &[BEARER]).await;
    assert_eq!(next_event(&mut events).await["type"], "server.connected");
    let status_call = ask(&app, "ses_g", "bash", "git status").await;
    let alice = json!({"name": "alice", "role": "reviewer"});

    // The agent may not approve, `always` or not: no grant comes of it.
    let (refused, body) = answer(&app, AGENT, &status_call, "always").await;
    assert_eq!(refused, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["_tag"], "PermissionForbiddenError");
    assert_eq!(read(&app, "/session/ses_g/grant").await, json!([]));
    assert_eq!(status(&app, &status_call).await["status"], "pending");

    // Alice's `always`: approved, and the grant stands, visible.
    let (approved, body) = answer(&app, ALICE, &status_call, "always").await;
    assert_eq!(approved, StatusCode::OK, "{body}");
    let decided = status(&app, &status_call).await;
    assert_eq!(decided["status"], "replied");
    assert_eq!(decided["decisions"], json!([{"type": "approve"}]));
    assert_eq!(decided["answered_by"], alice);
    let grants = read(&app, "/session/ses_g/grant").await;
    let grant = &grants[0];
    assert_eq!(grants.as_array().map(Vec::len), Some(1), "{grants}");
    assert_eq!(grant["id"], status_call["id"]);
    assert_eq!(grant["session_id"], "ses_g");
    assert_eq!(grant["tool"], "bash");
    assert_eq!(grant["patterns"], json!(["git status"]));
    assert_eq!(grant["granted_by"], alice);
    assert_eq!(&decided["granted"], grant);

    // The same call again: approved at once by the grant, which the reply names.
    let again = ask(&app, "ses_g", "bash", "git status").await;
    let auto = status(&app, &again).await;
    assert_eq!(auto["status"], "replied", "{auto}");
    assert_eq!(auto["decisions"], json!([{"type": "approve"}]));
    assert_eq!(auto["auto_approved_by"], json!([grant]));
    assert!(auto.get("granted").is_none(), "{auto}");

    // Another command, another tool, another session: each waits for a human.
    for (session, tool, command) in [
        ("ses_g", "bash", "git push --force"),
        ("ses_g", "shell", "git status"),
        ("ses_other", "bash", "git status"),
    ] {
        let other = ask(&app, session, tool, command).await;
        assert_eq!(
            status(&app, &other).await["status"],
            "pending",
            "{session} {tool} {command}"
        );
    }

    // The event stream shows the grant, and the auto-approval as what it is.
    let mut seen = Vec::new();
    while seen.len() < 8 {
        seen.push(next_event(&mut events).await);
    }
    let kinds: Vec<&str> = seen.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "approval.asked",
            "approval.replied",
            "approval.granted",
            "approval.asked",
            "approval.replied",
            "approval.asked",
            "approval.asked",
            "approval.asked",
        ],
        "a plain stream carries askbus's events only"
    );
    assert_eq!(seen[2]["properties"], *grant);
    assert_eq!(seen[4]["properties"]["request_id"], again["id"]);
    assert_eq!(seen[4]["properties"]["auto_approved_by"], json!([grant]));
    assert_eq!(seen[4]["properties"]["answered_by"], alice);

    // The audit log holds both decisions: the grant made, and the grant used.
    let audit = read(&app, "/audit").await;
    let drafts: Vec<Value> = audit
        .as_array()
        .expect("audit lines")
        .iter()
        .map(|line| serde_json::from_str(line["draft"].as_str().unwrap()).unwrap())
        .collect();
    let entry_of = |created: &Value| {
        drafts
            .iter()
            .find(|draft| draft["request_id"] == created["id"])
            .unwrap_or_else(|| panic!("no audit entry for {created}: {audit}"))
    };
    assert_eq!(entry_of(&status_call)["decision"]["granted"], *grant);
    assert_eq!(entry_of(&status_call)["decided_by"], alice);
    assert_eq!(
        entry_of(&again)["decision"]["auto_approved_by"],
        json!([grant])
    );

    // The session's history names alice for her decision, and nobody for the grant's.
    let history = read(&app, "/session/ses_g/history").await;
    let deciders: Vec<&str> = history["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|message| message["content"].as_array().into_iter().flatten())
        .filter_map(|part| part["answeredBy"].as_str())
        .collect();
    assert_eq!(deciders, ["alice"], "{history}");

    // Revoked: gone from the list, published, and the call is asked again.
    let uri = format!("/session/ses_g/grant/{}", grant["id"].as_str().unwrap());
    let (revoked, body) = app.call(request("DELETE", &uri, ALICE, None)).await;
    assert_eq!(revoked, StatusCode::OK, "{body}");
    assert_eq!(body, *grant);
    assert_eq!(read(&app, "/session/ses_g/grant").await, json!([]));
    let revoked_event = next_event(&mut events).await;
    assert_eq!(revoked_event["type"], "approval.grant_revoked");
    assert_eq!(revoked_event["properties"]["revoked_by"], alice);
    let after = ask(&app, "ses_g", "bash", "git status").await;
    assert_eq!(status(&app, &after).await["status"], "pending");
    let (gone, body) = app.call(request("DELETE", &uri, ALICE, None)).await;
    assert_eq!(gone, StatusCode::NOT_FOUND, "{body}");

    // The audit log receipts the revocation after the approval that made the grant: who
    // revoked it, whose calls it covered, and the grant as listed (hashed as it is kept).
    let audit = read(&app, "/audit").await;
    let drafts: Vec<Value> = audit
        .as_array()
        .expect("audit lines")
        .iter()
        .map(|line| serde_json::from_str(line["draft"].as_str().unwrap()).unwrap())
        .collect();
    let revocation = drafts.last().expect("a receipt");
    assert_eq!(revocation["outcome"], "grant_revoked", "{drafts:?}");
    assert_eq!(revocation["request_id"], grant["id"]);
    assert_eq!(revocation["session_id"], "ses_g");
    assert_eq!(revocation["decided_by"], alice);
    assert_eq!(revocation["asked_by"]["name"], "agent-1");
    assert_eq!(revocation["decision"], *grant);
    let granted = drafts
        .iter()
        .position(|draft| draft["request_id"] == grant["id"])
        .expect("the approval's own receipt");
    assert!(granted < drafts.len() - 1, "{drafts:?}");
}

#[tokio::test]
async fn always_also_approves_what_the_session_has_pending_that_it_covers() {
    // As OpenCode's `always`: the same call asked twice, both pending; one answer does both.
    let app = app(32).await;
    let first = ask(&app, "ses_p", "bash", "make test").await;
    let second = ask(&app, "ses_p", "bash", "make test").await;
    let other = ask(&app, "ses_p", "bash", "make deploy").await;
    assert_eq!(
        answer(&app, ALICE, &first, "always").await.0,
        StatusCode::OK
    );
    let second = status(&app, &second).await;
    assert_eq!(second["status"], "replied", "{second}");
    assert_eq!(second["auto_approved_by"][0]["id"], first["id"]);
    assert_eq!(status(&app, &other).await["status"], "pending");
}

#[tokio::test]
async fn grants_are_bounded_per_session_and_cover_one_tool() {
    let app = app(1).await;
    let first = ask(&app, "ses_b", "bash", "ls").await;
    assert_eq!(
        answer(&app, ALICE, &first, "always").await.0,
        StatusCode::OK
    );

    // The session holds its one grant: a second `always` is refused, nothing changes.
    let second = ask(&app, "ses_b", "bash", "pwd").await;
    let (refused, body) = answer(&app, ALICE, &second, "always").await;
    assert_eq!(refused, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("holds 1 of the 1 grants"),
        "{body}"
    );
    assert_eq!(status(&app, &second).await["status"], "pending");
    // `once` still works.
    assert_eq!(answer(&app, ALICE, &second, "once").await.0, StatusCode::OK);

    // A request calling two tools cannot be granted: a grant names one.
    let body = json!({
        "session_id": "ses_two",
        "action_requests": [
            {"name": "bash", "args": {"command": "make"}},
            {"name": "write", "args": {"path": "out.txt"}},
        ],
        "timeout": null,
    });
    let (_, two) = app
        .call(request("POST", "/approval", AGENT, Some(body)))
        .await;
    let (refused, body) = answer(&app, ALICE, &two, "always").await;
    assert_eq!(refused, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(read(&app, "/session/ses_two/grant").await, json!([]));
}

/// A grant keeps the arguments it approved, and sessions come and go: the server's grants
/// in all are bounded too, and a revoked one makes room.
#[tokio::test]
async fn grants_are_bounded_in_all_sessions_together() {
    let app = app_with(32, 2).await;
    for session in ["ses_1", "ses_2"] {
        let asked = ask(&app, session, "bash", "ls").await;
        assert_eq!(
            answer(&app, ALICE, &asked, "always").await.0,
            StatusCode::OK
        );
    }
    let third = ask(&app, "ses_3", "bash", "ls").await;
    let (refused, body) = answer(&app, ALICE, &third, "always").await;
    assert_eq!(refused, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"].as_str().is_some_and(
            |message| message.contains("holds 2 of the 2 grants it may, in all sessions")
        ),
        "{body}"
    );
    assert_eq!(status(&app, &third).await["status"], "pending");

    let granted = read(&app, "/session/ses_1/grant").await;
    let uri = format!(
        "/session/ses_1/grant/{}",
        granted[0]["id"].as_str().unwrap()
    );
    let (revoked, body) = app.call(request("DELETE", &uri, ALICE, None)).await;
    assert_eq!(revoked, StatusCode::OK, "{body}");
    assert_eq!(
        answer(&app, ALICE, &third, "always").await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_grant_applies_to_requests_made_in_process_too() {
    // One place applies grants: the service, whatever made the request.
    let app = app(32).await;
    let deploy = || vec![Action::new("deploy", json!({"command": "staging"}))];
    let submit = || {
        app.hub
            .approvals()
            .request("ses_lib", deploy())
            .timeout(Timeout::Never)
            .submit()
            .expect("a valid request")
    };
    let first = submit();
    let created = json!({"id": first.id().to_string()});
    assert_eq!(
        answer(&app, ALICE, &created, "always").await.0,
        StatusCode::OK
    );
    drop(first.await.expect("approved by alice"));
    let reply = tokio::time::timeout(std::time::Duration::from_secs(10), submit())
        .await
        .expect("answered at once")
        .expect("approved by the grant");
    assert_eq!(reply.auto_approved_by.len(), 1);
    assert_eq!(reply.auto_approved_by[0].id.to_string(), created["id"]);
}

#[tokio::test]
async fn only_opencode_streams_carry_companion_frames() {
    let app = app(32).await;
    let mut plain = app.events("/event", &[BEARER]).await;
    let mut opencode = app.events("/event?directory=/srv/app", &[BEARER]).await;
    let mut header = app
        .events("/event", &[BEARER, ("x-opencode-directory", "/srv/app")])
        .await;
    for frames in [&mut plain, &mut opencode, &mut header] {
        assert_eq!(next_event(frames).await["type"], "server.connected");
    }
    let asked = app
        .questions
        .ask("ses_c", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .expect("valid");
    let question_id = asked.id().to_string();
    drop(asked);
    let approval = ask(&app, "ses_c", "bash", "ls").await;
    app.hub.approvals().cancel_session("ses_c");

    let kinds = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .map(|event| event["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut plain_events = Vec::new();
    while plain_events.len() < 4 {
        plain_events.push(next_event(&mut plain).await);
    }
    assert_eq!(
        kinds(&plain_events),
        [
            "question.asked",
            "question.cancelled",
            "approval.asked",
            "approval.cancelled"
        ]
    );
    for frames in [&mut opencode, &mut header] {
        let mut events = Vec::new();
        while events.len() < 7 {
            events.push(next_event(frames).await);
        }
        assert_eq!(
            kinds(&events),
            [
                "question.asked",
                "question.cancelled",
                "question.rejected",
                "approval.asked",
                "permission.asked",
                "approval.cancelled",
                "permission.replied",
            ]
        );
        // A companion carries its event's id, and names how the request really ended.
        assert_eq!(events[2]["id"], events[1]["id"]);
        assert_eq!(
            events[2]["properties"],
            json!({"sessionID": "ses_c", "requestID": question_id, "endedAs": "cancelled"})
        );
        assert_eq!(events[4]["id"], events[3]["id"]);
        assert_eq!(events[4]["properties"]["id"], approval["id"]);
        assert_eq!(events[4]["properties"]["permission"], "bash");
        assert_eq!(events[4]["properties"]["patterns"], json!(["ls"]));
        assert_eq!(
            events[6]["properties"],
            json!({"sessionID": "ses_c", "requestID": approval["id"], "reply": "reject"})
        );
    }
}

#[tokio::test]
async fn a_grant_reads_nothing_in_the_agents_arguments_as_a_pattern() {
    let app = app(32).await;
    let listed = ask(&app, "ses_star", "bash", "ls *").await;
    let (approved, body) = answer(&app, ALICE, &listed, "always").await;
    assert_eq!(approved, StatusCode::OK, "{body}");

    // The very call again: approved by the grant.
    let again = ask(&app, "ses_star", "bash", "ls *").await;
    assert_eq!(status(&app, &again).await["status"], "replied");
    // What the `*` would cover as a wildcard: asked of a human.
    for command in ["ls *; rm -rf ~", "ls -la", "ls"] {
        let other = ask(&app, "ses_star", "bash", command).await;
        assert_eq!(status(&app, &other).await["status"], "pending", "{command}");
    }
}

#[tokio::test]
async fn a_grant_covers_its_askers_calls_under_one_granter() {
    let app = app(32).await;
    let status_call = ask(&app, "ses_who", "bash", "git status").await;
    let log_call = ask(&app, "ses_who", "bash", "git log").await;
    assert_eq!(
        answer(&app, ALICE, &status_call, "always").await.0,
        StatusCode::OK
    );
    assert_eq!(
        answer(&app, ADMIN, &log_call, "always").await.0,
        StatusCode::OK
    );

    // Another asker repeating the granted call is asked again.
    let body = json!({
        "session_id": "ses_who",
        "action_requests": [{"name": "bash", "args": {"command": "git status"}}],
        "timeout": null,
    });
    let (created, by_admin) = app
        .call(request("POST", "/approval", ADMIN, Some(body)))
        .await;
    assert_eq!(created, StatusCode::OK, "{by_admin}");
    assert_eq!(status(&app, &by_admin).await["status"], "pending");

    // Both calls at once: covered, but by two people's grants, so asked again.
    let body = json!({
        "session_id": "ses_who",
        "action_requests": [
            {"name": "bash", "args": {"command": "git status"}},
            {"name": "bash", "args": {"command": "git log"}},
        ],
        "timeout": null,
    });
    let (created, both) = app
        .call(request("POST", "/approval", AGENT, Some(body)))
        .await;
    assert_eq!(created, StatusCode::OK, "{both}");
    assert_eq!(status(&app, &both).await["status"], "pending");
    // Each alone still is what its granter approved.
    let again = ask(&app, "ses_who", "bash", "git log").await;
    assert_eq!(status(&app, &again).await["status"], "replied");
}

#[tokio::test]
async fn always_is_refused_over_a_store_other_servers_share() {
    let hub = RequestHub::builder()
        .bus(Bus::new())
        .store(Arc::new(askbus_store::MemoryStore::new()))
        .shared()
        .build()
        .await
        .expect("a memory store shares");
    let pending = hub
        .approvals()
        .request(
            "ses_shared",
            vec![Action::new("bash", json!({"command": "ls"}))],
        )
        .timeout(Timeout::Never)
        .submit()
        .expect("asked");
    let refused = hub
        .approvals()
        .reply_always(pending.id())
        .expect_err("no grant over a shared store");
    assert!(refused.to_string().contains("share the store"), "{refused}");
    assert!(hub.approvals().grants("ses_shared").is_empty());
    assert_eq!(hub.approvals().pending_count(), 1);
}

#[tokio::test]
async fn a_permission_shows_every_tool_and_every_argument_it_approves() {
    let app = app(32).await;
    let body = json!({
        "session_id": "ses_show",
        "action_requests": [
            {"name": "bash", "args": {"command": "ls"}},
            {"name": "drop_table", "args": {"name": "users"}},
            {"name": "bash", "args": {"command": "make", "env": {"LD_PRELOAD": "/tmp/x.so"}}},
        ],
        "timeout": null,
    });
    let (created, _) = app
        .call(request("POST", "/approval", AGENT, Some(body)))
        .await;
    assert_eq!(created, StatusCode::OK);
    let listed = read(&app, "/permission").await;
    assert_eq!(listed[0]["permission"], "bash, drop_table");
    assert_eq!(
        listed[0]["patterns"],
        json!([
            "ls",
            r#"{"name":"users"}"#,
            r#"{"command":"make","env":{"LD_PRELOAD":"/tmp/x.so"}}"#
        ])
    );
}
