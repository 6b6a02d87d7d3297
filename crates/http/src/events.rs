//! `GET /event` and `GET /global/event`: the bus as Server-Sent Events.
//!
//! Framing, in exact words: every frame is one `data:` line of compact JSON and no `event:`
//! line, so `EventSource.onmessage` and the OpenCode SDK both receive it. A bus event is
//! sent as its [`Envelope::json`] (`{"id","type","properties"}`, and `"requestID"` when an
//! HTTP request caused it) with an `id:` line carrying the event id; an OpenCode v2 frame and
//! a companion frame carry the same `requestID` as their event. The server's own frames (`server.connected`, `server.heartbeat`,
//! `server.resync`) are `{"type","properties"}` without an `id` member, because they are
//! not bus events.
//!
//! Cursor policy:
//!
//! - The first frame is `server.connected`; its `id:` line is the cursor the stream starts
//!   after, so a client that reconnects with it as `Last-Event-ID` misses nothing.
//! - A `Last-Event-ID` header (or `last_event_id` query parameter) resumes after that event:
//!   exactly the events that followed it, no gap and no duplicate.
//! - When that is impossible (the cursor is older than the bus's history, or not one this
//!   server issued) the stream starts live and the second frame is `server.resync` with a
//!   `reason` (`cursor_too_old`, `unknown_cursor`); its `id:` is the new cursor. The client
//!   then refetches `GET /question` and carries on.
//! - When the stream falls behind the bus, it first tries to catch up from the history (no
//!   frame, no gap); only if the missed events are gone does it send `server.resync` with
//!   reason `lagged` and the count `missed`.
//! - A `server.heartbeat` frame is sent every heartbeat interval (10 s by default) so
//!   proxies and clients can tell a quiet stream from a dead one.
//! - With a `sessionID` filter (or a session-scoped token) only events whose
//!   `properties.sessionID` is that session are sent; events without a `sessionID` pass.
//! - Every open stream ends as soon as the router's shutdown token is cancelled.
//!
//! OpenCode clients get companion frames: an askbus event they do not know is followed by
//! one they act on, with the same `id` (see the `opencode` module): `question.rejected`
//! (with `endedAs`) after `question.timed_out` / `question.cancelled`, `permission.asked`
//! after `approval.asked`, `permission.replied` after every approval outcome. A stream is
//! an OpenCode client's when it is `GET /global/event` or `GET /api/event` (OpenCode's v2
//! `v2.event.subscribe`, whose frames are `{"id","type","data"}`), or `GET /event` with
//! OpenCode's `directory` (query) or `x-opencode-directory` (header), which its clients
//! always send. Other `/event` streams carry askbus's events only, exactly as published.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use askbus_bus::{Bus, Envelope, EventId, Lagged, ReplayError, Subscription};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseFrame, Sse};
use serde::Deserialize;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::metrics::Metrics;
use crate::opencode;

/// Query parameters of the event streams.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventQuery {
    /// Only events of this session (and events that belong to no session).
    #[serde(rename = "sessionID")]
    #[param(rename = "sessionID")]
    session_id: Option<String>,
    /// Resume after this event id; the `Last-Event-ID` header takes precedence.
    last_event_id: Option<String>,
    /// Sent by OpenCode clients (as is `x-opencode-directory`): the stream also carries
    /// the companion frames OpenCode clients act on (`permission.asked`,
    /// `permission.replied`, `question.rejected` after a timeout or cancellation).
    directory: Option<String>,
}

/// How bus events are wrapped on the wire.
#[derive(Clone)]
enum Framing {
    /// `GET /event`: the envelope as is.
    Plain,
    /// `GET /global/event`: `{"directory": <this, as JSON>, "payload": <envelope>}`.
    Global(Arc<str>),
    /// `GET /api/event`: OpenCode's v2 envelope, `{"id","type","data": <properties>}`.
    V2,
}

/// Why the stream could not continue exactly where the client left off.
#[derive(Clone, Copy)]
enum ResyncReason {
    CursorTooOld,
    UnknownCursor,
    Lagged(u64),
}

/// Everything one open stream needs between frames.
struct EventStream {
    /// Where events come from; also used to re-subscribe after a lag.
    bus: Bus,
    /// The current subscription.
    subscription: Subscription,
    /// Id of the last event taken from `subscription` (sent or filtered out): resuming
    /// after it loses nothing.
    cursor: EventId,
    /// Only events of this session (and those of none).
    session: Option<Arc<str>>,
    /// Event wrapping of the route.
    framing: Framing,
    /// Whether the client is an OpenCode client, which gets companion frames.
    companions: bool,
    /// Server frames queued before the next bus event.
    queued: VecDeque<SseFrame>,
    /// Ticks when a heartbeat is due.
    heartbeat: Interval,
    /// Cancelled on graceful shutdown.
    shutdown: CancellationToken,
    /// Where lags and resyncs are counted, when metrics are on.
    metrics: Option<Arc<Metrics>>,
}

/// Subscribe to every event as Server-Sent Events.
#[utoipa::path(
    get,
    path = "/event",
    operation_id = "event.subscribe",
    tag = "events",
    params(EventQuery, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "Server-Sent Events: every frame is `data: {\"id\",\"type\",\"properties\"}` with an `id:` line. Under a quorum (`review_configs[].quorum`), each reviewer's vote is an `approval.decided` frame (properties: the `ApprovalDecided` schema) before the request's one `approval.replied`, which lists every vote in `votes`. A standing grant (`always`) is announced by `approval.granted` (properties: the `Grant` schema) and its end by `approval.grant_revoked` (the `Grant` plus `revoked_by`); a request a grant approved is an `approval.replied` with `auto_approved_by`. An outcome the store then refused (a full disk) is followed by `question.not_recorded` or `approval.not_recorded` (`outcome`: which), after which it does not stand and a read of the request is `503 outcome_not_recorded`. An OpenCode client's stream (with `directory` or `x-opencode-directory`) also carries companion frames, each with the `id` of the event it follows: `permission.asked` (properties: the `Permission` schema) after `approval.asked`, `permission.replied` (`{sessionID, requestID, reply}`, `reply` being `once`, `always` or `reject`) after each approval outcome, and `question.rejected` (`{sessionID, requestID, endedAs}`) after `question.timed_out` and `question.cancelled`", content_type = "text/event-stream", body = crate::openapi::EventFrame),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 429, description = "This token holds as many open streams and long polls as it may (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "Every stream slot of the server is taken (`too_many_streams`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    ),
)]
pub(crate) async fn event_stream(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<EventQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseFrame, Infallible>>>, ApiError> {
    open(&state, &caller, &headers, query, Framing::Plain)
}

/// Subscribe to every event, each wrapped as `{directory, payload}` (OpenCode's global stream).
#[utoipa::path(
    get,
    path = "/global/event",
    operation_id = "global.event",
    tag = "events",
    params(EventQuery, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "As `/event`, each frame wrapped as `{\"directory\", \"payload\": {...}}`", content_type = "text/event-stream", body = crate::openapi::GlobalEventFrame),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 429, description = "This token holds as many open streams and long polls as it may (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "Every stream slot of the server is taken (`too_many_streams`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    ),
)]
pub(crate) async fn global_event_stream(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<EventQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseFrame, Infallible>>>, ApiError> {
    let directory = json_string(&state.inner.config.directory);
    open(
        &state,
        &caller,
        &headers,
        query,
        Framing::Global(directory.into()),
    )
}

/// Subscribe to every event in OpenCode's v2 envelope (`v2.event.subscribe`).
#[utoipa::path(
    get,
    path = "/api/event",
    operation_id = "v2.event.subscribe",
    tag = "events",
    params(EventQuery, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "As `/event`, each frame `data: {\"id\",\"type\",\"data\"}` (the event's properties under `data`, as OpenCode's v2 events)", content_type = "text/event-stream", body = crate::openapi::V2EventFrame),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 429, description = "This token holds as many open streams and long polls as it may (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "Every stream slot of the server is taken (`too_many_streams`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    ),
)]
pub(crate) async fn v2_event_stream(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<EventQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseFrame, Infallible>>>, ApiError> {
    open(&state, &caller, &headers, query, Framing::V2)
}

fn open(
    state: &AppState,
    caller: &Caller,
    headers: &HeaderMap,
    query: EventQuery,
    framing: Framing,
) -> Result<Sse<impl Stream<Item = Result<SseFrame, Infallible>> + use<>>, ApiError> {
    let session: Option<Arc<str>> = match (caller.0.scope.session(), query.session_id) {
        (Some(own), Some(asked)) if **own != *asked => {
            return Err(ApiError::forbidden(
                "this token may only stream its own session's events",
            ));
        }
        (Some(own), _) => Some(Arc::clone(own)),
        (None, asked) => asked.map(Arc::from),
    };
    let companions = !matches!(framing, Framing::Plain)
        || query.directory.is_some()
        || headers.contains_key("x-opencode-directory");
    let cursor = headers
        .get("last-event-id")
        // A header that is not text is still a cursor the client sent: it must end in a
        // resync, not in a silent live start that skips what the client missed.
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .or(query.last_event_id)
        .filter(|text| !text.trim().is_empty());

    let bus = state.inner.hub.bus().clone();
    let (subscription, resync) = match cursor {
        None => (bus.subscribe_all(), None),
        Some(text) => match text.trim().parse::<EventId>() {
            Err(_) => (bus.subscribe_all(), Some(ResyncReason::UnknownCursor)),
            Ok(cursor) => match bus.subscribe_from(cursor) {
                Ok(subscription) => (subscription, None),
                Err(ReplayError::CursorTooOld { .. }) => {
                    (bus.subscribe_all(), Some(ResyncReason::CursorTooOld))
                }
                Err(ReplayError::UnknownCursor { .. }) => {
                    (bus.subscribe_all(), Some(ResyncReason::UnknownCursor))
                }
            },
        },
    };
    let cursor = subscription.start();
    let period = state.inner.config.heartbeat_interval;
    let mut heartbeat = tokio::time::interval_at(Instant::now() + period, period);
    heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);

    let mut stream = EventStream {
        bus,
        subscription,
        cursor,
        session,
        framing,
        companions,
        queued: VecDeque::new(),
        heartbeat,
        shutdown: state.inner.shutdown.clone(),
        metrics: state.inner.metrics.clone(),
    };
    let connected = stream
        .server_frame("server.connected", "{}")
        .id(cursor.to_string());
    stream.queued.push_back(connected);
    if let Some(reason) = resync {
        stream.resync(reason);
    }
    Ok(Sse::new(frames(stream)))
}

/// Turns the state machine into a stream of frames.
fn frames(stream: EventStream) -> impl Stream<Item = Result<SseFrame, Infallible>> + Send {
    futures_util::stream::unfold(stream, |mut stream| async move {
        let frame = stream.next_frame().await?;
        Some((Ok(frame), stream))
    })
}

impl EventStream {
    /// The next frame to send, or `None` when the stream must end (shutdown, or the bus
    /// is gone).
    async fn next_frame(&mut self) -> Option<SseFrame> {
        loop {
            if self.shutdown.is_cancelled() {
                return None;
            }
            if let Some(frame) = self.queued.pop_front() {
                return Some(frame);
            }
            tokio::select! {
                biased;
                () = self.shutdown.cancelled() => return None,
                item = self.subscription.next() => match item? {
                    Ok(envelope) => {
                        self.cursor = envelope.id();
                        if self.passes(&envelope) {
                            if let Some((kind, properties)) = self
                                .companions
                                .then(|| opencode::companion(&envelope))
                                .flatten()
                            {
                                let companion = self.frame(&envelope, kind, &properties);
                                self.queued.push_back(companion);
                            }
                            return Some(self.event_frame(&envelope));
                        }
                    }
                    Err(Lagged(missed)) => self.recover(missed),
                },
                _ = self.heartbeat.tick() => {
                    return Some(self.server_frame("server.heartbeat", "{}"));
                }
            }
        }
    }

    /// After a lag: resume from the history if it still holds what was missed, otherwise
    /// restart live and queue a `server.resync`.
    fn recover(&mut self, missed: u64) {
        if let Some(metrics) = &self.metrics {
            metrics.stream_lagged();
        }
        match self.bus.subscribe_from(self.cursor) {
            Ok(subscription) => self.subscription = subscription,
            Err(_) => {
                self.subscription = self.bus.subscribe_all();
                self.cursor = self.subscription.start();
                self.resync(ResyncReason::Lagged(missed));
            }
        }
    }

    fn passes(&self, envelope: &Envelope) -> bool {
        let Some(session) = &self.session else {
            return true;
        };
        envelope.session_id().is_none_or(|own| own == &**session)
    }

    fn event_frame(&self, envelope: &Envelope) -> SseFrame {
        let frame = SseFrame::default().id(envelope.id().to_string());
        match &self.framing {
            Framing::Plain => frame.data(envelope.json()),
            Framing::Global(directory) => frame.data(format!(
                r#"{{"directory":{directory},"payload":{}}}"#,
                envelope.json()
            )),
            Framing::V2 => self.frame(envelope, envelope.event_type(), envelope.properties_json()),
        }
    }

    /// A frame of `envelope`'s id and request id with this `kind` and `properties`, as the
    /// route wraps events.
    fn frame(&self, envelope: &Envelope, kind: &str, properties: &str) -> SseFrame {
        let cursor = envelope.id().to_string();
        let (id, kind) = (json_string(&cursor), json_string(kind));
        // As `Envelope::json` writes it: last, and only when a request caused the event.
        let cause = envelope
            .request_id()
            .map(|request| format!(r#","requestID":{}"#, json_string(request)))
            .unwrap_or_default();
        let data = match &self.framing {
            Framing::Plain => {
                format!(r#"{{"id":{id},"type":{kind},"properties":{properties}{cause}}}"#)
            }
            Framing::Global(directory) => format!(
                r#"{{"directory":{directory},"payload":{{"id":{id},"type":{kind},"properties":{properties}{cause}}}}}"#
            ),
            Framing::V2 => format!(r#"{{"id":{id},"type":{kind},"data":{properties}{cause}}}"#),
        };
        SseFrame::default().id(cursor).data(data)
    }

    /// A frame of the server's own, `{"type": kind, "properties": properties}`.
    fn server_frame(&self, kind: &str, properties: &str) -> SseFrame {
        let payload = format!(r#"{{"type":"{kind}","properties":{properties}}}"#);
        let data = match &self.framing {
            Framing::Plain => payload,
            Framing::Global(directory) => {
                format!(r#"{{"directory":{directory},"payload":{payload}}}"#)
            }
            Framing::V2 => format!(r#"{{"type":"{kind}","data":{properties}}}"#),
        };
        SseFrame::default().data(data)
    }

    /// Queues a `server.resync` frame whose `id:` is the cursor the stream now continues
    /// after, and counts it.
    fn resync(&mut self, reason: ResyncReason) {
        let (name, properties) = match reason {
            ResyncReason::CursorTooOld => (
                "cursor_too_old",
                r#"{"reason":"cursor_too_old"}"#.to_owned(),
            ),
            ResyncReason::UnknownCursor => (
                "unknown_cursor",
                r#"{"reason":"unknown_cursor"}"#.to_owned(),
            ),
            ResyncReason::Lagged(missed) => (
                "lagged",
                format!(r#"{{"reason":"lagged","missed":{missed}}}"#),
            ),
        };
        if let Some(metrics) = &self.metrics {
            metrics.stream_resynced(name);
        }
        let frame = self
            .server_frame("server.resync", &properties)
            .id(self.cursor.to_string());
        self.queued.push_back(frame);
    }
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}
