//! Extractors whose every rejection is an [`ApiError`].
//!
//! axum's own extractors answer bad input with plain-text bodies; these wrap them so that a
//! client always gets the JSON error shape, whatever it got wrong.

use std::time::Duration;

use askbus_question::{QuestionId, Timeout};
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorCode};

/// A JSON body; rejections become 400, 413, 415 or 422 [`ApiError`]s.
pub(crate) struct ApiJson<T>(pub(crate) T);

/// Query parameters; a malformed query is a 400 [`ApiError`].
pub(crate) struct ApiQuery<T>(pub(crate) T);

/// A question id from the path (`/question/{id}`); a malformed one is a 400.
pub(crate) struct QuestionPath(pub(crate) QuestionId);

/// A plain path segment (`/session/{id}`).
pub(crate) struct SegmentPath(pub(crate) String);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(&rejection)),
        }
    }
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

impl<S: Send + Sync> FromRequestParts<S> for QuestionPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let SegmentPath(text) = SegmentPath::from_request_parts(parts, state).await?;
        text.parse().map(Self).map_err(|_| {
            ApiError::bad_request(format!(
                "`{}` is not a question id (expected `que_` followed by a 26-character ULID)",
                text.chars().take(64).collect::<String>()
            ))
        })
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

/// A request's `timeout` in seconds as a [`Timeout`]: absent or `null` is the server's
/// default.
///
/// # Errors
///
/// 422 for a negative or non-finite number.
pub(crate) fn timeout_from_seconds(seconds: Option<f64>) -> Result<Timeout, ApiError> {
    match seconds {
        None => Ok(Timeout::Default),
        Some(seconds) => Duration::try_from_secs_f64(seconds)
            .map(Timeout::After)
            .map_err(|_| ApiError::invalid("`timeout` must be a non-negative number of seconds")),
    }
}

/// Maps axum's JSON rejection to the API's error, keeping serde's explanation (which names
/// the field and position, not a Rust type) for malformed or mistyped bodies.
pub(crate) fn json_rejection(rejection: &JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "expected a body with `Content-Type: application/json`",
        ),
        JsonRejection::JsonSyntaxError(_) => {
            ApiError::bad_request(format!("malformed JSON: {}", rejection.body_text()))
        }
        JsonRejection::JsonDataError(_) => {
            ApiError::invalid(format!("unexpected JSON: {}", rejection.body_text()))
        }
        _ if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            ErrorCode::PayloadTooLarge,
            "the request body is larger than the server accepts",
        ),
        _ => ApiError::bad_request("the request body could not be read"),
    }
}
