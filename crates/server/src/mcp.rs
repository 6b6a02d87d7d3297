//! The MCP face of the server: `/mcp` beside the HTTP API, and `askbus mcp` on stdio.
//!
//! Both make their requests through the server's one [`RequestHub`], the one the HTTP API
//! serves, so an MCP tool call shows up on `GET /event` and is answered over the HTTP API
//! like any other question (`POST /question/{id}/reply`) or approval
//! (`POST /approval/{id}/reply`).
//!
//! Auth is the API's: when tokens are configured, `/mcp` needs the same bearer token
//! (checked by [`askbus_http::authorize`]), and a session-scoped token confines the MCP
//! client to its session ([`ScopedSession`]). The `Host` and the site of a browser's
//! request are checked by the server's [`SiteGuard`](askbus_http::SiteGuard), in front of
//! every route, `/mcp` included.
//!
//! Limits are the API's too, as far as MCP allows: a POST body must arrive whole within the
//! API's request timeout ([`HttpConfig::request_timeout`](askbus_http::HttpConfig), 408
//! otherwise) and within its body limit (413), so a client cannot hold a connection by
//! sending headers and then trickling a body. What comes back is not timed: a tool call's
//! answer streams for as long as the human takes, and the `GET` event stream stays open.
//! That stream takes a slot of the API's ([`HttpConfig::event_streams`](askbus_http::HttpConfig),
//! 503 when none is free), so it counts against the same cap as `/event`. A tool call held
//! open is a pending request, capped by the hub's pending limits instead.
//!
//! `askbus mcp` serves MCP on stdin/stdout *and* the HTTP API on `--listen`, since the
//! human answers over HTTP. When the client closes stdin the whole server shuts down: the
//! client that spawned the process owns it.
//!
//! The answer links MCP offers as URL-mode elicitations ([`answer_links`]) are the HTTP
//! API's, minted by [`LinkKey::mint`] under the API's link key: the MCP
//! crate does not depend on the HTTP crate, so this crate, which builds both, hands it the
//! minting.

use std::sync::Arc;
use std::time::Duration;

use askbus_http::{AccessToken, ApiError, Authorized, ErrorCode, LinkKey, StreamSlots, TokenScope};
use askbus_mcp::{AnswerLinks, AskbusMcp, HttpOptions, McpCaller, McpSessions, ScopedSession};
use askbus_question::RequestHub;
use axum::Router;
use axum::body::Body;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;

use crate::Settings;

/// `app` with the MCP Streamable HTTP endpoint mounted at `/mcp`.
pub(crate) fn mount(
    app: Router,
    hub: RequestHub,
    settings: &Settings,
    shutdown: CancellationToken,
) -> Router {
    let sessions = McpSessions::new();
    let gate = Arc::new(Gate {
        tokens: settings.http.tokens.clone().into(),
        body_timeout: settings.http.request_timeout,
        body_limit: settings.http.body_limit,
        streams: settings.http.event_streams.clone(),
        sessions: sessions.clone(),
        max_sessions: settings.max_mcp_sessions,
    });
    let options = HttpOptions {
        // The server's site guard, in front of every route, checked the Host already.
        any_host: true,
        body_limit: settings.http.body_limit,
    };
    let server = AskbusMcp::new(hub, settings.mcp.clone());
    let service = askbus_mcp::streamable_http_service(server, options, &sessions, shutdown);
    let mcp = Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate, pass_gate));
    app.merge(mcp)
}

/// The answer links of the HTTP API, signed with `key`, as absolute URLs under `base` (the
/// server's public URL): a link acting as the MCP caller, for a caller that may decide (no
/// link acts as an agent).
pub(crate) fn answer_links(key: LinkKey, base: String) -> AnswerLinks {
    let base = base.trim_end_matches('/').to_owned();
    AnswerLinks::new(move |request, acts_as, expires_at| {
        if !acts_as.may_decide() {
            return None;
        }
        let minted = key.mint(request, acts_as.clone(), expires_at);
        Some(format!("{base}{}", minted.path))
    })
}

/// Serves MCP on stdio until the client closes stdin (then shuts the server down) or
/// `shutdown` is cancelled.
pub(crate) async fn serve_stdio(hub: RequestHub, settings: &Settings, shutdown: CancellationToken) {
    let server = AskbusMcp::new(hub, settings.mcp.clone());
    match askbus_mcp::serve_stdio(server, shutdown.child_token()).await {
        Ok(reason) => tracing::info!("the MCP client on stdio is gone ({reason:?}); stopping"),
        Err(error) => tracing::error!("MCP on stdio failed: {error}; stopping"),
    }
    shutdown.cancel();
}

/// What a request to `/mcp` must pass before the MCP server sees it.
struct Gate {
    /// The API's bearer tokens; none: no authentication.
    tokens: Box<[AccessToken]>,
    /// How long a POST body may take to arrive: the API's request timeout.
    body_timeout: Duration,
    /// Largest POST body, in bytes: the API's body limit.
    body_limit: usize,
    /// The API's stream slots, one of which every request to `/mcp` holds.
    streams: StreamSlots,
    /// The endpoint's sessions, counted before a new one is made.
    sessions: McpSessions,
    /// Most sessions open at once (`--max-mcp-sessions`).
    max_sessions: usize,
}

/// The API's bearer check (the caller's identity becomes an [`McpCaller`], a session-scoped
/// token also a [`ScopedSession`] the MCP
/// server reads), a stream slot of the caller's token held by the response, then a POST's
/// body read whole within [`Gate::body_timeout`].
async fn pass_gate(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    let Authorized {
        scope,
        token,
        identity,
    } = match askbus_http::authorize(&gate.tokens, request.headers()) {
        Ok(authorized) => authorized,
        Err(refused) => return refused.into_response(),
    };
    if let TokenScope::Session(session) = scope {
        request.extensions_mut().insert(ScopedSession(session));
    }
    request.extensions_mut().insert(McpCaller(identity));
    // Every MCP response may be held open (the GET stream; a tool call waiting for its
    // human, or joining another's wait): each takes a slot, the caller's token's too.
    let slot = match gate.streams.try_take_for(token) {
        Ok(slot) => slot,
        Err(refused) => return refused.into_response(),
    };
    if request.method() == Method::POST {
        let (parts, body) = match read_body(request, &gate).await {
            Ok(read) => read,
            Err(refused) => return refused.into_response(),
        };
        if let Err(refused) = check_session_room(&parts.headers, &body, &gate).await {
            return refused.into_response();
        }
        request = Request::from_parts(parts, Body::from(body));
    }
    slot.hold(next.run(request).await)
}

/// How long a client refused a session is told to wait: sessions go when their clients
/// close them, or idle.
const SESSION_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Refuses `request` (503 `too_many_streams`) when it would open a session, an
/// `initialize` outside any session, while [`Gate::max_sessions`] are open. Sessions live
/// until their clients close them, or for the session manager's keep-alive (300 s) idle,
/// so without this a client could make the server hold as many as it can send
/// `initialize`s. Requests racing past the count at once may pass it by as many as there
/// are stream slots.
async fn check_session_room(headers: &HeaderMap, body: &[u8], gate: &Gate) -> Result<(), ApiError> {
    if !McpSessions::opened_by(headers, body) || gate.sessions.open().await < gate.max_sessions {
        return Ok(());
    }
    tracing::warn!(
        "refused an MCP session: {} are open, the limit (--max-mcp-sessions)",
        gate.max_sessions
    );
    Err(ApiError::new(
        ErrorCode::TooManyStreams,
        format!(
            "the server already holds {} MCP sessions, its limit; close one (DELETE /mcp with its Mcp-Session-Id), or try again later",
            gate.max_sessions
        ),
    )
    .with_retry_after(SESSION_RETRY_AFTER))
}

/// `request`'s head and its body, read into memory by [`askbus_http::read_body`] (so a
/// dripped body costs no more than the limit), or why it was not: it did not arrive within
/// [`Gate::body_timeout`] (408), it is larger than [`Gate::body_limit`] (413), or the
/// connection failed (400).
///
/// Only the reading is timed, unlike the API's routes, whose whole request is: an MCP
/// response may be a stream that lasts as long as the human takes to answer.
async fn read_body(request: Request, gate: &Gate) -> Result<(Parts, Bytes), ApiError> {
    let (parts, body) = request.into_parts();
    let read = askbus_http::read_body(body, gate.body_limit);
    match tokio::time::timeout(gate.body_timeout, read).await {
        Ok(body) => Ok((parts, body?)),
        Err(_) => Err(ApiError::new(
            ErrorCode::RequestTimeout,
            "the request body took too long to arrive",
        )),
    }
}
