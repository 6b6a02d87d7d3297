//! The ways to reach the server: Streamable HTTP (a tower service), stdio, or any byte
//! stream with stdio's framing.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::service::{QuitReason, ServerInitializeError};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::AskbusMcp;

/// Settings of the Streamable HTTP endpoint.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Accept any `Host` header. Off (the default), only loopback hosts (`localhost`,
    /// `127.0.0.1`, `::1`) are accepted, which stops DNS rebinding from reaching a local,
    /// unauthenticated server. Turn it on when every request needs a bearer token anyway,
    /// or the server is reached under another name.
    pub any_host: bool,
    /// Largest accepted request body, in bytes. Default: 64 KiB.
    pub body_limit: usize,
}

/// Why the stdio server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpServeError {
    /// The client did not complete the MCP handshake.
    #[error("the MCP client did not initialize: {0}")]
    Initialize(#[from] Box<ServerInitializeError>),
    /// The server task failed.
    #[error("the MCP server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            any_host: false,
            body_limit: 64 * 1024,
        }
    }
}

/// The sessions of a Streamable HTTP endpoint: made before it (see
/// [`streamable_http_service`]), and kept to count them, so that whoever serves the
/// endpoint can refuse a new session past a limit of its own.
#[derive(Clone, Default)]
pub struct McpSessions(Arc<LocalSessionManager>);

impl McpSessions {
    /// No session yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sessions are open: made, and neither closed (`DELETE`) nor idle past the
    /// session manager's keep-alive (300 s).
    pub async fn open(&self) -> usize {
        self.0.sessions.read().await.len()
    }

    /// Whether the endpoint opens a session for a `POST` with `headers` and `body`: it
    /// carries no session id the endpoint can read, and its body is an `initialize` request.
    ///
    /// Both are read as the endpoint reads them (the header as text, the body as rmcp's
    /// message), so that a limit kept in front of the endpoint sees what it will do: a
    /// cheaper reading (the method as borrowed text, any session header) let an escaped
    /// method name (`"initiali\u007ae"`) or a session id that is not text open sessions
    /// past the limit.
    pub fn opened_by(headers: &http::HeaderMap, body: &[u8]) -> bool {
        let in_session = headers
            .get(HEADER_SESSION_ID)
            .is_some_and(|id| id.to_str().is_ok());
        !in_session
            && matches!(
                serde_json::from_slice::<ClientJsonRpcMessage>(body),
                Ok(JsonRpcMessage::Request(message))
                    if matches!(message.request, ClientRequest::InitializeRequest(_))
            )
    }
}

impl std::fmt::Debug for McpSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSessions").finish_non_exhaustive()
    }
}

/// The MCP Streamable HTTP endpoint of `server`, as a tower service to mount (askbus
/// mounts it at `/mcp`), keeping its sessions in `sessions`.
///
/// Clients of protocol versions before 2026-07-28 get stateful sessions (`Mcp-Session-Id`),
/// which server-to-client requests (the elicitation bridge) and progress need; 2026-07-28
/// requests are served statelessly, as that version requires. Cancelling `shutdown` ends
/// every session and open stream.
pub fn streamable_http_service(
    server: AskbusMcp,
    options: HttpOptions,
    sessions: &McpSessions,
    shutdown: CancellationToken,
) -> StreamableHttpService<AskbusMcp, LocalSessionManager> {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(options.body_limit);
    if options.any_host {
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(server.for_connection()),
        Arc::clone(&sessions.0),
        config,
    )
}

/// Serves `server` to one client over this process's stdin and stdout until the client
/// closes stdin or `shutdown` is cancelled.
///
/// Nothing else may write to stdout meanwhile: log to stderr.
///
/// # Errors
///
/// The client did not complete the handshake, or the server task failed.
pub async fn serve_stdio(
    server: AskbusMcp,
    shutdown: CancellationToken,
) -> Result<QuitReason, McpServeError> {
    let (reader, writer) = rmcp::transport::io::stdio_pipes();
    serve_io(server, reader, writer, shutdown).await
}

/// Serves `server` to one client over any byte stream speaking MCP's stdio framing
/// (newline-delimited JSON-RPC): a child process's pipes, a Unix socket, an in-memory
/// duplex. Returns when the client closes `reader` or `shutdown` is cancelled.
///
/// # Errors
///
/// The client did not complete the handshake, or the server task failed.
pub async fn serve_io<R, W>(
    server: AskbusMcp,
    reader: R,
    writer: W,
    shutdown: CancellationToken,
) -> Result<QuitReason, McpServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = server
        .for_connection()
        .serve_with_ct((reader, writer), shutdown)
        .await
        .map_err(Box::new)?;
    Ok(running.waiting().await?)
}
