//! The askbus tools for LLMs: the model decides when to ask the user, and what to put
//! before them for approval.
//!
//! [`QuestionTool`] offers [`QuestionService::ask`](askbus_question::QuestionService::ask)
//! to a model. Its [`ToolDefinition`] (name, a description telling the model when to ask,
//! and a JSON Schema generated from [`QuestionToolArgs`]) renders as an OpenAI, Anthropic
//! or MCP tool. [`QuestionTool::call`] takes the model's arguments, asks, waits, and returns
//! text for the model plus the outcome as data.
//!
//! This is the only askbus crate that knows LLM tool formats. Its policy toward the model:
//!
//! - Bad arguments produce a [`ToolError`] whose message says what was wrong and what shape
//!   is expected, so the model can retry; they never panic.
//! - Every outcome has its own text. An answer reads
//!   `User has answered your questions: "Q1"="A1", "Q2"="A2, B2". You can now continue
//!   with the user's answers in mind.` (a skipped question reads `"Q"="Unanswered"`).
//!   Rejection, timeout and cancellation each say what happened and that the model must
//!   **not invent an answer**.
//! - Every text the model reads is in English, Vietnamese or Chinese: a tool made
//!   `.with_locale("vi")` asks in that language (its requests carry the locale, its
//!   description is translated), and each outcome text speaks its request's `locale`
//!   ([`Language`]; the table and what stays English are in `texts.rs`).
//! - The model cannot turn off free-text answers: `custom` is not in the schema and is
//!   always on.
//!
//! Tool calls can be put behind a human, in two ways:
//!
//! - [`ApprovalGuard`] wraps a tool of the runtime's own: it asks for the approval of each
//!   call ([`ApprovalService`](askbus_question::ApprovalService)) and runs it, runs it with
//!   the human's edited arguments (saying so to the model), or returns the human's refusal
//!   without running it.
//! - [`ApprovalTool`] (`request_approval`) is offered to the model itself, for tools askbus
//!   cannot run (an MCP client's, another process's): the model lists the calls it wants to
//!   make and reads back what it may run. Its definition renders like the question tool's.
//!
//! Both word a refusal the same way, and every refusal, timeout and cancellation tells the
//! model that the call must not run. Both let a call id that already asked join that
//! review, but only a retry of the same calls: a decision is never taken for calls the
//! human did not see.
//!
//! Agent frameworks: with the `rig` feature, `rig::RigQuestionTool` and
//! `rig::RigApprovalTool` are the question and approval tools as `rig-core` 0.44 `Tool`s.

mod approval_tool;
mod call;
mod definition;
mod guard;
mod question_tool;
mod review;
#[cfg(feature = "rig")]
pub mod rig;
mod texts;

pub use approval_tool::{
    ApprovalCall, ApprovalTool, ApprovalToolArgs, ApprovalToolOutcome, ApprovalToolOutput,
    ToolAction,
};
pub use call::{ToolContext, ToolError, ToolOutput};
pub use definition::ToolDefinition;
pub use guard::{ApprovalGuard, GuardOutcome, GuardedOutput, GuardedTool};
pub use question_tool::{
    AnsweredQuestion, QuestionCall, QuestionTool, QuestionToolArgs, ToolOutcome, ToolQuestion,
};
pub use texts::{
    APPROVAL_TOOL_DESCRIPTION, APPROVAL_TOOL_NAME, Language, QUESTION_TOOL_DESCRIPTION,
    QUESTION_TOOL_NAME,
};
