//! The `askbus` server: the HTTP API and event stream of askbus as one binary, for agents
//! and UIs in any language.
//!
//! [`main`] (the `askbus` binary's, which lives in the `askbus` package) parses [`Cli`],
//! sets up logging and calls [`run`]. Everything worth testing lives here, first of all [`Cli::settings`], which turns flags into
//! [`Settings`] or refuses with a [`ConfigError`] that says what to change.
//!
//! Policy, in exact words:
//!
//! - **No token, no network.** The server refuses to listen on an address that is not
//!   loopback unless at least one token is configured: a question server reachable from
//!   the network without authentication lets anyone answer for the human.
//! - **No foreign host, no cross-site change.** Every route sits behind
//!   [`askbus_http::SiteGuard`]: a `Host` other than the listen address, a loopback name
//!   or an `--allowed-host` is refused (421), so a DNS-rebinding page cannot reach the
//!   server; a browser request from another site (other than a configured
//!   `--cors-origin`) may not change anything, nor read; a body that changes something is
//!   JSON. Listening on every address (0.0.0.0) needs `--allowed-host`, since askbus cannot
//!   know the names it is reached under; `--allowed-host '*'` needs a token.
//! - **Tokens and roles.** Every credential is an identity, a name and a role, recorded as
//!   the asker of the requests it makes and the decider of those it answers.
//!   `--agent-token NAME=SECRET[@SESSION]` (env `ASKBUS_AGENT_TOKENS`): an agent, which
//!   makes requests, reads and waits on them and cancels its session, and never answers,
//!   rejects, reviews or resumes one. `--reviewer-token NAME=SECRET[@SESSION]` (env
//!   `ASKBUS_REVIEWER_TOKENS`): a human's, which reads and decides requests and never makes
//!   one. `--token SECRET` (env `ASKBUS_TOKEN`): an admin (named `admin`, or `admin-N` with
//!   several), which may do everything. `--token SECRET@SESSION` is an agent of that
//!   session (named `agent@SESSION`): one credential never both asks and answers. With
//!   `@SESSION` a token can neither list, see, answer nor stream another session's
//!   requests. Whenever an agent or reviewer token is configured, **no identity decides a
//!   request it asked** (admins included), so an agent's credential can never approve its
//!   own request. A wrong token is 401; a right one with the wrong role or session 403.
//!   Each flag may be repeated or comma-separated; names are unique; secrets cannot
//!   contain `@` or `,`; use long random ones (`openssl rand -hex 32`).
//! - **Stores.** By default requests, outcomes, events and session histories are kept in an
//!   embedded SQLite file (`sqlite:askbus.db` in the working directory), so a restart loses
//!   nothing: pending requests are pending again, answers given stay given, an agent that
//!   asks again from the same tool call gets the stored outcome, every session's history
//!   reads the same, and event and session stream cursors resume. An answer is acknowledged
//!   (HTTP 200) only once it is on disk. Each session's history keeps about its newest
//!   `--max-history-records` records, within `--max-history-mib`. `--store memory` keeps
//!   nothing. `--store redis://HOST:PORT[/DB][?prefix=NAME]` keeps them in Redis, shared
//!   with every server on the same Redis and prefix: a request asked through one is
//!   listed, answered and streamed through any other, and resolves once (the losers of a
//!   race between servers get `409`); session histories are shared the same way. Any
//!   other `--store` is refused, naming what is supported, rather than silently keeping
//!   requests somewhere else. Resolved requests, and the histories of sessions with
//!   nothing pending, are deleted once older than `--keep-resolved-days` (30 by default).
//! - **Quotas.** What a client can make the server hold is bounded by flags. Pending
//!   requests, questions and approvals together: `--max-pending-per-session` (1,000) and
//!   `--max-pending` (100,000), and by weight, `--max-pending-mib` (256) in all and
//!   `--max-request-values` (2,000 JSON values) in one; beyond, a create is refused with
//!   429 `quota` and `Retry-After` (422 for one request too heavy), naming the limit.
//!   MCP sessions: `--max-mcp-sessions` (1,000) open at once; beyond, an `initialize`
//!   is refused with 503 `too_many_streams` and `Retry-After`. MCP tasks:
//!   `--max-mcp-tasks` (1,000) kept at once; beyond, a call is served without a task.
//!   Event streams and long polls (and every `/mcp` request):
//!   `--max-event-streams`, by default derived from the open-files limit, which
//!   the binary raises to its hard limit at start-up ([`event_streams_for`]); beyond, 503
//!   `too_many_streams` with `Retry-After`, while `/health`, replies and open streams go on.
//!   Connections: `--max-connections` open at once, by default from the same limit and
//!   above the streams' ([`connections_for`]); beyond, the next waits in the listen backlog.
//!   With two or more tokens, each token may hold half of either by default
//!   (`--max-pending-per-token`, `--max-event-streams-per-token`; 429 `quota` beyond), so
//!   one client cannot take them all from the others. The limits are logged at start-up.
//!   A session's history keeps at most `--max-history-records` records (1,000) and
//!   `--max-history-mib` MiB of them (16); with `--store memory`, all of them together
//!   `--max-memory-history-mib` (256). The event stream's replay window keeps at most
//!   `--max-event-history-mib` MiB of events (16): an event holds its request, also after
//!   the request ended.
//! - **Audit log.** Every outcome is appended, with the answer and in the same atomic
//!   step, to the store's audit log (who asked, who decided, the hash of the request, the
//!   decision, when), hash-chained; the server seals new entries every 200 ms, signing
//!   them with `--audit-key` (an Ed25519 key from `askbus audit keygen`) when given.
//!   `GET /audit` pages through it; `askbus audit export` and `askbus audit verify` take
//!   it offline (see [`AuditCommand`]). `--store memory` keeps no audit log.
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
//!   question and approval in their own forms as well, and sends those that support URL
//!   mode but no forms each request's answer link (under `--public-url`). An MCP tool call
//!   waits `--mcp-wait-secs` (45 s) at most, then returns `waiting`; the agent waits again
//!   with `wait_for_answer`.
//!
//! # From flags to a served router
//!
//! [`Cli`] (clap; every flag also an environment variable; a secret flag holds a
//! [`Secret`], so `Cli`'s derived `Debug` prints none) becomes [`Settings`] through
//! [`Cli::settings`], which refuses what the policy above refuses (a listen beyond loopback
//! without a token, an unsupported store, a zero limit) and turns the quota flags into the
//! hub's [`PendingLimits`] and the router's [`StreamSlots`]. [`run`] binds the address,
//! opens the store, restores the hub from it (over Redis a shared hub whose bus is this
//! process's own), and only then logs the URL. The API router, the web UI and `/mcp` (the
//! `mcp` module) are merged, put behind [`askbus_http::guarded`] (the listen address known
//! once bound, and `--allowed-host`) and the access log, and served by the accept loop
//! ([`serve_router`]); beside them run the audit [`Sealer`](askbus_audit::Sealer) over the
//! hub's store, the notification dispatcher (the `notify` module) and the `--demo` agent.
//! `--max-history-*` set the store's per-session history limits and, for `--store memory`,
//! the router's in-memory ones (`HttpConfig::history`, with `--max-memory-history-mib`);
//! `--max-event-history-mib` the bus's (`BusConfig::history_bytes`). [`main`] (`entry.rs`) only parses,
//! logs and runs; the binary sets the allocator.
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
mod audit;
mod demo;
mod entry;
mod huge_pages;
mod log_lines;
mod mcp;
mod notify;
mod parse_errors;
mod probe;
mod secret;

pub use entry::main;
pub use huge_pages::{HugePages, turn_off_huge_pages};
pub use log_lines::{DEFAULT_LOG_FILTER, LogLines};
pub use notify::NotifySettings;
pub use probe::{ProbeError, probe};
pub use secret::Secret;

use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use std::sync::Arc;

use askbus_bus::{Bus, BusConfig};
use askbus_http::{
    AccessToken, AllowedHost, CorsOrigin, HistoryLimits, HttpConfig, InvalidHost, InvalidOrigin,
    LinkKey, ShortLinkSecret, SiteGuard, StoreWrites, StreamSlots, TokenScope,
};
use askbus_mcp::{ElicitationBridge, McpConfig};
use askbus_question::{
    ApprovalConfig, Duties, FollowUp, Identity, MAX_TIMEOUT, OnTimeout, PendingLimits,
    QuestionConfig, QuorumFloor, RequestHub, Role,
};
use askbus_store::{
    MemoryStore, MeteredStore, RedisLocation, RedisStore, SqliteStore, Store, StoreError,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use accept::{ConnectionLimits, serve_router};
pub use audit::{AuditCommand, AuditCommandError, run as run_audit};

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines; ANSI colours only when stderr is a terminal.
    Text,
    /// One JSON object per line.
    Json,
}

/// Command-line flags of `askbus`; each also reads an environment variable.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "askbus",
    version,
    about = "Let AI agents stop and ask a human, and get the answer back: the askbus server"
)]
pub struct Cli {
    /// Address to listen on, IP:PORT or HOST:PORT (`localhost:4717`: a name is resolved
    /// once, at start; to answer for a name other than `localhost`, give it to
    /// --allowed-host too). A non-loopback address needs a --token.
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
    pub store: Option<Secret>,
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
    /// How long a question waits for a human when its request does not say (`timeout`
    /// absent): seconds, or with a unit (`90s`, `10m`, `2h`, `7d`), or `never`. At most a
    /// year. Default: 10m.
    #[arg(
        long,
        env = "ASKBUS_QUESTION_TIMEOUT",
        value_name = "DURATION",
        global = true
    )]
    pub question_timeout: Option<String>,
    /// How long an approval request waits for a decision when it does not say: as
    /// --question-timeout. On expiry every action is rejected. Default: 5m.
    #[arg(
        long,
        env = "ASKBUS_APPROVAL_TIMEOUT",
        value_name = "DURATION",
        global = true
    )]
    pub approval_timeout: Option<String>,
    /// Remind (`question.reminded`, `approval.reminded`) this long after a request was made
    /// if nobody answered, unless it says otherwise (`remindAfter`/`remind_after`): as
    /// --question-timeout, without `never`. Left out of a request whose deadline comes
    /// first. Default: no reminder.
    #[arg(
        long,
        env = "ASKBUS_REMIND_AFTER",
        value_name = "DURATION",
        global = true
    )]
    pub remind_after: Option<String>,
    /// Escalate (`*.escalated`) to --escalate-to this long after a request was made if
    /// nobody answered, unless it says otherwise: as --remind-after. Needs --escalate-to.
    #[arg(
        long,
        env = "ASKBUS_ESCALATE_AFTER",
        value_name = "DURATION",
        global = true
    )]
    pub escalate_after: Option<String>,
    /// Who requests escalate to, unless they say: a reviewer or admin credential's name,
    /// who may then decide them too. Repeat the flag or separate with commas.
    #[arg(
        long = "escalate-to",
        env = "ASKBUS_ESCALATE_TO",
        value_name = "NAME",
        value_delimiter = ',',
        global = true
    )]
    pub escalate_to: Vec<String>,
    /// What applies when nobody answered a request by its deadline, unless it says:
    /// `reject` (it times out; the default) or `escalate` (escalate to --escalate-to at the
    /// deadline, wait as long once more, then reject). A default answer is per question
    /// only (`onTimeout`), never a server's, and never an approval's.
    #[arg(
        long,
        env = "ASKBUS_ON_TIMEOUT",
        value_name = "reject|escalate",
        global = true
    )]
    pub on_timeout: Option<String>,
    /// Records (steps, requests, outcomes) each session's history keeps, about: the oldest
    /// are dropped past it, a batch at a time. Bounds what one history read costs.
    #[arg(
        long,
        env = "ASKBUS_MAX_HISTORY_RECORDS",
        default_value_t = askbus_store::DEFAULT_HISTORY_LIMIT,
        global = true
    )]
    pub max_history_records: usize,
    /// MiB of records (their JSON) each session's history keeps, about: the oldest are
    /// dropped past it as past --max-history-records, but never the newest record. Bounds
    /// what one history read holds in memory.
    #[arg(
        long,
        env = "ASKBUS_MAX_HISTORY_MIB",
        default_value_t = askbus_store::DEFAULT_HISTORY_BYTES / (1024 * 1024),
        global = true
    )]
    pub max_history_mib: usize,
    /// MiB of writes queued for the store (SQLite, Redis) and not yet answered, at most:
    /// past it a write is refused at once (503) rather than queued. Writes wait only while
    /// the store does not answer (a paused Redis, a hung disk), queued even after their
    /// clients hung up; this bounds what such clients make the server hold.
    #[arg(
        long,
        env = "ASKBUS_MAX_QUEUED_WRITE_MIB",
        default_value_t = askbus_store::DEFAULT_QUEUED_WRITES_MIB,
        value_parser = clap::value_parser!(u32).range(1..=1_048_576),
        global = true
    )]
    pub max_queued_write_mib: u32,
    /// MiB of recent events (their JSON) the event stream keeps to resume a client's
    /// `Last-Event-ID`, beside the 4,096 events it keeps at most: a client that reconnects
    /// after older ones reads the lists again (`server.resync`). The events take about as
    /// much again in memory. Bounds what large requests hold after they ended.
    #[arg(
        long,
        env = "ASKBUS_MAX_EVENT_HISTORY_MIB",
        default_value_t = DEFAULT_EVENT_HISTORY_MIB,
        global = true
    )]
    pub max_event_history_mib: usize,
    /// With `--store memory`: MiB of records (their JSON) all sessions' histories keep in
    /// memory together, about: past it, whole sessions are dropped, those quiet longest and
    /// with nothing waiting first. The records take about as much again in memory. (With
    /// notifications, a memory store keeps them instead, each session's within
    /// --max-history-records and --max-history-mib, all of them for --keep-resolved-days.)
    #[arg(
        long,
        env = "ASKBUS_MAX_MEMORY_HISTORY_MIB",
        default_value_t = HistoryLimits::default().bytes_in_memory / (1024 * 1024),
        global = true
    )]
    pub max_memory_history_mib: usize,
    /// Bearer token(s): `TOKEN` for every session or `TOKEN@SESSION_ID` for one session.
    /// Repeat the flag or separate with commas.
    #[arg(
        long = "token",
        env = "ASKBUS_TOKEN",
        value_delimiter = ',',
        hide_env_values = true,
        global = true
    )]
    pub tokens: Vec<Secret>,
    /// Agent credential(s), `NAME=SECRET` or `NAME=SECRET@SESSION_ID`: make requests and
    /// wait on them, never answer one. Repeat the flag or separate with commas.
    #[arg(
        long = "agent-token",
        env = "ASKBUS_AGENT_TOKENS",
        value_delimiter = ',',
        hide_env_values = true,
        global = true
    )]
    pub agent_tokens: Vec<Secret>,
    /// Reviewer credential(s), `NAME=SECRET` or `NAME=SECRET@SESSION_ID`: read and answer
    /// requests, never make one. Repeat the flag or separate with commas.
    #[arg(
        long = "reviewer-token",
        env = "ASKBUS_REVIEWER_TOKENS",
        value_delimiter = ',',
        hide_env_values = true,
        global = true
    )]
    pub reviewer_tokens: Vec<Secret>,
    /// The least quorum of approvals: `TOOL=M` (approvals of that tool need M distinct
    /// reviewers alike; any one of them may still refuse alone) or `*=M` for every tool. A
    /// request may ask for more (`review_configs[].quorum`), never fewer. Needs at least M
    /// reviewer or admin credentials. Repeat the flag or separate with commas.
    #[arg(
        long = "quorum",
        env = "ASKBUS_QUORUM",
        value_delimiter = ',',
        global = true
    )]
    pub quorum: Vec<String>,
    /// Host name the server answers for beside its listen address and the loopback names
    /// (`NAME` on any port, `NAME:PORT`, or `*` for any host, which needs a --token):
    /// requests naming any other `Host` are refused (421), which stops DNS rebinding.
    /// Required when listening on `0.0.0.0` or `[::]`. Repeat the flag or separate with commas.
    #[arg(
        long = "allowed-host",
        env = "ASKBUS_ALLOWED_HOSTS",
        value_delimiter = ',',
        global = true
    )]
    pub allowed_hosts: Vec<String>,
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
    #[arg(long, env = "ASKBUS_DEMO", global = true)]
    pub demo: bool,
    /// The askbus session MCP tool calls make their requests in (a session-scoped token
    /// overrides it).
    #[arg(long, env = "ASKBUS_MCP_SESSION", default_value = "mcp", global = true)]
    pub mcp_session: String,
    /// Let MCP clients that support elicitation also answer questions and approvals in
    /// their own forms, and send those that support URL mode but no forms each request's
    /// answer link.
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
    /// Seconds one MCP tool call waits for the human before it returns a `waiting` result
    /// (the request stays pending; the agent waits again with the `wait_for_answer` tool).
    /// Keep it under the MCP hosts' request timeout: 60 s on the MCP SDKs' defaults.
    #[arg(
        long,
        env = "ASKBUS_MCP_WAIT_SECS",
        default_value_t = 45.0,
        global = true
    )]
    pub mcp_wait_secs: f64,
    /// Most MCP sessions open at once on `/mcp` (a session lives until its client closes
    /// it, or 300 s idle); an `initialize` beyond is refused with 503.
    #[arg(
        long,
        env = "ASKBUS_MAX_MCP_SESSIONS",
        default_value_t = 1_000,
        global = true
    )]
    pub max_mcp_sessions: usize,
    /// Most MCP tasks kept at once (a task is kept a while after it ends, so its client can
    /// read how); past it, a call is served as for a client without tasks.
    #[arg(
        long,
        env = "ASKBUS_MAX_MCP_TASKS",
        default_value_t = 1_000,
        global = true
    )]
    pub max_mcp_tasks: usize,
    /// Most pending requests (questions and approvals) of one session; a create beyond is
    /// refused with 429.
    #[arg(
        long,
        env = "ASKBUS_MAX_PENDING_PER_SESSION",
        default_value_t = 1_000,
        global = true
    )]
    pub max_pending_per_session: usize,
    /// Most standing grants (an approval answered `always`, as OpenCode clients offer) one
    /// session may hold; `always` beyond is refused with 422. 0 turns grants off.
    #[arg(
        long,
        env = "ASKBUS_MAX_GRANTS_PER_SESSION",
        default_value_t = 32,
        global = true
    )]
    pub max_grants_per_session: usize,
    /// Most standing grants all sessions together may hold; `always` beyond is refused
    /// with 422. 0 turns grants off.
    #[arg(
        long,
        env = "ASKBUS_MAX_GRANTS",
        default_value_t = 1_000,
        global = true
    )]
    pub max_grants: usize,
    /// Most pending requests (questions and approvals) of the whole server; a create
    /// beyond is refused with 429.
    #[arg(
        long,
        env = "ASKBUS_MAX_PENDING",
        default_value_t = 100_000,
        global = true
    )]
    pub max_pending: usize,
    /// Most pending requests created with one token (429 beyond). Default: half of
    /// --max-pending with two or more tokens, else no limit of its own.
    #[arg(long, env = "ASKBUS_MAX_PENDING_PER_TOKEN", global = true)]
    pub max_pending_per_token: Option<usize>,
    /// Most memory, in MiB, that all pending requests together may take (their JSON, plus
    /// a parsed value per JSON value); a create beyond is refused with 429. Resolved
    /// requests kept in memory for late readers are forgotten past a quarter of it.
    #[arg(
        long,
        env = "ASKBUS_MAX_PENDING_MIB",
        default_value_t = 256,
        global = true
    )]
    pub max_pending_mib: usize,
    /// Most JSON values in one request's content (its questions, or its calls' arguments):
    /// a heavier request is refused with 422, since a parsed value costs far more memory
    /// than its text.
    #[arg(
        long,
        env = "ASKBUS_MAX_REQUEST_VALUES",
        default_value_t = 2_000,
        global = true
    )]
    pub max_request_values: usize,
    /// Most event streams, long polls and history reads open at once, MCP's stream included (503
    /// beyond). Default: from the open-files limit, leaving a quarter (at least 256) for
    /// everything else, at most 50,000.
    #[arg(long, env = "ASKBUS_MAX_EVENT_STREAMS", global = true)]
    pub max_event_streams: Option<usize>,
    /// Most event streams and long polls one token holds at once (429 beyond). Default:
    /// half of --max-event-streams with two or more tokens, else no limit of its own.
    #[arg(long, env = "ASKBUS_MAX_EVENT_STREAMS_PER_TOKEN", global = true)]
    pub max_event_streams_per_token: Option<usize>,
    /// Most connections open at once, whatever they carry; the next waits in the listen
    /// backlog until one closes. Default: from the open-files limit, leaving an eighth (at
    /// least 128) for the store and everything else, at most 60,000, and at least 64 above
    /// --max-event-streams (a value at or below it is refused).
    #[arg(long, env = "ASKBUS_MAX_CONNECTIONS", global = true)]
    pub max_connections: Option<usize>,
    /// Ed25519 secret key file (PKCS#8 PEM, as `askbus audit keygen` writes it) that signs
    /// every audit log entry. Without it entries are hash-chained but unsigned.
    #[arg(long, env = "ASKBUS_AUDIT_KEY", value_name = "FILE", global = true)]
    pub audit_key: Option<std::path::PathBuf>,
    /// Secret (32+ characters) that signs answer links (`/answer/{token}`). Without it a
    /// random key is made at start: links then stop working when the server restarts, and
    /// work on this instance only. Give every instance of a shared store the same.
    #[arg(
        long,
        env = "ASKBUS_LINK_SECRET",
        hide_env_values = true,
        global = true
    )]
    pub link_secret: Option<Secret>,
    /// How log lines are written to stderr: `text` (colours only on a terminal) or `json`
    /// (one object per line; a request's id in `span.id`). Both in [`LogLines`]. Levels:
    /// `RUST_LOG` (default `info`: one access line per request, target `askbus::access`).
    #[arg(
        long,
        env = "ASKBUS_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text,
        global = true
    )]
    pub log_format: LogFormat,
    /// Serve no `GET /metrics` (404) and count nothing for it.
    #[arg(long, env = "ASKBUS_NO_METRICS", global = true)]
    pub no_metrics: bool,
    /// Post every request event (asked, each outcome, each vote) to this URL, signed per
    /// Standard Webhooks, at least once (kept in the store until delivered). Repeatable.
    /// `NAME=URL`: its `*.asked` messages also carry `data.answer_url`, a single-use link
    /// answering as NAME (a reviewer or admin credential; `local` without tokens).
    /// In the environment, separate them with spaces (a URL has none).
    #[arg(
        long,
        env = "ASKBUS_WEBHOOKS",
        hide_env_values = true,
        value_delimiter = ' ',
        value_name = "[NAME=]URL",
        global = true
    )]
    pub webhook: Vec<String>,
    /// The secret that signs webhook deliveries: `whsec_` and the base64 of 24 to 64
    /// random bytes (`echo whsec_$(openssl rand -base64 32)`). Required with --webhook.
    /// `URL=whsec_…` is the secret of the webhook at URL alone (as written in --webhook,
    /// without its `NAME=`): give each receiver its own, or any of them can sign messages
    /// the others take as this server's. Repeatable; in the environment, separated by
    /// spaces.
    #[arg(
        long,
        env = "ASKBUS_WEBHOOK_SECRET",
        hide_env_values = true,
        value_delimiter = ' ',
        value_name = "[URL=]SECRET",
        global = true
    )]
    pub webhook_secret: Vec<Secret>,
    /// How long a failed delivery (webhook, Slack, email) is retried (with exponential
    /// backoff and jitter, 1 s doubling to 10 minutes) before it is abandoned: seconds or a
    /// number with a unit (90s, 10m, 2h, 7d). Default: 24h.
    #[arg(
        long,
        env = "ASKBUS_WEBHOOK_RETRY_WINDOW",
        value_name = "DURATION",
        global = true
    )]
    pub webhook_retry_window: Option<String>,
    /// The most deliveries kept pending (receivers down or slow), half of it for a target
    /// whose latest attempt failed; new messages are dropped beyond, counted in
    /// `askbus_webhook_deliveries_total{result="dropped"}` and logged, so nobody can grow
    /// the store without end.
    #[arg(
        long,
        env = "ASKBUS_WEBHOOK_MAX_PENDING",
        value_name = "COUNT",
        default_value_t = askbus_notify::DEFAULT_MAX_PENDING,
        global = true
    )]
    pub webhook_max_pending: u64,
    /// Slack bot token (`xoxb-…`, scope `chat:write`): every request event is posted to
    /// --slack-channel, asked requests with buttons that answer them.
    #[arg(
        long,
        env = "ASKBUS_SLACK_TOKEN",
        hide_env_values = true,
        global = true
    )]
    pub slack_token: Option<Secret>,
    /// The Slack channel id (`C0123…`) --slack-token posts to (invite the app to it).
    #[arg(long, env = "ASKBUS_SLACK_CHANNEL", value_name = "ID", global = true)]
    pub slack_channel: Option<String>,
    /// Slack's Web API.
    #[arg(
        long,
        env = "ASKBUS_SLACK_API_URL",
        value_name = "URL",
        default_value = "https://slack.com/api",
        global = true
    )]
    pub slack_api_url: String,
    /// The Slack app's signing secret: turns on `POST /slack/interactivity` (the app's
    /// Interactivity Request URL), where button presses of --slack-user users answer.
    #[arg(
        long,
        env = "ASKBUS_SLACK_SIGNING_SECRET",
        hide_env_values = true,
        global = true
    )]
    pub slack_signing_secret: Option<Secret>,
    /// `SLACKID=NAME`: the Slack user SLACKID (`U0123…`) presses buttons as the askbus
    /// credential NAME (its role decides what it may do; `local` without tokens).
    /// Unmapped users answer nothing. Repeat the flag or separate with commas.
    #[arg(
        long,
        env = "ASKBUS_SLACK_USERS",
        value_name = "SLACKID=NAME",
        value_delimiter = ',',
        global = true
    )]
    pub slack_user: Vec<String>,
    /// Put an "Open" button with NAME's answer link in asked Slack messages (a reviewer or
    /// admin credential). Everyone in the channel can follow it and act as NAME.
    #[arg(long, env = "ASKBUS_SLACK_LINK_AS", value_name = "NAME", global = true)]
    pub slack_link_as: Option<String>,
    /// SMTP relay for email notifications: `smtp://HOST:PORT`, `smtp://HOST:587?tls=required`
    /// (STARTTLS) or `smtps://HOST`, with `USER:PASSWORD@` for a login.
    #[arg(
        long,
        env = "ASKBUS_SMTP_URL",
        hide_env_values = true,
        value_name = "URL",
        global = true
    )]
    pub smtp_url: Option<Secret>,
    /// The sender of notification emails (`askbus@example.com` or `askbus <askbus@…>`).
    #[arg(long, env = "ASKBUS_EMAIL_FROM", value_name = "ADDRESS", global = true)]
    pub email_from: Option<String>,
    /// Mail every request event to ADDRESS; `NAME=ADDRESS`: asked emails also carry an
    /// answer link acting as NAME (a reviewer or admin credential; `local` without tokens).
    /// Repeat the flag or separate with commas.
    #[arg(
        long,
        env = "ASKBUS_EMAIL_TO",
        value_name = "[NAME=]ADDRESS",
        value_delimiter = ',',
        global = true
    )]
    pub email_to: Vec<String>,
    /// The URL people reach this server at, for the answer links it sends out (webhooks,
    /// Slack, email). Default: `http://` and the address it listens on.
    #[arg(long, env = "ASKBUS_PUBLIC_URL", value_name = "URL", global = true)]
    pub public_url: Option<String>,
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
    /// The audit log: make its signing key, export it, verify an export.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Ask the server on --listen (on loopback if it listens on every address) for
    /// `GET /health`, and exit 0 if it answers 200: a container's health check without
    /// curl.
    Probe {
        /// Ask `GET /ready` instead: the store answers and, on Redis, the server caught up.
        #[arg(long)]
        ready: bool,
    },
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
    /// MiB of writes the store may hold queued and unanswered (`--max-queued-write-mib`).
    pub queued_writes_mib: u32,
    /// The questions' settings (their default timeout).
    pub questions: QuestionConfig,
    /// The approvals' settings (their default timeout).
    pub approvals: ApprovalConfig,
    /// The HTTP API's settings (tokens, CORS, limits).
    pub http: HttpConfig,
    /// Whether to run the demo agent.
    pub demo: Demo,
    /// Time limits of connections (request headers, shutdown grace).
    pub connections: ConnectionLimits,
    /// The event bus's buffers: its replay history within `--max-event-history-mib`.
    pub bus: BusConfig,
    /// The MCP server's settings (`/mcp` and stdio).
    /// Unless they carry [`answer_links`](McpConfig::answer_links), the server gives them
    /// its own: the HTTP API's links, under [`Settings::public_url`].
    pub mcp: McpConfig,
    /// Whether MCP is also served on stdin/stdout.
    pub mcp_stdio: McpStdio,
    /// Most MCP sessions open at once on `/mcp`.
    pub max_mcp_sessions: usize,
    /// How many requests may be pending (per session, per token, in total). The stream
    /// slots are in [`HttpConfig::event_streams`].
    pub pending: PendingLimits,
    /// The separation-of-duties policy: never the asker whenever an agent or reviewer
    /// credential is configured.
    pub duties: Duties,
    /// The least quorum of approvals per tool (`--quorum`).
    pub quorum_floor: QuorumFloor,
    /// The follow-up of requests that do not say (`--remind-after`, `--escalate-after`,
    /// `--escalate-to`, `--on-timeout`).
    pub follow_up: FollowUp,
    /// The key that signs each audit log entry (`--audit-key`); `None`: entries are
    /// chained, not signed.
    pub audit_key: Option<askbus_audit::SigningKey>,
    /// Where request events are delivered (`--webhook`, `--slack-*`, `--email-*`), if
    /// anywhere.
    pub notify: Option<NotifySettings>,
    /// The URL people reach the server at (`--public-url`), for links it sends out;
    /// `None`: `http://` and the address it listens on.
    pub public_url: Option<String>,
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
    /// The store of a run without `--store`: the server (and `askbus audit export`) keeps
    /// everything in `sqlite:askbus.db` in the working directory. `askbus mcp` keeps it in memory: MCP
    /// clients spawn it, often several in one directory (or in one they cannot write to),
    /// and a SQLite file is one process's at a time.
    pub fn default_for(command: Option<&Command>) -> Self {
        match command {
            None | Some(Command::Audit(_) | Command::Probe { .. }) => {
                Self::Sqlite("askbus.db".into())
            }
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
    /// `--listen` is neither `IP:PORT` nor a `HOST:PORT` that resolves.
    #[error(
        "--listen {0:?} is not an IP:PORT or HOST:PORT address that resolves (for example 127.0.0.1:4717 or localhost:4717)"
    )]
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
    /// A malformed `--token`, `--agent-token` or `--reviewer-token` entry.
    #[error("bad {0} entry: {1}")]
    BadToken(&'static str, &'static str),
    /// A `--link-secret` too short to sign with.
    #[error("--link-secret: {0}")]
    ShortLinkSecret(#[from] ShortLinkSecret),
    /// Follow-up flags that cannot be used (`--remind-after`, `--escalate-after`,
    /// `--escalate-to`, `--on-timeout`).
    #[error("bad follow-up: {0}")]
    BadFollowUp(String),
    /// A malformed `--question-timeout` or `--approval-timeout`.
    #[error(
        "bad {flag} {value:?}: give seconds, a number with a unit (90s, 10m, 2h, 7d) up to a year, or `never`"
    )]
    BadTimeout {
        /// The flag.
        flag: &'static str,
        /// What it was given.
        value: String,
    },
    /// A malformed `--webhook`.
    #[error("bad --webhook: {0}")]
    BadWebhook(#[from] askbus_notify::BadWebhook),
    /// A malformed `--webhook-secret`.
    #[error("bad --webhook-secret: {0}")]
    BadWebhookSecret(#[from] askbus_notify::BadSecret),
    /// `--webhook` without `--webhook-secret`.
    #[error(
        "--webhook needs --webhook-secret (receivers verify every delivery with it): for example --webhook-secret whsec_$(openssl rand -base64 32)"
    )]
    WebhookSecretRequired,
    /// A recipient (`--webhook NAME=URL`, `--email-to NAME=…`, `--slack-link-as NAME`)
    /// that is no credential that may answer.
    #[error(
        "{flag} {name}: {name:?} is not a reviewer's or admin's credential for every session (answer links act as one, and its messages tell of every session)"
    )]
    UnknownRecipient {
        /// The flag.
        flag: &'static str,
        /// The name given.
        name: String,
    },
    /// Recipients' answer links over a shared store without `--link-secret`: each instance
    /// would sign with a key of its own, and links sent by one would be refused by the
    /// others.
    #[error(
        "answer links sent to recipients over a shared store need --link-secret (the same on every instance), or a link sent by one instance is refused by the others"
    )]
    LinkSecretRequired,
    /// A `--webhook-secret URL=…` for no `--webhook` of that URL; the URL is named as
    /// the start-up line names webhooks (its origin and a fingerprint).
    #[error("--webhook-secret {0}=…: no --webhook has that URL")]
    SecretForNoWebhook(String),
    /// Notification flags that need each other, given apart.
    #[error("{0}")]
    ChannelIncomplete(&'static str),
    /// Malformed Slack settings.
    #[error("bad Slack flag: {0}")]
    BadSlack(#[from] askbus_notify::BadSlack),
    /// A malformed `--slack-signing-secret`.
    #[error("--slack-signing-secret: {0}")]
    BadSlackSigningSecret(#[from] askbus_http::BadSigningSecret),
    /// A `--slack-user` entry that is not `SLACKID=NAME`.
    #[error("bad --slack-user {0:?}: write SLACKID=NAME (for example U0123ABCD=alice)")]
    BadSlackUser(String),
    /// A `--slack-user` NAME that is no credential.
    #[error(
        "--slack-user …={0}: {0:?} is not a configured credential (without tokens, only `local`)"
    )]
    UnknownSlackUser(String),
    /// Malformed email settings.
    #[error("bad email flag: {0}")]
    BadEmail(#[from] askbus_notify::BadEmail),
    /// A `--public-url` that is not an http(s) URL.
    #[error("--public-url {0:?} is not an http:// or https:// URL")]
    BadPublicUrl(String),
    /// A malformed `--quorum` entry.
    #[error("bad --quorum entry: {0}")]
    BadQuorum(String),
    /// A `--quorum` no set of the configured credentials could reach.
    #[error(
        "--quorum needs {needed} distinct reviewers, but only {deciders} configured credential(s) may decide: \
         add --reviewer-token NAME=SECRET for each reviewer (without credentials, everyone is one identity, `local`)"
    )]
    QuorumUnreachable {
        /// The highest quorum asked for.
        needed: u32,
        /// How many identities may decide.
        deciders: usize,
    },
    /// Two credentials with one name.
    #[error(
        "two credentials are named {0:?}: names must be unique, since they say who asked and who decided"
    )]
    DuplicateTokenName(String),
    /// Two credentials with one secret: its bearer would be either.
    #[error("the credentials {0:?} and {1:?} have the same secret: each needs its own")]
    DuplicateTokenSecret(String, String),
    /// A malformed `--cors-origin`.
    #[error("--cors-origin {0}")]
    BadCorsOrigin(#[from] InvalidOrigin),
    /// A malformed `--allowed-host`.
    #[error("--allowed-host {0}")]
    BadAllowedHost(#[from] InvalidHost),
    /// `--allowed-host '*'` without a token.
    #[error(
        "--allowed-host '*' accepts requests for any host, so only a token can stop a \
         DNS-rebinding page from using the server: pass --token too, or name the hosts"
    )]
    AnyHostWithoutToken,
    /// Listening on every address without saying under which names it is reached.
    #[error(
        "listening on {0} answers for names askbus cannot know: pass --allowed-host with \
         the names clients use to reach it (for example --allowed-host askbus.internal), \
         or --allowed-host '*' to accept any"
    )]
    AllowedHostRequired(SocketAddr),
    /// A malformed MCP flag.
    #[error("bad MCP flag: {0}")]
    BadMcpFlag(&'static str),
    /// A limit of zero: the flag named would refuse everything.
    #[error("{0} must be at least 1")]
    ZeroLimit(&'static str),
    /// The event streams could take every connection: a stream holds one, and then
    /// `/health`, replies and every other request would wait in the backlog.
    #[error(
        "--max-event-streams ({streams}) must be below --max-connections ({connections}): \
         every stream holds a connection, and the other requests need some too"
    )]
    StreamsTakeEveryConnection {
        /// `--max-event-streams`.
        streams: usize,
        /// `--max-connections`.
        connections: usize,
    },
    /// `--max-memory-history-mib` is below `--max-history-mib`: one session could fill it
    /// and be dropped whole, its newest record with it.
    #[error(
        "--max-memory-history-mib ({total}) must be at least --max-history-mib ({per_session}): \
         the histories in memory together hold at least one session's"
    )]
    HistoryTotalBelowSession {
        /// `--max-memory-history-mib`.
        total: usize,
        /// `--max-history-mib`.
        per_session: usize,
    },
    /// `--audit-key` cannot be read, or is no Ed25519 secret key.
    #[error("--audit-key {0} (make one with `askbus audit keygen --out FILE`)")]
    AuditKey(String),
}

impl Cli {
    /// Checks the flags and turns them into [`Settings`].
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the flag to change: an unparsable address, a non-loopback
    /// address without a token, an unsupported store, a malformed token or origin, a limit
    /// of zero.
    ///
    /// The defaults of `--max-event-streams` and `--max-connections` come from the
    /// open-files limit in force when this is called ([`event_streams_for`],
    /// [`connections_for`]); the binary raises it first
    /// ([`raise_open_files_limit`]).
    pub fn settings(&self) -> Result<Settings, ConfigError> {
        let listen = resolve_listen(&self.listen)?;
        let store = match &self.store {
            Some(url) => url.expose().parse()?,
            None => StoreUrl::default_for(self.command.as_ref()),
        };
        let tokens = self.credentials()?;
        let duties = Duties {
            never_the_asker: tokens
                .iter()
                .any(|token| token.identity().role != Role::Admin),
        };
        if tokens.is_empty() && !listen.ip().is_loopback() {
            return Err(ConfigError::TokenRequired(listen));
        }
        let quorum_floor = self.quorum_floor(&tokens)?;
        let allowed_hosts = self
            .allowed_hosts
            .iter()
            .map(|host| host.trim())
            .filter(|host| !host.is_empty())
            .map(AllowedHost::from_str)
            .collect::<Result<Vec<_>, _>>()?;
        if allowed_hosts.contains(&AllowedHost::Any) && tokens.is_empty() {
            return Err(ConfigError::AnyHostWithoutToken);
        }
        if listen.ip().is_unspecified() && allowed_hosts.is_empty() {
            return Err(ConfigError::AllowedHostRequired(listen));
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
        let answer_wait = Duration::try_from_secs_f64(self.mcp_wait_secs)
            .ok()
            .filter(|wait| !wait.is_zero())
            .ok_or(ConfigError::BadMcpFlag(
                "--mcp-wait-secs must be a positive number of seconds",
            ))?;
        let mcp = McpConfig {
            session_id: mcp_session.into(),
            elicitation: if self.mcp_elicitation {
                ElicitationBridge::On
            } else {
                ElicitationBridge::Off
            },
            progress_interval,
            answer_wait,
            max_tasks: self.max_mcp_tasks,
            ..McpConfig::default()
        };
        let (pending, event_streams, max_event_streams_per_token) = self.limits(tokens.len())?;
        let max_connections = self.max_connections(event_streams.limit())?;
        let directory = std::env::current_dir()
            .map(|path| path.display().to_string())
            .unwrap_or_default();
        let retry_window = self
            .webhook_retry_window
            .as_deref()
            .map(|window| {
                Self::default_timeout(Some(window), "--webhook-retry-window", None)?.ok_or(
                    ConfigError::BadTimeout {
                        flag: "--webhook-retry-window",
                        value: window.to_owned(),
                    },
                )
            })
            .transpose()?;
        let notify = NotifySettings::parse(
            notify::NotifyFlags {
                webhooks: &self.webhook,
                webhook_secrets: &self.webhook_secret,
                retry_window,
                max_pending: self.webhook_max_pending,
                slack_token: self.slack_token.as_ref().map(Secret::expose),
                slack_channel: self.slack_channel.as_deref(),
                slack_api_url: &self.slack_api_url,
                slack_link_as: self.slack_link_as.as_deref(),
                smtp_url: self.smtp_url.as_ref().map(Secret::expose),
                email_from: self.email_from.as_deref(),
                email_to: &self.email_to,
            },
            &recipients(&tokens),
        )?;
        if self.link_secret.is_none()
            && matches!(store, StoreUrl::Redis(_))
            && notify.as_ref().is_some_and(NotifySettings::has_recipients)
        {
            return Err(ConfigError::LinkSecretRequired);
        }
        let credentials = identities(&tokens, |_| true);
        let slack = notify::slack_interactivity(
            self.slack_signing_secret.as_ref().map(Secret::expose),
            &self.slack_user,
            &credentials,
        )?;
        let follow_up = self.follow_up(&tokens)?;
        // Zero is refused by name below.
        if (1..self.max_history_mib).contains(&self.max_memory_history_mib) {
            return Err(ConfigError::HistoryTotalBelowSession {
                total: self.max_memory_history_mib,
                per_session: self.max_history_mib,
            });
        }
        const DAY: Duration = Duration::from_secs(24 * 3600);
        Ok(Settings {
            follow_up,
            listen,
            store,
            keep_resolved: (self.keep_resolved_days > 0).then(|| DAY * self.keep_resolved_days),
            queued_writes_mib: self.max_queued_write_mib,
            questions: QuestionConfig {
                default_timeout: Self::default_timeout(
                    self.question_timeout.as_deref(),
                    "--question-timeout",
                    QuestionConfig::default().default_timeout,
                )?,
                ..QuestionConfig::default()
            },
            approvals: ApprovalConfig {
                default_timeout: Self::default_timeout(
                    self.approval_timeout.as_deref(),
                    "--approval-timeout",
                    ApprovalConfig::default().default_timeout,
                )?,
                max_grants_per_session: self.max_grants_per_session,
                max_grants: self.max_grants,
                ..ApprovalConfig::default()
            },
            http: HttpConfig {
                tokens,
                cors_origins,
                allowed_hosts,
                directory,
                event_streams,
                max_event_streams_per_token,
                history: HistoryLimits {
                    records_per_session: at_least_one(
                        self.max_history_records,
                        "--max-history-records",
                    )?,
                    bytes_per_session: at_least_one(self.max_history_mib, "--max-history-mib")?
                        .saturating_mul(1024 * 1024),
                    bytes_in_memory: at_least_one(
                        self.max_memory_history_mib,
                        "--max-memory-history-mib",
                    )?
                    .saturating_mul(1024 * 1024),
                    ..HistoryLimits::default()
                },
                link_key: match &self.link_secret {
                    Some(secret) => LinkKey::from_secret(secret.expose())?,
                    None => LinkKey::random(),
                },
                metrics: !self.no_metrics,
                store_writes: (!self.no_metrics).then(|| Arc::new(StoreWrites::new())),
                slack,
                ..HttpConfig::default()
            },
            demo: if self.demo { Demo::On } else { Demo::Off },
            bus: BusConfig {
                history_bytes: at_least_one(self.max_event_history_mib, "--max-event-history-mib")?
                    .saturating_mul(1024 * 1024),
                ..BusConfig::default()
            },
            connections: ConnectionLimits {
                max_connections,
                ..ConnectionLimits::default()
            },
            mcp,
            mcp_stdio: match self.command {
                Some(Command::Mcp) => McpStdio::On,
                None | Some(Command::Audit(_) | Command::Probe { .. }) => McpStdio::Off,
            },
            max_mcp_sessions: at_least_one(self.max_mcp_sessions, "--max-mcp-sessions")?,
            pending,
            duties,
            quorum_floor,
            audit_key: audit::load_audit_key(self.audit_key.as_deref())?,
            notify,
            public_url: self.public_url.as_deref().map(public_url).transpose()?,
        })
    }

    /// The `--quorum` floor, if the credentials can reach it: a quorum of M needs M
    /// identities that may decide (reviewers and admins; without credentials there is one,
    /// `local`).
    fn quorum_floor(&self, tokens: &[AccessToken]) -> Result<QuorumFloor, ConfigError> {
        let floor = self
            .quorum
            .iter()
            .map(|entry| entry.trim())
            .filter(|entry| !entry.is_empty())
            .map(|entry| entry.parse().map_err(ConfigError::BadQuorum))
            .try_fold(QuorumFloor::default(), |floor, entry| {
                entry.map(|entry| floor.and(entry))
            })?;
        let deciders = tokens
            .iter()
            .filter(|token| token.identity().may_decide())
            .count()
            .max(1);
        let needed = floor.highest();
        if usize::try_from(needed).unwrap_or(usize::MAX) > deciders {
            return Err(ConfigError::QuorumUnreachable { needed, deciders });
        }
        Ok(floor)
    }

    /// The follow-up flags, checked: durations as --question-timeout's (not `never`), an
    /// escalation with someone to escalate to who may decide, and a known fallback.
    fn follow_up(&self, tokens: &[AccessToken]) -> Result<FollowUp, ConfigError> {
        let after = |value: Option<&str>, flag: &'static str| -> Result<_, ConfigError> {
            let refused = |value: &str| {
                ConfigError::BadFollowUp(format!(
                    "{flag} {value:?}: give seconds or a number with a unit (90s, 10m, 2h, 7d) up to a year, or leave the flag out"
                ))
            };
            match value {
                Some(value) if value.trim().eq_ignore_ascii_case("never") => Err(refused(value)),
                // Not BadTimeout's words: they offer `never`, which is no follow-up's.
                value => Self::default_timeout(value, flag, None)
                    .map_err(|_| refused(value.unwrap_or_default())),
            }
        };
        let on_timeout = match self.on_timeout.as_deref().map(str::trim) {
            None => None,
            Some("reject") => Some(OnTimeout::Reject),
            Some("escalate") => Some(OnTimeout::Escalate),
            Some(other) => {
                return Err(ConfigError::BadFollowUp(format!(
                    "--on-timeout {other:?}: give `reject` or `escalate` (a default answer is per question, never the server's)"
                )));
            }
        };
        let follow_up = FollowUp {
            remind_after: after(self.remind_after.as_deref(), "--remind-after")?,
            escalate_after: after(self.escalate_after.as_deref(), "--escalate-after")?,
            escalate_to: self
                .escalate_to
                .iter()
                .map(|name| name.trim().to_owned())
                .collect(),
            on_timeout,
        };
        let escalates =
            follow_up.escalate_after.is_some() || follow_up.on_timeout == Some(OnTimeout::Escalate);
        if escalates && follow_up.escalate_to.is_empty() {
            return Err(ConfigError::BadFollowUp(
                "--escalate-after or --on-timeout escalate needs --escalate-to NAME".to_owned(),
            ));
        }
        if !escalates && !follow_up.escalate_to.is_empty() {
            return Err(ConfigError::BadFollowUp(
                "--escalate-to needs --escalate-after or --on-timeout escalate".to_owned(),
            ));
        }
        let may_decide = deciders(tokens);
        if let Some(name) = follow_up
            .escalate_to
            .iter()
            .find(|name| !may_decide.iter().any(|decider| *decider.name == ***name))
        {
            return Err(ConfigError::BadFollowUp(format!(
                "--escalate-to {name:?} is no reviewer or admin credential of this server"
            )));
        }
        Ok(follow_up)
    }

    /// A default timeout flag's value: `never`, seconds, or a number with a unit (`s`, `m`,
    /// `h`, `d`), at most [`MAX_TIMEOUT`]; `default` when the flag is absent.
    fn default_timeout(
        value: Option<&str>,
        flag: &'static str,
        default: Option<Duration>,
    ) -> Result<Option<Duration>, ConfigError> {
        let Some(value) = value.map(str::trim) else {
            return Ok(default);
        };
        if value.eq_ignore_ascii_case("never") {
            return Ok(None);
        }
        let refused = || ConfigError::BadTimeout {
            flag,
            value: value.to_owned(),
        };
        let (number, unit) = value.split_at(
            value
                .find(|c: char| c.is_ascii_alphabetic())
                .unwrap_or(value.len()),
        );
        let seconds_per = match unit {
            "" | "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            _ => return Err(refused()),
        };
        let seconds: f64 = number.trim().parse().map_err(|_| refused())?;
        Duration::try_from_secs_f64(seconds * seconds_per)
            .ok()
            .filter(|timeout| !timeout.is_zero() && *timeout <= MAX_TIMEOUT)
            .map(Some)
            .ok_or_else(refused)
    }

    /// Every credential of `--token`, `--agent-token` and `--reviewer-token`, named.
    fn credentials(&self) -> Result<Vec<AccessToken>, ConfigError> {
        let entries = |flag: &[Secret]| -> Vec<String> {
            flag.iter()
                .map(|entry| entry.expose().trim().to_owned())
                .filter(|entry| !entry.is_empty())
                .collect()
        };
        let admins = entries(&self.tokens);
        let mut tokens = Vec::new();
        for (position, entry) in admins.iter().enumerate() {
            let name = match admins.len() {
                1 => "admin".to_owned(),
                _ => format!("admin-{}", position + 1),
            };
            tokens.push(parse_token(entry, name)?);
        }
        for (flag, role, entries) in [
            ("--agent-token", Role::Agent, entries(&self.agent_tokens)),
            (
                "--reviewer-token",
                Role::Reviewer,
                entries(&self.reviewer_tokens),
            ),
        ] {
            for entry in entries {
                tokens.push(parse_named_token(flag, role, &entry)?);
            }
        }
        let mut names = std::collections::HashSet::new();
        for (position, token) in tokens.iter().enumerate() {
            if !names.insert(Arc::clone(&token.identity().name)) {
                return Err(ConfigError::DuplicateTokenName(
                    token.identity().name.to_string(),
                ));
            }
            if let Some(twin) = tokens[..position]
                .iter()
                .find(|earlier| earlier.shares_secret_with(token))
            {
                return Err(ConfigError::DuplicateTokenSecret(
                    twin.identity().name.to_string(),
                    token.identity().name.to_string(),
                ));
            }
        }
        Ok(tokens)
    }

    /// The quota flags, with their defaults filled in for `tokens` tokens.
    fn limits(&self, tokens: usize) -> Result<(PendingLimits, StreamSlots, usize), ConfigError> {
        // With two tokens or more, by default no one token may take more than half, so the
        // others always keep the rest. With one (or none) there is nobody to share with.
        let per_token = |asked: Option<usize>, of_server: usize, flag| match asked {
            Some(asked) => at_least_one(asked, flag),
            None if tokens >= 2 => Ok(of_server.div_ceil(2)),
            None => Ok(usize::MAX),
        };
        let total = at_least_one(self.max_pending, "--max-pending")?;
        let pending = PendingLimits {
            per_session: at_least_one(self.max_pending_per_session, "--max-pending-per-session")?,
            per_account: per_token(self.max_pending_per_token, total, "--max-pending-per-token")?,
            total,
            bytes: at_least_one(self.max_pending_mib, "--max-pending-mib")?
                .saturating_mul(1024 * 1024),
            values_per_request: at_least_one(self.max_request_values, "--max-request-values")?,
        };
        let streams = match self.max_event_streams {
            Some(asked) => at_least_one(asked, "--max-event-streams")?,
            // Below a `--max-connections` given alone, leaving room beside the streams.
            None => open_files_limit()
                .map_or(StreamSlots::default().limit(), event_streams_for)
                .min(self.max_connections.map_or(usize::MAX, |connections| {
                    connections
                        .saturating_sub(CONNECTIONS_BESIDE_STREAMS.min(connections / 2))
                        .max(1)
                })),
        };
        let streams_per_token = per_token(
            self.max_event_streams_per_token,
            streams,
            "--max-event-streams-per-token",
        )?;
        Ok((pending, StreamSlots::new(streams), streams_per_token))
    }

    /// `--max-connections`, or its default for this process's open-files limit, above
    /// `streams` event streams by at least [`CONNECTIONS_BESIDE_STREAMS`].
    fn max_connections(&self, streams: usize) -> Result<usize, ConfigError> {
        let connections = match self.max_connections {
            Some(asked) => at_least_one(asked, "--max-connections")?,
            None => open_files_limit()
                .map_or(ConnectionLimits::default().max_connections, connections_for)
                .max(streams.saturating_add(CONNECTIONS_BESIDE_STREAMS)),
        };
        if streams >= connections {
            return Err(ConfigError::StreamsTakeEveryConnection {
                streams,
                connections,
            });
        }
        Ok(connections)
    }
}

/// `value` of `flag`, a limit, unless it is zero.
fn at_least_one(value: usize, flag: &'static str) -> Result<usize, ConfigError> {
    match value {
        0 => Err(ConfigError::ZeroLimit(flag)),
        value => Ok(value),
    }
}

/// The default `--max-event-history-mib`: its 4,096 events of a few KiB each fit, a few
/// hundred of the largest requests do.
const DEFAULT_EVENT_HISTORY_MIB: usize = 16;

/// The fewest connections the default `--max-connections` leaves beside the event streams.
const CONNECTIONS_BESIDE_STREAMS: usize = 64;

/// The default of `--max-connections` for a process that may have `open_files` files open:
/// an eighth of the limit, and at least 128, is left for the store's files and connections,
/// the listener, webhooks and logs; at most 60,000. Above [`event_streams_for`] the same
/// limit wherever that leaves room; the server's default also keeps 64 connections beside
/// the streams whatever the limit, and refuses `--max-event-streams` at or above
/// `--max-connections`.
///
/// # Examples
///
/// ```
/// use askbus_server::{connections_for, event_streams_for};
///
/// assert_eq!(connections_for(1_024), 896);
/// assert_eq!(connections_for(1_048_576), 60_000);
/// assert_eq!(connections_for(100), 1);
/// assert!(connections_for(20_000) > event_streams_for(20_000));
/// ```
pub fn connections_for(open_files: u64) -> usize {
    const MOST: u64 = 60_000;
    let reserved = (open_files / 8).max(128);
    let connections = open_files.saturating_sub(reserved).clamp(1, MOST);
    usize::try_from(connections).unwrap_or(1)
}

/// The default of `--max-event-streams` for a process that may have `open_files` files
/// open: each stream holds a connection, so one file descriptor. A quarter of the limit,
/// and at least 256, is left for everything else (replies, `/health`, the store's files and
/// connections, the listener); and at most 50,000 streams, about 1 GB of their state
/// (some 20 KB each).
///
/// # Examples
///
/// ```
/// use askbus_server::event_streams_for;
///
/// assert_eq!(event_streams_for(1_024), 768);
/// assert_eq!(event_streams_for(20_000), 15_000);
/// assert_eq!(event_streams_for(1_048_576), 50_000);
/// assert_eq!(event_streams_for(100), 1);
/// ```
pub fn event_streams_for(open_files: u64) -> usize {
    const MOST: u64 = 50_000;
    let reserved = (open_files / 4).max(256);
    let streams = open_files.saturating_sub(reserved).clamp(1, MOST);
    usize::try_from(streams).unwrap_or(1)
}

/// The open-files limits of this process before and after
/// [`raise_open_files_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit found at start-up.
    pub before: u64,
    /// The soft limit in force now.
    pub now: u64,
}

/// Raises this process's soft limit of open files to its hard limit, so the server can
/// hold as many connections as the system lets it; `None` on a platform without such a
/// limit.
///
/// # Errors
///
/// The system's error if the limits cannot be read or raised; they are left as they were.
pub fn raise_open_files_limit() -> std::io::Result<Option<OpenFiles>> {
    let Some(before) = open_files_limit() else {
        return Ok(None);
    };
    let now = rlimit::increase_nofile_limit(u64::MAX)?;
    Ok(Some(OpenFiles { before, now }))
}

/// The soft limit of open files in force, if the platform has one.
fn open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rlimit::Resource::NOFILE.get().ok().map(|(soft, _)| soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// One `--token` entry: `TOKEN` (an admin named `admin_name`) or `TOKEN@SESSION_ID` (an
/// agent of that session, named `agent@SESSION_ID`).
fn parse_token(entry: &str, admin_name: String) -> Result<AccessToken, ConfigError> {
    let (secret, session) = secret_and_session("--token", entry)?;
    Ok(match session {
        None => AccessToken::all_sessions(secret).named(admin_name),
        Some(session) => {
            AccessToken::for_session(secret, session).named(format!("agent@{session}"))
        }
    })
}

/// One `--agent-token` or `--reviewer-token` entry: `NAME=SECRET[@SESSION_ID]`.
fn parse_named_token(
    flag: &'static str,
    role: Role,
    entry: &str,
) -> Result<AccessToken, ConfigError> {
    let Some((name, rest)) = entry.split_once('=') else {
        return Err(ConfigError::BadToken(
            flag,
            "expected NAME=SECRET or NAME=SECRET@SESSION_ID",
        ));
    };
    let name = name.trim();
    if name.is_empty()
        || name.len() > 64
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(ConfigError::BadToken(
            flag,
            "the name before `=` must be 1 to 64 characters, without whitespace or control characters",
        ));
    }
    if name == Identity::LOCAL {
        return Err(ConfigError::BadToken(
            flag,
            "`local` names whoever needs no credential (this server's own demo agent, say); choose another name",
        ));
    }
    let (secret, session) = secret_and_session(flag, rest)?;
    let token = AccessToken::new(secret, Identity::new(name, role));
    Ok(match session {
        None => token,
        Some(session) => token.in_session(session),
    })
}

/// A token's secret and the session after its `@`, if any, both checked.
fn secret_and_session<'a>(
    flag: &'static str,
    entry: &'a str,
) -> Result<(&'a str, Option<&'a str>), ConfigError> {
    let (secret, session) = match entry.split_once('@') {
        None => (entry, None),
        Some((secret, session)) => (secret, Some(session)),
    };
    if secret.is_empty() {
        return Err(ConfigError::BadToken(flag, "the secret is empty"));
    }
    if secret.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::BadToken(
            flag,
            "a secret cannot contain whitespace or control characters",
        ));
    }
    if session == Some("") {
        return Err(ConfigError::BadToken(
            flag,
            "the session after `@` is empty",
        ));
    }
    Ok((secret, session))
}

/// The address `--listen` names. A name is resolved once, here; of its addresses an IPv4
/// one is taken first, the address clients most often reach a name by. The name is not
/// added to the names the server answers for (beside `localhost`): whoever controls its DNS
/// could point it elsewhere and back (rebinding), so answering for it takes an explicit
/// `--allowed-host`.
fn resolve_listen(listen: &str) -> Result<SocketAddr, ConfigError> {
    let listen = listen.trim();
    if let Ok(address) = listen.parse() {
        return Ok(address);
    }
    let refused = || ConfigError::BadListen(listen.to_owned());
    let addresses: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(listen)
        .map_err(|_| refused())?
        .collect();
    addresses
        .iter()
        .find(|address| address.is_ipv4())
        .or(addresses.first())
        .copied()
        .ok_or_else(refused)
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
    let hub = open_hub(&settings)
        .await
        .map_err(std::io::Error::other)?
        .with_pending_limits(settings.pending)
        .with_duties(settings.duties)
        .with_quorum_floor(settings.quorum_floor.clone())
        .with_follow_up(settings.follow_up.clone());
    serve_hub(listener, hub, settings, shutdown).await;
    Ok(())
}

/// Serves `hub` on `listener`; see [`serve`].
async fn serve_hub(
    listener: TcpListener,
    hub: RequestHub,
    mut settings: Settings,
    shutdown: CancellationToken,
) {
    let listen = listener.local_addr().unwrap_or(settings.listen);
    let public_url = settings
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{listen}"));
    let hub = notify::start(hub, &mut settings, &public_url, &shutdown);
    if settings.mcp.answer_links.is_none() {
        let key = settings.http.link_key.clone();
        settings.mcp.answer_links = Some(mcp::answer_links(key, public_url.clone()));
    }
    if settings.demo == Demo::On {
        tokio::spawn(demo::run(hub.clone(), shutdown.clone()));
    }
    if settings.mcp_stdio == McpStdio::On {
        let (hub, settings, shutdown) = (hub.clone(), settings.clone(), shutdown.clone());
        tokio::spawn(async move { mcp::serve_stdio(hub, &settings, shutdown).await });
    }
    if let Some(store) = hub.store() {
        // Seals the audit entries this (or any) instance appends, until shutdown.
        let sealer = askbus_audit::Sealer::new(Arc::clone(store), settings.audit_key.clone());
        tokio::spawn(sealer.run(shutdown.clone()));
    }
    let app = askbus_http::router(hub.clone(), settings.http.clone(), shutdown.clone());
    // The web UI at `/`: public pages whose API calls carry the human's token.
    let app = app.merge(askbus_ui::router());
    let app = mcp::mount(app, hub, &settings, shutdown.clone());
    // One guard in front of every route: the Host, and the site of a browser's request;
    // and in front of it, an access line for every request (the API, the UI, MCP, and what
    // the guard refused), each request run as the work of its id, which every line it logs
    // names.
    let app = askbus_http::guarded_and_logged(app, SiteGuard::new(listen, &settings.http));
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
    let hub = open_hub(&settings)
        .await
        .map_err(|error| std::io::Error::other(format!("cannot open the store {store}: {error}")))?
        .with_pending_limits(settings.pending)
        .with_duties(settings.duties)
        .with_quorum_floor(settings.quorum_floor.clone())
        .with_follow_up(settings.follow_up.clone());
    let auth = describe_auth(&settings.http.tokens);
    tracing::info!("limits: {}", describe_limits(&settings));
    tracing::info!("askbus listening on http://{address} ({auth}; store: {store})");
    serve_hub(listener, hub, settings, shutdown).await;
    Ok(())
}

/// Deletes what `store` holds past `--keep-resolved-days` now, and every
/// [`SWEEP_INTERVAL`](askbus_store::SWEEP_INTERVAL) while it lives. Every store the server
/// opens goes through here, the memory store that only backs notifications included: it
/// would otherwise keep every request, history and delivery for the process's life.
async fn keep_swept(settings: &Settings, store: &Arc<dyn Store>) {
    if let Some(keep) = settings.keep_resolved {
        askbus_store::sweep(&**store, keep).await;
        tokio::spawn(askbus_store::keep_resolved_for(Arc::downgrade(store), keep));
    }
}

/// The questions and approvals of the server, on a bus, recorded in the configured store
/// (with the sessions' histories, each within its limit) and restored from it; requests
/// resolved, and histories quiet, longer than `keep_resolved` ago are deleted before it is
/// read, and then every [`SWEEP_INTERVAL`](askbus_store::SWEEP_INTERVAL).
async fn open_hub(settings: &Settings) -> Result<RequestHub, StoreError> {
    let history = settings.http.history;
    let hub = RequestHub::builder()
        .bus_config(settings.bus)
        .questions(settings.questions)
        .approvals(settings.approvals);
    let store: Arc<dyn Store> = match &settings.store {
        // Notifications need an outbox: a memory store then keeps it, as this hub's record
        // only, swept as the others are.
        StoreUrl::Memory if settings.notify.is_some() => {
            let store = MemoryStore::new()
                .with_history_limit(history.records_per_session)
                .with_history_bytes(history.bytes_per_session);
            let store = metered(settings, "memory", Arc::new(store));
            keep_swept(settings, &store).await;
            return hub
                .bus(Bus::with_config(settings.bus))
                .store(store)
                .build()
                .await;
        }
        StoreUrl::Memory => return hub.build().await,
        StoreUrl::Sqlite(path) => metered(
            settings,
            "sqlite",
            Arc::new(
                SqliteStore::open(path)?
                    .with_queued_writes_mib(settings.queued_writes_mib)
                    .with_history_limit(history.records_per_session)
                    .with_history_bytes(history.bytes_per_session),
            ),
        ),
        StoreUrl::Redis(location) => metered(
            settings,
            "redis",
            Arc::new(
                RedisStore::open_at(location)
                    .await?
                    .with_queued_writes_mib(settings.queued_writes_mib)
                    .with_history_limit(history.records_per_session)
                    .with_history_bytes(history.bytes_per_session),
            ),
        ),
    };
    keep_swept(settings, &store).await;
    if store.change_log().is_some() {
        // Redis. Its bus is this server's own: the store's change log brings it every
        // instance's request events, and its event ids are this server's cursors.
        return hub
            .bus(Bus::with_config(settings.bus))
            .store(store)
            .shared()
            .build()
            .await;
    }
    // SQLite: the builder resumes the bus from the store's event journal.
    let hub = hub.store(store).build().await?;
    let restored = hub.questions().pending_count() + hub.approvals().pending_count();
    if restored > 0 {
        tracing::info!("{restored} pending request(s) restored from the store");
    }
    Ok(hub)
}

/// `store`, named `backend`, telling `/metrics` of its writes ([`MeteredStore`]), unless
/// metrics are off.
fn metered(settings: &Settings, backend: &'static str, store: Arc<dyn Store>) -> Arc<dyn Store> {
    match &settings.http.store_writes {
        Some(writes) => Arc::new(MeteredStore::new(store, backend, Arc::clone(writes) as _)),
        None => store,
    }
}

/// The quotas in force, for the start-up log.
fn describe_limits(settings: &Settings) -> String {
    let per_token = |limit: usize| match limit {
        usize::MAX => String::new(),
        limit => format!(", {limit} per token"),
    };
    let pending = settings.pending;
    let http = &settings.http;
    format!(
        "{} pending requests per session, {} in total{}; {} event streams and long polls{}; \
         {} connections; session histories of {} records, {} MiB; event history {} MiB; \
         writes queued for the store {} MiB",
        pending.per_session,
        pending.total,
        per_token(pending.per_account),
        http.event_streams.limit(),
        per_token(http.max_event_streams_per_token),
        settings.connections.max_connections,
        http.history.records_per_session,
        http.history.bytes_per_session / (1024 * 1024),
        settings.bus.history_bytes / (1024 * 1024),
        settings.queued_writes_mib,
    )
}

/// The identities of the credentials `keep` keeps, or the local caller (who is everyone)
/// when there are no credentials.
fn identities(tokens: &[AccessToken], keep: impl Fn(&AccessToken) -> bool) -> Vec<Identity> {
    if tokens.is_empty() {
        return vec![Identity::local()];
    }
    tokens
        .iter()
        .filter(|token| keep(token))
        .map(|token| token.identity().clone())
        .collect()
}

/// The identities that may answer requests: every reviewer's and admin's credential, or
/// the local caller when there are none.
fn deciders(tokens: &[AccessToken]) -> Vec<Identity> {
    identities(tokens, |token| token.identity().may_decide())
}

/// Who notifications may carry answer links for: the credentials that may answer every
/// session's requests (a session's reviewer would be sent every session's requests), or
/// the local caller when there are none.
fn recipients(tokens: &[AccessToken]) -> Vec<Identity> {
    identities(tokens, |token| {
        token.identity().may_decide() && matches!(token.scope(), TokenScope::AllSessions)
    })
}

/// A `--public-url`: an http(s) URL, kept without its trailing `/`.
fn public_url(url: &str) -> Result<String, ConfigError> {
    let url = url.trim().trim_end_matches('/');
    let http = url.starts_with("http://") || url.starts_with("https://");
    if !http || url.contains(char::is_whitespace) {
        return Err(ConfigError::BadPublicUrl(url.to_owned()));
    }
    Ok(url.to_owned())
}

impl Settings {
    /// Who notifications may carry answer links for (see [`recipients`]).
    pub(crate) fn recipients(&self) -> Vec<Identity> {
        recipients(&self.http.tokens)
    }
}

fn describe_auth(tokens: &[AccessToken]) -> String {
    if tokens.is_empty() {
        return "no authentication: loopback only".to_owned();
    }
    let scoped = tokens
        .iter()
        .filter(|token| matches!(token.scope(), TokenScope::Session(_)))
        .count();
    let named = |role| {
        tokens
            .iter()
            .filter(|token| token.identity().role == role)
            .map(|token| token.identity().name.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "bearer auth: {} token(s), {scoped} session-scoped; admins [{}], agents [{}], reviewers [{}]",
        tokens.len(),
        named(Role::Admin),
        named(Role::Agent),
        named(Role::Reviewer),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use askbus_store::{OutcomeRecord, OutcomeState, RequestKind, RequestRecord, Write};
    use clap::Parser;

    use super::*;

    /// With notifications, `--store memory` keeps a store for their outbox, and it holds
    /// every request and delivery: it is swept past `--keep-resolved-days` like the others,
    /// where it used to keep them for the process's life.
    #[tokio::test(start_paused = true)]
    async fn the_memory_store_behind_notifications_is_swept() {
        let settings = Cli::try_parse_from([
            "askbus",
            "--store",
            "memory",
            "--webhook",
            "http://127.0.0.1:9/hook",
            "--webhook-secret",
            // 24 bytes of base64: the shortest secret taken.
            "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3",
            "--keep-resolved-days",
            "1",
        ])
        .expect("flags")
        .settings()
        .expect("valid");
        let hub = open_hub(&settings).await.expect("a hub");
        let store = Arc::clone(hub.store().expect("a store for the outbox"));
        let now_ms = askbus_store::now_ms();
        for (id, resolved_days_ago) in [("que_1", 2), ("que_2", 0)] {
            let request = RequestRecord {
                id: id.into(),
                kind: RequestKind::Question,
                session_id: "s".into(),
                call_id: None,
                created_at_ms: now_ms - 3 * 86_400_000,
                expires_at_ms: None,
                body: "{}".into(),
            };
            let outcome = OutcomeRecord::new(
                OutcomeState::Replied,
                "[]",
                now_ms - resolved_days_ago * 86_400_000,
            );
            store.write(Write::Insert(request)).await.expect("inserted");
            store
                .write(Write::Resolve {
                    kind: RequestKind::Question,
                    id: id.into(),
                    outcome,
                    audit: None,
                    outbox: None,
                })
                .await
                .expect("resolved");
        }

        tokio::time::sleep(askbus_store::SWEEP_INTERVAL + Duration::from_secs(1)).await;
        assert_eq!(store.get("que_1").await.expect("read"), None, "swept");
        assert!(store.get("que_2").await.expect("read").is_some(), "kept");
    }
}
