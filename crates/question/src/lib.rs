//! Ask a human structured questions and await the answers.
//!
//! An agent calls [`QuestionService::ask`]; the request is stored under an ascending
//! [`QuestionId`] and announced as `question.asked` on the [bus](askbus_bus::Bus). Any UI
//! shows it; whoever answers calls [`QuestionService::reply`] (or `reject`), and the
//! agent's future resolves. This crate knows nothing about HTTP or LLMs: the HTTP crate
//! maps its errors to status codes, the tool crate turns it into an LLM tool.
//!
//! The guarantees, in exact words:
//!
//! - **One outcome per request.** Replied, rejected, timed out or cancelled: whichever comes
//!   first wins, the rest get [`ReplyError::AlreadyResolved`], and the bus carries exactly one
//!   terminal event per request, after its `question.asked`.
//! - **No leak.** Dropping the future of [`ask`](QuestionService::ask) cancels the question
//!   (`question.cancelled`) and removes it from the pending map.
//! - **Timeouts without a task per request.** Every request may carry a timeout (default
//!   600 s; [`Timeout::Never`] waits forever). Deadlines live in one ordered index served by
//!   one timer task per service.
//! - **No lock is held across an `.await`.** The registry lock covers map insert/remove and
//!   the (non-blocking) event publish only.
//! - **Ids are not secrets.** They are ascending ULIDs; authorise with something else.
//! - **Bounded when asked to be.** With [`PendingLimits`]
//!   ([`RequestHub::with_pending_limits`]) a new request past a limit, per session, per
//!   account or in total, is refused ([`SubmitError::OverQuota`]) and changes nothing.
//!
//! Answers are validated against their questions (one per question; one selection unless
//! `multiple`; offered labels only unless `custom`); an empty answer, or
//! [`NO_PREFERENCE`] alone, skips a question.
//!
//! ```
//! use askbus_bus::Bus;
//! use askbus_question::{AskError, QuestionInfo, QuestionOption, QuestionService};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let questions = QuestionService::new(Bus::new());
//! let asked = questions
//!     .ask(
//!         "session-1",
//!         vec![QuestionInfo::new("Deploy now?", "Deploy", [QuestionOption::new("Yes", "ship it")])],
//!     )
//!     .timeout(Duration::from_secs(30));
//! // Nobody answers: after 30 s (of paused, auto-advancing test time) the ask times out.
//! assert_eq!(asked.await, Err(AskError::TimedOut));
//! # }
//! ```

mod approval;
mod approval_model;
mod args_schema;
mod ask;
mod follow;
mod follow_up;
mod grant;
mod hub;
mod hub_builder;
mod identity;
mod interrupt;
mod keys;
mod model;
mod notify;
mod quota;
mod record;
mod registry;
mod service;
mod session_index;
mod validate;

pub use approval::{
    ApprovalConfig, ApprovalError, ApprovalOutcome, ApprovalReplyError, ApprovalService,
    ApprovalSnapshot, MAX_QUORUM, PendingApproval, QuorumFloor,
};
pub use approval_model::{
    Action, ApprovalAsked, ApprovalCancelled, ApprovalDecided, ApprovalEscalated, ApprovalId,
    ApprovalKind, ApprovalReminded, ApprovalReplied, ApprovalReply, ApprovalRequest,
    ApprovalTimedOut, ApprovalVote, Decision, DecisionType, EditedAction, ReviewConfig,
};
pub use ask::{ApprovalAsk, Asked, QuestionAsk};
pub use follow_up::{FollowUp, OnTimeout};
pub use grant::{ApprovalGrantRevoked, ApprovalGranted, Grant, PATTERN_ARGUMENTS, pattern_of};
pub use hub::{
    CONFIRMATION_ACTION, PendingSessions, RequestHub, Resumed, SessionPending, SessionRejectError,
    SessionRejected,
};
pub use hub_builder::HubBuilder;
pub use identity::{Duties, Identity, NotAllowed, Role};
pub use interrupt::{
    CONFIRMATION_PHRASES, InputField, InputFieldType, InterruptState, PendingRequest, RequestId,
    ResumeError, ResumeInput, confirmation_phrase,
};
pub use notify::{Notice, Notifier};

pub use model::{
    Answer, Answers, NO_PREFERENCE, QuestionAsked, QuestionCancelled, QuestionEscalated,
    QuestionId, QuestionInfo, QuestionKind, QuestionOption, QuestionRejected, QuestionReminded,
    QuestionReplied, QuestionRequest, QuestionTimedOut, ToolRef, is_skipped,
};
pub use quota::{PendingLimits, QuotaExceeded};
pub use record::{Durable, DurableError, RecordedChange};
pub use registry::{Outcome, OutcomeKind, Snapshot, Vote, VoteId, VoteKind};
pub use service::{
    AskError, MAX_TIMEOUT, PendingQuestion, QuestionConfig, QuestionOutcome, QuestionService,
    QuestionSnapshot, ReplyError, SubmitError, Timeout,
};
pub use validate::{MAX_HEADER_CHARS, ValidationError};
