//! [`RecordedChange`]: a store's record of a request change, read back without a registry.
//!
//! Readers of a store's records (the protocol crate's transcripts, a session's history)
//! need the requests and outcomes the records stand for, not the machinery that keeps them
//! pending. This reads them with the same decoding the registry uses when it restores
//! (`registry::record`), so both read any record the same way.

use askbus_store::{ChangeKind, RequestKind, StoreError};

use crate::approval::{ApprovalOutcome, Approvals};
use crate::approval_model::ApprovalRequest;
use crate::identity::Identity;
use crate::ids::{ApprovalId, QuestionId};
use crate::model::QuestionRequest;
use crate::registry::record::{decided_by, outcome_from, parse_id, request_from};
use crate::service::{QuestionOutcome, Questions};

/// A request change of a store's record (a record of a session's history, an entry of the
/// change log) read back as the request, or the outcome, it stands for: what a reader of
/// the record needs to show it, without a registry.
///
/// # Examples
///
/// ```
/// use askbus_question::RecordedChange;
/// use askbus_store::{ChangeKind, OutcomeRecord, OutcomeState, RequestKind};
///
/// let ended = ChangeKind::Resolved {
///     kind: RequestKind::Question,
///     id: "que_01JZ6Q3V8R5M2K7D4T9WXYZABC".into(),
///     outcome: OutcomeRecord::new(OutcomeState::Replied, r#"[["Yes"]]"#, 1_700_000_000_000),
/// };
/// let Some(RecordedChange::QuestionEnded { outcome, .. }) = RecordedChange::read(&ended).unwrap()
/// else {
///     panic!("a question's outcome");
/// };
/// assert_eq!(outcome, askbus_question::Outcome::Replied(vec![vec!["Yes".to_owned()]].into()));
/// ```
#[derive(Debug, Clone)]
pub enum RecordedChange {
    /// A question was asked.
    QuestionAsked(QuestionRequest),
    /// A question ended.
    QuestionEnded {
        /// The question.
        id: QuestionId,
        /// How.
        outcome: QuestionOutcome,
        /// Who decided it, if the record says.
        decided_by: Option<Identity>,
    },
    /// An approval was asked.
    ApprovalAsked(ApprovalRequest),
    /// An approval ended.
    ApprovalEnded {
        /// The approval.
        id: ApprovalId,
        /// How.
        outcome: ApprovalOutcome,
        /// Who decided it, if the record says.
        decided_by: Option<Identity>,
    },
}

impl RecordedChange {
    /// What `change` stands for; `None` for a change that is no request's (an event).
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`] for a change whose request or outcome cannot be read back
    /// (or an unreadable change).
    pub fn read(change: &ChangeKind) -> Result<Option<Self>, StoreError> {
        Ok(Some(match change {
            ChangeKind::Inserted(record) => match record.kind {
                RequestKind::Question => Self::QuestionAsked(request_from::<Questions>(record)?),
                RequestKind::Approval => Self::ApprovalAsked(request_from::<Approvals>(record)?),
            },
            ChangeKind::Resolved { kind, id, outcome } => match kind {
                RequestKind::Question => Self::QuestionEnded {
                    id: parse_id(id)?,
                    outcome: outcome_from::<Questions>(id, outcome)?,
                    decided_by: decided_by(outcome),
                },
                RequestKind::Approval => Self::ApprovalEnded {
                    id: parse_id(id)?,
                    outcome: outcome_from::<Approvals>(id, outcome)?,
                    decided_by: decided_by(outcome),
                },
            },
            ChangeKind::Event(_) => return Ok(None),
            ChangeKind::Unreadable(why) => return Err(StoreError::Corrupt(why.clone())),
        }))
    }
}
