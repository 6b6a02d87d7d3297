//! Slots for the responses a client holds open: event streams and long polls, and history
//! reads, which wait for a turn to read.
//!
//! An open event stream (`GET /event`, `GET /global/event`, `GET /session/{id}/stream`) or
//! long poll (`GET /question/{id}/wait`, `GET /approval/{id}/wait`) holds a connection, so
//! a file descriptor, and a few kilobytes for as long as it lasts. Without a cap, a client
//! that opens enough of them exhausts the process's file descriptors, and then nothing,
//! `/health` included, is answered. So each takes a slot, and the slots are counted. A
//! history read (`GET /session/{id}/history`) is held too, waiting for its turn to read
//! (a few run at once) and then as long as its history takes; it has no request timeout
//! (a timeout would discard, on a loaded machine, reads already done), so its slot is
//! what bounds how many can wait.
//!
//! The policy, in exact words, is on [`StreamSlots`].

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};

/// How long a client refused a slot is told to wait: one heartbeat at the default
/// interval. A stream whose client vanished without closing its connection gives its slot
/// back when its next heartbeat cannot be written, so by then those slots are free.
pub const STREAM_RETRY_AFTER: Duration = Duration::from_secs(10);

/// A count of slots for held responses: event streams and long polls; clones share the
/// same slots.
///
/// Policy, in exact words:
///
/// - **A held response takes a slot before its handler runs** and gives it back when its
///   body is dropped: when it ends, or when its client goes away (an event stream notices
///   at its next heartbeat at the latest; a long poll ends within its wait anyway).
/// - **With every slot taken** ([`HttpConfig::event_streams`](crate::HttpConfig)), a new
///   one is refused with 503 `too_many_streams` and `Retry-After` ([`STREAM_RETRY_AFTER`]);
///   streams already open go on.
/// - **With tokens configured, one token holds at most
///   [`HttpConfig::max_event_streams_per_token`](crate::HttpConfig) slots**: beyond, 429
///   `quota` with `Retry-After`, naming the token by its position (`token 2`), so one
///   client cannot take every slot from the others.
/// - **Nothing else takes a slot.** Replies, lists, creates and `/health` never wait for
///   one, so they answer with every slot taken.
///
/// The slots are a handle: a server that holds other streams (the MCP endpoint's) gives
/// them the same handle ([`try_take_for`](Self::try_take_for)), so one cap covers them
/// all, each token's included (the router divides the handle among its tokens when it is
/// built).
///
/// # Examples
///
/// ```
/// use askbus_http::{HttpConfig, StreamSlots};
///
/// let config = HttpConfig { event_streams: StreamSlots::new(5_000), ..HttpConfig::default() };
/// assert_eq!(config.event_streams.limit(), 5_000);
///
/// let slots = StreamSlots::new(2);
/// let first = slots.try_take().expect("a free slot");
/// let _second = slots.try_take().expect("a free slot");
/// assert!(slots.try_take().is_err(), "every slot is taken");
/// drop(first);
/// assert_eq!(slots.available(), 1);
/// ```
#[derive(Clone)]
pub struct StreamSlots {
    /// One permit per free slot.
    free: Arc<Semaphore>,
    /// How many slots there are.
    limit: usize,
    /// Each token's own slots, once the router divided the slots among its tokens.
    tokens: Arc<OnceLock<TokenSlots>>,
}

/// A slot taken from [`StreamSlots`] (and, for a caller with a token, one of that token's);
/// given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    /// The slot of the server's count.
    _server: OwnedSemaphorePermit,
    /// The slot of the caller's token, when tokens have their own limit.
    _token: Option<OwnedSemaphorePermit>,
}

/// A response body that keeps a [`StreamSlot`] until the body is dropped.
struct Held {
    /// The response's own body.
    body: Body,
    /// Given back with the body.
    _slot: StreamSlot,
}

impl StreamSlots {
    /// `limit` slots, all free (at most [`Semaphore::MAX_PERMITS`]).
    pub fn new(limit: usize) -> Self {
        let limit = limit.min(Semaphore::MAX_PERMITS);
        Self {
            free: Arc::new(Semaphore::new(limit)),
            limit,
            tokens: Arc::default(),
        }
    }

    /// How many slots there are.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How many slots are free now.
    pub fn available(&self) -> usize {
        self.free.available_permits()
    }

    /// Takes a free slot, for a response held open outside the router (the server's MCP
    /// endpoint); hold it with [`StreamSlot::hold`].
    ///
    /// # Errors
    ///
    /// 503 `too_many_streams` with `Retry-After` when every slot is taken.
    pub fn try_take(&self) -> Result<StreamSlot, ApiError> {
        self.try_take_for(None)
    }

    /// Takes a free slot for a caller with the token at `token` (its position in
    /// [`HttpConfig::tokens`](crate::HttpConfig), as [`authorize`](crate::authorize) names
    /// it), or with none: a slot of the server's count and, when tokens have a limit of
    /// their own, one of the token's, the token's first, so a token over its share is told
    /// so (429) even when the server is full too.
    ///
    /// # Errors
    ///
    /// 429 `quota` with `Retry-After` when the token holds its share; 503
    /// `too_many_streams` with `Retry-After` when every slot is taken.
    pub fn try_take_for(&self, token: Option<usize>) -> Result<StreamSlot, ApiError> {
        let token_slot = match token.and_then(|position| {
            let tokens = self.tokens.get()?;
            Some((position, tokens.slots.get(position)?, tokens.per_token))
        }) {
            None => None,
            Some((position, slots, limit)) => Some(take(slots).ok_or_else(|| {
                ApiError::new(
                    ErrorCode::Quota,
                    format!(
                        "{} already holds {limit} open event streams and long polls, its limit; close some, or try again later",
                        crate::account_name(position),
                    ),
                )
                .with_retry_after(STREAM_RETRY_AFTER)
            })?),
        };
        Ok(StreamSlot {
            _server: self.take_permit()?,
            _token: token_slot,
        })
    }

    /// Gives each of `tokens` tokens `per_token` slots of its own, unless that limits
    /// nothing the server's count does not, or the slots were divided already (the
    /// handle's first router does it, for every holder of the handle).
    pub(crate) fn divide_among_tokens(&self, tokens: usize, per_token: usize) {
        if per_token < self.limit {
            let slots = (0..tokens)
                .map(|_| Arc::new(Semaphore::new(per_token)))
                .collect();
            let _ = self.tokens.set(TokenSlots { slots, per_token });
        }
    }

    /// A free slot's permit, or 503.
    fn take_permit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        take(&self.free).ok_or_else(|| {
            ApiError::new(
                ErrorCode::TooManyStreams,
                format!(
                    "the server already holds {} open event streams and long polls, its limit; try again later",
                    self.limit
                ),
            )
            .with_retry_after(STREAM_RETRY_AFTER)
        })
    }
}

impl std::fmt::Debug for StreamSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSlots")
            .field("limit", &self.limit)
            .field("available", &self.available())
            .finish()
    }
}

impl Default for StreamSlots {
    /// 1,000 slots. The server derives its own number from its file-descriptor limit.
    fn default() -> Self {
        Self::new(1_000)
    }
}

impl StreamSlot {
    /// `response`, holding this slot until its body is dropped (it ended, or the client
    /// went away).
    pub fn hold(self, response: Response) -> Response {
        response.map(|body| Body::new(Held { body, _slot: self }))
    }
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Each token's own slots: one count per configured token.
struct TokenSlots {
    /// By token position.
    slots: Box<[Arc<Semaphore>]>,
    /// How many slots each token has.
    per_token: usize,
}

/// The layer of every held route: takes the caller's slots before the handler runs and
/// keeps them with the response's body.
pub(crate) async fn hold_slot(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let token = request
        .extensions()
        .get::<Caller>()
        .and_then(|caller| caller.0.token);
    let slot = match state.inner.config.event_streams.try_take_for(token) {
        Ok(slot) => slot,
        Err(refused) => return refused.into_response(),
    };
    // The slot lives across the handler (a long poll waits in it), then with the body.
    let response = next.run(request).await;
    slot.hold(response)
}

/// A free permit of `semaphore`, if any (nothing closes these semaphores, so the only
/// failure is that none is free).
fn take(semaphore: &Arc<Semaphore>) -> Option<OwnedSemaphorePermit> {
    Arc::clone(semaphore).try_acquire_owned().ok()
}
