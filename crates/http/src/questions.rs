//! The question routes, OpenCode-compatible, and server mode for agents in any language.

use std::collections::BTreeMap;
use std::sync::Arc;

use askbus_question::{
    Answer, Answers, Identity, OnTimeout, Outcome, PendingQuestion, QuestionId, QuestionInfo,
    QuestionOutcome, QuestionRequest, QuestionService, QuestionSnapshot, RequestHub, RequestId,
    ResumeInput, ToolRef,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, header};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{
    ApiJson, ApiQuery, JsonBody, QuestionPath, RequestTimeout, not_json, parse_json, read_body,
};
use crate::follow_up::FollowUpFields;
use crate::long_poll::WaitQuery;
use crate::paging::{PageQuery, Paged};
use crate::request_routes::{self, RequestRoutes};

/// `GET /question` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Only this session's questions.
    #[serde(rename = "sessionID")]
    #[param(rename = "sessionID")]
    session_id: Option<String>,
    /// Accepted for OpenCode clients, ignored.
    #[allow(dead_code)]
    directory: Option<String>,
}

/// `POST /question` body: a question asked by an agent over HTTP (server mode).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct CreateQuestion {
    /// The asking session.
    #[serde(rename = "sessionID")]
    #[schema(min_length = 1)]
    session_id: String,
    /// The questions, answered together.
    #[schema(min_items = 1)]
    questions: Vec<QuestionInfo>,
    /// The tool call that asked, if any.
    #[serde(default)]
    tool: Option<ToolRef>,
    /// Seconds before the question times out, at most one year (31,536,000); absent: the
    /// server's default (`--question-timeout`, 600 s unless set); `null`: never.
    #[serde(default)]
    #[schema(value_type = Option<f64>, minimum = 0, maximum = 31_536_000)]
    timeout: RequestTimeout,
    /// Seconds after which `question.reminded` is published, if nobody answered; before
    /// the deadline. Absent: the server's default (`--remind-after`), if any.
    #[serde(rename = "remindAfter", default)]
    remind_after: Option<f64>,
    /// Seconds after which the question escalates to `escalateTo` (`question.escalated`),
    /// if nobody answered; before the deadline. Absent: the server's default.
    #[serde(rename = "escalateAfter", default)]
    escalate_after: Option<f64>,
    /// Who the question escalates to: names of this server's credentials that may decide
    /// (reviewers, admins). Absent: the server's default (`--escalate-to`).
    #[serde(rename = "escalateTo", default)]
    escalate_to: Vec<String>,
    /// What applies if nobody answered by the deadline: `"reject"` (the question times
    /// out), `"escalate"` (escalate at the deadline, wait as long once more, then time
    /// out), or `{"answer": [["label"], ...]}`: this default answer, one per question,
    /// checked as a reply is, and reported as the asker's fallback, never as a human's
    /// answer. Absent: the server's default (`--on-timeout`, else `reject`).
    #[serde(rename = "onTimeout", default)]
    on_timeout: Option<OnTimeout>,
    /// The language of the request, as a BCP 47 tag (`vi`, `zh-CN`): the web UI shows its
    /// card in that language when it has it. Absent: each reader's own.
    #[serde(default)]
    #[schema(
        max_length = 35,
        pattern = "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$",
        example = "vi"
    )]
    locale: Option<String>,
}

/// `POST /question/{id}/reject` body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub(crate) struct RejectBody {
    /// Why the human declined.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// A request with its state: the `QuestionRequest` fields plus `status`, and `answers` or
/// `reason` once resolved.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct QuestionStatus {
    /// The request.
    #[serde(flatten)]
    #[schema(value_type = QuestionRequest)]
    request: Arc<QuestionRequest>,
    /// Where it stands.
    status: RequestState,
    /// One answer per question, when `replied`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Vec<String>>>)]
    answers: Option<Answers>,
    /// The human's reason, when `rejected` with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Who answered or rejected it (or cancelled it), once resolved.
    #[serde(rename = "answeredBy", skip_serializing_if = "Option::is_none")]
    answered_by: Option<Identity>,
    /// When `timed_out` with a fallback other than a plain rejection: `default_answer`
    /// (see `defaultAnswers`) or `escalate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback: Option<&'static str>,
    /// With `fallback: "default_answer"`: the asker's default answer that applied, one per
    /// question. Nobody answered: this is no human's answer.
    #[serde(rename = "defaultAnswers", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Vec<String>>>)]
    default_answers: Option<Answers>,
}

/// Where a request (question or approval) stands.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RequestState {
    /// Waiting for a human.
    Pending,
    /// Answered; see `answers`.
    Replied,
    /// Declined; see `reason`.
    Rejected,
    /// Nobody answered in time.
    TimedOut,
    /// The asker went away or the session was cancelled.
    Cancelled,
}

/// `POST /session/{id}/cancel` answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Cancelled {
    /// How many pending requests were cancelled.
    cancelled: usize,
}

/// List pending questions, ascending by id: all of them, or one page with `limit`.
#[utoipa::path(
    get,
    path = "/question",
    operation_id = "question.list",
    tag = "question",
    params(ListQuery, PageQuery),
    responses(
        (status = 200, description = "Pending questions, ascending by id", body = Vec<QuestionRequest>, headers(
            ("link" = String, description = "With `limit`, when more follow: `<URL of the next page>; rel=\"next\"`"),
            ("x-next-cursor" = String, description = "With `limit`, when more follow: the `after` of the next page"),
        )),
        (status = 400, description = "Malformed `limit` or `after`", body = crate::error::ErrorBody),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 503, description = "The store shared with other servers could not be reached", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
    ApiQuery(paging): ApiQuery<PageQuery>,
) -> Result<Paged<QuestionRequest>, ApiError> {
    request_routes::list::<QuestionService>(&state, &caller, query.session_id.as_deref(), &paging)
        .await
}

/// Get one question, pending or resolved, with its status.
#[utoipa::path(
    get,
    path = "/question/{id}",
    operation_id = "question.get",
    tag = "question",
    params(("id" = String, Path, description = "Question id, `que_` + ULID, or its key `{sessionID}_{n}` (`approvalKey`)")),
    responses(
        (status = 200, description = "The question with its status", body = QuestionStatus),
        (status = 400, description = "Malformed id", body = crate::error::ErrorBody),
        (status = 404, description = "No such question (or not visible to this token)", body = crate::error::ErrorBody),
        (status = 503, description = "The store shared with other servers could not be reached, or the store refused the request's outcome (`outcome_not_recorded`): it must not be acted on, and the request stays pending in the store", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    QuestionPath(id): QuestionPath,
) -> Result<Json<QuestionStatus>, ApiError> {
    request_routes::get::<QuestionService>(&state, &caller, &id).await
}

/// Wait (long poll) until a question is resolved or the timeout runs out.
#[utoipa::path(
    get,
    path = "/question/{id}/wait",
    operation_id = "question.wait",
    tag = "question",
    params(("id" = String, Path, description = "Question id, `que_` + ULID, or its key `{sessionID}_{n}` (`approvalKey`)"), WaitQuery),
    responses(
        (status = 200, description = "The question with its status; `pending` when the wait ran out", body = QuestionStatus),
        (status = 400, description = "Malformed id or timeout", body = crate::error::ErrorBody),
        (status = 404, description = "No such question (or not visible to this token)", body = crate::error::ErrorBody),
        (status = 429, description = "This token holds as many open streams and long polls as it may (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "The store shared with other servers could not be reached, every stream slot of the server is taken (`too_many_streams`), or the outcome could not be stored durably (`outcome_not_recorded`): it must not be acted on, and the request stays pending in the store", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    ),
)]
pub(crate) async fn wait(
    State(state): State<AppState>,
    caller: Caller,
    QuestionPath(id): QuestionPath,
    ApiQuery(query): ApiQuery<WaitQuery>,
) -> Result<Json<QuestionStatus>, ApiError> {
    request_routes::wait::<QuestionService>(&state, &caller, &id, &query).await
}

/// Answer a pending question.
#[utoipa::path(
    post,
    path = "/question/{id}/reply",
    operation_id = "question.reply",
    tag = "question",
    params(("id" = String, Path, description = "Question id, `que_` + ULID, or its key `{sessionID}_{n}` (`approvalKey`)")),
    request_body(content = crate::openapi::ReplyBodySchema, description = "`{\"answers\": [[...], ...]}`, or keyed by question text: the seeds' `{\"answers\": {\"<question text>\": \"A, B\"}}` (its `type`, `session_id` and `approval_key` ignored) or the bare `{\"<question text>\": \"A, B\"}`"),
    responses(
        (status = 200, description = "Answered", body = bool, content_type = "application/json"),
        (status = 400, description = "Malformed id or JSON", body = crate::error::ErrorBody),
        (status = 404, description = "No such question", body = crate::error::ErrorBody),
        (status = 409, description = "Already resolved", body = crate::error::ErrorBody),
        (status = 413, description = "Body too large", body = crate::error::ErrorBody),
        (status = 415, description = "Not JSON", body = crate::error::ErrorBody),
        (status = 422, description = "The answers do not fit the questions", body = crate::error::ErrorBody),
        (status = 503, description = "The answer could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn reply(
    State(state): State<AppState>,
    caller: Caller,
    QuestionPath(id): QuestionPath,
    body: ReplyBody,
) -> Result<Json<bool>, ApiError> {
    may_act_on(&state, &caller, id).await?;
    let hub = state.hub_for(&caller);
    let questions = hub.questions();
    let result = match body.form(id)? {
        ReplyForm::Answers(answers) => questions.reply(id, answers),
        ReplyForm::Keyed(keyed) => questions.reply_keyed(id, &keyed),
    };
    // 200 only once the answer is durable: a crash after this cannot lose it.
    result
        .map_err(|error| ApiError::from(error).for_question(id))?
        .await
        .map_err(|error| ApiError::from(error).for_question(id))?;
    Ok(Json(true))
}

/// Decline to answer a pending question.
#[utoipa::path(
    post,
    path = "/question/{id}/reject",
    operation_id = "question.reject",
    tag = "question",
    params(("id" = String, Path, description = "Question id, `que_` + ULID, or its key `{sessionID}_{n}` (`approvalKey`)")),
    request_body(content = Option<RejectBody>, description = "Optional: `{\"reason\": \"...\"}`"),
    responses(
        (status = 200, description = "Rejected", body = bool, content_type = "application/json"),
        (status = 404, description = "No such question", body = crate::error::ErrorBody),
        (status = 409, description = "Already resolved", body = crate::error::ErrorBody),
        (status = 503, description = "The rejection could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn reject(
    State(state): State<AppState>,
    caller: Caller,
    QuestionPath(id): QuestionPath,
    request: Request,
) -> Result<Json<bool>, ApiError> {
    may_act_on(&state, &caller, id).await?;
    let body: RejectBody = optional_json(request, &state).await?.unwrap_or_default();
    state
        .hub_for(&caller)
        .questions()
        .reject(id, body.reason)
        .map_err(|error| ApiError::from(error).for_question(id))?
        .await
        .map_err(|error| ApiError::from(error).for_question(id))?;
    Ok(Json(true))
}

/// Ask a question (server mode): create it and return it at once.
///
/// With `tool.callID`, asking again from the same tool call returns the request that call
/// made (pending or resolved: `wait` tells) instead of asking twice, but only if it asks the
/// same questions; other questions under that call id are refused with `409`
/// `call_id_reused`.
#[utoipa::path(
    post,
    path = "/question",
    operation_id = "question.create",
    tag = "question",
    request_body = CreateQuestion,
    responses(
        (status = 200, description = "The new pending question", body = QuestionRequest),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 415, description = "Not JSON", body = crate::error::ErrorBody),
        (status = 409, description = "`tool.callID` already asked other questions in this session (`call_id_reused`)", body = crate::error::ErrorBody),
        (status = 422, description = "The questions cannot be asked", body = crate::error::ErrorBody),
        (status = 429, description = "Too many requests are pending in the session, for the token or on the server (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "The request could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateQuestion>,
) -> Result<Json<Arc<QuestionRequest>>, ApiError> {
    caller.act_for(&body.session_id)?;
    let timeout = body.timeout.timeout()?;
    let follow_up = FollowUpFields {
        remind_after: (body.remind_after, "remindAfter"),
        escalate_after: (body.escalate_after, "escalateAfter"),
        escalate_to: (body.escalate_to, "escalateTo"),
        on_timeout: body.on_timeout,
    }
    .follow_up(&state)?;
    let hub = state.hub_for(&caller);
    let mut ask = hub
        .questions()
        .ask(body.session_id, body.questions)
        .tool(body.tool)
        .timeout(timeout)
        .follow_up(follow_up);
    if let Some(locale) = body.locale {
        ask = ask.locale(locale);
    }
    request_routes::created(
        ask.submit()?,
        PendingQuestion::recorded,
        PendingQuestion::detach,
    )
    .await
}

/// `Ok` if the caller may act on the request: 404 otherwise, as [`visible`]. With a token
/// for every session on a server that shares no store there is nothing to check, since the
/// action itself answers 404 for an unknown id: the request is then looked up once, not
/// twice.
async fn may_act_on(state: &AppState, caller: &Caller, id: QuestionId) -> Result<(), ApiError> {
    if caller.0.scope.session().is_none() && !state.inner.hub.shares_store() {
        return Ok(());
    }
    visible(state, caller, id).await.map(drop)
}

/// The question if it exists and the caller may see it; otherwise 404, the same answer
/// whether it does not exist or belongs to another session (the check both kinds share:
/// [`request_routes::visible`]).
pub(crate) async fn visible(
    state: &AppState,
    caller: &Caller,
    id: QuestionId,
) -> Result<QuestionSnapshot, ApiError> {
    request_routes::visible::<QuestionService>(state, caller, &id).await
}

/// A reply's body as it came: the JSON of `POST /question/{id}/reply` (or OpenCode's v2
/// route), or a value another entry built (an answer link's, Slack's). Either becomes a
/// [`ReplyForm`] the same way.
pub(crate) enum ReplyBody {
    /// A request's JSON, not parsed yet.
    Json(Bytes),
    /// A JSON value already parsed.
    Value(Value),
}

impl FromRequest<AppState> for ReplyBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let JsonBody(body) = JsonBody::from_request(request, state).await?;
        Ok(Self::Json(body))
    }
}

impl ReplyBody {
    /// The reply it holds for question `id`: 400 for malformed JSON (as on any route), 422
    /// for JSON of no accepted form (an error about the question, tagged as such).
    fn form(self, id: QuestionId) -> Result<ReplyForm, ApiError> {
        let value = match self {
            Self::Json(body) => match ReplyForm::by_position(&body) {
                Some(form) => return Ok(form),
                None => parse_json(&body)?,
            },
            Self::Value(value) => value,
        };
        ReplyForm::parse(value).map_err(|error| error.for_question(id))
    }
}

/// The accepted reply bodies: `answers` by position, or keyed by question text, the keyed
/// map either under `answers` (the seeds' reply) or as the whole body.
pub(crate) enum ReplyForm {
    /// `{"answers": [["A"], ["B", "C"]]}`.
    Answers(Vec<Answer>),
    /// `{"answers": {"<question text>": "A, B"}}` or `{"<question text>": "A, B"}`.
    Keyed(BTreeMap<String, String>),
}

impl ReplyForm {
    /// The primary form, `{"answers": [["A"], ["B", "C"]]}` (other fields ignored, as
    /// [`parse`](Self::parse) ignores them), read straight into its type: the reply route's
    /// common case, without building a `Value` first. `None` for any other body, which
    /// `parse` then reads (and explains, if it must refuse it).
    fn by_position(body: &[u8]) -> Option<Self> {
        /// The primary form's one field.
        #[derive(Deserialize)]
        struct ByPosition {
            answers: Vec<Answer>,
        }
        serde_json::from_slice(body)
            .ok()
            .map(|ByPosition { answers }| Self::Answers(answers))
    }

    /// A reply body. With `answers` an array or an object, the other fields are ignored:
    /// the seeds' reply message carries `type`, `session_id` and `approval_key` beside
    /// its `answers`, and the path already names the request here.
    fn parse(body: Value) -> Result<Self, ApiError> {
        let Value::Object(mut fields) = body else {
            return Err(ApiError::invalid(
                "expected a JSON object: {\"answers\": [[\"label\"], ...]}, {\"answers\": {\"<question text>\": \"label, label\"}} or {\"<question text>\": \"label, label\"}",
            ));
        };
        // A string under `answers` is the keyed answer to a question whose text is "answers".
        match fields.get("answers") {
            Some(Value::Array(_) | Value::Object(_)) => {
                Self::from_answers(fields.remove("answers").unwrap_or_default())
            }
            _ => keyed(fields).map(Self::Keyed),
        }
    }

    /// The value of an `answers` field, in a reply body or a session's resume input: an
    /// array of one answer per question, or an object keyed by question text.
    pub(crate) fn from_answers(answers: Value) -> Result<Self, ApiError> {
        match answers {
            Value::Object(fields) => keyed(fields).map(Self::Keyed),
            answers => serde_json::from_value(answers)
                .map(Self::Answers)
                .map_err(|_| {
                    ApiError::invalid(
                        "`answers` must be an array with one array of strings per question, or an object of one string per question text",
                    )
                }),
        }
    }
}

/// Keyed answers: every value a string (labels joined with `", "`).
fn keyed(fields: serde_json::Map<String, Value>) -> Result<BTreeMap<String, String>, ApiError> {
    fields
        .into_iter()
        .map(|(question, answer)| match answer {
            Value::String(text) => Ok((question, text)),
            _ => Err(ApiError::invalid(format!(
                "the keyed answer to {question:?} must be a string (labels joined with \", \")"
            ))),
        })
        .collect()
}

impl From<ReplyForm> for ResumeInput {
    fn from(form: ReplyForm) -> Self {
        match form {
            ReplyForm::Answers(answers) => Self::Answers(answers),
            ReplyForm::Keyed(keyed) => Self::KeyedAnswers(keyed),
        }
    }
}

/// An optional JSON body: empty (or `null`) means `None`; anything else must be JSON.
pub(crate) async fn optional_json<T: serde::de::DeserializeOwned>(
    request: Request,
    state: &AppState,
) -> Result<Option<T>, ApiError> {
    let is_json = is_json(request.headers());
    let bytes = read_body(request.into_body(), state.inner.config.body_limit).await?;
    if bytes.trim_ascii().is_empty() {
        return Ok(None);
    }
    if !is_json {
        return Err(not_json());
    }
    // `null` is no body too, as the document's optional (nullable) body says.
    parse_json(&bytes)
}

/// Whether the `Content-Type` is JSON (`application/json` or `application/*+json`).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| {
            // Compared without case, and without a lower-case copy per request.
            let essence = essence.trim().as_bytes();
            let (application, json) = (b"application/", b"+json");
            essence.eq_ignore_ascii_case(b"application/json")
                || (essence.len() >= application.len() + json.len()
                    && essence[..application.len()].eq_ignore_ascii_case(application)
                    && essence[essence.len() - json.len()..].eq_ignore_ascii_case(json))
        })
}

impl From<QuestionSnapshot> for QuestionStatus {
    fn from(snapshot: QuestionSnapshot) -> Self {
        let (mut fallback, mut default_answers) = (None, None);
        let (status, answers, reason) = match snapshot.outcome {
            None => (RequestState::Pending, None, None),
            Some(Outcome::Replied(answers)) => (RequestState::Replied, Some(answers), None),
            Some(Outcome::Rejected { reason }) => (RequestState::Rejected, None, reason),
            Some(Outcome::TimedOut) => {
                fallback = snapshot.request.on_timeout.as_ref().map(OnTimeout::as_str);
                (RequestState::TimedOut, None, None)
            }
            Some(Outcome::Defaulted(answers)) => {
                fallback = Some(OnTimeout::Answer(Vec::new()).as_str());
                default_answers = Some(answers);
                (RequestState::TimedOut, None, None)
            }
            Some(Outcome::Cancelled) => (RequestState::Cancelled, None, None),
        };
        Self {
            request: snapshot.request,
            status,
            answers,
            reason,
            answered_by: snapshot.decided_by,
            fallback,
            default_answers,
        }
    }
}

impl RequestRoutes for QuestionService {
    type Request = QuestionRequest;
    type Reply = Answers;
    type Rejection = Option<String>;
    // `QuestionPath` has read a key as the id it names already.
    type Key = QuestionId;
    type Status = QuestionStatus;

    const LIST_PATH: &'static str = "/question";
    // OpenCode's name.
    const SESSION_PARAM: &'static str = "sessionID";

    fn of(hub: &RequestHub) -> &Self {
        hub.questions()
    }

    fn request_id(request: &QuestionRequest) -> RequestId {
        RequestId::Question(request.id)
    }

    fn session_id(request: &QuestionRequest) -> &str {
        &request.session_id
    }

    fn find(&self, id: &QuestionId) -> Option<QuestionSnapshot> {
        self.get(*id)
    }

    fn not_found(id: &QuestionId) -> ApiError {
        ApiError::question_not_found(*id)
    }

    fn pending(
        &self,
        session_id: Option<&str>,
        after: Option<RequestId>,
        limit: usize,
    ) -> Vec<Arc<QuestionRequest>> {
        self.page(session_id, after, limit)
    }

    fn latest(&self, request: &QuestionRequest) -> Option<QuestionSnapshot> {
        self.get(request.id)
    }

    async fn outcome(&self, request: &QuestionRequest) -> Result<QuestionOutcome, ApiError> {
        Ok(self.wait(request.id).await?)
    }
}

/// Cancel every pending request of a session.
#[utoipa::path(
    post,
    path = "/session/{id}/cancel",
    operation_id = "session.cancel",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "How many requests were cancelled", body = Cancelled),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn cancel_session(
    State(state): State<AppState>,
    caller: Caller,
    crate::extract::SegmentPath(session_id): crate::extract::SegmentPath,
) -> Result<Json<Cancelled>, ApiError> {
    caller.act_for(&session_id)?;
    Ok(Json(Cancelled {
        cancelled: state.hub_for(&caller).cancel_session(&session_id),
    }))
}

/// OpenCode's `session.abort`: cancel every pending request of a session (as
/// `POST /session/{id}/cancel`), answering `true` as OpenCode's server does.
#[utoipa::path(
    post,
    path = "/session/{sessionID}/abort",
    operation_id = "session.abort",
    tag = "session",
    params(("sessionID" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session's pending requests were cancelled", body = bool, content_type = "application/json"),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn abort_session(
    state: State<AppState>,
    caller: Caller,
    session: crate::extract::SegmentPath,
) -> Result<Json<bool>, ApiError> {
    cancel_session(state, caller, session)
        .await
        .map(|_| Json(true))
}
