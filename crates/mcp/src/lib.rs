//! The MCP face of askbus: any MCP client can make its agent stop and ask a human.
//!
//! [`AskbusMcp`] is an MCP server (built on the official Rust SDK, `rmcp`) offering three
//! tools. Two have the name, description, JSON Schema and call of their askbus-tool
//! counterpart, so this crate only speaks MCP's wire; each tool also has a title, behaviour
//! annotations and an output schema, all in JSON Schema every SDK accepts:
//!
//! - `question` ([`QuestionTool`](askbus_tool::QuestionTool)) asks the human. The question
//!   is announced as `question.asked` on the bus (and on `GET /event`), any askbus client
//!   answers it over HTTP, and the tool result carries the answer: the text the model
//!   reads, plus `structuredContent` holding the [`ToolOutcome`](askbus_tool::ToolOutcome)
//!   as JSON.
//! - `request_approval` ([`ApprovalTool`](askbus_tool::ApprovalTool)) has the human review
//!   tool calls the agent wants to make. The request is announced as `approval.asked`,
//!   listed by `GET /approval` and answered with `POST /approval/{id}/reply`; the result's
//!   text tells the model what it may run, and `structuredContent` holds the
//!   [`ApprovalToolOutcome`](askbus_tool::ApprovalToolOutcome) (one decision per action;
//!   an edit carries the human's call).
//! - `wait_for_answer` waits again for a request whose call returned before the human
//!   answered (see below).
//!
//! Both make their requests through the [`RequestHub`](askbus_question::RequestHub) the
//! server was built with: give it the hub the HTTP API serves. Two transports:
//! [`streamable_http_service`] (mounted at `/mcp` by the askbus server) and [`serve_stdio`]
//! (`askbus mcp`).
//!
//! # Waiting for a human
//!
//! A human takes minutes; MCP clients time tool calls out, often after 60 s. What a call
//! does while it waits depends on what the client declared, in this order:
//!
//! 1. **Tasks** (the `io.modelcontextprotocol/tasks` extension, SEP-2663), when negotiated:
//!    a client that agreed on protocol 2026-07-28 and declares the extension gets a
//!    `CreateTaskResult` at once and polls `tasks/get` (every
//!    [`McpConfig::task_poll_interval`], as hinted) until the task is `completed` with the
//!    tool result; `tasks/cancel` cancels the request. This is the newest protocol's way
//!    to come back for an answer instead of holding a call open. Both tools. A client of an
//!    older protocol that declares the extension anyway (the MCP Inspector's CLI does, and
//!    never polls) is treated as everyone else (3).
//! 2. **Multi round-trip** (`input_required`, SEP-2322, protocol 2026-07-28). With the
//!    [elicitation bridge](ElicitationBridge) on and a client that elicits forms, a
//!    `question` call answers `input_required` with an elicitation form and a sealed
//!    `requestState`; the question stays pending meanwhile. The client retries with the
//!    form's answer (or without one, to collect an answer given elsewhere) and gets the
//!    result. Approvals have no round trip (an edit is a whole tool call, not an
//!    `input_required` answer), so a `request_approval` call is held open instead; so is a
//!    question to a client that elicits URLs but not forms.
//! 3. **Held open**, for everyone else, for [`McpConfig::answer_wait`] (45 s) at most: the
//!    call returns the result when the request resolves, or else, at that bound, a result
//!    with `structuredContent` `{"status": "waiting", "id", "kind"}` whose text tells the
//!    model to call `wait_for_answer` with the id, which waits the same bound again. Hosts
//!    on the MCP SDKs' defaults give up after 60 s, progress or not, so no call outlasts
//!    that; the request outlives its calls (see `parked.rs`). If the client sent a
//!    `progressToken`, a progress notification goes out every
//!    [`McpConfig::progress_interval`] meanwhile.
//!
//! Policy, in exact words:
//!
//! - **Cancelling the call cancels the request.** `notifications/cancelled` on a waiting
//!   call (the first one or a `wait_for_answer`; or the Streamable HTTP request going away,
//!   or `tasks/cancel`) drops the asking future, which resolves the request as cancelled
//!   and publishes `question.cancelled` or `approval.cancelled`. **Returning `waiting`
//!   cancels nothing**; the MCP session ending (stdio closed, the Streamable HTTP session
//!   deleted or expired) cancels the requests its calls left waiting. A request of the
//!   stateless 2026-07-28 transport, and a question asked in an `input_required` round,
//!   belong to no session: they stay pending until answered or timed out.
//! - **Outcomes are results, not errors.** Rejection, timeout and cancellation come back
//!   as ordinary tool results with their own texts (the model must not invent an answer,
//!   nor run a call that was not approved). Bad arguments come back as a tool result with
//!   `isError: true` and a message the model can act on. Protocol errors are kept for what
//!   is not a tool call at all (an unknown tool, a forged `requestState`).
//! - **One outcome per question.** The elicitation form and askbus HTTP race; whichever
//!   answers first wins, the other is told the question is already resolved, and the
//!   result reports the winner. An elicitation that loses the race is cancelled
//!   (`notifications/cancelled`) when the protocol allows it.
//! - **Sessions.** Questions and approvals are requested in [`McpConfig::session_id`],
//!   unless the HTTP layer in front of the service confines the caller to one session with
//!   a [`ScopedSession`] request extension (the askbus server does that for session-scoped
//!   tokens).
//! - **`requestState` is sealed.** It names a question and its session; it is signed with
//!   a key made when the server starts (HMAC, `rmcp`'s `RequestStateCodec`), so a client
//!   cannot point a retry at someone else's question.
//!
//! # The elicitation bridge
//!
//! When [`McpConfig::elicitation`] is [`ElicitationBridge::On`] and the client declared
//! form elicitation, each question and each approval is also put to the user through the
//! client's own elicitation UI (an approval as a decision per call, a reason and the edited
//! arguments: see `elicitation.rs`; legacy sessions and tasks). The questions become the restricted JSON Schema of elicitation: for
//! question *n*, `qn` is a string enum of the option labels (single select) or an array of
//! that enum (`multiple`); a question that allows custom answers adds a free-text string
//! `qn_other` (or is only that string when it has no options). `accept` replies with those
//! answers (free text wins over a single choice, and is appended to multiple choices;
//! nothing filled in skips the question), `decline` rejects, `cancel` cancels. A form
//! answer that does not fit the question is refused and the question stays pending for an
//! answer over HTTP. Legacy sessions get a server-to-client `elicitation/create`; protocol
//! 2026-07-28 clients get the form in an `input_required` result; task clients get it as
//! the task's `input_required` request, answered with `tasks/update`.
//!
//! With the bridge on and [`McpConfig::answer_links`] given, a held-open call whose client
//! declared URL-mode elicitation (protocol 2025-11-25, `elicitation: {url: {}}`) but not
//! forms is sent the request's answer link as a URL-mode `elicitation/create`. The link is minted by the function
//! the server was given (the askbus server gives it the HTTP API's own), acting as the
//! [`McpCaller`] and expiring with the request, so it decides under the rules of every
//! answer link (none acts as an agent: an agent's client is sent none). The client's
//! answer to the elicitation is only whether the user opened it; once the request
//! resolves, however, the server sends `notifications/elicitation/complete` with the
//! elicitation's id, then the result. Task clients and 2026-07-28 round trips are not
//! sent links: the newer protocol dropped the elicitation id and its completion
//! notification, and its retry carries no answer a link would give.
//!
//! ```no_run
//! use askbus_bus::Bus;
//! use askbus_mcp::{AskbusMcp, HttpOptions, McpConfig, McpSessions, streamable_http_service};
//! use askbus_question::RequestHub;
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn run() -> std::io::Result<()> {
//! let hub = RequestHub::new(Bus::new());
//! let shutdown = CancellationToken::new();
//! let mcp = AskbusMcp::new(hub.clone(), McpConfig::default());
//! // Kept to count the sessions, and refuse new ones past a limit of the server's.
//! let sessions = McpSessions::new();
//! let service = streamable_http_service(mcp, HttpOptions::default(), &sessions, shutdown.clone());
//! // axum::Router::new().nest_service("/mcp", service), served beside askbus_http::router.
//! # drop(service);
//! # Ok(())
//! # }
//! ```

mod elicitation;
mod parked;
mod server;
mod task_room;
mod tools;
mod transport;

/// Why a served connection ended (what [`serve_stdio`] and [`serve_io`] return).
pub use rmcp::service::QuitReason;
pub use server::{AnswerLinks, AskbusMcp, ElicitationBridge, McpCaller, McpConfig, ScopedSession};
pub use transport::{
    HttpOptions, McpServeError, McpSessions, serve_io, serve_stdio, streamable_http_service,
};
