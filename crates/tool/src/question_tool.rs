//! The question tool: the model asks the user, the call returns their answers as text.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use askbus_question::{
    Answer, AskError, Outcome, PendingQuestion, QuestionInfo, QuestionOption, QuestionOutcome,
    QuestionRequest, QuestionService, Timeout, is_skipped,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::decode_encoded_field;
use crate::texts::{QUESTION_TOOL_NAME, Text};
use crate::{Language, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// The LLM-callable face of [`QuestionService::ask`].
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_question::QuestionService;
/// use askbus_tool::{QuestionTool, ToolContext};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let questions = QuestionService::new(Bus::new());
/// let tool = QuestionTool::new(questions.clone());
///
/// // Hand `tool.definition().to_openai()` (or `to_anthropic()`, `to_mcp()`) to the model.
/// // When the model calls it:
/// let args = json!({"questions": [{
///     "question": "Which license?", "header": "License",
///     "options": [{"label": "MIT", "description": "permissive"}]
/// }]});
/// let call = tool.call(ToolContext::new("session-1"), args);
///
/// // Meanwhile a human answers (normally over HTTP):
/// let answer = async {
///     tokio::task::yield_now().await;
///     let pending = questions.list(Some("session-1"));
///     questions.reply(pending[0].id, vec![vec!["MIT".into()]]).unwrap();
/// };
/// let (output, ()) = tokio::join!(call, answer);
/// assert_eq!(
///     output.unwrap().text,
///     r#"User has answered your questions: "Which license?"="MIT". You can now continue with the user's answers in mind."#
/// );
/// # }
/// ```
#[derive(Clone)]
pub struct QuestionTool {
    /// Where questions are asked.
    questions: QuestionService,
    /// The timeout of each call's request.
    timeout: Timeout,
    /// The language of each call's request, and of the definition.
    locale: Option<Arc<str>>,
}

/// The questions to ask the user in one go; they answer them together.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionToolArgs {
    /// The questions to ask, answered together.
    #[schemars(length(min = 1))]
    pub questions: Vec<ToolQuestion>,
}

/// One question as the model writes it. The user may always answer in their own words.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolQuestion {
    /// The complete question.
    pub question: String,
    /// A very short label for the question, at most 30 characters.
    #[serde(default)]
    #[schemars(length(max = 30))]
    pub header: String,
    /// The choices offered.
    pub options: Vec<QuestionOption>,
    /// Whether the user may select more than one option.
    // The seeds' `multiSelect` is accepted for it, so a model prompted with their shape is
    // understood; the schema names `multiple` only.
    #[serde(default, alias = "multiSelect")]
    pub multiple: bool,
}

/// A call of the question tool whose question is asked: the future of its outcome.
///
/// Made by [`QuestionTool::submit`]; the question exists (and `question.asked` is
/// published) before the future is first polled, so [`request`](Self::request) can be
/// shown to someone first.
///
/// # Cancel safety
///
/// Dropping it before it completes **cancels the question** (`question.cancelled`).
#[must_use = "dropping a QuestionCall cancels its question"]
#[derive(Debug)]
pub struct QuestionCall {
    /// The asked question's future.
    pending: PendingQuestion,
}

/// How the question ended, as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolOutcome {
    /// The user answered; one entry per question, in order.
    Answered {
        /// Each question with its answer.
        answers: Vec<AnsweredQuestion>,
    },
    /// The user declined to answer.
    Rejected {
        /// Their reason, if given.
        reason: Option<String>,
    },
    /// Nobody answered in time.
    TimedOut,
    /// Nobody answered in time, and the default answer set for that case applies: no
    /// human chose it. One entry per question, in order.
    DefaultApplied {
        /// Each question with its default answer.
        answers: Vec<AnsweredQuestion>,
    },
    /// The question was cancelled before an answer (the session was stopped).
    Cancelled,
}

/// One question with the user's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnsweredQuestion {
    /// The question text.
    pub question: String,
    /// The selected labels or custom text; empty if the user skipped it.
    pub answer: Answer,
}

impl QuestionTool {
    /// The tool over `questions`, with the service's default timeout.
    pub fn new(questions: QuestionService) -> Self {
        Self {
            questions,
            timeout: Timeout::Default,
            locale: None,
        }
    }

    /// Uses `timeout` for the requests this tool makes.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Timeout) -> Self {
        self.timeout = timeout;
        self
    }

    /// Speaks `locale` (a BCP 47 tag: `"vi"`, `"zh-CN"`): the requests this tool makes
    /// carry it (the web UI shows them in it), and the definition and every outcome text
    /// are in its [`Language`]. A malformed tag fails each call
    /// ([`ToolError::InvalidArguments`], nothing asked).
    #[must_use]
    pub fn with_locale(mut self, locale: impl Into<Arc<str>>) -> Self {
        self.locale = Some(locale.into());
        self
    }

    /// The definition to hand to the model, in the tool's language.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition::for_args::<QuestionToolArgs>(
            QUESTION_TOOL_NAME,
            Text::QuestionDescription.in_language(Language::of(self.locale.as_deref())),
        )
    }

    /// Runs one call of the tool: validates `args`, asks, and waits for the outcome.
    ///
    /// Rejection, timeout and cancellation are not errors: they are outcomes the model must
    /// hear about, each with its own text telling it not to invent an answer.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] with a message the model can act on;
    /// [`ToolError::Unavailable`] if the store could not record the request (nobody saw it)
    /// or its outcome (nothing to act on);
    /// [`ToolError::OverQuota`] if too many requests are pending (nothing was asked).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the question (`question.cancelled`).
    pub async fn call(&self, context: ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        self.submit(context, args)?.await
    }

    /// Validates `args` and asks now; returns the future of the outcome.
    ///
    /// Unlike [`call`](Self::call), the question is registered (and `question.asked`
    /// published) before this returns, so a caller can say what it waits for.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] with a message the model can act on, or
    /// [`ToolError::OverQuota`] if too many requests are pending; nothing is asked then.
    pub fn submit(&self, context: ToolContext, args: Value) -> Result<QuestionCall, ToolError> {
        let args = parse_args(args)?;
        let questions: Vec<QuestionInfo> = args
            .questions
            .into_iter()
            .map(|asked| QuestionInfo {
                question: asked.question,
                header: asked.header,
                options: asked.options,
                multiple: asked.multiple,
                custom: true,
            })
            .collect();
        let mut ask = self
            .questions
            .ask(context.session_id, questions)
            .tool(context.tool)
            .timeout(self.timeout);
        if let Some(locale) = &self.locale {
            ask = ask.locale(Arc::clone(locale));
        }
        let pending = ask
            .submit()
            .map_err(|refused| ToolError::not_submitted(QUESTION_TOOL_NAME, refused))?;
        Ok(QuestionCall { pending })
    }
}

impl QuestionCall {
    /// The question as asked.
    pub fn request(&self) -> &Arc<QuestionRequest> {
        self.pending.request()
    }
}

impl Future for QuestionCall {
    type Output = Result<ToolOutput, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let asked = std::task::ready!(Pin::new(&mut self.pending).poll(cx));
        let request = self.pending.request();
        let questions = &request.questions;
        let outcome = match asked {
            Ok(answers) => ToolOutcome::answered(questions, answers),
            Err(AskError::Invalid(invalid)) => {
                return Poll::Ready(Err(ToolError::invalid(
                    QUESTION_TOOL_NAME,
                    invalid.to_string(),
                )));
            }
            Err(AskError::Rejected { reason }) => ToolOutcome::Rejected { reason },
            Err(AskError::TimedOut) => ToolOutcome::TimedOut,
            Err(AskError::DefaultApplied { answers }) => ToolOutcome::defaulted(questions, answers),
            Err(AskError::Cancelled) => ToolOutcome::Cancelled,
            Err(AskError::NotRecorded(why)) => {
                return Poll::Ready(Err(ToolError::unavailable(
                    QUESTION_TOOL_NAME,
                    why.to_string(),
                )));
            }
            Err(AskError::OverQuota(exceeded)) => {
                return Poll::Ready(Err(ToolError::over_quota(QUESTION_TOOL_NAME, &exceeded)));
            }
            Err(AskError::NotAllowed(refused)) => {
                return Poll::Ready(Err(ToolError::not_allowed(QUESTION_TOOL_NAME, &refused)));
            }
        };
        Poll::Ready(Ok(
            outcome.into_output(Language::of(request.locale.as_deref()))
        ))
    }
}

impl ToolOutcome {
    /// How `request` ended, as the tool reports it: for a question whose outcome is read
    /// back later (from [`QuestionService::get`]) rather than awaited by the call. Its
    /// text speaks the request's language: `into_output(Language::of(request.locale.as_deref()))`.
    pub fn of_question(request: &QuestionRequest, outcome: QuestionOutcome) -> Self {
        match outcome {
            Outcome::Replied(answers) => Self::answered(&request.questions, answers.to_vec()),
            Outcome::Rejected { reason } => Self::Rejected { reason },
            Outcome::TimedOut => Self::TimedOut,
            Outcome::Defaulted(answers) => Self::defaulted(&request.questions, answers.to_vec()),
            Outcome::Cancelled => Self::Cancelled,
        }
    }

    /// This outcome with its text in `language`, as the tool returns it.
    pub fn into_output(self, language: Language) -> ToolOutput {
        ToolOutput {
            text: self.text_for_model(language),
            outcome: self,
        }
    }

    /// Each question paired with its answer.
    fn answered(questions: &[QuestionInfo], answers: Vec<Answer>) -> Self {
        Self::Answered {
            answers: pair(questions, answers),
        }
    }

    /// Each question paired with its default answer, which applies because nobody answered.
    fn defaulted(questions: &[QuestionInfo], answers: Vec<Answer>) -> Self {
        Self::DefaultApplied {
            answers: pair(questions, answers),
        }
    }

    /// The tool result text the model reads, in `language`.
    pub fn text_for_model(&self, language: Language) -> String {
        let text = match self {
            Self::Answered { answers } => Text::Answered {
                answers: &describe_answers(answers, language),
            },
            Self::DefaultApplied { answers } => Text::Defaulted {
                answers: &describe_answers(answers, language),
            },
            Self::Rejected { reason } => Text::Dismissed {
                reason: reason.as_deref(),
            },
            Self::TimedOut => Text::QuestionsTimedOut,
            Self::Cancelled => Text::QuestionsCancelled,
        };
        text.in_language(language)
    }
}

/// Each question paired with its answer, in order.
fn pair(questions: &[QuestionInfo], answers: Vec<Answer>) -> Vec<AnsweredQuestion> {
    questions
        .iter()
        .zip(answers)
        .map(|(info, answer)| AnsweredQuestion {
            question: info.question.clone(),
            answer,
        })
        .collect()
}

/// `"question"="answer", ...`: answers as the model reads them.
fn describe_answers(answers: &[AnsweredQuestion], language: Language) -> String {
    let pairs: Vec<String> = answers
        .iter()
        .map(|answered| {
            let answer = if is_skipped(&answered.answer) {
                Text::Unanswered.in_language(language)
            } else {
                answered.answer.join(", ")
            };
            format!("{:?}={:?}", answered.question, answer)
        })
        .collect();
    pairs.join(", ")
}

/// Parses the model's arguments. Some models send `questions` as a JSON-encoded string
/// instead of an array; that is decoded once rather than failing the call.
fn parse_args(mut args: Value) -> Result<QuestionToolArgs, ToolError> {
    decode_encoded_field(&mut args, "questions");
    let args: QuestionToolArgs = serde_json::from_value(args).map_err(|error| {
        ToolError::invalid(QUESTION_TOOL_NAME, format!(
            "{error}. Expected {{\"questions\": [{{\"question\": string, \"header\": string (optional, at most 30 characters), \"options\": [{{\"label\": string, \"description\": string (optional)}}], \"multiple\": boolean (optional)}}]}}"
        ))
    })?;
    Ok(args)
}
