//! What an operator relies on, through the real server (`askbus_server::serve` over TCP):
//! the request id of the call that caused an event, on the event stream and in the log
//! lines of that call; the store's write timings and failures in `/metrics`; `/ready`
//! failing while the store is cut off, or while a shared store's follower lags.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askbus::Bus;
use askbus::question::{RequestHub, Timeout};
use askbus_server::Cli;
use askbus_store::{
    BoxFuture, Change, ChangeLog, LogPosition, MemoryStore, MeteredStore, Store, StoreError,
    StoreLayer,
};
use clap::Parser;
use futures_util::StreamExt;
use serde_json::{Value, json};
use sse_stream::SseStream;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::support::{PrivateRedis, language, router_get as get};

/// Longest any step may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(10);

/// `askbus {args}` served on an ephemeral loopback port until dropped.
struct Served {
    address: SocketAddr,
    shutdown: CancellationToken,
    http: reqwest::Client,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn serve(args: &[&str]) -> Served {
    let settings = Cli::try_parse_from(std::iter::once("askbus").chain(args.iter().copied()))
        .expect("flags")
        .settings()
        .expect("valid");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let shutdown = CancellationToken::new();
    tokio::spawn(askbus_server::serve(listener, settings, shutdown.clone()));
    Served {
        address,
        shutdown,
        http: reqwest::Client::new(),
    }
}

impl Served {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// `POST path` with `body` and the request id `id`: the status and the JSON answer.
    async fn post(&self, path: &str, id: &str, body: &Value) -> (u16, Value) {
        let response = tokio::time::timeout(
            HANG,
            self.http
                .post(self.url(path))
                .header("x-request-id", id)
                .json(body)
                .send(),
        )
        .await
        .expect("an answer")
        .expect("sent");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Asks one question in `session` as request `id`: the status and the answer.
    async fn ask(&self, id: &str, session: &str) -> (u16, Value) {
        let body = json!({"sessionID": session, "questions": [language()]});
        self.post("/question", id, &body).await
    }

    /// `GET path`'s status and body.
    async fn get(&self, path: &str) -> (u16, String) {
        let response = tokio::time::timeout(HANG, self.http.get(self.url(path)).send())
            .await
            .expect("an answer")
            .expect("sent");
        let status = response.status().as_u16();
        (status, response.text().await.expect("a body"))
    }

    /// Scrapes `/metrics` until `holds` holds for the value of `series` (its name and
    /// labels as written), failing after 5 s with the last scrape.
    async fn metric_until(&self, series: &str, holds: impl Fn(f64) -> bool) -> String {
        let mut last = String::new();
        for _ in 0..200 {
            last = self.get("/metrics").await.1;
            if value(&last, series).is_some_and(&holds) {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{series} never as expected in\n{last}");
    }
}

/// The value of `series` in the metrics `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.split(' ').next()?.parse().ok()
    })
}

/// The data frames of an SSE response, as JSON.
fn frames(response: reqwest::Response) -> impl futures_util::Stream<Item = Value> + Unpin {
    SseStream::from_bytes_stream(response.bytes_stream())
        .filter_map(|item| async move {
            let data = item.expect("well-formed SSE").data?;
            Some(serde_json::from_str(&data).expect("JSON data"))
        })
        .boxed()
}

/// The next frame of `stream` that is not a heartbeat, within [`HANG`] (heartbeats do not
/// keep it waiting longer).
async fn next_event(stream: &mut (impl futures_util::Stream<Item = Value> + Unpin)) -> Value {
    let next = async {
        loop {
            let frame = stream.next().await.expect("the stream is open");
            if frame["type"] != "server.heartbeat" {
                return frame;
            }
        }
    };
    tokio::time::timeout(HANG, next).await.expect("an event")
}

/// A client making large requests and ending them at once cannot make the server hold
/// thousands of them in the event stream's replay history: `--max-event-history-mib` bounds
/// its bytes, so a cursor from before 1.7 MiB of such events is too old under a 1 MiB
/// limit, while the default (16 MiB) still replays them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_history_keeps_large_requests_only_within_its_bytes() {
    // One question of 60 options with long descriptions: about 56 KiB of JSON.
    let options: Vec<Value> = (0..60)
        .map(|n| json!({"label": format!("option {n}"), "description": "x".repeat(900)}))
        .collect();
    for (args, resumes) in [
        (
            &["--store", "memory", "--max-event-history-mib", "1"][..],
            false,
        ),
        (&["--store", "memory"][..], true),
    ] {
        let served = serve(args).await;
        let response = served.http.get(served.url("/event")).send().await;
        let mut first = SseStream::from_bytes_stream(response.expect("a stream").bytes_stream());
        let connected = tokio::time::timeout(HANG, first.next())
            .await
            .expect("a frame")
            .expect("open")
            .expect("well-formed SSE");
        let cursor = connected.id.expect("the connected frame's cursor");
        drop(first);
        let mut first_asked = None;
        for n in 0..30 {
            let session = format!("large-{n}");
            let body = json!({"sessionID": session, "questions": [
                {"question": "Pick one?", "header": "Large", "options": options}
            ]});
            let (status, asked) = served.post("/question", &format!("large-{n}"), &body).await;
            assert_eq!(status, 200, "{asked}");
            first_asked.get_or_insert(asked["id"].clone());
            let cancel = format!("/session/{session}/cancel");
            let (status, _) = served
                .post(&cancel, &format!("cancel-{n}"), &json!({}))
                .await;
            assert_eq!(status, 200);
        }

        let mut resumed = frames(
            served
                .http
                .get(served.url("/event"))
                .header("last-event-id", &cursor)
                .send()
                .await
                .expect("a stream"),
        );
        assert_eq!(next_event(&mut resumed).await["type"], "server.connected");
        let next = next_event(&mut resumed).await;
        if resumes {
            assert_eq!(next["type"], "question.asked", "{args:?}: {next}");
            assert_eq!(Some(&next["properties"]["id"]), first_asked.as_ref());
        } else {
            assert_eq!(
                (next["type"].as_str(), next["properties"]["reason"].as_str()),
                (Some("server.resync"), Some("cursor_too_old")),
                "{args:?}: {next}"
            );
        }
    }
}

/// Each event names the request that caused it, on `/event` (beside `properties`) and on
/// OpenCode's v2 `/api/event` (beside `data`); the server's own frames and events no
/// request caused (a timeout) name none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_carry_the_id_of_the_request_that_caused_them() {
    let served = serve(&["--store", "memory"]).await;
    let open = |path: &'static str| {
        let request = served.http.get(served.url(path)).send();
        async move { frames(request.await.expect("a stream")) }
    };
    let (mut plain, mut v2) = (open("/event").await, open("/api/event").await);
    for stream in [&mut plain, &mut v2] {
        let connected = next_event(stream).await;
        assert_eq!(connected["type"], "server.connected");
        assert_eq!(connected.get("requestID"), None, "{connected}");
    }

    let (status, asked) = served.ask("ask-1", "traced").await;
    assert_eq!(status, 200, "{asked}");
    let id = asked["id"].as_str().expect("an id");
    let (status, _) = served
        .post(
            &format!("/question/{id}/reply"),
            "reply-2",
            &json!({"answers": [["Rust"]]}),
        )
        .await;
    assert_eq!(status, 200);
    let timed = json!({"sessionID": "traced", "questions": [language()], "timeout": 0.05});
    let (status, timing_out) = served.post("/question", "ask-3", &timed).await;
    assert_eq!(status, 200, "{timing_out}");

    for (stream, what) in [(&mut plain, "properties"), (&mut v2, "data")] {
        let mut seen = Vec::new();
        while seen.len() < 4 {
            let event = next_event(stream).await;
            assert!(event.get(what).is_some(), "{event}");
            seen.push((event["type"].clone(), event.get("requestID").cloned()));
        }
        assert_eq!(
            seen,
            [
                (json!("question.asked"), Some(json!("ask-1"))),
                (json!("question.replied"), Some(json!("reply-2"))),
                (json!("question.asked"), Some(json!("ask-3"))),
                (json!("question.timed_out"), None),
            ],
            "on the {what} stream"
        );
    }

    // A tool call over `/mcp`, which rmcp serves on a task of its own, names its request
    // too, and so does the reply that answers it.
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "question",
            "arguments": {"questions": [{
                "question": "Which language?",
                "header": "Language",
                "options": [{"label": "Rust", "description": ""}],
            }]},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    });
    let calling = served
        .http
        .post(served.url("/mcp"))
        .header("x-request-id", "mcp-4")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "question")
        .json(&call)
        .send();
    let calling = tokio::spawn(calling);
    let asked = next_event(&mut plain).await;
    assert_eq!(
        (&asked["type"], &asked["requestID"]),
        (&json!("question.asked"), &json!("mcp-4")),
        "{asked}"
    );
    let id = asked["properties"]["id"].as_str().expect("an id");
    let (status, _) = served
        .post(
            &format!("/question/{id}/reply"),
            "reply-5",
            &json!({"answers": [["Rust"]]}),
        )
        .await;
    assert_eq!(status, 200);
    let replied = next_event(&mut plain).await;
    assert_eq!(replied["requestID"], "reply-5", "{replied}");
    let answered = tokio::time::timeout(HANG, calling)
        .await
        .expect("the call is answered")
        .expect("the call's task")
        .expect("an answer");
    assert_eq!(answered.status(), 200);
}

/// A buffer the test's log lines go to, one JSON object per line.
#[derive(Clone, Default)]
struct LogLines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("unpoisoned").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogLines {
    /// Lines in the server's own JSON format (as an embedder sets it up), at `info`, from
    /// this thread until the guard drops: a current-thread test runtime's every task.
    fn captured() -> (Self, tracing::subscriber::DefaultGuard) {
        let logs = Self::default();
        let writer = logs.clone();
        let guard = tracing::subscriber::set_default(
            tracing_subscriber::fmt()
                .event_format(askbus_server::LogLines::json())
                .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
                .with_env_filter("info")
                .with_writer(move || writer.clone())
                .finish(),
        );
        (logs, guard)
    }

    fn parsed(&self) -> Vec<Value> {
        let bytes = self.0.lock().expect("unpoisoned").clone();
        String::from_utf8(bytes)
            .expect("UTF-8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }
}

/// Every write is timed, labelled by its backend and operation, from the first ask on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_writes_are_timed_by_backend_and_operation() {
    let dir = tempfile::tempdir().expect("a directory");
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let served = serve(&["--store", &store]).await;
    let (status, asked) = served.ask("ask-1", "timed").await;
    assert_eq!(status, 200, "{asked}");
    let text = served
        .metric_until(
            r#"askbus_store_write_duration_seconds_count{backend="sqlite",operation="insert"}"#,
            |count| count == 1.0,
        )
        .await;
    // The bus's record of `question.asked` is not awaited by anyone, and counted all the same.
    served
        .metric_until(
            r#"askbus_store_write_duration_seconds_count{backend="sqlite",operation="append"}"#,
            |count| count >= 1.0,
        )
        .await;
    assert!(
        !text.contains("askbus_store_write_failures_total{"),
        "{text}"
    );

    let off = serve(&["--store", &format!("{store}-off"), "--no-metrics"]).await;
    assert_eq!(off.ask("ask-2", "timed").await.0, 200);
    assert_eq!(off.get("/metrics").await.0, 404);
}

/// A client that leaves before its answer (a long poll longer than its own timeout) still
/// gets its access line, status 499, so the log shows every request that came in.
#[tokio::test(flavor = "current_thread")]
async fn a_request_whose_client_left_is_logged_as_499() {
    let (logs, _subscriber) = LogLines::captured();
    let served = serve(&["--store", "memory"]).await;
    let (status, asked) = served.ask("ask-1", "left").await;
    assert_eq!(status, 200, "{asked}");
    // As in the test above: sites another thread registered meanwhile are asked again.
    tracing::callsite::rebuild_interest_cache();
    let id = asked["id"].as_str().expect("an id");
    let gave_up = served
        .http
        .get(served.url(&format!("/question/{id}/wait?timeout=30")))
        .header("x-request-id", "wait-2")
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(gave_up.is_err_and(|error| error.is_timeout()));
    let mut polls = 0;
    let line = loop {
        let lines = logs.parsed();
        if let Some(line) = lines
            .into_iter()
            .find(|line| line["span"]["id"] == "wait-2")
        {
            break line;
        }
        polls += 1;
        assert!(polls < 200, "no line of the request whose client left");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(line["target"], "askbus::access", "{line}");
    assert_eq!(line["fields"]["status"], 499, "{line}");
    assert_eq!(line["fields"]["route"], "/question/{id}/wait", "{line}");
}

/// A Redis cut off (its process killed): the writes that fail are counted, `/ready` says
/// 503, and every log line of the request that met the failure names its request id.
#[tokio::test(flavor = "current_thread")]
async fn a_store_cut_off_counts_failed_writes_and_is_not_ready() {
    // A current-thread runtime: every task the server spawns logs to this thread's
    // subscriber.
    let (logs, _subscriber) = LogLines::captured();
    let mut redis = PrivateRedis::start().await;
    let served = serve(&["--store", &redis.url()]).await;
    assert_eq!(served.ask("ask-1", "cut").await.0, 200);
    // A log site another test's thread registered while this subscriber was being set
    // keeps the interest it computed without it (tracing caches interest per site; with
    // only these tests running, the access line was never seen): ask every site again,
    // now that a request has registered the server's.
    tracing::callsite::rebuild_interest_cache();
    let (status, ready) = served.get("/ready").await;
    assert_eq!(status, 200, "{ready}");

    redis.kill();
    let (status, refused) = served.ask("ask-2", "cut").await;
    assert_eq!(status, 503, "{refused}");
    served
        .metric_until(
            r#"askbus_store_write_failures_total{backend="redis",operation="insert"}"#,
            |failures| failures >= 1.0,
        )
        .await;
    let (status, not_ready) = served.get("/ready").await;
    assert_eq!(status, 503, "{not_ready}");

    let lines = logs.parsed();
    let of_the_request: Vec<&Value> = lines
        .iter()
        .filter(|line| line["span"]["id"] == "ask-2")
        .collect();
    assert!(
        of_the_request
            .iter()
            .any(|line| line["target"] != "askbus::access"),
        "the failure's line names the request: {lines:#?}"
    );
    assert!(
        of_the_request
            .iter()
            .any(|line| line["target"] == "askbus::access" && line["fields"]["status"] == 503),
        "{lines:#?}"
    );
    // What the request logged names it, and nothing else does.
    for line in &lines {
        let text = line.to_string();
        if text.contains("ask-2") {
            assert_eq!(line["span"]["id"], "ask-2", "{line}");
        }
    }
}

/// `/ready` needs no token, and each check reads the store behind its writes: against a
/// Redis that stopped answering, a client sending probe after probe must not queue a read
/// each. Every probe while one is unanswered waits for that one: Redis, answering again,
/// runs one read for them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_of_a_store_that_stopped_answering_share_one_read() {
    let redis = PrivateRedis::start().await;
    let served = serve(&["--store", &redis.url()]).await;
    let (status, ready) = served.get("/ready").await;
    assert_eq!(status, 200, "{ready}");
    let reads_before = redis.calls_of("xrevrange").await;

    redis.signal("STOP");
    let probes: Vec<_> = (0..40).map(|_| served.get("/ready")).collect();
    for (status, body) in futures_util::future::join_all(probes).await {
        assert_eq!(status, 503, "{body}");
    }
    redis.signal("CONT");
    let mut answered = false;
    for _ in 0..200 {
        if served.get("/ready").await.0 == 200 {
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(answered, "ready again once Redis answers");
    // The shared check and the last one: each reads the events, and the log's head.
    let reads = redis.calls_of("xrevrange").await - reads_before;
    assert!(reads <= 6, "{reads} reads for 41 probes");
}

/// A client that posts steps to a Redis that stopped answering and hangs up on each makes
/// the server keep them queued (a write is not undone by its caller leaving), but only up
/// to `--max-queued-write-mib`: past it a write is refused at once, not queued, and the
/// store, answering again, takes writes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_queued_for_a_store_that_stopped_answering_are_bounded() {
    let redis = PrivateRedis::start().await;
    let served = serve(&["--store", &redis.url(), "--max-queued-write-mib", "8"]).await;
    let step = json!({"type": "text", "text": "x".repeat(60 * 1024)});
    let post_step = |client: &reqwest::Client, session: usize| {
        client
            .post(served.url(&format!("/session/flood-{session}/step")))
            .json(&step)
            .send()
    };
    let (status, body) = served.post("/session/flood-0/step", "step-0", &step).await;
    assert_eq!(status, 200, "{body}");

    redis.signal("STOP");
    // Each request hangs up after 500 ms; its write stays queued. 130 steps are about
    // 8 MiB; past them, a step a little while, until one is refused at once (where it
    // would wait for Redis): without a bound, none ever is.
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .expect("a client");
    let flood = |sessions: std::ops::Range<usize>| {
        futures_util::stream::iter(sessions)
            .map(|session| post_step(&impatient, session))
            .buffer_unordered(64)
            .collect::<Vec<_>>()
    };
    flood(1..130).await;
    let mut refused = None;
    for round in 0..20 {
        let from = 130 + round * 8;
        flood(from..from + 8).await;
        if let Ok(answer) = post_step(&impatient, 0).await {
            refused = Some((
                answer.status(),
                answer.json::<Value>().await.unwrap_or_default(),
            ));
            break;
        }
    }
    let (status, body) = refused.expect("a step refused at once once 8 MiB wait");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "store_unavailable", "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|message| message.contains("8 MiB of writes waiting")),
        "{body}"
    );

    redis.signal("CONT");
    let mut taken = false;
    for _ in 0..400 {
        if served
            .post("/session/flood-0/step", "step-again", &step)
            .await
            .0
            == 200
        {
            taken = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(taken, "writes are taken again once Redis answers");
}

/// A memory store shared by several hubs, whose change log hands a reader what it read
/// only while the gate is open: a follower that falls behind, on demand. Its head can
/// stall too: a store that takes connections and answers nothing.
struct GatedLog {
    inner: Arc<MemoryStore>,
    open: tokio::sync::watch::Sender<bool>,
    head_stalled: std::sync::atomic::AtomicBool,
}

impl ChangeLog for GatedLog {
    fn head(&self) -> BoxFuture<'_, LogPosition> {
        if self.head_stalled.load(std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(std::future::pending());
        }
        self.inner.change_log().expect("a shared store").head()
    }

    fn read_after(
        &self,
        after: LogPosition,
        limit: usize,
        wait: Duration,
    ) -> BoxFuture<'_, Vec<Change>> {
        Box::pin(async move {
            let log = self.inner.change_log().expect("a shared store");
            let changes = log.read_after(after, limit, wait).await?;
            let _ = self.open.subscribe().wait_for(|open| *open).await;
            Ok(changes)
        })
    }
}

/// [`GatedLog`]'s store: the memory store, but for its change log.
impl StoreLayer for GatedLog {
    fn inner(&self) -> &dyn Store {
        &*self.inner
    }

    fn change_log(&self) -> Option<&dyn ChangeLog> {
        Some(self)
    }
}

/// A hub over `store`, shared as one of several servers' (its follower running).
async fn shared_hub(store: Arc<dyn Store>) -> RequestHub {
    RequestHub::builder()
        .bus(Bus::new())
        .store(store)
        .shared()
        .build()
        .await
        .expect("a hub")
}

/// Asks the language question in `session` through `hub`, never timing out, and waits
/// until the store has it; the question stays pending.
async fn ask_recorded(hub: &RequestHub, session: &str) {
    let mut asked = hub
        .questions()
        .ask(session, vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .expect("asked");
    asked.recorded().await.expect("recorded");
    asked.detach();
}

/// The next event of `events`: its type and the request that caused it, if one did.
async fn typed_cause(events: &mut askbus::bus::Subscription) -> (String, Option<String>) {
    let event = tokio::time::timeout(HANG, events.next())
        .await
        .expect("an event")
        .expect("the bus")
        .expect("no lag");
    (
        event.event_type().to_owned(),
        event.request_id().map(str::to_owned),
    )
}

/// Over a shared store, a request's events are published when its changes come back
/// through the store's log, on the follower's task: on the server that served the call,
/// they name its request all the same (the ask's, then the reply's); the other server's
/// events name none (no request of its caused them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_shared_store_events_name_the_request_of_this_server_that_caused_them() {
    let memory = Arc::new(MemoryStore::new());
    let here = shared_hub(Arc::clone(&memory) as Arc<dyn Store>).await;
    let there = shared_hub(memory).await;
    let (mut seen_here, mut seen_there) = (here.bus().subscribe_all(), there.bus().subscribe_all());
    // Asking is synchronous: the ask's id is the one in scope while it registers.
    let mut asked = askbus::bus::with_request_id_now(Some("ask-7".into()), || {
        here.questions()
            .ask("shared", vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .expect("asked")
    });
    asked.recorded().await.expect("recorded");
    assert_eq!(
        typed_cause(&mut seen_here).await,
        ("question.asked".to_owned(), Some("ask-7".to_owned()))
    );
    assert_eq!(
        typed_cause(&mut seen_there).await,
        ("question.asked".to_owned(), None)
    );

    askbus::bus::with_request_id("reply-8".into(), async {
        here.questions()
            .reply(asked.id(), vec![vec!["Rust".into()]])
            .expect("a valid reply")
            .await
            .expect("durable");
    })
    .await;
    assert_eq!(
        typed_cause(&mut seen_here).await,
        ("question.replied".to_owned(), Some("reply-8".to_owned()))
    );
    assert_eq!(
        typed_cause(&mut seen_there).await,
        ("question.replied".to_owned(), None)
    );
    assert!(asked.await.is_ok());
}

/// `/ready` is 503 while this server's follower has not applied the shared store's changes
/// (within the probe's 2 s), and `askbus_follower_lag_changes` says by how many; both
/// recover once it catches up.
#[tokio::test(start_paused = true)]
async fn a_lagging_follower_is_not_ready() {
    let memory = Arc::new(MemoryStore::new());
    let (open, _) = tokio::sync::watch::channel(true);
    let gated = Arc::new(GatedLog {
        inner: Arc::clone(&memory),
        open: open.clone(),
        head_stalled: false.into(),
    });
    let lagging = shared_hub(Arc::clone(&gated) as Arc<dyn Store>).await;
    let other = shared_hub(memory).await;
    let shutdown = CancellationToken::new();
    let router = askbus_http::router(
        lagging,
        askbus_http::HttpConfig::default(),
        shutdown.clone(),
    );
    assert_eq!(get(&router, "/ready").await.0, 200);

    open.send_replace(false);
    ask_recorded(&other, "elsewhere").await;
    let (status, body) = get(&router, "/ready").await;
    assert_eq!(status, 503, "{body}");
    let metrics = get(&router, "/metrics").await.1;
    assert_eq!(
        value(&metrics, "askbus_follower_lag_changes"),
        Some(1.0),
        "{metrics}"
    );

    // A store that stops answering holds no scrape past a scraper's patience (the clock is
    // paused: the limit is the server's, not this machine's speed): the lag keeps its last
    // figure, and every other series is served.
    let stall = |stalled| {
        gated
            .head_stalled
            .store(stalled, std::sync::atomic::Ordering::SeqCst);
    };
    stall(true);
    let started = tokio::time::Instant::now();
    let (status, metrics) = get(&router, "/metrics").await;
    assert_eq!(status, 200, "{metrics}");
    assert!(
        started.elapsed() <= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        value(&metrics, "askbus_follower_lag_changes"),
        Some(1.0),
        "{metrics}"
    );
    assert!(metrics.contains("askbus_pending_requests"), "{metrics}");
    stall(false);

    open.send_replace(true);
    let (status, body) = get(&router, "/ready").await;
    assert_eq!(status, 200, "{body}");
    let metrics = get(&router, "/metrics").await.1;
    assert_eq!(
        value(&metrics, "askbus_follower_lag_changes"),
        Some(0.0),
        "{metrics}"
    );
    for nothing in [
        "askbus_follower_resyncs_total",
        "askbus_follower_skipped_changes_total",
    ] {
        assert_eq!(value(&metrics, nothing), Some(0.0), "{nothing}: {metrics}");
    }
    shutdown.cancel();
}

/// A shared memory store whose change log, once told to, answers one read as trimmed
/// (the follower fell behind its retention, or the store lost its data), then holds the
/// head the follower's resync reads first until released: a resync under way for as long
/// as a test wants. Other reads of the head pass.
struct ResyncingLog {
    inner: Arc<MemoryStore>,
    /// The next read answers "trimmed".
    trim: std::sync::atomic::AtomicBool,
    /// The next read of the head is the resync's, and waits for `release`.
    resyncing: std::sync::atomic::AtomicBool,
    /// The resync is waiting.
    held: std::sync::atomic::AtomicBool,
    release: tokio::sync::watch::Sender<bool>,
}

impl ChangeLog for ResyncingLog {
    fn head(&self) -> BoxFuture<'_, LogPosition> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            if self.resyncing.swap(false, SeqCst) {
                self.held.store(true, SeqCst);
                let _ = self
                    .release
                    .subscribe()
                    .wait_for(|released| *released)
                    .await;
            }
            self.inner
                .change_log()
                .expect("a shared store")
                .head()
                .await
        })
    }

    fn read_after(
        &self,
        after: LogPosition,
        limit: usize,
        wait: Duration,
    ) -> BoxFuture<'_, Vec<Change>> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            if self.trim.swap(false, SeqCst) {
                self.resyncing.store(true, SeqCst);
                return Err(StoreError::LogTrimmed { after });
            }
            let log = self.inner.change_log().expect("a shared store");
            log.read_after(after, limit, wait).await
        })
    }
}

/// [`ResyncingLog`]'s store: the memory store, but for its change log.
impl StoreLayer for ResyncingLog {
    fn inner(&self) -> &dyn Store {
        &*self.inner
    }

    fn change_log(&self) -> Option<&dyn ChangeLog> {
        Some(self)
    }
}

/// While its follower resyncs after a gap in the log, a server is not ready (it has not
/// applied what the store holds), even when the store rewound below what it had applied;
/// once the resync is done it is, and `askbus_follower_resyncs_total` counts it.
#[tokio::test(start_paused = true)]
async fn a_server_is_not_ready_while_its_follower_resyncs() {
    use std::sync::atomic::Ordering::SeqCst;
    let memory = Arc::new(MemoryStore::new());
    let (release, _) = tokio::sync::watch::channel(false);
    let log = Arc::new(ResyncingLog {
        inner: Arc::clone(&memory),
        trim: false.into(),
        resyncing: false.into(),
        held: false.into(),
        release: release.clone(),
    });
    let hub = shared_hub(Arc::clone(&log) as Arc<dyn Store>).await;
    ask_recorded(&hub, "s").await;
    let shutdown = CancellationToken::new();
    let router = askbus_http::router(hub, askbus_http::HttpConfig::default(), shutdown.clone());
    assert_eq!(get(&router, "/ready").await.0, 200);

    log.trim.store(true, SeqCst);
    while !log.held.load(SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, body) = get(&router, "/ready").await;
    assert_eq!(status, 503, "not ready while resyncing: {body}");

    release.send_replace(true);
    let (status, body) = get(&router, "/ready").await;
    assert_eq!(status, 200, "{body}");
    let metrics = get(&router, "/metrics").await.1;
    assert_eq!(
        value(&metrics, "askbus_follower_resyncs_total"),
        Some(1.0),
        "{metrics}"
    );
    shutdown.cancel();
}

/// Every series `/metrics` can serve (a shared store's, the webhooks' and the store
/// writes' included) is listed in README's table, so the documentation cannot fall behind.
#[tokio::test]
async fn every_series_is_in_the_readme() {
    let readme = include_str!("../README.md");
    let writes = Arc::new(askbus_http::StoreWrites::new());
    let store = MeteredStore::new(Arc::new(MemoryStore::new()), "memory", writes.clone());
    let hub = shared_hub(Arc::new(store)).await;
    ask_recorded(&hub, "listed").await;
    let config = askbus_http::HttpConfig {
        store_writes: Some(writes),
        webhooks: Some(Arc::new(askbus_notify::DeliveryStats::default())),
        ..askbus_http::HttpConfig::default()
    };
    let shutdown = CancellationToken::new();
    let router = askbus_http::router(hub, config, shutdown.clone());
    let metrics = get(&router, "/metrics").await.1;
    let families: Vec<&str> = metrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE ")?.split(' ').next())
        .collect();
    for expected in [
        "askbus_store_write_duration_seconds",
        "askbus_follower_lag_changes",
        "askbus_follower_resyncs",
        "askbus_follower_skipped_changes",
    ] {
        assert!(families.contains(&expected), "{expected} in {families:?}");
    }
    for family in families {
        assert!(
            readme.contains(&format!("`{family}")),
            "{family} is not in README.md"
        );
    }
    shutdown.cancel();
}
