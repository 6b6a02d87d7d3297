//! Helpers shared by the tests: sample questions, services, event bookkeeping, and a
//! private corner of the local Redis.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::sync::Arc;

use askbus::bus::{Bus, BusConfig, Envelope, Lagged};
use askbus::question::{
    OutcomeKind, QuestionAsked, QuestionCancelled, QuestionId, QuestionInfo, QuestionOption,
    QuestionRejected, QuestionReplied, QuestionService, QuestionTimedOut,
};
use askbus_store::RedisStore;
use futures_util::{FutureExt, Stream, StreamExt};

/// A single-choice question that also takes custom text.
pub(crate) fn language() -> QuestionInfo {
    QuestionInfo::new(
        "Which language?",
        "Language",
        [
            QuestionOption::new("Rust", "fast"),
            QuestionOption::new("Go", "simple"),
        ],
    )
}

/// Seed 001's `approval_request` content block, copied verbatim from its "Ví Dụ Đầy Đủ"
/// (001_80c8035cdf420067.txt, "Block approval_request"): `actions`, and `review_configs`
/// of `{require_approval, timeout}`.
pub(crate) fn seed_001_approval_request_block() -> serde_json::Value {
    serde_json::json!({
        "type": "approval_request",
        "approval_key": "abc-123_1",
        "actions": [
            {
                "name": "execute_trade",
                "args": {
                    "symbol": "VNM",
                    "quantity": 100,
                    "side": "buy",
                    "price": 82000
                },
                "tool_use_id": "toolu_01XyzAbc"
            }
        ],
        "review_configs": [
            {
                "require_approval": true,
                "timeout": 300
            }
        ]
    })
}

/// Seed 000's `ask_user_question` questions, copied verbatim from its `content_block_delta`
/// (`action_requests[0].args.questions`): `multiSelect`, and the free-text "Khác" option
/// with `"input": true`.
pub(crate) fn seed_000_questions() -> serde_json::Value {
    serde_json::json!([
        {
            "question": "Thảo muốn tập trung vào mục tiêu nào?",
            "header": "Mục tiêu chính",
            "multiSelect": false,
            "options": [
                {
                    "label": "Cổ tức bền vững (Recommended)",
                    "description": "Tập trung cổ phiếu trả cổ tức đều"
                },
                {
                    "label": "Tăng trưởng dài hạn",
                    "description": "Lợi nhuận từ giá tăng trưởng"
                },
                {
                    "label": "Khác",
                    "description": "Nhập giá trị tùy chỉnh",
                    "input": true
                }
            ]
        },
        {
            "question": "Thời gian nắm giữ dự kiến?",
            "header": "Kỳ hạn đầu tư",
            "multiSelect": false,
            "options": [
                {
                    "label": "Trên 3 năm",
                    "description": "Tích lũy dài hạn"
                },
                {
                    "label": "1-3 năm",
                    "description": "Theo chu kỳ ngành"
                },
                {
                    "label": "Khác",
                    "description": "Nhập giá trị tùy chỉnh",
                    "input": true
                }
            ]
        }
    ])
}

/// A multi-choice question restricted to its options; one label contains `", "`.
pub(crate) fn targets() -> QuestionInfo {
    QuestionInfo::new(
        "Which targets?",
        "Targets",
        [
            QuestionOption::new("Linux", ""),
            QuestionOption::new("macOS", ""),
            QuestionOption::new("BSD, Solaris", "the other Unixes"),
        ],
    )
    .multiple()
    .options_only()
}

/// A bus whose subscribers and history hold every event a test produces, so a missing
/// event is a bug, not a lag.
pub(crate) fn roomy_bus() -> Bus {
    Bus::with_config(BusConfig {
        history: 1 << 16,
        subscriber_capacity: NonZeroUsize::new(1 << 16).expect("non-zero"),
        ..BusConfig::default()
    })
}

/// A question service with the default configuration on a [`roomy_bus`].
pub(crate) fn service() -> QuestionService {
    QuestionService::new(roomy_bus())
}

/// Every item the stream can yield right now, without waiting.
pub(crate) fn ready_items<S: Stream + Unpin>(stream: &mut S) -> Vec<S::Item> {
    let mut items = Vec::new();
    while let Some(Some(item)) = poll_once(stream.next()) {
        items.push(item);
    }
    items
}

/// Polls `future` once, outside Tokio's cooperative budget: a test that polls thousands of
/// ready futures in one go must not see `Pending` because the task used up its budget.
pub(crate) fn poll_once<F: Future>(future: F) -> Option<F::Output> {
    tokio::task::unconstrained(future).now_or_never()
}

/// Every envelope the subscription can yield right now; panics on lag.
pub(crate) fn ready_envelopes<S>(subscription: &mut S) -> Vec<Envelope>
where
    S: Stream<Item = Result<Envelope, Lagged>> + Unpin,
{
    ready_items(subscription)
        .into_iter()
        .map(|item| item.expect("the test bus is roomy enough never to lag"))
        .collect()
}

/// What a question event says about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuestionEvent {
    /// `question.asked`.
    Asked(QuestionId),
    /// One of the terminal events.
    Terminal(QuestionId, OutcomeKind),
}

/// The question event an envelope carries, if it carries one.
pub(crate) fn question_event(envelope: &Envelope) -> Option<QuestionEvent> {
    if let Some(asked) = envelope.downcast_ref::<QuestionAsked>() {
        return Some(QuestionEvent::Asked(asked.request.id));
    }
    let terminal = if let Some(event) = envelope.downcast_ref::<QuestionReplied>() {
        (event.request_id, OutcomeKind::Replied)
    } else if let Some(event) = envelope.downcast_ref::<QuestionRejected>() {
        (event.request_id, OutcomeKind::Rejected)
    } else if let Some(event) = envelope.downcast_ref::<QuestionTimedOut>() {
        (event.request_id, OutcomeKind::TimedOut)
    } else if let Some(event) = envelope.downcast_ref::<QuestionCancelled>() {
        (event.request_id, OutcomeKind::Cancelled)
    } else {
        return None;
    };
    Some(QuestionEvent::Terminal(terminal.0, terminal.1))
}

/// Checks that every request in `envelopes` has its `question.asked` first and at most one
/// terminal event after it; returns each request's terminal outcome (`None`: still pending).
pub(crate) fn outcomes_in_stream(
    envelopes: &[Envelope],
) -> BTreeMap<QuestionId, Option<OutcomeKind>> {
    let mut outcomes = BTreeMap::new();
    for event in envelopes.iter().filter_map(question_event) {
        match event {
            QuestionEvent::Asked(id) => {
                assert!(
                    outcomes.insert(id, None).is_none(),
                    "{id} was announced twice"
                );
            }
            QuestionEvent::Terminal(id, kind) => {
                let outcome = outcomes
                    .get_mut(&id)
                    .unwrap_or_else(|| panic!("{id} {kind} before question.asked"));
                assert_eq!(*outcome, None, "{id}: a second terminal event ({kind})");
                *outcome = Some(kind);
            }
        }
    }
    outcomes
}

/// `GET path` of `router`, in process: the status and the body as text.
pub(crate) async fn router_get(router: &axum::Router, path: &str) -> (u16, String) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let request = axum::http::Request::get(path)
        .body(axum::body::Body::empty())
        .expect("a request");
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (status, String::from_utf8(body.to_vec()).expect("UTF-8"))
}

/// Lets spawned tasks (the service's timer driver) run before the test looks.
pub(crate) async fn settle() {
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
}

/// Lets spawned tasks run until `done` holds, giving up after a bounded number of turns
/// (the caller's assertion then reports what is missing, rather than the test hanging).
pub(crate) async fn settle_until(done: impl Fn() -> bool) {
    for _ in 0..1024 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
}

/// Answers as the API takes them, from string slices.
pub(crate) fn answers(answers: &[&[&str]]) -> Vec<Vec<String>> {
    answers
        .iter()
        .map(|answer| answer.iter().map(|choice| (*choice).to_owned()).collect())
        .collect()
}

/// Where the Redis tests expect a server.
pub(crate) const REDIS_URL: &str = "redis://127.0.0.1:6379";

/// A fresh key prefix on the local Redis, deleted when the test ends.
pub(crate) struct TestRedis {
    /// Every key of this test starts with it.
    pub(crate) prefix: Arc<str>,
    /// For cleaning up.
    client: redis::Client,
}

impl TestRedis {
    /// Fails the test, saying how to get Redis, when none is listening on 127.0.0.1:6379.
    pub(crate) async fn new() -> Self {
        let client = redis::Client::open(REDIS_URL).unwrap();
        if let Err(error) = client.get_multiplexed_async_connection().await {
            panic!(
                "these tests need a Redis server on 127.0.0.1:6379 ({error}). Install and start \
                 it: `apt-get install -y redis-server && redis-server --daemonize yes` (or \
                 `docker run -p 6379:6379 redis`); `cargo xtask ci` does this itself"
            );
        }
        let unique = ulid::Ulid::generate();
        Self {
            prefix: format!("askbus-test:{unique}").into(),
            client,
        }
    }

    /// A store on this test's keys, with connections of its own: another instance.
    pub(crate) async fn open(&self) -> RedisStore {
        RedisStore::open(REDIS_URL, &self.prefix).await.unwrap()
    }

    /// The value of `key`, as text.
    pub(crate) fn get(&self, key: &str) -> String {
        let mut connection = self.client.get_connection().unwrap();
        redis::cmd("GET").arg(key).query(&mut connection).unwrap()
    }

    /// Runs a query on the test's Redis; its answer.
    pub(crate) fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> T {
        let mut connection = self.client.get_connection().unwrap();
        command.query(&mut connection).unwrap()
    }

    /// Runs a command on the test's Redis.
    pub(crate) fn command(&self, command: &redis::Cmd) {
        let mut connection = self.client.get_connection().unwrap();
        let () = command.query(&mut connection).unwrap();
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        // Best effort, synchronously: the test's runtime may be shutting down.
        if let Ok(mut connection) = self.client.get_connection() {
            let pattern = format!("{}:*", self.prefix);
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(pattern)
                .query(&mut connection)
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut connection);
            }
        }
    }
}

/// Runs `attempt` until it succeeds, 25 ms apart, for up to 5 s (what waits on a store to
/// reconnect); answers the success, or fails the test with the last error.
pub(crate) async fn until_ok<T, E: std::fmt::Debug, F: Future<Output = Result<T, E>>>(
    mut attempt: impl FnMut() -> F,
) -> T {
    let mut last = None;
    for _ in 0..200 {
        match attempt().await {
            Ok(done) => return done,
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("still failing after 5 s: {last:?}");
}

/// A `redis-server` of one test's own, on a free loopback port, which the test may kill and
/// start again (the shared one on 6379 must keep running for the other tests). It keeps an
/// append-only file with `appendfsync always` in a temporary directory, so what it
/// acknowledged survives a kill, as a Redis set up for durability does.
pub(crate) struct PrivateRedis {
    /// Its port on 127.0.0.1.
    port: u16,
    /// Its data directory.
    dir: tempfile::TempDir,
    /// The running server, if it runs.
    process: Option<std::process::Child>,
}

impl PrivateRedis {
    /// Starts one; fails the test, saying how to get it, without a `redis-server` binary.
    pub(crate) async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let mut redis = Self {
            port,
            dir: tempfile::tempdir().unwrap(),
            process: None,
        };
        redis.restart().await;
        redis
    }

    /// Its URL.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A store on it, with connections of its own: another instance.
    pub(crate) async fn open(&self) -> RedisStore {
        RedisStore::open(&self.url(), "t").await.unwrap()
    }

    /// Kills it with SIGKILL, as a crash would.
    pub(crate) fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill().unwrap();
            process.wait().unwrap();
        }
    }

    /// Stops it answering (SIGSTOP): its connections stay open and nothing comes back,
    /// as from a Redis paused or behind a network black hole; `signal("CONT")` resumes it.
    pub(crate) fn signal(&self, signal: &str) {
        let process = self.process.as_ref().expect("running");
        let sent = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(process.id().to_string())
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill -{signal}");
    }

    /// How many times it ran `command` (lower case), by `INFO commandstats`.
    pub(crate) async fn calls_of(&self, command: &str) -> u64 {
        let client = redis::Client::open(self.url()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut connection)
            .await
            .unwrap();
        let prefix = format!("cmdstat_{command}:calls=");
        stats
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |calls| calls.parse().unwrap())
    }

    /// Starts it (again), on the same port and data, and waits until it answers.
    pub(crate) async fn restart(&mut self) {
        self.kill();
        let process = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(self.dir.path())
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "this test starts a redis-server of its own ({error}): install it with \
                     `apt-get install -y redis-server`; `cargo xtask ci` does"
                )
            });
        self.process = Some(process);
        let client = redis::Client::open(self.url()).unwrap();
        for _ in 0..200 {
            if let Ok(mut connection) = client.get_multiplexed_async_connection().await
                && redis::cmd("PING")
                    .query_async::<String>(&mut connection)
                    .await
                    .is_ok()
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!(
            "the test's redis-server on port {} did not start",
            self.port
        );
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.kill();
    }
}
