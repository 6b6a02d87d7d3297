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
//! - **Stores.** Only `memory` exists yet; any other `--store` is refused, naming what is
//!   supported, rather than silently keeping requests in memory.
//! - **Shutdown.** On SIGINT or SIGTERM the server stops accepting, ends every open event
//!   stream and long poll, and exits 0. Connections that still do not close are dropped
//!   after a grace period, so shutdown never hangs.
//!
//! ```
//! use askbus_server::Cli;
//! use clap::Parser;
//!
//! let cli = Cli::try_parse_from(["askbus", "--listen", "0.0.0.0:4717"]).unwrap();
//! let refused = cli.settings().unwrap_err();
//! assert!(refused.to_string().contains("--token"));
//! ```

mod demo;

use std::net::SocketAddr;
use std::time::Duration;

use askbus_bus::Bus;
use askbus_http::{AccessToken, HttpConfig, TokenScope};
use askbus_question::QuestionService;
use axum::http::HeaderValue;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Command-line flags of `askbus`; each also reads an environment variable.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "askbus",
    version,
    about = "Let AI agents stop and ask a human, and get the answer back: the askbus server"
)]
pub struct Cli {
    /// Address to listen on, IP:PORT. A non-loopback address needs a --token.
    #[arg(long, env = "ASKBUS_LISTEN", default_value = "127.0.0.1:4717")]
    pub listen: String,
    /// Where requests are kept. Supported: `memory`.
    #[arg(long, env = "ASKBUS_STORE", default_value = "memory")]
    pub store: String,
    /// Bearer token(s): `TOKEN` for every session or `TOKEN@SESSION_ID` for one session.
    /// Repeat the flag or separate with commas.
    #[arg(
        long = "token",
        env = "ASKBUS_TOKEN",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub tokens: Vec<String>,
    /// Origin allowed to call the API from a browser (exact, e.g. http://localhost:5173).
    /// Repeat the flag or separate with commas.
    #[arg(
        long = "cors-origin",
        env = "ASKBUS_CORS_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// Run a scripted agent that keeps asking sample questions, to see the whole flow.
    #[arg(long)]
    pub demo: bool,
}

/// Validated settings of a server run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The HTTP API's settings (tokens, CORS, limits).
    pub http: HttpConfig,
    /// Whether to run the demo agent.
    pub demo: Demo,
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
    #[error("unsupported --store {0:?}: supported stores are: memory")]
    UnsupportedStore(String),
    /// A malformed `--token` entry.
    #[error("bad --token entry: {0}")]
    BadToken(&'static str),
    /// A malformed `--cors-origin`.
    #[error("--cors-origin {0:?} is not a valid origin (for example http://localhost:5173)")]
    BadCorsOrigin(String),
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
        if self.store.trim() != "memory" {
            return Err(ConfigError::UnsupportedStore(self.store.clone()));
        }
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
            .map(|origin| {
                let valid = (origin.starts_with("http://") || origin.starts_with("https://"))
                    && origin != "*"
                    && !origin.ends_with('/');
                valid
                    .then(|| HeaderValue::from_str(origin).ok())
                    .flatten()
                    .ok_or_else(|| ConfigError::BadCorsOrigin(origin.to_owned()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let directory = std::env::current_dir()
            .map(|path| path.display().to_string())
            .unwrap_or_default();
        Ok(Settings {
            listen,
            http: HttpConfig {
                tokens,
                cors_origins,
                directory,
                ..HttpConfig::default()
            },
            demo: if self.demo { Demo::On } else { Demo::Off },
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

/// How long open connections may take to finish after shutdown begins before they are
/// dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serves the API on `listener` until `shutdown` is cancelled, then ends open streams and
/// returns once connections are closed (or after a grace period).
///
/// # Errors
///
/// The I/O error that stopped the server, if one did.
pub async fn serve(
    listener: TcpListener,
    settings: Settings,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let questions = QuestionService::new(Bus::new());
    if settings.demo == Demo::On {
        tokio::spawn(demo::run(questions.clone(), shutdown.clone()));
    }
    let app = askbus_http::router(questions, settings.http, shutdown.clone());
    let server =
        axum::serve(listener, app).with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        result = server.into_future() => result,
        () = deadline => {
            tracing::warn!("connections still open after {SHUTDOWN_GRACE:?}; dropping them");
            Ok(())
        }
    }
}

/// Binds `settings.listen`, logs the URL, and serves until `shutdown` is cancelled.
///
/// # Errors
///
/// The address cannot be bound, or serving failed.
pub async fn run(settings: Settings, shutdown: CancellationToken) -> std::io::Result<()> {
    let listener = TcpListener::bind(settings.listen).await?;
    let address = listener.local_addr()?;
    let auth = describe_auth(&settings.http.tokens);
    tracing::info!("askbus listening on http://{address} ({auth})");
    serve(listener, settings, shutdown).await
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
