//! The MCP face of the server: `/mcp` beside the HTTP API, and `askbus mcp` on stdio.
//!
//! Both make their requests through the server's one [`RequestHub`], the one the HTTP API
//! serves, so an MCP tool call shows up on `GET /event` and is answered over the HTTP API
//! like any other question (`POST /question/{id}/reply`) or approval
//! (`POST /approval/{id}/reply`).
//!
//! Auth is the API's: when tokens are configured, `/mcp` needs the same bearer token
//! (checked by [`askbus_http::authorize`]), and a session-scoped token confines the MCP
//! client to its session ([`ScopedSession`]). With tokens, the endpoint accepts any `Host`
//! header (the token already stops a DNS-rebinding page); without, it accepts loopback
//! hosts only, as the server then only listens on loopback.
//!
//! `askbus mcp` serves MCP on stdin/stdout *and* the HTTP API on `--listen`, since the
//! human answers over HTTP. When the client closes stdin the whole server shuts down: the
//! client that spawned the process owns it.

use std::sync::Arc;

use askbus_http::{AccessToken, TokenScope};
use askbus_mcp::{AskbusMcp, HttpOptions, ScopedSession};
use askbus_question::RequestHub;
use axum::Router;
use axum::extract::{Request, State};
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
    let tokens: Arc<[AccessToken]> = settings.http.tokens.clone().into();
    let options = HttpOptions {
        any_host: !tokens.is_empty(),
        body_limit: settings.http.body_limit,
    };
    let server = AskbusMcp::new(hub, settings.mcp.clone());
    let service = askbus_mcp::streamable_http_service(server, options, shutdown);
    let mcp = Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(tokens, authenticate));
    app.merge(mcp)
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

/// The API's bearer check in front of `/mcp`; a session-scoped token becomes a
/// [`ScopedSession`] the MCP server reads.
async fn authenticate(
    State(tokens): State<Arc<[AccessToken]>>,
    mut request: Request,
    next: Next,
) -> Response {
    match askbus_http::authorize(&tokens, request.headers()) {
        Ok(TokenScope::AllSessions) => {}
        Ok(TokenScope::Session(session)) => {
            request.extensions_mut().insert(ScopedSession(session));
        }
        Err(refused) => return refused.into_response(),
    }
    next.run(request).await
}
