//! Extractors whose every rejection is an [`ApiError`], and the one way a request body is
//! read.
//!
//! axum's own extractors answer bad input with plain-text bodies; these wrap them so that a
//! client always gets the JSON error shape, whatever it got wrong.
//!
//! **Memory per request is bounded by the body limit, however the body is framed.** Every
//! body is read by [`read_body`], which copies each frame into one buffer of its own and
//! drops the frame before reading the next. Collecting the frames instead (axum's `Bytes`
//! extractor, `http_body_util::Collected`) keeps each one alive, and each is a slice of the
//! connection's read buffer: a body dripped one byte per TCP segment then pinned a whole
//! buffer (8 KiB or more) per byte, half a gigabyte for one 64 KiB body. A body whose
//! `Content-Length` is over the limit is refused before any of it is read.

use std::time::Duration;

use askbus_bus::IdKind;
use askbus_question::{QuestionId, QuestionIdPrefix, Timeout};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::AppState;
use crate::error::{ApiError, ErrorCode};

/// A JSON body; rejections become 400, 413, 415 or 422 [`ApiError`]s.
pub(crate) struct ApiJson<T>(pub(crate) T);

/// Query parameters; a malformed query is a 400 [`ApiError`].
pub(crate) struct ApiQuery<T>(pub(crate) T);

/// A question from the path (`/question/{id}`): its `que_` id, or its seeds' key
/// `{session_id}_{n}` (resolved to the id here, so every question route takes both). A
/// segment that is neither is a 400; a key no request holds, a 404.
pub(crate) struct QuestionPath(pub(crate) QuestionId);

/// A plain path segment (`/session/{id}`).
pub(crate) struct SegmentPath(pub(crate) String);

/// A JSON body not parsed yet, for a handler that reads it its own way; rejections become
/// 400, 413 or 415 [`ApiError`]s.
pub(crate) struct JsonBody(pub(crate) Bytes);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let JsonBody(body) = JsonBody::from_request(request, state).await?;
        parse_json(&body).map(Self)
    }
}

impl FromRequest<AppState> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        if !crate::questions::is_json(request.headers()) {
            return Err(not_json());
        }
        read_body(request.into_body(), state.inner.config.body_limit)
            .await
            .map(Self)
    }
}

/// Reads `body` whole, up to `limit` bytes, holding no more than one copy of what arrived.
///
/// Each frame is copied into the one buffer and dropped before the next is read (see the
/// module docs for why), and a `Content-Length` over `limit` is refused before anything is
/// read, so a client cannot make a request cost more than `limit` bytes of body, however
/// it frames or paces it.
///
/// # Errors
///
/// 413 `payload_too_large` for a body over `limit` (announced or as it arrives); 400
/// `bad_request` if the connection failed before the body was complete.
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let announced = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    if announced > limit {
        return Err(too_large());
    }
    // A `Content-Length` is exact: one allocation, which the limit bounds.
    let mut buffer = Vec::with_capacity(announced);
    let mut frames = body.into_data_stream();
    while let Some(frame) = frames.next().await {
        let data =
            frame.map_err(|_| ApiError::bad_request("the request body could not be read"))?;
        if data.len() > limit - buffer.len() {
            return Err(too_large());
        }
        buffer.extend_from_slice(&data);
    }
    Ok(Bytes::from(buffer))
}

/// `body` as JSON of type `T`: 400 for malformed JSON, 422 for JSON of another shape
/// (serde's explanation names the field and position, never a Rust type).
pub(crate) fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|error| {
        if error.is_data() {
            ApiError::invalid(format!("unexpected JSON: {error}"))
        } else {
            ApiError::bad_request(format!("malformed JSON: {error}"))
        }
    })
}

/// 415: the body is not JSON.
pub(crate) fn not_json() -> ApiError {
    ApiError::new(
        ErrorCode::UnsupportedMediaType,
        "expected a body with `Content-Type: application/json`",
    )
}

/// 413: the body is over the limit.
fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        "the request body is larger than the server accepts",
    )
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| Self(value))
            .map_err(|rejection: QueryRejection| {
                ApiError::bad_request(format!("invalid query string: {}", rejection.body_text()))
            })
    }
}

impl FromRequestParts<AppState> for QuestionPath {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let SegmentPath(text) = SegmentPath::from_request_parts(parts, state).await?;
        if let Ok(id) = text.parse() {
            return Ok(Self(id));
        }
        let shown: String = text.chars().take(64).collect();
        // Something that starts as an id does is a malformed id, not a key (of a session
        // named `que`, say): a client that mistyped an id is told so.
        let key_session = text
            .rsplit_once('_')
            .filter(|(session, n)| {
                !text.starts_with(QuestionIdPrefix::PREFIX)
                    && !session.is_empty()
                    && n.parse::<u64>().is_ok()
            })
            .map(|(session, _)| session);
        let Some(session) = key_session else {
            return Err(ApiError::bad_request(format!(
                "`{shown}` is not a question id (expected `que_` followed by a 26-character ULID, or the key `{{sessionID}}_{{n}}`)"
            )));
        };
        let unknown_key = || {
            ApiError::new(
                ErrorCode::NotFound,
                format!("no question request has the key `{shown}`"),
            )
        };
        // A key names its session: a token scoped to another one learns nothing from it,
        // not even that the request exists (its answer would name the request's id).
        if let Some(caller) = parts.extensions.get::<crate::auth::Caller>()
            && !caller.0.scope.allows(session)
        {
            return Err(unknown_key());
        }
        let hub = &state.inner.hub;
        let id = match hub.questions().id_for_key(&text) {
            Some(id) => id,
            // Perhaps asked through another server sharing the store a moment ago.
            None => {
                hub.caught_up().await?;
                hub.questions().id_for_key(&text).ok_or_else(unknown_key)?
            }
        };
        Ok(Self(id))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for SegmentPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .map(|Path(text)| Self(text))
            .map_err(|_| ApiError::bad_request("the path segment is not valid UTF-8"))
    }
}

/// A request's `timeout` as sent: absent (the server's default), `null` (never), or a
/// number of seconds. A field of this type needs `#[serde(default)]`, so that an absent
/// field is [`RequestTimeout::Default`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) enum RequestTimeout {
    /// The field is absent: the server's default for the kind of request.
    #[default]
    Default,
    /// `null`: wait for a human for good.
    Never,
    /// A number of seconds.
    Seconds(f64),
}

impl<'de> serde::Deserialize<'de> for RequestTimeout {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<f64>::deserialize(deserializer)? {
            None => Self::Never,
            Some(seconds) => Self::Seconds(seconds),
        })
    }
}

impl RequestTimeout {
    /// The [`Timeout`] asked for. A number too large for a `Duration` becomes the longest
    /// one, which the services refuse as longer than
    /// [`MAX_TIMEOUT`](askbus_question::MAX_TIMEOUT) (one rule, kept there).
    ///
    /// # Errors
    ///
    /// 422 for a negative or non-finite number.
    pub(crate) fn timeout(self) -> Result<Timeout, ApiError> {
        match self {
            Self::Default => Ok(Timeout::Default),
            Self::Never => Ok(Timeout::Never),
            Self::Seconds(seconds) if seconds.is_finite() && seconds >= 0.0 => Ok(Timeout::After(
                Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX),
            )),
            Self::Seconds(_) => Err(ApiError::invalid(
                "`timeout` must be a number of seconds, at least 0 and at most one year, or null (never)",
            )),
        }
    }
}
