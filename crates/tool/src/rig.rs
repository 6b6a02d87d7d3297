//! The question tool for [rig](https://docs.rs/rig-core/0.44) agents (feature `rig`).
//!
//! rig runs tools through its own `Tool` trait: typed arguments in, model-visible output
//! out, and a per-call [`rig_core::tool::ToolContext`] for what the runtime knows and the
//! model must not see. [`RigQuestionTool`] is [`QuestionTool`] behind that trait, so a rig
//! agent gets the same name, description, schema and outcome texts as every other face of
//! askbus; the wrapper only translates:
//!
//! - **Who is asking.** An askbus question belongs to a session and, ideally, to the tool
//!   call that asked it (so a restarted agent can pick up its answer). A runtime that knows
//!   them puts an [`AskbusCall`] in rig's context; otherwise the session given to
//!   [`RigQuestionTool::new`] is used.
//! - **What the model reads.** The outcome text (answers, or a rejection, timeout or
//!   cancellation that tells the model not to invent an answer) is the tool output. Bad
//!   arguments become rig's `invalid_args` error whose model feedback is askbus's own
//!   message, so the model can correct the call.
//! - **What the runtime reads.** The structured [`ToolOutcome`] is published in the
//!   context's result metadata (`context.result::<ToolOutcome>()`), never shown to the
//!   model.
//!
//! rig-core is pinned to 0.44, the newest release that builds on this workspace's Rust
//! (0.45 needs 1.97).

use std::sync::Arc;

use rig_core::tool::{ContextValue, Tool, ToolContext as RigContext, ToolExecutionError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    QUESTION_TOOL_DESCRIPTION, QUESTION_TOOL_NAME, QuestionTool, ToolContext, ToolOutcome,
};

/// The askbus session and tool call a rig tool call belongs to, set by the runtime in
/// rig's [`ToolContext`](rig_core::tool::ToolContext) (`context.insert(call)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskbusCall {
    /// The session the question is asked in.
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

/// [`QuestionTool`] as a rig `Tool` named `question`.
#[derive(Clone)]
pub struct RigQuestionTool {
    tool: QuestionTool,
    default_session: Arc<str>,
}

impl RigQuestionTool {
    /// Wraps `tool`; calls without an [`AskbusCall`] in their context ask in
    /// `default_session`.
    pub fn new(tool: QuestionTool, default_session: impl Into<Arc<str>>) -> Self {
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

impl Tool for RigQuestionTool {
    const NAME: &'static str = QUESTION_TOOL_NAME;
    type Args = Value;
    type Output = rig_core::tool::ToolOutput;
    type Error = ToolExecutionError;

    fn description(&self) -> String {
        QUESTION_TOOL_DESCRIPTION.to_owned()
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
            .map_err(|invalid| ToolExecutionError::invalid_args(invalid.to_string()))?;
        context.insert_result(output.outcome).map_err(|error| {
            ToolExecutionError::other(format!("cannot record the question outcome: {error}"))
        })?;
        Ok(rig_core::tool::ToolOutput::text(output.text))
    }
}
