//! The approval guard: a human reviews a tool call before it runs.
//!
//! [`ApprovalGuard`] wraps any tool the runtime has (anything implementing [`GuardedTool`]).
//! Each call is first put to a human as an approval request
//! ([`ApprovalService::request`]), and the decision says what happens, in exact words:
//!
//! - **approve**: the tool runs with the model's arguments; its result is the result.
//! - **edit**: the tool runs with the human's arguments, and the result starts with a notice
//!   that a human replaced the call, and with what, so the model does not believe its own
//!   arguments were used. The approval service checks every edit before it is a decision
//!   (the same check for every way a reply comes in): it keeps the tool's name, its
//!   arguments are a JSON object, and they fit the tool's [`args_schema`] when it has one.
//!   A human whose edit does not fit is told why and decides again; the guard only ever
//!   runs the tool it wraps, with arguments that passed.
//! - **reject**: nothing runs; the human's message is the result (or a default text).
//! - **respond**: nothing runs; the human's message is the result.
//! - **timeout** or **cancel**: nothing runs, and the text says so.
//!
//! [`args_schema`]: GuardedTool::args_schema
//!
//! Every non-run outcome tells the model the tool did not run, so it cannot report work as
//! done that never happened.
//!
//! The call's id ([`ToolContext::with_call`]) is the request's `tool_use_id`, so a retried
//! call (a runtime that replays a turn, a restart) joins the review its id already has
//! instead of prompting twice, and runs on that decision. It joins **only if it is the same
//! call** (same arguments): approve runs the arguments the call brings, and a human must
//! have seen those. An id that repeats with other arguments fails the call with a
//! [`ToolError`] naming the earlier request, and nothing runs.
//!
//! ```
//! use askbus_bus::Bus;
//! use askbus_question::{ApprovalReply, ApprovalService, Decision};
//! use askbus_tool::{ApprovalGuard, GuardedTool, ToolContext};
//! use serde_json::{Value, json};
//!
//! struct DeleteRows;
//! impl GuardedTool for DeleteRows {
//!     fn name(&self) -> &str {
//!         "delete_rows"
//!     }
//!     async fn run(&self, args: Value) -> Result<String, String> {
//!         Ok(format!("deleted from {}", args["table"]))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let approvals = ApprovalService::new(Bus::new());
//! let guard = ApprovalGuard::new(DeleteRows, approvals.clone());
//! let call = guard.call(ToolContext::new("s1"), json!({"table": "users"}));
//! let human = async {
//!     tokio::task::yield_now().await;
//!     let pending = approvals.list(Some("s1"));
//!     approvals.reply(pending[0].id, ApprovalReply::new([Decision::Approve])).unwrap();
//! };
//! let (output, ()) = tokio::join!(call, human);
//! assert_eq!(output.unwrap().text, r#"deleted from "users""#);
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;

use askbus_question::{
    Action, ApprovalError, ApprovalService, Decision, DecisionType, ReviewConfig, Timeout,
};
use serde::Serialize;
use serde_json::Value;

use crate::review::{Refusal, Runner, refusal_text, submit_review};
use crate::texts::Text;
use crate::{Language, ToolContext, ToolError, ToolOutput};

/// A tool the runtime can run, as the [`ApprovalGuard`] needs it.
pub trait GuardedTool: Send + Sync {
    /// The tool's name: the action name the human reviews.
    fn name(&self) -> &str;

    /// Runs the tool with `args`. `Ok` is the result text for the model; `Err` is an error
    /// text for the model (the tool ran and failed).
    fn run(&self, args: Value) -> impl Future<Output = Result<String, String>> + Send;

    /// The JSON Schema of the tool's arguments, if the runtime knows it (the `parameters`
    /// of its definition). The review then refuses a call whose arguments do not fit it
    /// ([`ToolError::InvalidArguments`], nothing asked), and a human's edit that does not
    /// fit it (the human is told why and decides again). Default: none.
    fn args_schema(&self) -> Option<Value> {
        None
    }
}

/// A tool whose every call a human approves, edits or rejects before it runs.
///
/// Approve runs the call; edit runs the human's arguments and puts a notice in front of the
/// result; reject, respond, timeout and cancel run nothing and tell the model so.
/// [`GuardedOutput::outcome`] says which.
pub struct ApprovalGuard<T> {
    /// The tool that runs once approved.
    tool: T,
    /// Where the approval requests are made.
    approvals: ApprovalService,
    /// What the human may decide, and how many reviewers must (its `action_name` is filled
    /// in per call); `None`: every decision, by any one reviewer.
    review: Option<ReviewConfig>,
    /// How long each request waits for the human.
    timeout: Timeout,
    /// The language of each request, and of the texts the model reads about it.
    locale: Option<Arc<str>>,
}

/// What a guarded call returns: text for the model, and what happened as data.
pub type GuardedOutput = ToolOutput<GuardOutcome>;

/// What happened to a guarded call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum GuardOutcome {
    /// The tool ran, with the model's arguments or the human's.
    Ran {
        /// The arguments it ran with.
        args: Value,
        /// Whether the human replaced the model's arguments.
        edited: bool,
        /// Whether the tool reported an error.
        failed: bool,
    },
    /// The human decided against running it (reject or respond).
    Refused {
        /// The decision.
        decision: Decision,
    },
    /// Nobody decided in time.
    TimedOut,
    /// The request was cancelled (the session was stopped).
    Cancelled,
}

impl<T: GuardedTool> ApprovalGuard<T> {
    /// Guards `tool` with approval requests on `approvals` (default timeout, every
    /// decision allowed).
    pub fn new(tool: T, approvals: ApprovalService) -> Self {
        Self {
            tool,
            approvals,
            review: None,
            timeout: Timeout::Default,
            locale: None,
        }
    }

    /// Offers the human only these decisions.
    #[must_use]
    pub fn allowing(mut self, decisions: impl IntoIterator<Item = DecisionType>) -> Self {
        self.review_mut().allowed_decisions = decisions.into_iter().collect();
        self
    }

    /// Runs the tool only once `quorum` distinct reviewers decided alike (any one of them
    /// may still refuse it alone); see
    /// [`ReviewConfig::quorum`](askbus_question::ReviewConfig::quorum).
    #[must_use]
    pub fn needing(mut self, quorum: u32) -> Self {
        self.review_mut().quorum = Some(quorum);
        self
    }

    /// Lets only the reviewers named `reviewers` decide; see
    /// [`ReviewConfig::reviewers`](askbus_question::ReviewConfig::reviewers).
    #[must_use]
    pub fn reviewed_by(mut self, reviewers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.review_mut().reviewers = Some(reviewers.into_iter().map(Into::into).collect());
        self
    }

    /// The review config this guard asks with, made on first need.
    fn review_mut(&mut self) -> &mut ReviewConfig {
        self.review
            .get_or_insert_with(|| ReviewConfig::new(String::new(), DecisionType::ALL))
    }

    /// Waits this long for each decision.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Timeout) -> Self {
        self.timeout = timeout;
        self
    }

    /// Asks in `locale` (a BCP 47 tag: `"vi"`, `"zh-CN"`): each request carries it (the
    /// web UI shows it in it), and the refusals and the edited notice the model reads are
    /// in its [`Language`]. A malformed tag fails each call ([`ToolError::InvalidArguments`],
    /// nothing asked, nothing run).
    #[must_use]
    pub fn with_locale(mut self, locale: impl Into<Arc<str>>) -> Self {
        self.locale = Some(locale.into());
        self
    }

    /// The guarded tool.
    pub fn tool(&self) -> &T {
        &self.tool
    }

    /// Asks a human about this call, then runs the tool or not, as they decide.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] when the request cannot be made (an empty session,
    /// arguments that do not fit the tool's [`args_schema`](GuardedTool::args_schema)), or
    /// when the context's call id already asked in this session about other arguments
    /// (the earlier request is left as it was, and nothing runs); [`ToolError::Unavailable`]
    /// if the store could not record the request (nobody saw it) or its decisions (and
    /// nothing runs);
    /// [`ToolError::OverQuota`] if too many requests are pending (nothing asked, nothing
    /// runs).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the decision cancels the approval request.
    pub async fn call(
        &self,
        context: ToolContext,
        args: Value,
    ) -> Result<GuardedOutput, ToolError> {
        let name = self.tool.name();
        let mut action = Action::new(name, args.clone());
        action.tool_use_id = context.tool.map(|tool| tool.call_id);
        action.args_schema = self.tool.args_schema();
        let reviews = self
            .review
            .iter()
            .map(|review| ReviewConfig {
                action_name: name.to_owned(),
                ..review.clone()
            })
            .collect();
        let pending = submit_review(
            &self.approvals,
            name,
            context.session_id,
            vec![action],
            reviews,
            self.timeout,
            self.locale.as_ref(),
        )?;
        let language = Language::of(pending.request().locale.as_deref());
        let decision = match pending.await {
            Ok(mut reply) => reply.decisions.swap_remove(0),
            Err(ApprovalError::Invalid(invalid)) => {
                return Err(ToolError::invalid(name, invalid.to_string()));
            }
            Err(ApprovalError::TimedOut) => {
                return Ok(self.refused(GuardOutcome::TimedOut, language));
            }
            Err(ApprovalError::Cancelled) => {
                return Ok(self.refused(GuardOutcome::Cancelled, language));
            }
            Err(ApprovalError::NotRecorded(why)) => {
                return Err(ToolError::unavailable(name, why.to_string()));
            }
            Err(ApprovalError::OverQuota(exceeded)) => {
                return Err(ToolError::over_quota(name, &exceeded));
            }
            Err(ApprovalError::NotAllowed(refused)) => {
                return Err(ToolError::not_allowed(name, &refused));
            }
        };
        Ok(match decision {
            Decision::Approve => self.run(args, false).await,
            // The service accepted this edit only for this tool, with arguments it takes.
            Decision::Edit { edited_action } => {
                let mut output = self.run(edited_action.args, true).await;
                output.text = format!(
                    "{}\n\n{}",
                    edited_notice(name, &args, &output.outcome, language),
                    output.text
                );
                output
            }
            refusal => self.refused(GuardOutcome::Refused { decision: refusal }, language),
        })
    }

    async fn run(&self, args: Value, edited: bool) -> GuardedOutput {
        let (text, failed) = match self.tool.run(args.clone()).await {
            Ok(text) => (text, false),
            Err(error) => (error, true),
        };
        GuardedOutput {
            text,
            outcome: GuardOutcome::Ran {
                args,
                edited,
                failed,
            },
        }
    }

    fn refused(&self, outcome: GuardOutcome, language: Language) -> GuardedOutput {
        GuardedOutput {
            text: outcome.text_for_model(self.tool.name(), language),
            outcome,
        }
    }
}

impl GuardOutcome {
    /// The text the model reads, in `language`, about this outcome of a call to `tool`.
    /// When the tool ran, the model reads the tool's own result instead; this only names
    /// the fact.
    fn text_for_model(&self, tool: &str, language: Language) -> String {
        let refusal = match self {
            Self::Ran { .. } => return Text::GuardRan { tool }.in_language(language),
            Self::Refused {
                decision: Decision::Reject { message },
            } => Refusal::Decided {
                message: message.as_deref(),
            },
            Self::Refused {
                decision: Decision::Respond { message },
            } => Refusal::Decided {
                message: Some(message),
            },
            // A refusal never holds a decision that runs; were it to, nothing ran all the same.
            Self::Refused {
                decision: Decision::Approve | Decision::Edit { .. },
            } => Refusal::Decided { message: None },
            Self::TimedOut => Refusal::TimedOut,
            Self::Cancelled => Refusal::Cancelled,
        };
        refusal_text(tool, refusal, Runner::Guard, language)
    }
}

/// The notice, in `language`, in front of the result of a call a human edited.
fn edited_notice(
    tool: &str,
    original: &Value,
    outcome: &GuardOutcome,
    language: Language,
) -> String {
    let used = match outcome {
        GuardOutcome::Ran { args, .. } => args.to_string(),
        _ => String::new(),
    };
    Text::EditedNotice {
        tool,
        used: &used,
        original,
    }
    .in_language(language)
}
