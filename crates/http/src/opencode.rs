//! OpenCode's permission API and its v2 (`/api/...`) routes, over askbus's own requests.
//!
//! OpenCode clients know two kinds of pending input: questions (which askbus serves under
//! OpenCode's own names already) and *permissions*, a tool call waiting for a human's
//! `once`, `always` or `reject`. An askbus approval is that, so every approval is also
//! served as an OpenCode permission: listed by `GET /permission`, answered by
//! `POST /permission/{requestID}/reply` (and the deprecated
//! `POST /session/{sessionID}/permissions/{permissionID}`), announced by `permission.asked`
//! and settled by `permission.replied` on the event streams.
//!
//! Policy, in exact words:
//!
//! - **One way to decide.** A permission reply becomes an approval decision (`once`: an
//!   [`ApprovalReply`] approving every action; `always`: `ApprovalService::reply_always`;
//!   `reject`: a reply rejecting every action, with the `message` as the reason) and goes
//!   through [`approvals::decide`], the path of
//!   `POST /approval/{id}/reply`: the same visibility, the same decider and role checks,
//!   the same review configs. An agent's token cannot approve by answering a permission.
//! - **`always` also grants.** It approves the request and records a standing grant for
//!   the session (see `askbus_question`'s `grant` module): the session's calls that
//!   repeat an approved one exactly (tool and arguments), pending or later, are approved
//!   without asking,
//!   each such auto-approval named in its reply's `auto_approved_by`, and its
//!   `permission.replied` reads `always`. Grants are listed and revoked under
//!   `/session/{id}/grant` (the `grants` module).
//! - **Routes are aliases.** The v2 routes (`/api/session/{sessionID}/question/...`,
//!   `/api/session/{sessionID}/permission/...`, `/api/question/request`,
//!   `/api/permission/request`, `/api/health`, `/api/event`) call the same handlers as the
//!   v1 routes; what is theirs is only the wrapping (`{"data": ...}`, `204`) and that a
//!   request outside the path's session is 404.
//! - **No stale prompts.** OpenCode clients drop a question on `question.rejected` and a
//!   permission on `permission.replied`, and know no other ending. So after each askbus
//!   event that ends a request in a way they do not know, the event streams of OpenCode
//!   clients (see the `events` module) send a companion frame they act on
//!   ([`companion`]): `question.rejected` after `question.timed_out` and
//!   `question.cancelled`, `permission.asked` after `approval.asked`, and
//!   `permission.replied` after every approval outcome. A companion carries its event's id
//!   (so a resumed stream neither repeats nor loses it) and, for questions, `endedAs` (the
//!   askbus outcome), so a client can tell it from a human's rejection.
//! - **Enough for OpenCode's TUI.** `opencode attach URL --session ID` awaits
//!   `/config/providers`, `/provider`, `/agent`, `/config` and `/session/{id}` before it
//!   draws anything; askbus has no providers, agents or config, so they answer empty, and
//!   any session id is a session in the configured `directory`.
//!
//! ```text
//! approval.asked     {id, session_id, action_requests: [{name: "bash", args: {command}}]}
//! permission.asked   {id, sessionID, permission: "bash", patterns: [command], always: [command],
//!                     metadata: {approvalKey, actions}, tool?: {messageID, callID}}
//! ```

use std::sync::Arc;

use askbus_bus::Envelope;
use askbus_question::{
    ApprovalId, ApprovalReply, ApprovalRequest, Decision, QuestionRequest, pattern_of,
};
use axum::Json;
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::AppState;
use crate::approvals;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery, QuestionPath};
use crate::questions::{self, ReplyBody};

/// OpenCode's `PermissionRequest`: an askbus approval request as OpenCode clients show it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Permission {
    /// The approval's id (`apr_` + ULID).
    id: String,
    /// The asking session.
    #[serde(rename = "sessionID")]
    #[schema(value_type = String)]
    session_id: Arc<str>,
    /// The tools the actions call, each once (`bash, drop_table`).
    permission: String,
    /// Each action as a client shows it (`pattern_of`): its `command`, `filePath`,
    /// `file_path`, `path`, `url` or `pattern` argument when that is its only argument, else
    /// its whole arguments as JSON.
    patterns: Vec<String>,
    /// `approvalKey` and the full `actions` under review.
    #[schema(value_type = Object)]
    metadata: Value,
    /// What `always` would grant: the same patterns, for the same tool.
    always: Vec<String>,
    /// The model's tool call, when the first action names one (`tool_use_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<PermissionTool>,
}

/// The tool call a permission belongs to.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct PermissionTool {
    /// The message of the call; askbus does not know it, so it is empty.
    #[serde(rename = "messageID")]
    message_id: String,
    /// The action's `tool_use_id`.
    #[serde(rename = "callID")]
    call_id: String,
}

/// OpenCode's v2 `PermissionV2Request`: the same permission under the v2 names.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct PermissionV2 {
    /// The approval's id.
    id: String,
    /// The asking session.
    #[serde(rename = "sessionID")]
    #[schema(value_type = String)]
    session_id: Arc<str>,
    /// The tool the first action calls.
    action: String,
    /// What each action touches (as `patterns`).
    resources: Vec<String>,
    /// What `always` would grant (as `always`).
    save: Vec<String>,
    /// As the v1 permission's `metadata`.
    #[schema(value_type = Object)]
    metadata: Value,
    /// `{"type": "tool", messageID, callID}` when the first action names its call.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    source: Option<Value>,
}

/// How a human answers a permission.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PermissionAnswer {
    /// Approve this request.
    Once,
    /// Approve this request, and grant the session's later calls like it.
    Always,
    /// Reject every action, with `message` as the reason.
    Reject,
}

/// `POST /permission/{requestID}/reply` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct PermissionReplyBody {
    /// The answer.
    reply: PermissionAnswer,
    /// With `reject`: why, passed to the agent as the rejection's message.
    #[serde(default)]
    message: Option<String>,
}

/// The deprecated `POST /session/{sessionID}/permissions/{permissionID}` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct PermissionRespondBody {
    /// The answer.
    response: PermissionAnswer,
}

/// v2 `{"data": [...]}`: a session's pending questions.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct V2Questions {
    /// The pending questions, ascending by id.
    #[schema(value_type = Vec<QuestionRequest>)]
    data: Vec<Arc<QuestionRequest>>,
}

/// v2 `{"data": [...]}`: a session's pending permissions.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct V2Permissions {
    /// The pending approvals as v2 permissions, ascending by id.
    data: Vec<PermissionV2>,
}

/// v2 `{"data": {...}}`: one pending permission.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct V2PermissionData {
    /// The approval as a v2 permission.
    data: PermissionV2,
}

/// v2 `{"location", "data": [...]}`: every pending question.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct V2QuestionRequests {
    /// The server's directory (`HttpConfig::directory`), as OpenCode's `LocationInfo`.
    #[schema(value_type = Object)]
    location: Value,
    /// The pending questions, ascending by id.
    #[schema(value_type = Vec<QuestionRequest>)]
    data: Vec<Arc<QuestionRequest>>,
}

/// v2 `{"location", "data": [...]}`: every pending permission.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct V2PermissionRequests {
    /// The server's directory, as OpenCode's `LocationInfo`.
    #[schema(value_type = Object)]
    location: Value,
    /// The pending approvals as v2 permissions, ascending by id.
    data: Vec<PermissionV2>,
}

/// `?directory=&workspace=`, sent by OpenCode clients and ignored.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DirectoryQuery {
    /// Accepted for OpenCode clients, ignored.
    #[allow(dead_code)]
    directory: Option<String>,
    /// Accepted for OpenCode clients, ignored.
    #[allow(dead_code)]
    workspace: Option<String>,
}

/// A `{sessionID}/.../{requestID}` path: two segments.
pub(crate) struct SessionRequestPath {
    /// The session the path names.
    session_id: String,
    /// The request the path names.
    request_id: String,
}

impl SessionRequestPath {
    /// The session and the request the path names.
    pub(crate) fn parts(&self) -> (&str, &str) {
        (&self.session_id, &self.request_id)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for SessionRequestPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map(|Path((session_id, request_id))| Self {
                session_id,
                request_id,
            })
            .map_err(|_| ApiError::bad_request("a path segment is not valid UTF-8"))
    }
}

/// OpenCode's v2 `v2.health.get`: the same as `/health`.
#[utoipa::path(
    get,
    path = "/api/health",
    operation_id = "v2.health.get",
    tag = "server",
    responses((status = 200, description = "The server is up", body = crate::openapi::Health)),
)]
pub(crate) async fn v2_health() -> Json<crate::openapi::Health> {
    crate::openapi::health().await
}

/// List pending permissions: every pending approval, as OpenCode's `PermissionRequest`.
#[utoipa::path(
    get,
    path = "/permission",
    operation_id = "permission.list",
    tag = "permission",
    params(DirectoryQuery),
    responses(
        (status = 200, description = "Pending approvals as OpenCode permissions, ascending by id", body = Vec<Permission>),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 503, description = "The store shared with other servers could not be reached", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn permission_list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(_): ApiQuery<DirectoryQuery>,
) -> Result<Json<Vec<Permission>>, ApiError> {
    let pending = pending_approvals(&state, &caller, None).await?;
    Ok(Json(
        pending
            .iter()
            .map(|request| Permission::of(request))
            .collect(),
    ))
}

/// Answer a permission: `once` or `always` approves the approval's actions, `reject`
/// rejects them (with `message` as the reason), through `POST /approval/{id}/reply`.
#[utoipa::path(
    post,
    path = "/permission/{requestID}/reply",
    operation_id = "permission.reply",
    tag = "permission",
    params(("requestID" = String, Path, description = "The approval's id (`apr_` + ULID) or `approval_key`"), DirectoryQuery),
    request_body = PermissionReplyBody,
    responses(
        (status = 200, description = "Decided", body = bool, content_type = "application/json"),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 403, description = "This credential may not decide it (an agent's, the asker's own, or one the request's reviewers do not name)", body = crate::error::ErrorBody),
        (status = 404, description = "No such approval (`PermissionNotFoundError`)", body = crate::error::ErrorBody),
        (status = 409, description = "Already decided, timed out or cancelled", body = crate::error::ErrorBody),
        (status = 422, description = "The approval's review config does not allow this decision", body = crate::error::ErrorBody),
        (status = 503, description = "The decision could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn permission_reply(
    State(state): State<AppState>,
    caller: Caller,
    crate::extract::SegmentPath(key): crate::extract::SegmentPath,
    ApiQuery(_): ApiQuery<DirectoryQuery>,
    ApiJson(body): ApiJson<PermissionReplyBody>,
) -> Result<Json<bool>, ApiError> {
    answer(&state, &caller, None, &key, body.reply, body.message).await?;
    Ok(Json(true))
}

/// OpenCode's deprecated permission answer (`permission.respond`): as
/// `POST /permission/{requestID}/reply`, for an approval of that session.
#[utoipa::path(
    post,
    path = "/session/{sessionID}/permissions/{permissionID}",
    operation_id = "permission.respond",
    tag = "permission",
    params(
        ("sessionID" = String, Path, description = "The approval's session"),
        ("permissionID" = String, Path, description = "The approval's id or `approval_key`"),
        DirectoryQuery,
    ),
    request_body = PermissionRespondBody,
    responses(
        (status = 200, description = "Decided", body = bool, content_type = "application/json"),
        (status = 403, description = "This credential may not decide it", body = crate::error::ErrorBody),
        (status = 404, description = "No such approval in this session (`PermissionNotFoundError`)", body = crate::error::ErrorBody),
        (status = 409, description = "Already decided, timed out or cancelled", body = crate::error::ErrorBody),
        (status = 422, description = "The approval's review config does not allow this decision", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn permission_respond(
    State(state): State<AppState>,
    caller: Caller,
    path: SessionRequestPath,
    ApiQuery(_): ApiQuery<DirectoryQuery>,
    ApiJson(body): ApiJson<PermissionRespondBody>,
) -> Result<Json<bool>, ApiError> {
    let session = Some(path.session_id.as_str());
    answer(
        &state,
        &caller,
        session,
        &path.request_id,
        body.response,
        None,
    )
    .await?;
    Ok(Json(true))
}

/// v2: a session's pending permissions.
#[utoipa::path(
    get,
    path = "/api/session/{sessionID}/permission",
    operation_id = "v2.session.permission.list",
    tag = "permission",
    params(("sessionID" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session's pending approvals as v2 permissions", body = V2Permissions),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn v2_permission_list(
    State(state): State<AppState>,
    caller: Caller,
    crate::extract::SegmentPath(session_id): crate::extract::SegmentPath,
) -> Result<Json<V2Permissions>, ApiError> {
    let pending = pending_approvals(&state, &caller, Some(&session_id)).await?;
    Ok(Json(V2Permissions {
        data: pending
            .iter()
            .map(|request| PermissionV2::of(request))
            .collect(),
    }))
}

/// v2: one pending permission of a session.
#[utoipa::path(
    get,
    path = "/api/session/{sessionID}/permission/{requestID}",
    operation_id = "v2.session.permission.get",
    tag = "permission",
    params(
        ("sessionID" = String, Path, description = "Session id"),
        ("requestID" = String, Path, description = "The approval's id or `approval_key`"),
    ),
    responses(
        (status = 200, description = "The approval as a v2 permission", body = V2PermissionData),
        (status = 404, description = "No such pending approval in this session (`PermissionNotFoundError`)", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn v2_permission_get(
    State(state): State<AppState>,
    caller: Caller,
    path: SessionRequestPath,
) -> Result<Json<V2PermissionData>, ApiError> {
    let snapshot = approval_in_session(&state, &caller, &path.session_id, &path.request_id).await?;
    if snapshot.outcome.is_some() {
        return Err(permission_error(
            approvals::not_found(&path.request_id),
            &path.request_id,
        ));
    }
    Ok(Json(V2PermissionData {
        data: PermissionV2::of(&snapshot.request),
    }))
}

/// v2: answer a session's permission, as `POST /permission/{requestID}/reply`.
#[utoipa::path(
    post,
    path = "/api/session/{sessionID}/permission/{requestID}/reply",
    operation_id = "v2.session.permission.reply",
    tag = "permission",
    params(
        ("sessionID" = String, Path, description = "Session id"),
        ("requestID" = String, Path, description = "The approval's id or `approval_key`"),
    ),
    request_body = PermissionReplyBody,
    responses(
        (status = 204, description = "Decided"),
        (status = 403, description = "This credential may not decide it", body = crate::error::ErrorBody),
        (status = 404, description = "No such approval in this session (`PermissionNotFoundError`)", body = crate::error::ErrorBody),
        (status = 409, description = "Already decided, timed out or cancelled", body = crate::error::ErrorBody),
        (status = 422, description = "The approval's review config does not allow this decision", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn v2_permission_reply(
    State(state): State<AppState>,
    caller: Caller,
    path: SessionRequestPath,
    ApiJson(body): ApiJson<PermissionReplyBody>,
) -> Result<StatusCode, ApiError> {
    let session = Some(path.session_id.as_str());
    answer(
        &state,
        &caller,
        session,
        &path.request_id,
        body.reply,
        body.message,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// v2: every pending permission, with the server's location.
#[utoipa::path(
    get,
    path = "/api/permission/request",
    operation_id = "v2.permission.request.list",
    tag = "permission",
    responses((status = 200, description = "Pending approvals as v2 permissions", body = V2PermissionRequests)),
)]
pub(crate) async fn v2_permission_requests(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<V2PermissionRequests>, ApiError> {
    let pending = pending_approvals(&state, &caller, None).await?;
    Ok(Json(V2PermissionRequests {
        location: location(&state),
        data: pending
            .iter()
            .map(|request| PermissionV2::of(request))
            .collect(),
    }))
}

/// v2: a session's pending questions.
#[utoipa::path(
    get,
    path = "/api/session/{sessionID}/question",
    operation_id = "v2.session.question.list",
    tag = "question",
    params(("sessionID" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session's pending questions", body = V2Questions),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn v2_question_list(
    State(state): State<AppState>,
    caller: Caller,
    crate::extract::SegmentPath(session_id): crate::extract::SegmentPath,
) -> Result<Json<V2Questions>, ApiError> {
    Ok(Json(V2Questions {
        data: pending_questions(&state, &caller, Some(&session_id)).await?,
    }))
}

/// v2: every pending question, with the server's location.
#[utoipa::path(
    get,
    path = "/api/question/request",
    operation_id = "v2.question.request.list",
    tag = "question",
    responses((status = 200, description = "Pending questions", body = V2QuestionRequests)),
)]
pub(crate) async fn v2_question_requests(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<V2QuestionRequests>, ApiError> {
    Ok(Json(V2QuestionRequests {
        location: location(&state),
        data: pending_questions(&state, &caller, None).await?,
    }))
}

/// v2: answer a session's question, as `POST /question/{id}/reply`.
#[utoipa::path(
    post,
    path = "/api/session/{sessionID}/question/{requestID}/reply",
    operation_id = "v2.session.question.reply",
    tag = "question",
    params(
        ("sessionID" = String, Path, description = "Session id"),
        ("requestID" = String, Path, description = "Question id, `que_` + ULID"),
    ),
    request_body(content = crate::openapi::ReplyBodySchema, description = "As `POST /question/{id}/reply`"),
    responses(
        (status = 204, description = "Answered"),
        (status = 400, description = "Malformed id or JSON", body = crate::error::ErrorBody),
        (status = 404, description = "No such question in this session", body = crate::error::ErrorBody),
        (status = 409, description = "Already resolved", body = crate::error::ErrorBody),
        (status = 422, description = "The answers do not fit the questions", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn v2_question_reply(
    State(state): State<AppState>,
    caller: Caller,
    path: SessionRequestPath,
    body: ReplyBody,
) -> Result<StatusCode, ApiError> {
    let id = question_in_session(&state, &caller, &path).await?;
    questions::reply(State(state), caller, QuestionPath(id), body)
        .await
        .map(drop)?;
    Ok(StatusCode::NO_CONTENT)
}

/// v2: decline a session's question, as `POST /question/{id}/reject`.
#[utoipa::path(
    post,
    path = "/api/session/{sessionID}/question/{requestID}/reject",
    operation_id = "v2.session.question.reject",
    tag = "question",
    params(
        ("sessionID" = String, Path, description = "Session id"),
        ("requestID" = String, Path, description = "Question id, `que_` + ULID"),
    ),
    responses(
        (status = 204, description = "Rejected"),
        (status = 404, description = "No such question in this session", body = crate::error::ErrorBody),
        (status = 409, description = "Already resolved", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn v2_question_reject(
    State(state): State<AppState>,
    caller: Caller,
    path: SessionRequestPath,
    request: Request,
) -> Result<StatusCode, ApiError> {
    let id = question_in_session(&state, &caller, &path).await?;
    questions::reject(State(state), caller, QuestionPath(id), request)
        .await
        .map(drop)?;
    Ok(StatusCode::NO_CONTENT)
}

/// The askbus-event frame OpenCode clients need after `envelope`, if any, as
/// `(type, properties JSON)`: see the module's "No stale prompts".
pub(crate) fn companion(envelope: &Envelope) -> Option<(&'static str, String)> {
    let kind = envelope.event_type();
    match kind {
        "approval.asked" => {
            let request: ApprovalRequest = serde_json::from_str(envelope.properties_json()).ok()?;
            let asked = serde_json::to_string(&Permission::of(&request)).ok()?;
            Some(("permission.asked", asked))
        }
        "question.timed_out" | "question.cancelled" => {
            let properties: Value = serde_json::from_str(envelope.properties_json()).ok()?;
            let rejected = json!({
                "sessionID": properties.get("sessionID")?,
                "requestID": properties.get("requestID")?,
                "endedAs": kind.strip_prefix("question.")?,
            });
            Some(("question.rejected", rejected.to_string()))
        }
        "approval.replied" | "approval.timed_out" | "approval.cancelled" => {
            let properties: Value = serde_json::from_str(envelope.properties_json()).ok()?;
            // Only a reply can run something; expiry and cancellation reject. A reply that
            // made a grant, or that a grant made, is OpenCode's `always`.
            let runs = kind == "approval.replied"
                && Vec::<Decision>::deserialize(properties.get("decisions")?)
                    .ok()?
                    .iter()
                    .any(Decision::runs);
            let by_grant =
                properties.get("granted").is_some() || properties.get("auto_approved_by").is_some();
            let reply = match (runs, by_grant) {
                (false, _) => PermissionAnswer::Reject,
                (true, false) => PermissionAnswer::Once,
                (true, true) => PermissionAnswer::Always,
            };
            let replied = json!({
                "sessionID": properties.get("session_id")?,
                "requestID": properties.get("request_id")?,
                "reply": reply,
            });
            Some(("permission.replied", replied.to_string()))
        }
        _ => None,
    }
}

impl Permission {
    /// `request` as OpenCode's `PermissionRequest`.
    fn of(request: &ApprovalRequest) -> Self {
        let patterns: Vec<String> = request.action_requests.iter().map(pattern_of).collect();
        Self {
            id: request.id.to_string(),
            session_id: Arc::clone(&request.session_id),
            permission: tool_name(request),
            always: patterns.clone(),
            patterns,
            metadata: metadata(request),
            tool: call_id(request).map(|call_id| PermissionTool {
                message_id: String::new(),
                call_id: call_id.to_owned(),
            }),
        }
    }
}

impl PermissionV2 {
    /// `request` as OpenCode's `PermissionV2Request`.
    fn of(request: &ApprovalRequest) -> Self {
        let resources: Vec<String> = request.action_requests.iter().map(pattern_of).collect();
        Self {
            id: request.id.to_string(),
            session_id: Arc::clone(&request.session_id),
            action: tool_name(request),
            save: resources.clone(),
            resources,
            metadata: metadata(request),
            source: call_id(request)
                .map(|call_id| json!({"type": "tool", "messageID": "", "callID": call_id})),
        }
    }
}

/// The tools of the request, each once, in order (`bash`, or `bash, drop_table`): what
/// OpenCode calls the permission. Every tool, so that a client showing only this never
/// hides a second call that `once` approves too.
fn tool_name(request: &ApprovalRequest) -> String {
    let mut tools: Vec<&str> = Vec::new();
    for action in &request.action_requests {
        if !tools.contains(&action.name.as_str()) {
            tools.push(&action.name);
        }
    }
    tools.join(", ")
}

/// The first action's `tool_use_id`: OpenCode's `callID`.
fn call_id(request: &ApprovalRequest) -> Option<&str> {
    request
        .action_requests
        .first()
        .and_then(|action| action.tool_use_id.as_deref())
}

/// What OpenCode's `metadata` carries: the key and every action, unabridged, so a client
/// shows what it approves.
fn metadata(request: &ApprovalRequest) -> Value {
    json!({
        "approvalKey": request.approval_key,
        "actions": request.action_requests,
    })
}

/// What OpenCode's TUI needs to start: askbus has no providers, agents or config.
#[utoipa::path(
    get,
    path = "/config/providers",
    operation_id = "config.providers",
    tag = "opencode",
    params(DirectoryQuery),
    responses(
        (status = 200, description = "What OpenCode's TUI needs to start: askbus has no providers, agents or config (`{\"providers\": [], \"default\": {}}`)", body = Value),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn config_providers(ApiQuery(_): ApiQuery<DirectoryQuery>) -> Json<Value> {
    Json(json!({"providers": [], "default": {}}))
}

/// What OpenCode's TUI needs to start: askbus has no providers, agents or config.
#[utoipa::path(
    get,
    path = "/provider",
    operation_id = "provider.list",
    tag = "opencode",
    params(DirectoryQuery),
    responses(
        (status = 200, description = "What OpenCode's TUI needs to start: askbus has no providers, agents or config (`{\"all\": [], \"default\": {}, \"connected\": []}`)", body = Value),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn provider_list(ApiQuery(_): ApiQuery<DirectoryQuery>) -> Json<Value> {
    Json(json!({"all": [], "default": {}, "connected": []}))
}

/// What OpenCode's TUI needs to start: askbus has no providers, agents or config.
#[utoipa::path(
    get,
    path = "/agent",
    operation_id = "app.agents",
    tag = "opencode",
    params(DirectoryQuery),
    responses(
        (status = 200, description = "What OpenCode's TUI needs to start: askbus has no providers, agents or config (no agents)", body = Vec<Value>),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn agent_list(ApiQuery(_): ApiQuery<DirectoryQuery>) -> Json<Vec<Value>> {
    Json(Vec::new())
}

/// What OpenCode's TUI needs to start: askbus has no providers, agents or config.
#[utoipa::path(
    get,
    path = "/config",
    operation_id = "config.get",
    tag = "opencode",
    params(DirectoryQuery),
    responses(
        (status = 200, description = "What OpenCode's TUI needs to start: askbus has no providers, agents or config (`{}`)", body = Value),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn config_get(ApiQuery(_): ApiQuery<DirectoryQuery>) -> Json<Value> {
    Json(json!({}))
}

/// OpenCode's `Session`, as much of it as its TUI reads: askbus keeps no sessions of its
/// own, so any id is a session, in the server's configured directory.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Session {
    /// The id the path names.
    id: String,
    /// The id again (OpenCode's short name for the session).
    slug: String,
    /// Always `global`: askbus serves no projects.
    #[serde(rename = "projectID")]
    project_id: &'static str,
    /// The server's configured `directory`.
    directory: String,
    /// `askbus session {id}`.
    title: String,
    /// askbus's version.
    version: &'static str,
    /// When the session was made and changed; askbus does not track it, so both are now.
    time: SessionTime,
}

/// OpenCode's `Session.time`, in milliseconds since the Unix epoch.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SessionTime {
    /// When the session was made.
    created: u64,
    /// When the session last changed.
    updated: u64,
}

/// What OpenCode's TUI needs to start (`opencode attach URL --session ID`): askbus has no
/// providers, agents or config; the session is the id, in the server's directory.
#[utoipa::path(
    get,
    path = "/session/{id}",
    operation_id = "session.get",
    tag = "opencode",
    params(("id" = String, Path, description = "Session id"), DirectoryQuery),
    responses(
        (status = 200, description = "What OpenCode's TUI needs to start: askbus has no providers, agents or config; any id is a session", body = Session),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn session_get(
    State(state): State<AppState>,
    caller: Caller,
    crate::extract::SegmentPath(id): crate::extract::SegmentPath,
    ApiQuery(_): ApiQuery<DirectoryQuery>,
) -> Result<Json<Session>, ApiError> {
    caller.act_for(&id)?;
    let now = askbus_store::now_ms();
    Ok(Json(Session {
        slug: id.clone(),
        title: format!("askbus session {id}"),
        id,
        project_id: "global",
        directory: state.inner.config.directory.clone(),
        version: env!("CARGO_PKG_VERSION"),
        time: SessionTime {
            created: now,
            updated: now,
        },
    }))
}

/// The server's location, as OpenCode's `LocationInfo`.
fn location(state: &AppState) -> Value {
    let directory = &state.inner.config.directory;
    json!({"directory": directory, "project": {"id": "askbus", "directory": directory}})
}

/// Answers the approval `key` names (in `session`, if given) as a permission, through
/// [`approvals::decide`].
async fn answer(
    state: &AppState,
    caller: &Caller,
    session: Option<&str>,
    key: &str,
    answer: PermissionAnswer,
    message: Option<String>,
) -> Result<(), ApiError> {
    if let Some(session) = session {
        approval_in_session(state, caller, session, key).await?;
    }
    let decided = match answer {
        PermissionAnswer::Once => {
            approvals::decide(state, caller, key, |approvals, id| {
                approvals.reply(id, ApprovalReply::new([Decision::Approve]))
            })
            .await
        }
        PermissionAnswer::Always => {
            approvals::decide(state, caller, key, |approvals, id| {
                approvals.reply_always(id).map(|(durable, _grant)| durable)
            })
            .await
        }
        PermissionAnswer::Reject => {
            approvals::decide(state, caller, key, |approvals, id| {
                approvals.reply(id, ApprovalReply::new([Decision::Reject { message }]))
            })
            .await
        }
    };
    decided
        .map(drop)
        .map_err(|error| permission_error(error, key))
}

/// Tags `error` as OpenCode tags permission errors, when `key` is an approval id.
fn permission_error(error: ApiError, key: &str) -> ApiError {
    match key.parse::<ApprovalId>() {
        Ok(id) => error.for_permission(id),
        Err(_) => error,
    }
}

/// The approval `key` names if the caller may see it and it belongs to `session`; 404
/// otherwise.
async fn approval_in_session(
    state: &AppState,
    caller: &Caller,
    session: &str,
    key: &str,
) -> Result<askbus_question::ApprovalSnapshot, ApiError> {
    approvals::visible(state, caller, key)
        .await
        .and_then(|snapshot| {
            if *snapshot.request.session_id == *session {
                Ok(snapshot)
            } else {
                Err(approvals::not_found(key))
            }
        })
        .map_err(|error| permission_error(error, key))
}

/// The question the path names if the caller may see it and it belongs to the path's
/// session; 404 otherwise.
async fn question_in_session(
    state: &AppState,
    caller: &Caller,
    path: &SessionRequestPath,
) -> Result<askbus_question::QuestionId, ApiError> {
    let id = path.request_id.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "`{}` is not a question id (expected `que_` followed by a 26-character ULID)",
            path.request_id.chars().take(64).collect::<String>()
        ))
    })?;
    let snapshot = questions::visible(state, caller, id).await?;
    if *snapshot.request.session_id != *path.session_id {
        return Err(ApiError::question_not_found(id));
    }
    Ok(id)
}

/// The pending approvals the caller may see, all or `session`'s.
async fn pending_approvals(
    state: &AppState,
    caller: &Caller,
    session: Option<&str>,
) -> Result<Vec<Arc<ApprovalRequest>>, ApiError> {
    let session = caller.listed_session(session)?;
    state.inner.hub.caught_up().await?;
    Ok(state.inner.hub.approvals().list(session))
}

/// The pending questions the caller may see, all or `session`'s.
async fn pending_questions(
    state: &AppState,
    caller: &Caller,
    session: Option<&str>,
) -> Result<Vec<Arc<QuestionRequest>>, ApiError> {
    let session = caller.listed_session(session)?;
    state.inner.hub.caught_up().await?;
    Ok(state.inner.hub.questions().list(session))
}
