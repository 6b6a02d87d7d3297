//! Every error the crate's public calls return, in one place.
//!
//! One enum per question a caller asks, because each is matched by someone who acts on
//! it: the HTTP crate maps each variant to a status code, the tool crate to what the model
//! reads.
//!
//! - [`SubmitError`]: why a request was not made (either kind): 422, 409, 429, 403.
//! - [`AskError`] and [`ApprovalError`]: why the asker got no answer. Two enums, because
//!   the outcomes differ: a question can be rejected as a whole or take its asker's
//!   default answer; an approval is never rejected as a whole (a reply rejects actions) and
//!   never takes a default, and its timeout means "every action rejected".
//! - [`ReplyError`] and [`ApprovalReplyError`]: why a reply, reject or cancel was refused.
//!   Two enums only for their ids' types ([`QuestionId`], [`ApprovalId`]), which callers
//!   echo back in their own messages.
//! - [`ResumeError`]: why a session's interrupt could not be resumed.
//! - [`DurableError`]: why a change is not durable (the store failed, or over a shared
//!   store another instance decided first).
//! - [`SessionRejectError`]: why refusing a whole session stopped.
//!
//! Three errors stay beside the rules that make them, which build them field by field:
//! [`ValidationError`] (`validate`), [`NotAllowed`] (`identity`) and [`QuotaExceeded`]
//! (`quota`). Every enum here wraps them, so a caller matches them the same way whichever
//! call refused.

use std::fmt;
use std::sync::Arc;

use askbus_store::StoreError;

use crate::identity::NotAllowed;
use crate::ids::{ApprovalId, QuestionId, RequestId};
use crate::model::Answer;
use crate::outcome::OutcomeKind;
use crate::quota::QuotaExceeded;
use crate::validate::ValidationError;

/// Why a request was not made (`submit` of either service).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The request cannot be made as given (HTTP: 422), or its tool call already asked
    /// something else ([`ValidationError::conflicting_request`]; HTTP: 409).
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// Too many requests are pending (HTTP: 429); the same request may be made once some
    /// have ended. See [`PendingLimits`](crate::PendingLimits).
    #[error(transparent)]
    OverQuota(#[from] QuotaExceeded),
    /// The identity asking may not make requests (a reviewer; HTTP: 403).
    #[error(transparent)]
    NotAllowed(#[from] NotAllowed),
}

/// Why `ask` did not return answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The questions cannot be asked as given.
    #[error("invalid question: {0}")]
    Invalid(#[from] ValidationError),
    /// The question was not asked: too many requests are pending. Asking again once some
    /// have ended may work.
    #[error("the question was not asked: {0}")]
    OverQuota(QuotaExceeded),
    /// The question was not asked: this identity may not make requests.
    #[error("the question was not asked: {0}")]
    NotAllowed(NotAllowed),
    /// The human declined to answer.
    #[error("the human rejected the question{}", reason_suffix(.reason))]
    Rejected {
        /// The human's reason, if any.
        reason: Option<String>,
    },
    /// Nobody answered in time.
    #[error("the question timed out without an answer")]
    TimedOut,
    /// Nobody answered in time, and the default answer the asker gave for that case
    /// (`OnTimeout::Answer`) applies. Not a human's answer.
    #[error("nobody answered the question in time; the asker's default answer applies")]
    DefaultApplied {
        /// The default answer, one per question.
        answers: Vec<Answer>,
    },
    /// The question was cancelled (its session was cancelled, or the service shut down).
    #[error("the question was cancelled")]
    Cancelled,
    /// The store could not record the question (it is down), so nobody could see it: it
    /// was withdrawn (a future that joined it, by its tool call, sees it cancelled). Or it
    /// could not record the answer, which a restart would forget (the store still holds
    /// the question pending): there is no answer to act on. Either way asking again later
    /// may work; the same tool call then asks anew.
    #[error(
        "the store could not record the question or its answer, so there is none to act on: {0}"
    )]
    NotRecorded(#[source] Unrecorded),
}

/// Why a reply, reject or cancel was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// No such request is pending or remembered.
    #[error("question request {0} not found")]
    NotFound(QuestionId),
    /// The request already has its outcome.
    #[error("question request {id} was already {outcome}")]
    AlreadyResolved {
        /// The request.
        id: QuestionId,
        /// How it ended.
        outcome: OutcomeKind,
    },
    /// The answers do not fit the questions.
    #[error("invalid answer: {0}")]
    Invalid(#[from] ValidationError),
    /// The identity answering may not decide this request (HTTP: 403).
    #[error(transparent)]
    NotAllowed(#[from] NotAllowed),
    /// Waiting for the outcome: the store could not record it, so it must not be acted on
    /// (HTTP: 503). The store still holds the request pending.
    #[error(
        "the outcome of question request {id} could not be recorded, so it must not be acted on: {why}"
    )]
    NotRecorded {
        /// The request.
        id: QuestionId,
        /// The store's error.
        #[source]
        why: Unrecorded,
    },
}

fn reason_suffix(reason: &Option<String>) -> String {
    reason
        .as_ref()
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default()
}

/// Why `request_approval` did not return decisions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    /// The request cannot be made as given.
    #[error("invalid approval request: {0}")]
    Invalid(#[from] ValidationError),
    /// The request was not made: too many requests are pending. None may run; asking
    /// again once some have ended may work.
    #[error("the approval request was not made: {0}")]
    OverQuota(QuotaExceeded),
    /// The request was not made: this identity may not make requests. None may run.
    #[error("the approval request was not made: {0}")]
    NotAllowed(NotAllowed),
    /// Nobody decided in time: every action counts as rejected, none may run.
    #[error("the approval request timed out; every action is rejected")]
    TimedOut,
    /// The request was cancelled (its session was cancelled): none may run.
    #[error("the approval request was cancelled")]
    Cancelled,
    /// The store could not record the request (it is down), so no reviewer could see it:
    /// it was withdrawn (a future that joined it, by its tool call, sees it cancelled). Or
    /// it could not record the decisions, which a restart would forget (the store still
    /// holds the request pending). Either way none may run; asking again later may work,
    /// and the same tool call then asks anew.
    #[error(
        "the store could not record the approval request or its decisions, so none may run: {0}"
    )]
    NotRecorded(#[source] Unrecorded),
}

/// Why a reply or cancel was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalReplyError {
    /// No such request is pending or remembered.
    #[error("approval request {0} not found")]
    NotFound(ApprovalId),
    /// The request already has its outcome.
    #[error("approval request {id} was already {outcome}")]
    AlreadyResolved {
        /// The request.
        id: ApprovalId,
        /// How it ended.
        outcome: OutcomeKind,
    },
    /// The decisions do not fit the actions; the message names the action.
    #[error("invalid decisions: {0}")]
    Invalid(#[from] ValidationError),
    /// The identity deciding may not decide this request (HTTP: 403).
    #[error(transparent)]
    NotAllowed(#[from] NotAllowed),
    /// Waiting for the outcome: the store could not record it, so none may run (HTTP:
    /// 503). The store still holds the request pending.
    #[error("the decisions on approval request {id} could not be recorded, so none may run: {why}")]
    NotRecorded {
        /// The request.
        id: ApprovalId,
        /// The store's error.
        #[source]
        why: Unrecorded,
    },
}

/// Why a session could not be resumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    /// No pending or remembered request belongs to this session.
    #[error("session {0:?} has no requests")]
    UnknownSession(String),
    /// The session is known but nothing of it is pending (any more).
    #[error("session {0:?} has no pending request to resume")]
    NothingPending(String),
    /// No checkpoint was given, and the session has had more than one request pending
    /// (now, or since it was last idle): which one the answer is for must be named.
    #[error(
        "session {0:?} has had more than one request pending: name the one this answers with `checkpoint_id` (the interrupt state gives the oldest's)"
    )]
    Ambiguous(String),
    /// No checkpoint was given, and the last of the session's requests to end before the
    /// pending one ended without a human's decision (it timed out, its asker cancelled it,
    /// a grant approved it): a screen may still show that one, and the answer would decide
    /// another its sender never saw. The request must be named.
    #[error(
        "{ended} of session {session:?} ended without a human's decision ({outcome}) and {pending} is pending in its place: name the request this answers with `checkpoint_id` (the interrupt state gives it)"
    )]
    Replaced {
        /// The session.
        session: String,
        /// The request that ended.
        ended: RequestId,
        /// How it ended.
        outcome: OutcomeKind,
        /// The request pending now.
        pending: RequestId,
    },
    /// The checkpoint names no request of this session that is pending or remembered.
    #[error("{0} is no request of this session")]
    UnknownCheckpoint(RequestId),
    /// The input does not fit the kind of request pending.
    #[error("{0}")]
    WrongInput(String),
    /// Answering the question failed.
    #[error(transparent)]
    Question(#[from] ReplyError),
    /// Deciding the approval failed.
    #[error(transparent)]
    Approval(#[from] ApprovalReplyError),
}

/// Why a change is not durable.
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// Another instance sharing the store resolved the request first; this change was not
    /// made (an HTTP client hears `409`, as for a request already resolved here).
    #[error("request {request} was already {outcome}")]
    AlreadyResolved {
        /// The request.
        request: RequestId,
        /// How it ended.
        outcome: OutcomeKind,
    },
    /// The store could not record the change.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A vote was recorded but does not count: over a shared store, another vote of the
    /// same reviewer, cast through another instance, was counted first (an HTTP client
    /// hears `403`).
    #[error("the vote does not count: {0}")]
    NotCounted(NotAllowed),
    /// Over a shared store that lost the request (an orphan), a decision through an
    /// instance that does not hold its asker: only the instance it was asked on can decide
    /// it, or its timeout (an HTTP client hears `421`). It stays pending.
    #[error(
        "request {request} is unknown to the shared store (it lost it): only the server it was asked on can decide it"
    )]
    NotHere {
        /// The request.
        request: RequestId,
    },
}

/// Why [`RequestHub::reject_session`](crate::RequestHub::reject_session) did not refuse everything.
#[derive(Debug, thiserror::Error)]
pub enum SessionRejectError {
    /// The identity may not decide a request of the session (HTTP: 403).
    #[error(transparent)]
    NotAllowed(#[from] NotAllowed),
    /// The store could not record a refusal (HTTP: 503).
    #[error(transparent)]
    Durable(#[from] DurableError),
}

/// The store's error behind [`AskError::NotRecorded`] and [`ApprovalError::NotRecorded`],
/// kept whole as their [source](std::error::Error::source) (the [`StoreError`] inside
/// says what failed). Shared, so those errors stay `Clone`; two are equal when they say
/// the same, as the message they replaced compared.
#[derive(Debug, Clone)]
pub struct Unrecorded(Arc<DurableError>);

impl Unrecorded {
    /// The error that kept the request from being recorded.
    pub fn error(&self) -> &DurableError {
        &self.0
    }
}

impl From<DurableError> for Unrecorded {
    fn from(error: DurableError) -> Self {
        Self(Arc::new(error))
    }
}

impl fmt::Display for Unrecorded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Unrecorded {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

impl PartialEq for Unrecorded {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for Unrecorded {}
