//! What every tool call has in common, whichever tool is called: who calls
//! ([`ToolContext`]), what comes back ([`ToolOutput`]), and why a call could not be made
//! ([`ToolError`]).

use std::sync::Arc;

use askbus_question::{NotAllowed, QuotaExceeded, SubmitError, ToolRef};
use serde::Serialize;
use serde_json::Value;

/// Who is calling: the session, and the message and tool call the request belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    /// The session (conversation, run) the model is working in.
    pub session_id: Arc<str>,
    /// The assistant message holding the tool call, and the call's id, if known.
    pub tool: Option<ToolRef>,
}

/// What a call returns: text for the model, and the outcome as data for the runtime.
///
/// `Outcome` is the tool's own: [`ToolOutcome`](crate::ToolOutcome) for the question
/// tool, [`ApprovalToolOutcome`](crate::ApprovalToolOutcome) for the approval tool,
/// [`GuardOutcome`](crate::GuardOutcome) for a guarded tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolOutput<Outcome = crate::ToolOutcome> {
    /// The tool result to hand back to the model.
    pub text: String,
    /// The same outcome, structured.
    pub outcome: Outcome,
}

/// A call the tool could not make; the message is written for the model (to correct its
/// arguments, or to try again later).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not match the tool's schema or its rules.
    #[error("invalid arguments for the `{tool}` tool: {message}")]
    InvalidArguments {
        /// The tool that was called.
        tool: String,
        /// What was wrong, and what the tool expects instead.
        message: String,
    },
    /// The request or its answer could not be recorded: the store is down. Nothing was
    /// asked, or the answer must not be acted on (and a guarded tool did not run); the
    /// same call may work later.
    #[error(
        "the `{tool}` tool could not record the request or its answer, so nothing was decided; try again later: {message}"
    )]
    Unavailable {
        /// The tool that was called.
        tool: String,
        /// Why.
        message: String,
    },
    /// Too many requests already wait for a human (a limit of the server, of the session
    /// or of the caller). Nothing was asked (and a guarded tool did not run); the same call
    /// may work once some of them are answered.
    #[error(
        "the `{tool}` tool asked nothing, too many requests already wait for a human: {message}"
    )]
    OverQuota {
        /// The tool that was called.
        tool: String,
        /// Which limit, and what to do.
        message: String,
    },
    /// The identity the tool acts as may not make requests (a reviewer's credential).
    /// Nothing was asked (and a guarded tool did not run).
    #[error("the `{tool}` tool asked nothing: {message}")]
    NotAllowed {
        /// The tool that was called.
        tool: String,
        /// Why.
        message: String,
    },
}

impl ToolContext {
    /// A context with a session and no tool-call reference.
    pub fn new(session_id: impl Into<Arc<str>>) -> Self {
        Self {
            session_id: session_id.into(),
            tool: None,
        }
    }

    /// Records the message and tool call this request belongs to.
    #[must_use]
    pub fn with_call(mut self, message_id: impl Into<String>, call_id: impl Into<String>) -> Self {
        self.tool = Some(ToolRef {
            message_id: message_id.into(),
            call_id: call_id.into(),
        });
        self
    }
}

impl ToolError {
    /// Invalid arguments for `tool`, explained by `message`.
    pub(crate) fn invalid(tool: &str, message: impl Into<String>) -> Self {
        Self::InvalidArguments {
            tool: tool.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn unavailable(tool: &str, message: impl Into<String>) -> Self {
        Self::Unavailable {
            tool: tool.to_owned(),
            message: message.into(),
        }
    }

    /// A request to `tool` that passed a limit of pending requests.
    pub(crate) fn over_quota(tool: &str, exceeded: &QuotaExceeded) -> Self {
        Self::OverQuota {
            tool: tool.to_owned(),
            message: exceeded.to_string(),
        }
    }

    /// Why `submit` made no request for `tool`.
    pub(crate) fn not_submitted(tool: &str, refused: SubmitError) -> Self {
        match refused {
            SubmitError::Invalid(invalid) => Self::invalid(tool, invalid.to_string()),
            SubmitError::OverQuota(exceeded) => Self::over_quota(tool, &exceeded),
            SubmitError::NotAllowed(refused) => Self::not_allowed(tool, &refused),
        }
    }

    /// A request to `tool` its identity may not make.
    pub(crate) fn not_allowed(tool: &str, refused: &NotAllowed) -> Self {
        Self::NotAllowed {
            tool: tool.to_owned(),
            message: refused.to_string(),
        }
    }
}

/// Decodes `field` of the object `args` when a model sent it as a JSON-encoded string
/// instead of JSON (some models do), rather than failing the call. A string that is not
/// JSON stays as it is, for the parser to report.
pub(crate) fn decode_encoded_field(args: &mut Value, field: &str) {
    if let Some(value) = args.get_mut(field)
        && let Value::String(encoded) = value
        && let Ok(decoded) = serde_json::from_str::<Value>(encoded)
    {
        *value = decoded;
    }
}
