//! The approval tool: the model asks a human to review tool calls before it makes them.
//!
//! Where the [approval guard](crate::ApprovalGuard) puts a runtime's own tool behind a
//! human, this tool serves agents whose tools askbus cannot run (an MCP client's, another
//! process's): the model lists the calls it wants to make, a human decides on each, and
//! the result tells the model what it may run. Nothing runs here.
//!
//! The decisions, in the words the model reads:
//!
//! - **approve**: run the call as proposed.
//! - **edit**: run the human's call instead (its name and arguments are in the text), not
//!   the original.
//! - **reject** (with or without a message) or **respond** (with one): do not run it; the
//!   human's message is quoted.
//! - **timeout** or **cancel**: nobody approved, so nothing may run.
//!
//! Refusals are worded as the guard words them (with "do not run it" where the guard says
//! "it did not run"), so a human's "no" reads the same from either.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use askbus_question::{
    Action, ApprovalError, ApprovalReply, ApprovalRequest, ApprovalService, Decision, DecisionType,
    PendingApproval, ReviewConfig, Timeout,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::call::decode_encoded_field;
use crate::review::{Refusal, Runner, refusal_text, submit_review};
use crate::texts::{APPROVAL_TOOL_NAME, Text};
use crate::{Language, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// The LLM-callable face of [`ApprovalService::request`].
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_question::{ApprovalReply, ApprovalService, Decision};
/// use askbus_tool::{ApprovalTool, ToolContext};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let approvals = ApprovalService::new(Bus::new());
/// let tool = ApprovalTool::new(approvals.clone());
///
/// // Hand `tool.definition().to_openai()` (or `to_anthropic()`, `to_mcp()`) to the model.
/// // When the model calls it:
/// let args = json!({"actions": [{
///     "name": "delete_rows", "args": {"table": "users"},
///     "description": "Delete the 1,234 expired users"
/// }]});
/// let call = tool.submit(ToolContext::new("session-1"), args).unwrap();
///
/// // A human approves (normally over HTTP, or in the web UI):
/// approvals.reply(call.request().id, ApprovalReply::new([Decision::Approve])).unwrap();
/// assert_eq!(
///     call.await.unwrap().text,
///     r#"A human approved this call to `delete_rows` with {"table":"users"}: run it as you proposed."#
/// );
/// # }
/// ```
#[derive(Clone)]
pub struct ApprovalTool {
    /// Where approvals are requested.
    approvals: ApprovalService,
    /// The timeout of each call's request.
    timeout: Timeout,
    /// The language of each call's request, and of the definition.
    locale: Option<Arc<str>>,
}

/// The calls the model wants to make, for a human to review before any of them runs.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalToolArgs {
    /// The tool calls to review, in the order you would make them.
    #[schemars(length(min = 1))]
    pub actions: Vec<ToolAction>,
}

/// One tool call the model proposes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolAction {
    /// The name of the tool to call.
    pub name: String,
    /// The call's complete arguments, exactly as the tool takes them.
    pub args: Map<String, Value>,
    /// What the call does and why, in a sentence or two for the human.
    pub description: Option<String>,
    /// Your id for this call, if any: asking again with the same id gets the same review.
    pub tool_use_id: Option<String>,
    /// What the human may decide on this call (default: all); calls to one tool share one list.
    #[schemars(length(min = 1))]
    pub allowed_decisions: Option<Vec<DecisionType>>,
    /// The tool's JSON Schema for `args` (its parameters), if you have it: `args` must fit
    /// it, and so must a human's edit.
    pub args_schema: Option<Map<String, Value>>,
}

/// A call of the approval tool whose request is made: the future of its outcome.
///
/// Made by [`ApprovalTool::submit`]; the approval request exists (and `approval.asked` is
/// published) before the future is first polled, so [`request`](Self::request) can be
/// shown to someone first.
///
/// # Cancel safety
///
/// Dropping it before it completes **cancels the approval request**
/// (`approval.cancelled`).
#[must_use = "dropping an ApprovalCall cancels its approval request"]
#[derive(Debug)]
pub struct ApprovalCall {
    /// The request's future.
    pending: PendingApproval,
}

/// What the approval tool returns.
pub type ApprovalToolOutput = ToolOutput<ApprovalToolOutcome>;

/// How an approval request ended, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ApprovalToolOutcome {
    /// A human decided: one decision per action, by position (an edit carries the call
    /// to make instead), and their free text if any.
    Decided(ApprovalReply),
    /// Nobody decided in time: every action is rejected.
    TimedOut,
    /// The request was cancelled (the session was stopped): no action may run.
    Cancelled,
}

impl ApprovalTool {
    /// The tool over `approvals`, with the service's default timeout.
    pub fn new(approvals: ApprovalService) -> Self {
        Self {
            approvals,
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
        ToolDefinition::for_args::<ApprovalToolArgs>(
            APPROVAL_TOOL_NAME,
            Text::ApprovalDescription.in_language(Language::of(self.locale.as_deref())),
        )
    }

    /// Runs one call of the tool: validates `args`, requests the approval, and waits for
    /// the decisions.
    ///
    /// Timeout and cancellation are not errors: they are outcomes the model must hear
    /// about, each with its own text telling it not to run anything.
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
    /// Dropping the future cancels the request (`approval.cancelled`).
    pub async fn call(
        &self,
        context: ToolContext,
        args: Value,
    ) -> Result<ApprovalToolOutput, ToolError> {
        self.submit(context, args)?.await
    }

    /// Validates `args` and makes the approval request now; returns the future of its
    /// outcome.
    ///
    /// A first action with a `tool_use_id` that already asked in this session joins that
    /// request (a retry gets the one review), but only if it proposes the same calls: a
    /// review is never taken for calls it did not show the human.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] with a message the model can act on, also for a
    /// `tool_use_id` that names a request of other calls, or [`ToolError::OverQuota`] if
    /// too many requests are pending; no request is made then.
    pub fn submit(&self, context: ToolContext, args: Value) -> Result<ApprovalCall, ToolError> {
        let proposed = parse_args(args)?.actions;
        let review_configs = review_configs(&proposed)?;
        let actions: Vec<Action> = proposed
            .into_iter()
            .map(|proposed| Action {
                name: proposed.name,
                args: Value::Object(proposed.args),
                tool_use_id: proposed.tool_use_id,
                description: proposed.description,
                args_schema: proposed.args_schema.map(Value::Object),
            })
            .collect();
        let pending = submit_review(
            &self.approvals,
            APPROVAL_TOOL_NAME,
            context.session_id,
            actions,
            review_configs,
            self.timeout,
            self.locale.as_ref(),
        )?;
        Ok(ApprovalCall { pending })
    }
}

impl ApprovalCall {
    /// The approval request as made (with its id and `approval_key`).
    pub fn request(&self) -> &Arc<ApprovalRequest> {
        self.pending.request()
    }
}

impl Future for ApprovalCall {
    type Output = Result<ApprovalToolOutput, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let decided = std::task::ready!(Pin::new(&mut self.pending).poll(cx));
        let outcome = match decided {
            Ok(reply) => ApprovalToolOutcome::Decided(reply),
            Err(ApprovalError::Invalid(invalid)) => {
                return Poll::Ready(Err(ToolError::invalid(
                    APPROVAL_TOOL_NAME,
                    invalid.to_string(),
                )));
            }
            Err(ApprovalError::TimedOut) => ApprovalToolOutcome::TimedOut,
            Err(ApprovalError::Cancelled) => ApprovalToolOutcome::Cancelled,
            Err(ApprovalError::NotRecorded(why)) => {
                return Poll::Ready(Err(ToolError::unavailable(
                    APPROVAL_TOOL_NAME,
                    why.to_string(),
                )));
            }
            Err(ApprovalError::OverQuota(exceeded)) => {
                return Poll::Ready(Err(ToolError::over_quota(APPROVAL_TOOL_NAME, &exceeded)));
            }
            Err(ApprovalError::NotAllowed(refused)) => {
                return Poll::Ready(Err(ToolError::not_allowed(APPROVAL_TOOL_NAME, &refused)));
            }
        };
        let request = self.pending.request();
        let text = outcome.text_for_model(
            &request.action_requests,
            Language::of(request.locale.as_deref()),
        );
        Poll::Ready(Ok(ToolOutput { text, outcome }))
    }
}

impl ApprovalToolOutcome {
    /// The tool result text the model reads about `actions`, the calls it proposed, in
    /// `language`.
    pub fn text_for_model(&self, actions: &[Action], language: Language) -> String {
        let refused = |refusal| {
            actions
                .iter()
                .map(|action| refusal_text(&action.name, refusal, Runner::Model, language))
                .collect()
        };
        let lines: Vec<String> = match self {
            Self::Decided(reply) => actions
                .iter()
                .zip(&reply.decisions)
                .map(|(action, decision)| decision_text(action, decision, language))
                .collect(),
            Self::TimedOut => refused(Refusal::TimedOut),
            Self::Cancelled => refused(Refusal::Cancelled),
        };
        let mut text = match lines.as_slice() {
            [only] => only.clone(),
            _ => {
                let numbered: Vec<String> = lines
                    .iter()
                    .enumerate()
                    .map(|(index, line)| format!("{}. {line}", index + 1))
                    .collect();
                Text::NumberedCalls {
                    count: lines.len(),
                    list: &numbered.join("\n"),
                }
                .in_language(language)
            }
        };
        if let Self::Decided(ApprovalReply {
            user_edit_content: Some(added),
            ..
        }) = self
        {
            let added = Text::HumanAdded { added }.in_language(language);
            text = format!("{text}\n{added}");
        }
        text
    }
}

/// What one decision on `action` tells the model to do, in `language`.
fn decision_text(action: &Action, decision: &Decision, language: Language) -> String {
    let tool = &action.name;
    let refused =
        |message| refusal_text(tool, Refusal::Decided { message }, Runner::Model, language);
    match decision {
        Decision::Approve => Text::Approved {
            tool,
            args: &action.args,
        }
        .in_language(language),
        Decision::Edit { edited_action } => Text::Replaced {
            tool,
            args: &action.args,
            edited_tool: &edited_action.name,
            edited_args: &edited_action.args,
        }
        .in_language(language),
        Decision::Reject { message } => refused(message.as_deref()),
        Decision::Respond { message } => refused(Some(message)),
    }
}

/// The review configs of `actions`: one per tool that lists `allowed_decisions`.
///
/// # Errors
///
/// An empty list, or two calls to one tool listing different decisions (a review config
/// is per tool).
fn review_configs(actions: &[ToolAction]) -> Result<Vec<ReviewConfig>, ToolError> {
    let mut configs: Vec<ReviewConfig> = Vec::new();
    for (index, action) in actions.iter().enumerate() {
        let Some(allowed) = &action.allowed_decisions else {
            continue;
        };
        let position = index + 1;
        let name = &action.name;
        if allowed.is_empty() {
            return Err(ToolError::invalid(
                APPROVAL_TOOL_NAME,
                format!(
                    "action {position} ({name:?}): `allowed_decisions` is empty, so the human could not decide; leave it out to allow every decision"
                ),
            ));
        }
        match configs.iter().find(|config| &config.action_name == name) {
            Some(earlier) if earlier.allowed_decisions != *allowed => {
                return Err(ToolError::invalid(
                    APPROVAL_TOOL_NAME,
                    format!(
                        "action {position} ({name:?}): its `allowed_decisions` differ from an earlier call to the same tool; calls to one tool share one list"
                    ),
                ));
            }
            Some(_) => {}
            None => configs.push(ReviewConfig::new(name.clone(), allowed.iter().copied())),
        }
    }
    Ok(configs)
}

/// Parses the model's arguments. Some models send `actions`, or an action's `args` (or
/// `args_schema`), as a JSON-encoded string; those are decoded once rather than failing the call.
fn parse_args(mut args: Value) -> Result<ApprovalToolArgs, ToolError> {
    decode_encoded_field(&mut args, "actions");
    if let Some(Value::Array(actions)) = args.get_mut("actions") {
        for action in actions {
            decode_encoded_field(action, "args");
            decode_encoded_field(action, "args_schema");
        }
    }
    serde_json::from_value(args).map_err(|error| {
        ToolError::invalid(
            APPROVAL_TOOL_NAME,
            format!(
                "{error}. Expected {{\"actions\": [{{\"name\": string, \"args\": object, \"description\": string (optional), \"tool_use_id\": string (optional), \"allowed_decisions\": [\"approve\" | \"edit\" | \"reject\" | \"respond\"] (optional), \"args_schema\": object (optional)}}]}}"
            ),
        )
    })
}
