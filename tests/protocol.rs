//! The seeds' stream and history encoding (`askbus-protocol`): golden frames and histories
//! built from the JSON examples of seeds 000, 001 and 004 (texts translated to English,
//! structure kept), and a property test that history + replay equals the live stream.

use std::sync::Arc;
use std::time::Duration;

use askbus::bus::{Bus, IdGenerator};
use askbus::question::{
    Action as ToolCall, Answer, ApprovalConfig, ApprovalReply, AskError,
    Decision as ApprovalDecision, PendingApproval, PendingQuestion, QuestionConfig, QuestionId,
    QuestionIdPrefix, QuestionInfo, QuestionOption, QuestionRequest, RequestHub, Timeout,
};
use askbus_protocol::{
    ActionRequest, AgentStep, ClientView, ContentBlock, Decision, DecisionType, Encoder, Follow,
    Frame, FrameCursor, History, HistoryLimits, Outcome, ProtocolError, Record, Request,
    RequestEvent, RequestKind, Resync, ReviewConfig, Step, StreamFrame, ToolStatus, Transcripts,
};
use askbus_store::{MemoryStore, Store};
use proptest::prelude::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Helpers: records, and the one place that encodes them.

fn user(text: &str) -> Record {
    Record::Step(Step::User { text: text.into() })
}

fn part(text: &str) -> Record {
    Record::Step(Step::Text {
        text: text.into(),
        is_final: false,
    })
}

fn final_text(text: &str) -> Record {
    Record::Step(Step::Text {
        text: text.into(),
        is_final: true,
    })
}

fn thinking(text: &str) -> Record {
    Record::Step(Step::Thinking {
        thinking: text.into(),
    })
}

fn tool_use(id: &str, name: &str, label: Option<&str>) -> Record {
    Record::Step(Step::ToolUse {
        id: id.into(),
        name: name.into(),
        input: json!({}),
        tool_content_message: label.map(str::to_owned),
        display_as_content: false,
    })
}

fn tool_result(id: &str, name: &str) -> Record {
    Record::Step(Step::ToolResult {
        tool_use_id: id.into(),
        name: name.into(),
        status: ToolStatus::Success,
        content: None,
    })
}

fn resolved(request_id: &str, outcome: Outcome) -> Record {
    Record::Request(RequestEvent::Resolved {
        request_id: request_id.into(),
        outcome,
        answered_by: None,
    })
}

/// Seed 000's two questions, in English.
fn seed_questions() -> Vec<QuestionInfo> {
    vec![
        QuestionInfo::new(
            "Which goal do you want to focus on?",
            "Main goal",
            [
                QuestionOption::new(
                    "Sustainable dividends (Recommended)",
                    "Focus on stocks that pay regular dividends",
                ),
                QuestionOption::new("Long-term growth", "Profit from price growth"),
            ],
        ),
        QuestionInfo::new(
            "Expected holding period?",
            "Investment horizon",
            [
                QuestionOption::new("Over 3 years", "Long-term accumulation"),
                QuestionOption::new("1-3 years", "Follow the sector cycle"),
            ],
        ),
    ]
}

/// Seed 000's `action_requests[0].args.questions`, in English.
fn seed_questions_json() -> Value {
    json!([
        {
            "question": "Which goal do you want to focus on?",
            "header": "Main goal",
            "multiSelect": false,
            "options": [
                {"label": "Sustainable dividends (Recommended)", "description": "Focus on stocks that pay regular dividends"},
                {"label": "Long-term growth", "description": "Profit from price growth"},
                {"label": "Other", "description": "Enter a custom value", "input": true}
            ]
        },
        {
            "question": "Expected holding period?",
            "header": "Investment horizon",
            "multiSelect": false,
            "options": [
                {"label": "Over 3 years", "description": "Long-term accumulation"},
                {"label": "1-3 years", "description": "Follow the sector cycle"},
                {"label": "Other", "description": "Enter a custom value", "input": true}
            ]
        }
    ])
}

/// Seed 000's questions in its own words, parsed as askbus questions and shown again as an
/// `ask_user_question` action, are the seed's JSON unchanged: "Khác" (`"input": true`) is
/// the free-text option, so no "Other" is added beside it.
#[test]
fn the_seeds_questions_are_shown_as_the_seed_wrote_them() {
    let seed = crate::support::seed_000_questions();
    let questions: Vec<QuestionInfo> = serde_json::from_value(seed.clone()).unwrap();
    let request = Request::question("que_1", &questions, Some(600));
    assert_eq!(request.action_requests[0].args, json!({"questions": seed}));
}

/// One question, as a record.
fn ask(request_id: &str, questions: &[QuestionInfo]) -> Record {
    Record::Request(RequestEvent::Asked(Request::question(
        request_id,
        questions,
        Some(600),
    )))
}

/// Seed 001's trade approval, as a record.
fn trade_approval() -> Record {
    Record::Request(RequestEvent::Asked(trade_request()))
}

/// Seed 001's trade approval request.
fn trade_request() -> Request {
    Request {
        request_id: "apr_1".into(),
        approval_key: "abc-123_1".into(),
        kind: RequestKind::Approval,
        action_requests: vec![ActionRequest {
            name: "execute_trade".into(),
            args: json!({"symbol": "VNM", "quantity": 100, "side": "buy", "price": 82000}),
            tool_use_id: Some("toolu_01XyzAbc".into()),
            description: None,
        }],
        review_configs: vec![ReviewConfig {
            action_name: "execute_trade".into(),
            allowed_decisions: vec![
                DecisionType::Approve,
                DecisionType::Edit,
                DecisionType::Reject,
                DecisionType::Respond,
            ],
        }],
        timeout_seconds: Some(300),
        questions: Vec::new(),
    }
}

/// Encodes `records` for one session.
fn frames_of(records: &[Record]) -> Vec<Frame> {
    let mut encoder = Encoder::new();
    records
        .iter()
        .flat_map(|record| encoder.encode(record))
        .collect()
}

/// The history of `records`, as JSON.
fn history_of(records: &[Record]) -> Value {
    let mut view = ClientView::new();
    for frame in frames_of(records) {
        view.apply(&frame);
    }
    let cursor = FrameCursor {
        origin: 1,
        record: 9,
        frame: None,
    };
    let history = view.history(cursor);
    assert_eq!(history.last_event_id, cursor);
    serde_json::to_value(&history.messages).unwrap()
}

/// Asserts that `records` encode to exactly `expected` frames, and that the frames read
/// back from their JSON unchanged.
fn check_stream(records: &[Record], expected: Value) {
    let frames = frames_of(records);
    let actual = serde_json::to_value(&frames).unwrap();
    assert_eq!(
        actual,
        expected,
        "frames:\n{}",
        serde_json::to_string_pretty(&actual).unwrap()
    );
    let read: Vec<Frame> = serde_json::from_value(actual).unwrap();
    assert_eq!(read, frames);
}

/// Asserts that `records` give exactly the `expected` history messages, and that the
/// history reads back from its JSON unchanged.
fn check_history(records: &[Record], expected: Value) {
    let actual = history_of(records);
    assert_eq!(
        actual,
        expected,
        "history:\n{}",
        serde_json::to_string_pretty(&actual).unwrap()
    );
    let read: Vec<askbus_protocol::HistoryMessage> =
        serde_json::from_value(actual.clone()).unwrap();
    assert_eq!(serde_json::to_value(read).unwrap(), actual);
}

// ---------------------------------------------------------------------------------------
// Golden streams.

/// Seed 000: text, a group of tool steps, the group closed before the question, the
/// question's `approval_request` exactly as the seed shows it, the answer, a new group.
#[test]
fn seed_000_question_closes_the_group_and_the_next_tool_opens_a_new_one() {
    let records = [
        part("Let me prepare a question."),
        tool_use("tc-1", "write_todos", Some("Prepare the question")),
        tool_result("tc-1", "write_todos"),
        // The model's own call of the question tool is replaced by the approval_request.
        tool_use("tc-q", "ask_user_question", None),
        ask("que_1", &seed_questions()),
        resolved(
            "que_1",
            Outcome::Answered(vec![
                vec!["Sustainable dividends (Recommended)".into()],
                vec!["Over 3 years".into()],
            ]),
        ),
        tool_result("tc-q", "ask_user_question"),
        tool_use("tc-2", "analyze_price", Some("Analyse VNINDEX price")),
    ];
    check_stream(
        &records,
        json!([
            {"type": "message_start", "message_id": "msg_1"},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "is_part": true}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me prepare a question."}},
            {"type": "content_block_stop", "index": 0},
            {"type": "group_start", "index": 1, "message_id": "msg_1"},
            {"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "tc-1", "name": "write_todos", "input": {}, "tool_content_message": "Prepare the question"}},
            {"type": "content_block_stop", "index": 2},
            {"type": "content_block_start", "index": 3, "content_block": {"type": "tool_result", "tool_use_id": "tc-1", "name": "write_todos", "status": "success", "tool_content_message": "Prepare the question"}},
            {"type": "content_block_stop", "index": 3},
            {"type": "group_end", "index": 4, "summary": "Prepare the question", "message_id": "msg_1"},
            {"type": "content_block_start", "index": 5, "content_block": {"type": "approval_request", "approval_key": "que_1"}, "message_id": "msg_1"},
            {"type": "content_block_delta", "index": 5, "delta": {
                "action_requests": [{"name": "ask_user_question", "args": {"questions": seed_questions_json()}}],
                "review_configs": [{"action_name": "ask_user_question", "allowed_decisions": ["approve", "edit", "reject"]}],
                "timeout_seconds": 600
            }},
            {"type": "content_block_stop", "index": 5},
            {"type": "content_block_start", "index": 6, "content_block": {"type": "approval_result", "approval_key": "que_1"}},
            {"type": "content_block_delta", "index": 6, "delta": {"answers": {
                "Which goal do you want to focus on?": "Sustainable dividends (Recommended)",
                "Expected holding period?": "Over 3 years"
            }}},
            {"type": "content_block_stop", "index": 6},
            {"type": "group_start", "index": 7, "message_id": "msg_1"},
            {"type": "content_block_start", "index": 8, "content_block": {"type": "tool_use", "id": "tc-2", "name": "analyze_price", "input": {}, "tool_content_message": "Analyse VNINDEX price"}},
            {"type": "content_block_stop", "index": 8}
        ]),
    );
}

/// Seed 001: a tool approval inside its group, the decision as `approval_result`, the tool
/// result, the group's end.
#[test]
fn seed_001_tool_approval_stays_in_its_group_and_its_result_carries_the_decisions() {
    let records = [
        tool_use("toolu_01XyzAbc", "execute_trade", Some("Buy 100 VNM")),
        trade_approval(),
        resolved("apr_1", Outcome::Decided(vec![Decision::Approve])),
        tool_result("toolu_01XyzAbc", "execute_trade"),
        final_text("Bought 100 VNM."),
    ];
    check_stream(
        &records,
        json!([
            {"type": "message_start", "message_id": "msg_1"},
            {"type": "group_start", "index": 0, "message_id": "msg_1"},
            {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_01XyzAbc", "name": "execute_trade", "input": {}, "tool_content_message": "Buy 100 VNM"}},
            {"type": "content_block_stop", "index": 1},
            {"type": "content_block_start", "index": 2, "content_block": {
                "type": "approval_request",
                "approval_key": "abc-123_1",
                "actions": [{
                    "name": "execute_trade",
                    "args": {"symbol": "VNM", "quantity": 100, "side": "buy", "price": 82000},
                    "tool_use_id": "toolu_01XyzAbc"
                }],
                "review_configs": [{"require_approval": true, "timeout": 300}]
            }, "message_id": "msg_1"},
            {"type": "content_block_delta", "index": 2, "delta": {
                "action_requests": [{
                    "name": "execute_trade",
                    "args": {"symbol": "VNM", "quantity": 100, "side": "buy", "price": 82000},
                    "tool_use_id": "toolu_01XyzAbc"
                }],
                "review_configs": [{"action_name": "execute_trade", "allowed_decisions": ["approve", "edit", "reject", "respond"]}],
                "timeout_seconds": 300
            }},
            {"type": "content_block_stop", "index": 2},
            {"type": "content_block_start", "index": 3, "content_block": {"type": "approval_result", "approval_key": "abc-123_1"}},
            {"type": "content_block_delta", "index": 3, "delta": {"decisions": [{"type": "approve"}]}},
            {"type": "content_block_stop", "index": 3},
            {"type": "content_block_start", "index": 4, "content_block": {"type": "tool_result", "tool_use_id": "toolu_01XyzAbc", "name": "execute_trade", "status": "success", "tool_content_message": "Buy 100 VNM"}},
            {"type": "content_block_stop", "index": 4},
            {"type": "group_end", "index": 5, "summary": "Buy 100 VNM", "message_id": "msg_1"},
            {"type": "content_block_start", "index": 6, "content_block": {"type": "text", "is_final": true}},
            {"type": "content_block_delta", "index": 6, "delta": {"type": "text_delta", "text": "Bought 100 VNM."}},
            {"type": "content_block_stop", "index": 6},
            {"type": "message_stop", "message_id": "msg_1"}
        ]),
    );
}

/// Seed 001's `approval_request` start block, verbatim: what its React and Flutter samples
/// read (`actions`, `approval_key`) is in the block itself.
#[test]
fn seed_001_start_block_is_the_seeds_own() {
    // 001_80c8035cdf420067.txt, "Block approval_request", "Ví Dụ Đầy Đủ", verbatim.
    let seed = json!({
        "type": "content_block_start",
        "index": 4,
        "content_block": crate::support::seed_001_approval_request_block(),
        "message_id": "msg-abc"
    });
    let frames = serde_json::to_value(frames_of(&[trade_approval()])).unwrap();
    let start = frames
        .as_array()
        .unwrap()
        .iter()
        .find(|frame| frame["type"] == "content_block_start")
        .unwrap();
    assert_eq!(start["content_block"], seed["content_block"]);
    assert_eq!(
        start["message_id"], "msg_1",
        "the turn's id, where the seed has `msg-abc`"
    );
    // A UI built from the seed reads the start block back.
    let frame: Frame = serde_json::from_value(seed).unwrap();
    assert!(matches!(
        frame,
        Frame::ContentBlockStart { content_block: ContentBlock::ApprovalRequest { ref actions, .. }, .. }
            if actions[0].name == "execute_trade"
    ));
}

/// Seed 001: nobody answered; `approval_timeout` is a start and a stop, nothing else.
#[test]
fn seed_001_timeout_is_an_approval_timeout_block() {
    let frames = frames_of(&[trade_approval(), resolved("apr_1", Outcome::TimedOut)]);
    let tail = serde_json::to_value(&frames[frames.len() - 2..]).unwrap();
    assert_eq!(
        tail,
        json!([
            {"type": "content_block_start", "index": 2, "content_block": {"type": "approval_timeout", "approval_key": "abc-123_1"}},
            {"type": "content_block_stop", "index": 2}
        ])
    );
}

/// Rejected and cancelled questions, and an edit decision, in their result deltas.
#[test]
fn other_outcomes_have_their_own_result_deltas() {
    let question = [QuestionInfo::new(
        "Deploy?",
        "Deploy",
        [QuestionOption::new("Yes", "ship")],
    )];
    let cases = [
        (
            Outcome::Rejected(Some("not now".into())),
            json!({"decisions": [{"type": "reject", "message": "not now"}]}),
        ),
        (Outcome::Cancelled, json!({"cancelled": true})),
        (
            Outcome::Answered(vec![vec![]]),
            json!({"answers": {"Deploy?": "[No preference]"}}),
        ),
    ];
    for (outcome, delta) in cases {
        let frames = frames_of(&[ask("que_9", &question), resolved("que_9", outcome)]);
        let delta_frame = serde_json::to_value(&frames[frames.len() - 2]).unwrap();
        assert_eq!(
            delta_frame,
            json!({"type": "content_block_delta", "index": 1, "delta": delta})
        );
    }
    let edit = Decision::Edit {
        edited_action: askbus_protocol::EditedAction {
            name: "execute_trade".into(),
            args: json!({"quantity": 50}),
        },
    };
    let frames = frames_of(&[
        trade_approval(),
        resolved("apr_1", Outcome::Decided(vec![edit])),
    ]);
    assert_eq!(
        serde_json::to_value(&frames[frames.len() - 2]).unwrap(),
        json!({"type": "content_block_delta", "index": 2, "delta": {"decisions": [
            {"type": "edit", "edited_action": {"name": "execute_trade", "args": {"quantity": 50}}}
        ]}})
    );
}

/// Seed 004: `web_search` without a label reads `Web search`, on the call, its result and
/// the group's summary.
#[test]
fn seed_004_tool_content_message_falls_back_to_the_readable_tool_name() {
    check_stream(
        &[
            tool_use("tc-1", "web_search", None),
            tool_result("tc-1", "web_search"),
            final_text("Done."),
        ],
        json!([
            {"type": "message_start", "message_id": "msg_1"},
            {"type": "group_start", "index": 0, "message_id": "msg_1"},
            {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "tc-1", "name": "web_search", "input": {}, "tool_content_message": "Web search"}},
            {"type": "content_block_stop", "index": 1},
            {"type": "content_block_start", "index": 2, "content_block": {"type": "tool_result", "tool_use_id": "tc-1", "name": "web_search", "status": "success", "tool_content_message": "Web search"}},
            {"type": "content_block_stop", "index": 2},
            {"type": "group_end", "index": 3, "summary": "Web search", "message_id": "msg_1"},
            {"type": "content_block_start", "index": 4, "content_block": {"type": "text", "is_final": true}},
            {"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta", "text": "Done."}},
            {"type": "content_block_stop", "index": 4},
            {"type": "message_stop", "message_id": "msg_1"}
        ]),
    );
}

/// Seed 004's turn: `message_start` before the agent's first output, `message_stop` after
/// its final answer; the user speaking again ends an unfinished turn, and the next output
/// opens the session's next one.
#[test]
fn seed_004_a_turn_is_bracketed_by_message_start_and_stop() {
    let frames = serde_json::to_value(frames_of(&[
        user("hãy hỏi 2 lần"),
        thinking("..."),
        user("stop"),
        final_text("OK."),
    ]))
    .unwrap();
    let bounds: Vec<&Value> = frames
        .as_array()
        .unwrap()
        .iter()
        .filter(|frame| frame["type"] != "content_block_delta")
        .collect();
    assert_eq!(
        serde_json::to_value(bounds).unwrap(),
        json!([
            {"type": "content_block_start", "index": 0, "content_block": {"type": "user"}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_start", "message_id": "msg_1"},
            {"type": "group_start", "index": 1, "message_id": "msg_1"},
            {"type": "content_block_start", "index": 2, "content_block": {"type": "thinking"}},
            {"type": "content_block_stop", "index": 2},
            {"type": "group_end", "index": 3, "summary": "Thinking", "message_id": "msg_1"},
            {"type": "message_stop", "message_id": "msg_1"},
            {"type": "content_block_start", "index": 4, "content_block": {"type": "user"}},
            {"type": "content_block_stop", "index": 4},
            {"type": "message_start", "message_id": "msg_2"},
            {"type": "content_block_start", "index": 5, "content_block": {"type": "text", "is_final": true}},
            {"type": "content_block_stop", "index": 5},
            {"type": "message_stop", "message_id": "msg_2"}
        ])
    );
}

/// Seed 000's `display_as_content` per tool: a `share_thought` call marked so is shown
/// outside groups (closing the open one), its result too; the next tool opens a new group.
#[test]
fn seed_000_display_as_content_shows_a_tool_outside_groups() {
    let mut share = tool_use("tc-2", "share_thought", Some("Share a thought"));
    if let Record::Step(Step::ToolUse {
        display_as_content, ..
    }) = &mut share
    {
        *display_as_content = true;
    }
    let frames = serde_json::to_value(frames_of(&[
        tool_use("tc-1", "write_todos", None),
        share.clone(),
        tool_use("tc-3", "web_search", None),
        tool_result("tc-2", "share_thought"),
    ]))
    .unwrap();
    let shape: Vec<String> = frames
        .as_array()
        .unwrap()
        .iter()
        .filter(|frame| frame["type"] != "content_block_stop")
        .map(|frame| {
            let block = &frame["content_block"];
            format!("{} {}", frame["type"], block["name"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(
        shape,
        [
            "\"message_start\" ",
            "\"group_start\" ",
            "\"content_block_start\" write_todos",
            "\"group_end\" ",
            "\"content_block_start\" share_thought",
            "\"group_start\" ",
            "\"content_block_start\" web_search",
            "\"group_end\" ",
            "\"content_block_start\" share_thought",
        ]
    );
    // The history places them alike: the call shown outside and its result are content.
    let history = history_of(&[
        tool_use("tc-1", "write_todos", None),
        share,
        tool_result("tc-2", "share_thought"),
    ]);
    let display: Vec<&Value> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|message| &message["display_type"])
        .collect();
    assert_eq!(
        serde_json::to_value(display).unwrap(),
        json!(["group_start", "content", "content"]),
        "{history:#}"
    );
}

/// A question's outcome is shown where the question is, outside groups: when the agent
/// opened a tool group after asking, the question's `approval_timeout` closes it first
/// instead of landing inside it.
#[test]
fn a_questions_outcome_is_not_inside_a_group_opened_after_it() {
    let frames = serde_json::to_value(frames_of(&[
        ask("que_1", &seed_questions()),
        tool_use("tc-1", "web_search", None),
        resolved("que_1", Outcome::TimedOut),
        tool_result("tc-1", "web_search"),
    ]))
    .unwrap();
    let kinds: Vec<String> = frames
        .as_array()
        .unwrap()
        .iter()
        .filter(|frame| {
            frame["type"] != "content_block_stop" && frame["type"] != "content_block_delta"
        })
        .map(|frame| {
            let block = frame["content_block"]["type"].as_str().unwrap_or("");
            format!(
                "{}{}",
                frame["type"].as_str().unwrap(),
                if block.is_empty() {
                    String::new()
                } else {
                    format!(":{block}")
                }
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start:approval_request",
            "group_start",
            "content_block_start:tool_use",
            "group_end",
            "content_block_start:approval_timeout",
            "group_start",
            "content_block_start:tool_result",
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Golden histories.

/// Seed 004's example history response: a user message, a standalone remark, one group
/// whose first message holds both tool calls, the results as item and end, the answer.
#[test]
fn seed_004_history_is_flat_messages_with_display_types() {
    check_history(
        &[
            user("market today"),
            part("Hi Thao! Let me get the update."),
            tool_use("tc-1", "write_todos", Some("Plan the analysis")),
            tool_use("tc-2", "analyze_price", Some("Analyse VNINDEX price")),
            tool_result("tc-1", "write_todos"),
            tool_result("tc-2", "analyze_price"),
            final_text("VNINDEX rose 2.69% today..."),
        ],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "market today"}], "display_type": "content"},
            {"role": "assistant", "message_type": "chat", "content": [{"type": "text", "text": "Hi Thao! Let me get the update.", "is_part": true}], "display_type": "content"},
            {
                "role": "assistant", "message_type": "step", "content": [],
                "tool_calls": [
                    {"id": "tc-1", "name": "write_todos", "args": {}, "tool_content_message": "Plan the analysis"},
                    {"id": "tc-2", "name": "analyze_price", "args": {}, "tool_content_message": "Analyse VNINDEX price"}
                ],
                "display_type": "group_start", "summary": "Analyse VNINDEX price"
            },
            {"role": "tool", "tool_call_id": "tc-1", "name": "write_todos", "status": "success", "tool_content_message": "Plan the analysis", "display_type": "group_item"},
            {"role": "tool", "tool_call_id": "tc-2", "name": "analyze_price", "status": "success", "tool_content_message": "Analyse VNINDEX price", "display_type": "group_end", "summary": "Analyse VNINDEX price"},
            {"role": "assistant", "message_type": "step", "content": [{"type": "text", "text": "VNINDEX rose 2.69% today...", "is_final": true}], "display_type": "content"}
        ]),
    );
}

/// Seed 004's `group_closed`: a group of one message is that message as a self-closing
/// `group_start`; a group without tool calls is summarised `Thinking`.
#[test]
fn seed_004_group_of_one_message_is_self_closing() {
    check_history(
        &[thinking("..."), final_text("Hello.")],
        json!([
            {"role": "assistant", "message_type": "chat", "content": [{"type": "thinking", "thinking": "..."}], "display_type": "group_start", "summary": "Thinking", "group_closed": true},
            {"role": "assistant", "message_type": "step", "content": [{"type": "text", "text": "Hello.", "is_final": true}], "display_type": "content"}
        ]),
    );
}

/// Seed 000's full history of two questions: each group closed before its question, each
/// question a resolved `approval_request` outside groups with its answers, the question
/// tool's own call and result filtered out.
#[test]
fn seed_000_history_shows_resolved_questions_outside_groups() {
    let q1 = [QuestionInfo::new("Q1", "First", [QuestionOption::new("A1", "one")]).options_only()];
    let q2 = [QuestionInfo::new("Q2", "Second", [QuestionOption::new("A2", "two")]).options_only()];
    let round = |n: &str, tool: &str, question: &str, info: &[QuestionInfo], answer: &str| {
        let label = format!("Prepare question {n}");
        vec![
            thinking("..."),
            tool_use(tool, "write_todos", Some(&label)),
            tool_result(tool, "write_todos"),
            tool_use(&format!("ask-{n}"), "ask_user_question", None),
            ask(question, info),
            resolved(question, Outcome::Answered(vec![vec![answer.into()]])),
            tool_result(&format!("ask-{n}"), "ask_user_question"),
        ]
    };
    let mut records = vec![user("ask me twice")];
    records.extend(round("1", "tc-1", "que_1", &q1, "A1"));
    records.extend(round("2", "tc-2", "que_2", &q2, "A2"));
    records.push(final_text("Thanks! Summary..."));

    let group = |n: &str, tool: &str, message_type: &str| {
        let label = format!("Prepare question {n}");
        vec![
            json!({"role": "assistant", "message_type": message_type, "content": [{"type": "thinking", "thinking": "..."}], "display_type": "group_start", "summary": label}),
            json!({"role": "assistant", "message_type": "step", "content": [], "tool_calls": [{"id": tool, "name": "write_todos", "args": {}, "tool_content_message": label}], "display_type": "group_item"}),
            json!({"role": "tool", "tool_call_id": tool, "name": "write_todos", "status": "success", "tool_content_message": label, "display_type": "group_end", "summary": label}),
        ]
    };
    let resolved_question = |key: &str,
                             question: &str,
                             header: &str,
                             option: &str,
                             description: &str,
                             answer: &str| {
        json!({
            "role": "assistant", "message_type": "step",
            "content": [{
                "type": "approval_request",
                "approval_key": key,
                "isResolved": true,
                "actionRequests": [{
                    "name": "ask_user_question",
                    "args": {
                        "questions": [{"question": question, "header": header, "multiSelect": false, "options": [{"label": option, "description": description}]}],
                        "answers": {question: answer}
                    }
                }],
                "reviewConfigs": [{"action_name": "ask_user_question", "allowed_decisions": ["approve", "edit", "reject"]}],
                "timeoutSeconds": 600,
                "submittedAnswers": {question: answer}
            }],
            "display_type": "content"
        })
    };
    let mut expected = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "ask me twice"}], "display_type": "content"}),
    ];
    expected.extend(group("1", "tc-1", "chat"));
    expected.push(resolved_question("que_1", "Q1", "First", "A1", "one", "A1"));
    expected.extend(group("2", "tc-2", "step"));
    expected.push(resolved_question(
        "que_2", "Q2", "Second", "A2", "two", "A2",
    ));
    expected.push(json!({"role": "assistant", "message_type": "step", "content": [{"type": "text", "text": "Thanks! Summary...", "is_final": true}], "display_type": "content"}));
    check_history(&records, Value::Array(expected));
}

/// A pending request in the history carries what a client needs to answer it after a
/// reload: its key, actions, review configs and timeout, and `isResolved: false`. An open
/// group has a `group_start` without summary and no end.
#[test]
fn pending_requests_and_open_groups_in_history() {
    let history = history_of(&[
        tool_use("toolu_01XyzAbc", "execute_trade", None),
        trade_approval(),
    ]);
    assert_eq!(
        history,
        json!([
            {"role": "assistant", "message_type": "chat", "content": [], "tool_calls": [{"id": "toolu_01XyzAbc", "name": "execute_trade", "args": {}, "tool_content_message": "Execute trade"}], "display_type": "group_start"},
            {"role": "assistant", "message_type": "step", "content": [{
                "type": "approval_request",
                "approval_key": "abc-123_1",
                "isResolved": false,
                "actionRequests": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100, "side": "buy", "price": 82000}, "tool_use_id": "toolu_01XyzAbc"}],
                "reviewConfigs": [{"action_name": "execute_trade", "allowed_decisions": ["approve", "edit", "reject", "respond"]}],
                "timeoutSeconds": 300
            }], "display_type": "group_item"}
        ])
    );
}

// ---------------------------------------------------------------------------------------
// Transcripts over a hub: in memory, in a store, in a shared store.

/// A hub of each kind, each with its transcripts: without a store (histories in memory,
/// from the bus), recording in a store, and sharing one.
async fn hubs() -> Vec<(&'static str, RequestHub, Transcripts)> {
    let parts = || {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let configs = (QuestionConfig::default(), ApprovalConfig::default());
        (Bus::new(), configs, store)
    };
    let (bus, (questions, approvals), store) = parts();
    let stored = RequestHub::builder()
        .bus(bus)
        .questions(questions)
        .approvals(approvals)
        .store(store)
        .build();
    let (bus, (questions, approvals), store) = parts();
    let shared = RequestHub::builder()
        .bus(bus)
        .questions(questions)
        .approvals(approvals)
        .store(store)
        .shared()
        .build();
    let (stored, shared) = (stored.await.unwrap(), shared.await.unwrap());
    [
        ("memory", RequestHub::new(Bus::new())),
        ("store", stored),
        ("shared", shared),
    ]
    .map(|(name, hub)| {
        let transcripts = Transcripts::new(&hub);
        (name, hub, transcripts)
    })
    .into()
}

/// Records `step` in `session` through `hub`.
async fn record(hub: &RequestHub, session: &str, step: Step) {
    AgentStep::new(session, step).record(hub).await.unwrap();
}

/// Every frame `stream` yields before it goes quiet (on paused time: once every task is
/// idle).
async fn drain(stream: &mut Follow) -> Vec<StreamFrame> {
    let mut frames = Vec::new();
    while let Ok(Some(frame)) = tokio::time::timeout(Duration::from_secs(1), stream.next()).await {
        frames.push(frame.unwrap());
    }
    frames
}

/// Steps and requests are in the order they happened; other sessions stay out; the
/// question tool's own steps are dropped; every frame cursor resumes exactly after its
/// frame.
#[tokio::test(start_paused = true)]
async fn transcripts_keep_steps_and_requests_in_the_order_they_happened() {
    for (name, hub, transcripts) in hubs().await {
        record(&hub, "s1", Step::User { text: "hi".into() }).await;
        let not_mine = Step::User {
            text: "not mine".into(),
        };
        record(&hub, "other", not_mine).await;
        let search = Step::ToolUse {
            id: "tc-1".into(),
            name: "web_search".into(),
            input: json!({"q": "x"}),
            tool_content_message: None,
            display_as_content: false,
        };
        record(&hub, "s1", search).await;
        let own_call = Step::ToolUse {
            id: "tc-q".into(),
            name: "ask_user_question".into(),
            input: json!({}),
            tool_content_message: None,
            display_as_content: false,
        };
        record(&hub, "s1", own_call).await;
        let ten_minutes = Timeout::After(Duration::from_secs(600));
        let mut pending = hub
            .questions()
            .ask("s1", seed_questions())
            .timeout(ten_minutes)
            .submit()
            .unwrap();
        pending.recorded().await.unwrap();
        let id = pending.detach().id;
        let answers = vec![vec!["Long-term growth".to_owned()], vec![]];
        hub.questions().reply(id, answers).unwrap().await.unwrap();

        let history = serde_json::to_value(transcripts.history("s1").await.unwrap()).unwrap();
        let messages = history["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{name}: {history:#}");
        assert_eq!(messages[1]["display_type"], "group_start");
        assert_eq!(messages[1]["group_closed"], true);
        assert_eq!(messages[1]["summary"], "Web search");
        let part = &messages[2]["content"][0];
        assert_eq!(part["approval_key"], "s1_1", "the question's seed key");
        assert_eq!(part["timeoutSeconds"], 600);
        assert_eq!(
            part["submittedAnswers"],
            json!({"Which goal do you want to focus on?": "Long-term growth", "Expected holding period?": "[No preference]"})
        );
        let other = transcripts.history("other").await.unwrap();
        assert_eq!(other.messages.len(), 1, "{name}");
        let nobody = transcripts.history("nobody").await.unwrap();
        assert!(nobody.messages.is_empty());
        assert_eq!(nobody.last_event_id, FrameCursor::START);

        let all = drain(&mut transcripts.follow("s1", None).await.unwrap()).await;
        // The user's block, the turn's start, the group's start, the tool call, the group's
        // end, the question and its answers.
        assert_eq!(all.len(), 3 + 1 + 1 + 2 + 1 + 3 + 3, "{name}");
        for (position, frame) in all.iter().enumerate() {
            let cursor: FrameCursor = frame.cursor.to_string().parse().unwrap();
            assert_eq!(cursor, frame.cursor);
            let mut resumed = transcripts.follow("s1", Some(cursor)).await.unwrap();
            assert_eq!(drain(&mut resumed).await, all[position + 1..], "{name}");
        }
    }
    assert!("evt_nope".parse::<FrameCursor>().is_err());
}

/// Every way a question ends reaches the history, whichever hub.
#[tokio::test(start_paused = true)]
async fn transcripts_see_every_question_outcome() {
    for (name, hub, transcripts) in hubs().await {
        let question = || {
            vec![QuestionInfo::new(
                "Go?",
                "Go",
                [QuestionOption::new("Yes", "go")],
            )]
        };
        let ask = |timeout| {
            hub.questions()
                .ask("s", question())
                .timeout(timeout)
                .submit()
                .unwrap()
        };
        let mut rejected = ask(Timeout::Never);
        rejected.recorded().await.unwrap();
        let id = rejected.detach().id;
        hub.questions().reject(id, None).unwrap().await.unwrap();
        let expires = ask(Timeout::After(Duration::from_secs(1)));
        assert_eq!(expires.await, Err(AskError::TimedOut));
        let mut cancelled = ask(Timeout::Never);
        cancelled.recorded().await.unwrap();
        drop(cancelled);
        // A cancellation over a shared store is the store's to take: let it.
        tokio::time::sleep(Duration::from_secs(1)).await;

        let history = serde_json::to_value(transcripts.history("s").await.unwrap()).unwrap();
        let expected = [
            json!({"decisions": [{"type": "reject"}]}),
            json!({"timedOut": true}),
            json!({"cancelled": true}),
        ];
        let messages = history["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{name}: {history:#}");
        for (message, outcome) in messages.iter().zip(expected) {
            let part = &message["content"][0];
            assert_eq!(part["isResolved"], true, "{name}");
            let (key, value) = outcome.as_object().unwrap().iter().next().unwrap();
            assert_eq!(&part[key], value, "{name}: {part:#}");
        }
    }
}

/// A history names the human who decided an approval, and nobody for one a standing grant
/// approved (no human decided it); the same whether the records come from the bus or
/// from the store.
#[tokio::test(start_paused = true)]
async fn transcripts_name_who_decided_an_approval_and_nobody_for_a_grant() {
    for (name, hub, transcripts) in hubs().await {
        if hub.shares_store() {
            // `always` is refused over a shared store: no grant to show there.
            continue;
        }
        let approvals = hub.approvals();
        let status = || vec![ToolCall::new("bash", json!({"command": "git status"}))];
        let first = approvals
            .request("grants", status())
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        let (durable, _grant) = approvals.reply_always(first.id()).unwrap();
        durable.await.unwrap();
        first.await.unwrap();
        let again = approvals
            .request("grants", status())
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        assert_eq!(again.await.unwrap().auto_approved_by.len(), 1, "{name}");
        tokio::time::sleep(Duration::from_millis(10)).await;

        let history = serde_json::to_value(transcripts.history("grants").await.unwrap()).unwrap();
        let parts: Vec<&Value> = history["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| &message["content"][0])
            .collect();
        assert_eq!(parts.len(), 2, "{name}: {history:#}");
        for part in &parts {
            assert_eq!(part["isResolved"], true, "{name}: {part:#}");
            assert_eq!(part["decisions"][0]["type"], "approve", "{name}: {part:#}");
        }
        assert!(
            parts[0]["answeredBy"].is_string(),
            "{name}: the human's reply names them: {:#}",
            parts[0]
        );
        assert!(
            parts[1].get("answeredBy").is_none_or(Value::is_null),
            "{name}: a grant's approval names nobody: {:#}",
            parts[1]
        );
    }
}

/// A stream resumed after records that are no longer kept, or after a cursor these
/// transcripts never gave, is told to resync; never given a partial stream.
#[tokio::test(start_paused = true)]
async fn a_cursor_that_cannot_be_resumed_is_told_to_resync() {
    let resync = |result: Result<Follow, ProtocolError>| match result {
        Err(ProtocolError::Resync { reason }) => reason,
        Err(error) => panic!("{error}"),
        Ok(_) => panic!("resumed a cursor that cannot be resumed"),
    };
    let steps = |count: usize| {
        (0..count).map(|n| Step::Thinking {
            thinking: format!("step {n}"),
        })
    };
    let store = Arc::new(MemoryStore::new().with_history_limit(8));
    let stored = RequestHub::builder()
        .bus(Bus::new())
        .store(Arc::clone(&store) as Arc<dyn Store>)
        .build()
        .await
        .unwrap();
    let memory = RequestHub::new(Bus::new());
    let limits = HistoryLimits {
        records_per_session: 8,
        records_in_memory: 40,
        ..HistoryLimits::default()
    };
    for hub in [stored, memory] {
        let transcripts = Transcripts::with_limits(&hub, limits);
        for step in steps(5) {
            record(&hub, "long", step).await;
        }
        let early = transcripts.history("long").await.unwrap().last_event_id;
        // Not one of these transcripts': a record of the session that is not there.
        let unknown = FrameCursor {
            record: early.record + 1_000,
            ..early
        };
        assert_eq!(
            resync(transcripts.follow("long", Some(unknown)).await),
            Resync::UnknownCursor
        );
        let resumed = transcripts.follow("long", Some(early)).await;
        assert!(drain(&mut resumed.unwrap()).await.is_empty());
        // The session goes past its limit: its oldest records, those `early` was folded
        // from, are dropped.
        for step in steps(20) {
            record(&hub, "long", step).await;
        }
        assert_eq!(
            resync(transcripts.follow("long", Some(early)).await),
            Resync::CursorTooOld
        );
        let now = transcripts.history("long").await.unwrap();
        assert!(now.messages.len() <= 8 + 1, "{}", now.messages.len());
        assert!(
            transcripts
                .follow("long", Some(now.last_event_id))
                .await
                .is_ok()
        );
    }

    // The history was deleted (retention, a quiet session): its cursors are too old.
    let transcripts = Transcripts::new(
        &RequestHub::builder()
            .bus(Bus::new())
            .store(Arc::clone(&store) as Arc<dyn Store>)
            .build()
            .await
            .unwrap(),
    );
    let before = transcripts.history("long").await.unwrap().last_event_id;
    assert_eq!(store.forget_quiet_histories(u64::MAX, 10).await.unwrap(), 1);
    assert_eq!(
        resync(transcripts.follow("long", Some(before)).await),
        Resync::CursorTooOld
    );
    assert_eq!(
        transcripts.history("long").await.unwrap().last_event_id,
        FrameCursor::START
    );

    // Without a store, past the memory bound the quietest session is dropped whole.
    let hub = RequestHub::new(Bus::new());
    let transcripts = Transcripts::with_limits(&hub, limits);
    record(&hub, "quiet", Step::User { text: "hi".into() }).await;
    let quiet = transcripts.history("quiet").await.unwrap().last_event_id;
    for busy in ["a", "b", "c", "d", "e"] {
        for step in steps(8) {
            record(&hub, busy, step).await;
        }
    }
    assert_eq!(
        resync(transcripts.follow("quiet", Some(quiet)).await),
        Resync::CursorTooOld
    );
    assert!(
        transcripts
            .history("quiet")
            .await
            .unwrap()
            .messages
            .is_empty()
    );
    assert!(!transcripts.history("e").await.unwrap().messages.is_empty());
}

/// Without a store, a session with a question waiting keeps its history while floods of
/// other sessions' records go past the memory bounds, in records and in bytes: the
/// sessions with nothing pending are dropped first. Its history was once dropped like any
/// other, and the web UI said "Nothing recorded for this session yet" beside its question.
#[tokio::test(start_paused = true)]
async fn without_a_store_a_waiting_session_keeps_its_history_through_floods() {
    let hub = RequestHub::new(Bus::new());
    let limits = HistoryLimits {
        records_per_session: 8,
        bytes_per_session: 32 * 1024,
        records_in_memory: 40,
        bytes_in_memory: 64 * 1024,
    };
    let transcripts = Transcripts::with_limits(&hub, limits);
    let user = |text: &str| Step::User { text: text.into() };
    record(&hub, "victim", user("Clean up the disk")).await;
    let mut question = hub
        .questions()
        .ask("victim", seed_questions())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    question.recorded().await.unwrap();
    record(&hub, "quiet", user("hi")).await;
    for n in 0..200 {
        let step = Step::Thinking {
            thinking: format!("busy {n}"),
        };
        record(&hub, &format!("busy-{}", n % 10), step).await;
    }
    let big = "x".repeat(16 * 1024);
    for n in 0..20 {
        record(&hub, &format!("big-{}", n % 2), user(&format!("{big} {n}"))).await;
    }

    let victim = transcripts.history("victim").await.unwrap();
    assert_eq!(victim.messages.len(), 2, "{victim:?}");
    let quiet = transcripts.history("quiet").await.unwrap();
    assert!(quiet.messages.is_empty(), "{quiet:?}");
    // Within 64 KiB: three or four steps of 16 KiB.
    let mut big_steps = 0;
    for session in ["big-0", "big-1"] {
        big_steps += transcripts.history(session).await.unwrap().messages.len();
    }
    assert!((1..=4).contains(&big_steps), "{big_steps} big steps kept");
    drop(question);
}

/// A session of many pages (more records than one read asks for): its history, its
/// stream from the start, and its stream resumed after any frame agree, on every hub.
#[tokio::test(start_paused = true)]
async fn long_sessions_are_read_a_page_at_a_time() {
    let records = 3 * Transcripts::PAGE_RECORDS + 5;
    for (name, hub, transcripts) in hubs().await {
        for n in 0..records {
            let step = match n % 3 {
                0 => Step::User {
                    text: format!("ask {n}"),
                },
                1 => Step::Thinking {
                    thinking: format!("think {n}"),
                },
                _ => Step::ToolUse {
                    id: format!("tc-{n}"),
                    name: "web_search".into(),
                    input: json!({"n": n}),
                    tool_content_message: None,
                    display_as_content: false,
                },
            };
            record(&hub, "s", step).await;
        }
        let history = transcripts.history("s").await.unwrap();
        let all = drain(&mut transcripts.follow("s", None).await.unwrap()).await;
        let mut watched = ClientView::new();
        for frame in &all {
            watched.apply(&frame.frame);
        }
        assert_eq!(history, watched.history(history.last_event_id), "{name}");
        assert_eq!(all.last().unwrap().cursor, history.last_event_id, "{name}");
        for position in (0..all.len()).step_by(7) {
            let cursor = all[position].cursor;
            let mut resumed = transcripts.follow("s", Some(cursor)).await.unwrap();
            assert_eq!(drain(&mut resumed).await, all[position + 1..], "{name}");
        }
    }
}

/// A stream that reads slower than its session records, so that the records after the
/// last one it read are trimmed before it reads them, is told to resync, instead of going
/// on past the gap.
#[tokio::test(start_paused = true)]
async fn a_stream_left_behind_by_trimming_is_told_to_resync() {
    let store = Arc::new(MemoryStore::new().with_history_limit(8));
    let stored = RequestHub::builder()
        .bus(Bus::new())
        .store(store as Arc<dyn Store>)
        .build()
        .await
        .unwrap();
    let memory = RequestHub::new(Bus::new());
    let limits = HistoryLimits {
        records_per_session: 8,
        ..HistoryLimits::default()
    };
    for hub in [stored, memory] {
        let transcripts = Transcripts::with_limits(&hub, limits);
        let thinking = |n: usize| Step::Thinking {
            thinking: format!("step {n}"),
        };
        record(&hub, "s", thinking(0)).await;
        let mut slow = transcripts.follow("s", None).await.unwrap();
        let first = slow.next().await.unwrap().unwrap();
        let first_record = first.cursor.record;
        for n in 1..40 {
            record(&hub, "s", thinking(n)).await;
        }
        let mut read = vec![first];
        let reason = loop {
            match slow.next().await.unwrap() {
                Ok(frame) => read.push(frame),
                Err(ProtocolError::Resync { reason }) => break reason,
                Err(error) => panic!("{error}"),
            }
        };
        assert_eq!(reason, Resync::CursorTooOld);
        assert!(
            read.iter().all(|frame| frame.cursor.record == first_record),
            "nothing after the gap: {read:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// History + replay == live.

/// One thing that happens in a generated session.
#[derive(Debug, Clone)]
enum Op {
    User(String),
    Text(String, bool),
    Thinking(String),
    /// A call of tool `name % TOOLS.len()`, with or without a label.
    ToolUse(usize, Option<String>),
    /// The result of the `n % calls`-th call so far.
    ToolResult(usize, bool),
    /// A question with this many questions (1..=3).
    Ask(usize),
    /// A tool approval (pure encoder only: approvals are not on the bus yet).
    Approve,
    /// Resolves the `n % pending`-th pending request with outcome `kind % 5`.
    Resolve(usize, usize),
    /// An event of another session, in between.
    Noise,
}

const TOOLS: [&str; 5] = [
    "web_search",
    "write_todos",
    "analyze_price",
    "share_thought",
    "ask_user_question",
];

fn op() -> impl Strategy<Value = Op> {
    let text = "[a-z ]{0,6}";
    prop_oneof![
        text.prop_map(Op::User),
        (text, any::<bool>()).prop_map(|(text, is_final)| Op::Text(text, is_final)),
        text.prop_map(Op::Thinking),
        (0..TOOLS.len(), proptest::option::of("[A-Z][a-z]{0,5}"))
            .prop_map(|(tool, label)| Op::ToolUse(tool, label)),
        (any::<usize>(), any::<bool>()).prop_map(|(n, error)| Op::ToolResult(n, error)),
        (1..=3_usize).prop_map(Op::Ask),
        Just(Op::Approve),
        (any::<usize>(), any::<usize>()).prop_map(|(n, kind)| Op::Resolve(n, kind)),
        Just(Op::Noise),
    ]
}

/// What a generated session does, ready to be encoded.
enum Action {
    Step(Step),
    Ask(Arc<QuestionRequest>),
    Approve(Request),
    Resolve {
        request_id: QuestionId,
        outcome: Outcome,
    },
    Noise,
}

/// Interprets ops into actions with consistent ids.
fn actions(ops: &[Op]) -> Vec<Action> {
    let mut ids = IdGenerator::new();
    let mut calls: Vec<(String, &str)> = Vec::new();
    let mut pending: Vec<(QuestionId, usize)> = Vec::new();
    let mut actions = Vec::new();
    for op in ops {
        let action = match op {
            Op::User(_) | Op::Text(..) | Op::Thinking(_) | Op::ToolUse(..) | Op::ToolResult(..) => {
                let Some(step) = step_of(op, &mut calls) else {
                    continue;
                };
                Action::Step(step)
            }
            Op::Ask(count) => {
                let id: QuestionId = ids.next_id::<QuestionIdPrefix>();
                let request = Arc::new(QuestionRequest {
                    id,
                    approval_key: format!("s_{}", pending.len() + 1).into(),
                    session_id: "s".into(),
                    questions: questions(*count),
                    tool: None,
                    created_at: 1_000_000,
                    expires_at: Some(1_600_000),
                    asked_by: None,
                    remind_at: None,
                    escalate_at: None,
                    escalate_to: Vec::new(),
                    on_timeout: None,
                    locale: None,
                });
                pending.push((request.id, *count));
                Action::Ask(request)
            }
            Op::Approve => {
                // Approval ids only need to be distinct strings; a question id is one.
                let id: QuestionId = ids.next_id::<QuestionIdPrefix>();
                pending.push((id, 0));
                let mut request = trade_request();
                request.request_id = id.to_string();
                request.approval_key = format!("s_{}", pending.len());
                Action::Approve(request)
            }
            Op::Resolve(n, kind) => {
                if pending.is_empty() {
                    continue;
                }
                let (request_id, count) = pending.remove(n % pending.len());
                let outcome = match (kind % 5, count > 0) {
                    (0, true) => Outcome::Answered(answers(count)),
                    (0, false) => Outcome::Decided(vec![Decision::Approve]),
                    (1, _) => Outcome::Rejected(Some("no".into())),
                    (2, _) => Outcome::TimedOut,
                    (3, _) => Outcome::Cancelled,
                    _ => Outcome::Decided(vec![Decision::Reject { message: None }]),
                };
                Action::Resolve {
                    request_id,
                    outcome,
                }
            }
            Op::Noise => Action::Noise,
        };
        actions.push(action);
    }
    actions
}

/// The step a step op stands for, given the tool calls so far (which it may add to);
/// `None` for a tool result before any call.
fn step_of(op: &Op, calls: &mut Vec<(String, &'static str)>) -> Option<Step> {
    Some(match op {
        Op::User(text) => Step::User { text: text.clone() },
        Op::Text(text, is_final) => Step::Text {
            text: text.clone(),
            is_final: *is_final,
        },
        Op::Thinking(thinking) => Step::Thinking {
            thinking: thinking.clone(),
        },
        Op::ToolUse(tool, label) => {
            let id = format!("tc-{}", calls.len());
            let name = TOOLS[tool % TOOLS.len()];
            calls.push((id.clone(), name));
            Step::ToolUse {
                id,
                name: name.into(),
                input: json!({"n": calls.len()}),
                tool_content_message: label.clone(),
                // Seed 000's example of a tool shown outside groups.
                display_as_content: name == "share_thought",
            }
        }
        Op::ToolResult(n, error) => {
            let (id, name) = calls.get(n % calls.len().max(1)).cloned()?;
            Step::ToolResult {
                tool_use_id: id,
                name: name.into(),
                status: if *error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Success
                },
                content: error.then(|| "failed".to_owned()),
            }
        }
        Op::Ask(_) | Op::Approve | Op::Resolve(..) | Op::Noise => return None,
    })
}

/// `count` questions of two options each.
fn questions(count: usize) -> Vec<QuestionInfo> {
    (0..count)
        .map(|q| {
            QuestionInfo::new(
                format!("Question {q}?"),
                "Q",
                [QuestionOption::new("A", "a"), QuestionOption::new("B", "b")],
            )
        })
        .collect()
}

/// Answers to `count` questions: `A`, skipped, `A`, ...
fn answers(count: usize) -> Vec<Answer> {
    (0..count)
        .map(|q| if q % 2 == 0 { vec!["A".into()] } else { vec![] })
        .collect()
}

/// The record an action stands for in session `s`, if any.
fn record_of(action: &Action) -> Option<Record> {
    match action {
        Action::Step(step) => Some(Record::Step(step.clone())),
        Action::Ask(request) => Some(Record::Request(RequestEvent::Asked(Request::question(
            request.id.to_string(),
            &request.questions,
            Some(600),
        )))),
        Action::Approve(request) => Some(Record::Request(RequestEvent::Asked(request.clone()))),
        Action::Resolve {
            request_id,
            outcome,
        } => Some(resolved(&request_id.to_string(), outcome.clone())),
        Action::Noise => None,
    }
}

/// A request an agent of [`act`] waits on.
enum Asked {
    Question(PendingQuestion),
    Approval(PendingApproval),
}

/// Does `op` through `hub` as an agent in session `s` would: steps recorded, questions and
/// approvals asked and answered (or dropped: cancelled).
async fn act(
    hub: &RequestHub,
    op: &Op,
    calls: &mut Vec<(String, &'static str)>,
    pending: &mut Vec<(Asked, usize)>,
) {
    match op {
        Op::Ask(count) => {
            let mut asked = hub
                .questions()
                .ask("s", questions(*count))
                .timeout(Timeout::Never)
                .submit()
                .unwrap();
            asked.recorded().await.unwrap();
            pending.push((Asked::Question(asked), *count));
        }
        Op::Approve => {
            let trade = ToolCall::new(
                "execute_trade",
                json!({"symbol": "VNM", "quantity": 100, "side": "buy", "price": 82000}),
            );
            let mut asked = hub
                .approvals()
                .request("s", vec![trade])
                .timeout(Timeout::Never)
                .submit()
                .unwrap();
            asked.recorded().await.unwrap();
            pending.push((Asked::Approval(asked), 0));
        }
        Op::Resolve(n, kind) => {
            if pending.is_empty() {
                return;
            }
            let (asked, count) = pending.remove(n % pending.len());
            match (asked, kind % 5) {
                (Asked::Question(asked), 0) => {
                    let id = asked.id();
                    hub.questions()
                        .reply(id, answers(count))
                        .unwrap()
                        .await
                        .unwrap();
                }
                (Asked::Question(asked), 1 | 4) => {
                    let reason = (kind % 5 == 1).then(|| "no".to_owned());
                    hub.questions()
                        .reject(asked.id(), reason)
                        .unwrap()
                        .await
                        .unwrap();
                }
                (Asked::Approval(asked), 0 | 1 | 4) => {
                    let decision = match kind % 5 {
                        0 => ApprovalDecision::Approve,
                        1 => ApprovalDecision::Respond {
                            message: "no".into(),
                        },
                        _ => ApprovalDecision::Reject { message: None },
                    };
                    let reply = ApprovalReply::new([decision]);
                    hub.approvals()
                        .reply(asked.id(), reply)
                        .unwrap()
                        .await
                        .unwrap();
                }
                // Dropped: cancelled.
                (asked, _) => drop(asked),
            }
        }
        Op::Noise => {
            let elsewhere = Step::Thinking {
                thinking: "elsewhere".into(),
            };
            record(hub, "other", elsewhere).await;
        }
        step => {
            if let Some(step) = step_of(step, calls) {
                record(hub, "s", step).await;
            }
        }
    }
}

/// What a client has after the history (read back from its JSON) and the frames after it.
fn resumed(history: &History, frames: impl IntoIterator<Item = Frame>) -> ClientView {
    let json = serde_json::to_string(history).unwrap();
    let read: History = serde_json::from_str(&json).unwrap();
    assert_eq!(&read, history, "the history reads back from its JSON");
    let mut view = ClientView::from_history(&read);
    for frame in frames {
        view.apply(&frame);
    }
    view
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Pure encoder, every record kind: for every cut between records, the history of the
    /// frames before it, read back from JSON and continued with the frames after it, gives
    /// the blocks of the whole stream.
    #[test]
    fn history_then_replay_equals_live_for_every_cut(ops in proptest::collection::vec(op(), 0..40)) {
        let mut encoder = Encoder::new();
        let entries: Vec<(u64, Vec<Frame>)> = actions(&ops)
            .iter()
            .filter_map(record_of)
            .enumerate()
            .map(|(position, record)| (position as u64 + 1, encoder.encode(&record)))
            .collect();
        let mut live = ClientView::new();
        for frame in entries.iter().flat_map(|(_, frames)| frames) {
            let json = serde_json::to_value(frame).unwrap();
            prop_assert_eq!(&serde_json::from_value::<Frame>(json).unwrap(), frame);
            live.apply(frame);
        }
        let mut before = ClientView::new();
        for cut in 0..=entries.len() {
            if cut > 0 {
                for frame in &entries[cut - 1].1 {
                    before.apply(frame);
                }
            }
            let cursor = match cut {
                0 => FrameCursor::START,
                cut => FrameCursor { origin: 1, record: cut as u64, frame: None },
            };
            let history = before.history(cursor);
            let after = entries
                .iter()
                .filter(|(position, _)| *position > history.last_event_id.record)
                .flat_map(|(_, frames)| frames.iter().cloned());
            let resumed = resumed(&history, after);
            prop_assert_eq!(resumed.blocks(), live.blocks());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Transcripts over every kind of hub: an agent does part of a session (with another
    /// session's steps in between) and a client reads the history and opens the stream
    /// from its cursor; the agent does the rest. The history plus the frames the stream
    /// yields gives the blocks of the whole stream, the same frames a stream opened later
    /// from that cursor yields, and the same history the session has at the end.
    #[test]
    fn transcripts_history_then_stream_equals_live(
        ops in proptest::collection::vec(op(), 0..40),
        cut in any::<prop::sample::Index>(),
    ) {
        let cut = cut.index(ops.len() + 1);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            for (name, hub, transcripts) in hubs().await {
                let (mut calls, mut pending) = (Vec::new(), Vec::new());
                for op in &ops[..cut] {
                    act(&hub, op, &mut calls, &mut pending).await;
                }
                let history = transcripts.history("s").await.unwrap();
                let mut watching = transcripts.follow("s", Some(history.last_event_id)).await.unwrap();
                for op in &ops[cut..] {
                    act(&hub, op, &mut calls, &mut pending).await;
                }
                drop(pending);
                // Cancellations over a shared store are the store's to take: let them.
                tokio::time::sleep(Duration::from_secs(1)).await;

                let streamed = drain(&mut watching).await;
                let mut later = transcripts.follow("s", Some(history.last_event_id)).await.unwrap();
                assert_eq!(drain(&mut later).await, streamed, "{name}");
                let mut watched = ClientView::new();
                for frame in drain(&mut transcripts.follow("s", None).await.unwrap()).await {
                    watched.apply(&frame.frame);
                }
                let resumed = resumed(&history, streamed.into_iter().map(|frame| frame.frame));
                assert_eq!(resumed.blocks(), watched.blocks(), "{name}");
                let end = transcripts.history("s").await.unwrap();
                assert_eq!(end, watched.history(end.last_event_id), "{name}");
            }
        });
    }
}
