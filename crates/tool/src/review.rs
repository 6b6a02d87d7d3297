//! What the approval guard and the approval tool share about a review: how it is requested,
//! and how a refused call reads to the model.
//!
//! **Requesting.** [`submit_review`] makes the request. Its first action's `tool_use_id`
//! joins a request that id already made in the session, so a retried call gets the one
//! review instead of a second prompt; the approval service joins **only a retry of the
//! same calls** and refuses a reused id with other calls (the rule is kept there, for
//! every way in), which becomes a [`ToolError`] naming the earlier request.
//!
//! **Refusals.** One wording for both, so a human's "no" is reported the same wherever it
//! came from. The two differ only in who would run the call. The guard runs an approved
//! call itself, so a refused one "did not run"; with the approval tool the model runs what
//! was approved, so a refused call is one it must "not run". [`Runner`] picks that clause;
//! the rest of each sentence is shared.

use std::sync::Arc;

use askbus_question::{Action, ApprovalService, PendingApproval, ReviewConfig, Timeout};

use crate::ToolError;

/// Who runs a call once a human approved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runner {
    /// The approval guard, which runs the tool it wraps.
    Guard,
    /// The model, which asked the approval tool first.
    Model,
}

/// Why a reviewed call must not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal<'a> {
    /// A human decided against it (`reject` or `respond`), with their message if any.
    Decided {
        /// What the human said.
        message: Option<&'a str>,
    },
    /// Nobody decided before the request's deadline.
    TimedOut,
    /// The request was cancelled (its session was stopped).
    Cancelled,
}

/// Requests the review of `actions` in `session_id` for a call of `tool`, as
/// [`ApprovalAsk::submit`](askbus_question::ApprovalAsk::submit) does.
///
/// # Errors
///
/// [`ToolError::InvalidArguments`] for `tool` when the request cannot be made, or when the
/// first action's `tool_use_id` names a request of other calls in this session; that
/// request is left as it was, and no request is made. [`ToolError::OverQuota`] when too
/// many requests are pending.
pub(crate) fn submit_review(
    approvals: &ApprovalService,
    tool: &str,
    session_id: Arc<str>,
    actions: Vec<Action>,
    review_configs: Vec<ReviewConfig>,
    timeout: Timeout,
) -> Result<PendingApproval, ToolError> {
    approvals
        .request(session_id, actions)
        .review(review_configs)
        .timeout(timeout)
        .submit()
        .map_err(|refused| ToolError::not_submitted(tool, refused))
}

/// The text the model reads about a refused call to `tool`.
pub(crate) fn refusal_text(tool: &str, refusal: Refusal<'_>, runner: Runner) -> String {
    let not_run = match runner {
        Runner::Guard => "it did not run",
        Runner::Model => "do not run it",
    };
    match refusal {
        Refusal::Decided {
            message: Some(message),
        } => format!("A human reviewed this call to `{tool}`; {not_run}. Their answer: {message}"),
        Refusal::Decided { message: None } => format!(
            "A human rejected this call to `{tool}`; {not_run}. Do not retry it unchanged: continue without it, or ask the user what they want."
        ),
        Refusal::TimedOut => format!(
            "Nobody approved this call to `{tool}` in time, so {not_run}. Do not report it as done."
        ),
        Refusal::Cancelled => format!(
            "The approval of this call to `{tool}` was cancelled (the session was stopped); {not_run}."
        ),
    }
}
