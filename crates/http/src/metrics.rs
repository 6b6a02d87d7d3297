//! `GET /metrics`: the server's figures in the OpenMetrics text format, for Prometheus.
//!
//! Why it is built this way:
//!
//! - **One registry per router, no global recorder** (`prometheus-client`): two routers in
//!   one process (the tests run hundreds) count apart, and nothing outside the router can
//!   add a series to what it serves.
//! - **What the hub already knows is read at scrape**, never kept in step by hand: the
//!   pending requests (`RequestHub`'s counts), the taken stream slots ([`StreamSlots`]),
//!   the follower's lag behind a shared store. A scrape costs two lock-and-len reads and,
//!   over a shared store, one read of the change log's head.
//! - **What happened is counted from the bus**, as each event is published (the metrics are
//!   an [`Observer`] of the bus, called under its publish lock): the requests asked, their
//!   outcomes and how long a human took (now, less the time in the request id's ULID), the
//!   votes of a quorum. So every way a request ends (a reply over HTTP or MCP, the guard, a
//!   timer, a session cancel) is counted once, where it is announced, none missed however
//!   busy the bus, and a request path pays a few counter increments beside the publish it
//!   already makes. A task subscribed to the bus did this before; woken for every event,
//!   it was half of what metrics cost a reply, and could fall behind. Over
//!   a shared store every instance's bus hears every request, so each instance counts
//!   them all: sum one instance's counters, not the instances'. Events published before
//!   the router was built (requests restored from a store) were not heard: their outcomes
//!   count, their `asked` does not.
//! - **Store writes are timed where every write passes**: the server wraps its store in a
//!   [`MeteredStore`](askbus_store::MeteredStore) telling a [`StoreWrites`] (given in
//!   [`HttpConfig::store_writes`](crate::HttpConfig)), whose series this registry serves.
//! - **HTTP requests are timed by one layer over every route** ([`TimeRequests`]),
//!   labelled by the route's template (`/question/{id}/reply`), never the raw path, so
//!   the series stay as few as the routes.
//!
//! Who may read it: an admin with a token for every session (without tokens, the local
//! caller, who is an admin). Turned off ([`HttpConfig::metrics`](crate::HttpConfig)), the
//! route answers 404 and nothing is counted.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use askbus_bus::{Envelope, Event, Id, IdKind, Observer};
use askbus_notify::DeliveryStats;
use askbus_question::{
    ApprovalAsked, ApprovalCancelled, ApprovalDecided, ApprovalEscalated, ApprovalGrantRevoked,
    ApprovalGranted, ApprovalReminded, ApprovalReplied, ApprovalTimedOut, QuestionAsked,
    QuestionCancelled, QuestionEscalated, QuestionRejected, QuestionReminded, QuestionReplied,
    QuestionTimedOut, RequestHub, Role,
};
use axum::extract::{MatchedPath, State};
use axum::http::{Method, Request, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tower::{Layer, Service};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};

/// The content type of the OpenMetrics text format, which `prometheus-client` writes.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds of the HTTP request histogram, in seconds: replies take well under a
/// millisecond, a long poll up to its wait.
const HTTP_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 120.0,
];

/// Upper bounds of the ask-to-outcome histogram, in seconds: a human answers in seconds to
/// hours; a timeout may be days away.
const HUMAN_BUCKETS: [f64; 14] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1_800.0, 3_600.0, 7_200.0, 21_600.0, 86_400.0,
    604_800.0,
];

/// Upper bounds of the store write histogram, in seconds: SQLite's group commit waits for
/// an fsync (about a millisecond), Redis for a round trip; a store that does not answer
/// fails after seconds.
const STORE_BUCKETS: [f64; 15] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
    30.0,
];

/// The request kinds, as labelled.
const QUESTION: &str = "question";
const APPROVAL: &str = "approval";

/// Every series the router serves.
pub(crate) struct Metrics {
    /// What `GET /metrics` encodes; holds a handle on every metric below.
    registry: Registry,
    /// `askbus_pending_requests{kind}`, set at scrape.
    pending: Family<KindLabel, Gauge>,
    /// `askbus_requests_asked_total{kind}`.
    asked: Family<KindLabel, Counter>,
    /// `askbus_outcomes_total{kind, outcome}`.
    outcomes: Family<OutcomeLabels, Counter>,
    /// `askbus_ask_to_outcome_seconds{kind, outcome}`.
    ask_to_outcome: Family<OutcomeLabels, Histogram>,
    /// `askbus_votes_total`.
    votes: Counter,
    /// `askbus_http_request_duration_seconds{method, route, status}`.
    http: Family<HttpLabels, Histogram>,
    /// `askbus_event_streams_open`, set at scrape.
    streams_open: Gauge,
    /// `askbus_event_stream_lagged_total`.
    stream_lagged: Counter,
    /// `askbus_event_stream_resyncs_total{reason}`.
    stream_resyncs: Family<ReasonLabel, Counter>,
    /// `askbus_follow_ups_total{kind,step}`: reminders and escalations fired.
    follow_ups: Family<FollowUpLabels, Counter>,
    /// `askbus_grants_total{step}`: standing grants made, used and revoked.
    grants: Family<GrantLabel, Counter>,
    /// `askbus_follower_lag_changes`, set at scrape; only over a shared store.
    follower_lag: Option<Gauge>,
    /// `askbus_webhook_pending`, set at scrape; only when the server delivers webhooks.
    webhook_pending: Option<Gauge>,
}

/// The store's write timings and failures, by backend and operation:
/// `askbus_store_write_duration_seconds` and `askbus_store_write_failures_total`. Made by
/// the server before it opens its store (which a
/// [`MeteredStore`](askbus_store::MeteredStore) then tells of each write), and served by
/// the router given it in [`HttpConfig::store_writes`](crate::HttpConfig).
#[derive(Debug)]
pub struct StoreWrites {
    /// `askbus_store_write_duration_seconds{backend, operation}`: queued to acknowledged.
    duration: Family<StoreLabels, Histogram>,
    /// `askbus_store_write_failures_total{backend, operation}`.
    failures: Family<StoreLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    /// `memory`, `sqlite` or `redis`.
    backend: &'static str,
    /// `insert`, `resolve`, `append`, `event`, `enqueue` or `attempted`
    /// (`askbus_store::Write::operation`).
    operation: &'static str,
}

impl StoreWrites {
    /// No write counted yet.
    pub fn new() -> Self {
        Self {
            duration: Family::new_with_constructor(
                (|| Histogram::new(STORE_BUCKETS)) as fn() -> Histogram,
            ),
            failures: Family::default(),
        }
    }

    /// Adds the series to `registry`.
    fn register(&self, registry: &mut Registry) {
        registry.register_with_unit(
            "store_write_duration",
            "Time from queueing a store write to its acknowledgement (durable, or failed)",
            Unit::Seconds,
            self.duration.clone(),
        );
        registry.register(
            "store_write_failures",
            "Store writes that failed (the store answered an error, or none in time)",
            self.failures.clone(),
        );
    }
}

impl Default for StoreWrites {
    fn default() -> Self {
        Self::new()
    }
}

impl askbus_store::WriteMeter for StoreWrites {
    fn written(
        &self,
        backend: &'static str,
        operation: &'static str,
        took: Duration,
        failed: bool,
    ) {
        let labels = StoreLabels { backend, operation };
        self.duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if failed {
            self.failures.get_or_create(&labels).inc();
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    /// `question` or `approval`.
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    /// `question` or `approval`.
    kind: &'static str,
    /// `replied`, `rejected` (questions only), `timed_out` or `cancelled`.
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FollowUpLabels {
    /// `question` or `approval`.
    kind: &'static str,
    /// `reminded` or `escalated`.
    step: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GrantLabel {
    /// `granted` (a human's `always`), `auto_approved` (a request approved by grants) or
    /// `revoked`.
    step: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    /// The request method (`other` for one the API has no route for).
    method: &'static str,
    /// The matched route's template, or `unmatched`.
    route: String,
    /// The response status.
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    /// Why the stream sent `server.resync`.
    reason: &'static str,
}

impl Metrics {
    /// Every series registered, counting `hub`'s events from now on, as long as the metrics
    /// live.
    pub(crate) fn start(hub: &RequestHub, config: &crate::HttpConfig) -> Arc<Self> {
        let mut registry = Registry::with_prefix("askbus");
        let pending = Family::<KindLabel, Gauge>::default();
        registry.register(
            "pending_requests",
            "Requests waiting for a human",
            pending.clone(),
        );
        let asked = Family::<KindLabel, Counter>::default();
        registry.register("requests_asked", "Requests asked", asked.clone());
        let outcomes = Family::<OutcomeLabels, Counter>::default();
        registry.register("outcomes", "Requests ended, by how", outcomes.clone());
        let ask_to_outcome = Family::<OutcomeLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(HUMAN_BUCKETS)) as fn() -> Histogram,
        );
        registry.register_with_unit(
            "ask_to_outcome",
            "Time from a request's ask to its outcome",
            Unit::Seconds,
            ask_to_outcome.clone(),
        );
        let votes = Counter::default();
        registry.register(
            "votes",
            "Reviewers' votes on approvals under a quorum (approval.decided)",
            votes.clone(),
        );
        let follow_ups = Family::<FollowUpLabels, Counter>::default();
        registry.register(
            "follow_ups",
            "Reminders and escalations of requests nobody answered yet (*.reminded, *.escalated)",
            follow_ups.clone(),
        );
        let grants = Family::<GrantLabel, Counter>::default();
        registry.register(
            "grants",
            "Standing grants (`always`): made, used to approve a request without asking, revoked",
            grants.clone(),
        );
        let http = Family::<HttpLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(HTTP_BUCKETS)) as fn() -> Histogram,
        );
        registry.register_with_unit(
            "http_request_duration",
            "Time to answer an HTTP request (a stream: to its first byte)",
            Unit::Seconds,
            http.clone(),
        );
        let streams_open = Gauge::default();
        registry.register(
            "event_streams_open",
            "Stream slots taken: open event streams, frame streams, long polls and MCP requests",
            streams_open.clone(),
        );
        let stream_lagged = Counter::default();
        registry.register(
            "event_stream_lagged",
            "Times an event stream fell behind the bus (caught up from the history, or resynced)",
            stream_lagged.clone(),
        );
        let stream_resyncs = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "event_stream_resyncs",
            "server.resync frames sent on event streams, by reason",
            stream_resyncs.clone(),
        );
        let follower_lag = hub.shares_store().then(|| {
            let gauge = Gauge::default();
            registry.register(
                "follower_lag_changes",
                "Changes of the shared store's log not yet applied by this instance",
                gauge.clone(),
            );
            gauge
        });
        if let Some(writes) = &config.store_writes {
            writes.register(&mut registry);
        }
        let webhook_pending = config.webhooks.clone().map(|stats| {
            registry.register_collector(Box::new(WebhookSeries(stats)));
            let gauge = Gauge::default();
            registry.register(
                "webhook_pending",
                "Webhook deliveries not delivered yet (due, retrying, or in flight), every instance's",
                gauge.clone(),
            );
            gauge
        });
        let metrics = Arc::new(Self {
            registry,
            pending,
            asked,
            outcomes,
            ask_to_outcome,
            votes,
            follow_ups,
            grants,
            http,
            streams_open,
            stream_lagged,
            stream_resyncs,
            follower_lag,
            webhook_pending,
        });
        hub.bus()
            .observe(&(Arc::clone(&metrics) as Arc<dyn Observer>));
        metrics
    }

    /// An event stream fell behind the bus.
    pub(crate) fn stream_lagged(&self) {
        self.stream_lagged.inc();
    }

    /// An event stream sent `server.resync` for `reason` (its wire name).
    pub(crate) fn stream_resynced(&self, reason: &'static str) {
        self.stream_resyncs
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }
}

/// Counts each event of the bus, if it is a request's, as it is published.
impl Observer for Metrics {
    fn observe(&self, envelope: &Envelope) {
        match envelope.event_type() {
            QuestionAsked::TYPE => self.asked(QUESTION),
            ApprovalAsked::TYPE => self.asked(APPROVAL),
            ApprovalDecided::TYPE => {
                self.votes.inc();
            }
            QuestionReminded::TYPE => self.followed_up(QUESTION, "reminded"),
            QuestionEscalated::TYPE => self.followed_up(QUESTION, "escalated"),
            ApprovalReminded::TYPE => self.followed_up(APPROVAL, "reminded"),
            ApprovalEscalated::TYPE => self.followed_up(APPROVAL, "escalated"),
            QuestionReplied::TYPE => self.ended(envelope, |e: &QuestionReplied| e.request_id),
            QuestionRejected::TYPE => self.ended(envelope, |e: &QuestionRejected| e.request_id),
            QuestionTimedOut::TYPE => self.ended(envelope, |e: &QuestionTimedOut| e.request_id),
            QuestionCancelled::TYPE => {
                self.ended(envelope, |e: &QuestionCancelled| e.request_id);
            }
            ApprovalReplied::TYPE => {
                self.ended(envelope, |e: &ApprovalReplied| e.request_id);
                if envelope
                    .downcast_ref::<ApprovalReplied>()
                    .is_some_and(|replied| !replied.reply.auto_approved_by.is_empty())
                {
                    self.granted("auto_approved");
                }
            }
            ApprovalGranted::TYPE => self.granted("granted"),
            ApprovalGrantRevoked::TYPE => self.granted("revoked"),
            ApprovalTimedOut::TYPE => self.ended(envelope, |e: &ApprovalTimedOut| e.request_id),
            ApprovalCancelled::TYPE => {
                self.ended(envelope, |e: &ApprovalCancelled| e.request_id);
            }
            _ => {}
        }
    }
}

impl Metrics {
    /// Counts the outcome event `E` in `envelope`, labelled by its type name (`kind.outcome`),
    /// and how long its request waited, from the time in the request's id. An envelope
    /// read back as JSON only (no `E` in it) counts, without a wait.
    fn ended<E: Event, K: IdKind>(&self, envelope: &Envelope, request: impl FnOnce(&E) -> Id<K>) {
        let Some((kind, outcome)) = E::TYPE.split_once('.') else {
            return;
        };
        let labels = OutcomeLabels { kind, outcome };
        self.outcomes.get_or_create(&labels).inc();
        if let Some(asked_ms) = envelope
            .downcast_ref::<E>()
            .map(|event| request(event).timestamp_ms())
        {
            let waited = Duration::from_millis(now_ms().saturating_sub(asked_ms));
            self.ask_to_outcome
                .get_or_create(&labels)
                .observe(waited.as_secs_f64());
        }
    }

    fn granted(&self, step: &'static str) {
        self.grants.get_or_create(&GrantLabel { step }).inc();
    }

    fn followed_up(&self, kind: &'static str, step: &'static str) {
        self.follow_ups
            .get_or_create(&FollowUpLabels { kind, step })
            .inc();
    }

    fn asked(&self, kind: &'static str) {
        self.asked.get_or_create(&KindLabel { kind }).inc();
    }
}

/// Milliseconds since the Unix epoch, the unit of request ids' time.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// Serve the server's metrics (OpenMetrics text, for Prometheus).
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "server.metrics",
    tag = "server",
    responses(
        (status = 200, description = "Every `askbus_` series in the OpenMetrics text format (README, \"Metrics\", lists them)", content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8", body = String),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "Not an admin's token for every session", body = crate::error::ErrorBody),
        (status = 404, description = "Metrics are turned off (`--no-metrics`)", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn scrape(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Response, ApiError> {
    if caller.0.identity.role != Role::Admin || caller.0.scope.session().is_some() {
        return Err(ApiError::forbidden(
            "only an admin's token for every session may read the metrics",
        ));
    }
    let Some(metrics) = &state.inner.metrics else {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            "metrics are turned off on this server",
        ));
    };
    let hub = &state.inner.hub;
    for (kind, count) in [
        (QUESTION, hub.questions().pending_count()),
        (APPROVAL, hub.approvals().pending_count()),
    ] {
        metrics
            .pending
            .get_or_create(&KindLabel { kind })
            .set(gauge_value(count));
    }
    let slots = &state.inner.config.event_streams;
    metrics
        .streams_open
        .set(gauge_value(slots.limit() - slots.available()));
    if let Some(gauge) = &metrics.follower_lag {
        // A store that cannot be read leaves the last figure: the other series still serve.
        match hub.follower_lag().await {
            Some(Ok(lag)) => {
                gauge.set(i64::try_from(lag).unwrap_or(i64::MAX));
            }
            Some(Err(error)) => {
                tracing::warn!(%error, "metrics: cannot read the change log's head")
            }
            None => {}
        }
    }
    if let (Some(gauge), Some(store)) = (&metrics.webhook_pending, hub.store()) {
        match store.pending_deliveries().await {
            Ok(pending) => {
                gauge.set(i64::try_from(pending).unwrap_or(i64::MAX));
            }
            Err(error) => tracing::warn!(%error, "metrics: cannot count pending deliveries"),
        }
    }
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &metrics.registry)
        .map_err(|_| ApiError::new(ErrorCode::Internal, "the metrics could not be written"))?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response())
}

/// The webhook dispatcher's counters, read at scrape: `askbus_webhook_deliveries_total
/// {result}` (`delivered`, `failed` attempts, `abandoned`, `dropped`) and
/// `askbus_webhook_in_flight`.
#[derive(Debug)]
struct WebhookSeries(Arc<DeliveryStats>);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    /// `delivered`, `failed` or `abandoned`.
    result: &'static str,
}

impl Collector for WebhookSeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = &self.0;
        let mut deliveries = encoder.encode_descriptor(
            "webhook_deliveries",
            "Webhook delivery attempts, by result (each failed attempt counts; abandoned: given up; dropped: never made, the outbox being full)",
            None,
            MetricType::Counter,
        )?;
        for (result, count) in [
            ("delivered", stats.delivered()),
            ("failed", stats.failed_attempts()),
            ("abandoned", stats.abandoned()),
            ("dropped", stats.dropped()),
        ] {
            ConstCounter::new(count).encode(deliveries.encode_family(&ResultLabel { result })?)?;
        }
        let in_flight = ConstGauge::new(i64::try_from(stats.in_flight()).unwrap_or(i64::MAX));
        in_flight.encode(encoder.encode_descriptor(
            "webhook_in_flight",
            "Webhook posts in flight now",
            None,
            in_flight.metric_type(),
        )?)
    }
}

/// `count` as a gauge's value.
fn gauge_value(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The layer over every route: times each request to its response's head, labelled by its
/// method, route template and status. A tower layer rather than `axum::middleware::from_fn`,
/// which boxes the inner service and its future for every request: about a third of what
/// counting a request cost.
#[derive(Clone)]
pub(crate) struct TimeRequests {
    /// Where the timings go.
    metrics: Arc<Metrics>,
}

impl TimeRequests {
    pub(crate) fn new(metrics: Arc<Metrics>) -> Self {
        Self { metrics }
    }
}

impl<S> Layer<S> for TimeRequests {
    type Service = Timed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timed {
            inner,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

/// A route's service, timed ([`TimeRequests`]).
#[derive(Clone)]
pub(crate) struct Timed<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B> Service<Request<B>> for Timed<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = TimedResponse<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        TimedResponse {
            started: Instant::now(),
            method: method_label(request.method()),
            route: request.extensions().get::<MatchedPath>().cloned(),
            metrics: Arc::clone(&self.metrics),
            response: self.inner.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// A response on its way, observed into the HTTP histogram when its head is ready.
    pub(crate) struct TimedResponse<F> {
        #[pin]
        response: F,
        started: Instant,
        method: &'static str,
        route: Option<MatchedPath>,
        metrics: Arc<Metrics>,
    }
}

impl<F, E> Future for TimedResponse<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.response.poll(cx));
        if let Ok(response) = &result {
            let labels = HttpLabels {
                method: this.method,
                route: this
                    .route
                    .as_ref()
                    .map_or("unmatched", MatchedPath::as_str)
                    .to_owned(),
                status: response.status().as_u16(),
            };
            this.metrics
                .http
                .get_or_create(&labels)
                .observe(this.started.elapsed().as_secs_f64());
        }
        Poll::Ready(result)
    }
}

/// A method's label: the API's methods by name, any other as `other`, so a client cannot
/// make up series.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}
