//! What the encoder consumes: the agent's steps and the lifecycle of human-input requests.
//!
//! Steps come from the agent runtime ([`AgentStep::record`], or `POST /session/{id}/step`
//! in server mode); request events come from the question and approval services. With a
//! store, both are records of the session's history in the store, in the order the store
//! took them; without one, both travel on the same bus, whose order is then the
//! transcript's. Either way a step recorded before a question is asked is before it.
//!
//! This module also reads records back: from a bus event ([`Record::of_event`]) and from a
//! record of a session's history in a store ([`Record::of_change`]), through one mapping.
//! Decisions are the question crate's own types ([`Decision`]); actions and review configs
//! become the stream's narrower shapes by `From` impls, never through JSON, so the
//! compiler checks every field that crosses.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use askbus_bus::{Envelope, Event};
pub use askbus_question::{Decision, DecisionType, EditedAction};

use askbus_question::{
    Action, Answer, ApprovalAsked, ApprovalCancelled, ApprovalId, ApprovalOutcome, ApprovalReplied,
    ApprovalTimedOut, Identity, NO_PREFERENCE, QuestionAsked, QuestionCancelled, QuestionId,
    QuestionInfo, QuestionOption, QuestionOutcome, QuestionRejected, QuestionReplied,
    QuestionRequest, QuestionTimedOut, RecordedChange, RequestHub, is_skipped,
};
use askbus_store::{Ack, ChangeKind, SessionEvent, StoreError, Write};
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
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(description = "One thing the agent did, as its runtime records it: \
        `{\"type\": \"tool_use\", \"id\": \"tc-1\", \"name\": \"web_search\", \"input\": {...}}`.")
)]
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
        /// Seed 000's per-tool `display_as_content`: show this call and its result outside
        /// groups (closing the open one), as a question is. Defaults to `false`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        display_as_content: bool,
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
/// Runtimes [record](Self::record) it through the hub their questions use, which keeps it
/// in the session's history beside the requests, in one order: a question asked after a
/// tool call is always encoded after it. (Publishing it on a hub's bus directly reaches the
/// histories only of a hub without a store.)
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
        /// The name of who decided it (or cancelled it), when the outcome says.
        answered_by: Option<String>,
    },
}

/// A waiting request, already in the seeds' `approval_request` terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request's id (`que_…` or `apr_…`).
    pub request_id: String,
    /// The key a client answers with: the request's `"{session_id}_{n}"` (questions and
    /// approvals counted together), or the id of a question recorded before keys were given.
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

/// A tool call up for review (seed 001's `actions[]`), as the stream shows it: the question
/// crate's [`Action`] without its `args_schema`.
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

/// What the human may decide about one action, as the stream shows it (the question
/// crate's [`ReviewConfig`](askbus_question::ReviewConfig) without its quorum and
/// reviewers, which are the service's business, not the transcript's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewConfig {
    /// The action (tool) name this applies to.
    pub action_name: String,
    /// The decisions offered.
    pub allowed_decisions: Vec<DecisionType>,
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

    /// Records the step in its session's history, through `hub`: queued at once, in its
    /// place among the hub's requests (a question asked after this call is after the step);
    /// the returned [`Recording`] completes once the step is durable.
    ///
    /// - A hub with a store writes it to the store's history and publishes it on the bus,
    ///   for event streams and the session streams that wait for news.
    /// - A hub sharing its store with other instances only writes it: every instance, this
    ///   one included, publishes it when it reads it in the store's change log.
    /// - A hub without a store publishes it on the bus, from which
    ///   [`Transcripts`](crate::Transcripts) keep the history in memory.
    ///
    /// # Examples
    ///
    /// ```
    /// use askbus_bus::Bus;
    /// use askbus_protocol::{AgentStep, Step, Transcripts};
    /// use askbus_question::RequestHub;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let hub = RequestHub::new(Bus::new());
    /// let transcripts = Transcripts::new(&hub);
    /// AgentStep::new("s1", Step::User { text: "Hi".into() }).record(&hub).await.unwrap();
    /// assert_eq!(transcripts.history("s1").await.unwrap().messages.len(), 1);
    /// # }
    /// ```
    pub fn record(self, hub: &RequestHub) -> Recording {
        let Some(store) = hub.store() else {
            hub.bus().publish(self);
            return Recording { ack: None };
        };
        let event = SessionEvent {
            session_id: self.session_id.to_string(),
            event_type: Self::TYPE.to_owned(),
            properties: serde_json::to_string(&self).unwrap_or_default(),
        };
        let ack = store.write(Write::Event(event));
        if !hub.shares_store() {
            hub.bus().publish(self);
        }
        Recording { ack: Some(ack) }
    }
}

/// Completes once an [`AgentStep::record`]ed step is durable in the hub's store (at once
/// without a store).
///
/// # Errors
///
/// [`StoreError`] when the store could not record it.
///
/// # Cancel safety
///
/// Dropping it only stops waiting: the step is recorded all the same.
#[derive(Debug)]
pub struct Recording {
    /// The store's acknowledgement, if there is a store.
    ack: Option<Ack>,
}

impl Future for Recording {
    type Output = Result<(), StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.ack {
            None => Poll::Ready(Ok(())),
            Some(ack) => Pin::new(ack).poll(cx).map(|written| written.map(drop)),
        }
    }
}

/// The properties of an `agent.step` event, read back.
#[derive(Deserialize)]
struct StepProperties {
    /// The step.
    step: Step,
}

impl Record {
    /// The session and record a bus event stands for, if it concerns a session's
    /// timeline: an [`AgentStep`], or a question's or approval's event.
    pub fn of_event(envelope: &Envelope) -> Option<(Arc<str>, Self)> {
        let event = TimelineEvent::of(envelope)?;
        Some((Arc::clone(event.session_id), event.record()))
    }

    /// The record a record of a session's history in a store stands for; `None` for one
    /// that is no part of a timeline (another event type) or cannot be read back.
    pub fn of_change(change: &ChangeKind) -> Option<Self> {
        if let ChangeKind::Event(event) = change {
            if event.event_type != AgentStep::TYPE {
                return None;
            }
            let properties: StepProperties = serde_json::from_str(&event.properties).ok()?;
            return Some(Self::Step(properties.step));
        }
        Some(match RecordedChange::read(change).ok()?? {
            RecordedChange::QuestionAsked(request) => asked_question(&request),
            RecordedChange::ApprovalAsked(request) => asked_approval(&request),
            RecordedChange::QuestionEnded {
                id,
                outcome,
                decided_by,
            } => ended(
                id.to_string(),
                question_outcome(&outcome),
                decided_by.as_ref(),
            ),
            RecordedChange::ApprovalEnded {
                id,
                outcome,
                decided_by,
            } => ended(
                id.to_string(),
                approval_outcome(&outcome),
                decided_by_a_human(&outcome, decided_by.as_ref()),
            ),
        })
    }
}

/// A bus event of a session's timeline, before its [`Record`] is built.
///
/// Building an asked request's record (its questions in the seeds' JSON shape) costs
/// several times what the rest of an ask does, so the in-memory history reads only the
/// session and the [`Mark`] of each event as it is published, keeps the event, and builds
/// the record when someone reads it. [`Record::of_event`] is this, built at once: one
/// reading of the bus's event types for both.
pub(crate) struct TimelineEvent<'a> {
    /// The session whose timeline it belongs to.
    pub(crate) session_id: &'a Arc<str>,
    /// What the record will be made of.
    source: Source<'a>,
}

/// Whether a timeline event asks a request, ends one, or is a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// An agent's step.
    Step,
    /// A question or approval asked.
    Asked,
    /// A question or approval ended, however.
    Ended,
}

/// What a [`TimelineEvent`]'s record is made of, borrowed from its event.
enum Source<'a> {
    /// An agent's step.
    Step(&'a Step),
    /// A question asked.
    QuestionAsked(&'a QuestionRequest),
    /// An approval asked.
    ApprovalAsked(&'a askbus_question::ApprovalRequest),
    /// A question's end: its id, its outcome, and who decided it, if someone did.
    QuestionEnded(QuestionId, QuestionOutcome, Option<&'a Identity>),
    /// An approval's end, likewise.
    ApprovalEnded(ApprovalId, ApprovalOutcome, Option<&'a Identity>),
}

impl<'a> TimelineEvent<'a> {
    /// The timeline event `envelope` is, if it is one.
    pub(crate) fn of(envelope: &'a Envelope) -> Option<Self> {
        let (session_id, source) = if let Some(step) = envelope.downcast_ref::<AgentStep>() {
            (&step.session_id, Source::Step(&step.step))
        } else if let Some(asked) = envelope.downcast_ref::<QuestionAsked>() {
            (
                &asked.request.session_id,
                Source::QuestionAsked(&asked.request),
            )
        } else if let Some(asked) = envelope.downcast_ref::<ApprovalAsked>() {
            (
                &asked.request.session_id,
                Source::ApprovalAsked(&asked.request),
            )
        } else if let Some(replied) = envelope.downcast_ref::<QuestionReplied>() {
            let outcome = QuestionOutcome::Replied(Arc::clone(&replied.answers));
            let by = replied.answered_by.as_ref();
            (
                &replied.session_id,
                Source::QuestionEnded(replied.request_id, outcome, by),
            )
        } else if let Some(rejected) = envelope.downcast_ref::<QuestionRejected>() {
            let reason = rejected.reason.clone();
            let outcome = QuestionOutcome::Rejected { reason };
            let by = rejected.answered_by.as_ref();
            (
                &rejected.session_id,
                Source::QuestionEnded(rejected.request_id, outcome, by),
            )
        } else if let Some(expired) = envelope.downcast_ref::<QuestionTimedOut>() {
            let outcome = QuestionOutcome::TimedOut;
            (
                &expired.session_id,
                Source::QuestionEnded(expired.request_id, outcome, None),
            )
        } else if let Some(cancelled) = envelope.downcast_ref::<QuestionCancelled>() {
            let outcome = QuestionOutcome::Cancelled;
            (
                &cancelled.session_id,
                Source::QuestionEnded(cancelled.request_id, outcome, None),
            )
        } else if let Some(replied) = envelope.downcast_ref::<ApprovalReplied>() {
            let outcome = ApprovalOutcome::Replied(Arc::clone(&replied.reply));
            let by = replied.answered_by.as_ref();
            (
                &replied.session_id,
                Source::ApprovalEnded(replied.request_id, outcome, by),
            )
        } else if let Some(expired) = envelope.downcast_ref::<ApprovalTimedOut>() {
            let outcome = ApprovalOutcome::TimedOut;
            (
                &expired.session_id,
                Source::ApprovalEnded(expired.request_id, outcome, None),
            )
        } else if let Some(cancelled) = envelope.downcast_ref::<ApprovalCancelled>() {
            let outcome = ApprovalOutcome::Cancelled;
            (
                &cancelled.session_id,
                Source::ApprovalEnded(cancelled.request_id, outcome, None),
            )
        } else {
            return None;
        };
        Some(Self { session_id, source })
    }

    /// Whether it asks, ends, or is a step.
    pub(crate) fn mark(&self) -> Mark {
        match self.source {
            Source::Step(_) => Mark::Step,
            Source::QuestionAsked(_) | Source::ApprovalAsked(_) => Mark::Asked,
            Source::QuestionEnded(..) | Source::ApprovalEnded(..) => Mark::Ended,
        }
    }

    /// Its record.
    pub(crate) fn record(self) -> Record {
        match self.source {
            Source::Step(step) => Record::Step(step.clone()),
            Source::QuestionAsked(request) => asked_question(request),
            Source::ApprovalAsked(request) => asked_approval(request),
            Source::QuestionEnded(request_id, outcome, by) => {
                ended(request_id.to_string(), question_outcome(&outcome), by)
            }
            Source::ApprovalEnded(request_id, outcome, by) => {
                let by = decided_by_a_human(&outcome, by);
                ended(request_id.to_string(), approval_outcome(&outcome), by)
            }
        }
    }
}

/// Who decided an approval, unless standing grants approved it (`auto_approved_by`): then
/// nobody is named, since no human decided it (the seeds' `answered_by` is a bare name, which
/// would read as the granter's decision).
fn decided_by_a_human<'a>(
    outcome: &ApprovalOutcome,
    by: Option<&'a Identity>,
) -> Option<&'a Identity> {
    match outcome {
        ApprovalOutcome::Replied(reply) if !reply.auto_approved_by.is_empty() => None,
        _ => by,
    }
}

/// A question asked, as a record.
fn asked_question(request: &QuestionRequest) -> Record {
    let timeout = timeout_seconds(request.created_at, request.expires_at);
    let mut shown = Request::question(request.id.to_string(), &request.questions, timeout);
    // The seeds' key when the request has one (every request asked since keys were given).
    if !request.approval_key.is_empty() {
        shown.approval_key = request.approval_key.to_string();
    }
    Record::Request(RequestEvent::Asked(shown))
}

/// An approval asked, as a record.
fn asked_approval(request: &askbus_question::ApprovalRequest) -> Record {
    let timeout = timeout_seconds(request.created_at, request.expires_at);
    Record::Request(RequestEvent::Asked(Request::approval(request, timeout)))
}

/// A request's outcome, decided `by` someone (if the outcome says), as a record.
fn ended(request_id: String, outcome: Outcome, by: Option<&Identity>) -> Record {
    Record::Request(RequestEvent::Resolved {
        request_id,
        outcome,
        answered_by: by.map(|identity| identity.name.to_string()),
    })
}

/// A question's outcome in the encoder's terms.
fn question_outcome(outcome: &QuestionOutcome) -> Outcome {
    match outcome {
        QuestionOutcome::Replied(answers) => Outcome::Answered(answers.to_vec()),
        QuestionOutcome::Rejected { reason } => Outcome::Rejected(reason.clone()),
        // The transcript format has no fallback: a default answer is a timeout there, never
        // an answer.
        QuestionOutcome::TimedOut | QuestionOutcome::Defaulted(_) => Outcome::TimedOut,
        QuestionOutcome::Cancelled => Outcome::Cancelled,
    }
}

/// An approval's outcome in the encoder's terms.
fn approval_outcome(outcome: &ApprovalOutcome) -> Outcome {
    match outcome {
        ApprovalOutcome::Replied(reply) => Outcome::Decided(reply.decisions.clone()),
        ApprovalOutcome::Rejected { reason } => match *reason {},
        ApprovalOutcome::TimedOut | ApprovalOutcome::Defaulted(_) => Outcome::TimedOut,
        ApprovalOutcome::Cancelled => Outcome::Cancelled,
    }
}

/// A request's timeout in whole seconds (rounded), from its creation and expiry times.
fn timeout_seconds(created_at: u64, expires_at: Option<u64>) -> Option<u64> {
    expires_at.map(|expires| expires.saturating_sub(created_at).saturating_add(500) / 1000)
}

impl Request {
    /// A question request as the seeds show it: one `ask_user_question` action whose `args`
    /// are `{"questions": [...]}` in the seeds' field names (`multiSelect`, and an
    /// [`OTHER_LABEL`] option with `"input": true` when a custom answer is allowed), the
    /// review config of seed 000, and the timeout in seconds. The "Other" option is not added
    /// when the question already offers one, or a free-text option of its own.
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
            action_requests: request.action_requests.iter().map(Into::into).collect(),
            review_configs: request.review_configs.iter().map(Into::into).collect(),
            timeout_seconds,
            questions: Vec::new(),
        }
    }
}

impl From<&Action> for ActionRequest {
    fn from(action: &Action) -> Self {
        Self {
            name: action.name.clone(),
            args: action.args.clone(),
            tool_use_id: action.tool_use_id.clone(),
            description: action.description.clone(),
        }
    }
}

impl From<&askbus_question::ReviewConfig> for ReviewConfig {
    fn from(config: &askbus_question::ReviewConfig) -> Self {
        Self {
            action_name: config.action_name.clone(),
            allowed_decisions: config.allowed_decisions.clone(),
        }
    }
}

/// One option of a question in the seeds' shape: `label`, `description`, and `"input":
/// true` on the free-text option only (as the question crate writes it).
fn option_json(option: &QuestionOption) -> Value {
    let mut shown = json!({"label": option.label, "description": option.description});
    if option.input {
        shown["input"] = Value::Bool(true);
    }
    shown
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

/// One question in the seeds' shape. A question that takes custom answers gets an
/// [`OTHER_LABEL`] option with `"input": true`, unless it offers a free-text option of its
/// own (its `"input": true`, the seeds' "Khác") or an option already labelled so.
fn question_json(info: &QuestionInfo) -> Value {
    let mut options: Vec<Value> = info.options.iter().map(option_json).collect();
    if info.custom
        && !info.offers_free_text()
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
