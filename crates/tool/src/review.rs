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
//! the rest of each sentence is shared. The words, in each language, are in `texts.rs`.

use std::sync::Arc;

use askbus_question::{Action, ApprovalService, PendingApproval, ReviewConfig, Timeout};

use crate::texts::Text;
use crate::{Language, ToolError};

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
/// [`ApprovalAsk::submit`](askbus_question::ApprovalAsk::submit) does, in `locale` if
/// given.
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
    locale: Option<&Arc<str>>,
) -> Result<PendingApproval, ToolError> {
    let mut request = approvals
        .request(session_id, actions)
        .review(review_configs)
        .timeout(timeout);
    if let Some(locale) = locale {
        request = request.locale(Arc::clone(locale));
    }
    request
        .submit()
        .map_err(|refused| ToolError::not_submitted(tool, refused))
}

/// The text the model reads, in `language`, about a refused call to `tool`.
pub(crate) fn refusal_text(
    tool: &str,
    refusal: Refusal<'_>,
    runner: Runner,
    language: Language,
) -> String {
    let not_run = &Text::NotRun { runner }.in_language(language);
    let text = match refusal {
        Refusal::Decided { message } => Text::Refused {
            tool,
            message,
            not_run,
        },
        Refusal::TimedOut => Text::ApprovalTimedOut { tool, not_run },
        Refusal::Cancelled => Text::ApprovalCancelled { tool, not_run },
    };
    text.in_language(language)
}
