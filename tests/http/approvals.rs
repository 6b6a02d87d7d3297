//! The approval routes: list, get (by id or `approval_key`), reply with each decision,
//! server mode (create + long poll), and their errors.

use askbus::Timeout;
use askbus::question::{
    Action, ApprovalError, Decision, DecisionType, Identity, ReviewConfig, Role,
};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{TestApp, get, post_json};

/// A pending request in `session` for `delete_rows`, which allows approve and reject only,
/// and `send_email`, which allows everything.
fn submit(app: &TestApp, session: &str) -> askbus::question::PendingApproval {
    let actions = vec![
        Action::new("delete_rows", json!({"table": "users"})).with_description("Delete users"),
        Action::new("send_email", json!({"to": "ops@example.com"})),
    ];
    let reviews = vec![ReviewConfig::new(
        "delete_rows",
        [DecisionType::Approve, DecisionType::Reject],
    )];
    app.hub
        .approvals()
        .request(session, actions)
        .review(reviews)
        .timeout(Timeout::Never)
        .submit()
        .expect("a valid request")
}

#[tokio::test]
async fn listed_read_by_id_or_key_and_decided() {
    let app = TestApp::new();
    let pending = submit(&app, "s1");
    let id = pending.id().to_string();
    submit(&app, "s2").detach();

    let (status, listed) = app.call(get("/approval?session_id=s1")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["approval_key"], "s1_1");
    assert_eq!(listed[0]["action_requests"][0]["name"], "delete_rows");
    assert_eq!(
        listed[0]["review_configs"][0]["allowed_decisions"],
        json!(["approve", "reject"])
    );
    let (_, all) = app.call(get("/approval?sessionID=s2")).await;
    assert_eq!(
        all[0]["approval_key"], "s2_1",
        "OpenCode's spelling filters too"
    );

    for address in [id.as_str(), "s1_1"] {
        let (status, got) = app.call(get(&format!("/approval/{address}"))).await;
        assert_eq!(status, StatusCode::OK, "{address}");
        assert_eq!(got["id"], id.as_str());
        assert_eq!(got["status"], "pending");
    }

    let reply = json!({
        "decisions": [
            {"type": "reject", "message": "not the users table"},
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "me@example.com"}}},
        ],
        "user_edit_content": "use staging",
    });
    let (status, body) = app.call(post_json("/approval/s1_1/reply", &reply)).await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)));
    let decided = pending.await.expect("decided");
    assert!(!decided.decisions[0].runs());
    assert!(
        matches!(&decided.decisions[1], Decision::Edit { edited_action } if edited_action.args["to"] == "me@example.com")
    );
    assert_eq!(decided.user_edit_content.as_deref(), Some("use staging"));

    let (_, got) = app.call(get(&format!("/approval/{id}"))).await;
    assert_eq!(got["status"], "replied");
    assert_eq!(got["decisions"], reply["decisions"]);
    assert_eq!(got["user_edit_content"], "use staging");
    let (_, listed) = app.call(get("/approval?session_id=s1")).await;
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn one_decision_stands_for_every_action() {
    let app = TestApp::new();
    let pending = submit(&app, "s1");
    let uri = format!("/approval/{}/reply", pending.id());
    let (status, _) = app
        .call(post_json(
            &uri,
            &json!({"decisions": [{"type": "approve"}]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        pending.await.expect("decided").decisions,
        [Decision::Approve, Decision::Approve]
    );
}

#[tokio::test]
async fn decisions_that_do_not_fit_are_422_naming_the_action() {
    let app = TestApp::new();
    let pending = submit(&app, "s1");
    let uri = format!("/approval/{}/reply", pending.id());
    let check = |body: Value, expected: &'static str| {
        let (app, uri) = (app.clone(), uri.clone());
        async move {
            let (status, error) = app.call(post_json(&uri, &body)).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            assert_eq!(error["code"], "invalid");
            let message = error["message"].as_str().unwrap();
            assert!(message.contains(expected), "{message:?} names {expected:?}");
        }
    };
    let edit = json!({"type": "edit", "edited_action": {"name": "delete_rows", "args": {}}});
    check(json!({"decisions": [edit]}), "delete_rows").await;
    check(
        json!({"decisions": [{"type": "approve"}, {"type": "approve"}, {"type": "approve"}]}),
        "3 decisions for 2 actions",
    )
    .await;
    check(json!({"decisions": []}), "got none").await;
    check(json!({"decisions": [{"type": "maybe"}]}), "unexpected JSON").await;
    assert_eq!(
        app.hub.approvals().pending_count(),
        1,
        "nothing was decided"
    );
}

#[tokio::test]
async fn unknown_and_resolved_requests_are_404_and_409() {
    let app = TestApp::new();
    let approve = json!({"decisions": [{"type": "approve"}]});
    for unknown in ["apr_01JZ6Q3V8R5M2K7D4T9WXYZABC", "nobody_7", "not-an-id"] {
        let (status, error) = app.call(get(&format!("/approval/{unknown}"))).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{unknown}");
        assert_eq!(error["code"], "not_found");
        let (status, _) = app
            .call(post_json(&format!("/approval/{unknown}/reply"), &approve))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{unknown}");
    }
    let pending = submit(&app, "s1");
    let uri = format!("/approval/{}/reply", pending.id());
    assert_eq!(app.call(post_json(&uri, &approve)).await.0, StatusCode::OK);
    let (status, error) = app.call(post_json(&uri, &approve)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error["code"], "already_resolved");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("already replied")
    );
}

#[tokio::test(start_paused = true)]
async fn server_mode_creates_and_long_polls_until_expiry() {
    let app = TestApp::new();
    let create = json!({
        "session_id": "remote-agent",
        "action_requests": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}],
        "review_configs": [{"action_name": "execute_trade", "allowed_decisions": ["approve", "reject"]}],
        "timeout": 60,
    });
    let (status, created) = app.call(post_json("/approval", &create)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(created["approval_key"], "remote-agent_1");
    let id = created["id"].as_str().unwrap().to_owned();

    // A wait shorter than the timeout answers `pending`; a longer one sees the expiry.
    let (_, waited) = app
        .call(get(&format!("/approval/{id}/wait?timeout=5")))
        .await;
    assert_eq!(waited["status"], "pending");
    let (_, waited) = app
        .call(get("/approval/remote-agent_1/wait?timeout=100"))
        .await;
    assert_eq!(waited["status"], "timed_out");
    assert_eq!(
        waited["decisions"],
        json!([{"type": "reject"}]),
        "on expiry every action is rejected"
    );
    let approve = json!({"decisions": [{"type": "approve"}]});
    let (status, _) = app
        .call(post_json(&format!("/approval/{id}/reply"), &approve))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test(start_paused = true)]
async fn a_long_poll_returns_the_decision_when_it_comes() {
    let app = TestApp::new();
    let id = submit(&app, "s1").detach().id;
    let waiter = {
        let app = app.clone();
        tokio::spawn(async move {
            app.call(get(&format!("/approval/{id}/wait?timeout=30")))
                .await
        })
    };
    // On this one-thread runtime, a few yields park the waiter on the request before the
    // decision arrives.
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    let reply = json!({"decisions": [{"type": "reject", "message": "no"}]});
    let (status, _) = app
        .call(post_json(&format!("/approval/{id}/reply"), &reply))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, waited) = waiter.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(waited["status"], "replied");
    assert_eq!(waited["decisions"][0]["message"], "no");
}

#[tokio::test]
async fn requests_that_cannot_be_made_are_422() {
    let app = TestApp::new();
    for (body, expected) in [
        (
            json!({"session_id": "s", "action_requests": []}),
            "at least one action",
        ),
        (
            json!({"session_id": "s", "action_requests": [{"name": "a", "args": {}}],
                   "review_configs": [{"action_name": "b"}]}),
            "no action of this request",
        ),
        (
            json!({"session_id": "s", "action_requests": [{"name": "a", "args": {}}, {"name": "deploy", "args": {}}],
                   "review_configs": [{"action_name": "deploy", "allowed_decisions": []}]}),
            "action 2 (\"deploy\"): its review config allows no decision",
        ),
        (json!({"session_id": "s"}), "action_requests"),
    ] {
        let (status, error) = app.call(post_json("/approval", &body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error["code"], "invalid", "{body}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(expected), "{message:?} names {expected:?}");
    }
    assert_eq!(
        app.hub.approvals().pending_count(),
        0,
        "nothing was created"
    );
}

#[tokio::test]
async fn cancelling_the_session_cancels_its_approvals_too() {
    let app = TestApp::new();
    let approval = submit(&app, "s1");
    app.ask("s1");
    let (status, body) = app.call(post_json("/session/s1/cancel", &json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["cancelled"], 2);
    assert_eq!(approval.await, Err(ApprovalError::Cancelled));
}

#[tokio::test]
async fn a_reused_tool_use_id_joins_only_a_request_of_the_same_calls() {
    let app = TestApp::new();
    let create = |args: Value| {
        json!({"session_id": "agent", "action_requests": [
            {"name": "delete_db", "args": args, "tool_use_id": "toolu_1"}
        ]})
    };
    let (status, staging) = app
        .call(post_json(
            "/approval",
            &create(json!({"db": "staging", "dry_run": false})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let id = staging["id"].as_str().unwrap().to_owned();
    let (status, _) = app
        .call(post_json(
            &format!("/approval/{id}/reply"),
            &json!({"decisions": [{"type": "approve"}]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);

    // The same call again, its arguments' keys in another order: the one approval.
    let (status, again) = app
        .call(post_json(
            "/approval",
            &create(json!({"dry_run": false, "db": "staging"})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["id"], id.as_str());

    // The same call id for other arguments: refused, and nothing is approved for them.
    let (status, error) = app
        .call(post_json(
            "/approval",
            &create(json!({"db": "production", "dry_run": false})),
        ))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert_eq!(error["code"], "call_id_reused");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("\"toolu_1\"") && message.contains(&id),
        "{message:?} names the call id and the earlier request"
    );
    // The same call asked by another agent: the approval is not its to take.
    let other_agent = app
        .hub
        .acting_as(Identity::new("agent-2", Role::Agent))
        .approvals()
        .request(
            "agent",
            vec![
                Action::new("delete_db", json!({"db": "staging", "dry_run": false}))
                    .with_tool_use_id("toolu_1"),
            ],
        )
        .timeout(Timeout::Never)
        .submit();
    let refused = other_agent.expect_err("another asker's call joins nothing");
    assert!(refused.to_string().contains(&id), "{refused}");
    // Other review configs change what the human could decide: not the same request.
    let mut narrower = create(json!({"db": "staging", "dry_run": false}));
    narrower["review_configs"] =
        json!([{"action_name": "delete_db", "allowed_decisions": ["reject"]}]);
    let (status, error) = app.call(post_json("/approval", &narrower)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert_eq!(
        app.hub.approvals().pending_count(),
        0,
        "nothing was created"
    );
}

#[tokio::test]
async fn a_lone_edit_never_stands_for_another_action() {
    let app = TestApp::new();
    let actions = vec![
        Action::new("delete_rows", json!({"table": "tmp"})),
        Action::new("send_email", json!({"to": "boss@example.com"})),
    ];
    let pending = app
        .hub
        .approvals()
        .request("s1", actions)
        .timeout(Timeout::Never)
        .submit()
        .expect("a valid request");
    let uri = format!("/approval/{}/reply", pending.id());
    let edit = json!({"type": "edit", "edited_action": {"name": "delete_rows", "args": {"table": "users"}}});
    let (status, error) = app
        .call(post_json(&uri, &json!({"decisions": [edit]})))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("one action only") && message.contains("send_email"),
        "{message:?}"
    );
    assert_eq!(
        app.hub.approvals().pending_count(),
        1,
        "nothing was decided"
    );

    // One decision per action, the edit among them, is what the human means.
    let (status, _) = app
        .call(post_json(
            &uri,
            &json!({"decisions": [edit, {"type": "approve"}]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let decisions = pending.await.expect("decided").decisions;
    assert!(
        matches!(&decisions[0], Decision::Edit { edited_action } if edited_action.args == json!({"table": "users"}))
    );
    assert_eq!(decisions[1], Decision::Approve);
}

/// `search_rows`, with its parameters' schema: a `table`, and a `limit` of at most 100.
fn search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "table": {"type": "string"},
            "limit": {"type": "integer", "maximum": 100},
        },
        "required": ["table"],
    })
}

#[tokio::test]
async fn an_edit_over_http_or_resume_is_checked_as_in_process_and_a_refused_one_leaves_it_pending()
{
    let app = TestApp::new();
    let create = json!({
        "session_id": "s1",
        "action_requests": [{"name": "search_rows", "args": {"table": "users", "limit": 10},
                             "args_schema": search_schema()}],
    });
    let (status, created) = app.call(post_json("/approval", &create)).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_eq!(
        created["action_requests"][0]["args_schema"],
        search_schema()
    );
    let id = created["id"].as_str().unwrap().to_owned();
    let reply_uri = format!("/approval/{id}/reply");
    let edit = |name: &str, args: Value| json!({"decisions": [{"type": "edit", "edited_action": {"name": name, "args": args}}]});

    for (body, expected) in [
        (
            edit("drop_database", json!({"table": "users"})),
            r#"decisions[0].edited_action.name is "drop_database", but an `edit` keeps the action's tool "search_rows""#,
        ),
        (
            edit("search_rows", json!([1, 2])),
            "decisions[0].edited_action.args must be a JSON object of arguments, not an array",
        ),
        (
            edit("search_rows", json!(null)),
            "decisions[0].edited_action.args must be a JSON object of arguments, not null",
        ),
        (
            edit("search_rows", json!({"table": "users", "limit": 5000})),
            "decisions[0].edited_action.args.limit: 5000 is greater than the maximum of 100",
        ),
        (
            edit("search_rows", json!({"limit": 5})),
            r#"decisions[0].edited_action.args: "table" is a required property"#,
        ),
    ] {
        let (status, error) = app.call(post_json(&reply_uri, &body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error["code"], "invalid", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(expected), "{message:?} names {expected:?}");
        let (_, got) = app.call(get(&format!("/approval/{id}"))).await;
        assert_eq!(got["status"], "pending", "a refused edit changes nothing");
    }

    // A session resume with decisions passes the same check.
    let resume = json!({"input": edit("drop_database", json!({"table": "users"}))});
    let (status, error) = app.call(post_json("/session/s1/resume", &resume)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("an `edit` keeps the action's tool"),
        "{error}"
    );

    let fits = edit("search_rows", json!({"table": "users", "limit": 100}));
    let (status, body) = app.call(post_json(&reply_uri, &fits)).await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)));
    let (_, waited) = app
        .call(get(&format!("/approval/{id}/wait?timeout=1")))
        .await;
    assert_eq!(waited["status"], "replied");
    assert_eq!(
        waited["decisions"], fits["decisions"],
        "the asker gets the edited args"
    );
}

/// A schema whose `a0` refers twice to `a1`, and so on down to `a{levels}`, an object:
/// 2^(levels + 1) - 1 subschemas once its references are followed.
fn fanning_out(levels: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for level in 0..levels {
        let next = format!("#/$defs/a{}", level + 1);
        defs.insert(
            format!("a{level}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next, "title": "again"}]}),
        );
    }
    defs.insert(format!("a{levels}"), json!({"type": "object"}));
    json!({"$defs": defs, "$ref": "#/$defs/a0"})
}

#[tokio::test]
async fn a_schema_that_cannot_be_used_or_that_refuses_its_own_args_is_422_and_nothing_is_fetched() {
    // A server the schema points at: it must never see a connection.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let remote = format!("http://{}/schema.json", listener.local_addr().unwrap());

    let app = TestApp::new();
    let create = |args: Value, schema: Value| {
        json!({"session_id": "s", "action_requests": [
            {"name": "read", "args": {}},
            {"name": "search_rows", "args": args, "args_schema": schema},
        ]})
    };
    for (body, expected) in [
        (
            create(json!({"table": "users"}), json!({"type": "tabular"})),
            "action 2 (\"search_rows\"): action_requests[1].args_schema is not a JSON Schema this server can use",
        ),
        (
            create(json!({"table": "users"}), json!({"minimum": "five"})),
            "action_requests[1].args_schema is not a JSON Schema",
        ),
        (
            create(json!({"table": "users"}), json!({"$ref": remote})),
            "action_requests[1].args_schema is not a JSON Schema this server can use (it must fit its meta-schema and refer to nothing outside itself)",
        ),
        (
            create(
                json!({"table": "users"}),
                json!({"$schema": remote, "type": "object"}),
            ),
            "action_requests[1].args_schema is not a JSON Schema",
        ),
        (
            create(json!({"table": "users", "limit": 500}), search_schema()),
            "action 2 (\"search_rows\"): its args do not fit its own args_schema: action_requests[1].args.limit: 500 is greater than the maximum of 100",
        ),
        (
            create(json!({"limit": 5}), search_schema()),
            r#"action_requests[1].args: "table" is a required property"#,
        ),
        // A few kilobytes whose references fan out: 2^41 subschemas, which checking the
        // args against would walk (hours); refused before it is compiled. 2^14 are past
        // the bound too, and so is a fan-out under a property named like a keyword.
        (
            create(json!({"table": "users"}), fanning_out(40)),
            "with its `$ref`s followed it stands for more than 10000 subschemas",
        ),
        (
            create(json!({"table": "users"}), fanning_out(13)),
            "more than 10000 subschemas",
        ),
        (
            create(json!({"table": "users"}), {
                let mut schema = fanning_out(20);
                schema["properties"] = json!({"enum": {"$ref": "#/$defs/a0"}});
                schema["$ref"] = json!("#/$defs/a20");
                schema
            }),
            "more than 10000 subschemas",
        ),
    ] {
        let (status, error) = app.call(post_json("/approval", &body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error["code"], "invalid", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(expected), "{message:?} names {expected:?}");
    }
    assert_eq!(
        app.hub.approvals().pending_count(),
        0,
        "nothing was created"
    );
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "the schema's server was never contacted"
    );

    // References that fan out within the bound are fine: 2^12 - 1 subschemas.
    let (status, created) = app
        .call(post_json(
            "/approval",
            &create(json!({"table": "users"}), fanning_out(11)),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");

    // A `$ref` within the schema itself is fine.
    let local = json!({
        "$defs": {"limit": {"type": "integer", "maximum": 100}},
        "type": "object",
        "properties": {"limit": {"$ref": "#/$defs/limit"}},
    });
    let (status, created) = app
        .call(post_json("/approval", &create(json!({"limit": 5}), local)))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let reply = json!({"decisions": [{"type": "approve"},
        {"type": "edit", "edited_action": {"name": "search_rows", "args": {"limit": 101}}}]});
    let (status, error) = app
        .call(post_json(
            &format!("/approval/{}/reply", created["id"].as_str().unwrap()),
            &reply,
        ))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        error["message"].as_str().unwrap().contains(
            "decisions[1].edited_action.args.limit: 101 is greater than the maximum of 100"
        ),
        "{error}"
    );
}

/// An integer a browser would round (past 2^53 - 1) is refused in args and in an edit:
/// the reviewer would see `10000000000000000` and approve `10000000000000001`. The
/// largest exact integers, and the same digits as a string, are fine.
#[tokio::test]
async fn integers_a_browser_would_round_are_refused_in_args_and_edits() {
    let app = TestApp::new();
    let create = |args: Value| json!({"session_id": "s", "action_requests": [{"name": "transfer", "args": args}]});
    for (args, path, shown) in [
        (
            json!({"account_id": 10_000_000_000_000_001_u64}),
            "action_requests[0].args.account_id",
            "10000000000000000",
        ),
        (
            json!({"legs": [{"amount": 5}, {"amount": -9_007_199_254_740_993_i64}]}),
            "action_requests[0].args.legs[1].amount",
            "-9007199254740992",
        ),
    ] {
        let (status, error) = app.call(post_json("/approval", &create(args))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("{path} is the integer"))
                && message.contains(&format!("it would show {shown}")),
            "{message}"
        );
    }
    assert_eq!(
        app.hub.approvals().pending_count(),
        0,
        "nothing was created"
    );

    let exact = json!({"account_id": 9_007_199_254_740_991_u64, "floor": -9_007_199_254_740_991_i64,
        "as_text": "10000000000000001", "ratio": 1e300});
    let (status, created) = app.call(post_json("/approval", &create(exact))).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let edit = json!({"decisions": [{"type": "edit", "edited_action": {"name": "transfer",
        "args": {"account_id": 10_000_000_000_000_001_u64}}}]});
    let (status, error) = app
        .call(post_json(
            &format!("/approval/{}/reply", created["id"].as_str().unwrap()),
            &edit,
        ))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains(
            "decisions[0].edited_action.args.account_id is the integer 10000000000000001"
        ),
        "{error}"
    );
    assert_eq!(app.hub.approvals().pending_count(), 1, "still pending");
}
