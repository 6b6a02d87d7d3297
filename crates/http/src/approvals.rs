//! The approval routes: a human reviews the tool calls an agent wants to make.
//!
//! Names are the seeds' snake_case (`action_requests`, `review_configs`, `allowed_decisions`,
//! `edited_action`, `approval_key`), so their UIs read and answer requests unchanged. A
//! request is addressed by its `apr_` id or by its `approval_key` (`{session_id}_{n}`),
//! whichever the client has. `POST /approval` takes seed 001's `approval_request` block
//! too: `actions` for `action_requests`, and `review_configs` of `{require_approval,
//! timeout}` (one per action, by position) beside askbus's per-tool ones. As for questions, a session-scoped token sees and answers its
//! own session only (other ids answer 404), and an answer is acknowledged once durable.

use std::sync::Arc;

use askbus_question::{
    Action, ApprovalId, ApprovalOutcome, ApprovalReply, ApprovalReplyError, ApprovalRequest,
    ApprovalService, ApprovalSnapshot, ApprovalVote, Decision, DecisionType, Durable, Grant,
    Identity, NeverRejected, OnTimeout, Outcome, PendingApproval, RequestHub, RequestId,
    ReviewConfig,
};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};
use crate::extract::{ApiJson, ApiQuery, RequestTimeout, SegmentPath};
use crate::follow_up::FollowUpFields;
use crate::long_poll::WaitQuery;
use crate::paging::{PageQuery, Paged};
use crate::questions::RequestState;
use crate::request_routes::{self, RequestRoutes};

/// `GET /approval` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Only this session's requests (`sessionID` is accepted too).
    #[serde(alias = "sessionID")]
    session_id: Option<String>,
}

/// `POST /approval` body: an agent asks for a review over HTTP (server mode).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct CreateApproval {
    /// The asking session.
    #[schema(min_length = 1)]
    session_id: String,
    /// The tool calls to review (seed 001's name, `actions`, is accepted too).
    #[serde(alias = "actions")]
    #[schema(min_items = 1)]
    action_requests: Vec<Action>,
    /// What may be decided per tool (a tool without one allows every decision), or seed
    /// 001's `{require_approval, timeout}` for the action at the same position.
    #[serde(default)]
    review_configs: Vec<ReviewConfigForm>,
    /// Seconds before the request times out (every action rejected), at most one year
    /// (31,536,000); absent: the server's default (`--approval-timeout`, 300 s unless
    /// set); `null`: never.
    #[serde(default)]
    #[schema(value_type = Option<f64>, minimum = 0, maximum = 31_536_000)]
    timeout: RequestTimeout,
    /// Seconds after which `approval.reminded` is published, if nobody decided; before the
    /// deadline. Absent: the server's default (`--remind-after`), if any.
    #[serde(default)]
    remind_after: Option<f64>,
    /// Seconds after which the request escalates to `escalate_to` (`approval.escalated`),
    /// if nobody decided; before the deadline. From then on they may decide it too, beside
    /// the reviewers `review_configs` name. Absent: the server's default.
    #[serde(default)]
    escalate_after: Option<f64>,
    /// Who the request escalates to: names of this server's credentials that may decide
    /// (reviewers, admins). Absent: the server's default (`--escalate-to`).
    #[serde(default)]
    escalate_to: Vec<String>,
    /// What applies if nobody decided by the deadline: `"reject"` (every action rejected)
    /// or `"escalate"` (escalate at the deadline, wait as long once more, then reject).
    /// Never a default answer (`{"answer": ...}` is refused with 422): an agent must never
    /// get its own tool call approved by waiting. Absent: the server's default.
    #[serde(default)]
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

/// One entry of `POST /approval`'s `review_configs`: askbus's, or seed 001's.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub(crate) enum ReviewConfigForm {
    /// What may be decided on the actions of one tool.
    Tool(ReviewConfig),
    /// Seed 001's review config of the action at the same position.
    Seed(SeedReviewConfig),
}

/// Seed 001's review config: the action at the same position in `actions` needs approval,
/// with any decision, within `timeout` seconds.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct SeedReviewConfig {
    /// Whether the action needs a human's approval: `true` (an action that needs none is
    /// not asked about: leave it out of the request).
    require_approval: bool,
    /// Seconds before every action is rejected; the request's `timeout` when that is
    /// absent (the smallest, when several configs give one).
    #[serde(default)]
    timeout: Option<f64>,
}

/// A request with where it stands: the `ApprovalRequest` fields plus `status`, and the
/// `decisions` (one per action) once `replied` or `timed_out`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ApprovalStatus {
    /// The request.
    #[serde(flatten)]
    #[schema(value_type = ApprovalRequest)]
    request: Arc<ApprovalRequest>,
    /// Where it stands.
    status: RequestState,
    /// One decision per action, by position: the human's, or every action rejected on expiry.
    #[serde(skip_serializing_if = "Option::is_none")]
    decisions: Option<Vec<Decision>>,
    /// Free text the human added to the reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    user_edit_content: Option<String>,
    /// Who decided (or cancelled) it, once resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    answered_by: Option<Identity>,
    /// Under a quorum (`review_configs[].quorum`): every reviewer's vote so far, in the
    /// order they came, while pending; all of them once replied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    votes: Vec<ApprovalVote>,
    /// The standing grant the human's `always` made, once replied so.
    #[serde(skip_serializing_if = "Option::is_none")]
    granted: Option<Box<Grant>>,
    /// The grants that approved it without asking a human (`answered_by` is then who
    /// granted them, not a reviewer of this request).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    auto_approved_by: Vec<Grant>,
}

/// List pending approval requests, ascending by id: all of them, or one page with `limit`.
#[utoipa::path(
    get,
    path = "/approval",
    operation_id = "approval.list",
    tag = "approval",
    params(ListQuery, PageQuery),
    responses(
        (status = 200, description = "Pending approval requests, ascending by id", body = Vec<ApprovalRequest>, headers(
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
) -> Result<Paged<ApprovalRequest>, ApiError> {
    request_routes::list::<ApprovalService>(&state, &caller, query.session_id.as_deref(), &paging)
        .await
}

/// Get one approval request, pending or resolved, by id or `approval_key`.
#[utoipa::path(
    get,
    path = "/approval/{id}",
    operation_id = "approval.get",
    tag = "approval",
    params(("id" = String, Path, description = "`apr_` + ULID, or the `approval_key`")),
    responses(
        (status = 200, description = "The request with its status", body = ApprovalStatus),
        (status = 404, description = "No such request (or not visible to this token)", body = crate::error::ErrorBody),
        (status = 503, description = "The store shared with other servers could not be reached, or the store refused the request's outcome (`outcome_not_recorded`): it must not be acted on, and the request stays pending in the store", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(key): SegmentPath,
) -> Result<Json<ApprovalStatus>, ApiError> {
    request_routes::get::<ApprovalService>(&state, &caller, &key).await
}

/// Wait (long poll) until an approval request is decided or the timeout runs out.
#[utoipa::path(
    get,
    path = "/approval/{id}/wait",
    operation_id = "approval.wait",
    tag = "approval",
    params(("id" = String, Path, description = "`apr_` + ULID, or the `approval_key`"), WaitQuery),
    responses(
        (status = 200, description = "The request with its status; `pending` when the wait ran out", body = ApprovalStatus),
        (status = 400, description = "Malformed timeout", body = crate::error::ErrorBody),
        (status = 404, description = "No such request (or not visible to this token)", body = crate::error::ErrorBody),
        (status = 429, description = "This token holds as many open streams and long polls as it may (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "The store shared with other servers could not be reached, every stream slot of the server is taken (`too_many_streams`), or the outcome could not be stored durably (`outcome_not_recorded`): it must not be acted on, and the request stays pending in the store", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    ),
)]
pub(crate) async fn wait(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(key): SegmentPath,
    ApiQuery(query): ApiQuery<WaitQuery>,
) -> Result<Json<ApprovalStatus>, ApiError> {
    request_routes::wait::<ApprovalService>(&state, &caller, &key, &query).await
}

/// Decide a pending approval request: one decision per action, by position (fewer are
/// filled with the first). An `edit` keeps the action's tool and gives it other `args`: a
/// JSON object that fits the action's `args_schema`, if it has one.
///
/// Under a quorum (`review_configs[].quorum` above 1), this is one reviewer's vote
/// (`approval.decided`): the request ends once that many distinct reviewers decided alike,
/// or at once when a vote runs no action (a veto). `votes` in the body is ignored.
#[utoipa::path(
    post,
    path = "/approval/{id}/reply",
    operation_id = "approval.reply",
    tag = "approval",
    params(("id" = String, Path, description = "`apr_` + ULID, or the `approval_key`")),
    request_body = ApprovalReply,
    responses(
        (status = 200, description = "Decided (under a quorum: this reviewer's vote is recorded, and the request may still wait for others)", body = bool, content_type = "application/json"),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "This credential may not decide it: an agent's, the asker's own, one the request's `reviewers` do not name, or a reviewer who voted already (`forbidden`)", body = crate::error::ErrorBody),
        (status = 404, description = "No such request (or not visible to this token)", body = crate::error::ErrorBody),
        (status = 409, description = "Already decided, timed out or cancelled", body = crate::error::ErrorBody),
        (status = 415, description = "Not JSON", body = crate::error::ErrorBody),
        (status = 422, description = "A decision the action does not allow, too many decisions, a lone `edit` for several actions, or an `edit` that names another tool, whose `args` are not an object or do not fit the action's `args_schema` (the message names the field); the request stays pending", body = crate::error::ErrorBody),
        (status = 503, description = "The decision could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn reply(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(key): SegmentPath,
    ApiJson(reply): ApiJson<ApprovalReply>,
) -> Result<Json<bool>, ApiError> {
    decide(&state, &caller, &key, |approvals, id| {
        approvals.reply(id, reply)
    })
    .await?;
    Ok(Json(true))
}

/// Decides the approval `key` names with `decision` (a reply, or an `always`), acting as
/// `caller`, and answers once the decision is durable: the one way an HTTP route decides
/// an approval (`/approval/{id}/reply`, OpenCode's permission replies), so every one
/// passes the same visibility check, and the service's decider and review-config checks.
pub(crate) async fn decide(
    state: &AppState,
    caller: &Caller,
    key: &str,
    decision: impl FnOnce(&ApprovalService, ApprovalId) -> Result<Durable, ApprovalReplyError>,
) -> Result<ApprovalId, ApiError> {
    let id = visible(state, caller, key).await?.request.id;
    decision(state.hub_for(caller).approvals(), id)?.await?;
    Ok(id)
}

/// Ask for a review (server mode): create the request and return it at once, with its `id`
/// and `approval_key`.
///
/// When the first action has a `tool_use_id` that already asked in this session, the
/// request that call made is returned (pending or resolved: `wait` tells) instead of asking
/// twice, but only if it reviews the same calls with the same arguments and review
/// configs; anything else under that id is refused with `409` `call_id_reused`, so a
/// decision is never handed to calls the human did not see.
#[utoipa::path(
    post,
    path = "/approval",
    operation_id = "approval.create",
    tag = "approval",
    request_body = CreateApproval,
    responses(
        (status = 200, description = "The new pending request", body = ApprovalRequest),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 415, description = "Not JSON", body = crate::error::ErrorBody),
        (status = 409, description = "The first action's `tool_use_id` already asked about other calls in this session (`call_id_reused`)", body = crate::error::ErrorBody),
        (status = 422, description = "The request cannot be made: also an `args_schema` that is no JSON Schema or refers outside itself (nothing is fetched), or `args` that do not fit their own `args_schema`", body = crate::error::ErrorBody),
        (status = 429, description = "Too many requests are pending in the session, for the token or on the server (`quota`)", body = crate::error::ErrorBody, headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
        (status = 503, description = "The request could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateApproval>,
) -> Result<Json<Arc<ApprovalRequest>>, ApiError> {
    caller.act_for(&body.session_id)?;
    let (review_configs, seed_timeout) =
        review_configs(body.review_configs, &body.action_requests)?;
    let timeout = match (body.timeout, seed_timeout) {
        (RequestTimeout::Default, Some(seconds)) => RequestTimeout::Seconds(seconds),
        (timeout, _) => timeout,
    }
    .timeout()?;
    let follow_up = FollowUpFields {
        remind_after: (body.remind_after, "remind_after"),
        escalate_after: (body.escalate_after, "escalate_after"),
        escalate_to: (body.escalate_to, "escalate_to"),
        on_timeout: body.on_timeout,
    }
    .follow_up(&state)?;
    let hub = state.hub_for(&caller);
    let mut ask = hub
        .approvals()
        .request(body.session_id, body.action_requests)
        .review(review_configs)
        .timeout(timeout)
        .follow_up(follow_up);
    if let Some(locale) = body.locale {
        ask = ask.locale(locale);
    }
    request_routes::created(
        ask.submit()?,
        PendingApproval::recorded,
        PendingApproval::detach,
    )
    .await
}

/// The review configs `forms` give for `actions`, and the smallest timeout of seed 001's
/// configs, if any gives one. A seed config reviews the action at its position with every
/// decision allowed (nothing when that action's tool has a config already).
///
/// # Errors
///
/// 422 for a seed config without an action at its position, or with `require_approval`
/// false.
fn review_configs(
    forms: Vec<ReviewConfigForm>,
    actions: &[Action],
) -> Result<(Vec<ReviewConfig>, Option<f64>), ApiError> {
    let mut configs = Vec::with_capacity(forms.len());
    let mut timeout: Option<f64> = None;
    for (position, form) in forms.into_iter().enumerate() {
        let seed = match form {
            ReviewConfigForm::Tool(config) => {
                configs.push(config);
                continue;
            }
            ReviewConfigForm::Seed(seed) => seed,
        };
        let Some(action) = actions.get(position) else {
            return Err(ApiError::invalid(format!(
                "review_configs[{position}] (`require_approval`) reviews the action at the same position, and there are {} actions",
                actions.len()
            )));
        };
        if !seed.require_approval {
            return Err(ApiError::invalid(format!(
                "review_configs[{position}]: `require_approval` is false; an action that needs no approval is not asked about, leave {:?} out of the request",
                action.name
            )));
        }
        if let Some(seconds) = seed.timeout {
            timeout = Some(timeout.map_or(seconds, |shortest| shortest.min(seconds)));
        }
        if !configs
            .iter()
            .any(|config: &ReviewConfig| config.action_name == action.name)
        {
            configs.push(ReviewConfig::new(&action.name, DecisionType::ALL));
        }
    }
    Ok((configs, timeout))
}

/// The request `key` names (an `apr_` id or an `approval_key`) if it exists and the caller
/// may see it; otherwise 404, the same answer whether it does not exist or belongs to
/// another session (the check both kinds share: [`request_routes::visible`]).
pub(crate) async fn visible(
    state: &AppState,
    caller: &Caller,
    key: &str,
) -> Result<ApprovalSnapshot, ApiError> {
    request_routes::visible::<ApprovalService>(state, caller, key).await
}

/// 404 for the approval `key` names.
pub(crate) fn not_found(key: &str) -> ApiError {
    let key: String = key.chars().take(64).collect();
    ApiError::new(
        ErrorCode::NotFound,
        format!("approval request {key} not found"),
    )
}

impl RequestRoutes for ApprovalService {
    type Request = ApprovalRequest;
    type Reply = Arc<ApprovalReply>;
    type Rejection = NeverRejected;
    // An `apr_` id or an `approval_key`.
    type Key = str;
    type Status = ApprovalStatus;

    const LIST_PATH: &'static str = "/approval";
    // The seeds' name (`sessionID` is accepted too).
    const SESSION_PARAM: &'static str = "session_id";

    fn of(hub: &RequestHub) -> &Self {
        hub.approvals()
    }

    fn request_id(request: &ApprovalRequest) -> RequestId {
        RequestId::Approval(request.id)
    }

    fn session_id(request: &ApprovalRequest) -> &str {
        &request.session_id
    }

    fn find(&self, key: &str) -> Option<ApprovalSnapshot> {
        key.parse::<ApprovalId>()
            .ok()
            .or_else(|| self.id_for_key(key))
            .and_then(|id| self.get(id))
    }

    fn not_found(key: &str) -> ApiError {
        not_found(key)
    }

    fn pending(
        &self,
        session_id: Option<&str>,
        after: Option<RequestId>,
        limit: usize,
    ) -> Vec<Arc<ApprovalRequest>> {
        self.page(session_id, after, limit)
    }

    fn latest(&self, request: &ApprovalRequest) -> Option<ApprovalSnapshot> {
        self.get(request.id)
    }

    async fn outcome(&self, request: &ApprovalRequest) -> Result<ApprovalOutcome, ApiError> {
        Ok(self.wait(request.id).await?)
    }
}

impl From<ApprovalReplyError> for ApiError {
    fn from(error: ApprovalReplyError) -> Self {
        match error {
            ApprovalReplyError::NotFound(id) => not_found(&id.to_string()),
            ApprovalReplyError::AlreadyResolved { .. } => {
                Self::new(ErrorCode::AlreadyResolved, error.to_string())
            }
            ApprovalReplyError::Invalid(invalid) => Self::from(invalid),
            ApprovalReplyError::NotAllowed(refused) => Self::from(refused),
            ApprovalReplyError::NotRecorded { .. } => Self::outcome_not_recorded(),
        }
    }
}

impl From<ApprovalSnapshot> for ApprovalStatus {
    fn from(snapshot: ApprovalSnapshot) -> Self {
        let mut votes: Vec<ApprovalVote> = snapshot.votes.iter().map(ApprovalVote::from).collect();
        let (mut granted, mut auto_approved_by) = (None, Vec::new());
        let (status, decisions, user_edit_content) = match snapshot.outcome {
            None => (RequestState::Pending, None, None),
            Some(Outcome::Replied(reply)) => {
                let reply = Arc::unwrap_or_clone(reply);
                votes = reply.votes;
                granted = reply.granted;
                auto_approved_by = reply.auto_approved_by;
                (
                    RequestState::Replied,
                    Some(reply.decisions),
                    reply.user_edit_content,
                )
            }
            Some(Outcome::TimedOut | Outcome::Defaulted(_)) => (
                RequestState::TimedOut,
                Some(snapshot.request.rejections()),
                None,
            ),
            Some(Outcome::Cancelled) => (RequestState::Cancelled, None, None),
        };
        Self {
            request: snapshot.request,
            status,
            decisions,
            user_edit_content,
            answered_by: snapshot.decided_by,
            votes,
            granted,
            auto_approved_by,
        }
    }
}
