//! What the encoder consumes: the agent's steps and the lifecycle of human-input requests.
//!
//! Steps come from the agent runtime ([`AgentStep`] on the bus, or `POST /session/{id}/step`
//! in server mode); request events come from the question and approval services. Both travel
//! on the same bus, so the bus's event order is the one order in which a session's
//! transcript is written.

use std::collections::BTreeMap;
use std::sync::Arc;

use askbus_bus::Event;
use askbus_question::{Answer, NO_PREFERENCE, QuestionInfo, is_skipped};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The tool name under which a question is shown: the seeds' `ask_user_question`.
///
/// The encoder drops `tool_use` and `tool_result` steps of this tool: the question's own
/// `approval_request` block replaces them, outside any group.
pub const QUESTION_TOOL: &str = "ask_user_question";

/// The label of the free-text choice appended to questions that accept a custom answer.
pub const OTHER_LABEL: &str = "Other";

/// The description of the free-text choice ([`OTHER_LABEL`]).
pub const OTHER_DESCRIPTION: &str = "Enter a custom value";

/// One thing the agent did, as its runtime records it.
///
/// The JSON form is the body of `POST /session/{id}/step`:
/// `{"type": "tool_use", "id": "tc-1", "name": "web_search", "input": {...}}`.
///
/// # Examples
///
/// ```
/// use askbus_protocol::Step;
///
/// let step: Step = serde_json::from_str(r#"{"type": "text", "text": "Done.", "is_final": true}"#).unwrap();
/// assert_eq!(step, Step::Text { text: "Done.".into(), is_final: true });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// A message the user sent.
    User {
        /// What the user wrote.
        text: String,
    },
    /// Text for the user, shown outside groups: an intermediate remark (`is_part` on the
    /// wire), or the final answer (`is_final`).
    Text {
        /// The text.
        text: String,
        /// Whether this is the turn's final answer. Defaults to `false`.
        #[serde(default)]
        is_final: bool,
    },
    /// The model's reasoning, shown inside a group.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// A tool call, shown inside a group.
    ToolUse {
        /// The call's id; its result names it as `tool_use_id`.
        id: String,
        /// The tool's name.
        name: String,
        /// The call's arguments.
        #[serde(default)]
        input: Value,
        /// A short label for the UI; absent or empty: the tool name made readable
        /// (`web_search` -> `Web search`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_content_message: Option<String>,
    },
    /// A tool call's result, shown inside a group.
    ToolResult {
        /// The id of the call this answers.
        tool_use_id: String,
        /// The tool's name.
        name: String,
        /// Whether the tool succeeded. Defaults to `success`.
        #[serde(default)]
        status: ToolStatus,
        /// The result text, if the UI should see it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
    },
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It ran and succeeded.
    #[default]
    Success,
    /// It failed, or was rejected or cancelled.
    Error,
}

/// `agent.step`: a step recorded for a session.
///
/// Runtimes publish it on the bus (`bus.publish(AgentStep::new(session, step))`) rather than
/// writing to a transcript directly, so that steps and request events share the bus's one
/// order: a question asked after a tool call is always encoded after it.
#[derive(Debug, Clone, Serialize)]
pub struct AgentStep {
    /// The session the step belongs to.
    #[serde(rename = "sessionID")]
    pub session_id: Arc<str>,
    /// The step.
    pub step: Step,
}

/// A human-input request's lifecycle event, as the encoder sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestEvent {
    /// A request is waiting for a human.
    Asked(Request),
    /// A request ended.
    Resolved {
        /// The request's id (`que_…` or `apr_…`).
        request_id: String,
        /// How it ended.
        outcome: Outcome,
    },
}

/// A waiting request, already in the seeds' `approval_request` terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request's id (`que_…` or `apr_…`).
    pub request_id: String,
    /// The key a client answers with: the approval's `"{session_id}_{n}"`, or for a
    /// question its id.
    pub approval_key: String,
    /// Question (shown outside groups) or tool approval (shown inside the current group).
    pub kind: RequestKind,
    /// What is to be reviewed: one `ask_user_question` action for a question.
    pub action_requests: Vec<ActionRequest>,
    /// What the human may decide, per action.
    pub review_configs: Vec<ReviewConfig>,
    /// Seconds before the request times out; `None`: never.
    pub timeout_seconds: Option<u64>,
    /// For a question, the question texts, in order, to key its answers by.
    pub questions: Vec<String>,
}

/// Which kind of request, which decides where it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// A question: closes the open group and is shown outside groups.
    Question,
    /// A tool approval: shown inside the current group (opening one if none is open).
    Approval,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A question was answered: one answer per question, in order.
    Answered(Vec<Answer>),
    /// An approval was decided: one decision per action.
    Decided(Vec<Decision>),
    /// A question was rejected, with the human's reason if given.
    Rejected(Option<String>),
    /// Nobody answered in time.
    TimedOut,
    /// The asker went away or its session was cancelled.
    Cancelled,
}

/// A tool call up for review (seed 001's `actions[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRequest {
    /// The tool's name (`ask_user_question` for a question).
    pub name: String,
    /// The call's arguments (`{"questions": [...]}` for a question).
    pub args: Value,
    /// The id of the matching `tool_use` block, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Why the call needs review, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What the human may decide about one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewConfig {
    /// The action (tool) name this applies to.
    pub action_name: String,
    /// The decisions offered.
    pub allowed_decisions: Vec<DecisionType>,
}

/// The kinds of [`Decision`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionType {
    /// Run the action as asked.
    Approve,
    /// Run it with edited arguments.
    Edit,
    /// Do not run it.
    Reject,
    /// Do not run it; tell the model something instead.
    Respond,
}

/// A human's decision about one action (seed 001).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Decision {
    /// Run the action as asked.
    Approve,
    /// Run it with these arguments instead.
    Edit {
        /// The replacement call.
        edited_action: EditedAction,
    },
    /// Do not run it.
    Reject {
        /// Why, if the human said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Do not run it; answer the model with this message.
    Respond {
        /// What to tell the model.
        message: String,
    },
}

/// The call a human substituted in an `edit` decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditedAction {
    /// The tool's name.
    pub name: String,
    /// The edited arguments.
    pub args: Value,
}

/// Everything the encoder consumes: a step, or a request event.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// The agent did something.
    Step(Step),
    /// A human-input request was asked or ended.
    Request(RequestEvent),
}

impl Event for AgentStep {
    const TYPE: &'static str = "agent.step";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl AgentStep {
    /// `step`, recorded for `session_id`.
    pub fn new(session_id: impl Into<Arc<str>>, step: Step) -> Self {
        Self {
            session_id: session_id.into(),
            step,
        }
    }
}

impl Request {
    /// A question request as the seeds show it: one `ask_user_question` action whose `args`
    /// are `{"questions": [...]}` in the seeds' field names (`multiSelect`, and an
    /// [`OTHER_LABEL`] option with `"input": true` when a custom answer is allowed), the
    /// review config of seed 000, and the timeout in seconds. The "Other" option is not added
    /// twice when the question already offers one.
    pub fn question(
        request_id: impl Into<String>,
        questions: &[QuestionInfo],
        timeout_seconds: Option<u64>,
    ) -> Self {
        let request_id = request_id.into();
        let shown: Vec<Value> = questions.iter().map(question_json).collect();
        Self {
            approval_key: request_id.clone(),
            request_id,
            kind: RequestKind::Question,
            action_requests: vec![ActionRequest {
                name: QUESTION_TOOL.to_owned(),
                args: json!({ "questions": shown }),
                tool_use_id: None,
                description: None,
            }],
            review_configs: vec![ReviewConfig {
                action_name: QUESTION_TOOL.to_owned(),
                allowed_decisions: vec![
                    DecisionType::Approve,
                    DecisionType::Edit,
                    DecisionType::Reject,
                ],
            }],
            timeout_seconds,
            questions: questions.iter().map(|info| info.question.clone()).collect(),
        }
    }
}

impl Request {
    /// An approval request (seed 001) as the encoder sees it: its actions, review configs
    /// and `approval_key`, shown inside the current group.
    pub fn approval(
        request: &askbus_question::ApprovalRequest,
        timeout_seconds: Option<u64>,
    ) -> Self {
        Self {
            request_id: request.id.to_string(),
            approval_key: request.approval_key.to_string(),
            kind: RequestKind::Approval,
            action_requests: same_shape(&request.action_requests),
            review_configs: same_shape(&request.review_configs),
            timeout_seconds,
            questions: Vec::new(),
        }
    }
}

/// A value of the question crate as the protocol's own type of the same wire shape (the
/// seeds' snake_case names are shared; this crate keeps its own types so the stream's wire
/// is defined here). A shape that does not convert gives the default, never a panic.
pub(crate) fn same_shape<From: Serialize, To: DeserializeOwned + Default>(value: &From) -> To {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .unwrap_or_default()
}

/// Answers keyed by question text, as the seeds submit and show them: selections joined with
/// `", "`, a skipped question as [`NO_PREFERENCE`]. Answers beyond the questions are dropped.
pub fn keyed_answers(questions: &[String], answers: &[Answer]) -> BTreeMap<String, String> {
    questions
        .iter()
        .zip(answers)
        .map(|(question, answer)| {
            let text = if is_skipped(answer) {
                NO_PREFERENCE.to_owned()
            } else {
                answer.join(", ")
            };
            (question.clone(), text)
        })
        .collect()
}

/// One question in the seeds' shape.
fn question_json(info: &QuestionInfo) -> Value {
    let mut options: Vec<Value> = info
        .options
        .iter()
        .map(|option| json!({ "label": option.label, "description": option.description }))
        .collect();
    if info.custom
        && !info
            .options
            .iter()
            .any(|option| option.label == OTHER_LABEL)
    {
        options.push(json!({
            "label": OTHER_LABEL,
            "description": OTHER_DESCRIPTION,
            "input": true,
        }));
    }
    json!({
        "question": info.question,
        "header": info.header,
        "multiSelect": info.multiple,
        "options": options,
    })
}
