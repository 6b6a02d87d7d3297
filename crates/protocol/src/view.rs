//! What a client makes of frames and of history: one flat list of blocks.
//!
//! Seed 004's reconnect recipe is "convert the history to blocks, then append the stream's
//! blocks"; [`ClientView`] is that conversion, in Rust. It is also how this crate builds the
//! history: a session's frames are folded into blocks, and the blocks are rendered as flat
//! messages, so the history can never say something the stream did not.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::frame::{
    ApprovalResultDelta, ContentBlock, ContentDelta, Delta, Frame, TextFlags, ToolResultBlock,
    ToolUseBlock,
};
use crate::history::{
    AgentStatus, Display, DisplayType, History, HistoryMessage, MessageType, Part, RequestPart,
    ToolCall,
};
use crate::record::{ActionRequest, Decision, QUESTION_TOOL, ReviewConfig};
use crate::transcript::FrameCursor;

/// One thing a client shows, or a group boundary.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A group opens.
    GroupStart,
    /// The open group closes, with its header.
    GroupEnd {
        /// The group's header.
        summary: String,
    },
    /// A user message.
    User {
        /// Its text.
        text: String,
    },
    /// Agent text.
    Text {
        /// The text.
        text: String,
        /// Whether it is the final answer.
        is_final: bool,
    },
    /// Reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// A tool call.
    ToolUse(ToolUseBlock),
    /// A tool call's result.
    ToolResult(ToolResultBlock),
    /// A request for a human, with its outcome once known.
    Request(RequestBlock),
}

/// A request as a client shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestBlock {
    /// The key to answer it with.
    pub approval_key: String,
    /// The actions up for review.
    pub action_requests: Vec<ActionRequest>,
    /// What may be decided, per action.
    pub review_configs: Vec<ReviewConfig>,
    /// Seconds before it times out; `None`: never.
    pub timeout_seconds: Option<u64>,
    /// How it ended; `None` while pending.
    pub resolution: Option<Resolution>,
    /// The name of who decided it, once resolved, when the outcome says.
    pub answered_by: Option<String>,
}

/// How a request ended, as a client shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// A question's answers, keyed by question text.
    Answered(BTreeMap<String, String>),
    /// An approval's decisions (or a rejected question's `reject`).
    Decided(Vec<Decision>),
    /// Nobody answered in time.
    TimedOut,
    /// The asker went away.
    Cancelled,
}

/// The blocks a client has built from a history and the frames after it.
///
/// Frames are applied in order; a block is added when its `content_block_stop` arrives,
/// and an `approval_result` or `approval_timeout` resolves the latest pending request with
/// its key instead of adding a block. Frames that do not fit (a delta for another index, a
/// result for an unknown key) are ignored, as a tolerant UI would.
///
/// # Examples
///
/// ```
/// use askbus_protocol::{Block, ClientView, Encoder, Record, Step};
///
/// let mut encoder = Encoder::new();
/// let mut view = ClientView::new();
/// for frame in encoder.encode(&Record::Step(Step::Text { text: "Hi".into(), is_final: true })) {
///     view.apply(&frame);
/// }
/// assert_eq!(view.blocks(), [Block::Text { text: "Hi".into(), is_final: true }]);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientView {
    /// Complete blocks, in order.
    blocks: Vec<Block>,
    /// The block between its start and stop frames, with its index.
    open: Option<(u64, Partial)>,
}

/// A block being received.
#[derive(Debug, Clone, PartialEq)]
enum Partial {
    /// A block that will be appended.
    Block(Block),
    /// An outcome that will resolve the request with this key.
    Outcome {
        /// The request's key.
        approval_key: String,
        /// The outcome, once its delta (or, for a timeout, its start) arrived.
        resolution: Option<Resolution>,
        /// Who decided it, if the frame says.
        answered_by: Option<String>,
    },
}

impl ClientView {
    /// An empty view: what a client has before any frame.
    pub fn new() -> Self {
        Self::default()
    }

    /// The complete blocks so far.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Applies one frame.
    pub fn apply(&mut self, frame: &Frame) {
        match frame {
            Frame::GroupStart { .. } => self.blocks.push(Block::GroupStart),
            Frame::GroupEnd { summary, .. } => self.blocks.push(Block::GroupEnd {
                summary: summary.clone(),
            }),
            // A turn's bounds show nothing of their own.
            Frame::MessageStart { .. } | Frame::MessageStop { .. } => {}
            Frame::ContentBlockStart {
                index,
                content_block,
                ..
            } => self.open = Some((*index, Partial::start(content_block))),
            Frame::ContentBlockDelta { index, delta } => {
                if let Some((open, partial)) = &mut self.open
                    && open == index
                {
                    partial.fill(delta);
                }
            }
            Frame::ContentBlockStop { index } => {
                if self.open.as_ref().is_some_and(|(open, _)| open == index)
                    && let Some((_, partial)) = self.open.take()
                {
                    self.finish(partial);
                }
            }
        }
    }

    /// The blocks a client builds from `history` (seed 004's converter): each message's
    /// blocks, preceded by a group start where the message opens a group and followed by a
    /// group end where it closes one.
    pub fn from_history(history: &History) -> Self {
        let mut blocks = Vec::new();
        for message in &history.messages {
            let display = message.display();
            if display.display_type == DisplayType::GroupStart {
                blocks.push(Block::GroupStart);
            }
            message_blocks(message, &mut blocks);
            let closes = display.display_type == DisplayType::GroupEnd
                || (display.display_type == DisplayType::GroupStart && display.group_closed);
            if closes {
                blocks.push(Block::GroupEnd {
                    summary: display.summary.clone().unwrap_or_default(),
                });
            }
        }
        Self { blocks, open: None }
    }

    /// The blocks as seed 004's flat history, resuming after `last_event_id`.
    ///
    /// A block being received (between its start and stop) is left out.
    pub fn history(&self, last_event_id: FrameCursor) -> History {
        let pending = self.blocks.iter().find_map(|block| match block {
            Block::Request(request) if request.resolution.is_none() => Some(request),
            _ => None,
        });
        let finished = matches!(
            self.blocks.last(),
            None | Some(Block::Text { is_final: true, .. })
        );
        History {
            messages: render(&self.blocks),
            last_event_id,
            agent_status: if finished && pending.is_none() {
                AgentStatus::Idle
            } else {
                AgentStatus::Running
            },
            pending_approval: pending.map(request_part),
        }
    }

    fn finish(&mut self, partial: Partial) {
        match partial {
            Partial::Block(block) => self.blocks.push(block),
            Partial::Outcome {
                approval_key,
                resolution: Some(resolution),
                answered_by,
            } => {
                let pending = self.blocks.iter_mut().rev().find_map(|block| match block {
                    Block::Request(request)
                        if request.approval_key == approval_key && request.resolution.is_none() =>
                    {
                        Some(request)
                    }
                    _ => None,
                });
                if let Some(request) = pending {
                    request.resolution = Some(resolution);
                    request.answered_by = answered_by;
                }
            }
            Partial::Outcome {
                resolution: None, ..
            } => {}
        }
    }
}

impl Partial {
    fn start(content_block: &ContentBlock) -> Self {
        let block = match content_block {
            ContentBlock::User => Block::User {
                text: String::new(),
            },
            ContentBlock::Text(flags) => Block::Text {
                text: String::new(),
                is_final: flags.is_final,
            },
            ContentBlock::Thinking => Block::Thinking {
                thinking: String::new(),
            },
            ContentBlock::ToolUse(tool_use) => Block::ToolUse(tool_use.clone()),
            ContentBlock::ToolResult(result) => Block::ToolResult(result.clone()),
            ContentBlock::ApprovalRequest { approval_key, .. } => Block::Request(RequestBlock {
                approval_key: approval_key.clone(),
                action_requests: Vec::new(),
                review_configs: Vec::new(),
                timeout_seconds: None,
                resolution: None,
                answered_by: None,
            }),
            ContentBlock::ApprovalResult {
                approval_key,
                answered_by,
            } => {
                return Self::Outcome {
                    approval_key: approval_key.clone(),
                    resolution: None,
                    answered_by: answered_by.clone(),
                };
            }
            ContentBlock::ApprovalTimeout { approval_key } => {
                return Self::Outcome {
                    approval_key: approval_key.clone(),
                    resolution: Some(Resolution::TimedOut),
                    answered_by: None,
                };
            }
        };
        Self::Block(block)
    }

    fn fill(&mut self, delta: &Delta) {
        match (self, delta) {
            (
                Self::Block(Block::User { text } | Block::Text { text, .. }),
                Delta::Content(ContentDelta::TextDelta { text: more }),
            )
            | (
                Self::Block(Block::Thinking { thinking: text }),
                Delta::Content(ContentDelta::ThinkingDelta { thinking: more }),
            ) => text.push_str(more),
            (Self::Block(Block::Request(request)), Delta::ApprovalRequest(asked)) => {
                request.action_requests.clone_from(&asked.action_requests);
                request.review_configs.clone_from(&asked.review_configs);
                request.timeout_seconds = asked.timeout_seconds;
            }
            (Self::Outcome { resolution, .. }, Delta::ApprovalResult(result)) => {
                *resolution = Some(match result {
                    ApprovalResultDelta::Answers { answers } => {
                        Resolution::Answered(answers.clone())
                    }
                    ApprovalResultDelta::Decisions { decisions } => {
                        Resolution::Decided(decisions.clone())
                    }
                    ApprovalResultDelta::Cancelled { .. } => Resolution::Cancelled,
                });
            }
            _ => {}
        }
    }
}

/// A message under construction: its body and the group it belongs to.
struct Draft {
    /// The message, with a placeholder display.
    message: HistoryMessage,
    /// The group it is in (an index into the group list), if any.
    group: Option<usize>,
}

/// Blocks to flat messages. Consecutive tool calls of one group share a message.
fn render(blocks: &[Block]) -> Vec<HistoryMessage> {
    // The summary of each group once it closed; `None` while open.
    let mut groups: Vec<Option<String>> = Vec::new();
    let mut current: Option<usize> = None;
    let mut drafts: Vec<Draft> = Vec::new();
    let mut assistant_in_turn = false;
    for block in blocks {
        let message = match block {
            Block::GroupStart => {
                groups.push(None);
                current = Some(groups.len() - 1);
                continue;
            }
            Block::GroupEnd { summary } => {
                if let Some(group) = current.take() {
                    groups[group] = Some(summary.clone());
                }
                continue;
            }
            Block::User { text } => {
                assistant_in_turn = false;
                HistoryMessage::User {
                    content: vec![Part::Text {
                        text: text.clone(),
                        flags: TextFlags::default(),
                    }],
                    display: Display::content(),
                }
            }
            Block::Text { text, is_final } => assistant(
                &mut assistant_in_turn,
                Part::Text {
                    text: text.clone(),
                    flags: TextFlags::new(*is_final),
                },
            ),
            Block::Thinking { thinking } => assistant(
                &mut assistant_in_turn,
                Part::Thinking {
                    thinking: thinking.clone(),
                },
            ),
            Block::Request(request) => assistant(
                &mut assistant_in_turn,
                Part::ApprovalRequest(request_part(request)),
            ),
            Block::ToolUse(tool_use) => {
                let call = ToolCall {
                    id: tool_use.id.clone(),
                    name: tool_use.name.clone(),
                    args: tool_use.input.clone(),
                    tool_content_message: tool_use.tool_content_message.clone(),
                };
                if let Some(Draft {
                    message: HistoryMessage::Assistant { tool_calls, .. },
                    group,
                }) = drafts.last_mut()
                    && !tool_calls.is_empty()
                    && *group == current
                {
                    tool_calls.push(call);
                    continue;
                }
                let message_type = message_type(&mut assistant_in_turn);
                HistoryMessage::Assistant {
                    message_type,
                    content: Vec::new(),
                    tool_calls: vec![call],
                    display: Display::content(),
                }
            }
            Block::ToolResult(result) => HistoryMessage::Tool {
                tool_call_id: result.tool_use_id.clone(),
                name: result.name.clone(),
                status: result.status,
                tool_content_message: result.tool_content_message.clone(),
                content: result.content.clone(),
                display: Display::content(),
            },
        };
        drafts.push(Draft {
            message,
            group: current,
        });
    }
    place(drafts, &groups)
}

/// Sets each message's display from its group's members and state.
fn place(drafts: Vec<Draft>, groups: &[Option<String>]) -> Vec<HistoryMessage> {
    let mut members: Vec<(usize, usize)> = vec![(usize::MAX, 0); groups.len()];
    for (position, draft) in drafts.iter().enumerate() {
        if let Some(group) = draft.group {
            let (first, last) = &mut members[group];
            *first = (*first).min(position);
            *last = position;
        }
    }
    drafts
        .into_iter()
        .enumerate()
        .map(|(position, mut draft)| {
            if let Some(group) = draft.group {
                let (first, last) = members[group];
                let summary = groups[group].clone();
                let closed = summary.is_some();
                let display = draft.message.display_mut();
                display.display_type = if position == first {
                    DisplayType::GroupStart
                } else if closed && position == last {
                    DisplayType::GroupEnd
                } else {
                    DisplayType::GroupItem
                };
                if display.display_type != DisplayType::GroupItem {
                    display.summary = summary;
                }
                display.group_closed = closed && first == last;
            }
            draft.message
        })
        .collect()
}

fn message_type(assistant_in_turn: &mut bool) -> MessageType {
    if std::mem::replace(assistant_in_turn, true) {
        MessageType::Step
    } else {
        MessageType::Chat
    }
}

fn assistant(assistant_in_turn: &mut bool, part: Part) -> HistoryMessage {
    HistoryMessage::Assistant {
        message_type: message_type(assistant_in_turn),
        content: vec![part],
        tool_calls: Vec::new(),
        display: Display::content(),
    }
}

/// A request block as seed 000's history part; a replied question's answers are also put in
/// its action's `args.answers`, as the seed shows them.
fn request_part(request: &RequestBlock) -> RequestPart {
    let mut part = RequestPart {
        approval_key: request.approval_key.clone(),
        is_resolved: request.resolution.is_some(),
        action_requests: request.action_requests.clone(),
        review_configs: request.review_configs.clone(),
        timeout_seconds: request.timeout_seconds,
        submitted_answers: None,
        decisions: None,
        timed_out: false,
        cancelled: false,
        answered_by: request.answered_by.clone(),
    };
    match &request.resolution {
        None => {}
        Some(Resolution::Answered(answers)) => {
            for action in &mut part.action_requests {
                if action.name == QUESTION_TOOL
                    && let Value::Object(args) = &mut action.args
                {
                    let keyed = answers
                        .iter()
                        .map(|(question, answer)| (question.clone(), Value::from(answer.clone())))
                        .collect();
                    args.insert("answers".to_owned(), Value::Object(keyed));
                }
            }
            part.submitted_answers = Some(answers.clone());
        }
        Some(Resolution::Decided(decisions)) => part.decisions = Some(decisions.clone()),
        Some(Resolution::TimedOut) => part.timed_out = true,
        Some(Resolution::Cancelled) => part.cancelled = true,
    }
    part
}

/// The blocks of one history message, without group markers.
fn message_blocks(message: &HistoryMessage, blocks: &mut Vec<Block>) {
    match message {
        HistoryMessage::User { content, .. } => {
            for part in content {
                if let Part::Text { text, .. } = part {
                    blocks.push(Block::User { text: text.clone() });
                }
            }
        }
        HistoryMessage::Assistant {
            content,
            tool_calls,
            ..
        } => {
            for part in content {
                blocks.push(match part {
                    Part::Text { text, flags } => Block::Text {
                        text: text.clone(),
                        is_final: flags.is_final,
                    },
                    Part::Thinking { thinking } => Block::Thinking {
                        thinking: thinking.clone(),
                    },
                    Part::ApprovalRequest(part) => Block::Request(request_block(part)),
                });
            }
            blocks.extend(tool_calls.iter().map(|call| {
                Block::ToolUse(ToolUseBlock {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.args.clone(),
                    tool_content_message: call.tool_content_message.clone(),
                })
            }));
        }
        HistoryMessage::Tool {
            tool_call_id,
            name,
            status,
            tool_content_message,
            content,
            ..
        } => blocks.push(Block::ToolResult(ToolResultBlock {
            tool_use_id: tool_call_id.clone(),
            name: name.clone(),
            status: *status,
            tool_content_message: tool_content_message.clone(),
            content: content.clone(),
        })),
    }
}

/// A history part back to the block it was rendered from.
fn request_block(part: &RequestPart) -> RequestBlock {
    let resolution = if let Some(answers) = &part.submitted_answers {
        Some(Resolution::Answered(answers.clone()))
    } else if let Some(decisions) = &part.decisions {
        Some(Resolution::Decided(decisions.clone()))
    } else if part.timed_out {
        Some(Resolution::TimedOut)
    } else if part.cancelled {
        Some(Resolution::Cancelled)
    } else {
        None
    };
    let mut action_requests = part.action_requests.clone();
    if part.submitted_answers.is_some() {
        for action in &mut action_requests {
            if action.name == QUESTION_TOOL
                && let Value::Object(args) = &mut action.args
            {
                args.remove("answers");
            }
        }
    }
    RequestBlock {
        approval_key: part.approval_key.clone(),
        action_requests,
        review_configs: part.review_configs.clone(),
        timeout_seconds: part.timeout_seconds,
        resolution,
        answered_by: part.answered_by.clone(),
    }
}
