//! askbus: let AI agents stop and ask a human, and get the answer back.
//!
//! This facade re-exports the crates an agent runtime touches, so it needs one dependency:
//!
//! - [`bus`] ([`askbus_bus`]): the typed, non-blocking event bus with replayable history.
//! - [`question`] ([`askbus_question`]): questions and approvals, their events and outcomes.
//! - [`tool`] ([`askbus_tool`]): the same `ask` offered to an LLM as a tool.
//! - [`store`] ([`askbus_store`]): the record behind the requests; the in-memory store
//!   always, [`SqliteStore`](store::SqliteStore) with the `sqlite` feature,
//!   [`RedisStore`](store::RedisStore) with `redis`.
//! - `http` (`askbus_http`, feature `http`) and `ui` (`askbus_ui`, feature `ui`): the HTTP
//!   API and the web UI as axum routers, to serve inside an app of your own.
//! - `server` (`askbus_server`, feature `server`): the whole server, as the `askbus`
//!   binary runs it (flags, every store, HTTP, UI, MCP).
//!
//! The default build is the library alone: no store backend, no HTTP (57 crates with this
//! one). The most used items are also re-exported at the top level.
#![doc = include_str!("../README.md")]

pub use askbus_bus as bus;
#[cfg(feature = "http")]
pub use askbus_http as http;
pub use askbus_question as question;
#[cfg(feature = "server")]
pub use askbus_server as server;
pub use askbus_store as store;
pub use askbus_tool as tool;
#[cfg(feature = "ui")]
pub use askbus_ui as ui;

pub use askbus_bus::{Bus, Envelope, Event, EventId};
pub use askbus_question::{
    Answer, ApprovalAsked, ApprovalOutcome, ApprovalReplied, ApprovalRequest, ApprovalService,
    AskError, QuestionAsked, QuestionCancelled, QuestionId, QuestionInfo, QuestionOption,
    QuestionOutcome, QuestionRejected, QuestionReplied, QuestionRequest, QuestionService,
    QuestionTimedOut, ReplyError, RequestHub, SubmitError, Timeout, ToolRef,
};
pub use askbus_store::{MemoryStore, Store};

/// The workspace README's examples, run as doctests (only then: the published package
/// does not hold the file).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct WorkspaceReadme;
