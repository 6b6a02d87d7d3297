//! The adversarial suite: the real `askbus` binary on its defaults (loopback, no token,
//! SQLite) against an attacker and a careless client. Each test is a probe that once got
//! through, or one that must keep failing to get through.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use support::Server;

/// A server on a fresh SQLite file, as `cargo run --release` runs it.
async fn server() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    (Server::start(&store).await, dir)
}

/// An approval of `delete_db` with `args`, from the agent's tool call `toolu_1`.
fn delete_db(args: Value) -> Value {
    json!({"session_id": "agent", "action_requests": [
        {"name": "delete_db", "args": args, "tool_use_id": "toolu_1"}
    ]})
}

#[tokio::test]
async fn an_approval_is_never_reused_for_arguments_the_human_did_not_see() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let approved = server
        .post(&http, "/approval", &delete_db(json!({"db": "staging"})))
        .await;
    let id = approved.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = json!({"decisions": [{"type": "approve"}]});
    assert_eq!(
        server
            .post_status(&http, &format!("/approval/{id}/reply"), &reply)
            .await,
        200
    );

    let reused = server
        .post(&http, "/approval", &delete_db(json!({"db": "production"})))
        .await;
    assert_eq!(reused.status(), 409);
    let error: Value = reused.json().await.unwrap();
    assert_eq!(error["code"], "call_id_reused");
    assert!(
        error["message"].as_str().unwrap().contains("toolu_1"),
        "{error}"
    );

    // A question from a reused tool call with another question gets no old answer either.
    let ask = |question: &str| {
        json!({"sessionID": "agent", "tool": {"messageID": "m", "callID": "call_1"},
               "questions": [{"question": question, "header": "Go",
                              "options": [{"label": "Yes", "description": ""}]}]})
    };
    let first = server.ask(&http, &ask("Drop the staging tables?")).await;
    let answer = json!({"answers": [["Yes"]]});
    assert_eq!(
        server
            .post_status(&http, &format!("/question/{first}/reply"), &answer)
            .await,
        200
    );
    assert_eq!(
        server
            .post_status(&http, "/question", &ask("Drop the production tables?"))
            .await,
        409
    );
    // The same content is the same request: a retry gets its outcome.
    assert_eq!(
        server.ask(&http, &ask("Drop the staging tables?")).await,
        first
    );
}

#[tokio::test]
async fn one_edit_is_never_copied_over_other_actions() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let created = server
        .post(
            &http,
            "/approval",
            &json!({"session_id": "agent", "action_requests": [
                {"name": "delete_rows", "args": {"table": "tmp"}},
                {"name": "send_email", "args": {"to": "boss"}},
            ]}),
        )
        .await;
    let id = created.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lone_edit = json!({"decisions": [
        {"type": "edit", "edited_action": {"name": "delete_rows", "args": {"table": "users"}}}
    ]});
    let path = format!("/approval/{id}/reply");
    assert_eq!(server.post_status(&http, &path, &lone_edit).await, 422);
    let status = server.get(&http, &format!("/approval/{id}")).await;
    assert_eq!(status["status"], "pending", "nothing was decided: {status}");
}

/// A runaway agent floods one session: the human reads it a page at a time (the next page
/// named in `Link` and `x-next-cursor`), sees every session's count, and refuses all of it
/// with one call, which the agent's long poll hears; another session is spared. Before,
/// lists had no pages, no counts, and a flood was refused one request at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_session_is_paged_counted_and_refused_in_one_call() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let question = |session: &str, n: usize| {
        json!({"sessionID": session, "questions": [{"question": format!("Step {n}?"),
               "header": "Step", "options": [{"label": "Go", "description": ""}]}]})
    };
    let calm = server.ask(&http, &question("calm", 0)).await;
    let asks = futures_util::future::join_all((0..240).map(|n| {
        let (server, http, body) = (&server, &http, question("runaway", n));
        async move { server.ask(http, &body).await }
    }));
    let mut asked = asks.await;
    asked.sort();
    let approval = json!({"session_id": "runaway",
                          "action_requests": [{"name": "drop_table", "args": {"table": "users"}}]});
    for _ in 0..10 {
        assert_eq!(server.post_status(&http, "/approval", &approval).await, 200);
    }

    // A page at a time, each naming the next, together every request once, in id order.
    let mut paged = Vec::new();
    let mut next = Some("/question?sessionID=runaway&limit=100".to_owned());
    while let Some(path) = next.take() {
        let response = http
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let cursor = response
            .headers()
            .get("x-next-cursor")
            .map(|cursor| cursor.to_str().unwrap().to_owned());
        let link = response
            .headers()
            .get("link")
            .map(|link| link.to_str().unwrap().to_owned());
        let page: Vec<Value> = response.json().await.unwrap();
        assert!(page.len() <= 100);
        paged.extend(
            page.iter()
                .map(|request| request["id"].as_str().unwrap().to_owned()),
        );
        if let (Some(cursor), Some(link)) = (cursor, link) {
            assert_eq!(paged.last(), Some(&cursor));
            next = Some(
                link.trim_start_matches('<')
                    .trim_end_matches(">; rel=\"next\"")
                    .to_owned(),
            );
        }
    }
    assert_eq!(paged, asked);
    let counts = server.get(&http, "/session/pending").await;
    assert_eq!(
        counts["sessions"],
        json!([
            {"session_id": "calm", "questions": 1, "approvals": 0},
            {"session_id": "runaway", "questions": 240, "approvals": 10},
        ])
    );

    let waiting = {
        let url = format!("{}/question/{}/wait?timeout=30", server.base, asked[7]);
        let http = http.clone();
        tokio::spawn(async move { http.get(url).send().await.unwrap().json::<Value>().await })
    };
    let refused = server
        .post(
            &http,
            "/session/runaway/reject",
            &json!({"reason": "runaway agent"}),
        )
        .await;
    assert_eq!(refused.status(), 200);
    assert_eq!(
        refused.json::<Value>().await.unwrap(),
        json!({"rejected": 250, "questions": 240, "approvals": 10, "cancelled": 0})
    );
    let heard = waiting.await.unwrap().unwrap();
    assert_eq!(
        (heard["status"].as_str(), heard["reason"].as_str()),
        (Some("rejected"), Some("runaway agent"))
    );
    let left = server.get(&http, "/question").await;
    assert_eq!(left.as_array().unwrap().len(), 1);
    assert_eq!(left[0]["id"], calm);
    assert_eq!(server.get(&http, "/approval").await, json!([]));
}
