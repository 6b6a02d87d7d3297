//! Session interrupt state (seed 002): "is this session waiting for a human, and on what?"
//!
//! A session is *interrupted* while it has a pending request of either kind. Its
//! [`InterruptState`] describes the **oldest** pending one in the seed's shape (`reason`,
//! form `fields` of type text / confirm / select, `timestamp` in Unix seconds, and the
//! request id as `checkpoint_id`), plus the request itself. Resuming answers that request
//! with a [`ResumeInput`]; a request is consumed once, so a second resume of the same
//! checkpoint finds nothing pending.
//!
//! Across kinds, "oldest" is id order: the two services of a [`RequestHub`](crate::RequestHub)
//! draw their ids from one monotonic source, so it is creation order, exactly.
//!
//! The [confirmation detector](confirmation_phrase) lets a runtime turn model text that
//! asks for confirmation ("Shall I proceed?") into an approval request.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::approval_model::{Action, ApprovalReply, ApprovalRequest};
use crate::ids::RequestId;
use crate::model::{Answer, QuestionRequest};

/// What a session is waiting on: the seed's `InterruptState`, plus the request.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InterruptState {
    /// The interrupted session.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub session_id: Arc<str>,
    /// The seed's `agent_name`: who asked (the name of the asking credential, `local`
    /// without credentials); absent for requests recorded before askers were.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub agent_name: Option<Arc<str>>,
    /// What the human is asked, in words: a question's text; an approval's description, if
    /// any, then each call it runs (`name {args}`), whole.
    pub reason: String,
    /// The form a UI shows to collect the input.
    pub fields: Vec<InputField>,
    /// When the request was made, Unix seconds.
    pub timestamp: u64,
    /// The request's id; pass it to `resume` to be sure to answer this very request.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "apr_01JZ6Q3V8R5M2K7D4T9WXYZABC"))]
    pub checkpoint_id: RequestId,
    /// The request itself.
    #[serde(flatten)]
    pub request: PendingRequest,
}

/// A pending request of either kind.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PendingRequest {
    /// Questions to answer.
    Question {
        /// The request.
        request: Arc<QuestionRequest>,
    },
    /// Tool calls to review.
    Approval {
        /// The request.
        request: Arc<ApprovalRequest>,
    },
}

/// The schema of a [`PendingRequest`]: one object, `kind` beside a `request` of either
/// kind, rather than a `oneOf` of two objects, because an [`InterruptState`] flattens it
/// (`allOf`), and code generators take `allOf` of objects only (openapi-python-client
/// dropped the whole `InterruptState` otherwise).
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for PendingRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::Ref;
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        let kind = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["question", "approval"]))
            .description(Some("Which kind `request` is."));
        let request = OneOfBuilder::new()
            .item(Ref::from_schema_name("QuestionRequest"))
            .item(Ref::from_schema_name("ApprovalRequest"))
            .description(Some(
                "The request: a `QuestionRequest` when `kind` is `question`, an \
                 `ApprovalRequest` when it is `approval`.",
            ));
        ObjectBuilder::new()
            .description(Some("A pending request of either kind."))
            .property("kind", kind)
            .property("request", request)
            .required("kind")
            .required("request")
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for PendingRequest {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        use utoipa::PartialSchema;
        schemas.push((QuestionRequest::name().into(), QuestionRequest::schema()));
        schemas.push((ApprovalRequest::name().into(), ApprovalRequest::schema()));
        QuestionRequest::schemas(schemas);
        ApprovalRequest::schemas(schemas);
    }
}

/// One field of the form that collects the input (seed 002's `InputField`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InputField {
    /// The field's key.
    pub name: String,
    /// How it is filled in.
    #[serde(rename = "type")]
    pub field_type: InputFieldType,
    /// What the human reads.
    pub label: String,
    /// Whether it must be filled in.
    pub required: bool,
    /// The choices of a `select` field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// How an [`InputField`] is filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum InputFieldType {
    /// Free text.
    Text,
    /// Yes or no.
    Confirm,
    /// One of `options` (or free text, when the question takes custom answers).
    Select,
}

/// The human's input that resumes an interrupted session.
#[derive(Debug, Clone, PartialEq)]
pub enum ResumeInput {
    /// `{"confirm": true|false}`: approves or rejects every action of an approval;
    /// `false` also rejects a question.
    Confirm(bool),
    /// `{"answers": [...]}`: answers a question request, one answer per question.
    Answers(Vec<Answer>),
    /// `{"answers": {"<question text>": "A, B"}}`: answers a question request in the seeds'
    /// keyed form (see [`QuestionService::reply_keyed`](crate::QuestionService::reply_keyed)).
    KeyedAnswers(BTreeMap<String, String>),
    /// `{"decisions": [...]}`: decides an approval request (fewer decisions than actions
    /// are filled with the first).
    Decisions(ApprovalReply),
}

/// The phrases that mark model text as asking for confirmation (seed 002), lower case.
pub const CONFIRMATION_PHRASES: [&str; 12] = [
    "please confirm",
    "do you confirm",
    "are you sure",
    "shall i proceed",
    "would you like me to proceed",
    "do you want to proceed",
    "do you want me to",
    "should i go ahead",
    "confirm before",
    "confirmation required",
    "waiting for your confirmation",
    "need your approval",
];

/// The [confirmation phrase](CONFIRMATION_PHRASES) `text` contains, if any.
///
/// Matching ignores case and treats any run of whitespace as one space; a phrase must
/// start and end at word boundaries ("are you surely…" does not match "are you sure").
/// `needs your approval` matches too, as the seed's own example says it.
///
/// # Examples
///
/// ```
/// use askbus_question::confirmation_phrase;
///
/// assert_eq!(confirmation_phrase("Shall I\nproceed with the deployment?"), Some("shall i proceed"));
/// assert_eq!(confirmation_phrase("I am sure the deployment went fine."), None);
/// ```
pub fn confirmation_phrase(text: &str) -> Option<&'static str> {
    let normalised = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .replace("needs your approval", "need your approval");
    CONFIRMATION_PHRASES.into_iter().find(|phrase| {
        normalised.match_indices(phrase).any(|(start, _)| {
            let before = normalised[..start].chars().next_back();
            let after = normalised[start + phrase.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

impl PendingRequest {
    /// The request's id.
    pub fn id(&self) -> RequestId {
        match self {
            Self::Question { request } => RequestId::Question(request.id),
            Self::Approval { request } => RequestId::Approval(request.id),
        }
    }

    /// The request's session.
    pub fn session_id(&self) -> &Arc<str> {
        match self {
            Self::Question { request } => &request.session_id,
            Self::Approval { request } => &request.session_id,
        }
    }

    /// The request as an interrupt state.
    pub fn interrupt_state(&self) -> InterruptState {
        let (reason, fields, created_at) = match self {
            Self::Question { request } => (
                question_reason(request),
                question_fields(request),
                request.created_at,
            ),
            Self::Approval { request } => (
                approval_reason(request),
                vec![InputField {
                    name: "confirm".to_owned(),
                    field_type: InputFieldType::Confirm,
                    label: "Approve".to_owned(),
                    required: true,
                    options: Vec::new(),
                }],
                request.created_at,
            ),
        };
        let asked_by = match self {
            Self::Question { request } => request.asked_by.as_ref(),
            Self::Approval { request } => request.asked_by.as_ref(),
        };
        InterruptState {
            session_id: Arc::clone(self.session_id()),
            agent_name: asked_by.map(|identity| Arc::clone(&identity.name)),
            reason,
            fields,
            timestamp: created_at / 1000,
            checkpoint_id: self.id(),
            request: self.clone(),
        }
    }
}

/// The question itself, or a summary of several.
fn question_reason(request: &QuestionRequest) -> String {
    match request.questions.as_slice() {
        [only] => only.question.clone(),
        several => {
            let headers: Vec<&str> = several.iter().map(|info| info.header.as_str()).collect();
            format!("Answer {} questions: {}", several.len(), headers.join(", "))
        }
    }
}

/// A select field per question with options, a text field per question without.
fn question_fields(request: &QuestionRequest) -> Vec<InputField> {
    request
        .questions
        .iter()
        .enumerate()
        .map(|(index, info)| InputField {
            name: format!("answers.{index}"),
            field_type: if info.options.is_empty() {
                InputFieldType::Text
            } else {
                InputFieldType::Select
            },
            label: info.question.clone(),
            required: true,
            options: info
                .options
                .iter()
                .map(|option| option.label.clone())
                .collect(),
        })
        .collect()
}

/// The calls a `confirm: true` lets run, each whole, after the description of a single
/// described one. A description is the agent's own words and may say anything ("List the
/// temporary files" over `rm -rf ~`): a client that shows the reason and the confirm field
/// alone, as seed 002's does, must still show what the human approves.
fn approval_reason(request: &ApprovalRequest) -> String {
    match request.action_requests.as_slice() {
        [only] => match &only.description {
            // The detector's request: its text is its whole content.
            Some(description) if is_confirmation_of(only, description) => description.clone(),
            Some(description) => format!("{description}\n{} {}", only.name, only.args),
            None => format!("Approve {} with {}", only.name, only.args),
        },
        several => {
            let calls: Vec<String> = several
                .iter()
                .map(|action| format!("{} {}", action.name, action.args))
                .collect();
            format!("Approve {} actions: {}", several.len(), calls.join(", "))
        }
    }
}

/// Whether `action` is the detector's confirmation of `text`
/// ([`RequestHub::request_confirmation`](crate::RequestHub::request_confirmation)), whose only content is the text.
fn is_confirmation_of(action: &Action, text: &str) -> bool {
    action.name == crate::hub::CONFIRMATION_ACTION
        && action.args.as_object().is_some_and(|args| {
            args.len() == 1 && args.get("text").and_then(serde_json::Value::as_str) == Some(text)
        })
}
