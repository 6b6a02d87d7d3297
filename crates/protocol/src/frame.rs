//! The stream frames: seeds 000, 001 and 004 on the wire.
//!
//! Every block is `content_block_start` (what it is), at most one `content_block_delta`
//! (its payload), `content_block_stop`; groups are bracketed by `group_start` /
//! `group_end`; an agent's turn by `message_start` / `message_stop` (seed 004), whose
//! `message_id` the group markers and request blocks of the turn carry too. `index` counts
//! blocks and group markers of the session from 0, so it never repeats within a session.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::{ActionRequest, Decision, ReviewConfig, ToolStatus};

/// One frame of a session's stream.
///
/// # Examples
///
/// ```
/// use askbus_protocol::Frame;
///
/// let end = Frame::GroupEnd {
///     index: 12,
///     summary: "Web search".into(),
///     message_id: Some("msg_1".into()),
/// };
/// assert_eq!(
///     serde_json::to_string(&end).unwrap(),
///     r#"{"type":"group_end","index":12,"summary":"Web search","message_id":"msg_1"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Frame {
    /// An agent's turn begins: its first output since the user spoke (or since its last
    /// final answer).
    MessageStart {
        /// The turn's id, `msg_{n}` for the session's `n`th turn.
        message_id: String,
    },
    /// The agent's turn ends: after its final answer, or when the user speaks again.
    MessageStop {
        /// The turn's id.
        message_id: String,
    },
    /// A block begins; says what it is.
    ContentBlockStart {
        /// The block's index in the session.
        index: u64,
        /// What the block is.
        content_block: ContentBlock,
        /// The turn of a request's block (seed 001's `message_id`); absent on other blocks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// The block's payload.
    ContentBlockDelta {
        /// The block's index.
        index: u64,
        /// The payload.
        delta: Delta,
    },
    /// The block is complete.
    ContentBlockStop {
        /// The block's index.
        index: u64,
    },
    /// A group of steps opens; blocks until `group_end` belong to it.
    GroupStart {
        /// The marker's index in the session.
        index: u64,
        /// The turn the group belongs to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// The open group closes.
    GroupEnd {
        /// The marker's index in the session.
        index: u64,
        /// The group's header: its last `tool_content_message`, or `Thinking`.
        summary: String,
        /// The turn the group belongs to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
}

/// What a block is, as announced by `content_block_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// A user message (askbus addition: the seeds stream only agent output, but a transcript
    /// must replay the user's turns too). Text in the delta.
    User,
    /// Agent text shown outside groups. Text in the delta.
    Text(TextFlags),
    /// The model's reasoning. Text in the delta.
    Thinking,
    /// A tool call.
    ToolUse(ToolUseBlock),
    /// A tool call's result.
    ToolResult(ToolResultBlock),
    /// A request for a human; its actions in the delta. An approval's start is seed 001's
    /// block, which carries its actions and review configs too (the seed's UIs read them
    /// there); a question's is seed 000's, the key alone.
    ApprovalRequest {
        /// The key to answer it with.
        approval_key: String,
        /// An approval's actions up for review (seed 001's `actions`); empty (absent on the
        /// wire) for a question.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        actions: Vec<ActionRequest>,
        /// One per action of an approval, in seed 001's shape; empty for a question.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        review_configs: Vec<StartReviewConfig>,
    },
    /// A request's outcome; answers, decisions or `cancelled` in the delta.
    ApprovalResult {
        /// The request's key.
        approval_key: String,
        /// The name of who decided it (or cancelled it), when the outcome says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answered_by: Option<String>,
    },
    /// A request timed out; every action counts as rejected. No delta.
    ApprovalTimeout {
        /// The request's key.
        approval_key: String,
    },
}

/// Seed 001's review config in an approval's `content_block_start`: the action at the same
/// position needs approval, and is rejected after `timeout` seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartReviewConfig {
    /// Always `true`: every action of a request is up for review.
    pub require_approval: bool,
    /// Seconds before every action is rejected; absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// Whether a text is an intermediate remark (`is_part`) or the final answer (`is_final`);
/// exactly one of them is `true` and only that one is on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextFlags {
    /// An intermediate remark (the seeds' `share_thought`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_part: bool,
    /// The turn's final answer.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_final: bool,
}

/// A `tool_use` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseBlock {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The call's arguments.
    pub input: Value,
    /// The label shown for the call.
    pub tool_content_message: String,
}

/// A `tool_result` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The id of the call this answers.
    pub tool_use_id: String,
    /// The tool's name.
    pub name: String,
    /// Whether the call succeeded.
    pub status: ToolStatus,
    /// The call's label (copied from its `tool_use`).
    pub tool_content_message: String,
    /// The result text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// A block's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Delta {
    /// Text of a user, text or thinking block.
    Content(ContentDelta),
    /// What an `approval_request` asks (seed 000's delta).
    ApprovalRequest(ApprovalRequestDelta),
    /// How an `approval_result` came out.
    ApprovalResult(ApprovalResultDelta),
}

/// Text deltas, tagged as in Anthropic's streaming API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentDelta {
    /// Text of a user or text block.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Text of a thinking block.
    ThinkingDelta {
        /// The reasoning.
        thinking: String,
    },
}

/// The body of an `approval_request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequestDelta {
    /// The actions up for review (one `ask_user_question` for a question).
    pub action_requests: Vec<ActionRequest>,
    /// What may be decided, per action.
    pub review_configs: Vec<ReviewConfig>,
    /// Seconds before the request times out; absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// The body of an `approval_result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ApprovalResultDelta {
    /// A question's answers keyed by question text (seed 000's reply shape).
    Answers {
        /// `{"<question>": "<answer>"}`.
        answers: BTreeMap<String, String>,
    },
    /// An approval's decisions, one per action; a rejected question is one `reject`.
    Decisions {
        /// The decisions.
        decisions: Vec<Decision>,
    },
    /// The request was cancelled: its asker went away (askbus addition).
    Cancelled {
        /// Always `true`.
        cancelled: bool,
    },
}

/// For `skip_serializing_if`: serde passes fields by reference.
pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

impl TextFlags {
    /// The flags of a final answer, or of an intermediate remark.
    pub fn new(is_final: bool) -> Self {
        Self {
            is_part: !is_final,
            is_final,
        }
    }
}
