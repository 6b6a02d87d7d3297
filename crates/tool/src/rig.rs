//! The askbus tools for [rig](https://docs.rs/rig-core/0.44) agents (feature `rig`).
//!
//! rig runs tools through its own `Tool` trait: typed arguments in, model-visible output
//! out, and a per-call [`rig_core::tool::ToolContext`] for what the runtime knows and the
//! model must not see. [`RigTool`] puts an askbus tool behind that trait:
//! [`RigQuestionTool`] is [`QuestionTool`] (`question`), [`RigApprovalTool`] is
//! [`ApprovalTool`] (`request_approval`). A rig agent gets the same name, description,
//! schema and outcome texts as every other face of askbus; the wrapper only translates:
//!
//! - **Who is asking.** An askbus request belongs to a session and, ideally, to the tool
//!   call that made it (so a restarted agent can pick up its answer). A runtime that knows
//!   them puts an [`AskbusCall`] in rig's context; otherwise the session given to
//!   [`RigTool::new`] is used. (The approval tool reads only the session: the calls it
//!   proposes carry their own `tool_use_id`s, which is what a retry joins by.)
//! - **What the model reads.** The outcome text is the tool output: the answers, or a
//!   rejection, timeout or cancellation that tells the model not to invent an answer; for
//!   an approval, what the model may run (its call, the human's edited one, or nothing).
//!   Bad arguments become rig's `invalid_args` error whose model feedback is askbus's own
//!   message, so the model can correct the call.
//! - **Which language.** The wrapped tool's: wrap `QuestionTool::new(..).with_locale("vi")`
//!   and rig's agent reads the description and the outcome texts in Vietnamese.
//! - **What the runtime reads.** The structured outcome ([`ToolOutcome`] or
//!   [`ApprovalToolOutcome`]) is published in the context's result metadata
//!   (`context.result::<ToolOutcome>()`), never shown to the model.
//!
//! rig-core is pinned to 0.44, the newest release that builds on this workspace's Rust
//! (0.45 needs 1.97).
//!
//! ```
//! use askbus_bus::Bus;
//! use askbus_question::ApprovalService;
//! use askbus_tool::ApprovalTool;
//! use askbus_tool::rig::RigApprovalTool;
//!
//! let approvals = ApprovalService::new(Bus::new());
//! let tool = RigApprovalTool::new(ApprovalTool::new(approvals), "agent-session");
//! // Register `tool` with a rig agent like any other rig tool.
//! # drop(tool);
//! ```

use std::future::Future;
use std::sync::Arc;

use rig_core::tool::{ContextValue, Tool, ToolContext as RigContext, ToolExecutionError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    APPROVAL_TOOL_NAME, ApprovalTool, ApprovalToolOutcome, QUESTION_TOOL_NAME, QuestionTool,
    ToolContext, ToolDefinition, ToolError, ToolOutcome, ToolOutput,
};

/// The askbus session and tool call a rig tool call belongs to, set by the runtime in
/// rig's [`ToolContext`](rig_core::tool::ToolContext) (`context.insert(call)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskbusCall {
    /// The session the request is made in.
    pub session_id: String,
    /// The message and tool-call ids, when the runtime has them.
    pub message_id: Option<String>,
    /// The id of the model's tool call.
    pub call_id: Option<String>,
}

impl ContextValue for AskbusCall {
    const KEY: &'static str = "askbus.call";
}

impl ContextValue for ToolOutcome {
    const KEY: &'static str = "askbus.outcome";
}

impl ContextValue for ApprovalToolOutcome {
    const KEY: &'static str = "askbus.approval_outcome";
}

/// An askbus tool as a rig `Tool`; see [`RigQuestionTool`] and [`RigApprovalTool`].
#[derive(Clone)]
pub struct RigTool<T> {
    /// The askbus tool that runs each call.
    tool: T,
    /// The session of calls without an [`AskbusCall`] in their context.
    default_session: Arc<str>,
}

/// [`QuestionTool`] as a rig `Tool` named `question`; its result metadata is a
/// [`ToolOutcome`].
pub type RigQuestionTool = RigTool<QuestionTool>;

/// [`ApprovalTool`] as a rig `Tool` named `request_approval`; its result metadata is an
/// [`ApprovalToolOutcome`].
pub type RigApprovalTool = RigTool<ApprovalTool>;

/// An askbus tool that [`RigTool`] can put behind rig's `Tool`: [`QuestionTool`] and
/// [`ApprovalTool`].
///
/// Sealed: only askbus's tools implement it.
pub trait AskbusTool: sealed::Sealed + Clone + Send + Sync + 'static {
    /// The name the model calls.
    const NAME: &'static str;
    /// The structured outcome of a call, published as rig result metadata.
    type Outcome: ContextValue + Send;

    /// The tool's name, description and parameter schema.
    fn definition(&self) -> ToolDefinition;

    /// Runs one call: the tool's own `call`.
    fn call(
        &self,
        context: ToolContext,
        args: Value,
    ) -> impl Future<Output = Result<ToolOutput<Self::Outcome>, ToolError>> + Send;
}

mod sealed {
    /// Keeps [`AskbusTool`](super::AskbusTool) to askbus's tools.
    pub trait Sealed {}
}

/// Implements [`AskbusTool`] for `$tool` by forwarding to its inherent `definition` and
/// `call`.
macro_rules! askbus_tool {
    ($tool:ty, $name:expr, $outcome:ty) => {
        impl sealed::Sealed for $tool {}

        impl AskbusTool for $tool {
            const NAME: &'static str = $name;
            type Outcome = $outcome;

            fn definition(&self) -> ToolDefinition {
                <$tool>::definition(self)
            }

            fn call(
                &self,
                context: ToolContext,
                args: Value,
            ) -> impl Future<Output = Result<ToolOutput<$outcome>, ToolError>> + Send {
                <$tool>::call(self, context, args)
            }
        }
    };
}

askbus_tool!(QuestionTool, QUESTION_TOOL_NAME, ToolOutcome);
askbus_tool!(ApprovalTool, APPROVAL_TOOL_NAME, ApprovalToolOutcome);

impl<T: AskbusTool> RigTool<T> {
    /// Wraps `tool`; calls without an [`AskbusCall`] in their context are made in
    /// `default_session`.
    pub fn new(tool: T, default_session: impl Into<Arc<str>>) -> Self {
        Self {
            tool,
            default_session: default_session.into(),
        }
    }

    /// The askbus context of one call: the runtime's [`AskbusCall`], else the default
    /// session without a tool-call reference.
    fn askbus_context(&self, context: &RigContext) -> Result<ToolContext, ToolExecutionError> {
        let call = context.get::<AskbusCall>().map_err(|error| {
            ToolExecutionError::other(format!("the askbus call context is malformed: {error}"))
        })?;
        Ok(match call {
            None => ToolContext::new(Arc::clone(&self.default_session)),
            Some(AskbusCall {
                session_id,
                message_id,
                call_id,
            }) => {
                let context = ToolContext::new(session_id);
                match call_id {
                    Some(call_id) => context.with_call(message_id.unwrap_or_default(), call_id),
                    None => context,
                }
            }
        })
    }
}

impl<T: AskbusTool> Tool for RigTool<T> {
    const NAME: &'static str = T::NAME;
    type Args = Value;
    type Output = rig_core::tool::ToolOutput;
    type Error = ToolExecutionError;

    fn description(&self) -> String {
        self.tool.definition().description
    }

    fn parameters(&self) -> Value {
        self.tool.definition().parameters
    }

    async fn call(
        &self,
        context: &mut RigContext,
        args: Value,
    ) -> Result<Self::Output, Self::Error> {
        let askbus_context = self.askbus_context(context)?;
        let output = self
            .tool
            .call(askbus_context, args)
            .await
            .map_err(|error| match error {
                // Retryable: the same call may work once some requests are answered.
                ToolError::OverQuota { .. } => ToolExecutionError::rate_limited(error.to_string()),
                _ => ToolExecutionError::invalid_args(error.to_string()),
            })?;
        context.insert_result(output.outcome).map_err(|error| {
            ToolExecutionError::other(format!(
                "cannot record the outcome of `{}`: {error}",
                T::NAME
            ))
        })?;
        Ok(rig_core::tool::ToolOutput::text(output.text))
    }
}
