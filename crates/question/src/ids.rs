//! The ids of requests and votes, and [`RequestId`], the id of a request of either kind.
//!
//! Every id is its kind's prefix plus an ascending ULID ([`askbus_bus::Id`]): ids sort in
//! creation order, and the two services of a [`RequestHub`](crate::RequestHub) draw theirs
//! from one generator, so "oldest" across kinds is exact. Ids are public and guessable,
//! never a secret. They live here, below every other module, because every layer names
//! them: the models, the registry, the errors, the interrupt state.

use std::fmt;
use std::str::FromStr;

use askbus_bus::{Id, IdKind};
use serde::Serialize;

/// The prefix marker of question ids (`que_`).
#[derive(Debug)]
pub enum QuestionIdPrefix {}

impl IdKind for QuestionIdPrefix {
    const PREFIX: &'static str = "que_";
}

/// The id of a question request: `que_` + an ascending ULID. Public, guessable, not a secret.
pub type QuestionId = Id<QuestionIdPrefix>;

/// The prefix marker of approval ids (`apr_`).
#[derive(Debug)]
pub enum ApprovalIdPrefix {}

impl IdKind for ApprovalIdPrefix {
    const PREFIX: &'static str = "apr_";
}

/// The id of an approval request: `apr_` + an ascending ULID. Public, guessable, not a
/// secret.
pub type ApprovalId = Id<ApprovalIdPrefix>;

/// The prefix marker of vote ids (`vot_`).
#[derive(Debug)]
pub enum VoteIdPrefix {}

impl IdKind for VoteIdPrefix {
    const PREFIX: &'static str = "vot_";
}

/// The id of a [`Vote`](crate::Vote): `vot_` + an ascending ULID, which tells when it was cast.
pub type VoteId = Id<VoteIdPrefix>;

/// The id of a request of either kind: `que_…` or `apr_…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// A question request.
    Question(QuestionId),
    /// An approval request.
    Approval(ApprovalId),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Question(id) => id.fmt(f),
            Self::Approval(id) => id.fmt(f),
        }
    }
}

impl FromStr for RequestId {
    type Err = askbus_bus::ParseIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.starts_with(ApprovalIdPrefix::PREFIX) {
            text.parse().map(Self::Approval)
        } else {
            text.parse().map(Self::Question)
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Question(id) => id.serialize(serializer),
            Self::Approval(id) => id.serialize(serializer),
        }
    }
}
