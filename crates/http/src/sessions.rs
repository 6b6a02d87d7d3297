//! Session routes of seed 002: "is this session waiting for a human, and on what?", and the
//! answer that resumes it; and the routes a human needs when an agent floods them: how many
//! requests each session has waiting, and one refusal of everything a session has waiting.
//!
//! `GET /session/{id}/interrupt` describes the session's **oldest** pending request, question
//! or approval, as the seed's `InterruptState` (`reason`, form `fields`, `timestamp`,
//! `checkpoint_id` = the request id) plus the request itself. `POST /session/{id}/resume`
//! answers it with the seed's `{"input": {...}}`. A request is consumed once: a second resume
//! of the same checkpoint, or one after expiry, is a 409. A session-scoped token may only
//! read and resume its own session (403 otherwise, as for cancel).
//!
//! `GET /session/pending` counts the pending requests of each session (`O(sessions)`,
//! however many are pending; a scoped token sees its own session only), with the event id
//! each kind's counts stand at, so a UI keeps them exact from the event stream.
//! `POST /session/{id}/reject` refuses everything the session has pending, so nothing of it
//! runs: questions are rejected, approval requests answered with a `reject` per action, or
//! cancelled when an action's review config does not allow `reject`. It answers `200` with
//! the counts only once the store has every change.

use askbus_question::{
    ApprovalReply, Decision, InterruptState, PendingRequest, PendingSessions, RequestId,
    ResumeError, ResumeInput, confirmation_phrase,
};
use axum::Json;
use axum::extract::{Request, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};
use crate::extract::{ApiJson, RequestTimeout, SegmentPath};
use crate::questions::{RejectBody, ReplyForm, optional_json};

/// `GET /session/{id}/interrupt` answer: `{"interrupted": false}` or
/// `{"interrupted": true, "state": {...}}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Interrupt {
    /// Whether the session waits for a human.
    interrupted: bool,
    /// What it waits on: its oldest pending request.
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<InterruptState>,
}

/// `POST /session/{id}/resume` body (seed 002). `session_id` and `agent_id`, which the
/// seed's clients send, are accepted; a `session_id` must match the path.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct ResumeBody {
    /// The human's input: `{"confirm": true|false}`, `{"answers": [[...], ...]}`, the
    /// seeds' keyed `{"answers": {"<question text>": "A, B"}}`, or
    /// `{"decisions": [...], "user_edit_content"?: "..."}`.
    #[schema(value_type = HashMap<String, serde_json::Value>)]
    input: Option<Value>,
    /// The request to answer (from the interrupt state); absent: the oldest pending one.
    #[serde(default)]
    checkpoint_id: Option<String>,
    /// The session, if the client repeats it.
    #[serde(default)]
    session_id: Option<String>,
    /// The seed's agent name; accepted and ignored.
    #[serde(default)]
    #[allow(dead_code)]
    agent_id: Option<String>,
}

/// `POST /session/{id}/resume` answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Resumed {
    /// Always `true`: the request was answered.
    resumed: bool,
    /// The session.
    session_id: String,
    /// The request that was answered.
    #[schema(value_type = String)]
    checkpoint_id: RequestId,
}

/// `POST /session/{id}/reject` answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SessionRejected {
    /// How many requests were rejected: `questions` + `approvals`.
    rejected: usize,
    /// Questions rejected.
    questions: usize,
    /// Approval requests answered with a `reject` decision for every action.
    approvals: usize,
    /// Approval requests cancelled instead, because an action's review config does not
    /// allow `reject` (none of their actions runs either).
    cancelled: usize,
}

/// How many requests each session has pending.
#[utoipa::path(
    get,
    path = "/session/pending",
    operation_id = "session.pending",
    tag = "session",
    responses(
        (status = 200, description = "The sessions with pending requests, ascending by session id, with the event id each kind's counts stand at: apply the request events after it (`+1` per `*.asked`, `-1` per outcome) to keep them exact", body = PendingSessions),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 503, description = "The store shared with other servers could not be reached", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn pending(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<PendingSessions>, ApiError> {
    // With a store shared by several servers: what any of them was asked until now.
    state.inner.hub.caught_up().await?;
    let mut pending = state.inner.hub.pending_sessions();
    if let Some(own) = caller.0.scope.session() {
        pending
            .sessions
            .retain(|session| session.session_id == *own);
    }
    Ok(Json(pending))
}

/// Refuse everything the session has pending: reject its questions, reject every action of
/// its approval requests (cancel those whose review config does not allow `reject`).
#[utoipa::path(
    post,
    path = "/session/{id}/reject",
    operation_id = "session.reject",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = Option<RejectBody>, description = "Optional: `{\"reason\": \"...\"}`, the questions' reason and the rejections' message"),
    responses(
        (status = 200, description = "What was refused (zeros when nothing was pending)", body = SessionRejected),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session, is an agent's, or asked one of the session's requests (nothing is refused then)", body = crate::error::ErrorBody),
        (status = 415, description = "A body that is not JSON", body = crate::error::ErrorBody),
        (status = 422, description = "A body that is not `{\"reason\": \"...\"}`", body = crate::error::ErrorBody),
        (status = 503, description = "A change could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn reject(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
    request: Request,
) -> Result<Json<SessionRejected>, ApiError> {
    caller.act_for(&session_id)?;
    let body: RejectBody = optional_json(request, &state).await?.unwrap_or_default();
    // With a store shared by several servers: what any of them was asked until now.
    state.inner.hub.caught_up().await?;
    // 200 only once every change is durable.
    let rejected = state
        .hub_for(&caller)
        .reject_session(&session_id, body.reason.as_deref())
        .await?;
    Ok(Json(SessionRejected {
        rejected: rejected.questions + rejected.approvals,
        questions: rejected.questions,
        approvals: rejected.approvals,
        cancelled: rejected.cancelled,
    }))
}

/// `POST /session/{id}/confirmation` body: what the model said.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfirmationBody {
    /// The model's text (its last message, say).
    text: String,
    /// Seconds the confirmation waits for a human; absent: the approvals' default; `null`:
    /// for good.
    #[serde(default)]
    #[schema(value_type = Option<f64>, minimum = 0, maximum = 31_536_000)]
    timeout: RequestTimeout,
}

/// What `POST /session/{id}/confirmation` found.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Confirmation {
    /// The confirmation phrase found in the text (`please confirm`), if any.
    phrase: Option<&'static str>,
    /// Whether a confirmation request was made: the session now waits for a human.
    interrupted: bool,
    /// The request made, as an interrupt state (answer it with `resume`).
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<InterruptState>,
}

/// Seed 002's interrupt detector: when the model's `text` asks for confirmation (a phrase
/// such as "please confirm", "are you sure", "shall I proceed", case-insensitive), make
/// an approval request of it (one `confirm` action, approve or reject) and return its
/// interrupt state; otherwise change nothing.
#[utoipa::path(
    post,
    path = "/session/{id}/confirmation",
    operation_id = "session.confirmation",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    request_body = ConfirmationBody,
    responses(
        (status = 200, description = "What was found, and the request made if any", body = Confirmation),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session, or is a reviewer's (reviewers make no requests)", body = crate::error::ErrorBody),
        (status = 415, description = "Not JSON", body = crate::error::ErrorBody),
        (status = 422, description = "A body that is not `{\"text\"}`, or a bad timeout", body = crate::error::ErrorBody),
        (status = 429, description = "Too many requests are pending (`quota`)", body = crate::error::ErrorBody),
        (status = 503, description = "The request could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn confirmation(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
    ApiJson(body): ApiJson<ConfirmationBody>,
) -> Result<Json<Confirmation>, ApiError> {
    caller.act_for(&session_id)?;
    let timeout = body.timeout.timeout()?;
    let phrase = confirmation_phrase(&body.text);
    let asked = state
        .hub_for(&caller)
        .request_confirmation(session_id, &body.text, timeout)?;
    let Some(mut pending) = asked else {
        return Ok(Json(Confirmation {
            phrase,
            interrupted: false,
            state: None,
        }));
    };
    let recorded = pending.recorded();
    // Detached first, so a client that goes away while the store writes does not cancel it.
    let request = pending.detach();
    recorded.await?;
    Ok(Json(Confirmation {
        phrase,
        interrupted: true,
        state: Some(PendingRequest::Approval { request }.interrupt_state()),
    }))
}

/// What the session waits for, if anything.
#[utoipa::path(
    get,
    path = "/session/{id}/interrupt",
    operation_id = "session.interrupt",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The interrupt state", body = Interrupt),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 503, description = "The store shared with other servers could not be reached", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn interrupt(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
) -> Result<Json<Interrupt>, ApiError> {
    caller.act_for(&session_id)?;
    // With a store shared by several servers, the session may have asked through another.
    state.inner.hub.caught_up().await?;
    let interrupt = state.inner.hub.interrupt_state(&session_id);
    Ok(Json(Interrupt {
        interrupted: interrupt.is_some(),
        state: interrupt,
    }))
}

/// Answer what the session waits for, and let it go on.
#[utoipa::path(
    post,
    path = "/session/{id}/resume",
    operation_id = "session.resume",
    tag = "session",
    params(("id" = String, Path, description = "Session id")),
    request_body = ResumeBody,
    responses(
        (status = 200, description = "Answered", body = Resumed),
        (status = 400, description = "Missing or malformed input or checkpoint id", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 404, description = "Unknown session, or a checkpoint not of this session", body = crate::error::ErrorBody),
        (status = 409, description = "Nothing pending (any more): expired, or already resumed", body = crate::error::ErrorBody),
        (status = 422, description = "Answers or decisions that do not fit the request; or no `checkpoint_id` where it is needed: several requests pending (now, or since the session was last idle), or the last of the session's requests to end before it was no human's decision (a timeout, its asker's cancel, a grant)", body = crate::error::ErrorBody),
        (status = 503, description = "The answer could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn resume(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
    ApiJson(body): ApiJson<ResumeBody>,
) -> Result<Json<Resumed>, ApiError> {
    caller.act_for(&session_id)?;
    if body
        .session_id
        .as_deref()
        .is_some_and(|named| named != session_id)
    {
        return Err(ApiError::bad_request(
            "`session_id` in the body names another session than the path",
        ));
    }
    let input = parse_input(body.input)?;
    let checkpoint = body
        .checkpoint_id
        .map(|id| {
            id.parse::<RequestId>().map_err(|_| {
                ApiError::bad_request("`checkpoint_id` is not a request id (`que_…` or `apr_…`)")
            })
        })
        .transpose()?;
    state.inner.hub.caught_up().await?;
    let resumed = state
        .hub_for(&caller)
        .resume(&session_id, input, checkpoint)?;
    // 200 only once the answer is durable.
    resumed.durable.await?;
    Ok(Json(Resumed {
        resumed: true,
        session_id,
        checkpoint_id: resumed.request,
    }))
}

/// The seed's `input` object as a [`ResumeInput`]: exactly one of `confirm`, `answers`,
/// `decisions`.
fn parse_input(input: Option<Value>) -> Result<ResumeInput, ApiError> {
    const EXPECTED: &str = "expected `input`: {\"confirm\": true|false}, {\"answers\": [[\"label\"], ...]}, {\"answers\": {\"<question text>\": \"label, label\"}}, the form's fields {\"answers.0\": \"label\", ...} or {\"decisions\": [{\"type\": \"approve\"}, ...]}";
    let Some(Value::Object(mut input)) = input else {
        return Err(ApiError::bad_request(EXPECTED));
    };
    let invalid = |what: &str| ApiError::invalid(format!("{what}; {EXPECTED}"));
    if let Some(confirm) = input.remove("confirm") {
        return confirm
            .as_bool()
            .map(ResumeInput::Confirm)
            .ok_or_else(|| invalid("`confirm` must be true or false"));
    }
    if let Some(answers) = input.remove("answers") {
        return ReplyForm::from_answers(answers).map(ResumeInput::from);
    }
    if let Some(answers) = field_answers(&input)? {
        return Ok(ResumeInput::Answers(answers));
    }
    if let Some(decisions) = input.remove("decisions") {
        let decisions: Vec<Decision> = serde_json::from_value(decisions)
            .map_err(|error| invalid(&format!("`decisions` are not decisions ({error})")))?;
        let user_edit_content = match input.remove("user_edit_content") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text),
            Some(_) => return Err(invalid("`user_edit_content` must be a string")),
        };
        let mut reply = ApprovalReply::new(decisions);
        reply.user_edit_content = user_edit_content;
        return Ok(ResumeInput::Decisions(reply));
    }
    Err(ApiError::bad_request(EXPECTED))
}

/// The answers of a form filled in by the interrupt state's own field names
/// (`{"answers.0": "Rust", "answers.1": ["A", "B"]}`), if `input` has any: a field left out
/// skips its question.
fn field_answers(
    input: &serde_json::Map<String, Value>,
) -> Result<Option<Vec<askbus_question::Answer>>, ApiError> {
    /// More questions than any request may hold: no index past it is read.
    const MAX_FIELDS: usize = 256;
    let mut answers: Vec<askbus_question::Answer> = Vec::new();
    for (name, value) in input {
        let Some(index) = name.strip_prefix("answers.") else {
            continue;
        };
        let index: usize = index
            .parse()
            .ok()
            .filter(|index| *index < MAX_FIELDS)
            .ok_or_else(|| ApiError::invalid(format!("{name:?} names no question of a form")))?;
        let answer = match value {
            Value::String(label) => vec![label.clone()],
            Value::Array(labels) => labels
                .iter()
                .map(|label| label.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    ApiError::invalid(format!("{name:?} must be a label or a list of labels"))
                })?,
            _ => {
                return Err(ApiError::invalid(format!(
                    "{name:?} must be a label or a list of labels"
                )));
            }
        };
        if answers.len() <= index {
            answers.resize(index + 1, Vec::new());
        }
        answers[index] = answer;
    }
    Ok((!answers.is_empty()).then_some(answers))
}

impl From<ResumeError> for ApiError {
    fn from(error: ResumeError) -> Self {
        match error {
            ResumeError::UnknownSession(_) | ResumeError::UnknownCheckpoint(_) => {
                Self::new(ErrorCode::NotFound, error.to_string())
            }
            ResumeError::NothingPending(_) => {
                Self::new(ErrorCode::AlreadyResolved, error.to_string())
            }
            ResumeError::WrongInput(message) => Self::invalid(message),
            ResumeError::Ambiguous(_) | ResumeError::Replaced { .. } => {
                Self::invalid(error.to_string())
            }
            ResumeError::Question(error) => Self::from(error),
            ResumeError::Approval(error) => Self::from(error),
        }
    }
}
