//! The HTTP face of askbus: answer questions from any client, watch events over SSE.
//!
//! [`router`] turns a [`RequestHub`] (questions and approvals on one bus) into an axum [`Router`].
//! This is the only crate that knows JSON wire shapes and HTTP status codes: the question
//! crate speaks Rust errors, this crate turns them into answers a client can act on.
//!
//! The question routes and the event stream are wire-compatible with OpenCode's server, so
//! the `@opencode-ai/sdk` v2 client (`question.list`, `question.reply`, `question.reject`,
//! `event.subscribe`) answers askbus questions unchanged: camelCase names (`sessionID`,
//! `requestID`), SSE frames that are `data:` lines only, and `?directory=` /
//! `x-opencode-directory` (and `x-opencode-workspace`) accepted and ignored. Agents in other languages use server mode:
//! `POST /question` creates a question and `GET /question/{id}/wait` long-polls for its
//! outcome without holding a thread.
//!
//! Policy, in exact words:
//!
//! - **Every failure is JSON.** `{"code", "message"}` with a 4xx status, plus OpenCode's
//!   `_tag` and `requestID` on question routes. Bad JSON (400), a wrong content type (415),
//!   a malformed id (400), an unknown id (404), a second answer (409), answers that do not
//!   fit (422), an oversized body (413): never a panic, never a 500, never axum's plain-text
//!   rejections. A last layer rewrites any non-JSON error response into the same shape.
//! - **Auth is bearer tokens, compared in constant time.** No tokens configured means no
//!   auth (the server binary allows that only on loopback). A token may be scoped to one
//!   session; it then sees, answers and streams that session only (see [`TokenScope`]).
//! - **Limits.** Request bodies are capped ([`HttpConfig::body_limit`], 413 beyond).
//!   Non-streaming routes time out ([`HttpConfig::request_timeout`], 408); the event
//!   streams and history reads do not, and `/wait` is bounded by its own cap
//!   ([`HttpConfig::max_wait`]).
//!   CORS allows only the listed origins, never a wildcard, never credentials.
//! - **Quotas.** Event streams, long polls and history reads each hold a slot
//!   ([`StreamSlots`]): past
//!   [`HttpConfig::event_streams`], 503 `too_many_streams`; past a token's
//!   [`HttpConfig::max_event_streams_per_token`], 429 `quota` (see the `streams` module).
//!   Creates past the hub's [`PendingLimits`](askbus_question::PendingLimits) answer 429
//!   `quota`; with tokens, a create is charged to its token's account, named by its
//!   position (`token 2`), for the limits' `per_account`. Both carry `Retry-After`.
//! - **Lists are whole unless paged.** `GET /question` and `GET /approval` answer every
//!   pending request, as OpenCode's clients expect; with `limit` (at most 1,000) one page
//!   after the cursor `after`, the next page named in `Link` and `x-next-cursor`.
//! - **The audit log is read a page at a time.** `GET /audit` answers at most 1,000
//!   entries after the number `after`, the next page named as for lists; a token scoped
//!   to one session may not read it (403).
//! - **Slack signs instead of a token.** `POST /slack/interactivity` (configured with
//!   [`HttpConfig::slack`]) takes no bearer token: a press counts only with Slack's
//!   signature, at most 5 minutes old, and acts as the credential its Slack user is mapped
//!   to, through the same handlers (see the `slack` module).
//! - **Metrics are an admin's.** `GET /metrics` (OpenMetrics text) answers an admin's
//!   token for every session, 403 any other; [`HttpConfig::metrics`] off, 404.
//! - **Streams end on shutdown.** Cancelling the [`CancellationToken`] given to [`router`]
//!   ends every open event stream and long poll at once, so a graceful shutdown never
//!   waits on a client.
//!
//! # Over a shared store
//!
//! When servers share their requests through one store
//! ([`RequestHub::shares_store`](askbus_question::RequestHub::shares_store)), a request may
//! have been asked or answered through another server a moment ago, and this one's
//! follower may not have read it yet. So a read is never older than what a client saw
//! elsewhere: a lookup of an id this server does not know, a `GET` of a request pending
//! here, and every list, count, interrupt state, resume and session reject first wait for
//! [`RequestHub::caught_up`](askbus_question::RequestHub::caught_up). A reply needs no such
//! wait, since the store decides it: one that another server's beat is `409`
//! ([`DurableError::AlreadyResolved`](askbus_question::DurableError::AlreadyResolved)).
//!
//! Event ids are each server's own: a `Last-Event-ID` from another server is answered with
//! `server.resync` (`unknown_cursor`). Session stream cursors are the store's, so they
//! resume on any server.
//!
//! ```
//! use askbus_bus::Bus;
//! use askbus_http::{HttpConfig, router};
//! use askbus_question::RequestHub;
//! use tokio_util::sync::CancellationToken;
//!
//! let hub = RequestHub::new(Bus::new());
//! let shutdown = CancellationToken::new();
//! let app: axum::Router = router(hub, HttpConfig::default(), shutdown.clone());
//! // axum::serve(listener, app).with_graceful_shutdown(shutdown.cancelled_owned())
//! # drop(app);
//! ```

mod access;
mod approvals;
mod audit;
mod auth;
mod cors;
mod error;
mod error_shape;
mod events;
mod extract;
mod follow_up;
mod grants;
mod links;
mod long_poll;
mod metrics;
mod openapi;
mod opencode;
mod paging;
mod questions;
mod request_routes;
mod sessions;
mod site;
mod slack;
mod streams;
mod transcript;
mod webhooks;

use std::sync::Arc;
use std::time::Duration;

use askbus_question::RequestHub;
use axum::Router;
use axum::http::StatusCode;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::timeout::TimeoutLayer;
use tower_http::validate_request::ValidateRequestHeaderLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error_shape::JsonErrors;
use crate::openapi::RouteGroup;

pub use access::{AccessLog, Logged, LoggedResponse, REQUEST_ID};
pub use askbus_protocol::HistoryLimits;
pub use auth::{AccessToken, Authorized, TokenScope, Unauthorized, authorize};
pub use cors::{CorsOrigin, InvalidOrigin};
pub use error::{ApiError, ErrorCode};
pub use extract::read_body;
pub use links::{LINK_LIFETIME, LinkKey, Minted, ShortLinkSecret};
pub use metrics::StoreWrites;
pub use site::{
    AllowedHost, InvalidHost, MAX_HEADER_BYTES, SiteGuard, guarded, guarded_and_logged,
};
pub use slack::{BadSigningSecret, MAX_SLACK_AGE, SlackInteractivity};
pub use streams::{STREAM_RETRY_AFTER, StreamSlot, StreamSlots};

/// Settings of the HTTP API.
///
/// # Examples
///
/// ```
/// use askbus_http::{AccessToken, HttpConfig};
///
/// let config = HttpConfig {
///     tokens: vec![AccessToken::all_sessions("a-long-random-secret")],
///     ..HttpConfig::default()
/// };
/// assert_eq!(config.body_limit, 64 * 1024);
/// ```
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Accepted bearer tokens; empty: no authentication.
    pub tokens: Vec<AccessToken>,
    /// Origins allowed by CORS, exactly (`https://ui.example.com`); empty: no CORS headers.
    /// Their pages may also change state through a [`SiteGuard`].
    pub cors_origins: Vec<CorsOrigin>,
    /// Host names a [`SiteGuard`] accepts beside the listen address and the loopback
    /// names. Default: none.
    pub allowed_hosts: Vec<AllowedHost>,
    /// Largest accepted request body, in bytes. Default: 64 KiB.
    pub body_limit: usize,
    /// Time limit of non-streaming requests. Default: 30 s.
    pub request_timeout: Duration,
    /// Interval of `server.heartbeat` on event streams. Default: 10 s.
    pub heartbeat_interval: Duration,
    /// Longest `GET /question/{id}/wait`, whatever the client asks. Default: 120 s.
    pub max_wait: Duration,
    /// The `directory` reported by `GET /global/event`. Default: empty.
    pub directory: String,
    /// The slots of event streams and long polls (503 when all are taken). A handle: give
    /// the same to whatever else holds streams, for one cap. Default: 1,000 slots.
    pub event_streams: StreamSlots,
    /// How many of those slots one token may hold (429 beyond); only with tokens, and only
    /// if below the number of slots. Default: `usize::MAX` (no limit of its own).
    pub max_event_streams_per_token: usize,
    /// What a hub without a store keeps of its sessions' histories in memory (a store
    /// keeps them by its own limit). Default: [`HistoryLimits::default`].
    pub history: HistoryLimits,
    /// The key that signs answer links (`/answer/{token}`). Default: a random one, so
    /// links work until the process ends; give every instance of a shared store the same
    /// ([`LinkKey::from_secret`]).
    pub link_key: LinkKey,
    /// Whether `GET /metrics` counts and serves (see the `metrics` module); off, it is 404
    /// and no request pays for counting. Default: on.
    pub metrics: bool,
    /// The counters of the webhook dispatcher, when the server delivers webhooks, for
    /// `/metrics`. Default: none.
    pub webhooks: Option<Arc<askbus_notify::DeliveryStats>>,
    /// The store's write timings, for `/metrics`, when the server wrapped its store in a
    /// [`MeteredStore`](askbus_store::MeteredStore) telling them. Default: none.
    pub store_writes: Option<Arc<StoreWrites>>,
    /// Slack interactivity (`POST /slack/interactivity`): the app's signing secret and the
    /// Slack users who act as askbus credentials. Default: none (the route is 404).
    pub slack: Option<SlackInteractivity>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            tokens: Vec::new(),
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            body_limit: 64 * 1024,
            request_timeout: Duration::from_secs(30),
            heartbeat_interval: Duration::from_secs(10),
            max_wait: Duration::from_secs(120),
            directory: String::new(),
            event_streams: StreamSlots::default(),
            max_event_streams_per_token: usize::MAX,
            history: HistoryLimits::default(),
            link_key: LinkKey::random(),
            metrics: true,
            webhooks: None,
            store_writes: None,
            slack: None,
        }
    }
}

/// Shared by every handler.
#[derive(Clone)]
pub(crate) struct AppState {
    /// Immutable after construction.
    inner: Arc<Inner>,
}

/// What [`AppState`] points to.
struct Inner {
    /// The questions and approvals (and through them, the bus).
    hub: RequestHub,
    /// The settings.
    config: HttpConfig,
    /// Cancelled on graceful shutdown; ends streams and long polls.
    shutdown: CancellationToken,
    /// Every session's seed-protocol history and stream, from the hub's store (or memory).
    transcripts: askbus_protocol::Transcripts,
    /// What `GET /metrics` serves; `None` when [`HttpConfig::metrics`] is off.
    metrics: Option<Arc<metrics::Metrics>>,
    /// The `/ready` check in flight, shared by every probe meanwhile.
    readiness: openapi::Readiness,
}

impl AppState {
    /// The hub through which `caller` makes and decides requests: acting as its identity,
    /// so that the hub's `Duties` (roles, never the asker) apply to whatever it does, and
    /// charging its new requests to its token's account when tokens are configured, for
    /// the hub's per-account limit. Every route that changes a request goes through it.
    pub(crate) fn hub_for(&self, caller: &auth::Caller) -> RequestHub {
        let hub = self.inner.hub.acting_as(caller.0.identity.clone());
        match caller.0.token {
            Some(position) => hub.for_account(account_name(position)),
            None => hub,
        }
    }
}

/// How the token at `position` of [`HttpConfig::tokens`] is named in quota errors and
/// accounts: never by its secret.
pub(crate) fn account_name(position: usize) -> String {
    format!("token {}", position + 1)
}

/// The HTTP API over the questions and approvals of `hub`, configured by `config`; open
/// event streams and long polls end when `shutdown` is cancelled.
///
/// A [`QuestionService`](askbus_question::QuestionService) converts into a hub with a fresh approval service on its bus; to
/// share approvals with other code, build the [`RequestHub`] once and pass clones.
pub fn router(hub: RequestHub, config: HttpConfig, shutdown: CancellationToken) -> Router {
    let (router, _) = build(hub, config, shutdown);
    router
}

/// The OpenAPI document of the routes [`router`] serves, as served at `GET /openapi.json`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let hub = RequestHub::new(askbus_bus::Bus::new());
    // Metrics off: nothing of this router is served, so nothing needs counting.
    let config = HttpConfig {
        metrics: false,
        ..HttpConfig::default()
    };
    let (_, document) = build(hub, config, CancellationToken::new());
    document
}

fn build(
    hub: RequestHub,
    config: HttpConfig,
    shutdown: CancellationToken,
) -> (Router, utoipa::openapi::OpenApi) {
    let cors = cors::cors_layer(&config.cors_origins);
    let request_timeout = config.request_timeout;
    config
        .event_streams
        .divide_among_tokens(config.tokens.len(), config.max_event_streams_per_token);
    let metrics = config
        .metrics
        .then(|| metrics::Metrics::start(&hub, &config));
    let state = AppState {
        inner: Arc::new(Inner {
            transcripts: askbus_protocol::Transcripts::with_limits(&hub, config.history),
            metrics: metrics.clone(),
            hub,
            config,
            shutdown,
            readiness: openapi::Readiness::default(),
        }),
    };

    // Every `layer`/`route_layer` call wraps each route in one more boxed service, which a
    // request pays for with an allocation or two: each group of routes gets one stack.
    let authenticate =
        ValidateRequestHeaderLayer::custom(auth::Authenticate::new(&state.inner.config.tokens));
    // Routes that answer at once get a request timeout; streams and long polls must not.
    let timed = OpenApiRouter::new()
        .routes(routes!(questions::list, questions::create))
        .routes(routes!(questions::get))
        .routes(routes!(questions::reply))
        .routes(routes!(questions::reject))
        .routes(routes!(questions::cancel_session))
        .routes(routes!(questions::abort_session))
        .routes(routes!(openapi::global_health))
        .routes(routes!(opencode::v2_health))
        .routes(routes!(opencode::permission_list))
        .routes(routes!(opencode::permission_reply))
        .routes(routes!(opencode::permission_respond))
        .routes(routes!(opencode::v2_permission_requests))
        .routes(routes!(opencode::v2_permission_list))
        .routes(routes!(opencode::v2_permission_get))
        .routes(routes!(opencode::v2_permission_reply))
        .routes(routes!(opencode::v2_question_requests))
        .routes(routes!(opencode::v2_question_list))
        .routes(routes!(opencode::v2_question_reply))
        .routes(routes!(opencode::v2_question_reject))
        .routes(routes!(opencode::config_providers))
        .routes(routes!(opencode::provider_list))
        .routes(routes!(opencode::agent_list))
        .routes(routes!(opencode::config_get))
        .routes(routes!(opencode::session_get))
        .routes(routes!(grants::list))
        .routes(routes!(grants::revoke))
        .routes(routes!(approvals::list, approvals::create))
        .routes(routes!(approvals::get))
        .routes(routes!(approvals::reply))
        .routes(routes!(sessions::interrupt))
        .routes(routes!(sessions::resume))
        .routes(routes!(sessions::confirmation))
        .routes(routes!(sessions::pending))
        .routes(routes!(sessions::reject))
        .routes(routes!(transcript::step))
        .routes(routes!(audit::list))
        .routes(routes!(links::mint_question))
        .routes(routes!(links::mint_approval))
        .routes(routes!(metrics::scrape))
        .routes(routes!(webhooks::deliveries))
        .route_layer(ServiceBuilder::new().layer(authenticate.clone()).layer(
            TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, request_timeout),
        ));
    let timed = RouteGroup {
        bearer: true,
        timeout: true,
        stream_slot: false,
    }
    .document(timed);
    // Held open for as long as the client likes: each takes a slot (see `streams`). So does
    // a history read, which waits for a turn to read and then reads as long as the history
    // is: bounded by its work and by the slots, not by a clock (a timeout would fire on a
    // loaded machine and throw away the read already done, which a retry then repeats).
    let streaming = OpenApiRouter::new()
        .routes(routes!(transcript::history))
        .routes(routes!(questions::wait))
        .routes(routes!(approvals::wait))
        .routes(routes!(transcript::stream))
        .routes(routes!(events::event_stream))
        .routes(routes!(events::global_event_stream))
        .routes(routes!(events::v2_event_stream))
        .route_layer(ServiceBuilder::new().layer(authenticate).layer(
            axum::middleware::from_fn_with_state(state.clone(), streams::hold_slot),
        ));
    let streaming = RouteGroup {
        bearer: true,
        timeout: false,
        stream_slot: true,
    }
    .document(streaming);
    let protected = timed.merge(streaming);
    // An answer link is its own credential: no bearer token, but a request timeout.
    let linked = OpenApiRouter::new()
        .routes(routes!(links::read))
        .routes(routes!(links::reply))
        .routes(routes!(links::reject))
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ));
    // Slack signs its requests instead: no bearer token, a request timeout.
    let slack = OpenApiRouter::new()
        .routes(routes!(slack::interactivity))
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ));
    let answered_in_time = RouteGroup {
        bearer: false,
        timeout: true,
        stream_slot: false,
    };
    let probes = RouteGroup {
        bearer: false,
        timeout: false,
        stream_slot: false,
    }
    .document(
        OpenApiRouter::new()
            .routes(routes!(openapi::health))
            .routes(routes!(openapi::ready)),
    );
    let public = probes
        .merge(answered_in_time.document(linked))
        .merge(answered_in_time.document(slack));

    let (router, mut document) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(protected)
        .merge(public)
        .split_for_parts();
    document.info.version = env!("CARGO_PKG_VERSION").to_owned();
    openapi::add_guard_and_body_responses(&mut document);
    let served = Arc::new(document.clone());

    let router = router
        .route(
            "/openapi.json",
            axum::routing::get(move || {
                let served = Arc::clone(&served);
                async move { axum::Json(served) }
            }),
        )
        .fallback(|| async { ApiError::new(ErrorCode::NotFound, "no such route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                ErrorCode::MethodNotAllowed,
                "this route does not accept this method",
            )
        })
        .with_state(state);
    // One stack of layers over every route: each `layer` call would wrap every route in one
    // more boxed service, which costs each request about 1,200 instructions.
    let layers = ServiceBuilder::new()
        .layer(metrics::TimeRequests::new(metrics))
        .layer(JsonErrors);
    let router = match cors {
        Some(cors) => router.layer(ServiceBuilder::new().layer(cors).layer(layers)),
        None => router.layer(layers),
    };
    (router, document)
}
