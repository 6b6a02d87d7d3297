//! The MCP server handler: the question tool, and how a call waits for its human.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use askbus_question::{Outcome, QuestionId, QuestionRequest, QuestionService, ReplyError, Timeout};
use askbus_tool::{
    AnsweredQuestion, QUESTION_TOOL_NAME, QuestionTool, ToolContext, ToolError, ToolOutcome,
    ToolOutput,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CancelledNotificationParam, ClientCapabilities, ClientResult, ContentBlock, CreateTaskResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, GetTaskParams, GetTaskResult, Implementation,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId,
    RequestStateCodec, SealOptions, ServerCapabilities, ServerConfig, ServerRequest, Tool,
    UpdateTaskParams,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, Peer, ServerHandler};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::elicitation::{self, Resolution};

/// The askbus MCP server: the `question` tool over a [`QuestionService`].
///
/// Cloning gives another handle to the same server (the same tasks, the same key for
/// `requestState`), which is what a Streamable HTTP service needs: it makes a handler per
/// session, and a task created in one request is polled in another.
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_mcp::{AskbusMcp, ElicitationBridge, McpConfig};
/// use askbus_question::QuestionService;
///
/// let questions = QuestionService::new(Bus::new());
/// let mcp = AskbusMcp::new(
///     questions,
///     McpConfig { elicitation: ElicitationBridge::On, ..McpConfig::default() },
/// );
/// # drop(mcp);
/// ```
#[derive(Clone)]
pub struct AskbusMcp {
    /// Shared by every clone.
    inner: Arc<Inner>,
}

/// Settings of an [`AskbusMcp`] server.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// The askbus session questions are asked in, unless the request carries a
    /// [`ScopedSession`]. Default: `mcp`.
    pub session_id: Arc<str>,
    /// Whether questions are also put to the user through the client's elicitation UI.
    /// Default: [`ElicitationBridge::Off`].
    pub elicitation: ElicitationBridge,
    /// How often a held-open call sends a progress notification (when the client gave a
    /// `progressToken`). Default: 10 s.
    pub progress_interval: Duration,
    /// The polling interval suggested to task clients. Default: 1 s.
    pub task_poll_interval: Duration,
    /// How long a task is kept when its question never times out. Default: 24 h.
    pub task_ttl_without_timeout: Duration,
    /// The timeout of each question the tool asks. Default: the question service's.
    pub timeout: Timeout,
}

/// Whether a client's elicitation UI may answer questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElicitationBridge {
    /// Questions are answered over askbus only.
    #[default]
    Off,
    /// Clients that support form elicitation also show each question as a form.
    On,
}

/// Confines an MCP request to one askbus session.
///
/// An HTTP layer in front of [`streamable_http_service`](crate::streamable_http_service)
/// that authenticates callers inserts it into the request's extensions when the caller
/// may only use one session (the askbus server does so for session-scoped tokens); the
/// tool then asks in that session instead of [`McpConfig::session_id`], and refuses a
/// `requestState` of another session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedSession(pub Arc<str>);

/// What every handle of one server shares.
struct Inner {
    /// Where questions are asked.
    questions: QuestionService,
    /// The askbus question tool: parses arguments, asks, and words the outcome.
    tool: QuestionTool,
    /// The tool as `tools/list` shows it, built from `tool.definition()`.
    listed: Tool,
    /// The settings.
    config: McpConfig,
    /// Calls running as SEP-2663 tasks.
    tasks: TaskManager,
    /// Seals and opens `requestState`; its key is made at startup and never leaves memory.
    request_state: RequestStateCodec,
    /// Numbers calls, so each call can find the question it asked by its `callID`.
    calls: AtomicU64,
}

/// A call whose question is registered: its future, and the request it asked.
struct Started {
    /// Resolves with the tool output once the question resolves. Dropping it cancels the
    /// question.
    call: CallFuture,
    /// The registered request; `None` only if it resolved during the first poll.
    request: Option<Arc<QuestionRequest>>,
}

type CallFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;

type ElicitFuture = Pin<Box<dyn Future<Output = Option<ElicitResult>> + Send>>;

/// What a sealed `requestState` carries between `input_required` rounds.
#[derive(Debug, Serialize, Deserialize)]
struct RoundState {
    /// The question asked in the first round.
    question: QuestionId,
    /// Its session; a retry from another session is refused.
    session: String,
    /// Which round this state was issued in, counted from 1.
    round: u32,
}

/// The key of the elicitation in `inputRequests`.
const ANSWER_KEY: &str = "answer";
/// How many times a form is shown again after an answer the question refused.
const MAX_FORM_ATTEMPTS: u32 = 3;
/// How long a task outlives its question's deadline, so a poller sees the outcome.
const TASK_GRACE: Duration = Duration::from_secs(60);

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            session_id: "mcp".into(),
            elicitation: ElicitationBridge::Off,
            progress_interval: Duration::from_secs(10),
            task_poll_interval: Duration::from_secs(1),
            task_ttl_without_timeout: Duration::from_secs(24 * 60 * 60),
            timeout: Timeout::Default,
        }
    }
}

impl AskbusMcp {
    /// A server asking through `questions`, configured by `config`.
    pub fn new(questions: QuestionService, config: McpConfig) -> Self {
        let tool = QuestionTool::new(questions.clone()).with_timeout(config.timeout);
        let listed = serde_json::from_value(tool.definition().to_mcp())
            .unwrap_or_else(|error| unreachable!("the MCP tool shape is an MCP tool: {error}"));
        Self {
            inner: Arc::new(Inner {
                questions,
                tool,
                listed,
                config,
                tasks: TaskManager::new(),
                request_state: RequestStateCodec::new_unchecked(random_key()),
                calls: AtomicU64::new(0),
            }),
        }
    }

    /// The askbus session of a request: its [`ScopedSession`], or the configured one.
    fn session(&self, context: &RequestContext<RoleServer>) -> Arc<str> {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<ScopedSession>())
            .map(|scoped| Arc::clone(&scoped.0))
            .unwrap_or_else(|| Arc::clone(&self.inner.config.session_id))
    }

    /// Starts the tool call: parses the arguments and registers the question.
    ///
    /// The call is polled once here, which is when [`QuestionTool::call`] submits its
    /// question; the question is then found by the unique `callID` given to it.
    async fn start(&self, session: Arc<str>, args: Value) -> Result<Started, ToolError> {
        let number = self.inner.calls.fetch_add(1, Ordering::Relaxed);
        let call_id = format!("mcp_call_{number}");
        let context = ToolContext::new(Arc::clone(&session)).with_call("mcp", call_id.clone());
        let tool = self.inner.tool.clone();
        let mut call: CallFuture = Box::pin(async move { tool.call(context, args).await });
        let first = std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
        match first {
            Poll::Ready(Err(error)) => Err(error),
            Poll::Ready(Ok(output)) => Ok(Started {
                call: Box::pin(std::future::ready(Ok(output))),
                request: None,
            }),
            Poll::Pending => {
                let request =
                    self.inner
                        .questions
                        .list(Some(&session))
                        .into_iter()
                        .find(|request| {
                            request
                                .tool
                                .as_ref()
                                .is_some_and(|tool| tool.call_id == call_id)
                        });
                Ok(Started { call, request })
            }
        }
    }

    /// Holds the call open until the question resolves, sending progress and (with the
    /// bridge) eliciting the answer in the client's session.
    async fn hold_open(
        &self,
        started: Started,
        bridge: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let Started { mut call, request } = started;
        let progress = context.meta.get_progress_token();
        let interval = self.inner.config.progress_interval;
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        let mut sent_progress = 0_u32;
        let mut form = match (&request, bridge) {
            (Some(request), true) => Some(SessionForm::new(context.peer.clone(), request)),
            _ => None,
        };
        let mut attempts = 1;
        loop {
            let elicited = async {
                match form.as_mut() {
                    Some(form) => form.answer().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                output = &mut call => {
                    if let Some(form) = form.take() {
                        form.withdraw().await;
                    }
                    return Ok(call_tool_result(output));
                }
                () = context.ct.cancelled() => {
                    // Dropping `call` here cancels the question (`question.cancelled`).
                    return Err(McpError::internal_error("the client cancelled the call", None));
                }
                _ = ticks.tick(), if progress.is_some() => {
                    sent_progress += 1;
                    if let (Some(token), Some(request)) = (&progress, &request) {
                        notify_progress(&context.peer, token, sent_progress, interval, request).await;
                    }
                }
                answer = elicited => {
                    form = None;
                    let (Some(answer), Some(request)) = (answer, &request) else { continue };
                    if let Err(refusal) = self.apply(request, &answer) {
                        tracing::info!("the elicitation answer to {} was refused: {refusal}", request.id);
                        if attempts < MAX_FORM_ATTEMPTS {
                            attempts += 1;
                            form = Some(SessionForm::again(context.peer.clone(), request, &refusal));
                        }
                    }
                }
            }
        }
    }

    /// Runs the call as a SEP-2663 task; returns the task handle at once.
    fn run_as_task(&self, started: Started, bridge: bool) -> CreateTaskResult {
        let Started { mut call, request } = started;
        let ttl = match request.as_ref().and_then(|request| {
            request
                .expires_at
                .map(|expires| expires.saturating_sub(request.created_at))
        }) {
            Some(timeout_ms) => Duration::from_millis(timeout_ms) + TASK_GRACE,
            None => self.inner.config.task_ttl_without_timeout,
        };
        let mut options = TaskOptions::new()
            .with_ttl_ms(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
            .with_poll_interval_ms(
                u64::try_from(self.inner.config.task_poll_interval.as_millis()).unwrap_or(1000),
            );
        if let Some(request) = &request {
            options = options.with_status_message(waiting_message(request));
        }
        let server = self.clone();
        let task = self.inner.tasks.spawn(options, move |task| {
            Box::pin(async move {
                let mut attempts = 1;
                let mut input = match (&request, bridge) {
                    (Some(request), true) => Some(task_input(&task, request, None, attempts)),
                    _ => None,
                };
                loop {
                    let answered = async {
                        match input.as_mut() {
                            Some(input) => input.await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        output = &mut call => return Ok(call_tool_result(output)),
                        // Returning drops `call`, which cancels the question.
                        () = task.cancelled() => return Err(TaskExit::Cancelled),
                        answer = answered => {
                            input = None;
                            let (Some(answer), Some(request)) = (answer, &request) else { continue };
                            if let Err(refusal) = server.apply(request, &answer)
                                && attempts < MAX_FORM_ATTEMPTS
                            {
                                attempts += 1;
                                input = Some(task_input(&task, request, Some(&refusal), attempts));
                            }
                        }
                    }
                }
            })
        });
        CreateTaskResult::new(task)
    }

    /// The first `input_required` round: the question stays pending with no open call.
    async fn first_round(&self, started: Started) -> Result<CallToolResponse, McpError> {
        let Started { call, request } = started;
        let Some(request) = request else {
            return Ok(call_tool_result(call.await).into());
        };
        // The question lives as long as this future: until it is answered (here or over
        // HTTP), times out, or its session is cancelled.
        tokio::spawn(call);
        Ok(self.input_required(&request, None, 1)?.into())
    }

    /// A retried call carrying the `requestState` of an earlier round.
    async fn next_round(
        &self,
        sealed: &str,
        responses: Option<&InputResponses>,
        session: &str,
    ) -> Result<CallToolResponse, McpError> {
        let state: RoundState = self.inner.request_state.open_json(sealed).map_err(|_| {
            McpError::invalid_params(
                "requestState was not issued by this server, was altered, or has expired",
                None,
            )
        })?;
        if state.session != session {
            return Err(McpError::invalid_params(
                "requestState belongs to another session",
                None,
            ));
        }
        let Some(snapshot) = self.inner.questions.get(state.question) else {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "The question {} is no longer known to askbus, so its answer is lost. Do not assume or invent an answer: ask again if you still need it.",
                state.question
            ))])
            .into());
        };
        let request = snapshot.request;
        if snapshot.outcome.is_none() {
            let Some(answer) = responses.and_then(|responses| responses.get(ANSWER_KEY)) else {
                // The client did not answer the form: show it again.
                return Ok(self.input_required(&request, None, state.round + 1)?.into());
            };
            let answer: ElicitResult = serde_json::from_value(answer.clone()).map_err(|error| {
                McpError::invalid_params(format!("inputResponses.{ANSWER_KEY}: {error}"), None)
            })?;
            if let Err(refusal) = self.apply(&request, &answer) {
                return Ok(self
                    .input_required(&request, Some(&refusal), state.round + 1)?
                    .into());
            }
        }
        // Resolved now, by this answer or an earlier one from anywhere.
        match self
            .inner
            .questions
            .get(state.question)
            .and_then(|s| s.outcome)
        {
            Some(outcome) => {
                let output = tool_output(&request, outcome);
                Ok(call_tool_result(Ok(output)).into())
            }
            None => Ok(self.input_required(&request, None, state.round + 1)?.into()),
        }
    }

    /// An `input_required` result showing the question as a form.
    fn input_required(
        &self,
        request: &QuestionRequest,
        refusal: Option<&str>,
        round: u32,
    ) -> Result<InputRequiredResult, McpError> {
        let state = RoundState {
            question: request.id,
            session: request.session_id.to_string(),
            round,
        };
        let ttl = request
            .expires_at
            .map(|expires| Duration::from_millis(expires.saturating_sub(request.created_at)))
            .unwrap_or(self.inner.config.task_ttl_without_timeout)
            + TASK_GRACE;
        let sealed = self
            .inner
            .request_state
            .seal_json_with(&state, &SealOptions::new().ttl(ttl))
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        let mut requests = InputRequests::new();
        requests.insert(
            ANSWER_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(form_for(request, refusal))),
        );
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }

    /// Applies a form answer to the question.
    ///
    /// # Errors
    ///
    /// Why the question refused the answer (it does not fit); the question stays pending.
    /// An answer that lost the race to another one is not an error.
    fn apply(&self, request: &QuestionRequest, answer: &ElicitResult) -> Result<(), String> {
        let questions = &self.inner.questions;
        let applied = match elicitation::resolution(&request.questions, answer) {
            Resolution::Reply(answers) => questions.reply(request.id, answers),
            Resolution::Reject => questions.reject(request.id, None),
            Resolution::Cancel => questions.cancel(request.id),
        };
        match applied {
            Ok(_) | Err(ReplyError::AlreadyResolved { .. } | ReplyError::NotFound(_)) => Ok(()),
            Err(ReplyError::Invalid(invalid)) => Err(invalid.to_string()),
        }
    }
}

impl ServerHandler for AskbusMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("askbus", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "askbus lets you stop and ask the human. Call the `question` tool when you need \
             their input; a human answers it through askbus (its web UI or HTTP API), which can \
             take minutes.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![
            self.inner.listed.clone(),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != QUESTION_TOOL_NAME {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}: this server offers `{QUESTION_TOOL_NAME}`",
                    request.name
                ),
                None,
            ));
        }
        let session = self.session(&context);
        if let Some(sealed) = request.request_state.as_deref() {
            return self
                .next_round(sealed, request.input_responses.as_ref(), &session)
                .await;
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let started = match self.start(session, args).await {
            Ok(started) => started,
            Err(error) => {
                return Ok(call_tool_result(Err(error)).into());
            }
        };
        let capabilities = context.client_capabilities();
        let bridge = self.inner.config.elicitation == ElicitationBridge::On
            && capabilities.as_ref().is_some_and(elicits_forms);
        if capabilities
            .as_ref()
            .is_some_and(ClientCapabilities::supports_tasks)
        {
            return Ok(self.run_as_task(started, bridge).into());
        }
        let modern = context
            .protocol_version()
            .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if modern && bridge {
            return self.first_round(started).await;
        }
        // Server-to-client requests exist only before 2026-07-28.
        let bridge = bridge && !modern;
        Ok(self.hold_open(started, bridge, &context).await?.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(
            self.inner.tasks.get_task(&request.task_id)?,
        ))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner
            .tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner.tasks.cancel_task(&request.task_id)
    }
}

/// A form shown through a legacy session's `elicitation/create`.
struct SessionForm {
    /// Resolves with the client's answer, or `None` if the request failed.
    answer: ElicitFuture,
    /// The id of the sent request, once sent: to cancel it if the question resolves first.
    sent: Arc<std::sync::Mutex<Option<SentRequest>>>,
}

/// A sent server-to-client request: its id, and the peer it went to.
type SentRequest = (RequestId, Peer<RoleServer>);

impl SessionForm {
    fn new(peer: Peer<RoleServer>, request: &QuestionRequest) -> Self {
        Self::send(peer, form_for(request, None))
    }

    fn again(peer: Peer<RoleServer>, request: &QuestionRequest, refusal: &str) -> Self {
        Self::send(peer, form_for(request, Some(refusal)))
    }

    fn send(peer: Peer<RoleServer>, params: ElicitRequestParams) -> Self {
        let sent = Arc::new(std::sync::Mutex::new(None));
        let record = Arc::clone(&sent);
        let answer = Box::pin(async move {
            let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            let handle = match peer
                .send_cancellable_request(request, PeerRequestOptions::no_options())
                .await
            {
                Ok(handle) => handle,
                Err(error) => {
                    tracing::warn!("cannot send elicitation/create: {error}");
                    return None;
                }
            };
            if let Ok(mut sent) = record.lock() {
                *sent = Some((handle.id.clone(), handle.peer.clone()));
            }
            match handle.await_response().await {
                Ok(ClientResult::ElicitResult(result)) => Some(result),
                Ok(other) => {
                    tracing::warn!("elicitation/create answered with {other:?}");
                    None
                }
                Err(error) => {
                    tracing::info!("elicitation/create failed: {error}");
                    None
                }
            }
        });
        Self { answer, sent }
    }

    async fn answer(&mut self) -> Option<ElicitResult> {
        self.answer.as_mut().await
    }

    /// Tells the client to close the form: the question was resolved elsewhere.
    async fn withdraw(self) {
        let sent = self.sent.lock().ok().and_then(|mut sent| sent.take());
        drop(self.answer);
        if let Some((id, peer)) = sent {
            let params = CancelledNotificationParam::new(
                Some(id),
                Some("the question was answered elsewhere".to_owned()),
            );
            let _ = peer.notify_cancelled(params).await;
        }
    }
}

/// The task's `input_required` request showing the question as a form.
fn task_input(
    task: &TaskContext,
    request: &QuestionRequest,
    refusal: Option<&str>,
    attempt: u32,
) -> ElicitFuture {
    let task = task.clone();
    let key = if attempt == 1 {
        ANSWER_KEY.to_owned()
    } else {
        format!("{ANSWER_KEY}_{attempt}")
    };
    let form = InputRequest::Elicitation(ElicitRequest::new(form_for(request, refusal)));
    Box::pin(async move {
        let value = task.request_input(key, form).await.ok()?;
        serde_json::from_value(value)
            .map_err(|error| tracing::info!("tasks/update answer is not an ElicitResult: {error}"))
            .ok()
    })
}

/// The elicitation form of `request`, led by why the previous answer was refused.
fn form_for(request: &QuestionRequest, refusal: Option<&str>) -> ElicitRequestParams {
    let mut form = elicitation::form(&request.questions);
    if let (Some(refusal), ElicitRequestParams::FormElicitationParams { message, .. }) =
        (refusal, &mut form)
    {
        *message = format!("That answer was not accepted ({refusal}). {message}");
    }
    form
}

/// Whether the client elicits forms (a bare `elicitation: {}` means forms).
fn elicits_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// The tool result of a call: the text for the model and the outcome as structured content.
fn call_tool_result(output: Result<ToolOutput, ToolError>) -> CallToolResult {
    match output {
        Ok(output) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(output.text)]);
            result.structured_content = serde_json::to_value(&output.outcome).ok();
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    }
}

/// The tool output of a question that resolved without an open call (a later round).
///
/// The same [`ToolOutcome`] the tool builds, so the model reads the same texts.
fn tool_output(
    request: &QuestionRequest,
    outcome: Outcome<askbus_question::Answers>,
) -> ToolOutput {
    let outcome = match outcome {
        Outcome::Replied(answers) => ToolOutcome::Answered {
            answers: request
                .questions
                .iter()
                .zip(answers.iter())
                .map(|(info, answer)| AnsweredQuestion {
                    question: info.question.clone(),
                    answer: answer.clone(),
                })
                .collect(),
        },
        Outcome::Rejected { reason } => ToolOutcome::Rejected { reason },
        Outcome::TimedOut => ToolOutcome::TimedOut,
        Outcome::Cancelled => ToolOutcome::Cancelled,
    };
    ToolOutput {
        text: outcome.text_for_model(),
        outcome,
    }
}

/// What a waiting call tells the client about its question.
fn waiting_message(request: &QuestionRequest) -> String {
    format!(
        "Waiting for a human to answer question {} in askbus session {:?}",
        request.id, request.session_id
    )
}

/// Sends the `count`th progress notification of a held-open call.
async fn notify_progress(
    peer: &Peer<RoleServer>,
    token: &ProgressToken,
    count: u32,
    interval: Duration,
    request: &QuestionRequest,
) {
    let waited = interval.as_secs_f64() * f64::from(count);
    let mut params = ProgressNotificationParam::new(token.clone(), f64::from(count)).with_message(
        format!("{} ({waited:.0} s so far)", waiting_message(request)),
    );
    if let Some(expires) = request.expires_at {
        let total_ms = expires.saturating_sub(request.created_at);
        let interval_ms = interval.as_millis().max(1);
        // Progress counts notifications; the total is how many fit before the deadline.
        params = params.with_total((u128::from(total_ms) / interval_ms) as f64);
    }
    if let Err(error) = peer.notify_progress(params).await {
        tracing::debug!("cannot send a progress notification: {error}");
    }
}

/// 32 random bytes for the `requestState` key.
fn random_key() -> Vec<u8> {
    let mut key = Vec::with_capacity(32);
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    key
}
