//! The seeds' content-block stream and flat history of a session (seeds 000, 001, 004), for
//! chat UIs built on that protocol rather than on askbus events.
//!
//! `GET /session/{id}/history` is the flat `display_type` history with its
//! `last_event_id`; `GET /session/{id}/stream` is the session's frames as Server-Sent
//! Events, each with an `id:` line holding its cursor (`evt_…` or `evt_….N`). A client
//! loads the history, then opens the stream with `Last-Event-ID` (or `?last_event_id=`) set
//! to the history's `last_event_id`, and sees every later frame once: the guarantee of
//! [`Transcripts`](askbus_protocol::Transcripts). `POST /session/{id}/step` lets an agent
//! that is not in this process add its own steps (text, thinking, tool calls and results),
//! in the same order as its questions.
//!
//! Transcripts are folded from the bus by one [`Transcripts`](askbus_protocol::Transcripts)
//! per router, created with it: sessions that started before the router are not in them.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use askbus_bus::Subscription;
use askbus_protocol::{AgentStep, FrameCursor, History, Step, StreamFrame, Transcripts};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseFrame, KeepAlive, Sse};
use serde::Deserialize;
use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery, SegmentPath};

/// `GET /session/{id}/stream` query.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct StreamQuery {
    /// Resume after this cursor (a history's `last_event_id`, or a frame's `id:`); the
    /// `Last-Event-ID` header takes precedence.
    last_event_id: Option<String>,
}

/// One open frame stream.
struct FrameStream {
    /// Where the frames are read.
    transcripts: Transcripts,
    /// Wakes the stream when the bus has news; what it yields is not read.
    news: Subscription,
    /// The session streamed.
    session: Arc<str>,
    /// The cursor of the last frame sent (or the resume cursor).
    cursor: Option<FrameCursor>,
    /// Frames read but not sent yet.
    ready: VecDeque<StreamFrame>,
    /// Cancelled on graceful shutdown.
    shutdown: CancellationToken,
}

/// The session's flat history (seed 004) and the cursor its stream resumes after.
#[utoipa::path(
    get,
    path = "/session/{id}/history",
    operation_id = "session.history",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The flat history with `last_event_id`", body = Object),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []), ())
)]
pub(crate) async fn history(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
) -> Result<Json<History>, ApiError> {
    caller.act_for(&session_id)?;
    Ok(Json(state.inner.transcripts.history(&session_id)))
}

/// The session's content-block frames (seeds 000, 001, 004) as Server-Sent Events.
#[utoipa::path(
    get,
    path = "/session/{id}/stream",
    operation_id = "session.stream",
    tag = "session",
    params(
        ("id" = String, Path, description = "Session id"),
        StreamQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this cursor"),
    ),
    responses(
        (status = 200, description = "Server-Sent Events: `data:` is one frame, `id:` its cursor", content_type = "text/event-stream", body = String),
        (status = 400, description = "Malformed cursor", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 429, description = "This token holds as many open streams and long polls as it may (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "Every stream slot of the server is taken (`too_many_streams`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    ),
    security(("bearer" = []), ())
)]
pub(crate) async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseFrame, Infallible>>>, ApiError> {
    caller.act_for(&session_id)?;
    let cursor = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .or(query.last_event_id)
        .filter(|text| !text.trim().is_empty())
        .map(|text| {
            text.trim()
                .parse::<FrameCursor>()
                .map_err(|error| ApiError::bad_request(error.to_string()))
        })
        .transpose()?;
    // Subscribed before the first read, so nothing published in between is missed.
    let news = state.inner.hub.bus().subscribe_all();
    let stream = FrameStream {
        transcripts: state.inner.transcripts.clone(),
        news,
        session: session_id.into(),
        cursor,
        ready: VecDeque::new(),
        shutdown: state.inner.shutdown.clone(),
    };
    let frames = futures_util::stream::unfold(stream, |mut stream| async move {
        let frame = stream.next_frame().await?;
        Some((Ok(frame), stream))
    });
    Ok(Sse::new(frames)
        .keep_alive(KeepAlive::new().interval(state.inner.config.heartbeat_interval)))
}

/// Adds an agent step to the session's transcript (server mode).
#[utoipa::path(
    post,
    path = "/session/{id}/step",
    operation_id = "session.step",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = Object, description = "A step: `{\"type\": \"text\", \"text\": \"...\"}`, `thinking`, `tool_use`, `tool_result` or `user`"),
    responses(
        (status = 200, description = "Recorded", body = bool, content_type = "application/json"),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 422, description = "Not a step", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []), ())
)]
pub(crate) async fn step(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
    ApiJson(step): ApiJson<Step>,
) -> Result<Json<bool>, ApiError> {
    caller.act_for(&session_id)?;
    state
        .inner
        .hub
        .bus()
        .publish(AgentStep::new(session_id, step));
    Ok(Json(true))
}

impl FrameStream {
    /// The next frame, or `None` on shutdown or when the bus is gone.
    async fn next_frame(&mut self) -> Option<SseFrame> {
        loop {
            if self.shutdown.is_cancelled() {
                return None;
            }
            if let Some(ready) = self.ready.pop_front() {
                self.cursor = Some(ready.cursor);
                let data = serde_json::to_string(&ready.frame).unwrap_or_else(|_| "{}".into());
                return Some(SseFrame::default().id(ready.cursor.to_string()).data(data));
            }
            self.ready
                .extend(self.transcripts.frames_after(&self.session, self.cursor));
            if !self.ready.is_empty() {
                continue;
            }
            tokio::select! {
                () = self.shutdown.cancelled() => return None,
                // Any news (or a lag) is a reason to read again; the transcripts have it.
                news = self.news.next() => {
                    news.as_ref()?;
                }
            }
        }
    }
}
