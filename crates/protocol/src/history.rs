//! The history: seed 004's flat messages, and the cursor the stream resumes after.
//!
//! Each message holds one kind of content (text, thinking, tool calls, a tool result or an
//! approval request) and a `display_type` that places it: `content` (outside groups),
//! `group_start` (with the group's `summary` once the group is closed), `group_item`,
//! `group_end` (with `summary`). A closed group of one message is that message as
//! `group_start` with `"group_closed": true`; an open group (the agent is still working) has
//! a `group_start` without `summary` and no `group_end` yet. Requests are assistant messages
//! whose content is an `approval_request` part carrying `isResolved` and, once resolved,
//! `submittedAnswers` (questions) or `decisions` (approvals), or `timedOut` / `cancelled`.
//! `tool_use` / `tool_result` of `ask_user_question` never appear: the question's part
//! replaces them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::frame::{TextFlags, is_false};
use crate::record::{ActionRequest, Decision, ReviewConfig, ToolStatus};
use crate::transcript::FrameCursor;

/// A session's history: its messages, and the cursor to resume the stream after.
///
/// Replaying the stream after [`last_event_id`](History::last_event_id) continues exactly
/// where these messages end: no frame missing, none repeated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// The flat messages, oldest first.
    pub messages: Vec<HistoryMessage>,
    /// Everything up to this cursor is in `messages`; the stream resumes after it. On the
    /// wire a string (`h12-57`), which clients treat as opaque.
    pub last_event_id: FrameCursor,
    /// Seed 004's `agent_status`: `running` while the session waits on a human or its
    /// agent has not given its final answer since the user last spoke; `idle` once it has
    /// (or nothing is recorded), when a client needs no stream.
    #[serde(default)]
    pub agent_status: AgentStatus,
    /// Seed 004's `pending_approval`: the oldest request of the session still waiting for
    /// a human, as its history part (also in `messages`); absent when none waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_approval: Option<RequestPart>,
}

/// Whether a session's agent is still at work (seed 004's `agent_status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Working, or waiting for a human: the stream has more to come.
    Running,
    /// The agent gave its final answer and nothing waits: the history is complete.
    #[default]
    Idle,
}

/// One flat history message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum HistoryMessage {
    /// A user message.
    User {
        /// One text part.
        content: Vec<Part>,
        /// Where it is shown.
        #[serde(flatten)]
        display: Display,
    },
    /// Agent output: one text, thinking or approval part, or tool calls.
    Assistant {
        /// `chat` for the first assistant message after a user message, else `step`.
        message_type: MessageType,
        /// The parts; empty for a tool-call message.
        content: Vec<Part>,
        /// Consecutive tool calls of one group.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// Where it is shown.
        #[serde(flatten)]
        display: Display,
    },
    /// A tool call's result.
    Tool {
        /// The call it answers.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// Whether it succeeded.
        status: ToolStatus,
        /// The call's label.
        tool_content_message: String,
        /// The result text, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Where it is shown.
        #[serde(flatten)]
        display: Display,
    },
}

/// Where a message is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Display {
    /// Its role in the grouping.
    pub display_type: DisplayType,
    /// The group's header, on the `group_start` and `group_end` of a closed group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// On a `group_start`: the group is closed and this is its only message.
    #[serde(default, skip_serializing_if = "is_false")]
    pub group_closed: bool,
}

/// A message's role in the grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DisplayType {
    /// Shown on its own, outside groups.
    Content,
    /// Opens a group.
    GroupStart,
    /// Inside a group.
    GroupItem,
    /// Closes a group.
    GroupEnd,
}

/// Seed 004's `message_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    /// The first agent message of a turn (UIs show the agent's header on it).
    Chat,
    /// Every later agent message of the turn.
    Step,
}

/// A tool call in an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The call's arguments.
    pub args: Value,
    /// The label shown for the call.
    pub tool_content_message: String,
}

/// A part of a message's `content`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text; flags absent on a user message.
    Text {
        /// The text.
        text: String,
        /// `is_part` or `is_final`.
        #[serde(flatten)]
        flags: TextFlags,
    },
    /// Reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// A request for a human and, once resolved, its outcome.
    ApprovalRequest(RequestPart),
}

/// Seed 000's history block of a request (camelCase names, as the seed has them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestPart {
    /// The key to answer it with while pending.
    pub approval_key: String,
    /// Whether it has an outcome.
    #[serde(rename = "isResolved")]
    pub is_resolved: bool,
    /// The actions reviewed; a replied question's `args` also hold its `answers`.
    #[serde(rename = "actionRequests")]
    pub action_requests: Vec<ActionRequest>,
    /// What may be decided, per action.
    #[serde(rename = "reviewConfigs")]
    pub review_configs: Vec<ReviewConfig>,
    /// Seconds the request waits before timing out; absent: forever.
    #[serde(
        rename = "timeoutSeconds",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_seconds: Option<u64>,
    /// A replied question's answers, keyed by question text.
    #[serde(
        rename = "submittedAnswers",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub submitted_answers: Option<BTreeMap<String, String>>,
    /// A decided approval's decisions (or a rejected question's `reject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Vec<Decision>>,
    /// Nobody answered in time.
    #[serde(rename = "timedOut", default, skip_serializing_if = "is_false")]
    pub timed_out: bool,
    /// The asker went away.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cancelled: bool,
    /// The name of who decided it, once resolved, when the outcome says.
    #[serde(
        rename = "answeredBy",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub answered_by: Option<String>,
}

impl HistoryMessage {
    /// Where the message is shown.
    pub fn display(&self) -> &Display {
        match self {
            Self::User { display, .. }
            | Self::Assistant { display, .. }
            | Self::Tool { display, .. } => display,
        }
    }

    pub(crate) fn display_mut(&mut self) -> &mut Display {
        match self {
            Self::User { display, .. }
            | Self::Assistant { display, .. }
            | Self::Tool { display, .. } => display,
        }
    }
}

impl Display {
    /// `content`: outside groups.
    pub fn content() -> Self {
        Self {
            display_type: DisplayType::Content,
            summary: None,
            group_closed: false,
        }
    }
}
