//! The question data model and its events, with OpenCode's field names on the wire.
//!
//! The serde names (`sessionID`, `requestID`, `tool.messageID`, `tool.callID`, camelCase
//! elsewhere) match OpenCode's `question` module, so OpenCode clients read askbus events and
//! requests unchanged.

use std::sync::Arc;

use askbus_bus::Event;

use crate::identity::Identity;
use crate::ids::QuestionId;
use crate::outcome::OutcomeKind;
use serde::{Deserialize, Serialize};

/// The answer to one question: the selected labels, or custom text.
///
/// An empty list means the question was skipped; so does [`NO_PREFERENCE`] alone.
pub type Answer = Vec<String>;

/// The answers to every question of a request, one per question, in order; shared, not
/// copied, between the asker, the event stream and the resolved-request memory.
pub type Answers = Arc<[Answer]>;

/// The answer that means "skipped" in the seeds' convention, accepted for every question.
pub const NO_PREFERENCE: &str = "[No preference]";

/// One choice offered for a question.
// Besides OpenCode's `{label, description}`, the seeds' shape is accepted: `description`
// may be left out, and `{"label": "Khác", "input": true}` marks the option whose choice is
// an answer typed by the human (the question's free-text choice, in place of the "Other" a
// UI would otherwise add). Plain comments, not docs: the docs are the schema's descriptions,
// which models and API clients read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QuestionOption {
    /// Display text, one to five words.
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub label: String,
    /// What choosing this option means. Optional.
    // No `default` in the OpenAPI schema, here or below: generators (openapi-typescript's
    // defaults) read a default as "always present", and an answer may leave it out.
    #[serde(default)]
    pub description: String,
    /// `true` marks the free-text option: choosing it means typing an answer of one's own,
    /// so the question takes custom answers and gets no separate "Other".
    // Written only when `true`, so OpenCode's option shape is unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input: bool,
}

/// One question shown to the human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QuestionInfo {
    /// The complete question.
    #[cfg_attr(feature = "openapi", schema(pattern = r"\S"))]
    pub question: String,
    /// A very short label shown as a chip, at most 30 characters. Optional: empty shows no
    /// chip.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 30))]
    pub header: String,
    /// The offered choices.
    pub options: Vec<QuestionOption>,
    /// Whether several options may be selected. Defaults to `false`. Also accepted as
    /// `multiSelect`.
    #[serde(default, alias = "multiSelect")]
    pub multiple: bool,
    /// Whether the human may type an answer of their own ("Other"). Defaults to `true`;
    /// an option with `"input": true` requires it.
    #[serde(default = "custom_by_default")]
    pub custom: bool,
}

/// The tool call that asked, so a UI can show the question in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolRef {
    /// The message holding the tool call.
    #[serde(rename = "messageID")]
    pub message_id: String,
    /// The tool call's id.
    #[serde(rename = "callID")]
    pub call_id: String,
}

/// A pending (or resolved) request of one or more questions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QuestionRequest {
    /// Ascending id; creation order.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "que_01JZ6Q3V8R5M2K7D4T9WXYZABC"))]
    pub id: QuestionId,
    /// The session (conversation, run) that asked.
    #[serde(rename = "sessionID")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub session_id: Arc<str>,
    /// The seeds' key, `{sessionID}_{n}`: the session's `n`th request, its questions and
    /// approvals counted together from 1. Addresses the request as its id does. Empty (and
    /// absent on the wire) for requests recorded before keys were given.
    #[serde(rename = "approvalKey", default, skip_serializing_if = "str::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "abc-123_1"))]
    pub approval_key: Arc<str>,
    /// The questions, answered together.
    pub questions: Vec<QuestionInfo>,
    /// The tool call that asked, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolRef>,
    /// Creation time, milliseconds since the Unix epoch.
    #[serde(rename = "createdAt")]
    pub created_at: u64,
    /// When the request times out, milliseconds since the Unix epoch; absent: never.
    #[serde(rename = "expiresAt", default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Who asked: the identity of the credential that made the request (`local` without
    /// credentials); absent on requests recorded before identities were.
    #[serde(rename = "askedBy", default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<Identity>,
    /// When `question.reminded` is due, milliseconds since the Unix epoch; absent: no
    /// reminder (see [`FollowUp`](crate::FollowUp)).
    #[serde(rename = "remindAt", default, skip_serializing_if = "Option::is_none")]
    pub remind_at: Option<u64>,
    /// When the request escalates to `escalateTo` (`question.escalated`), milliseconds
    /// since the Unix epoch; absent: never.
    #[serde(
        rename = "escalateAt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub escalate_at: Option<u64>,
    /// Who the request escalates to (credential names); empty: nobody.
    #[serde(rename = "escalateTo", default, skip_serializing_if = "Vec::is_empty")]
    pub escalate_to: Vec<String>,
    /// What applies on expiry when it is not `reject`: `escalate`, or `{"answer": [...]}`
    /// (a default answer, applied as the asker's fallback, never as a human's).
    #[serde(rename = "onTimeout", default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<OnTimeout>,
    /// The language the asker wrote in and its reader should see, as a BCP 47 tag
    /// (`vi`, `zh-CN`); absent: each reader's own. The web UI shows the request's card in
    /// it, the tool writes its results to the model in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "vi"))]
    pub locale: Option<Arc<str>>,
}

/// `question.asked`: a new request is waiting; its properties are the request itself.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct QuestionAsked {
    /// The new request.
    pub request: Arc<QuestionRequest>,
}

/// `question.replied`: a human answered.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionReplied {
    /// The request's session.
    #[serde(rename = "sessionID")]
    pub session_id: Arc<str>,
    /// The request answered.
    #[serde(rename = "requestID")]
    pub request_id: QuestionId,
    /// One answer per question.
    pub answers: Answers,
    /// Who answered.
    #[serde(rename = "answeredBy", skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<Identity>,
}

/// `question.rejected`: a human refused to answer.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionRejected {
    /// The request's session.
    #[serde(rename = "sessionID")]
    pub session_id: Arc<str>,
    /// The request rejected.
    #[serde(rename = "requestID")]
    pub request_id: QuestionId,
    /// Why, if the human said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who rejected it.
    #[serde(rename = "answeredBy", skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<Identity>,
}

/// `question.timed_out`: nobody answered before the deadline.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionTimedOut {
    /// The request's session.
    #[serde(rename = "sessionID")]
    pub session_id: Arc<str>,
    /// The request that expired.
    #[serde(rename = "requestID")]
    pub request_id: QuestionId,
    /// The fallback applied when it was not a plain rejection: `default_answer` (see
    /// `defaultAnswers`) or `escalate` (escalated, waited once more, then rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<&'static str>,
    /// With `fallback: "default_answer"`: the asker's default answer that applies, one per
    /// question. Nobody answered: these are not a human's.
    #[serde(rename = "defaultAnswers", skip_serializing_if = "Option::is_none")]
    pub default_answers: Option<Answers>,
}

/// `question.not_recorded`: the store refused the outcome of this request, whose event
/// (`outcome`: `replied`, `rejected`, `timed_out` or `cancelled`) came before it. That
/// outcome does not stand: the asker was handed the store's failure, not the answer, and
/// every read of the request answers `503 outcome_not_recorded`. A client that showed the
/// outcome shows it as not recorded. Only where one server's store follows it (SQLite);
/// a shared store takes an outcome before it is announced.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionNotRecorded {
    /// The request's session.
    #[serde(rename = "sessionID")]
    pub session_id: Arc<str>,
    /// The request whose outcome was not recorded.
    #[serde(rename = "requestID")]
    pub request_id: QuestionId,
    /// Which outcome was announced and not recorded.
    pub outcome: OutcomeKind,
}

/// `question.reminded`: nobody answered yet, and the request's reminder fell due.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionReminded {
    /// The request's session.
    #[serde(rename = "sessionID")]
    pub session_id: Arc<str>,
    /// The request still waiting.
    #[serde(rename = "requestID")]
    pub request_id: QuestionId,
}

/// `question.escalated`: nobody answered yet, and the request now goes to `escalatedTo`
/// as well.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionEscalated {
    /// The request's session.
    #[serde(rename = "sessionID")]
    pub session_id: Arc<str>,
    /// The request still waiting.
    #[serde(rename = "requestID")]
    pub request_id: QuestionId,
    /// Who it escalated to (credential names).
    #[serde(rename = "escalatedTo")]
    pub escalated_to: Vec<String>,
}

/// `question.cancelled`: the asker went away, or its session was cancelled.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionCancelled {
    /// The request's session.
    #[serde(rename = "sessionID")]
    pub session_id: Arc<str>,
    /// The request cancelled.
    #[serde(rename = "requestID")]
    pub request_id: QuestionId,
}

impl Event for QuestionAsked {
    const TYPE: &'static str = "question.asked";

    fn session_id(&self) -> Option<&str> {
        Some(&self.request.session_id)
    }
}

impl Event for QuestionReplied {
    const TYPE: &'static str = "question.replied";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for QuestionRejected {
    const TYPE: &'static str = "question.rejected";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for QuestionTimedOut {
    const TYPE: &'static str = "question.timed_out";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for QuestionNotRecorded {
    const TYPE: &'static str = "question.not_recorded";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for QuestionReminded {
    const TYPE: &'static str = "question.reminded";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for QuestionEscalated {
    const TYPE: &'static str = "question.escalated";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for QuestionCancelled {
    const TYPE: &'static str = "question.cancelled";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl QuestionOption {
    /// An option with a label and a description.
    pub fn new(label: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            description: description.into(),
            input: false,
        }
    }

    /// The free-text option (`"input": true`): choosing it means typing an answer.
    pub fn free_text(label: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            input: true,
            ..Self::new(label, description)
        }
    }
}

impl QuestionInfo {
    /// A single-choice question that also accepts a custom answer.
    pub fn new(
        question: impl Into<String>,
        header: impl Into<String>,
        options: impl IntoIterator<Item = QuestionOption>,
    ) -> Self {
        Self {
            question: question.into(),
            header: header.into(),
            options: options.into_iter().collect(),
            multiple: false,
            custom: true,
        }
    }

    /// Allows several options to be selected.
    #[must_use]
    pub fn multiple(mut self) -> Self {
        self.multiple = true;
        self
    }

    /// Restricts answers to the offered labels (no "Other").
    #[must_use]
    pub fn options_only(mut self) -> Self {
        self.custom = false;
        self
    }

    /// Whether one of the options is the free-text one (`"input": true`), which a UI shows
    /// as the field for a custom answer instead of adding an "Other" of its own.
    pub fn offers_free_text(&self) -> bool {
        self.options.iter().any(|option| option.input)
    }
}

/// Whether `answer` means the question was skipped.
pub fn is_skipped(answer: &[String]) -> bool {
    answer.is_empty() || (answer.len() == 1 && answer[0] == NO_PREFERENCE)
}

fn custom_by_default() -> bool {
    true
}

/// What applies when nobody answered a request by its deadline.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    /// The request times out: nothing was answered (every action of an approval is
    /// rejected). The default.
    #[default]
    Reject,
    /// Escalate at the deadline (unless escalated before), wait the original timeout once
    /// more, then reject.
    Escalate,
    /// Questions only: this answer (one per question, validated as a reply is) applies,
    /// as the asker's fallback, never as a human's answer.
    Answer(Vec<Answer>),
}

impl OnTimeout {
    /// The wire name of the fallback: `reject`, `escalate`, `default_answer`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Reject => "reject",
            Self::Escalate => "escalate",
            Self::Answer(_) => "default_answer",
        }
    }
}
