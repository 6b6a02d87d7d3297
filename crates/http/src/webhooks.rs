//! `GET /webhook/deliveries`: what the outbox sent, is sending, and gave up on.
//!
//! Every request event the server tells its channels (webhooks, Slack, email) of is a
//! message with one delivery per target (see the `askbus-notify` crate). This route shows
//! the deliveries, newest message first, each with its attempts and the last one's status or error, so an operator can see
//! a receiver that is down, slow or refusing, and what will be tried when.
//!
//! Paging, in exact words: at most `limit` deliveries (1 to 1,000; 100 without it) of
//! messages older than the message id `before` (absent: from the newest), optionally only
//! those in `state`. A page never splits a message's deliveries: when more follow,
//! `x-next-cursor` (and `Link: <…>; rel="next"`) hold the `before` of the next page, the
//! oldest message of this one. Deliveries are forgotten once settled for the server's
//! retention period (`--keep-resolved-days`).
//!
//! Who may read it: an admin with a token for every session (payloads hold every session's
//! requests), as for `/metrics`. A server without a store has no outbox: always empty.

use askbus_question::Role;
use askbus_store::{Delivery, DeliveryQuery, DeliveryState};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::paging::{MAX_PAGE, next_page};

/// The page size without `limit`.
const DEFAULT_PAGE: usize = 100;

/// `GET /webhook/deliveries` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DeliveriesQuery {
    /// At most this many deliveries, 1 to 1000 (a larger value is lowered to 1000; absent:
    /// 100).
    #[param(minimum = 1)]
    limit: Option<usize>,
    /// Only deliveries of messages older than this one (`msg_…`): the previous page's
    /// `x-next-cursor`.
    before: Option<String>,
    /// Only deliveries in this state.
    state: Option<StateFilter>,
}

/// A delivery's state, as a filter.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StateFilter {
    /// Not delivered yet; due at `next_attempt_at`.
    Pending,
    /// The target took it (a webhook's 2xx, Slack's `ok`, the SMTP relay's 250).
    Delivered,
    /// Given up on: the retry window ran out, or the target refused it for good (a
    /// webhook's 410 Gone, a Slack error no retry fixes, an SMTP 5xx).
    Abandoned,
}

impl From<StateFilter> for DeliveryState {
    fn from(state: StateFilter) -> Self {
        match state {
            StateFilter::Pending => Self::Pending,
            StateFilter::Delivered => Self::Delivered,
            StateFilter::Abandoned => Self::Abandoned,
        }
    }
}

impl From<DeliveryState> for StateFilter {
    fn from(state: DeliveryState) -> Self {
        match state {
            DeliveryState::Pending => Self::Pending,
            DeliveryState::Delivered => Self::Delivered,
            DeliveryState::Abandoned => Self::Abandoned,
        }
    }
}

/// One message on its way to one target.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct DeliveryView {
    /// The message id (`msg_…`), the `webhook-id` header of every attempt.
    message_id: String,
    /// The event it tells of (`question.asked`).
    #[serde(rename = "type")]
    event_type: Option<String>,
    /// Where it goes: a webhook's URL origin, then `/...` and a fingerprint of the URL
    /// (without its fragment) for one with a path other than `/`, a query, a user or a
    /// password, any of which may hold the receiver's secret (after `NAME=` for a
    /// recipient's); `slack:CHANNEL`; or `email:ADDRESS`.
    target: String,
    /// Where it stands.
    state: StateFilter,
    /// How many attempts were made.
    attempts: u32,
    /// When the message was made, milliseconds since the Unix epoch.
    created_at: u64,
    /// While pending: when it is next tried (or its current attempt's lease ends),
    /// milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_attempt_at: Option<u64>,
    /// The newest attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_attempt: Option<AttemptView>,
}

/// One attempt.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct AttemptView {
    /// When it ended, milliseconds since the Unix epoch.
    at: u64,
    /// The receiver's HTTP status, if it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl From<Delivery> for DeliveryView {
    fn from(delivery: Delivery) -> Self {
        let event_type = serde_json::from_str::<serde_json::Value>(&delivery.payload)
            .ok()
            .and_then(|payload| payload["type"].as_str().map(str::to_owned));
        Self {
            message_id: delivery.message_id,
            event_type,
            target: delivery.target,
            state: delivery.state.into(),
            attempts: delivery.attempts,
            created_at: delivery.created_at_ms,
            next_attempt_at: delivery.next_attempt_ms,
            last_attempt: delivery.last_attempt.map(|attempt| AttemptView {
                at: attempt.at_ms,
                status: attempt.status,
                error: attempt.error,
            }),
        }
    }
}

/// List webhook deliveries, newest message first, with their attempts.
#[utoipa::path(
    get,
    path = "/webhook/deliveries",
    operation_id = "webhook.deliveries",
    tag = "webhook",
    params(DeliveriesQuery),
    responses(
        (status = 200, description = "Deliveries, newest message first (a message's by target)", body = Vec<DeliveryView>, headers(
            ("link" = String, description = "When more follow: `<URL of the next page>; rel=\"next\"`"),
            ("x-next-cursor" = String, description = "When more follow: the `before` of the next page"),
        )),
        (status = 400, description = "Malformed `limit`, `before` or `state`", body = crate::error::ErrorBody),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "Not an admin's token for every session", body = crate::error::ErrorBody),
        (status = 503, description = "The store could not be read", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> Result<Response, ApiError> {
    if caller.0.identity.role != Role::Admin || caller.0.scope.session().is_some() {
        return Err(ApiError::forbidden(
            "only an admin's token for every session may read webhook deliveries",
        ));
    }
    let limit = match query.limit {
        None => DEFAULT_PAGE,
        Some(0) => return Err(ApiError::bad_request("`limit` must be at least 1")),
        Some(limit) => limit.min(MAX_PAGE),
    };
    if let Some(before) = &query.before
        && !before.starts_with("msg_")
    {
        return Err(ApiError::bad_request(
            "`before` is a message id (`msg_…`): the previous page's `x-next-cursor`",
        ));
    }
    let Some(store) = state.inner.hub.store() else {
        return Ok(Json(Vec::<DeliveryView>::new()).into_response());
    };
    // One more than the page, to know whether another follows.
    let mut page = store
        .deliveries(DeliveryQuery {
            before: query.before.clone(),
            state: query.state.map(DeliveryState::from),
            limit: limit + 1,
        })
        .await
        .map_err(|error| ApiError::store_unreadable(&error))?;
    let mut next = HeaderMap::new();
    if page.len() > limit {
        page.truncate(limit);
        // The next page starts before the oldest message this page holds whole.
        let split = page.last().map(|last| last.message_id.clone());
        if page.first().map(|first| &first.message_id) != split.as_ref() {
            page.retain(|delivery| Some(&delivery.message_id) != split.as_ref());
        }
        if let Some(oldest) = page.last() {
            let (cursor, limit) = (oldest.message_id.as_str(), limit.to_string());
            let mut link = vec![("limit", limit.as_str()), ("before", cursor)];
            link.extend(
                query
                    .state
                    .map(|state| ("state", DeliveryState::from(state).as_str())),
            );
            next = next_page("/webhook/deliveries", &link, cursor);
        }
    }
    let views: Vec<DeliveryView> = page.into_iter().map(DeliveryView::from).collect();
    Ok((next, Json(views)).into_response())
}
