//! How a request ends, and what a reader sees of it: [`Outcome`], [`OutcomeKind`],
//! [`Snapshot`] and the [`Vote`]s of a request that needs a quorum.
//!
//! Every request reaches exactly one outcome; the registry decides which (the first to
//! resolve it wins, or over a shared store the store's verdict). These types are plain data
//! below the registry, so the services, the errors and the readers of a store's records
//! name them without depending on the machinery that decides.

use std::sync::Arc;

use crate::identity::Identity;
use crate::ids::VoteId;

/// The single terminal outcome of a request.
///
/// `Rejection` is what a rejection of the request as a whole holds: the human's reason for
/// a question; for an approval [`NeverRejected`], which no value has, because an approval is
/// never rejected as a whole (a reply rejects its actions, and refusing a whole session
/// replies so): the type says it cannot happen, so no code has to map it to something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<R, Rejection = Option<String>> {
    /// A human answered.
    Replied(R),
    /// A human refused to answer, optionally saying why (questions only).
    Rejected {
        /// The human's reason, if they gave one.
        reason: Rejection,
    },
    /// Nobody answered before the request's deadline.
    TimedOut,
    /// Nobody answered before the request's deadline, and the default answer the asker
    /// gave for that case applies (questions' `on_timeout: answer`). Not a human's answer:
    /// its kind is [`OutcomeKind::TimedOut`], and nothing consequential may take it for one.
    Defaulted(R),
    /// The asker went away (dropped its future) or the session was cancelled.
    Cancelled,
}

/// Which terminal outcome a request reached, without its data. Its JSON is its wire name
/// ([`as_str`](Self::as_str)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// See [`Outcome::Replied`].
    Replied,
    /// See [`Outcome::Rejected`].
    Rejected,
    /// See [`Outcome::TimedOut`].
    TimedOut,
    /// See [`Outcome::Cancelled`].
    Cancelled,
}

/// What an approval's [`Outcome::Rejected`] would hold: nothing can, as no approval is
/// rejected as a whole (see [`Outcome`]). A match on an approval's outcome needs no arm
/// for it, or `match *reason {}` where it is borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum NeverRejected {}

/// A request with its outcome, `None` while it is still pending.
#[derive(Debug, Clone)]
pub struct Snapshot<Request, Reply, Rejection = Option<String>> {
    /// The request as it was asked.
    pub request: Arc<Request>,
    /// How it ended, or `None` while it waits for a human.
    pub outcome: Option<Outcome<Reply, Rejection>>,
    /// Who decided the outcome (or cancelled the request); `None` while pending, for a
    /// timeout, and for outcomes recorded before identities were.
    pub decided_by: Option<Identity>,
    /// While a request that needs a quorum is pending, the votes it has so far, in the
    /// order they came; empty otherwise (a resolved request's reply lists its votes).
    pub votes: Vec<Vote<Reply>>,
}

/// One identity's reply to a pending request that needs several (a quorum: see
/// [`ReviewConfig::quorum`](crate::ReviewConfig::quorum)).
#[derive(Debug, Clone, PartialEq)]
pub struct Vote<Reply> {
    /// The vote's own id: ascending, and when it was cast.
    pub id: VoteId,
    /// Who replied.
    pub by: Identity,
    /// Their reply, validated as any reply is.
    pub reply: Reply,
}

impl<R, Rejection> Outcome<R, Rejection> {
    /// Whether this outcome is someone's decision about the request (replied, rejected),
    /// which only an identity allowed to decide it may make; a timeout or a cancel is not.
    pub fn is_decision(&self) -> bool {
        matches!(self, Self::Replied(_) | Self::Rejected { .. })
    }

    /// Which outcome this is.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Self::Replied(_) => OutcomeKind::Replied,
            Self::Rejected { .. } => OutcomeKind::Rejected,
            Self::TimedOut | Self::Defaulted(_) => OutcomeKind::TimedOut,
            Self::Cancelled => OutcomeKind::Cancelled,
        }
    }
}

impl OutcomeKind {
    /// The lower-case wire name: `replied`, `rejected`, `timed_out`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replied => "replied",
            Self::Rejected => "rejected",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for OutcomeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
