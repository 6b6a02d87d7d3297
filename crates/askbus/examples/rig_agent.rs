//! A complete [rig](https://docs.rs/rig-agent/0.44) agent on askbus, with a scripted model
//! standing in for the LLM.
//!
//! The agent is rig's own (`rig_agent::AgentBuilder`), and so is its prompt loop: rig
//! sends the conversation to the model, runs the tools the model calls and feeds their
//! results back until the model answers in text. The agent has askbus's `question` and
//! `request_approval` tools (`askbus::tool::rig`) and a `run_sql` tool of its own. The
//! model asks which database to use, asks a human to approve the SQL it wants to run
//! there, runs it once approved, and reports. A "human" task watches the bus, as a UI
//! would, and answers: it picks Postgres, then approves the SQL it is shown. A hook reads
//! what the model never sees: the structured outcome each askbus tool publishes in rig's
//! result metadata.
//!
//! The model is a rig model of this example's own. rig 0.44 has no `CompletionModel` trait
//! any more: a model is a `Wire` (what a provider's requests and replies look like) bound to
//! a `Transport` (how they travel). This one's wire passes rig's request through and its
//! transport answers in process, from the conversation, with no network. Swap in a
//! provider's model (`OpenAI::from_env()?.completion(..)` from
//! `rig_core::providers::openai`, with rig-core's `reqwest` feature) and nothing else
//! changes.
//!
//! `request_approval` only tells the model what it may run; to make a human's approval
//! binding for a tool the runtime runs itself, wrap that tool in an `ApprovalGuard`, as
//! `agent_loop.rs` does.
//!
//! Run it: `cargo run -p askbus --example rig_agent --features rig`. CI runs it too (it
//! checks its own transcript and fails if the loop goes wrong).

// An example prints what happens: that is its output.
#![allow(clippy::print_stdout)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use askbus::Bus;
use askbus::question::{ApprovalAsked, ApprovalReply, Decision, QuestionAsked, RequestHub};
use askbus::tool::rig::{AskbusCall, RigApprovalTool, RigQuestionTool};
use askbus::tool::{ApprovalTool, ApprovalToolOutcome, QuestionTool, ToolOutcome};
use rig_agent::AgentBuilder;
use rig_agent::agent::{
    AgentHook, DispatchAction, DispatchEvent, HookContext, OutcomeAction, OutcomeEvent,
};
use rig_core::Model;
use rig_core::completion::options::{Mapping, OptionFields, OptionMap};
use rig_core::completion::{Accepts, CompletionRequest, ReplayTarget};
use rig_core::driver::{Exchange, Opened, Opening, Transport};
use rig_core::error::{EncodeError, ProviderError};
use rig_core::message::{
    Api, AssistantContent, CallId, Message, ToolName, ToolResultContent, UserContent,
};
use rig_core::operation::{Block, Completion, Finish};
use rig_core::tool::{PortableTool, ToolContext, ToolOutput};
use rig_core::wire::document::{Reassemble, Serves};
use rig_core::wire::{Decoder, Descriptor, Flow, Mode, Out, Wire, WireEvent};
use serde_json::{Value, json};
use tokio_stream::StreamExt;

/// What the model answers: call a tool, or say something and stop.
enum Reply {
    /// A tool call: id, tool name, JSON arguments.
    Call {
        id: &'static str,
        name: &'static str,
        arguments: Value,
    },
    Text(String),
}

/// The scripted model: it asks which database, asks approval for the SQL it will run
/// there, runs it, then reports. A real model gets the same messages and tool
/// definitions and answers in the same two shapes.
fn complete(request: &CompletionRequest) -> Reply {
    let offered: Vec<&str> = request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(offered, ["question", "request_approval", "run_sql"]);
    // What the tools said so far, in order.
    let results: Vec<String> = request
        .chat_history
        .iter()
        .filter_map(|message| match message {
            Message::User { content } => Some(content),
            _ => None,
        })
        .flatten()
        .filter_map(|content| match content {
            UserContent::ToolResult(result) => Some(&result.content),
            _ => None,
        })
        .map(|content| {
            content
                .iter()
                .filter_map(|part| match part {
                    ToolResultContent::Text(text) => Some(text.text.as_str()),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let sql = "CREATE TABLE users (id INTEGER PRIMARY KEY)";
    match results.as_slice() {
        [] => Reply::Call {
            id: "call_1",
            name: "question",
            arguments: json!({"questions": [{
                "question": "Which database should the app use?",
                "header": "Database",
                "options": [
                    {"label": "SQLite", "description": "embedded, zero setup"},
                    {"label": "Postgres", "description": "a server; scales out"}
                ]
            }]}),
        },
        [answer] => Reply::Call {
            id: "call_2",
            name: "request_approval",
            arguments: json!({"actions": [{
                "name": "run_sql",
                "args": {"database": database(answer), "sql": sql},
                "description": "Create the users table"
            }]}),
        },
        // Run the call only as the human approved it.
        [answer, review] if review.contains("run it as you proposed") => Reply::Call {
            id: "call_3",
            name: "run_sql",
            arguments: json!({"database": database(answer), "sql": sql}),
        },
        [_, review] => Reply::Text(format!("Nothing ran: {review}")),
        [.., ran] => Reply::Text(format!("Done: {ran}")),
    }
}

/// The database the user picked in the question tool's `answer`.
fn database(answer: &str) -> &'static str {
    if answer.contains("\"Postgres\"") {
        "postgres"
    } else {
        "sqlite"
    }
}

/// The scripted model's wire: its payload is rig's request as is, and each reply is one
/// [`Reply`], which [`Replies`] writes into rig's completion.
#[derive(Debug, Clone)]
struct Scripted;

/// The scripted model's transport: it answers in process, from [`complete`].
#[derive(Clone)]
struct ScriptedModel;

impl Transport<Scripted> for ScriptedModel {
    fn send(&self, request: CompletionRequest, _exchange: Exchange) -> Opening<Reply> {
        let reply = complete(&request);
        Opening::ready(Opened::new(tokio_stream::once(Ok(reply))))
    }
}

impl Wire for Scripted {
    type Op = Completion;
    type Payload = CompletionRequest;
    type Frame = Reply;
    type Decoder<'id> = Replies;
    type Reassembler = NoDocument;

    fn describe(&self) -> Descriptor<'_> {
        Descriptor::new("scripted").replay(self)
    }

    fn encode(
        &self,
        request: CompletionRequest,
        _mode: Mode,
    ) -> Result<Self::Payload, EncodeError> {
        Ok(request)
    }

    fn decoder<'id>(&self) -> Self::Decoder<'id> {
        Replies
    }
}

/// How rig replays a conversation to the scripted model: as it is, text and tools.
impl ReplayTarget for Scripted {
    fn api(&self) -> Api {
        Api::from_static("scripted")
    }

    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted-model"
    }

    fn accepts(&self, _model: &str) -> Accepts {
        Accepts::TEXT
    }

    /// Takes no generation option (temperature, seed, ...): the script ignores them.
    fn map_options(&self, _request: &CompletionRequest, fields: OptionFields<'_>) -> OptionMap {
        let OptionFields {
            reasoning,
            cache,
            service_tier,
            verbosity,
            parallel_tool_calls,
            top_p,
            seed,
            stop,
        } = fields;
        let refused = |set: bool| match set {
            true => Mapping::Unsupported("a scripted model takes no options".into()),
            false => Mapping::Nothing,
        };
        OptionMap {
            reasoning: refused(reasoning.is_some()),
            cache: refused(cache.is_some()),
            service_tier: refused(service_tier.is_some()),
            verbosity: refused(verbosity.is_some()),
            parallel_tool_calls: refused(parallel_tool_calls.is_some()),
            top_p: refused(top_p.is_some()),
            seed: refused(seed.is_some()),
            stop: refused(!stop.is_empty()),
        }
    }

    /// A script has no finish reasons.
    fn states_finish_reason(&self) -> bool {
        false
    }
}

/// Writes a [`Reply`] as one block of rig's completion, and ends it.
struct Replies;

impl<'id> Decoder<'id, Completion, Reply> for Replies {
    type Event = Reply;

    fn classify(&self, reply: Reply) -> WireEvent<Reply> {
        WireEvent::Known(reply)
    }

    fn decode(
        &mut self,
        reply: Reply,
        mut out: Out<'id, Completion>,
    ) -> Result<Flow, ProviderError> {
        let index = out.fresh_index();
        match reply {
            Reply::Call {
                id,
                name,
                arguments,
            } => {
                let name = ToolName::new(name)
                    .map_err(|error| ProviderError::Response(error.to_string()))?;
                let call = Block::Call {
                    id: CallId::from_wire(id),
                    name,
                };
                out.whole(index, call, Value::Null, &arguments.to_string())?;
            }
            Reply::Text(text) => out.whole(index, Block::Text, Value::Null, &text)?,
        }
        Ok(out.end(Finish::default()))
    }
}

/// The scripted model's replies have no provider document (a completion's `raw`).
#[derive(Default)]
struct NoDocument;

impl Serves<Completion> for NoDocument {}

impl Reassemble<Reply> for NoDocument {
    fn absorb(&mut self, _reply: &Reply) {}

    fn finish(self) -> Value {
        Value::Null
    }
}

/// The runtime's own tool; the model runs it once a human approved the call.
struct RunSql;

impl PortableTool for RunSql {
    const NAME: &'static str = "run_sql";
    type Args = Value;
    type Output = ToolOutput;
    type Error = Infallible;

    fn description(&self) -> String {
        "Run SQL on the app's database (ask a human to approve each call first)".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "database": {"type": "string"}, "sql": {"type": "string"}
        }, "required": ["database", "sql"]})
    }

    async fn call(&self, args: Value) -> Result<ToolOutput, Infallible> {
        let ran = format!("ran on {}: {}", args["database"], args["sql"]);
        Ok(ToolOutput::text(ran))
    }
}

/// A hook on the agent's tool calls: it prints each call and its result, and keeps what
/// the askbus tools published for the runtime (never shown to the model): the answers,
/// and the human's decisions.
#[derive(Clone, Default)]
struct Trace {
    questions: Arc<Mutex<Vec<ToolOutcome>>>,
    approvals: Arc<Mutex<Vec<ApprovalToolOutcome>>>,
}

impl AgentHook for Trace {
    async fn on_dispatch(&self, _ctx: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        if let (Some(name), Some(args)) = (event.tool_name(), event.tool_args()) {
            println!("[model] calls {name}({args})");
        }
        DispatchAction::Proceed
    }

    async fn on_outcome(&self, _ctx: &HookContext, event: OutcomeEvent<'_>) -> OutcomeAction {
        if let Some(result) = event.tool_result() {
            println!("[tool] {}", result.output().render());
        }
        if let Some(context) = event.tool_context() {
            if let Ok(Some(outcome)) = context.result::<ToolOutcome>() {
                lock(&self.questions).push(outcome);
            }
            if let Ok(Some(outcome)) = context.result::<ApprovalToolOutcome>() {
                lock(&self.approvals).push(outcome);
            }
        }
        OutcomeAction::Proceed
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The human, as the UI of `session`: answers its questions with "Postgres" and approves
/// its calls, having seen them. Requests of other sessions are not theirs to answer.
///
/// It watches the bus from the call on, before the task running it starts, so it sees the
/// first request however soon the agent asks.
fn human(hub: RequestHub, session: &'static str) -> impl Future<Output = ()> {
    let mut events = hub.questions().bus().subscribe_all();
    async move {
        while let Some(event) = events.next().await {
            // `Err(Lagged)`: this UI fell behind; `hub.questions().list(None)` would catch up.
            let Ok(envelope) = event else { continue };
            if let Some(QuestionAsked { request }) = envelope.downcast_ref::<QuestionAsked>()
                && &*request.session_id == session
            {
                println!(
                    "  [human] asked {:?}: picks Postgres",
                    request.questions[0].question
                );
                drop(
                    hub.questions()
                        .reply(request.id, vec![vec!["Postgres".into()]]),
                );
            } else if let Some(ApprovalAsked { request }) = envelope.downcast_ref::<ApprovalAsked>()
                && &*request.session_id == session
            {
                let call = &request.action_requests[0];
                println!("  [human] reviews {}({}): approves", call.name, call.args);
                drop(
                    hub.approvals()
                        .reply(request.id, ApprovalReply::new([Decision::Approve])),
                );
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let hub = RequestHub::new(Bus::new());
    let session = "session-1";
    tokio::spawn(human(hub.clone(), session));

    // Calls whose rig context names no session would be asked in "rig-default".
    let question = RigQuestionTool::new(QuestionTool::new(hub.questions().clone()), "rig-default");
    let approval = RigApprovalTool::new(ApprovalTool::new(hub.approvals().clone()), "rig-default");
    let agent = AgentBuilder::new(Model::new(Scripted, ScriptedModel))
        .preamble("Set up what the user asks. Ask the user when a choice is theirs.")
        .tool(question)
        .tool(approval)
        .tool(RunSql)
        .build();

    // The run is the session's: rig hands every tool call of the run a copy of this
    // context, so the askbus tools ask in that session.
    let mut context = ToolContext::new();
    context
        .insert(AskbusCall {
            session_id: session.into(),
            message_id: None,
            call_id: None,
        })
        .expect("an AskbusCall serializes");
    let trace = Trace::default();
    let run = agent
        .prompt("Set up the users table for my app")
        .tool_context(context)
        .add_hook(trace.clone())
        .max_turns(8);
    // A request asked in another session than the human's would wait for ever.
    let response = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the human answers every request of the run's session")
        .expect("the agent's run succeeds");
    let reply = response.output();
    println!("[model] {reply}");

    assert_eq!(
        reply,
        r#"Done: ran on "postgres": "CREATE TABLE users (id INTEGER PRIMARY KEY)""#
    );
    // The transcript rig kept: the calls the model made, each answered by its result.
    let mut calls = Vec::new();
    let mut answered = Vec::new();
    for message in response.messages() {
        match message {
            Message::Assistant(turn) => {
                calls.extend(turn.content.iter().filter_map(|content| match content {
                    AssistantContent::ToolCall(call) => {
                        Some(format!("{} {}", call.id, call.function.name))
                    }
                    _ => None,
                }))
            }
            Message::User { content } => {
                answered.extend(content.iter().filter_map(|content| match content {
                    UserContent::ToolResult(result) => {
                        Some(format!("{} {}", result.call, result.name))
                    }
                    _ => None,
                }))
            }
            Message::System { .. } => {}
        }
    }
    let expected = [
        "call_1 question",
        "call_2 request_approval",
        "call_3 run_sql",
    ];
    assert_eq!(calls, expected);
    assert_eq!(answered, expected);
    // What the runtime read beside the model: the answer, and the approval.
    let questions = lock(&trace.questions).clone();
    let [ToolOutcome::Answered { answers }] = questions.as_slice() else {
        panic!("one answered question, not {questions:?}");
    };
    assert_eq!(answers[0].answer, ["Postgres"]);
    assert_eq!(
        *lock(&trace.approvals),
        [ApprovalToolOutcome::Decided(ApprovalReply::new([
            Decision::Approve
        ]))]
    );
    // Nothing is left waiting for a human.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        hub.questions().pending_count() + hub.approvals().pending_count(),
        0
    );
}
