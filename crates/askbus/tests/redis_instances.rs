//! Several real `askbus` processes on one Redis (127.0.0.1:6379, keys under a prefix of
//! this test's own): a question asked through one is listed and answered through another,
//! the asker's long poll resolves, a third server's event stream shows `question.asked`
//! and `question.replied` once each, in order; replies racing through every server resolve
//! once (one `200`, the rest `409`); a server killed with SIGKILL leaves its requests
//! answerable, and its agent picks the outcome up when it asks again after the restart;
//! and a session's history is the same through every server, a step posted through one
//! streamed by another.
//!
//! A missing Redis fails these tests and says how to get one (`cargo xtask ci` starts it).

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use sse_stream::SseStream;
use support::{Server, TestPrefix, question};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_redis_share_requests_and_resolve_each_once() {
    let redis = TestPrefix::new();
    let http = reqwest::Client::new();
    let (a, b, c) = (
        Server::start(&redis.store()).await,
        Server::start(&redis.store()).await,
        Server::start(&redis.store()).await,
    );
    let mut c_events = events(&http, &c).await;

    let id = a.ask(&http, &question("call-1")).await;
    // The asker long-polls A; the human answers through B, which lists the question.
    let waiting = {
        let (http, url) = (
            http.clone(),
            format!("{}/question/{id}/wait?timeout=30", a.base),
        );
        tokio::spawn(async move { http.get(url).send().await.unwrap().json::<Value>().await })
    };
    let listed = b.get(&http, "/question").await;
    assert_eq!(listed[0]["id"], id.as_str(), "{listed}");
    let reply = json!({"answers": [["eu"]]});
    let path = format!("/question/{id}/reply");
    assert_eq!(b.post_status(&http, &path, &reply).await, 200);
    let outcome = waiting.await.unwrap().unwrap();
    assert_eq!(outcome["status"], "replied", "{outcome}");
    assert_eq!(outcome["answers"], json!([["eu"]]));
    // Whichever server is asked, the answer is given, and final.
    assert_eq!(
        c.get(&http, &format!("/question/{id}")).await["status"],
        "replied"
    );
    assert_eq!(a.post_status(&http, &path, &reply).await, 409);

    // C's event stream: asked, then replied, once each.
    let seen = c_events.until(&id, "question.replied").await;
    assert_eq!(seen, ["question.asked", "question.replied"]);

    // Replies racing through every server: one is taken.
    for call in 0..10 {
        let id = a.ask(&http, &question(&format!("race-{call}"))).await;
        let path = format!("/question/{id}/reply");
        let racing = [&a, &b, &c].map(|server| {
            let (http, url) = (http.clone(), format!("{}{path}", server.base));
            tokio::spawn(async move {
                let reply = json!({"answers": [["us"]]});
                http.post(url)
                    .json(&reply)
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            })
        });
        let mut statuses = Vec::new();
        for status in racing {
            statuses.push(status.await.unwrap());
        }
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 409, 409], "{id}");
        assert_eq!(
            c_events.until(&id, "question.replied").await,
            ["question.asked", "question.replied"],
            "{id}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_servers_requests_stay_answerable_and_its_agent_picks_them_up() {
    let redis = TestPrefix::new();
    let http = reqwest::Client::new();
    let b = Server::start(&redis.store()).await;
    let a = Server::start(&redis.store()).await;
    let mut ids = HashMap::new();
    for call in ["call-1", "call-2"] {
        ids.insert(call, a.ask(&http, &question(call)).await);
    }
    a.kill_9().await;

    // Still answerable through B.
    let listed = b.get(&http, "/question?sessionID=agent").await;
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    let path = format!("/question/{}/reply", ids["call-1"]);
    assert_eq!(
        b.post_status(&http, &path, &json!({"answers": [["eu"]]}))
            .await,
        200
    );

    // The agent asks again from the same tool calls through the restarted server: the
    // answered one comes back at once, the other when the human answers it.
    let a = Server::start(&redis.store()).await;
    let again = a.ask(&http, &question("call-1")).await;
    assert_eq!(again, ids["call-1"], "the same request, no second prompt");
    let outcome = a
        .get(
            &http,
            &format!("/question/{}/wait?timeout=1", ids["call-1"]),
        )
        .await;
    assert_eq!(outcome["status"], "replied", "{outcome}");
    assert_eq!(outcome["answers"], json!([["eu"]]));

    let again: Value = a
        .post(&http, "/question", &question("call-2"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again["id"], ids["call-2"].as_str());
    let waiting = {
        let url = format!("{}/question/{}/wait?timeout=30", a.base, ids["call-2"]);
        let http = http.clone();
        tokio::spawn(async move { http.get(url).send().await.unwrap().json::<Value>().await })
    };
    let path = format!("/question/{}/reply", ids["call-2"]);
    assert_eq!(
        b.post_status(&http, &path, &json!({"answers": [["us"]]}))
            .await,
        200
    );
    let outcome = waiting.await.unwrap().unwrap();
    assert_eq!(outcome["status"], "replied", "{outcome}");
}

/// A session's history is the same through every server on the Redis, cursor included,
/// and a step posted through one server is streamed by another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_redis_share_each_sessions_history_and_stream() {
    let redis = TestPrefix::new();
    let http = reqwest::Client::new();
    let (a, b) = (
        Server::start(&redis.store()).await,
        Server::start(&redis.store()).await,
    );
    let mut b_stream = session_stream(&http, &b, None).await;

    let user = |text: &str| json!({"type": "user", "text": text});
    a.step(&http, "agent", &user("Posted through A")).await;
    assert_eq!(b_stream.text().await, "Posted through A");

    let id = b.ask(&http, &question("call-1")).await;
    let path = format!("/question/{id}/reply");
    assert_eq!(
        a.post_status(&http, &path, &json!({"answers": [["us"]]}))
            .await,
        200
    );
    b.step(&http, "agent", &user("Posted through B")).await;
    let from_a = a.get(&http, "/session/agent/history").await;
    let from_b = b.get(&http, "/session/agent/history").await;
    assert_eq!(from_a, from_b);
    let messages = from_a["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{from_a:#}");
    assert_eq!(
        messages[1]["content"][0]["submittedAnswers"],
        json!({"Which region?": "us"})
    );

    // A's cursor resumes on B.
    let cursor = from_a["last_event_id"].as_str().unwrap();
    let mut resumed = session_stream(&http, &b, Some(cursor)).await;
    a.step(&http, "agent", &user("After the cursor")).await;
    assert_eq!(resumed.text().await, "After the cursor");
}

/// A server's `GET /session/agent/stream`, from `cursor` if given.
async fn session_stream(
    http: &reqwest::Client,
    server: &Server,
    cursor: Option<&str>,
) -> SessionStream {
    let mut request = http.get(format!("{}/session/agent/stream", server.base));
    if let Some(cursor) = cursor {
        request = request.header("last-event-id", cursor);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let frames = SseStream::from_bytes_stream(response.bytes_stream())
        .filter_map(|item| async move {
            serde_json::from_str(&item.expect("well-formed SSE").data?).ok()
        })
        .boxed();
    SessionStream { frames }
}

/// A session's frames.
struct SessionStream {
    frames: futures_util::stream::BoxStream<'static, Value>,
}

impl SessionStream {
    /// The text of the next text block's delta.
    async fn text(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let frame = self.frames.next().await.expect("the stream goes on");
                if let Some(text) = frame["delta"]["text"].as_str() {
                    return text.to_owned();
                }
            }
        })
        .await
        .expect("a text within 10 s")
    }
}

/// A server's `/event` stream, as `(type, request id)` of each event.
struct Events {
    stream: futures_util::stream::BoxStream<'static, (String, String)>,
}

async fn events(http: &reqwest::Client, server: &Server) -> Events {
    let response = http
        .get(format!("{}/event", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let stream = SseStream::from_bytes_stream(response.bytes_stream())
        .filter_map(|item| async move {
            let event: Value = serde_json::from_str(&item.expect("well-formed SSE").data?).ok()?;
            let properties = &event["properties"];
            // `question.asked` carries the request itself; outcomes name it.
            let id = properties["requestID"]
                .as_str()
                .or(properties["id"].as_str())?;
            Some((event["type"].as_str()?.to_owned(), id.to_owned()))
        })
        .boxed();
    Events { stream }
}

impl Events {
    /// The types of request `id`'s events, up to and including one of type `last`; then
    /// checks that nothing more about `id` is already waiting.
    async fn until(&mut self, id: &str, last: &str) -> Vec<String> {
        let mut seen = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), async {
            while let Some((event_type, request)) = self.stream.next().await {
                if request == id {
                    seen.push(event_type.clone());
                    if event_type == last {
                        return;
                    }
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{id}: no {last} within 10 s; saw {seen:?}"));
        seen
    }
}
