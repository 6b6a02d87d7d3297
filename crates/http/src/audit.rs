//! `GET /audit`: the audit log, a page at a time.
//!
//! Every outcome leaves a receipt in the store's audit log (see the `askbus-audit` crate);
//! this route shows the entries as `askbus audit export` writes them ([`AuditLine`]: the
//! number, the seal's `prev`, `hash` and `sig`, and the `draft`, the receipt's JSON as
//! hashed), ascending by number. An entry is sealed by the server's sealer within about
//! 200 ms of its answer; until then its `prev` and `hash` are `null` (read it again, or
//! export, which seals first).
//!
//! Paging, in exact words: at most `limit` entries (1 to 1,000; 1,000 without it) after the
//! entry numbered `after` (0, or absent: from the first). When more follow, `Link: <…>;
//! rel="next"` holds the next page's URL and `x-next-cursor` its `after`; no such header:
//! this page is the last. Entries are never deleted, so a client that follows the cursor
//! reads every entry exactly once.
//!
//! Who may read it is decided by [`may_read_audit`]: an admin or a reviewer, with a token
//! for every session (the log holds every session's decisions); an agent may not. A server without a store keeps no
//! log: its answer is always empty.

use askbus_audit::AuditLine;
use askbus_question::Role;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::paging::{MAX_PAGE, next_page};

/// `GET /audit` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AuditQuery {
    /// At most this many entries, 1 to 1000 (a larger value is lowered to 1000; absent:
    /// 1000). When more follow, the answer has a `Link: <…>; rel="next"` and an
    /// `x-next-cursor` header.
    #[param(minimum = 1)]
    limit: Option<usize>,
    /// Only entries numbered above this: the last `seq` of the previous page (its
    /// `x-next-cursor`); absent: from the first.
    after: Option<u64>,
}

/// Page through the audit log: a receipt of every decision, hash-chained, ascending by
/// number.
#[utoipa::path(
    get,
    path = "/audit",
    operation_id = "audit.list",
    tag = "audit",
    params(AuditQuery),
    responses(
        (status = 200, description = "Audit entries, ascending by `seq`; `prev` and `hash` are `null` for an entry not sealed yet", body = Vec<AuditLine>, headers(
            ("link" = String, description = "When more follow: `<URL of the next page>; rel=\"next\"`"),
            ("x-next-cursor" = String, description = "When more follow: the `after` of the next page"),
        )),
        (status = 400, description = "Malformed `limit` or `after`", body = crate::error::ErrorBody),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "Not an admin's or a reviewer's token for every session", body = crate::error::ErrorBody),
        (status = 503, description = "The store could not be read", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> Result<Response, ApiError> {
    may_read_audit(&caller)?;
    let limit = match query.limit {
        None => MAX_PAGE,
        Some(0) => return Err(ApiError::bad_request("`limit` must be at least 1")),
        Some(limit) => limit.min(MAX_PAGE),
    };
    let after = query.after.unwrap_or(0);
    let Some(store) = state.inner.hub.store() else {
        return Ok(Json(Vec::<AuditLine>::new()).into_response());
    };
    // One more than the page, to know whether another follows.
    let mut entries = store
        .audit_entries(after, limit + 1)
        .await
        .map_err(|error| ApiError::store_unreadable(&error))?;
    let mut next = HeaderMap::new();
    if entries.len() > limit {
        entries.truncate(limit);
        if let Some(last) = entries.last() {
            let (cursor, limit) = (last.seq.to_string(), limit.to_string());
            next = next_page("/audit", &[("limit", &limit), ("after", &cursor)], &cursor);
        }
    }
    let lines: Vec<AuditLine> = entries.iter().map(AuditLine::of).collect();
    Ok((next, Json(lines)).into_response())
}

/// Whether `caller` may read the audit log: an admin or a reviewer whose token covers every
/// session (or anyone, with no tokens configured), since the log holds every session's
/// decisions. Agents make requests; they do not read who decided others'.
///
/// # Errors
///
/// 403 for an agent's token, or a token scoped to one session.
pub(crate) fn may_read_audit(caller: &Caller) -> Result<(), ApiError> {
    if caller.0.scope.session().is_some() {
        return Err(ApiError::forbidden(
            "the audit log holds every session's decisions: a session's token may not read it",
        ));
    }
    match caller.0.identity.role {
        Role::Admin | Role::Reviewer => Ok(()),
        Role::Agent => Err(ApiError::forbidden(
            "only an admin or a reviewer may read the audit log",
        )),
    }
}
