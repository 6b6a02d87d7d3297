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
//! # Modules
//!
//! Layered, bottom up; each file uses only files of the layers below it, so no files import
//! each other in a circle (the registry's `ticket` and `timer` are its own type's methods,
//! split by concern):
//!
//! 1. Data with no crate dependency: `ids` (every id, and [`RequestId`]), `identity`,
//!    `quota`, `notify`, `keys`, `session_index`, `args_schema`.
//! 2. The models: `model` (questions, [`OnTimeout`]), `approval_model` (approvals, grants),
//!    `outcome` ([`Outcome`], [`Snapshot`], [`Vote`]), `validate`, `timeout`, `follow_up`.
//! 3. `error` (every public error enum) and `durable` ([`Durable`]).
//! 4. `registry`: the one machinery both kinds of request run on (its files: the
//!    `RequestType` trait they plug in, the storage mode, the store record, the ticket,
//!    the timer, the id source).
//! 5. The services: `service` ([`QuestionService`]), `approval` ([`ApprovalService`]),
//!    `grant`; then `interrupt`, `recorded` and `follow` (a shared store's follower).
//! 6. `hub` ([`RequestHub`]), which owns one service of each kind.
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
mod durable;
mod error;
mod follow;
mod follow_up;
mod grant;
mod hub;
mod hub_builder;
mod identity;
mod ids;
mod interrupt;
mod keys;
mod model;
mod notify;
mod outcome;
mod quota;
mod recorded;
mod registry;
mod service;
mod session_index;
mod terms;
mod timeout;
mod validate;
pub mod visible;

pub use approval::{
    ApprovalConfig, ApprovalOutcome, ApprovalService, ApprovalSnapshot, MAX_QUORUM,
    PendingApproval, QuorumFloor,
};
pub use approval_model::{
    Action, ApprovalAsked, ApprovalCancelled, ApprovalDecided, ApprovalEscalated,
    ApprovalGrantRevoked, ApprovalGranted, ApprovalNotRecorded, ApprovalReminded, ApprovalReplied,
    ApprovalReply, ApprovalRequest, ApprovalTimedOut, ApprovalVote, Decision, DecisionType,
    EditedAction, Grant, ReviewConfig,
};
pub use approval_model::{PATTERN_ARGUMENTS, pattern_of};
pub use ask::{ApprovalAsk, Asked, QuestionAsk};
pub use durable::Durable;
pub use error::{
    ApprovalError, ApprovalReplyError, AskError, DurableError, ReplyError, ResumeError,
    SessionRejectError, SubmitError, Unrecorded,
};
pub use follow::FollowerStats;
pub use follow_up::{FollowUp, MAX_ESCALATE_TO};
pub use hub::{
    CONFIRMATION_ACTION, PendingSessions, RequestHub, Resumed, SessionPending, SessionRejected,
};
pub use hub_builder::HubBuilder;
pub use identity::{Duties, Identity, NotAllowed, Role};
pub use ids::{
    ApprovalId, ApprovalIdPrefix, QuestionId, QuestionIdPrefix, RequestId, VoteId, VoteIdPrefix,
};
pub use interrupt::{
    CONFIRMATION_PHRASES, InputField, InputFieldType, InterruptState, PendingRequest, ResumeInput,
    confirmation_phrase,
};
pub use model::{
    Answer, Answers, NO_PREFERENCE, OnTimeout, QuestionAsked, QuestionCancelled, QuestionEscalated,
    QuestionInfo, QuestionNotRecorded, QuestionOption, QuestionRejected, QuestionReminded,
    QuestionReplied, QuestionRequest, QuestionTimedOut, ToolRef, is_skipped,
};
pub use notify::{Notice, Notifier};
pub use outcome::{NeverRejected, Outcome, OutcomeKind, Snapshot, Vote};
pub use quota::{PendingLimits, QuotaExceeded};
pub use recorded::RecordedChange;
pub use service::{
    PendingQuestion, QuestionConfig, QuestionOutcome, QuestionService, QuestionSnapshot,
};
pub use timeout::{MAX_TIMEOUT, Timeout};
pub use validate::{MAX_HEADER_CHARS, MAX_ID_BYTES, ValidationError};
