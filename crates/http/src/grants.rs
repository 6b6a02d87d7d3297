//! A session's standing grants (OpenCode's `always`): listed and revoked over HTTP.
//!
//! A grant is made by answering an approval `always` (`POST /permission/{id}/reply`, see
//! the `opencode` module); the approval service applies it to the session's later
//! requests (see `askbus_question`'s `grant` module). Here a human sees what stands
//! granted and takes it back: `GET /session/{id}/grant`, `DELETE
//! /session/{id}/grant/{grantID}` (the grant's id is that of the approval that made it).
//! A session-scoped token sees and revokes its own session's grants only (403 otherwise).

use askbus_question::{ApprovalId, Grant};
use axum::Json;
use axum::extract::State;

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};
use crate::extract::SegmentPath;
use crate::opencode::SessionRequestPath;

/// List a session's standing grants, oldest first.
#[utoipa::path(
    get,
    path = "/session/{id}/grant",
    operation_id = "session.grant.list",
    tag = "permission",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session's grants, oldest first", body = Vec<Grant>),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(session_id): SegmentPath,
) -> Result<Json<Vec<Grant>>, ApiError> {
    caller.act_for(&session_id)?;
    Ok(Json(state.inner.hub.approvals().grants(&session_id)))
}

/// Revoke a standing grant: the session's later calls are asked of a human again.
/// Published as `approval.grant_revoked`, naming who revoked it, and receipted in the audit
/// log (`grant_revoked`) before the answer.
#[utoipa::path(
    delete,
    path = "/session/{id}/grant/{grantID}",
    operation_id = "session.grant.revoke",
    tag = "permission",
    params(
        ("id" = String, Path, description = "Session id"),
        ("grantID" = String, Path, description = "The grant's id: the id of the approval whose `always` made it"),
    ),
    responses(
        (status = 200, description = "The grant revoked", body = Grant),
        (status = 403, description = "The token is scoped to another session", body = crate::error::ErrorBody),
        (status = 404, description = "The session holds no such grant", body = crate::error::ErrorBody),
        (status = 503, description = "The revocation could not be receipted durably (it holds: the grant is gone)", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    path: SessionRequestPath,
) -> Result<Json<Grant>, ApiError> {
    let (session_id, grant_id) = path.parts();
    caller.act_for(session_id)?;
    let revoked = grant_id.parse::<ApprovalId>().ok().and_then(|id| {
        state
            .hub_for(&caller)
            .approvals()
            .revoke_grant(session_id, id)
    });
    let Some((grant, receipt)) = revoked else {
        let grant_id: String = grant_id.chars().take(64).collect();
        return Err(ApiError::new(
            ErrorCode::NotFound,
            format!("session {session_id} holds no grant {grant_id}"),
        ));
    };
    // The 200 says the revocation is on record: its receipt is in the audit log.
    receipt.await?;
    Ok(Json(grant))
}
