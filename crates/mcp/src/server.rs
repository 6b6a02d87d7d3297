//! The MCP server handler: the question and approval tools, and how a call waits for its
//! human.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use askbus_question::{
    ApprovalReplyError, ApprovalRequest, Identity, QuestionId, QuestionRequest, ReplyError,
    RequestHub, Role, Timeout,
};
use askbus_tool::{
    APPROVAL_TOOL_NAME, ApprovalTool, Language, QUESTION_TOOL_NAME, QuestionTool, ToolContext,
    ToolError, ToolOutcome, ToolOutput,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CancelledNotificationParam, ClientCapabilities, ClientResult, ContentBlock, CreateTaskResult,
    CustomNotification, ElicitRequest, ElicitRequestParams, ElicitResult, GetTaskParams,
    GetTaskResult, Implementation, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, RequestId, RequestStateCodec, SealOptions, ServerCapabilities,
    ServerConfig, ServerNotification, ServerRequest, Tool, UpdateTaskParams,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, Peer, ServerHandler};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use crate::elicitation::{self, Resolution, Review};
use crate::parked::{Connection, KEEP_RESOLVED, Lookup, Owner, ParkedCalls};
use crate::task_room::TaskRoom;
use crate::tools::{self, WAIT_TOOL_NAME};

/// The askbus MCP server: the `question`, `request_approval` and `wait_for_answer` tools
/// over a [`RequestHub`].
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
/// use askbus_question::RequestHub;
///
/// let hub = RequestHub::new(Bus::new());
/// let mcp = AskbusMcp::new(
///     hub,
///     McpConfig { elicitation: ElicitationBridge::On, ..McpConfig::default() },
/// );
/// # drop(mcp);
/// ```
#[derive(Clone)]
pub struct AskbusMcp {
    /// Shared by every clone.
    inner: Arc<Inner>,
    /// The MCP session this handle serves: its held-open requests are cancelled when the
    /// last handle of it goes (see [`ParkedCalls`]).
    connection: Arc<Connection>,
}

/// Settings of an [`AskbusMcp`] server.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// The askbus session questions and approvals are requested in, unless the request
    /// carries a [`ScopedSession`]. Default: `mcp`.
    pub session_id: Arc<str>,
    /// Whether questions are also put to the user through the client's elicitation UI.
    /// Default: [`ElicitationBridge::Off`].
    pub elicitation: ElicitationBridge,
    /// How often a held-open call sends a progress notification (when the client gave a
    /// `progressToken`). Default: 10 s.
    pub progress_interval: Duration,
    /// How long one held-open tool call waits for the human before it returns a `waiting`
    /// result naming the request, which the agent waits on again with `wait_for_answer`;
    /// the request stays pending. Keep it safely under the hosts' request timeout (60 s on
    /// the MCP SDKs' defaults). Default: 45 s.
    pub answer_wait: Duration,
    /// The polling interval suggested to task clients. Default: 1 s.
    pub task_poll_interval: Duration,
    /// How long a task is kept when its request never times out. Default: 24 h.
    pub task_ttl_without_timeout: Duration,
    /// Most tasks kept at once (a task is kept a while after it ends, so its client can
    /// read how); past it, a call is served as for a client without tasks. Default: 1,000.
    pub max_tasks: usize,
    /// The timeout of each request the tools make. Default: each service's own (questions
    /// 600 s, approvals 300 s, unless the hub was configured otherwise).
    pub timeout: Timeout,
    /// Mints the answer links the [elicitation bridge](ElicitationBridge) offers as URL-mode
    /// elicitations. Default: none, so no link is offered.
    pub answer_links: Option<AnswerLinks>,
}

/// Mints the absolute URL of an answer link: the page where a human answers one request.
///
/// The MCP face knows nothing of links, keys or HTTP: whoever serves both (the askbus
/// server) hands it the HTTP API's own minting, `askbus_http::LinkKey::mint`, with the
/// server's base URL, so there is one way to make a link and every rule of links holds
/// for the ones MCP offers. The function is called with the request, the identity the
/// link acts as (the [`McpCaller`]) and when the request expires, if ever; it returns
/// `None` when no link can act as that identity (an agent decides nothing).
///
/// # Examples
///
/// ```
/// use askbus_mcp::{AnswerLinks, McpConfig};
///
/// let links = AnswerLinks::new(|request, identity, _expires_at| {
///     identity
///         .may_decide()
///         .then(|| format!("https://askbus.example/answer/{request}.signed-for-{}", identity.name))
/// });
/// let config = McpConfig { answer_links: Some(links), ..McpConfig::default() };
/// # drop(config);
/// ```
#[derive(Clone)]
pub struct AnswerLinks(Arc<MintLink>);

/// What [`AnswerLinks`] wraps.
type MintLink =
    dyn Fn(askbus_question::RequestId, &Identity, Option<u64>) -> Option<String> + Send + Sync;

/// Whether a client's elicitation UI may answer questions and approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElicitationBridge {
    /// Requests are answered over askbus only.
    #[default]
    Off,
    /// Clients that support form elicitation also show each question and each approval as
    /// a form; clients that support URL-mode elicitation but not forms are offered each
    /// request's answer link (given [`McpConfig::answer_links`]).
    On,
}

/// Confines an MCP request to one askbus session.
///
/// An HTTP layer in front of [`streamable_http_service`](crate::streamable_http_service)
/// that authenticates callers inserts it into the request's extensions when the caller
/// may only use one session (the askbus server does so for session-scoped tokens); the
/// tools then make their requests in that session instead of [`McpConfig::session_id`],
/// and refuse a `requestState` of another session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedSession(pub Arc<str>);

/// Who an MCP request comes from: the identity of its bearer token, inserted into the
/// request's extensions by the HTTP layer that authenticates it (the askbus server does);
/// [`Identity::local`] without one (stdio, or a server without tokens).
///
/// The MCP face is an agent's: its tools make requests as an `agent` of the caller's name,
/// so the hub's duties never let one of them answer itself. Only the elicitation bridge
/// decides, as the caller itself (the human at the client), and only where the hub's
/// duties allow it: never with separation of duties on, since the client is the asker's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCaller(pub Identity);

/// What every handle of one server shares.
struct Inner {
    /// Where questions and approvals are requested (the bridge answers questions here).
    hub: RequestHub,
    /// The tools as `tools/list` shows them, built from their definitions.
    listed: Vec<Tool>,
    /// The settings.
    config: McpConfig,
    /// Calls running as SEP-2663 tasks.
    tasks: TaskManager,
    /// How many more tasks may be made (see `task_room`).
    task_room: TaskRoom,
    /// Seals and opens `requestState`; its key is made at startup and never leaves memory.
    request_state: RequestStateCodec,
    /// The requests of held-open calls, which outlive the calls (see [`ParkedCalls`]).
    parked: Arc<ParkedCalls>,
}

/// The tools this server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offered {
    /// `question`: ask the human.
    Question,
    /// `request_approval`: have the human review tool calls.
    Approval,
}

/// A request as an elicitation form, for the human at the client to answer there.
#[derive(Clone)]
enum Form {
    /// The questions, one field or two per question.
    Question(Arc<QuestionRequest>),
    /// The review: a decision per action, a reason, edited arguments.
    Approval(Arc<ApprovalRequest>),
}

/// A call whose request is registered: the future of its result, and what it waits for.
struct Started {
    /// Resolves with the tool result once the request resolves. Dropping it cancels the
    /// request.
    result: ResultFuture,
    /// The request, as a waiting call describes it to the client.
    waiting: Waiting,
    /// The request to also show the client as an elicitation form. Set for every call,
    /// then cleared unless the bridge is on and the client elicits forms.
    form: Option<Form>,
    /// Who answers through that form, or the link: the caller (see [`McpCaller`]).
    decider: Identity,
    /// The request, for its answer link.
    id: askbus_question::RequestId,
    /// What a URL-mode elicitation of the request tells the user.
    prompt: String,
}

/// An answer link offered as a URL-mode elicitation.
struct LinkOffer {
    /// The `elicitation/create` request.
    params: ElicitRequestParams,
    /// Its `elicitationId`, for `notifications/elicitation/complete`.
    elicitation_id: String,
}

/// What a waiting call tells the client about its request.
#[derive(Clone)]
struct Waiting {
    /// Names the request and whom it waits for (progress and task status messages).
    message: String,
    /// When the request was made, milliseconds since the Unix epoch.
    created_at: u64,
    /// When it times out, if ever.
    expires_at: Option<u64>,
}

type ResultFuture = Pin<Box<dyn Future<Output = CallToolResult> + Send>>;

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
/// The notification closing a URL-mode elicitation (MCP 2025-11-25), which `rmcp` has no
/// type for.
const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// How many times a form is shown again after an answer the question refused.
const MAX_FORM_ATTEMPTS: u32 = 3;
/// How long a task outlives its request's deadline, so a poller sees the outcome.
const TASK_GRACE: Duration = Duration::from_secs(60);

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            session_id: "mcp".into(),
            elicitation: ElicitationBridge::Off,
            progress_interval: Duration::from_secs(10),
            answer_wait: Duration::from_secs(45),
            task_poll_interval: Duration::from_secs(1),
            task_ttl_without_timeout: Duration::from_secs(24 * 60 * 60),
            max_tasks: 1_000,
            timeout: Timeout::Default,
            answer_links: None,
        }
    }
}

impl AnswerLinks {
    /// Links minted by `mint` (see [`AnswerLinks`]).
    pub fn new(
        mint: impl Fn(askbus_question::RequestId, &Identity, Option<u64>) -> Option<String>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self(Arc::new(mint))
    }

    /// The URL of the link of `request`, acting as `acts_as`, if one can act as it.
    fn mint(
        &self,
        request: askbus_question::RequestId,
        acts_as: &Identity,
        expires_at: Option<u64>,
    ) -> Option<String> {
        (self.0)(request, acts_as, expires_at)
    }
}

impl std::fmt::Debug for AnswerLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AnswerLinks(..)")
    }
}

impl AskbusMcp {
    /// A server making its requests through `hub`, configured by `config`.
    ///
    /// Give it the hub the HTTP API serves (the askbus server does), so that a human sees
    /// and answers both kinds of request there. A second hub made for MCP alone would hold
    /// requests no one else can see.
    pub fn new(hub: RequestHub, config: McpConfig) -> Self {
        // The definitions only: each call makes its request through tools acting as its
        // caller (see `start`).
        let question = QuestionTool::new(hub.questions().clone());
        let approval = ApprovalTool::new(hub.approvals().clone());
        let listed = tools::listed(&question.definition(), &approval.definition());
        let parked = Arc::new(ParkedCalls::default());
        Self {
            connection: Arc::new(parked.connect()),
            inner: Arc::new(Inner {
                hub,
                listed,
                tasks: TaskManager::new(),
                task_room: TaskRoom::new(config.max_tasks),
                config,
                request_state: RequestStateCodec::new_unchecked(random_key()),
                parked,
            }),
        }
    }

    /// A handle of the same server for another MCP session: the transports serve each
    /// session (stdio, a Streamable HTTP session) through its own, so that the session
    /// ending cancels its requests and no other's.
    pub(crate) fn for_connection(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            connection: Arc::new(self.inner.parked.connect()),
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

    /// Who a request comes from (see [`McpCaller`]).
    fn caller(context: &RequestContext<RoleServer>) -> Identity {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<McpCaller>())
            .map_or_else(Identity::local, |caller| caller.0.clone())
    }

    /// Starts the tool call: parses the arguments and registers the request, asked by an
    /// agent of `caller`'s name.
    fn start(
        &self,
        tool: Offered,
        session: Arc<str>,
        caller: Identity,
        args: Value,
    ) -> Result<Started, ToolError> {
        let context = ToolContext::new(session);
        // An agent of the caller's name; a caller who may not ask at all (a reviewer) asks
        // as itself, which the hub refuses, so no credential asks through MCP what it could
        // not ask over HTTP.
        let asker = if caller.may_ask() {
            Identity::new(Arc::clone(&caller.name), Role::Agent)
        } else {
            caller.clone()
        };
        let asking = self.inner.hub.acting_as(asker);
        let timeout = self.inner.config.timeout;
        let (args, locale) = tools::take_locale(tool.name(), args)?;
        Ok(match tool {
            Offered::Question => {
                let mut tool = QuestionTool::new(asking.questions().clone()).with_timeout(timeout);
                if let Some(locale) = locale {
                    tool = tool.with_locale(locale);
                }
                let call = tool.submit(context, args)?;
                let request = Arc::clone(call.request());
                Started {
                    result: Box::pin(async move { call_tool_result(call.await) }),
                    waiting: Waiting::question(&request),
                    id: askbus_question::RequestId::Question(request.id),
                    prompt: elicitation::question_prompt(&request.questions),
                    form: Some(Form::Question(request)),
                    decider: caller,
                }
            }
            Offered::Approval => {
                let mut tool = ApprovalTool::new(asking.approvals().clone()).with_timeout(timeout);
                if let Some(locale) = locale {
                    tool = tool.with_locale(locale);
                }
                let call = tool.submit(context, args)?;
                let request = Arc::clone(call.request());
                Started {
                    id: askbus_question::RequestId::Approval(request.id),
                    prompt: elicitation::approval_prompt(&request.action_requests),
                    result: Box::pin(async move { call_tool_result(call.await) }),
                    waiting: Waiting::approval(&request),
                    form: Some(Form::Approval(request)),
                    decider: caller,
                }
            }
        })
    }

    /// Holds the call open until the request resolves, or for [`McpConfig::answer_wait`]
    /// at most: the request is parked (see [`ParkedCalls`]), driven by a task of its own
    /// that also elicits the answer in the client's session (`form`) or offers the
    /// request's answer link (`link`) as a URL-mode elicitation. `session` is `None` for
    /// a request the stateless transport made, which no MCP session owns.
    async fn hold_open(
        &self,
        started: Started,
        link: Option<LinkOffer>,
        owner: Owner,
        session: Option<&Connection>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let Started {
            result,
            waiting,
            form,
            decider,
            id,
            ..
        } = started;
        let (publish, outcome) = watch::channel(None);
        let drive = drive(
            Arc::clone(&self.inner),
            result,
            form,
            link,
            decider,
            context.peer.clone(),
        );
        let parked = Arc::clone(&self.inner.parked);
        let driver = tokio::spawn(async move {
            let result = drive.await;
            // Nobody may be watching (every waiting call returned): the result is kept.
            let _ = publish.send(Some(result));
            tokio::time::sleep(KEEP_RESOLVED).await;
            parked.remove(id);
        });
        let (outcome, owned) =
            self.inner
                .parked
                .park(id, owner, session, outcome, driver.abort_handle());
        self.wait_parked(id, outcome, owned, &waiting, context)
            .await
    }

    /// Waits for the parked request `id` to resolve, for [`McpConfig::answer_wait`] at
    /// most (then the result says it is still waiting), sending progress meanwhile. A
    /// cancelled call cancels the request only if it is `owned` by this call's caller.
    async fn wait_parked(
        &self,
        id: askbus_question::RequestId,
        mut outcome: watch::Receiver<Option<CallToolResult>>,
        owned: bool,
        waiting: &Waiting,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let progress = context.meta.get_progress_token();
        let interval = self.inner.config.progress_interval;
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        let mut sent_progress = 0_u32;
        let bound = tokio::time::sleep(self.inner.config.answer_wait);
        tokio::pin!(bound);
        loop {
            tokio::select! {
                result = resolved(&mut outcome) => {
                    // Delivered once: forget it (its driver is done with the request).
                    self.inner.parked.remove(id);
                    return result.ok_or_else(|| {
                        McpError::internal_error("the request's driver stopped", None)
                    });
                }
                () = context.ct.cancelled() => {
                    // Stopping the driver drops the request's future, which cancels it
                    // (`question.cancelled`, `approval.cancelled`).
                    if owned {
                        self.inner.parked.remove(id);
                    }
                    return Err(McpError::internal_error("the client cancelled the call", None));
                }
                _ = ticks.tick(), if progress.is_some() => {
                    sent_progress += 1;
                    if let Some(token) = &progress {
                        notify_progress(&context.peer, token, sent_progress, interval, waiting).await;
                    }
                }
                () = &mut bound => return Ok(still_waiting(id, waiting)),
            }
        }
    }

    /// `wait_for_answer`: waits again for a request whose call returned `waiting`, from
    /// `session` if the call has an MCP session (which then owns the request).
    async fn wait_again(
        &self,
        args: Value,
        owner: &Owner,
        session: Option<&Connection>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let id = match serde_json::from_value::<WaitArgs>(args) {
            Ok(args) => args.id,
            Err(error) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "invalid arguments for the `{WAIT_TOOL_NAME}` tool: {error}; expected {{\"id\": \"que_…\"}} (the `id` of a `waiting` result)"
                ))]));
            }
        };
        let parked = id
            .parse::<askbus_question::RequestId>()
            .ok()
            .map(|request| (request, self.inner.parked.lookup(request, owner, session)));
        let Some((request, Lookup::Found(outcome))) = parked else {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "askbus has no request {id:?} waiting for this caller in askbus session {:?}: its answer was already returned, it was cancelled when the MCP session that asked it ended, or the id is wrong. Do not assume or invent an answer: ask again if you still need it.",
                owner.session
            ))]));
        };
        let waiting = self.waiting_of(request);
        self.wait_parked(request, outcome, true, &waiting, context)
            .await
    }

    /// How a waiting call describes `request` (from the hub, which knows it while it is
    /// parked).
    fn waiting_of(&self, request: askbus_question::RequestId) -> Waiting {
        let known = match request {
            askbus_question::RequestId::Question(id) => self
                .inner
                .hub
                .questions()
                .get(id)
                .map(|snapshot| Waiting::question(&snapshot.request)),
            askbus_question::RequestId::Approval(id) => self
                .inner
                .hub
                .approvals()
                .get(id)
                .map(|snapshot| Waiting::approval(&snapshot.request)),
        };
        known.unwrap_or_else(|| Waiting {
            message: format!("Waiting for a human to answer {request}"),
            created_at: 0,
            expires_at: None,
        })
    }

    /// The answer link of the started request as a URL-mode elicitation, if the bridge is
    /// on, the client declared URL mode, and a link can act as the caller (no link acts as
    /// an agent).
    fn link_offer(
        &self,
        started: &Started,
        capabilities: Option<&ClientCapabilities>,
    ) -> Option<LinkOffer> {
        if self.inner.config.elicitation != ElicitationBridge::On
            || !capabilities.is_some_and(elicits_urls)
        {
            return None;
        }
        let links = self.inner.config.answer_links.as_ref()?;
        let Some(url) = links.mint(started.id, &started.decider, started.waiting.expires_at) else {
            tracing::debug!(
                "no answer link for {}: {} may not decide",
                started.id,
                started.decider
            );
            return None;
        };
        let elicitation_id = uuid::Uuid::new_v4().to_string();
        Some(LinkOffer {
            params: elicitation::link(started.prompt.clone(), url, elicitation_id.clone()),
            elicitation_id,
        })
    }

    /// How long a task of the call waiting as `waiting` is kept.
    fn task_ttl(&self, waiting: &Waiting) -> Duration {
        match waiting.timeout() {
            Some(timeout) => timeout + TASK_GRACE,
            None => self.inner.config.task_ttl_without_timeout,
        }
    }

    /// Runs the call as a SEP-2663 task; returns the task handle at once.
    fn run_as_task(&self, started: Started) -> CreateTaskResult {
        let Started {
            mut result,
            waiting,
            form,
            decider,
            ..
        } = started;
        let ttl = self.task_ttl(&waiting);
        let options = TaskOptions::new()
            .with_ttl_ms(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
            .with_poll_interval_ms(
                u64::try_from(self.inner.config.task_poll_interval.as_millis()).unwrap_or(1000),
            )
            .with_status_message(waiting.message);
        let inner = Arc::clone(&self.inner);
        let task = self.inner.tasks.spawn(options, move |task| {
            Box::pin(async move {
                let mut attempts = 1;
                let mut input = form
                    .as_ref()
                    .map(|form| task_input(&task, form, None, attempts));
                loop {
                    let answered = async {
                        match input.as_mut() {
                            Some(input) => input.await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        result = &mut result => return Ok(result),
                        // Returning drops `result`, which cancels the request.
                        () = task.cancelled() => return Err(TaskExit::Cancelled),
                        answer = answered => {
                            input = None;
                            let (Some(answer), Some(form)) = (answer, &form) else { continue };
                            if let Err(refusal) = inner.apply(form, &answer, &decider)
                                && attempts < MAX_FORM_ATTEMPTS
                            {
                                attempts += 1;
                                input = Some(task_input(&task, form, Some(&refusal), attempts));
                            }
                        }
                    }
                }
            })
        });
        CreateTaskResult::new(task)
    }

    /// The first `input_required` round: the question stays pending with no open call.
    fn first_round(
        &self,
        result: ResultFuture,
        question: &QuestionRequest,
    ) -> Result<CallToolResponse, McpError> {
        // The question lives as long as this future: until it is answered (here or over
        // HTTP), times out, or its session is cancelled.
        tokio::spawn(result);
        Ok(self.input_required(question, None, 1)?.into())
    }

    /// A retried call carrying the `requestState` of an earlier round.
    async fn next_round(
        &self,
        sealed: &str,
        responses: Option<&InputResponses>,
        session: &str,
        caller: &Identity,
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
        let questions = self.inner.hub.questions();
        let Some(snapshot) = questions.get(state.question) else {
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
            let form = Form::Question(Arc::clone(&request));
            if let Err(refusal) = self.inner.apply(&form, &answer, caller) {
                return Ok(self
                    .input_required(&request, Some(&refusal), state.round + 1)?
                    .into());
            }
        }
        // Resolved now, by this answer or an earlier one from anywhere.
        match questions.get(state.question).and_then(|s| s.outcome) {
            Some(outcome) => {
                let language = Language::of(request.locale.as_deref());
                let output = ToolOutcome::of_question(&request, outcome).into_output(language);
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
        let ttl = request_timeout(request.created_at, request.expires_at)
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
}

impl Inner {
    /// Applies a form answer to the request, decided by `decider`: through the hub acting
    /// as `decider`, so the same checks as an HTTP reply by that identity.
    ///
    /// # Errors
    ///
    /// Why the request refused the answer (it does not fit, or `decider` may not decide
    /// it); the request stays pending. An answer that lost the race to another one is not
    /// an error.
    fn apply(&self, form: &Form, answer: &ElicitResult, decider: &Identity) -> Result<(), String> {
        let hub = self.hub.acting_as(decider.clone());
        let refused = |refused: askbus_question::NotAllowed| {
            format!("{refused}. Answer it where reviewers answer (the askbus web UI).")
        };
        match form {
            Form::Question(request) => {
                let questions = hub.questions();
                let applied = match elicitation::resolution(&request.questions, answer) {
                    Resolution::Reply(answers) => questions.reply(request.id, answers),
                    Resolution::Reject => questions.reject(request.id, None),
                    Resolution::Cancel => questions.cancel(request.id),
                };
                match applied {
                    Ok(_) | Err(ReplyError::AlreadyResolved { .. } | ReplyError::NotFound(_)) => {
                        Ok(())
                    }
                    Err(ReplyError::Invalid(invalid)) => Err(invalid.to_string()),
                    // Only a wait says so; a reply's store failure is its `Durable`'s.
                    Err(unrecorded @ ReplyError::NotRecorded { .. }) => Err(unrecorded.to_string()),
                    Err(ReplyError::NotAllowed(not_allowed)) => Err(refused(not_allowed)),
                }
            }
            Form::Approval(request) => {
                let approvals = hub.approvals();
                let applied = match elicitation::review(request, answer)? {
                    Review::Reply(reply) => approvals.reply(request.id, reply),
                    Review::Cancel => approvals.cancel(request.id),
                };
                match applied {
                    Ok(_)
                    | Err(
                        ApprovalReplyError::AlreadyResolved { .. }
                        | ApprovalReplyError::NotFound(_),
                    ) => Ok(()),
                    Err(ApprovalReplyError::Invalid(invalid)) => Err(invalid.to_string()),
                    Err(unrecorded @ ApprovalReplyError::NotRecorded { .. }) => {
                        Err(unrecorded.to_string())
                    }
                    Err(ApprovalReplyError::NotAllowed(not_allowed)) => Err(refused(not_allowed)),
                }
            }
        }
    }
}

impl Form {
    /// The elicitation form, led by why the previous answer was refused.
    fn params(&self, refusal: Option<&str>) -> ElicitRequestParams {
        match self {
            Self::Question(request) => form_for(request, refusal),
            Self::Approval(request) => {
                let mut form = elicitation::review_form(request);
                if let (Some(refusal), ElicitRequestParams::FormElicitationParams { message, .. }) =
                    (refusal, &mut form)
                {
                    *message = format!("That answer was not accepted ({refusal}). {message}");
                }
                form
            }
        }
    }

    fn id(&self) -> askbus_question::RequestId {
        match self {
            Self::Question(request) => askbus_question::RequestId::Question(request.id),
            Self::Approval(request) => askbus_question::RequestId::Approval(request.id),
        }
    }
}

/// Drives a held-open call's request until it resolves: its result, plus the elicitation
/// form of it (re-sent with the reason after an answer the request refused, a few times)
/// or the URL-mode elicitation of its answer link, in the client's session. Returns the
/// tool result. Dropping it cancels a request still pending.
async fn drive(
    inner: Arc<Inner>,
    mut result: ResultFuture,
    form: Option<Form>,
    link: Option<LinkOffer>,
    decider: Identity,
    peer: Peer<RoleServer>,
) -> CallToolResult {
    let completes = link.as_ref().map(|link| link.elicitation_id.clone());
    let mut shown = match (&form, link) {
        (Some(form), _) => Some(SessionForm::send(peer.clone(), form.params(None))),
        // The client's answer to a URL elicitation says only whether the user opened the
        // link: the answer itself comes through the link, so nothing is applied.
        (None, Some(link)) => Some(SessionForm::send(peer.clone(), link.params)),
        (None, None) => None,
    };
    let mut attempts = 1;
    loop {
        let elicited = async {
            match shown.as_mut() {
                Some(shown) => shown.answer().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = &mut result => {
                if let Some(shown) = shown.take() {
                    shown.withdraw().await;
                }
                if let Some(elicitation_id) = completes {
                    notify_elicitation_complete(&peer, elicitation_id).await;
                }
                return result;
            }
            answer = elicited => {
                shown = None;
                let (Some(answer), Some(form)) = (answer, &form) else { continue };
                if let Err(refusal) = inner.apply(form, &answer, &decider) {
                    tracing::info!("the elicitation answer to {} was refused: {refusal}", form.id());
                    if attempts < MAX_FORM_ATTEMPTS {
                        attempts += 1;
                        shown = Some(SessionForm::send(peer.clone(), form.params(Some(&refusal))));
                    }
                }
            }
        }
    }
}

/// The tool result `outcome` holds once the request resolved (`None` if its driver
/// stopped without one).
async fn resolved(outcome: &mut watch::Receiver<Option<CallToolResult>>) -> Option<CallToolResult> {
    let resolved = outcome.wait_for(Option::is_some).await.ok()?;
    resolved.clone()
}

/// The result of a call that returns before its request resolved: the request is still
/// pending, and `wait_for_answer` waits for it again.
fn still_waiting(id: askbus_question::RequestId, waiting: &Waiting) -> CallToolResult {
    let kind = match id {
        askbus_question::RequestId::Question(_) => "question",
        askbus_question::RequestId::Approval(_) => "approval",
    };
    let text = format!(
        "{}: no answer yet, and the request is still pending. Call the `{WAIT_TOOL_NAME}` tool with {{\"id\": \"{id}\"}} to keep waiting for it. Do not assume or invent an answer meanwhile.",
        waiting.message
    );
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(serde_json::json!({
        "status": "waiting",
        "id": id.to_string(),
        "kind": kind,
    }));
    result
}

/// The arguments of `wait_for_answer`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    /// The request's id, as the `waiting` result gave it.
    id: String,
}

/// The id of the HTTP request that carried an MCP request (its `x-request-id`, which the
/// askbus server's access log sets on every request), if one did. rmcp serves each request
/// on a task of its own, which the HTTP request's task-local id does not reach: run as the
/// work of this id, what it publishes and logs names it all the same.
fn http_request_id(context: &RequestContext<RoleServer>) -> Option<Arc<str>> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("x-request-id"))
        .and_then(|id| id.to_str().ok())
        .map(Arc::from)
}

/// Runs `work` as the work of request `id` (see [`http_request_id`]), if there is one.
async fn as_work_of<T>(id: Option<Arc<str>>, work: impl Future<Output = T>) -> T {
    match id {
        Some(id) => askbus_bus::with_request_id(id, work).await,
        None => work.await,
    }
}

impl AskbusMcp {
    /// [`ServerHandler::call_tool`], as the work of the HTTP request that carried it, if
    /// one did.
    async fn serve_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let session = self.session(&context);
        let caller = Self::caller(&context);
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let modern = context
            .protocol_version()
            .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        // The stateless 2026-07-28 transport has no MCP session to end: what its calls
        // park belongs to none.
        let connection = (!modern).then(|| Arc::clone(&self.connection));
        if request.name == WAIT_TOOL_NAME {
            let owner = Owner { session, caller };
            return Ok(self
                .wait_again(args, &owner, connection.as_deref(), &context)
                .await?
                .into());
        }
        let Some(tool) = Offered::named(&request.name) else {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}: this server offers `{QUESTION_TOOL_NAME}`, `{APPROVAL_TOOL_NAME}` and `{WAIT_TOOL_NAME}`",
                    request.name
                ),
                None,
            ));
        };
        if let Some(sealed) = request.request_state.as_deref() {
            if tool != Offered::Question {
                return Err(McpError::invalid_params(
                    format!("requestState belongs to the `{QUESTION_TOOL_NAME}` tool"),
                    None,
                ));
            }
            return self
                .next_round(sealed, request.input_responses.as_ref(), &session, &caller)
                .await;
        }
        let owner = Owner {
            session: Arc::clone(&session),
            caller: caller.clone(),
        };
        let mut started = match self.start(tool, session, caller, args) {
            Ok(started) => started,
            Err(error) => {
                return Ok(call_tool_result::<ToolOutcome>(Err(error)).into());
            }
        };
        let capabilities = context.client_capabilities();
        let elicits = self.inner.config.elicitation == ElicitationBridge::On
            && capabilities.as_ref().is_some_and(elicits_forms);
        if !elicits {
            started.form = None;
        }
        let link = if started.form.is_none() {
            self.link_offer(&started, capabilities.as_ref())
        } else {
            None
        };
        // Tasks only when negotiated: the extension is the 2026-07-28 protocol's, and a
        // client of an older one that declares it anyway (the MCP Inspector does) may never
        // poll, so it gets the answer, or a `waiting` result, like everyone else, as does
        // a client whose server keeps as many tasks as it may (see `task_room`).
        if modern
            && capabilities
                .as_ref()
                .is_some_and(ClientCapabilities::supports_tasks)
            && self.inner.task_room.take(self.task_ttl(&started.waiting))
        {
            return Ok(self.run_as_task(started).into());
        }
        if modern {
            // Server-to-client requests exist only before 2026-07-28: a form goes in an
            // `input_required` round trip, which shows no review (an edit is a whole tool
            // call, not a form answer), so an approval waits held open without one.
            match started.form.take() {
                Some(Form::Question(question)) => {
                    return self.first_round(started.result, &question);
                }
                Some(Form::Approval(_)) | None => {}
            }
        }
        Ok(self
            .hold_open(started, link, owner, connection.as_deref(), &context)
            .await?
            .into())
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
             their input, and `request_approval` before tool calls they should review first \
             (then run only what they approved); a human answers through askbus (its web UI \
             or HTTP API), which can take minutes. When a result's status is `waiting`, call \
             `wait_for_answer` with its `id` until the answer comes.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.inner.listed.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        as_work_of(http_request_id(&context), self.serve_call(request, context)).await
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
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        as_work_of(http_request_id(&context), async {
            self.inner
                .tasks
                .update_task(&request.task_id, request.input_responses)
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        as_work_of(http_request_id(&context), async {
            self.inner.tasks.cancel_task(&request.task_id)
        })
        .await
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

    /// Tells the client to close the form: the request was resolved elsewhere.
    async fn withdraw(self) {
        let sent = self.sent.lock().ok().and_then(|mut sent| sent.take());
        drop(self.answer);
        if let Some((id, peer)) = sent {
            let params = CancelledNotificationParam::new(
                Some(id),
                Some("the request was resolved elsewhere".to_owned()),
            );
            let _ = peer.notify_cancelled(params).await;
        }
    }
}

/// The task's `input_required` request showing the request as a form.
fn task_input(
    task: &TaskContext,
    form: &Form,
    refusal: Option<&str>,
    attempt: u32,
) -> ElicitFuture {
    let task = task.clone();
    let key = if attempt == 1 {
        ANSWER_KEY.to_owned()
    } else {
        format!("{ANSWER_KEY}_{attempt}")
    };
    let form = InputRequest::Elicitation(ElicitRequest::new(form.params(refusal)));
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

/// Whether the client elicits URLs (only when it says so: `elicitation: {url: {}}`).
fn elicits_urls(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|elicitation| elicitation.url.is_some())
}

/// Tells the client the user finished what a URL-mode elicitation sent them to do: the
/// request resolved (through the link or any other way).
async fn notify_elicitation_complete(peer: &Peer<RoleServer>, elicitation_id: String) {
    let notification = CustomNotification::new(
        ELICITATION_COMPLETE,
        Some(serde_json::json!({ "elicitationId": elicitation_id })),
    );
    if let Err(error) = peer
        .send_notification(ServerNotification::CustomNotification(notification))
        .await
    {
        tracing::debug!("cannot send {ELICITATION_COMPLETE}: {error}");
    }
}

/// Whether the client elicits forms (a bare `elicitation: {}` means forms).
fn elicits_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// The tool result of a call: the text for the model and the outcome as structured content.
fn call_tool_result<Outcome: Serialize>(
    output: Result<ToolOutput<Outcome>, ToolError>,
) -> CallToolResult {
    match output {
        Ok(output) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(output.text)]);
            result.structured_content = serde_json::to_value(&output.outcome).ok();
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    }
}

impl Offered {
    /// The tool called `name`, if this server offers it.
    fn named(name: &str) -> Option<Self> {
        match name {
            QUESTION_TOOL_NAME => Some(Self::Question),
            APPROVAL_TOOL_NAME => Some(Self::Approval),
            _ => None,
        }
    }

    /// Its name, as the model calls it.
    fn name(self) -> &'static str {
        match self {
            Self::Question => QUESTION_TOOL_NAME,
            Self::Approval => APPROVAL_TOOL_NAME,
        }
    }
}

impl Waiting {
    fn question(request: &QuestionRequest) -> Self {
        Self {
            message: format!(
                "Waiting for a human to answer question {} in askbus session {:?}",
                request.id, request.session_id
            ),
            created_at: request.created_at,
            expires_at: request.expires_at,
        }
    }

    fn approval(request: &ApprovalRequest) -> Self {
        Self {
            message: format!(
                "Waiting for a human to review approval {} ({}) in askbus session {:?}",
                request.id, request.approval_key, request.session_id
            ),
            created_at: request.created_at,
            expires_at: request.expires_at,
        }
    }

    /// How long the request may wait in all, if it times out.
    fn timeout(&self) -> Option<Duration> {
        request_timeout(self.created_at, self.expires_at)
    }
}

/// How long a request made at `created_at` may wait, if it expires at all (times in
/// milliseconds since the Unix epoch).
fn request_timeout(created_at: u64, expires_at: Option<u64>) -> Option<Duration> {
    expires_at.map(|expires| Duration::from_millis(expires.saturating_sub(created_at)))
}

/// Sends the `count`th progress notification of a held-open call.
async fn notify_progress(
    peer: &Peer<RoleServer>,
    token: &ProgressToken,
    count: u32,
    interval: Duration,
    waiting: &Waiting,
) {
    let waited = interval.as_secs_f64() * f64::from(count);
    let mut params = ProgressNotificationParam::new(token.clone(), f64::from(count))
        .with_message(format!("{} ({waited:.0} s so far)", waiting.message));
    if let Some(timeout) = waiting.timeout() {
        let interval_ms = interval.as_millis().max(1);
        // Progress counts notifications; the total is how many fit before the deadline.
        params = params.with_total((timeout.as_millis() / interval_ms) as f64);
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

#[cfg(test)]
mod tests {
    use askbus_bus::Bus;
    use serde_json::json;

    use super::*;

    /// The result `call_tool` returns for `tool` called with `args` that do not fit it.
    fn refused(server: &AskbusMcp, tool: Offered, args: Value) -> Value {
        let Err(error) = server.start(tool, "s1".into(), Identity::local(), args) else {
            panic!("{tool:?} accepted bad arguments")
        };
        serde_json::to_value(call_tool_result::<ToolOutcome>(Err(error))).unwrap_or_default()
    }

    #[test]
    fn bad_arguments_are_error_results_for_the_model_and_ask_nothing() {
        let hub = RequestHub::new(Bus::new());
        let server = AskbusMcp::new(hub.clone(), McpConfig::default());
        // (tool, arguments, the start of the text the model reads)
        let cases = [
            (
                Offered::Question,
                json!({"questions": []}),
                "invalid arguments for the `question` tool: ",
            ),
            (
                Offered::Approval,
                json!({"actions": [{"name": "delete_rows"}]}),
                "invalid arguments for the `request_approval` tool: missing field `args`",
            ),
            (
                Offered::Approval,
                json!({"actions": [{"name": "", "args": {}}]}),
                "invalid arguments for the `request_approval` tool: action 1: the action name is empty",
            ),
        ];
        for (tool, args, expected) in cases {
            let result = refused(&server, tool, args);
            assert_eq!(result["isError"], true, "{result}");
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            assert!(text.starts_with(expected), "{text:?}");
        }
        assert_eq!(hub.questions().pending_count(), 0);
        assert_eq!(hub.approvals().pending_count(), 0);
    }

    #[tokio::test]
    async fn past_a_pending_limit_a_call_is_an_error_result_that_asks_nothing() {
        let limits = askbus_question::PendingLimits {
            per_session: 1,
            ..askbus_question::PendingLimits::default()
        };
        let hub = RequestHub::new(Bus::new()).with_pending_limits(limits);
        let server = AskbusMcp::new(hub.clone(), McpConfig::default());
        let delete = json!({"actions": [{"name": "delete_rows", "args": {}}]});
        let Ok(held) = server.start(
            Offered::Approval,
            "s1".into(),
            Identity::local(),
            delete.clone(),
        ) else {
            panic!("the first call fits");
        };
        let result = refused(&server, Offered::Approval, delete);
        assert_eq!(result["isError"], true, "{result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("the `request_approval` tool asked nothing, too many requests already wait for a human: session \"s1\""),
            "{text:?}"
        );
        assert_eq!(hub.approvals().pending_count(), 1);
        drop(held);
    }

    #[tokio::test]
    async fn the_mcp_face_asks_as_an_agent_and_its_client_never_answers_itself() {
        let hub = RequestHub::new(Bus::new()).with_duties(askbus_question::Duties {
            never_the_asker: true,
        });
        let server = AskbusMcp::new(hub.clone(), McpConfig::default());
        let caller = Identity::new("ops", Role::Admin);
        let args = json!({"questions": [{
            "question": "Deploy?", "header": "Deploy",
            "options": [{"label": "Yes", "description": ""}]
        }]});
        let Ok(started) = server.start(Offered::Question, "s1".into(), caller.clone(), args) else {
            panic!("a valid question");
        };
        let Some(Form::Question(request)) = started.form.clone() else {
            panic!("a question's form");
        };
        let form = Form::Question(Arc::clone(&request));
        // Asked as an agent of the caller's name, whatever the caller's own role.
        assert_eq!(request.asked_by, Some(Identity::new("ops", Role::Agent)));
        // The client's elicitation answer is the caller's: it asked, so it may not decide.
        let accept: ElicitResult = serde_json::from_value(json!({
            "action": "accept", "content": {"q1": "Yes"}
        }))
        .expect("an elicitation result");
        let refusal = server
            .inner
            .apply(&form, &accept, &started.decider)
            .expect_err("the asker's own client");
        assert!(refusal.contains("asked this request"), "{refusal}");
        let pending = hub.questions().get(request.id).expect("known");
        assert!(pending.outcome.is_none(), "still waiting for a reviewer");
        // A reviewer answers it over HTTP (here: through the hub acting as one).
        let alice = hub.acting_as(Identity::new("alice", Role::Reviewer));
        drop(
            alice
                .questions()
                .reply(request.id, vec![vec!["Yes".into()]])
                .expect("a reviewer answers"),
        );
        let resolved = hub.questions().get(request.id).expect("known");
        assert_eq!(resolved.decided_by.map(|by| by.name), Some("alice".into()));
        drop(started);
    }

    #[test]
    fn a_reviewer_asks_nothing_through_mcp() {
        let hub = RequestHub::new(Bus::new());
        let server = AskbusMcp::new(hub.clone(), McpConfig::default());
        let alice = Identity::new("alice", Role::Reviewer);
        let delete = json!({"actions": [{"name": "drop_table", "args": {"table": "users"}}]});
        let Err(refused) = server.start(Offered::Approval, "s1".into(), alice, delete) else {
            panic!("a reviewer's credential made a request");
        };
        assert!(
            refused.to_string().contains("may not make requests"),
            "{refused}"
        );
        assert_eq!(hub.approvals().pending_count(), 0);
    }
}
