//! The one error type of the HTTP API and its JSON body.
//!
//! Every failure a client can cause ends here and leaves as
//! `{"code": "...", "message": "..."}` with a 4xx status. Question routes add OpenCode's
//! `_tag` and `requestID`, so OpenCode clients recognise the error. Messages are written for
//! the client: they name what was wrong with the request, never a Rust type, a file or a
//! backtrace.

use std::time::Duration;

use askbus_question::{
    ApprovalId, DurableError, NotAllowed, QuestionId, QuotaExceeded, ReplyError, RequestId,
    SessionRejectError, SubmitError, ValidationError,
};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// What went wrong, as a stable machine-readable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// 400: the request is malformed (bad JSON, bad id, bad query).
    BadRequest,
    /// 401: no bearer token, or not a known one.
    Unauthorized,
    /// 403: the token is scoped to another session.
    Forbidden,
    /// 404: no such route or request.
    NotFound,
    /// 405: the route exists but not with this method.
    MethodNotAllowed,
    /// 408: the request took longer than the server's request timeout.
    RequestTimeout,
    /// 409: the request already has its outcome.
    AlreadyResolved,
    /// 410: an answer link expired (with its request, or after its lifetime).
    LinkExpired,
    /// 409: the tool call id (`tool.callID`, `tool_use_id`) of a new request already asked
    /// something else in its session; the message names the call and the earlier request.
    /// A request joins the earlier one only when it asks exactly the same.
    CallIdReused,
    /// 413: the body is larger than the server accepts.
    PayloadTooLarge,
    /// 415: the body is not `application/json`.
    UnsupportedMediaType,
    /// 406: the client does not accept any type the route answers with (`/mcp` wants
    /// `Accept: application/json, text/event-stream`).
    NotAcceptable,
    /// 414: the request target is longer than the server reads.
    UriTooLong,
    /// 421: the `Host` names a server this is not (see `--allowed-host`).
    MisdirectedRequest,
    /// 431: the request's header is larger than the server reads.
    HeaderTooLarge,
    /// 422: well-formed JSON that does not fit (wrong shape, answers that do not fit the
    /// questions, questions that cannot be asked).
    Invalid,
    /// 429: a quota is used up: too many requests are pending (in the session, for the
    /// token or on the server), or the token holds too many open streams. The message
    /// names the limit; `Retry-After` says when trying again is worth it.
    Quota,
    /// 500: a bug; the message does not say more.
    Internal,
    /// 503: the store could not record the change, so it would not survive a restart (an
    /// answer it could not record reaches no agent), or could not be read.
    StoreUnavailable,
    /// 503: the server holds as many open event streams and long polls (or MCP sessions)
    /// as it allows; `Retry-After` says when trying again is worth it. Other routes still
    /// answer.
    TooManyStreams,
    /// 503: the request's outcome could not be recorded in the store, so nobody may act on
    /// it (its asker and every waiter were told so); the store still holds the request
    /// pending, to be asked again after a restart. What a read or a wait of such a request
    /// answers, distinct from `store_unavailable` (the store could not be reached now).
    OutcomeNotRecorded,
}

/// An error answer of the HTTP API.
///
/// The only way a handler fails; its [`IntoResponse`] writes the JSON body and status and
/// never includes internals.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The machine-readable kind; fixes the status code.
    code: ErrorCode,
    /// A human-readable explanation meant for the client.
    message: String,
    /// OpenCode's error tag, on question and permission routes.
    tag: Option<&'static str>,
    /// The request the error is about, on question and permission routes.
    request_id: Option<RequestId>,
    /// How long the client should wait before trying again (`Retry-After`), if saying so
    /// helps it.
    retry_after: Option<Duration>,
}

/// The JSON body of an error.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorBody<'a> {
    /// The stable kind of error.
    code: ErrorCode,
    /// A human-readable explanation.
    message: &'a str,
    /// OpenCode's error tag (question and permission routes), e.g. `QuestionNotFoundError`.
    #[serde(rename = "_tag", skip_serializing_if = "Option::is_none")]
    #[schema(rename = "_tag")]
    tag: Option<&'static str>,
    /// The request concerned (question and permission routes).
    #[serde(rename = "requestID", skip_serializing_if = "Option::is_none")]
    #[schema(rename = "requestID", value_type = Option<String>)]
    request_id: Option<RequestId>,
}

impl ErrorCode {
    /// The HTTP status this code is sent with.
    pub fn status(self) -> StatusCode {
        match self {
            Self::BadRequest => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::AlreadyResolved | Self::CallIdReused => StatusCode::CONFLICT,
            Self::LinkExpired => StatusCode::GONE,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Self::UriTooLong => StatusCode::URI_TOO_LONG,
            Self::MisdirectedRequest => StatusCode::MISDIRECTED_REQUEST,
            Self::HeaderTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Quota => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::StoreUnavailable | Self::TooManyStreams | Self::OutcomeNotRecorded => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    /// The code for an error status produced outside a handler (a layer, axum's routing).
    pub(crate) fn from_status(status: StatusCode) -> Self {
        match status {
            StatusCode::BAD_REQUEST => Self::BadRequest,
            StatusCode::UNAUTHORIZED => Self::Unauthorized,
            StatusCode::FORBIDDEN => Self::Forbidden,
            StatusCode::NOT_FOUND => Self::NotFound,
            StatusCode::METHOD_NOT_ALLOWED => Self::MethodNotAllowed,
            StatusCode::REQUEST_TIMEOUT => Self::RequestTimeout,
            StatusCode::CONFLICT => Self::AlreadyResolved,
            StatusCode::GONE => Self::LinkExpired,
            StatusCode::PAYLOAD_TOO_LARGE => Self::PayloadTooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMediaType,
            StatusCode::NOT_ACCEPTABLE => Self::NotAcceptable,
            StatusCode::URI_TOO_LONG => Self::UriTooLong,
            StatusCode::MISDIRECTED_REQUEST => Self::MisdirectedRequest,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => Self::HeaderTooLarge,
            StatusCode::UNPROCESSABLE_ENTITY => Self::Invalid,
            StatusCode::TOO_MANY_REQUESTS => Self::Quota,
            StatusCode::SERVICE_UNAVAILABLE => Self::StoreUnavailable,
            status if status.is_client_error() => Self::BadRequest,
            _ => Self::Internal,
        }
    }
}

impl ApiError {
    /// An error of kind `code` with a message for the client.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            tag: None,
            request_id: None,
            retry_after: None,
        }
    }

    /// The same error, telling the client to wait `delay` before trying again (a
    /// `Retry-After` header, in whole seconds, at least one).
    #[must_use]
    pub fn with_retry_after(mut self, delay: Duration) -> Self {
        self.retry_after = Some(delay);
        self
    }

    /// 400 `bad_request`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }

    /// 422 `invalid`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Invalid, message)
    }

    /// 403 `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }

    /// 401 `unauthorized`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthorized, message)
    }

    /// 404 `not_found` for a question id, tagged as OpenCode does.
    pub fn question_not_found(id: QuestionId) -> Self {
        Self::new(
            ErrorCode::NotFound,
            format!("question request {id} not found"),
        )
        .for_question(id)
    }

    /// The kind of error.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message sent to the client.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Marks the error as about question `id`: adds `requestID` and OpenCode's `_tag`.
    #[must_use]
    pub fn for_question(mut self, id: QuestionId) -> Self {
        self.request_id = Some(RequestId::Question(id));
        self.tag = Some(match self.code {
            ErrorCode::NotFound => "QuestionNotFoundError",
            ErrorCode::AlreadyResolved => "QuestionAlreadyResolvedError",
            ErrorCode::Invalid => "QuestionInvalidError",
            ErrorCode::Forbidden | ErrorCode::Unauthorized => "QuestionForbiddenError",
            _ => "QuestionRequestError",
        });
        self
    }

    /// Marks the error as about approval `id` answered as an OpenCode permission: adds
    /// `requestID` and OpenCode's `_tag` (`PermissionNotFoundError`, ...).
    #[must_use]
    pub fn for_permission(mut self, id: ApprovalId) -> Self {
        self.request_id = Some(RequestId::Approval(id));
        self.tag = Some(match self.code {
            ErrorCode::NotFound => "PermissionNotFoundError",
            ErrorCode::AlreadyResolved => "PermissionAlreadyResolvedError",
            ErrorCode::Invalid => "PermissionInvalidError",
            ErrorCode::Forbidden | ErrorCode::Unauthorized => "PermissionForbiddenError",
            _ => "PermissionRequestError",
        });
        self
    }
}

impl From<ReplyError> for ApiError {
    fn from(error: ReplyError) -> Self {
        match error {
            ReplyError::NotFound(id) => Self::question_not_found(id),
            ReplyError::AlreadyResolved { id, outcome } => Self::new(
                ErrorCode::AlreadyResolved,
                format!("question request {id} was already {outcome}"),
            )
            .for_question(id),
            ReplyError::Invalid(invalid) => Self::from(invalid),
            ReplyError::NotAllowed(refused) => Self::from(refused),
            ReplyError::NotRecorded { .. } => Self::outcome_not_recorded(),
        }
    }
}

impl From<NotAllowed> for ApiError {
    /// 403 `forbidden`: the token is right, its role (or its having asked) is not.
    fn from(refused: NotAllowed) -> Self {
        Self::forbidden(refused.to_string())
    }
}

impl From<SessionRejectError> for ApiError {
    fn from(error: SessionRejectError) -> Self {
        match error {
            SessionRejectError::NotAllowed(refused) => Self::from(refused),
            SessionRejectError::Durable(error) => Self::from(error),
        }
    }
}

impl From<DurableError> for ApiError {
    /// Another instance sharing the store answered first: `409`, as when this instance
    /// knew it already; a store that could not record the change: `503`; a vote another
    /// of the same reviewer's beat: `403`, as when this instance knew of that one.
    fn from(error: DurableError) -> Self {
        match error {
            DurableError::AlreadyResolved { .. } => {
                Self::new(ErrorCode::AlreadyResolved, error.to_string())
            }
            DurableError::Store(error) => Self::from(error),
            DurableError::NotCounted(refused) => Self::from(refused),
            // The server the request was asked on can decide it: like a `Host` this one
            // does not answer for.
            DurableError::NotHere { .. } => {
                Self::new(ErrorCode::MisdirectedRequest, error.to_string())
            }
        }
    }
}

impl From<askbus_store::StoreError> for ApiError {
    /// The change is not durable: the client should not count on it surviving a restart,
    /// and an answer it was reaches no agent (see `Durable`). The store's own message stays
    /// in the server log.
    fn from(error: askbus_store::StoreError) -> Self {
        if let askbus_store::StoreError::Overloaded { .. } = error {
            // Refused before it was queued: nothing of it was done. Said once a minute at
            // most, as a client may send these at its own rate.
            overloaded_warning(&error);
            return Self::new(
                ErrorCode::StoreUnavailable,
                format!("not done: {error}; try again later"),
            )
            .with_retry_after(OVERLOADED_RETRY_AFTER);
        }
        tracing::error!("the store could not record a change: {error}");
        Self::new(
            ErrorCode::StoreUnavailable,
            "the server could not store this change durably, so it may be lost if the server restarts; no agent is handed an answer that was not stored",
        )
    }
}

/// How long a client refused because the store's queue is full is told to wait.
const OVERLOADED_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Logs `error` (the store's queue is full) unless it was logged in the last minute.
fn overloaded_warning(error: &askbus_store::StoreError) {
    static LAST: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
        *last = Some(std::time::Instant::now());
        tracing::warn!("a write was refused: {error} (said at most once a minute)");
    }
}

/// How long a client refused for a pending-request quota is told to wait. A slot frees
/// when a human answers (or a request times out), which the server cannot foresee; 30 s is
/// about the time a human takes to read and answer a request, so a client waiting that long
/// often finds room, and one that keeps trying no faster does not flood the server.
pub(crate) const QUOTA_RETRY_AFTER: Duration = Duration::from_secs(30);

impl From<SubmitError> for ApiError {
    /// 422 or 409 for a request that cannot be made, 429 for one past a quota.
    fn from(error: SubmitError) -> Self {
        match error {
            SubmitError::Invalid(invalid) => Self::from(invalid),
            SubmitError::OverQuota(exceeded) => Self::from(exceeded),
            SubmitError::NotAllowed(refused) => Self::from(refused),
        }
    }
}

impl From<QuotaExceeded> for ApiError {
    /// 429 `quota`, naming the limit, with `Retry-After`.
    fn from(exceeded: QuotaExceeded) -> Self {
        Self::new(ErrorCode::Quota, exceeded.to_string()).with_retry_after(QUOTA_RETRY_AFTER)
    }
}

impl ApiError {
    /// `503 outcome_not_recorded`: a request whose outcome the store refused, read or
    /// waited for: read as an outcome, it would be acted on. The store's failure was logged
    /// when it happened, not again at each read.
    pub(crate) fn outcome_not_recorded() -> Self {
        Self::new(
            ErrorCode::OutcomeNotRecorded,
            "the server could not store this request's outcome durably, so it must not be acted on; the request stays pending in the store and is asked again after a restart",
        )
    }

    /// `503`: the store could not be read (what it holds is not lost; try again). The
    /// store's own message stays in the server log.
    pub(crate) fn store_unreadable(error: &askbus_store::StoreError) -> Self {
        tracing::error!("the store could not be read: {error}");
        Self::new(
            ErrorCode::StoreUnavailable,
            "the server could not read its store; try again",
        )
    }
}

impl From<ValidationError> for ApiError {
    /// 422, or 409 for a tool call id that already asked something else.
    fn from(error: ValidationError) -> Self {
        match error.conflicting_request() {
            Some(_) => Self::new(ErrorCode::CallIdReused, error.to_string()),
            None => Self::invalid(error.to_string()),
        }
    }
}

impl ApiError {
    /// The JSON body of this error, for a writer that answers outside the router (the
    /// connection's own answers to a request it cannot parse).
    pub fn to_json(&self) -> Vec<u8> {
        let body = ErrorBody {
            code: self.code,
            message: &self.message,
            tag: self.tag,
            request_id: self.request_id,
        };
        // Serialising a struct of strings cannot fail; the fallback keeps the answer JSON.
        serde_json::to_vec(&body)
            .unwrap_or_else(|_| br#"{"code":"internal","message":"internal error"}"#.to_vec())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let json = self.to_json();
        let mut response = (self.code.status(), json).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(delay) = self.retry_after {
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(delay.as_secs().max(1)),
            );
        }
        response
    }
}
