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
use std::sync::{Arc, PoisonError, RwLock};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use askbus_bus::{Envelope, Event, Id, IdKind, Observer};
use askbus_notify::DeliveryStats;
use askbus_question::{
    ApprovalAsked, ApprovalCancelled, ApprovalDecided, ApprovalEscalated, ApprovalGrantRevoked,
    ApprovalGranted, ApprovalNotRecorded, ApprovalReminded, ApprovalReplied, ApprovalTimedOut,
    QuestionAsked, QuestionCancelled, QuestionEscalated, QuestionNotRecorded, QuestionRejected,
    QuestionReminded, QuestionReplied, QuestionTimedOut, RequestHub, Role,
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
    /// `askbus_requests_asked_total{kind="question"}`.
    questions_asked: Counter,
    /// `askbus_requests_asked_total{kind="approval"}`.
    approvals_asked: Counter,
    /// `askbus_outcomes_total{kind, outcome}` and `askbus_ask_to_outcome_seconds{kind,
    /// outcome}`, of each outcome event.
    ended: Ends,
    /// `askbus_votes_total`.
    votes: Counter,
    /// `askbus_outcomes_not_recorded_total{kind="question"}`: outcomes announced, then
    /// refused by the store (`question.not_recorded`).
    questions_not_recorded: Counter,
    /// The same of approvals (`approval.not_recorded`).
    approvals_not_recorded: Counter,
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
    /// The follower's series, set at scrape; only over a shared store.
    follower: Option<FollowerSeries>,
    /// `askbus_webhook_pending`, set at scrape; only when the server delivers webhooks.
    webhook_pending: Option<Gauge>,
}

/// The series of a shared store's follower.
struct FollowerSeries {
    /// `askbus_follower_lag_changes`.
    lag: Gauge,
    /// `askbus_follower_resyncs_total`: gaps in the log it loaded the requests again for.
    resyncs: Counter,
    /// `askbus_follower_skipped_changes_total`: changes it could not read or apply.
    skipped: Counter,
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

/// The series an outcome event counts in: looked up once, at start, where a family's
/// lookup would hash its labels under a lock at every event; and there from the start, so
/// that a rate reads 0 rather than nothing.
struct EndSeries {
    /// `askbus_outcomes_total{kind, outcome}`.
    count: Counter,
    /// `askbus_ask_to_outcome_seconds{kind, outcome}`.
    waited: Histogram,
}

impl EndSeries {
    /// The series of the outcome event `E` (`kind.outcome`).
    fn of<E: Event>(
        count: &Family<OutcomeLabels, Counter>,
        waited: &Family<OutcomeLabels, Histogram>,
    ) -> Self {
        let (kind, outcome) = E::TYPE.split_once('.').unwrap_or((E::TYPE, ""));
        let labels = OutcomeLabels { kind, outcome };
        Self {
            count: count.get_or_create(&labels).clone(),
            waited: waited.get_or_create(&labels).clone(),
        }
    }
}

/// Each outcome event's [`EndSeries`].
struct Ends {
    question_replied: EndSeries,
    question_rejected: EndSeries,
    question_timed_out: EndSeries,
    question_cancelled: EndSeries,
    approval_replied: EndSeries,
    approval_timed_out: EndSeries,
    approval_cancelled: EndSeries,
}

impl Ends {
    fn new(
        count: &Family<OutcomeLabels, Counter>,
        waited: &Family<OutcomeLabels, Histogram>,
    ) -> Self {
        Self {
            question_replied: EndSeries::of::<QuestionReplied>(count, waited),
            question_rejected: EndSeries::of::<QuestionRejected>(count, waited),
            question_timed_out: EndSeries::of::<QuestionTimedOut>(count, waited),
            question_cancelled: EndSeries::of::<QuestionCancelled>(count, waited),
            approval_replied: EndSeries::of::<ApprovalReplied>(count, waited),
            approval_timed_out: EndSeries::of::<ApprovalTimedOut>(count, waited),
            approval_cancelled: EndSeries::of::<ApprovalCancelled>(count, waited),
        }
    }
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
        let asked = |kind| asked.get_or_create(&KindLabel { kind }).clone();
        let (questions_asked, approvals_asked) = (asked(QUESTION), asked(APPROVAL));
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
        let ended = Ends::new(&outcomes, &ask_to_outcome);
        let not_recorded = Family::<KindLabel, Counter>::default();
        registry.register(
            "outcomes_not_recorded",
            "Outcomes announced, then refused by the store, so that they do not stand (*.not_recorded)",
            not_recorded.clone(),
        );
        let not_recorded = |kind| not_recorded.get_or_create(&KindLabel { kind }).clone();
        let (questions_not_recorded, approvals_not_recorded) =
            (not_recorded(QUESTION), not_recorded(APPROVAL));
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
        let follower = hub.shares_store().then(|| {
            let series = FollowerSeries {
                lag: Gauge::default(),
                resyncs: Counter::default(),
                skipped: Counter::default(),
            };
            registry.register(
                "follower_lag_changes",
                "Changes of the shared store's log not yet applied by this instance",
                series.lag.clone(),
            );
            registry.register(
                "follower_resyncs",
                "Gaps in the shared store's log (trimmed past this instance, or the store lost its data) for which the requests were loaded again",
                series.resyncs.clone(),
            );
            registry.register(
                "follower_skipped_changes",
                "Changes of the shared store's log this instance could not read or apply, and passed over",
                series.skipped.clone(),
            );
            series
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
            questions_asked,
            approvals_asked,
            ended,
            votes,
            questions_not_recorded,
            approvals_not_recorded,
            follow_ups,
            grants,
            http,
            streams_open,
            stream_lagged,
            stream_resyncs,
            follower,
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
            QuestionAsked::TYPE => {
                self.questions_asked.inc();
            }
            ApprovalAsked::TYPE => {
                self.approvals_asked.inc();
            }
            ApprovalDecided::TYPE => {
                self.votes.inc();
            }
            QuestionNotRecorded::TYPE => {
                self.questions_not_recorded.inc();
            }
            ApprovalNotRecorded::TYPE => {
                self.approvals_not_recorded.inc();
            }
            QuestionReminded::TYPE => self.followed_up(QUESTION, "reminded"),
            QuestionEscalated::TYPE => self.followed_up(QUESTION, "escalated"),
            ApprovalReminded::TYPE => self.followed_up(APPROVAL, "reminded"),
            ApprovalEscalated::TYPE => self.followed_up(APPROVAL, "escalated"),
            QuestionReplied::TYPE => ended(
                &self.ended.question_replied,
                envelope,
                |e: &QuestionReplied| e.request_id,
            ),
            QuestionRejected::TYPE => ended(
                &self.ended.question_rejected,
                envelope,
                |e: &QuestionRejected| e.request_id,
            ),
            QuestionTimedOut::TYPE => ended(
                &self.ended.question_timed_out,
                envelope,
                |e: &QuestionTimedOut| e.request_id,
            ),
            QuestionCancelled::TYPE => ended(
                &self.ended.question_cancelled,
                envelope,
                |e: &QuestionCancelled| e.request_id,
            ),
            ApprovalReplied::TYPE => {
                ended(
                    &self.ended.approval_replied,
                    envelope,
                    |e: &ApprovalReplied| e.request_id,
                );
                if envelope
                    .downcast_ref::<ApprovalReplied>()
                    .is_some_and(|replied| !replied.reply.auto_approved_by.is_empty())
                {
                    self.granted("auto_approved");
                }
            }
            ApprovalGranted::TYPE => self.granted("granted"),
            ApprovalGrantRevoked::TYPE => self.granted("revoked"),
            ApprovalTimedOut::TYPE => ended(
                &self.ended.approval_timed_out,
                envelope,
                |e: &ApprovalTimedOut| e.request_id,
            ),
            ApprovalCancelled::TYPE => ended(
                &self.ended.approval_cancelled,
                envelope,
                |e: &ApprovalCancelled| e.request_id,
            ),
            _ => {}
        }
    }
}

/// Counts the outcome event `E` in `envelope` in `series`, and how long its request waited,
/// from the time in the request's id. An envelope read back as JSON only (no `E` in it)
/// counts, without a wait.
fn ended<E: Event, K: IdKind>(
    series: &EndSeries,
    envelope: &Envelope,
    request: impl FnOnce(&E) -> Id<K>,
) {
    series.count.inc();
    if let Some(asked_ms) = envelope
        .downcast_ref::<E>()
        .map(|event| request(event).timestamp_ms())
    {
        let waited = Duration::from_millis(now_ms().saturating_sub(asked_ms));
        series.waited.observe(waited.as_secs_f64());
    }
}

impl Metrics {
    fn granted(&self, step: &'static str) {
        self.grants.get_or_create(&GrantLabel { step }).inc();
    }

    fn followed_up(&self, kind: &'static str, step: &'static str) {
        self.follow_ups
            .get_or_create(&FollowUpLabels { kind, step })
            .inc();
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
    if let Some(follower) = &metrics.follower {
        if let Some(stats) = hub.follower_stats() {
            // Counted by the follower; the counters catch up with it.
            let catch_up = |counter: &Counter, count: u64| {
                counter.inc_by(count.saturating_sub(counter.get()));
            };
            catch_up(&follower.resyncs, stats.resyncs());
            catch_up(&follower.skipped, stats.skipped());
        }
        // A store that cannot be read, or not in time, leaves the last figure: the other
        // series still serve, within a scraper's patience.
        match tokio::time::timeout(STORE_READ_LIMIT, hub.follower_lag()).await {
            Ok(Some(Ok(lag))) => {
                follower.lag.set(i64::try_from(lag).unwrap_or(i64::MAX));
            }
            Ok(Some(Err(error))) => {
                tracing::warn!(%error, "metrics: cannot read the change log's head")
            }
            Ok(None) => {}
            Err(_) => tracing::warn!(
                "metrics: the change log's head did not come within {STORE_READ_LIMIT:?}"
            ),
        }
    }
    if let (Some(gauge), Some(store)) = (&metrics.webhook_pending, hub.store()) {
        match tokio::time::timeout(STORE_READ_LIMIT, store.pending_deliveries()).await {
            Ok(Ok(pending)) => {
                gauge.set(i64::try_from(pending).unwrap_or(i64::MAX));
            }
            Ok(Err(error)) => tracing::warn!(%error, "metrics: cannot count pending deliveries"),
            Err(_) => tracing::warn!(
                "metrics: the pending deliveries were not counted within {STORE_READ_LIMIT:?}"
            ),
        }
    }
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &metrics.registry)
        .map_err(|_| ApiError::new(ErrorCode::Internal, "the metrics could not be written"))?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response())
}

/// How long a scrape waits for each figure it reads from the store. A store that stalls
/// (Redis accepting connections and answering nothing) would otherwise hold the scrape
/// past Prometheus's own limit (10 s by default), losing every series just when they tell
/// most; the figure keeps its last value instead.
const STORE_READ_LIMIT: Duration = Duration::from_secs(1);

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
/// counting a request cost. Without metrics it passes requests through, so that the
/// router's stack of layers has one type either way (an `Either` of both cost a request
/// more than this one branch).
#[derive(Clone)]
pub(crate) struct TimeRequests {
    /// Where the timings go, if anywhere.
    metrics: Option<Arc<Metrics>>,
}

impl TimeRequests {
    pub(crate) fn new(metrics: Option<Arc<Metrics>>) -> Self {
        Self { metrics }
    }
}

impl<S> Layer<S> for TimeRequests {
    type Service = Timed<S>;

    /// Called once for each endpoint of the router (a route's method, or a fallback), which
    /// gets series of its own to find its timings in.
    fn layer(&self, inner: S) -> Self::Service {
        Timed {
            inner,
            series: self.metrics.as_ref().map(|metrics| {
                Arc::new(EndpointSeries {
                    metrics: Arc::clone(metrics),
                    seen: RwLock::default(),
                })
            }),
        }
    }
}

/// The HTTP series one endpoint's requests were timed in: an endpoint answers a route and
/// a method or two with a handful of statuses, found here by comparing a few labels, where
/// the family would hash them, and the route's template copied into a `String`, at every
/// request.
struct EndpointSeries {
    /// Where a series not seen yet is found (and made).
    metrics: Arc<Metrics>,
    /// The series seen so far, at most [`MAX_ENDPOINT_SERIES`].
    seen: RwLock<Vec<(HttpLabels, Histogram)>>,
}

/// How many series an endpoint keeps at hand; a request of any other goes to the family.
const MAX_ENDPOINT_SERIES: usize = 8;

impl EndpointSeries {
    /// Observes `seconds` in the series of `method`, `route` and `status`.
    fn observe(&self, method: &'static str, route: &str, status: u16, seconds: f64) {
        let is_it = |labels: &HttpLabels| {
            labels.status == status && labels.method == method && labels.route == route
        };
        let room = {
            let seen = self.seen.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, series)) = seen.iter().find(|(labels, _)| is_it(labels)) {
                series.observe(seconds);
                return;
            }
            seen.len() < MAX_ENDPOINT_SERIES
        };
        let labels = HttpLabels {
            method,
            route: route.to_owned(),
            status,
        };
        let series = self.metrics.http.get_or_create(&labels).clone();
        series.observe(seconds);
        // A full list is never written again: its misses take no lock of its own.
        if room {
            let mut seen = self.seen.write().unwrap_or_else(PoisonError::into_inner);
            if seen.len() < MAX_ENDPOINT_SERIES && !seen.iter().any(|(labels, _)| is_it(labels)) {
                seen.push((labels, series));
            }
        }
    }
}

/// A route's service, timed ([`TimeRequests`]).
#[derive(Clone)]
pub(crate) struct Timed<S> {
    inner: S,
    /// `None` without metrics.
    series: Option<Arc<EndpointSeries>>,
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
            timing: self.series.as_ref().map(|series| Timing {
                started: Instant::now(),
                method: method_label(request.method()),
                route: request.extensions().get::<MatchedPath>().cloned(),
                series: Arc::clone(series),
            }),
            response: self.inner.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// A response on its way, observed into the HTTP histogram when its head is ready.
    pub(crate) struct TimedResponse<F> {
        #[pin]
        response: F,
        // `None` without metrics.
        timing: Option<Timing>,
    }
}

/// What a timed request's series is found by, and when it started.
struct Timing {
    started: Instant,
    method: &'static str,
    route: Option<MatchedPath>,
    series: Arc<EndpointSeries>,
}

impl<F, E> Future for TimedResponse<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.response.poll(cx));
        if let (Ok(response), Some(timing)) = (&result, this.timing.as_ref()) {
            timing.series.observe(
                timing.method,
                timing
                    .route
                    .as_ref()
                    .map_or("unmatched", MatchedPath::as_str),
                response.status().as_u16(),
                timing.started.elapsed().as_secs_f64(),
            );
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
