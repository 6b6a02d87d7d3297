//! Roles through the real `askbus` binary, configured as its README says: an agent's token
//! asks and can never approve what it asked, a reviewer's token approves and can never ask,
//! and the outcome, the audit log and a restart all say who decided. A tool the operator
//! gave a quorum of two (`--quorum`) takes two distinct reviewers, across a `kill -9`.

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use support::Server;

const AGENT: &str = "agent-secret-0123456789abcdef";
const ALICE: &str = "alice-secret-0123456789abcdef";
const BOB: &str = "bob-secret-0123456789abcdef0123";

/// `method path` with `token` (and a JSON body); the status and the JSON answer.
async fn call(
    server: &Server,
    http: &reqwest::Client,
    token: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let url = format!("{}{path}", server.base);
    let request = match body {
        Some(body) => http.post(url).json(body),
        None => http.get(url),
    };
    let response = request.bearer_auth(token).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_token_never_approves_its_own_request_and_a_restart_remembers_who_did() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let agent = format!("agent-1={AGENT}@deploy");
    let alice = format!("alice={ALICE}");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        &store,
        "--agent-token",
        &agent,
        "--reviewer-token",
        &alice,
    ];
    let server = Server::start_with(dir.path(), &args, &[]).await;
    let http = reqwest::Client::new();

    let create = json!({
        "session_id": "deploy",
        "action_requests": [{"name": "delete_rows", "args": {"table": "users"}}],
    });
    let (status, created) = call(&server, &http, ALICE, "/approval", Some(&create)).await;
    assert_eq!((status, &created["code"]), (403, &json!("forbidden")));
    let (status, created) = call(&server, &http, AGENT, "/approval", Some(&create)).await;
    assert_eq!(status, 200, "{created}");
    let key = created["approval_key"].as_str().unwrap().to_owned();
    assert_eq!(
        created["asked_by"],
        json!({"name": "agent-1", "role": "agent"})
    );

    let approve = json!({"decisions": [{"type": "approve"}]});
    let reply = format!("/approval/{key}/reply");
    let (status, refused) = call(&server, &http, AGENT, &reply, Some(&approve)).await;
    assert_eq!(status, 403, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("may not answer"),
        "{refused}"
    );
    let resume = json!({"input": {"confirm": true}});
    let (status, _) = call(
        &server,
        &http,
        AGENT,
        "/session/deploy/resume",
        Some(&resume),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = call(&server, &http, "wrong-token", &reply, Some(&approve)).await;
    assert_eq!(status, 401);
    let (status, _) = call(&server, &http, ALICE, &reply, Some(&approve)).await;
    assert_eq!(status, 200);

    let alice_identity = json!({"name": "alice", "role": "reviewer"});
    let path = format!("/approval/{key}");
    let (_, approved) = call(&server, &http, AGENT, &path, None).await;
    assert_eq!(approved["status"], "replied");
    assert_eq!(approved["answered_by"], alice_identity);
    // The receipt names both sides; an agent may not read the log.
    let (status, _) = call(&server, &http, AGENT, "/audit", None).await;
    assert_eq!(status, 403);
    let (_, entries) = call(&server, &http, ALICE, "/audit", None).await;
    let draft: Value = serde_json::from_str(entries[0]["draft"].as_str().unwrap()).unwrap();
    assert_eq!(draft["asked_by"]["name"], "agent-1");
    assert_eq!(draft["decided_by"], alice_identity);
    server.kill_9().await;

    // After a restart the stored outcome still says who decided.
    let server = Server::start_with(dir.path(), &args, &[]).await;
    let (_, approved) = call(&server, &http, ALICE, &path, None).await;
    assert_eq!(approved["answered_by"], alice_identity);
    assert_eq!(approved["asked_by"]["name"], "agent-1");
    server.kill_9().await;
}

/// The names in `votes` of an approval view (or of an audit entry's decision).
fn voter_names(body: &Value) -> Vec<&str> {
    body["votes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|vote| vote["decided_by"]["name"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_two_of_two_takes_two_distinct_reviewers_across_a_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let agent = format!("agent-1={AGENT}");
    let alice = format!("alice={ALICE}");
    let bob = format!("bob={BOB}");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        &store,
        "--agent-token",
        &agent,
        "--reviewer-token",
        &alice,
        "--reviewer-token",
        &bob,
        "--quorum",
        "drop_table=2",
        "--link-secret",
        "link-secret-0123456789abcdef0123456789",
    ];
    let server = Server::start_with(dir.path(), &args, &[]).await;
    let http = reqwest::Client::new();
    let create = json!({
        "session_id": "deploy",
        "action_requests": [{"name": "drop_table", "args": {"table": "users"}}],
        "review_configs": [{"action_name": "drop_table", "quorum": 1}],
    });
    let (status, created) = call(&server, &http, AGENT, "/approval", Some(&create)).await;
    assert_eq!(status, 200, "{created}");
    // The agent asked for one reviewer; the operator's --quorum makes it two.
    assert_eq!(created["review_configs"][0]["quorum"], 2, "{created}");
    let path = format!("/approval/{}", created["id"].as_str().unwrap());
    let reply = format!("{path}/reply");
    let approve = json!({"decisions": [{"type": "approve"}]});

    // The asker never votes; Alice votes once.
    assert_eq!(
        call(&server, &http, AGENT, &reply, Some(&approve)).await.0,
        403
    );
    assert_eq!(
        call(&server, &http, ALICE, &reply, Some(&approve)).await.0,
        200
    );
    let (status, again) = call(&server, &http, ALICE, &reply, Some(&approve)).await;
    assert_eq!(status, 403, "{again}");
    let (_, half) = call(&server, &http, AGENT, &path, None).await;
    assert_eq!(half["status"], "pending", "{half}");
    assert_eq!(voter_names(&half), ["alice"]);
    // Bob gets an answer link, signed with the configured secret.
    let mint = format!("{path}/link");
    let (status, minted) = call(&server, &http, BOB, &mint, Some(&json!({}))).await;
    assert_eq!(status, 200, "{minted}");
    let link = minted["path"].as_str().unwrap().to_owned();
    server.kill_9().await;

    // Her vote outlives the process, and still counts once.
    let server = Server::start_with(dir.path(), &args, &[]).await;
    let (_, half) = call(&server, &http, BOB, &path, None).await;
    assert_eq!(voter_names(&half), ["alice"], "{half}");
    assert_eq!(
        call(&server, &http, ALICE, &reply, Some(&approve)).await.0,
        403
    );
    // Bob decides through his link, which outlived the process: no token needed.
    let answered = http
        .post(format!("{}{link}", server.base))
        .json(&approve)
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status().as_u16(), 200);
    let (_, done) = call(&server, &http, AGENT, &path, None).await;
    assert_eq!(done["status"], "replied", "{done}");
    assert_eq!(done["answered_by"]["name"], "bob");
    assert_eq!(voter_names(&done), ["alice", "bob"]);

    // The receipt names the reviewer who completed the quorum and lists every vote.
    let (_, entries) = call(&server, &http, ALICE, "/audit", None).await;
    let last = entries.as_array().unwrap().last().unwrap();
    let draft: Value = serde_json::from_str(last["draft"].as_str().unwrap()).unwrap();
    assert_eq!(draft["decided_by"]["name"], "bob");
    assert_eq!(voter_names(&draft["decision"]), ["alice", "bob"], "{draft}");
    server.kill_9().await;
}
