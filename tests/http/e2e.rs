//! End to end over real TCP: an agent asks in process, an HTTP client lists and replies,
//! the event stream shows both, and shutdown ends open streams.

use std::net::SocketAddr;
use std::time::Duration;

use askbus::Bus;
use askbus::question::{QuestionService, RequestHub, Timeout};
use askbus_http::HttpConfig;
use futures_util::StreamExt;
use serde_json::{Value, json};
use sse_stream::SseStream;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::support::until_ok;

use super::language;

/// A server on an ephemeral loopback port.
struct Served {
    address: SocketAddr,
    questions: QuestionService,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(config: HttpConfig) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let hub = RequestHub::new(Bus::new());
    let questions = hub.questions().clone();
    let shutdown = CancellationToken::new();
    let app = askbus_http::router(hub.clone(), config, shutdown.clone());
    let server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.clone().cancelled_owned())
            .into_future(),
    );
    Served {
        address,
        questions,
        shutdown,
        server,
    }
}

/// The data frames of an SSE response, as JSON with their `id:`.
fn frames(
    response: reqwest::Response,
) -> impl futures_util::Stream<Item = (Option<String>, Value)> + Unpin {
    SseStream::from_bytes_stream(response.bytes_stream())
        .filter_map(|item| async move {
            let sse = item.expect("well-formed SSE");
            let data = sse.data?;
            Some((sse.id, serde_json::from_str(&data).expect("JSON data")))
        })
        .boxed()
}

/// The pending questions of `session` on the server at `base` (`GET /question`).
async fn pending_questions(client: &reqwest::Client, base: &str, session: &str) -> Value {
    client
        .get(format!("{base}/question?sessionID={session}"))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("JSON")
}

async fn next<S: futures_util::Stream<Item = (Option<String>, Value)> + Unpin>(
    stream: &mut S,
) -> (Option<String>, Value) {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("a frame within 5 s")
        .expect("the stream is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_asks_and_a_client_answers_over_http() {
    let served = serve(HttpConfig::default()).await;
    let base = format!("http://{}", served.address);
    let client = reqwest::Client::new();

    let events = client
        .get(format!("{base}/event"))
        .send()
        .await
        .expect("event stream");
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    let mut events = frames(events);
    let (_, connected) = next(&mut events).await;
    assert_eq!(connected["type"], "server.connected");

    // The agent asks and waits.
    let agent = {
        let questions = served.questions.clone();
        tokio::spawn(async move {
            questions
                .ask("session-1", vec![language()])
                .timeout(Timeout::Never)
                .await
        })
    };

    // The client finds the question and answers it.
    let listed: Value = loop {
        let listed = pending_questions(&client, &base, "session-1").await;
        if listed.as_array().is_some_and(|list| !list.is_empty()) {
            break listed;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let id = listed[0]["id"].as_str().expect("id").to_owned();
    let replied: Value = client
        .post(format!("{base}/question/{id}/reply"))
        .json(&json!({"answers": [["Rust"]]}))
        .send()
        .await
        .expect("reply")
        .json()
        .await
        .expect("JSON");
    assert_eq!(replied, json!(true));

    let answers = tokio::time::timeout(Duration::from_secs(5), agent)
        .await
        .expect("the ask resolves")
        .expect("agent task");
    assert_eq!(answers, Ok(vec![vec!["Rust".to_owned()]]));

    let (asked_id, asked) = next(&mut events).await;
    assert_eq!(asked["type"], "question.asked");
    assert_eq!(asked["properties"]["id"], id);
    let (replied_id, replied) = next(&mut events).await;
    assert_eq!(replied["type"], "question.replied");
    assert_eq!(replied["properties"]["answers"], json!([["Rust"]]));
    assert!(asked_id < replied_id);

    served.shutdown.cancel();
    served
        .server
        .await
        .expect("server task")
        .expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_ends_open_streams_promptly() {
    let served = serve(HttpConfig::default()).await;
    let base = format!("http://{}", served.address);
    let client = reqwest::Client::new();
    let mut streams = Vec::new();
    for path in ["/event", "/global/event"] {
        let response = client
            .get(format!("{base}{path}"))
            .send()
            .await
            .expect("stream");
        let mut stream = frames(response);
        next(&mut stream).await;
        streams.push(stream);
    }
    let id = served
        .questions
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .expect("valid")
        .detach()
        .id;
    let long_poll = tokio::spawn(
        client
            .get(format!("{base}/question/{id}/wait?timeout=60"))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(50)).await;

    let started = std::time::Instant::now();
    served.shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(3), served.server)
        .await
        .expect("shutdown does not hang")
        .expect("server task")
        .expect("clean shutdown");
    for stream in streams {
        // What was sent before the shutdown (the `question.asked`), then the end.
        let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(3), stream.collect())
            .await
            .expect("the stream ends");
        let kind = |frame: &Value| frame.get("payload").unwrap_or(frame).get("type").cloned();
        assert!(
            rest.iter()
                .all(|(_, frame)| kind(frame) == Some(json!("question.asked"))),
            "{rest:?}"
        );
    }
    let waited: Value = long_poll
        .await
        .expect("task")
        .expect("the long poll is answered")
        .json()
        .await
        .expect("JSON");
    assert_eq!(waited["status"], "pending");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_crate_serves_and_stops_on_cancel() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let cli = <askbus_server::Cli as clap::Parser>::try_parse_from([
        "askbus", "--demo", "--store", "memory",
    ])
    .expect("flags");
    let settings = cli.settings().expect("valid");
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(askbus_server::serve(listener, settings, shutdown.clone()));
    let base = format!("http://{address}");
    let client = reqwest::Client::new();

    let health: Value = client
        .get(format!("{base}/health"))
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("JSON");
    assert_eq!(health["healthy"], true);

    // The demo agent asks in session `demo`.
    let events = client
        .get(format!("{base}/event?sessionID=demo&last_event_id=garbage"))
        .send()
        .await
        .expect("stream");
    let mut events = frames(events);
    assert_eq!(next(&mut events).await.1["type"], "server.connected");
    assert_eq!(next(&mut events).await.1["type"], "server.resync");
    // The demo agent asks on a task of its own, which may not have run yet.
    until_ok(|| async {
        let listed = pending_questions(&client, &base, "demo").await;
        match listed.as_array().map(Vec::len) {
            Some(1) => Ok(()),
            _ => Err(listed),
        }
    })
    .await;

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(3), server)
        .await
        .expect("shutdown does not hang")
        .expect("task")
        .expect("clean");
    let rest = tokio::time::timeout(Duration::from_secs(3), events.next())
        .await
        .expect("the stream ends");
    assert!(rest.is_none());
}
