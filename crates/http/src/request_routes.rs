//! The bodies the question and approval routes share: listing, reading, long polling and
//! the visibility check, written once over [`RequestRoutes`], which says what the two kinds
//! differ in (their service, their types, how a path names a request, their 404).
//!
//! The handlers stay in `questions.rs` and `approvals.rs`, each with its
//! `#[utoipa::path]`, since that documents its own route; their bodies are a call here. So
//! the rules of these routes hold for both kinds alike, in one place each:
//!
//! - A read catches up with a store shared with other servers before it answers from this
//!   one: a list always, a lookup that finds nothing, and a read of a pending request (it
//!   may have been answered elsewhere a moment ago).
//! - A token scoped to a session sees that session's requests only; any other answers
//!   `404`, the same as a request that does not exist ([`visible`]).
//! - A long poll that ends reads back who decided and, while pending, the votes so far.
//! - A request asked over HTTP is answered `200` only once durable, and no client going
//!   away meanwhile cancels it ([`created`]).

use std::future::Future;
use std::sync::Arc;

use askbus_question::{Durable, Outcome, RequestHub, RequestId, Snapshot};
use axum::Json;
use serde::Serialize;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::long_poll::{WaitQuery, long_poll};
use crate::paging::{PageQuery, Paged};

/// What the routes of a kind of request (question, approval) differ in, implemented by its
/// service (`QuestionService` in `questions.rs`, `ApprovalService` in `approvals.rs`).
pub(crate) trait RequestRoutes {
    /// The request as asked.
    type Request: Serialize + Send + Sync + 'static;
    /// A reply, as an outcome holds it.
    type Reply;
    /// What a rejection of a whole request holds.
    type Rejection;
    /// What names a request in a path, once extracted.
    type Key: ?Sized;
    /// The request with where it stands, as `get` and `wait` answer it.
    type Status: From<SnapshotOf<Self>> + Serialize;

    /// The list's path, in the link to its next page.
    const LIST_PATH: &'static str;
    /// The query parameter of the list's session filter, in the link to its next page.
    const SESSION_PARAM: &'static str;

    /// This kind's service in `hub`.
    fn of(hub: &RequestHub) -> &Self;
    /// The request's id, as either kind's (a page's cursor).
    fn request_id(request: &Self::Request) -> RequestId;
    /// The session the request belongs to.
    fn session_id(request: &Self::Request) -> &str;
    /// The request `key` names, pending or remembered, whoever may see it.
    fn find(&self, key: &Self::Key) -> Option<SnapshotOf<Self>>;
    /// `404` for the request `key` names.
    fn not_found(key: &Self::Key) -> ApiError;
    /// At most `limit` pending requests, all or one session's, with ids above `after`.
    fn pending(
        &self,
        session_id: Option<&str>,
        after: Option<RequestId>,
        limit: usize,
    ) -> Vec<Arc<Self::Request>>;
    /// `request` as the registry has it now, pending or remembered.
    fn latest(&self, request: &Self::Request) -> Option<SnapshotOf<Self>>;
    /// The outcome of `request`, once it has one.
    fn outcome(
        &self,
        request: &Self::Request,
    ) -> impl Future<Output = Result<Outcome<Self::Reply, Self::Rejection>, ApiError>> + Send;
}

/// A request of kind `K` with its outcome.
pub(crate) type SnapshotOf<K> = Snapshot<
    <K as RequestRoutes>::Request,
    <K as RequestRoutes>::Reply,
    <K as RequestRoutes>::Rejection,
>;

/// The pending requests of kind `K`, ascending by id: all of them, or the page `paging`
/// asks for; one session's if `session` names one (with a scoped token, its own).
pub(crate) async fn list<K: RequestRoutes>(
    state: &AppState,
    caller: &Caller,
    session: Option<&str>,
    paging: &PageQuery,
) -> Result<Paged<K::Request>, ApiError> {
    let session = caller.listed_session(session)?;
    let page = paging.page()?;
    // With a store shared by several servers: what any of them was asked until now.
    state.inner.hub.caught_up().await?;
    let requests = K::of(&state.inner.hub).pending(session, page.after(), page.read());
    Ok(page.answer(
        requests,
        K::request_id,
        K::LIST_PATH,
        session.map(|session| (K::SESSION_PARAM, session)),
    ))
}

/// The request `key` names, pending or resolved, with its status, if the caller may see it.
pub(crate) async fn get<K: RequestRoutes>(
    state: &AppState,
    caller: &Caller,
    key: &K::Key,
) -> Result<Json<K::Status>, ApiError> {
    let mut snapshot = visible::<K>(state, caller, key).await?;
    if snapshot.outcome.is_none() && state.inner.hub.shares_store() {
        // Pending here, but perhaps answered through another server a moment ago: a read
        // is never older than what the client saw elsewhere (a reply needs no such wait:
        // the store decides it).
        state.inner.hub.caught_up().await?;
        snapshot = visible::<K>(state, caller, key).await?;
    }
    if snapshot.outcome.is_some() {
        // Read as an outcome, it would be acted on: only once the store holds it (at once
        // when it does; after the write, while it is under way), and never when the store
        // refused it (the 503 its waiters got).
        K::of(&state.inner.hub).outcome(&snapshot.request).await?;
    }
    Ok(Json(K::Status::from(snapshot)))
}

/// The request `key` names with its status once it is resolved, or as it stands when the
/// wait `query` asks for runs out (or the server shuts down).
pub(crate) async fn wait<K: RequestRoutes>(
    state: &AppState,
    caller: &Caller,
    key: &K::Key,
    query: &WaitQuery,
) -> Result<Json<K::Status>, ApiError> {
    let limit = query.limit(state)?;
    let snapshot = visible::<K>(state, caller, key).await?;
    // A request resolved already is waited for too: its outcome may still be on its way to
    // the store (then the wait ends once it is durable), or the store may have refused it
    // (then the wait is the 503 every waiter got). A durable one is ready at once.
    let requests = K::of(&state.inner.hub);
    let outcome = match long_poll(state, limit, requests.outcome(&snapshot.request)).await {
        Some(outcome) => Some(outcome?),
        None => None,
    };
    // Who decided, and the votes so far, are in the registry's record, read back now.
    let (decided_by, votes) = match (&outcome, requests.latest(&snapshot.request)) {
        (Some(_), Some(resolved)) => (resolved.decided_by, Vec::new()),
        (None, Some(pending)) => (None, pending.votes),
        (_, None) => (None, Vec::new()),
    };
    Ok(Json(K::Status::from(Snapshot {
        request: snapshot.request,
        outcome,
        decided_by,
        votes,
    })))
}

/// The request `key` names if it exists and the caller may see it; otherwise `404`, the
/// same answer whether it does not exist or belongs to another session.
///
/// A request this server does not know may have been asked through another server sharing
/// its store a moment ago: it catches up with the store before answering `404`.
pub(crate) async fn visible<K: RequestRoutes>(
    state: &AppState,
    caller: &Caller,
    key: &K::Key,
) -> Result<SnapshotOf<K>, ApiError> {
    let hub = &state.inner.hub;
    let found = match K::of(hub).find(key) {
        Some(snapshot) => Some(snapshot),
        None => {
            hub.caught_up().await?;
            K::of(hub).find(key)
        }
    };
    found
        .filter(|snapshot| caller.0.scope.allows(K::session_id(&snapshot.request)))
        .ok_or_else(|| K::not_found(key))
}

/// The answer to a request asked over HTTP (`POST /question`, `POST /approval`): `pending`,
/// the request just submitted, once it is durable (`recorded` and `detach` are its kind's
/// `PendingQuestion` or `PendingApproval` methods).
///
/// Nobody awaits its outcome in this process: the asker collects it over HTTP (`wait`).
///
/// # Errors
///
/// What its `Durable` fails with, as [`ApiError`] maps it: 503 when the request could not
/// be stored durably.
pub(crate) async fn created<Pending, Request>(
    mut pending: Pending,
    recorded: impl FnOnce(&mut Pending) -> Durable,
    detach: impl FnOnce(Pending) -> Arc<Request>,
) -> Result<Json<Arc<Request>>, ApiError> {
    let recorded = recorded(&mut pending);
    // Detached first, so a client that goes away while the store writes does not cancel it.
    let request = detach(pending);
    recorded.await?;
    Ok(Json(request))
}
