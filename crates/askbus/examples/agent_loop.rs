//! A complete agent loop on askbus, without a framework: the shape of an `async-openai`
//! (or any chat-completions) loop, with a scripted model standing in for the LLM.
//!
//! The runtime offers the model askbus's `question` tool and its own `run_sql` tool, which
//! an [`ApprovalGuard`] puts before a human first. Each turn it sends the conversation to
//! the model; a tool call is run and its result appended as a `tool` message; a text
//! reply ends the loop. A "human" task watches the bus, as a UI would, and answers: it
//! picks a database, then approves the SQL it is shown.
//!
//! Run it: `cargo run -p askbus --example agent_loop`. CI runs it too (it checks its own
//! transcript and fails if the loop goes wrong).

// An example prints what happens: that is its output.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use askbus::Bus;
use askbus::question::{ApprovalAsked, ApprovalReply, Decision, QuestionAsked, RequestHub};
use askbus::tool::{ApprovalGuard, GuardedTool, QuestionTool, ToolContext, ToolDefinition};
use serde_json::{Value, json};
use tokio_stream::StreamExt;

/// One message of the conversation, as chat-completion APIs shape them.
#[derive(Debug, Clone)]
enum Message {
    User(String),
    /// The model's tool call: id, tool name, JSON arguments.
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    /// A tool's result, for the call with this id.
    Tool {
        call_id: String,
        content: String,
    },
}

/// What a model answers: call a tool, or say something and stop.
enum Completion {
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    Text(String),
}

/// A scripted model: it asks which database, then asks to create the table in it, then
/// reports. A real model (async-openai's `client.chat().create(...)`) gets the same
/// messages and tool definitions and answers in the same two shapes.
fn complete(messages: &[Message], tools: &[ToolDefinition]) -> Completion {
    assert!(tools.iter().any(|tool| tool.name == "question"));
    let results: Vec<&str> = messages
        .iter()
        .filter_map(|message| match message {
            Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    match results.as_slice() {
        [] => Completion::ToolCall {
            id: "call_1".into(),
            name: "question".into(),
            arguments: json!({"questions": [{
                "question": "Which database should the app use?",
                "header": "Database",
                "options": [
                    {"label": "SQLite", "description": "embedded, zero setup"},
                    {"label": "Postgres", "description": "a server; scales out"}
                ]
            }]}),
        },
        [answer] => {
            let database = if answer.contains("\"Postgres\"") {
                "postgres"
            } else {
                "sqlite"
            };
            Completion::ToolCall {
                id: "call_2".into(),
                name: "run_sql".into(),
                arguments: json!({"database": database, "sql": "CREATE TABLE users (id INTEGER PRIMARY KEY)"}),
            }
        }
        [_, ran, ..] => Completion::Text(format!("Done: {ran}")),
    }
}

/// The runtime's own tool, run only once a human approved the call.
struct RunSql;

impl GuardedTool for RunSql {
    fn name(&self) -> &str {
        "run_sql"
    }

    async fn run(&self, args: Value) -> Result<String, String> {
        Ok(format!("ran on {}: {}", args["database"], args["sql"]))
    }
}

/// The human, as a UI: answers every question with "Postgres" and approves every call,
/// having seen it.
///
/// It watches the bus from the call on, before the task running it starts, so it sees the
/// first request however soon the agent asks.
fn human(hub: RequestHub) -> impl Future<Output = ()> {
    let mut events = hub.questions().bus().subscribe_all();
    async move {
        while let Some(event) = events.next().await {
            // `Err(Lagged)`: this UI fell behind; `hub.questions().list(None)` would catch up.
            let Ok(envelope) = event else { continue };
            if let Some(QuestionAsked { request }) = envelope.downcast_ref::<QuestionAsked>() {
                println!(
                    "  [human] asked {:?}: picks Postgres",
                    request.questions[0].question
                );
                drop(
                    hub.questions()
                        .reply(request.id, vec![vec!["Postgres".into()]]),
                );
            } else if let Some(ApprovalAsked { request }) = envelope.downcast_ref::<ApprovalAsked>()
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
    tokio::spawn(human(hub.clone()));

    let session = "session-1";
    let question = QuestionTool::new(hub.questions().clone());
    let run_sql = ApprovalGuard::new(RunSql, hub.approvals().clone());
    // What the model is offered: askbus's question tool and the runtime's own.
    let tools = [
        question.definition(),
        ToolDefinition {
            name: "run_sql".into(),
            description: "Run SQL on the app's database (a human approves each call first)".into(),
            parameters: json!({"type": "object", "properties": {
                "database": {"type": "string"}, "sql": {"type": "string"}
            }, "required": ["database", "sql"]}),
        },
    ];

    let mut messages = vec![Message::User("Set up the users table for my app".into())];
    let reply = loop {
        match complete(&messages, &tools) {
            Completion::Text(text) => break text,
            Completion::ToolCall {
                id,
                name,
                arguments,
            } => {
                println!("[model] calls {name}({arguments})");
                messages.push(Message::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
                // The call id names the request: a replayed turn joins it, not asks again.
                let context = ToolContext::new(session).with_call("turn", &id);
                let output = match name.as_str() {
                    "question" => question.call(context, arguments).await.map(|out| out.text),
                    "run_sql" => run_sql.call(context, arguments).await.map(|out| out.text),
                    other => Ok(format!("no tool named {other}")),
                };
                // A tool error is the model's to read too (bad arguments, a full queue).
                let content = output.unwrap_or_else(|error| error.to_string());
                println!("[tool] {content}");
                messages.push(Message::Tool {
                    call_id: id,
                    content,
                });
            }
        }
    };
    println!("[model] {reply}");

    assert_eq!(
        reply,
        r#"Done: ran on "postgres": "CREATE TABLE users (id INTEGER PRIMARY KEY)""#
    );
    // The user's message, then each call with its result, in order.
    let calls: Vec<(&str, &str, &Value)> = messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), &arguments["database"])),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1", "question", &Value::Null),
            ("call_2", "run_sql", &json!("postgres"))
        ]
    );
    let answered: Vec<&str> = messages
        .iter()
        .filter_map(|message| match message {
            Message::Tool { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ["call_1", "call_2"]);
    assert!(matches!(&messages[0], Message::User(text) if text.contains("users table")));
    // Nothing is left waiting for a human.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        hub.questions().pending_count() + hub.approvals().pending_count(),
        0
    );
}
