//! The `askbus` server: the HTTP API and event stream of askbus as one binary, for agents
//! and UIs in any language.
//!
//! `main.rs` is thin: it parses [`Cli`], sets up logging and calls [`run`]. Everything
//! worth testing lives here, first of all [`Cli::settings`], which turns flags into
//! [`Settings`] or refuses with a [`ConfigError`] that says what to change.
//!
//! Policy, in exact words:
//!
//! - **No token, no network.** The server refuses to listen on an address that is not
//!   loopback unless at least one token is configured: a question server reachable from
//!   the network without authentication lets anyone answer for the human.
//! - **Tokens.** `--token` (env `ASKBUS_TOKEN`) may be repeated or comma-separated. Each
//!   entry is `TOKEN` (every session) or `TOKEN@SESSION_ID` (that session only: it can
//!   neither list, see, answer nor stream another session's requests). A token cannot
//!   contain `@` or `,`; use long random ones (`openssl rand -hex 32`).
//! - **Stores.** By default requests, outcomes, events and session histories are kept in an
//!   embedded SQLite file (`sqlite:askbus.db` in the working directory), so a restart loses
//!   nothing: pending requests are pending again, answers given stay given, an agent that
//!   asks again from the same tool call gets the stored outcome, every session's history
//!   reads the same, and event and session stream cursors resume. An answer is acknowledged
//!   (HTTP 200) only once it is on disk. Each session's history keeps about its newest
//!   `--max-history-records` records. `--store memory` keeps
//!   nothing. `--store redis://HOST:PORT[/DB][?prefix=NAME]` keeps them in Redis, shared
//!   with every server on the same Redis and prefix: a request asked through one is
//!   listed, answered and streamed through any other, and resolves once (the losers of a
//!   race between servers get `409`); session histories are shared the same way. Any other `--store` is refused, naming what is
//!   supported, rather than silently keeping requests somewhere else. Resolved requests,
//!   and the histories of sessions with nothing pending, are deleted once older than
//!   `--keep-resolved-days` (30 by default).
//! - **Shutdown.** On SIGINT or SIGTERM the server stops accepting, ends every open event
//!   stream and long poll, and exits 0. Connections that still do not close are dropped
//!   after a grace period, so shutdown never hangs.
//! - **Demo.** `--demo` runs a scripted agent in session `demo` that asks a sample question,
//!   then asks for the approval of a tool call, and so on.
//! - **Web UI.** `GET /` serves the web UI (`askbus-ui`) for the human end: its pages
//!   hold no data and need no token; every API call it makes sends the token the human
//!   entered.
//! - **MCP.** The MCP server (the `question` and `request_approval` tools) is mounted at
//!   `/mcp` (Streamable HTTP, behind the same bearer tokens; a POST body must arrive
//!   within the request timeout and the body limit). `askbus mcp` also serves it
//!   on stdin/stdout, for clients that spawn a process, while still serving the HTTP API
//!   on `--listen` so a human can answer; it stops when the client closes stdin. Use
//!   `--listen 127.0.0.1:0` when several clients each spawn one (the URL is logged on
//!   stderr, with the store). Without `--store` it keeps its requests in memory, not in
//!   `askbus.db`: a SQLite file is one process's at a time, and the directory a client
//!   spawns it in may hold another one, or be read-only. `--mcp-elicitation` lets clients that support elicitation show each
//!   question in their own UI as well.
//!
//! ```
//! use askbus_server::Cli;
//! use clap::Parser;
//!
//! let cli = Cli::try_parse_from(["askbus", "--listen", "0.0.0.0:4717"]).unwrap();
//! let refused = cli.settings().unwrap_err();
//! assert!(refused.to_string().contains("--token"));
//! ```

mod accept;
mod demo;
mod mcp;

use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use std::sync::Arc;

use askbus_bus::{Bus, BusConfig};
use askbus_http::{AccessToken, CorsOrigin, HistoryLimits, HttpConfig, InvalidOrigin, TokenScope};
use askbus_mcp::{ElicitationBridge, McpConfig};
use askbus_question::{ApprovalConfig, QuestionConfig, RequestHub};
use askbus_store::{RedisLocation, RedisStore, SqliteStore, Store, StoreError};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use accept::{ConnectionLimits, serve_router};

/// Command-line flags of `askbus`; each also reads an environment variable.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "askbus",
    version,
    about = "Let AI agents stop and ask a human, and get the answer back: the askbus server"
)]
pub struct Cli {
    /// Address to listen on, IP:PORT. A non-loopback address needs a --token.
    #[arg(
        long,
        env = "ASKBUS_LISTEN",
        default_value = "127.0.0.1:4717",
        global = true
    )]
    pub listen: String,
    /// Where requests, outcomes and events are kept: `sqlite:PATH` (durable, one server
    /// process per file), `redis://HOST:PORT[/DB][?prefix=NAME]` (shared by every server
    /// on it) or `memory` (nothing survives a restart). Default: `sqlite:askbus.db` for the
    /// server, `memory` for `askbus mcp`.
    #[arg(long, env = "ASKBUS_STORE", global = true)]
    pub store: Option<String>,
    /// Days a resolved request stays in the store (for reading its outcome, and for an
    /// agent that asks again from the same tool call) before it is deleted, and a session's
    /// history after its last record once nothing of it is pending; 0 keeps them for good.
    /// Pending requests, and the histories of their sessions, are never deleted.
    #[arg(
        long,
        env = "ASKBUS_KEEP_RESOLVED_DAYS",
        default_value_t = 30,
        global = true
    )]
    pub keep_resolved_days: u32,
    /// Records (steps, requests, outcomes) each session's history keeps, about: the oldest
    /// are dropped past it, a batch at a time. Bounds what one history read costs.
    #[arg(
        long,
        env = "ASKBUS_MAX_HISTORY_RECORDS",
        default_value_t = askbus_store::DEFAULT_HISTORY_LIMIT,
        global = true
    )]
    pub max_history_records: usize,
    /// Bearer token(s): `TOKEN` for every session or `TOKEN@SESSION_ID` for one session.
    /// Repeat the flag or separate with commas.
    #[arg(
        long = "token",
        env = "ASKBUS_TOKEN",
        value_delimiter = ',',
        hide_env_values = true,
        global = true
    )]
    pub tokens: Vec<String>,
    /// Origin allowed to call the API from a browser (exact, e.g. http://localhost:5173).
    /// Repeat the flag or separate with commas.
    #[arg(
        long = "cors-origin",
        env = "ASKBUS_CORS_ORIGINS",
        value_delimiter = ',',
        global = true
    )]
    pub cors_origins: Vec<String>,
    /// Run a scripted agent that keeps asking sample questions, to see the whole flow.
    #[arg(long, global = true)]
    pub demo: bool,
    /// The askbus session MCP tool calls make their requests in (a session-scoped token
    /// overrides it).
    #[arg(long, env = "ASKBUS_MCP_SESSION", default_value = "mcp", global = true)]
    pub mcp_session: String,
    /// Let MCP clients that support elicitation also answer questions in their own UI.
    #[arg(long, env = "ASKBUS_MCP_ELICITATION", global = true)]
    pub mcp_elicitation: bool,
    /// Seconds between progress notifications of a waiting MCP tool call.
    #[arg(
        long,
        env = "ASKBUS_MCP_PROGRESS_SECS",
        default_value_t = 10.0,
        global = true
    )]
    pub mcp_progress_secs: f64,
    /// What to run; without one, the HTTP server.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands of `askbus`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Serve MCP on stdin/stdout (for clients that spawn a process), and the HTTP API on
    /// --listen so a human can answer. Stops when the client closes stdin. Keeps requests
    /// in memory unless --store says otherwise.
    Mcp,
}

/// Validated settings of a server run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Where requests, outcomes and events are kept.
    pub store: StoreUrl,
    /// How long the store keeps resolved requests; `None`: for good.
    pub keep_resolved: Option<Duration>,
    /// The HTTP API's settings (tokens, CORS, limits).
    pub http: HttpConfig,
    /// Whether to run the demo agent.
    pub demo: Demo,
    /// Time limits of connections (request headers, shutdown grace).
    pub connections: ConnectionLimits,
    /// The MCP server's settings (`/mcp` and stdio).
    pub mcp: McpConfig,
    /// Whether MCP is also served on stdin/stdout.
    pub mcp_stdio: McpStdio,
}

/// Where the server keeps requests, outcomes and events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `memory`: nothing survives a restart.
    Memory,
    /// `sqlite:PATH`: an embedded durable file.
    Sqlite(std::path::PathBuf),
    /// `redis://…`: shared with every server on the same Redis keys.
    Redis(RedisLocation),
}

impl StoreUrl {
    /// The store of a run without `--store`: the server keeps everything in
    /// `sqlite:askbus.db` in the working directory. `askbus mcp` keeps it in memory: MCP
    /// clients spawn it, often several in one directory (or in one they cannot write to),
    /// and a SQLite file is one process's at a time.
    pub fn default_for(command: Option<&Command>) -> Self {
        match command {
            None => Self::Sqlite("askbus.db".into()),
            Some(Command::Mcp) => Self::Memory,
        }
    }
}

impl FromStr for StoreUrl {
    type Err = ConfigError;

    /// Parses a `--store` value: `memory`, `sqlite:PATH` or `redis://…`.
    fn from_str(url: &str) -> Result<Self, ConfigError> {
        Ok(match url.trim() {
            "memory" => Self::Memory,
            trimmed if trimmed.starts_with("redis") && trimmed.contains("://") => Self::Redis(
                trimmed
                    .parse()
                    .map_err(|error: StoreError| ConfigError::BadRedisUrl(error.to_string()))?,
            ),
            trimmed => match trimmed.strip_prefix("sqlite:") {
                Some(path) if !path.trim().is_empty() => Self::Sqlite(path.trim().into()),
                _ => return Err(ConfigError::UnsupportedStore(url.to_owned())),
            },
        })
    }
}

impl std::fmt::Display for StoreUrl {
    /// What the log says: the file, or that nothing survives.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Memory => f.write_str("memory, nothing survives a restart"),
            Self::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            Self::Redis(location) => write!(f, "{location}, shared with every server on it"),
        }
    }
}

/// Whether MCP is served on stdin/stdout (`askbus mcp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpStdio {
    /// Only the HTTP server (with `/mcp`).
    Off,
    /// MCP on stdio too; the server stops when stdin closes.
    On,
}

/// Whether the scripted demo agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demo {
    /// No demo agent.
    Off,
    /// A demo agent asks sample questions in session `demo`.
    On,
}

/// Flags that cannot be served as given; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `--listen` is not `IP:PORT`.
    #[error("--listen {0:?} is not an IP:PORT address (for example 127.0.0.1:4717)")]
    BadListen(String),
    /// A non-loopback address without a token.
    #[error(
        "refusing to listen on {0} without authentication: it is not a loopback address. \
         Pass --token (or ASKBUS_TOKEN) with a long random secret, or listen on 127.0.0.1"
    )]
    TokenRequired(SocketAddr),
    /// A store this build does not have.
    #[error(
        "unsupported --store {0:?}: use `sqlite:PATH` (durable, the server's default: sqlite:askbus.db), \
         `redis://HOST:PORT[/DB][?prefix=NAME]` (shared by several servers) or `memory` \
         (nothing survives a restart)"
    )]
    UnsupportedStore(String),
    /// A Redis URL that cannot be used.
    #[error("bad --store: {0}")]
    BadRedisUrl(String),
    /// A malformed `--token` entry.
    #[error("bad --token entry: {0}")]
    BadToken(&'static str),
    /// A malformed `--cors-origin`.
    #[error("--cors-origin {0}")]
    BadCorsOrigin(#[from] InvalidOrigin),
    /// A malformed MCP flag.
    #[error("bad MCP flag: {0}")]
    BadMcpFlag(&'static str),
}

impl Cli {
    /// Checks the flags and turns them into [`Settings`].
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the flag to change: an unparsable address, a non-loopback
    /// address without a token, an unsupported store, a malformed token or origin.
    pub fn settings(&self) -> Result<Settings, ConfigError> {
        let listen: SocketAddr = self
            .listen
            .trim()
            .parse()
            .map_err(|_| ConfigError::BadListen(self.listen.clone()))?;
        let store = match &self.store {
            Some(url) => url.parse()?,
            None => StoreUrl::default_for(self.command.as_ref()),
        };
        let tokens = self
            .tokens
            .iter()
            .map(|entry| entry.trim())
            .filter(|entry| !entry.is_empty())
            .map(parse_token)
            .collect::<Result<Vec<_>, _>>()?;
        if tokens.is_empty() && !listen.ip().is_loopback() {
            return Err(ConfigError::TokenRequired(listen));
        }
        let cors_origins = self
            .cors_origins
            .iter()
            .map(|origin| origin.trim())
            .filter(|origin| !origin.is_empty())
            .map(CorsOrigin::from_str)
            .collect::<Result<Vec<_>, _>>()?;
        let mcp_session = self.mcp_session.trim();
        if mcp_session.is_empty() {
            return Err(ConfigError::BadMcpFlag("--mcp-session is empty"));
        }
        let progress_interval = Duration::try_from_secs_f64(self.mcp_progress_secs)
            .ok()
            .filter(|interval| !interval.is_zero())
            .ok_or(ConfigError::BadMcpFlag(
                "--mcp-progress-secs must be a positive number of seconds",
            ))?;
        let mcp = McpConfig {
            session_id: mcp_session.into(),
            elicitation: if self.mcp_elicitation {
                ElicitationBridge::On
            } else {
                ElicitationBridge::Off
            },
            progress_interval,
            ..McpConfig::default()
        };
        let directory = std::env::current_dir()
            .map(|path| path.display().to_string())
            .unwrap_or_default();
        const DAY: Duration = Duration::from_secs(24 * 3600);
        Ok(Settings {
            listen,
            store,
            keep_resolved: (self.keep_resolved_days > 0).then(|| DAY * self.keep_resolved_days),
            http: HttpConfig {
                tokens,
                cors_origins,
                directory,
                history: HistoryLimits {
                    records_per_session: self.max_history_records.max(1),
                    ..HistoryLimits::default()
                },
                ..HttpConfig::default()
            },
            demo: if self.demo { Demo::On } else { Demo::Off },
            connections: ConnectionLimits::default(),
            mcp,
            mcp_stdio: match self.command {
                Some(Command::Mcp) => McpStdio::On,
                None => McpStdio::Off,
            },
        })
    }
}

/// One `--token` entry: `TOKEN` or `TOKEN@SESSION_ID`.
fn parse_token(entry: &str) -> Result<AccessToken, ConfigError> {
    let (secret, session) = match entry.split_once('@') {
        None => (entry, None),
        Some((secret, session)) => (secret, Some(session)),
    };
    if secret.is_empty() {
        return Err(ConfigError::BadToken("the token before `@` is empty"));
    }
    if secret.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::BadToken(
            "a token cannot contain whitespace or control characters",
        ));
    }
    Ok(match session {
        None => AccessToken::all_sessions(secret),
        Some("") => return Err(ConfigError::BadToken("the session after `@` is empty")),
        Some(session) => AccessToken::for_session(secret, session),
    })
}

/// Opens the store, then serves the API on `listener` until `shutdown` is cancelled, then
/// ends open streams and returns once connections are closed (or after a grace period).
///
/// Connections are served by [`serve_router`], within [`Settings::connections`].
///
/// # Errors
///
/// The store cannot be opened; none once it is (failed accepts are retried).
pub async fn serve(
    listener: TcpListener,
    settings: Settings,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let hub = open_hub(&settings).await.map_err(std::io::Error::other)?;
    serve_hub(listener, hub, settings, shutdown).await;
    Ok(())
}

/// Serves `hub` on `listener`; see [`serve`].
async fn serve_hub(
    listener: TcpListener,
    hub: RequestHub,
    settings: Settings,
    shutdown: CancellationToken,
) {
    if settings.demo == Demo::On {
        tokio::spawn(demo::run(hub.clone(), shutdown.clone()));
    }
    if settings.mcp_stdio == McpStdio::On {
        let (hub, settings, shutdown) = (hub.clone(), settings.clone(), shutdown.clone());
        tokio::spawn(async move { mcp::serve_stdio(hub, &settings, shutdown).await });
    }
    let app = askbus_http::router(hub.clone(), settings.http.clone(), shutdown.clone());
    // The web UI at `/`: public pages whose API calls carry the human's token.
    let app = app.merge(askbus_ui::router());
    let app = mcp::mount(app, hub, &settings, shutdown.clone());
    serve_router(listener, app, settings.connections, shutdown).await;
}

/// Binds `settings.listen`, opens the store, logs the URL once both are ready, and serves
/// until `shutdown` is cancelled.
///
/// # Errors
///
/// The address cannot be bound, or the store cannot be opened.
pub async fn run(settings: Settings, shutdown: CancellationToken) -> std::io::Result<()> {
    let listener = TcpListener::bind(settings.listen).await?;
    let address = listener.local_addr()?;
    let store = &settings.store;
    let hub = open_hub(&settings).await.map_err(|error| {
        std::io::Error::other(format!("cannot open the store {store}: {error}"))
    })?;
    let auth = describe_auth(&settings.http.tokens);
    tracing::info!("askbus listening on http://{address} ({auth}; store: {store})");
    serve_hub(listener, hub, settings, shutdown).await;
    Ok(())
}

/// The questions and approvals of the server, on a bus, recorded in the configured store
/// (with the sessions' histories, each within its limit) and restored from it; requests
/// resolved, and histories quiet, longer than `keep_resolved` ago are deleted before it is
/// read, and then every [`SWEEP_INTERVAL`](askbus_store::SWEEP_INTERVAL).
async fn open_hub(settings: &Settings) -> Result<RequestHub, StoreError> {
    let history_limit = settings.http.history.records_per_session;
    let store: Arc<dyn Store> = match &settings.store {
        StoreUrl::Memory => return Ok(RequestHub::new(Bus::new())),
        StoreUrl::Sqlite(path) => {
            Arc::new(SqliteStore::open(path)?.with_history_limit(history_limit))
        }
        StoreUrl::Redis(location) => Arc::new(
            RedisStore::open_at(location)
                .await?
                .with_history_limit(history_limit),
        ),
    };
    if let Some(keep) = settings.keep_resolved {
        askbus_store::sweep(&*store, keep).await;
        tokio::spawn(askbus_store::keep_resolved_for(
            Arc::downgrade(&store),
            keep,
        ));
    }
    if store.change_log().is_some() {
        // Redis. Its bus is this server's own: the store's change log brings it every
        // instance's request events, and its event ids are this server's cursors.
        return RequestHub::shared(
            Bus::new(),
            QuestionConfig::default(),
            ApprovalConfig::default(),
            store,
        )
        .await;
    }
    let bus = askbus_store::resume_bus(BusConfig::default(), Arc::clone(&store)).await?;
    let hub = RequestHub::with_store(
        bus,
        QuestionConfig::default(),
        ApprovalConfig::default(),
        store,
    )
    .await?;
    let restored = hub.questions().pending_count() + hub.approvals().pending_count();
    if restored > 0 {
        tracing::info!("{restored} pending request(s) restored from the store");
    }
    Ok(hub)
}

fn describe_auth(tokens: &[AccessToken]) -> String {
    if tokens.is_empty() {
        return "no authentication: loopback only".to_owned();
    }
    let scoped = tokens
        .iter()
        .filter(|token| matches!(token.scope(), TokenScope::Session(_)))
        .count();
    format!(
        "bearer auth: {} token(s), {scoped} session-scoped",
        tokens.len()
    )
}
