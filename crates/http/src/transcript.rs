//! The seeds' content-block stream and flat history of a session (seeds 000, 001, 004), for
//! chat UIs built on that protocol rather than on askbus events.
//!
//! `GET /session/{id}/history` is the flat `display_type` history with its
//! `last_event_id`; `GET /session/{id}/stream` is the session's frames as Server-Sent
//! Events, each with an `id:` line holding its cursor. A client loads the history, then
//! opens the stream with `Last-Event-ID` (or `?last_event_id=`) set to the history's
//! `last_event_id`, and sees every later frame once: the guarantee of
//! [`Transcripts`](askbus_protocol::Transcripts). `POST /session/{id}/step` lets an agent
//! that is not in this process add its own steps (text, thinking, tool calls and results),
//! in the same order as its questions.
//!
//! Histories are read from the hub's store (one [`Transcripts`](askbus_protocol::Transcripts)
//! per router), so a history is the same after a restart and through every server sharing
//! the store; a hub without a store keeps them in memory from the router's creation on.
//!
//! Cursor policy, in exact words: a cursor is opaque (`h12-57`, `h12-57.3`). One that
//! cannot be resumed (the records it was folded from are no longer kept, or it is not one
//! of this store's, or an `evt_…` cursor of an older askbus) is answered with a single frame
//! `{"type": "server.resync", "properties": {"reason": "cursor_too_old" | "unknown_cursor"}}`
//! (no `id:`), after which the stream ends: the client loads the history again and streams
//! from its cursor. Never a partial stream: a stream whose next records are trimmed before
//! it reads them (its client reads slower than the session records) ends with the same
//! frame. A malformed cursor is `400`.

use std::convert::Infallible;

use askbus_protocol::{AgentStep, Follow, FrameCursor, ProtocolError, Resync, Step};
use askbus_question::Duties;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event as SseFrame, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use serde::Deserialize;
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

/// The session's flat history (seed 004) and the cursor its stream resumes after.
#[utoipa::path(
    get,
    path = "/session/{id}/history",
    operation_id = "session.history",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The flat history (seed 004) with `agent_status` (`running`: waiting on a human, or no final answer since the user spoke; `idle`), `pending_approval` (the oldest request still waiting, as its history part; absent when none) and `last_event_id`, an opaque cursor: the session's newest records (steps, requests as asked, outcomes), about as many as the server keeps per session (`--max-history-records`, `--max-history-mib`), the same after a restart and through every server sharing the store. Histories are read a few at a time: one waits its turn", body = HashMap<String, serde_json::Value>),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 503, description = "The store cannot be read; try again", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn history(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
) -> Result<Response, ApiError> {
    caller.act_for(&session_id)?;
    let history = state.inner.transcripts.history_json(&session_id).await;
    let history = history.map_err(|error| ApiError::store_unreadable(&error))?;
    Ok(([(header::CONTENT_TYPE, "application/json")], history).into_response())
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
        (status = 200, description = "Server-Sent Events: `data:` is one frame, `id:` its cursor. A cursor that cannot be resumed (its records are no longer kept, or it is not this store's, or an `evt_…` cursor of an older askbus) gets one frame `{\"type\": \"server.resync\", \"properties\": {\"reason\": \"cursor_too_old\" | \"unknown_cursor\"}}` and the stream ends: load the history again and stream from its `last_event_id`", content_type = "text/event-stream", body = crate::openapi::SessionStreamFrame),
        (status = 400, description = "Malformed cursor", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 429, description = "This token holds as many open streams and long polls as it may (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "Every stream slot of the server is taken (`too_many_streams`), or the store cannot be read; try again", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    ),
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
        .map(|text| text.trim().parse::<FrameCursor>());
    let follow = match cursor.transpose() {
        Ok(cursor) => state.inner.transcripts.follow(&session_id, cursor).await,
        Err(error) => Err(error),
    };
    let frames = match follow {
        Ok(follow) => frames(follow, state.inner.shutdown.clone()),
        Err(ProtocolError::Resync { reason }) => stream::iter([Ok(resync(reason))]).boxed(),
        Err(error @ ProtocolError::InvalidCursor { .. }) => {
            return Err(ApiError::bad_request(error.to_string()));
        }
        Err(ProtocolError::Store(error)) => return Err(ApiError::store_unreadable(&error)),
    };
    Ok(Sse::new(frames)
        .keep_alive(KeepAlive::new().interval(state.inner.config.heartbeat_interval)))
}

/// Adds an agent step to the session's history (server mode).
#[utoipa::path(
    post,
    path = "/session/{id}/step",
    operation_id = "session.step",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = Step, description = "A step: `{\"type\": \"text\", \"text\": \"...\"}`, `thinking`, `tool_use` (with `\"display_as_content\": true`: shown outside groups, as a question is, and so is its result), `tool_result` or `user`"),
    responses(
        (status = 200, description = "Recorded (in the store, when the server has one)", body = bool, content_type = "application/json"),
        (status = 403, description = "The token is scoped to another session, or is a reviewer's", body = crate::error::ErrorBody),
        (status = 422, description = "Not a step, a session id over 256 bytes, or a step of more JSON values than one request may hold (`--max-request-values`)", body = crate::error::ErrorBody),
        (status = 503, description = "The store could not record the step", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn step(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
    ApiJson(step): ApiJson<Step>,
) -> Result<Json<bool>, ApiError> {
    caller.act_for(&session_id)?;
    // A step is an agent's, as a request is: a reviewer's credential makes neither.
    Duties::default().check_ask(&caller.0.identity)?;
    state.inner.hub.check_step(&session_id, &step)?;
    AgentStep::new(session_id, step)
        .record(&state.inner.hub)
        .await?;
    Ok(Json(true))
}

/// The frames of `follow` as SSE frames, until shutdown or the bus is gone, or a resync
/// frame when the stream cannot go on. A store that cannot be read is tried again at the
/// next news.
fn frames(
    follow: Follow,
    shutdown: CancellationToken,
) -> BoxStream<'static, Result<SseFrame, Infallible>> {
    stream::unfold(Some((follow, shutdown)), |state| async move {
        let (mut follow, shutdown) = state?;
        loop {
            let next = tokio::select! {
                biased;
                () = shutdown.cancelled() => return None,
                next = follow.next() => next?,
            };
            match next {
                Ok(frame) => {
                    let data = serde_json::to_string(&frame.frame).unwrap_or_else(|_| "{}".into());
                    let frame = SseFrame::default().id(frame.cursor.to_string()).data(data);
                    return Some((Ok(frame), Some((follow, shutdown))));
                }
                // The last frame: the stream ends after it.
                Err(ProtocolError::Resync { reason }) => return Some((Ok(resync(reason)), None)),
                Err(error) => tracing::warn!("a session stream could not read the store: {error}"),
            }
        }
    })
    .boxed()
}

/// The frame that tells a client to load the history again, for `reason` (no `id:`).
fn resync(reason: Resync) -> SseFrame {
    SseFrame::default().data(format!(
        r#"{{"type":"server.resync","properties":{{"reason":"{}"}}}}"#,
        reason.as_str()
    ))
}
