//! Session histories over the real `askbus` binary on SQLite: a session's history (steps, a
//! question answered, an approval pending) reads the same before and after a restart, its
//! cursor included, and a stream resumed after that cursor goes on across the restart.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use sse_stream::SseStream;
use support::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_servers_history_is_the_same_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let http = reqwest::Client::new();
    let server = Server::start(&store).await;
    for step in [
        json!({"type": "user", "text": "Clean up the database"}),
        json!({"type": "tool_use", "id": "tc-1", "name": "count_rows", "input": {"table": "tmp"}}),
        json!({"type": "tool_result", "tool_use_id": "tc-1", "name": "count_rows", "content": "1,234 rows"}),
    ] {
        server.step(&http, "agent", &step).await;
    }
    let question = server.ask(&http, &support::question("call-1")).await;
    let answer = json!({"answers": [["eu"]]});
    let path = format!("/question/{question}/reply");
    assert_eq!(server.post_status(&http, &path, &answer).await, 200);
    let approval = json!({"session_id": "agent", "action_requests": [
        {"name": "delete_rows", "args": {"table": "tmp"}, "tool_use_id": "toolu_1"}
    ]});
    assert_eq!(server.post_status(&http, "/approval", &approval).await, 200);

    let before = server.get(&http, "/session/agent/history").await;
    let parts: Vec<&Value> = before["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| {
            let part = &message["content"][0];
            (part["type"] == "approval_request").then_some(part)
        })
        .collect();
    assert_eq!(parts.len(), 2, "{before:#}");
    assert_eq!(parts[0]["submittedAnswers"], json!({"Which region?": "eu"}));
    assert_eq!(parts[1]["isResolved"], false, "the approval waits");

    assert!(server.stop_with("TERM").await.success());
    let server = Server::start(&store).await;
    let after = server.get(&http, "/session/agent/history").await;
    assert_eq!(after, before, "the same history, the same cursor");

    // A client that loaded the history before the restart resumes after its cursor.
    let cursor = before["last_event_id"].as_str().unwrap();
    let response = http
        .get(format!("{}/session/agent/stream", server.base))
        .header("last-event-id", cursor)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut frames = SseStream::from_bytes_stream(response.bytes_stream());
    let text = json!({"type": "text", "text": "Waiting for the approval."});
    server.step(&http, "agent", &text).await;
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let item = frames.next().await.unwrap().unwrap();
                if let Some(data) = item.data {
                    return serde_json::from_str::<Value>(&data).unwrap();
                }
            }
        })
        .await
        .expect("a frame within 10 s")
    };
    // The text closes the group the approval is in, then opens its own block.
    let closed = next().await;
    assert_eq!(closed["type"], "group_end", "{closed}");
    assert_eq!(closed["summary"], "Delete rows");
    let text = next().await;
    assert_eq!(text["type"], "content_block_start", "{text}");
    assert_eq!(text["content_block"]["type"], "text");
    server.kill_9().await;
}
