//! The HTTP API (`askbus-http`) through its router: in process with `oneshot`, and over
//! real TCP for the end-to-end flow.

// Approvals: list, get by id or key, reply, server mode, long poll, errors.
mod approvals;
// The audit log: entries unsealed then sealed, paging, who may read it.
mod audit;
// Auth: missing and unknown tokens, session-scoped tokens.
mod auth;
// End to end over TCP: an agent asks, a client lists and replies, SSE shows it; shutdown.
mod e2e;
// Every error: status and JSON body.
mod errors;
// SSE framing, replay after Last-Event-ID, resync, session filter, heartbeat, shutdown.
mod events;
// Follow-ups: their fields on create and in views, 422s, reminders and escalations on the
// event stream, a default answer read back as a fallback.
mod follow_up;
// OpenCode's permissions: `always` grants (made, applied in one place, bounded, revoked,
// audited), and the companion frames only OpenCode clients' streams carry.
mod grants;
// `GET /metrics`: admins only; counters, gauges and histograms match what happened.
mod metrics;
// The OpenAPI document: an insta snapshot, and every operation probed for what its layers
// and body reader answer.
mod openapi;
// What OpenCode's TUI awaits before it draws: empty providers, agents, config; any session.
mod opencode_tui;
// What a human needs under a flood: paged lists, counts per session, rejecting a session.
mod pending;
// Answer links: single use, unforgeable, expiring, acting as their reviewer.
mod links;
// A request's locale: kept wherever it is read; refused when it is no language tag.
mod locale;
// Quotas: 429 for creates past a pending limit, 503 and 429 for streams past their slots.
mod quotas;
// Roles: agents never decide, reviewers never ask, nobody decides what they asked; who
// asked and who decided in views, events and history.
mod roles;
// Question, session and health routes on the happy path.
mod routes;
// The site guard: foreign Hosts, cross-site requests, non-JSON bodies.
mod site;
// The seeds' own question and reply JSON, verbatim, beside askbus's shapes.
mod seeds;
// Session interrupt state and resume (seed 002).
mod sessions;
// The seeds' stream and history per session, and steps posted by agents.
mod transcript;

use std::time::Duration;

use askbus::bus::{Bus, BusConfig};
use askbus::question::{QuestionInfo, QuestionOption, QuestionService, RequestHub, Timeout};
use askbus_http::HttpConfig;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use futures_util::StreamExt;
use http_body_util::BodyExt;
use serde_json::Value;
use sse_stream::{Sse, SseStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// A router over a fresh service, with its service and shutdown token.
#[derive(Clone)]
pub(crate) struct TestApp {
    /// Questions and approvals behind the router.
    pub(crate) hub: RequestHub,
    /// The hub's questions.
    pub(crate) questions: QuestionService,
    pub(crate) router: Router,
    pub(crate) shutdown: CancellationToken,
}

impl TestApp {
    /// Default settings, no auth.
    pub(crate) fn new() -> Self {
        Self::with_config(HttpConfig::default())
    }

    pub(crate) fn with_config(config: HttpConfig) -> Self {
        Self::with_bus(Bus::new(), config)
    }

    pub(crate) fn with_bus(bus: Bus, config: HttpConfig) -> Self {
        Self::with_hub(RequestHub::new(bus), config)
    }

    /// A router over `hub` (one with a store, or with limits, say).
    pub(crate) fn with_hub(hub: RequestHub, config: HttpConfig) -> Self {
        let questions = hub.questions().clone();
        let shutdown = CancellationToken::new();
        let router = askbus_http::router(hub.clone(), config, shutdown.clone());
        Self {
            hub,
            questions,
            router,
            shutdown,
        }
    }

    /// A hub recording in a fresh memory store (each session's history keeps about its
    /// newest `history_limit` records) on a bus with a small history.
    pub(crate) async fn with_store(bus_history: usize, history_limit: usize) -> Self {
        let bus = Bus::with_config(BusConfig {
            history: bus_history,
            subscriber_capacity: std::num::NonZeroUsize::MIN,
            ..BusConfig::default()
        });
        let store = askbus_store::MemoryStore::new().with_history_limit(history_limit);
        let hub = RequestHub::builder()
            .bus(bus)
            .store(std::sync::Arc::new(store))
            .build()
            .await
            .expect("a memory store reads");
        Self::with_hub(hub, HttpConfig::default())
    }

    /// A bus with a small history, to reach "too old" cursors quickly.
    pub(crate) fn with_history(history: usize, subscriber_capacity: usize) -> Self {
        let config = BusConfig {
            history,
            subscriber_capacity: std::num::NonZeroUsize::new(subscriber_capacity)
                .unwrap_or(std::num::NonZeroUsize::MIN),
            ..BusConfig::default()
        };
        Self::with_bus(Bus::with_config(config), HttpConfig::default())
    }

    /// Sends `request`, returns the status and the body parsed as JSON.
    pub(crate) async fn call(&self, request: Request<Body>) -> (StatusCode, Value) {
        let (status, _, body) = self.call_with_headers(request).await;
        (status, body)
    }

    /// Sends `request`, returns the status, the headers and the body parsed as JSON.
    pub(crate) async fn call_with_headers(
        &self,
        request: Request<Body>,
    ) -> (StatusCode, HeaderMap, Value) {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router is infallible");
        let status = response.status();
        let headers = response.headers().clone();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| value.to_str().unwrap_or_default().to_owned());
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let json: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            panic!(
                "{status}: body is not JSON ({content_type:?}): {:?}",
                String::from_utf8_lossy(&bytes)
            )
        });
        (status, headers, json)
    }

    /// Opens an event stream at `uri` (with `headers`), returns its frames.
    pub(crate) async fn events(&self, uri: &str, headers: &[(&str, &str)]) -> Frames {
        let mut request = Request::get(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = self
            .router
            .clone()
            .oneshot(request.body(Body::empty()).expect("request"))
            .await
            .expect("the router is infallible");
        assert_eq!(response.status(), StatusCode::OK, "opening {uri}");
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream",
            "{uri}"
        );
        Frames {
            stream: SseStream::new(response.into_body()).boxed(),
        }
    }

    /// Submits a detached single-question request in `session`; returns its id text.
    pub(crate) fn ask(&self, session: &str) -> String {
        self.questions
            .ask(session, vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .expect("valid question")
            .detach()
            .id
            .to_string()
    }
}

/// An open SSE stream, decoded by `sse-stream`.
pub(crate) struct Frames {
    stream: futures_util::stream::BoxStream<'static, Result<Sse, sse_stream::Error>>,
}

/// One decoded frame: its `id:` line and its `data:` JSON.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub(crate) id: Option<String>,
    pub(crate) data: Value,
}

impl Frame {
    pub(crate) fn kind(&self) -> &str {
        self.data["type"].as_str().unwrap_or_default()
    }
}

impl Frames {
    /// The next frame with data, failing after 30 s (test time: heartbeats come every 10 s).
    pub(crate) async fn next(&mut self) -> Frame {
        self.try_next()
            .await
            .expect("the stream ended while a frame was expected")
    }

    /// The next frame with data, or `None` if the stream ended.
    pub(crate) async fn try_next(&mut self) -> Option<Frame> {
        loop {
            let item = tokio::time::timeout(Duration::from_secs(30), self.stream.next())
                .await
                .expect("no SSE frame within 30 s")?;
            let sse = item.expect("well-formed SSE");
            assert!(
                sse.event.is_none(),
                "frames carry no `event:` line: {sse:?}"
            );
            if let Some(data) = sse.data {
                let data = serde_json::from_str(&data).expect("frame data is JSON");
                return Some(Frame { id: sse.id, data });
            }
        }
    }
}

/// A single-choice question that takes custom answers.
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

/// A multi-choice question limited to its options.
pub(crate) fn targets() -> QuestionInfo {
    QuestionInfo::new(
        "Which targets?",
        "Targets",
        [
            QuestionOption::new("Linux", ""),
            QuestionOption::new("macOS", ""),
        ],
    )
    .multiple()
    .options_only()
}

/// A request with a JSON body.
pub(crate) fn post_json(uri: &str, body: &Value) -> Request<Body> {
    Request::post(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

/// `method uri` with a bearer `token` (`None`: no `Authorization` header) and a JSON body
/// if given.
pub(crate) fn request<'a>(
    method: &str,
    uri: &str,
    token: impl Into<Option<&'a str>>,
    body: Option<Value>,
) -> Request<Body> {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token.into() {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    match body {
        Some(body) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    }
    .expect("request")
}

/// A bodiless GET.
pub(crate) fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).expect("request")
}
