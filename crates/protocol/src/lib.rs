//! The wire of the seeds' content-block stream: agent steps and human-input requests as the
//! frames and the flat history that chat UIs render.
//!
//! UIs built for the seeds' protocol (seeds 000, 001, 004) do not read askbus events; they
//! read a stream of `content_block_start` / `content_block_delta` / `content_block_stop`
//! frames bracketed by `group_start` / `group_end`, and on reload a flat history whose
//! messages carry a `display_type`. This crate owns those shapes (as `askbus-http` owns
//! HTTP's), in four steps:
//!
//! 1. [`Record`]: what happened in a session: an agent [`Step`] (user message, text,
//!    thinking, tool call, tool result) or a [`RequestEvent`] (a question or approval
//!    asked, or its outcome).
//! 2. [`Encoder`]: records to [`Frame`]s. It decides the grouping: content (user messages,
//!    text, questions) is never inside a group, so a question closes the open group first;
//!    steps (thinking, tools, tool approvals) are always inside one, so the next tool after
//!    a question opens a new group. See [`Encoder`] for the whole policy.
//! 3. [`ClientView`]: frames to the flat [`Block`] list a UI shows (seed 004's converter),
//!    and that list to and from the seed's [`History`]: `content` / `group_start` /
//!    `group_item` / `group_end` messages, `group_closed` for a one-message group, resolved
//!    requests with `isResolved`, `submittedAnswers` or `decisions`.
//! 4. [`Transcripts`]: every session's history and stream, read from the session's records
//!    (in the hub's store, or in memory without one), with the cursor (`last_event_id`)
//!    that joins them.
//!
//! The guarantee, in exact words: **for any point of a session, its history up to that
//! point, followed by the stream frames after the history's `last_event_id`, gives a client
//! exactly the blocks it would have if it had watched the stream from the start**: no frame
//! missing, none repeated. When that cannot be kept (the records the cursor was folded from
//! are no longer kept), the stream says so ([`ProtocolError::Resync`]) instead of going on.
//!
//! Where steps come from: the runtime records [`AgentStep`]s through the hub its questions
//! use ([`AgentStep::record`]), or posts them to `POST /session/{id}/step` (server mode).
//! Steps and request changes are records of one history per session, kept in one order, so
//! the order they were recorded in is the transcript's order.
//!
//! ```
//! use askbus_bus::Bus;
//! use askbus_protocol::{AgentStep, ClientView, Step, Transcripts};
//! use askbus_question::RequestHub;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let hub = RequestHub::new(Bus::new());
//! let transcripts = Transcripts::new(&hub);
//! let step = |step| AgentStep::new("s1", step).record(&hub);
//! step(Step::ToolUse {
//!     id: "tc-1".into(),
//!     name: "web_search".into(),
//!     input: json!({"query": "market today"}),
//!     tool_content_message: None,
//!     display_as_content: false,
//! })
//! .await
//! .unwrap();
//! let history = transcripts.history("s1").await.unwrap();
//! step(Step::Text { text: "Up 2.69%.".into(), is_final: true }).await.unwrap();
//!
//! // A client that loaded the history resumes the stream after its cursor.
//! let mut view = ClientView::from_history(&history);
//! let mut resumed = transcripts.follow("s1", Some(history.last_event_id)).await.unwrap();
//! let mut live = ClientView::new();
//! let mut watched = transcripts.follow("s1", None).await.unwrap();
//! let now = transcripts.history("s1").await.unwrap().last_event_id;
//! for (view, stream) in [(&mut view, &mut resumed), (&mut live, &mut watched)] {
//!     loop {
//!         let frame = stream.next().await.unwrap().unwrap();
//!         view.apply(&frame.frame);
//!         if frame.cursor == now {
//!             break;
//!         }
//!     }
//! }
//! assert_eq!(view, live);
//! # }
//! ```

mod encode;
mod frame;
mod history;
mod memory;
mod record;
mod transcript;
mod view;

pub use encode::{Encoder, THINKING_SUMMARY, readable};
pub use frame::{
    ApprovalRequestDelta, ApprovalResultDelta, ContentBlock, ContentDelta, Delta, Frame,
    StartReviewConfig, TextFlags, ToolResultBlock, ToolUseBlock,
};
pub use history::{
    AgentStatus, Display, DisplayType, History, HistoryMessage, MessageType, Part, RequestPart,
    ToolCall,
};
pub use record::{
    ActionRequest, AgentStep, Decision, DecisionType, EditedAction, OTHER_DESCRIPTION, OTHER_LABEL,
    Outcome, QUESTION_TOOL, Record, Recording, Request, RequestEvent, RequestKind, ReviewConfig,
    Step, ToolStatus, keyed_answers,
};
pub use transcript::{Follow, FrameCursor, HistoryLimits, Resync, StreamFrame, Transcripts};
pub use view::{Block, ClientView, RequestBlock, Resolution};

/// What can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// A stream cursor is not one this crate writes (`h<first>-<record>[.N]`).
    #[error("invalid stream cursor {cursor:?}: expected a history's last_event_id or a frame's id")]
    InvalidCursor {
        /// The text given.
        cursor: String,
    },
    /// A stream cursor that cannot be resumed: load the history again.
    #[error("the stream cannot resume after this cursor ({reason}): load the history again")]
    Resync {
        /// Why.
        reason: Resync,
    },
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] askbus_store::StoreError),
}
