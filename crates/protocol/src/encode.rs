//! Records in, frames out: where groups open and close.

use std::collections::{HashMap, HashSet};

use crate::frame::{
    ApprovalRequestDelta, ApprovalResultDelta, ContentBlock, ContentDelta, Delta, Frame,
    StartReviewConfig, TextFlags, ToolResultBlock, ToolUseBlock,
};
use crate::record::{
    Decision, Outcome, QUESTION_TOOL, Record, Request, RequestEvent, RequestKind, Step,
    keyed_answers,
};

/// The header of a group that holds no tool call (only reasoning).
pub const THINKING_SUMMARY: &str = "Thinking";

/// Most tool calls awaiting their results an [`Encoder`] keeps the label (and the
/// `display_as_content` flag) of.
const OPEN_CALLS_KEPT: usize = 1_024;

/// Turns one session's records into stream frames, deciding where groups open and close.
///
/// The grouping policy, in exact words:
///
/// - **Content is never inside a group.** User messages, agent text and questions close the
///   open group (`group_end`) before their block.
/// - **Steps are always inside a group.** Thinking, tool calls, tool results and tool
///   approvals open a group (`group_start`) when none is open, so the first tool after a
///   question opens a new one.
/// - **An outcome is shown where its request is.** A question's `approval_result` or
///   `approval_timeout` closes the open group (a group opened after the question is not
///   the question's); a tool approval's follows it wherever the stream is, neither opening
///   nor closing a group.
/// - **`display_as_content`.** A `tool_use` step with `display_as_content: true` (seed
///   000's per-tool rule) is shown outside groups, as a question is, and so is its result.
/// - **Turns.** The agent's first output after the user spoke (or after its final answer)
///   opens a turn, `message_start` with `message_id` `msg_{n}` (the session's `n`th turn);
///   its final answer (`is_final`), or the user speaking again, closes it with
///   `message_stop`. The turn's group markers and request blocks carry its `message_id`.
///   Outcomes neither open nor close a turn.
/// - **The summary** sent with `group_end` is the label of the group's last tool call (its
///   `tool_content_message`, else the tool name made readable: `web_search` -> `Web search`),
///   else the first approved action's name made readable, else [`THINKING_SUMMARY`].
/// - `tool_use` and `tool_result` steps of [`QUESTION_TOOL`] are dropped: the question's
///   `approval_request` replaces them. An outcome for a request this encoder never saw
///   asked is dropped too.
///
/// # Examples
///
/// ```
/// use askbus_protocol::{Encoder, Frame, Record, Step};
///
/// let mut encoder = Encoder::new();
/// let turn = Some("msg_1".to_owned());
/// let frames = encoder.encode(&Record::Step(Step::Thinking { thinking: "Hmm".into() }));
/// assert_eq!(frames[0], Frame::MessageStart { message_id: "msg_1".into() });
/// assert_eq!(frames[1], Frame::GroupStart { index: 0, message_id: turn.clone() });
/// let frames = encoder.encode(&Record::Step(Step::Text { text: "Done".into(), is_final: true }));
/// assert_eq!(frames[0], Frame::GroupEnd { index: 2, summary: "Thinking".into(), message_id: turn });
/// assert_eq!(frames.last(), Some(&Frame::MessageStop { message_id: "msg_1".into() }));
/// ```
#[derive(Debug, Default)]
pub struct Encoder {
    /// The next block or marker index.
    next_index: u64,
    /// The open group, if any.
    group: Option<OpenGroup>,
    /// Labels of the tool calls seen, by call id, for their results.
    tool_labels: HashMap<String, String>,
    /// Requests asked and not yet resolved, by request id.
    requests: HashMap<String, AskedRequest>,
    /// The open turn's `message_id`, if a turn is open.
    turn: Option<String>,
    /// How many turns the session has had.
    turns: u64,
    /// Ids of `display_as_content` tool calls whose result has not come yet: their results
    /// are shown outside groups too.
    content_calls: HashSet<String>,
}

/// A group between its `group_start` and `group_end`.
#[derive(Debug, Default)]
struct OpenGroup {
    /// The header so far; `None` until a tool call or approval gives one.
    summary: Option<String>,
}

/// What the encoder remembers of a pending request to encode its outcome.
#[derive(Debug)]
struct AskedRequest {
    /// The key the outcome's block carries.
    approval_key: String,
    /// For a question, its question texts, to key answers by.
    questions: Vec<String>,
    /// Question (its outcome is shown outside groups) or tool approval.
    kind: RequestKind,
}

impl Encoder {
    /// An encoder for a new session: index 0, no group open.
    pub fn new() -> Self {
        Self::default()
    }

    /// The frames that show `record`, in order; empty for a dropped record.
    pub fn encode(&mut self, record: &Record) -> Vec<Frame> {
        let mut frames = Vec::new();
        match record {
            Record::Step(step) => self.step(step, &mut frames),
            Record::Request(RequestEvent::Asked(request)) => self.asked(request, &mut frames),
            Record::Request(RequestEvent::Resolved {
                request_id,
                outcome,
                answered_by,
            }) => self.resolved(request_id, outcome, answered_by.as_deref(), &mut frames),
        }
        frames
    }

    fn step(&mut self, step: &Step, frames: &mut Vec<Frame>) {
        match step {
            Step::User { .. } => {}
            Step::ToolUse { name, .. } | Step::ToolResult { name, .. } if name == QUESTION_TOOL => {
                return;
            }
            _ => self.open_turn(frames),
        }
        match step {
            Step::User { text } => {
                self.close_group(frames);
                self.close_turn(frames);
                let delta = ContentDelta::TextDelta { text: text.clone() };
                self.block(ContentBlock::User, Some(Delta::Content(delta)), frames);
            }
            Step::Text { text, is_final } => {
                self.close_group(frames);
                let delta = ContentDelta::TextDelta { text: text.clone() };
                let block = ContentBlock::Text(TextFlags::new(*is_final));
                self.block(block, Some(Delta::Content(delta)), frames);
                if *is_final {
                    self.close_turn(frames);
                }
            }
            Step::Thinking { thinking } => {
                self.open_group(frames);
                let delta = ContentDelta::ThinkingDelta {
                    thinking: thinking.clone(),
                };
                self.block(ContentBlock::Thinking, Some(Delta::Content(delta)), frames);
            }
            Step::ToolUse { name, .. } | Step::ToolResult { name, .. } if name == QUESTION_TOOL => {
            }
            Step::ToolUse {
                id,
                name,
                input,
                tool_content_message,
                display_as_content,
            } => {
                let label = tool_content_message
                    .clone()
                    .filter(|label| !label.trim().is_empty())
                    .unwrap_or_else(|| readable(name));
                // An encoder lives as long as a session's stream: calls whose results never
                // come must not grow it for as long. Past the bound, those kept go (their
                // results are labelled from their tool's name, and shown in groups).
                if self.tool_labels.len() >= OPEN_CALLS_KEPT {
                    self.tool_labels.clear();
                }
                self.tool_labels.insert(id.clone(), label.clone());
                if *display_as_content {
                    self.close_group(frames);
                    if self.content_calls.len() >= OPEN_CALLS_KEPT {
                        self.content_calls.clear();
                    }
                    self.content_calls.insert(id.clone());
                } else {
                    self.open_group(frames).summary = Some(label.clone());
                }
                let block = ContentBlock::ToolUse(ToolUseBlock {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                    tool_content_message: label,
                });
                self.block(block, None, frames);
            }
            Step::ToolResult {
                tool_use_id,
                name,
                status,
                content,
            } => {
                // A call has one result: its label is not needed after it.
                let label = self
                    .tool_labels
                    .remove(tool_use_id)
                    .unwrap_or_else(|| readable(name));
                if self.content_calls.remove(tool_use_id) {
                    self.close_group(frames);
                } else {
                    self.open_group(frames).summary = Some(label.clone());
                }
                let block = ContentBlock::ToolResult(ToolResultBlock {
                    tool_use_id: tool_use_id.clone(),
                    name: name.clone(),
                    status: *status,
                    tool_content_message: label,
                    content: content.clone(),
                });
                self.block(block, None, frames);
            }
        }
    }

    fn asked(&mut self, request: &Request, frames: &mut Vec<Frame>) {
        self.open_turn(frames);
        match request.kind {
            RequestKind::Question => self.close_group(frames),
            RequestKind::Approval => {
                let group = self.open_group(frames);
                if group.summary.is_none() {
                    group.summary = request
                        .action_requests
                        .first()
                        .map(|action| readable(&action.name));
                }
            }
        }
        self.requests.insert(
            request.request_id.clone(),
            AskedRequest {
                approval_key: request.approval_key.clone(),
                questions: request.questions.clone(),
                kind: request.kind,
            },
        );
        // Seed 001's start block lists an approval's actions; seed 000's, for a question,
        // holds the key alone.
        let (actions, review_configs) = match request.kind {
            RequestKind::Question => (Vec::new(), Vec::new()),
            RequestKind::Approval => (
                request.action_requests.clone(),
                request
                    .action_requests
                    .iter()
                    .map(|_| StartReviewConfig {
                        require_approval: true,
                        timeout: request.timeout_seconds,
                    })
                    .collect(),
            ),
        };
        let block = ContentBlock::ApprovalRequest {
            approval_key: request.approval_key.clone(),
            actions,
            review_configs,
        };
        let delta = Delta::ApprovalRequest(ApprovalRequestDelta {
            action_requests: request.action_requests.clone(),
            review_configs: request.review_configs.clone(),
            timeout_seconds: request.timeout_seconds,
        });
        let message_id = self.turn.clone();
        self.block_of_turn(block, Some(delta), message_id, frames);
    }

    fn resolved(
        &mut self,
        request_id: &str,
        outcome: &Outcome,
        answered_by: Option<&str>,
        frames: &mut Vec<Frame>,
    ) {
        let Some(asked) = self.requests.remove(request_id) else {
            return;
        };
        if asked.kind == RequestKind::Question {
            self.close_group(frames);
        }
        let approval_key = asked.approval_key;
        let result = match outcome {
            Outcome::Answered(answers) => ApprovalResultDelta::Answers {
                answers: keyed_answers(&asked.questions, answers),
            },
            Outcome::Decided(decisions) => ApprovalResultDelta::Decisions {
                decisions: decisions.clone(),
            },
            Outcome::Rejected(message) => ApprovalResultDelta::Decisions {
                decisions: vec![Decision::Reject {
                    message: message.clone(),
                }],
            },
            Outcome::Cancelled => ApprovalResultDelta::Cancelled { cancelled: true },
            Outcome::TimedOut => {
                self.block(ContentBlock::ApprovalTimeout { approval_key }, None, frames);
                return;
            }
        };
        let block = ContentBlock::ApprovalResult {
            approval_key,
            answered_by: answered_by.map(str::to_owned),
        };
        self.block(block, Some(Delta::ApprovalResult(result)), frames);
    }

    /// Emits one block: start, the delta if any, stop.
    fn block(&mut self, block: ContentBlock, delta: Option<Delta>, frames: &mut Vec<Frame>) {
        self.block_of_turn(block, delta, None, frames);
    }

    /// Emits one block whose start names the turn `message_id`.
    fn block_of_turn(
        &mut self,
        block: ContentBlock,
        delta: Option<Delta>,
        message_id: Option<String>,
        frames: &mut Vec<Frame>,
    ) {
        let index = self.take_index();
        frames.push(Frame::ContentBlockStart {
            index,
            content_block: block,
            message_id,
        });
        if let Some(delta) = delta {
            frames.push(Frame::ContentBlockDelta { index, delta });
        }
        frames.push(Frame::ContentBlockStop { index });
    }

    /// The open group, after emitting `group_start` if none was open.
    fn open_group(&mut self, frames: &mut Vec<Frame>) -> &mut OpenGroup {
        if self.group.is_none() {
            let index = self.take_index();
            let message_id = self.turn.clone();
            frames.push(Frame::GroupStart { index, message_id });
        }
        self.group.get_or_insert_with(OpenGroup::default)
    }

    /// Emits `group_end` if a group is open.
    fn close_group(&mut self, frames: &mut Vec<Frame>) {
        if let Some(group) = self.group.take() {
            let index = self.take_index();
            let summary = group.summary.unwrap_or_else(|| THINKING_SUMMARY.to_owned());
            let message_id = self.turn.clone();
            frames.push(Frame::GroupEnd {
                index,
                summary,
                message_id,
            });
        }
    }

    /// Emits `message_start` if no turn is open.
    fn open_turn(&mut self, frames: &mut Vec<Frame>) {
        if self.turn.is_none() {
            self.turns += 1;
            let message_id = format!("msg_{}", self.turns);
            frames.push(Frame::MessageStart {
                message_id: message_id.clone(),
            });
            self.turn = Some(message_id);
        }
    }

    /// Emits `message_stop` if a turn is open.
    fn close_turn(&mut self, frames: &mut Vec<Frame>) {
        if let Some(message_id) = self.turn.take() {
            frames.push(Frame::MessageStop { message_id });
        }
    }

    fn take_index(&mut self) -> u64 {
        let index = self.next_index;
        self.next_index += 1;
        index
    }
}

/// A tool name as a label: `web_search` -> `Web search`.
pub fn readable(name: &str) -> String {
    let spaced = name.replace(['_', '-'], " ");
    let mut chars = spaced.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::record::ToolStatus;

    fn tool_use(id: &str) -> Record {
        Record::Step(Step::ToolUse {
            id: id.to_owned(),
            name: "web_search".to_owned(),
            input: serde_json::json!({}),
            tool_content_message: Some(format!("Searching for {id}")),
            display_as_content: true,
        })
    }

    fn tool_result(id: &str) -> Record {
        Record::Step(Step::ToolResult {
            tool_use_id: id.to_owned(),
            name: "web_search".to_owned(),
            status: ToolStatus::Success,
            content: None,
        })
    }

    /// An encoder lives as long as a session's stream: what it keeps of tool calls is let
    /// go at their results, and bounded for calls whose results never come.
    #[test]
    fn what_an_encoder_keeps_of_tool_calls_is_bounded() {
        let mut encoder = Encoder::new();
        encoder.encode(&tool_use("call-1"));
        let frames = encoder.encode(&tool_result("call-1"));
        assert!(
            format!("{frames:?}").contains("Searching for call-1"),
            "a result is labelled as its call: {frames:?}"
        );
        assert!(encoder.tool_labels.is_empty() && encoder.content_calls.is_empty());

        for n in 0..3 * OPEN_CALLS_KEPT {
            encoder.encode(&tool_use(&format!("never-answered-{n}")));
        }
        assert!(encoder.tool_labels.len() <= OPEN_CALLS_KEPT);
        assert!(encoder.content_calls.len() <= OPEN_CALLS_KEPT);
    }
}
