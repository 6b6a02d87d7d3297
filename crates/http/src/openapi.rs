//! The OpenAPI document: generated from the route annotations by utoipa.
//!
//! The question crate knows nothing about HTTP (nor about utoipa), so the JSON shapes of its
//! types are described here, next to the only code that puts them on the wire. The HTTP
//! tests check these descriptions against real responses.

use std::collections::BTreeMap;

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// The document's fixed parts; paths are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "askbus",
        description = "Let AI agents stop and ask a human, and get the answer back. Question routes and the event stream are wire-compatible with OpenCode's server.",
        license(name = "MIT OR Apache-2.0"),
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "question", description = "Questions: list, read, answer, reject; create and wait in server mode"),
        (name = "session", description = "Sessions"),
        (name = "events", description = "Server-Sent Events"),
        (name = "server", description = "Health and this document"),
    )
)]
pub(crate) struct ApiDoc;

/// Adds the bearer security scheme.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// One choice offered for a question.
#[derive(ToSchema)]
#[schema(as = QuestionOption)]
#[allow(dead_code)]
pub(crate) struct QuestionOptionSchema {
    /// Display text, one to five words.
    label: String,
    /// What choosing this option means.
    description: String,
}

/// One question shown to the human.
#[derive(ToSchema)]
#[schema(as = QuestionInfo)]
#[allow(dead_code)]
pub(crate) struct QuestionInfoSchema {
    /// The complete question.
    question: String,
    /// A very short label, at most 30 characters.
    header: String,
    /// The offered choices.
    options: Vec<QuestionOptionSchema>,
    /// Whether several options may be selected (default false).
    #[schema(default = false)]
    multiple: Option<bool>,
    /// Whether the human may type an answer of their own (default true).
    #[schema(default = true)]
    custom: Option<bool>,
}

/// The tool call that asked.
#[derive(ToSchema)]
#[schema(as = ToolRef)]
#[allow(dead_code)]
pub(crate) struct ToolRefSchema {
    /// The message holding the tool call.
    #[schema(rename = "messageID")]
    message_id: String,
    /// The tool call's id.
    #[schema(rename = "callID")]
    call_id: String,
}

/// A question request.
#[derive(ToSchema)]
#[schema(as = QuestionRequest)]
#[allow(dead_code)]
pub(crate) struct QuestionRequestSchema {
    /// `que_` + ULID, ascending in creation order.
    id: String,
    /// The asking session.
    #[schema(rename = "sessionID")]
    session_id: String,
    /// The questions, answered together.
    questions: Vec<QuestionInfoSchema>,
    /// The tool call that asked, if any.
    tool: Option<ToolRefSchema>,
    /// Creation time, milliseconds since the Unix epoch.
    #[schema(rename = "createdAt")]
    created_at: u64,
    /// Expiry time, milliseconds since the Unix epoch; absent: never.
    #[schema(rename = "expiresAt")]
    expires_at: Option<u64>,
}

/// Where a request stands.
#[derive(ToSchema)]
#[schema(as = QuestionState)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub(crate) enum QuestionStateSchema {
    /// Waiting for a human.
    Pending,
    /// Answered; see `answers`.
    Replied,
    /// Declined; see `reason`.
    Rejected,
    /// Nobody answered in time.
    TimedOut,
    /// The asker went away or the session was cancelled.
    Cancelled,
}

/// A question request with its state.
#[derive(ToSchema)]
#[schema(as = QuestionStatus)]
#[allow(dead_code)]
pub(crate) struct QuestionStatusSchema {
    /// The request.
    #[serde(flatten)]
    request: QuestionRequestSchema,
    /// Where it stands.
    status: QuestionStateSchema,
    /// One answer per question, when `replied`.
    answers: Option<Vec<Vec<String>>>,
    /// The human's reason, when `rejected` with one.
    reason: Option<String>,
}

/// `{"answers": [...]}`.
#[derive(ToSchema)]
#[schema(as = ReplyAnswers)]
#[allow(dead_code)]
pub(crate) struct ReplyAnswersSchema {
    /// One answer per question: the selected labels or custom text; empty skips.
    answers: Vec<Vec<String>>,
}

/// A reply: the answers by position, or keyed by question text.
#[derive(ToSchema)]
#[schema(as = ReplyBody)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum ReplyBodySchema {
    /// By position.
    Answers(ReplyAnswersSchema),
    /// `{"<question text>": "A, B"}`: multi-select labels joined with `", "`.
    Keyed(BTreeMap<String, String>),
}

/// A rejection.
#[derive(ToSchema)]
#[schema(as = RejectBody)]
#[allow(dead_code)]
pub(crate) struct RejectBodySchema {
    /// Why the human declined.
    reason: Option<String>,
}

/// A question created by an agent over HTTP (server mode).
#[derive(ToSchema)]
#[schema(as = CreateQuestion)]
#[allow(dead_code)]
pub(crate) struct CreateQuestionSchema {
    /// The asking session.
    #[schema(rename = "sessionID")]
    session_id: String,
    /// The questions, answered together.
    questions: Vec<QuestionInfoSchema>,
    /// The tool call that asked, if any.
    tool: Option<ToolRefSchema>,
    /// Seconds before it times out; absent: the server's default.
    timeout: Option<f64>,
}

/// `GET /health` answer.
#[derive(serde::Serialize, ToSchema)]
pub(crate) struct Health {
    /// Always true when the server answers.
    healthy: bool,
    /// The server's version.
    version: &'static str,
}

/// Whether the server is up, and its version.
#[utoipa::path(
    get,
    path = "/health",
    operation_id = "global.health",
    tag = "server",
    responses((status = 200, description = "The server is up", body = Health))
)]
pub(crate) async fn health() -> Json<Health> {
    Json(Health {
        healthy: true,
        version: env!("CARGO_PKG_VERSION"),
    })
}
