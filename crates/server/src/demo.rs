//! `--demo`: a scripted agent that works in session `demo` as a real one would, so a
//! newcomer sees the whole flow (the event stream, the pending list, replies, approve /
//! edit / reject, and the session's timeline in the web UI) without writing an agent.
//!
//! Each turn the agent thinks, looks something up with a tool and asks a sample question
//! about it; then it counts the expired sessions and calls `delete_rows`, a pretend tool
//! behind an [`ApprovalGuard`] that runs only if a human approves (or edits) the call, and
//! ends the turn with a sentence for the user. Its steps are [`AgentStep`]s recorded through
//! the hub, as `POST /session/{id}/step` records a remote agent's, so steps and requests
//! share the session history's one order: in the timeline the tool calls form groups, the
//! approval sits in the group of the call it guards, and each question stands between
//! groups.
//!
//! Tool call ids are ULIDs (`toolu_…`), new in every run: the guard joins a review by call
//! id, and a durable store keeps the reviews of earlier runs.

use std::time::Duration;

use askbus_bus::{IdGenerator, IdKind};
use askbus_protocol::{AgentStep, Step, ToolStatus};
use askbus_question::{AskError, DecisionType, QuestionInfo, QuestionOption, RequestHub, Timeout};
use askbus_tool::{ApprovalGuard, GuardOutcome, GuardedTool, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The session the demo agent works in.
pub(crate) const DEMO_SESSION: &str = "demo";

/// Pause after each question and each cleanup.
const PAUSE: Duration = Duration::from_secs(5);

/// How long each demo question and approval waits for a human.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// What the user asks the demo agent for, once, when it starts.
const USER_REQUEST: &str =
    "Set up the new service, and clear out the expired sessions while you are at it.";

/// The guarded tool's name.
const DELETE_ROWS: &str = "delete_rows";

/// Works through the topics in turn, forever, until `shutdown`: each turn asks a question,
/// then asks for the approval of a cleanup.
pub(crate) async fn run(hub: RequestHub, shutdown: CancellationToken) {
    let mut agent = DemoAgent::new(hub);
    agent.step(Step::User {
        text: USER_REQUEST.into(),
    });
    let topics = topics();
    for (turn, topic) in topics.iter().cycle().enumerate() {
        let script = async {
            agent.ask_about(turn, topic).await;
            tokio::time::sleep(PAUSE).await;
            agent.clean_up(turn).await;
            tokio::time::sleep(PAUSE).await;
        };
        // Dropping the turn on shutdown cancels the request it waits for.
        if shutdown.run_until_cancelled(script).await.is_none() {
            return;
        }
    }
}

/// One turn's opening: what the agent looks up, and what it then asks.
struct Topic {
    /// The agent's reasoning before the lookup.
    thinking: &'static str,
    /// The lookup.
    lookup: ToolCall,
    /// What the lookup found.
    found: &'static str,
    /// The questions asked about it.
    questions: Vec<QuestionInfo>,
}

/// A tool call as the timeline shows it.
struct ToolCall {
    /// The tool's name.
    name: &'static str,
    /// Its arguments.
    input: Value,
    /// Its label in the timeline.
    label: &'static str,
}

/// The scripted agent: where it works, its guarded tool, and its tool call ids.
struct DemoAgent {
    /// Where it asks; its bus carries the agent's steps.
    hub: RequestHub,
    /// `delete_rows`, run only once a human approves or edits the call.
    delete_rows: ApprovalGuard<PretendDeleteRows>,
    /// Source of tool call ids: ULIDs, so no call joins the review of an earlier run's.
    call_ids: IdGenerator,
}

/// Kind marker for the demo's tool call ids (`toolu_`, like Anthropic's).
enum ToolCallKind {}

impl IdKind for ToolCallKind {
    const PREFIX: &'static str = "toolu_";
}

/// The demo's `delete_rows`: deletes nothing, and says what it would have deleted.
struct PretendDeleteRows;

impl GuardedTool for PretendDeleteRows {
    fn name(&self) -> &str {
        DELETE_ROWS
    }

    async fn run(&self, args: Value) -> Result<String, String> {
        Ok(format!(
            "Deleted the rows matching {args} (a demo: nothing was deleted)."
        ))
    }
}

impl DemoAgent {
    fn new(hub: RequestHub) -> Self {
        let delete_rows = ApprovalGuard::new(PretendDeleteRows, hub.approvals().clone())
            .allowing([
                DecisionType::Approve,
                DecisionType::Edit,
                DecisionType::Reject,
            ])
            .with_timeout(Timeout::After(REQUEST_TIMEOUT));
        Self {
            hub,
            delete_rows,
            call_ids: IdGenerator::new(),
        }
    }

    /// Thinks, looks the topic up, and asks its questions.
    async fn ask_about(&mut self, turn: usize, topic: &Topic) {
        self.think(topic.thinking);
        self.look_up(&topic.lookup, topic.found);
        tracing::info!(
            session = DEMO_SESSION,
            "demo agent asks: {:?} (answer it with curl, see the README)",
            topic.questions[0].question
        );
        let asked = self
            .hub
            .questions()
            .ask(DEMO_SESSION, topic.questions.clone())
            .timeout(REQUEST_TIMEOUT);
        match asked.await {
            Ok(answers) => tracing::info!(turn, ?answers, "demo agent got its answers"),
            Err(AskError::Rejected { reason }) => {
                tracing::info!(turn, ?reason, "demo agent was told no");
            }
            Err(error) => tracing::info!(turn, %error, "demo agent got no answer"),
        }
    }

    /// Counts the expired sessions, deletes them if a human approves, and says how it went.
    async fn clean_up(&mut self, turn: usize) {
        let expired = json!({"table": "sessions", "older_than_days": 30 + turn});
        self.think("Expired sessions are piling up in production. Deleting them cannot be undone, so a human must approve it.");
        let count = ToolCall {
            name: "count_rows",
            input: expired.clone(),
            label: "Count expired sessions",
        };
        self.look_up(&count, "1,234 rows");
        let delete = ToolCall {
            name: DELETE_ROWS,
            input: expired,
            label: "Delete expired sessions",
        };
        let id = self.call(&delete);
        tracing::info!(
            session = DEMO_SESSION,
            "demo agent asks to run {DELETE_ROWS}"
        );
        let context = ToolContext::new(DEMO_SESSION).with_call(format!("turn-{turn}"), &id);
        let (status, content) = match self.delete_rows.call(context, delete.input.clone()).await {
            Ok(output) => {
                tracing::info!(turn, outcome = ?output.outcome, "demo agent's {DELETE_ROWS} was reviewed");
                let status = match output.outcome {
                    GuardOutcome::Ran { failed: false, .. } => ToolStatus::Success,
                    _ => ToolStatus::Error,
                };
                (status, output.text)
            }
            Err(error) => (ToolStatus::Error, error.to_string()),
        };
        self.step(Step::ToolResult {
            tool_use_id: id,
            name: delete.name.into(),
            status,
            content: Some(content),
        });
        let closing = match status {
            ToolStatus::Success => "Done: the expired sessions are deleted.",
            ToolStatus::Error => "Done, except the cleanup: the expired sessions are still there.",
        };
        self.step(Step::Text {
            text: closing.into(),
            is_final: true,
        });
    }

    /// A tool call that needs no approval, and its result.
    fn look_up(&mut self, call: &ToolCall, found: &str) {
        let id = self.call(call);
        self.step(Step::ToolResult {
            tool_use_id: id,
            name: call.name.into(),
            status: ToolStatus::Success,
            content: Some(found.into()),
        });
    }

    /// Publishes a tool call under a new id; returns the id.
    fn call(&mut self, call: &ToolCall) -> String {
        let id = self.call_ids.next_id::<ToolCallKind>().to_string();
        self.step(Step::ToolUse {
            id: id.clone(),
            name: call.name.into(),
            input: call.input.clone(),
            tool_content_message: Some(call.label.into()),
            display_as_content: false,
        });
        id
    }

    fn think(&self, thinking: &str) {
        self.step(Step::Thinking {
            thinking: thinking.into(),
        });
    }

    fn step(&self, step: Step) {
        // Queued in order at once; a step the store could not keep is only missing from the
        // timeline.
        drop(AgentStep::new(DEMO_SESSION, step).record(&self.hub));
    }
}

/// Single choice, multiple choice, free text, and two questions at once, each after a
/// lookup that explains why the agent asks.
fn topics() -> Vec<Topic> {
    vec![
        Topic {
            thinking: "The new service needs a database, and nothing in the repository picks one.",
            lookup: ToolCall {
                name: "search_code",
                input: json!({"query": "database"}),
                label: "Search the code for a database",
            },
            found: "No database dependency or configuration found.",
            questions: vec![
                QuestionInfo::new(
                    "Which database should the new service use?",
                    "Database",
                    [
                        QuestionOption::new("SQLite", "Embedded, zero setup"),
                        QuestionOption::new("Postgres", "A server, scales further"),
                    ],
                )
                .options_only(),
            ],
        },
        Topic {
            thinking: "The release has to be built for some platforms; the workflow lists none yet.",
            lookup: ToolCall {
                name: "read_file",
                input: json!({"path": ".github/workflows/release.yml"}),
                label: "Read the release workflow",
            },
            found: "The build matrix is empty.",
            questions: vec![
                QuestionInfo::new(
                    "Which platforms should the release support?",
                    "Platforms",
                    [
                        QuestionOption::new("Linux", "x86_64 and aarch64"),
                        QuestionOption::new("macOS", "Apple silicon"),
                        QuestionOption::new("Windows", "x86_64"),
                    ],
                )
                .multiple(),
            ],
        },
        Topic {
            thinking: "The binary needs a name before I write its help text.",
            lookup: ToolCall {
                name: "list_files",
                input: json!({"path": "src/bin"}),
                label: "List the binaries",
            },
            found: "src/bin is empty.",
            questions: vec![QuestionInfo::new(
                "What should the CLI be called?",
                "Name",
                [QuestionOption::new("askbus", "Keep the project name")],
            )],
        },
        Topic {
            thinking: "Before deploying, the tests must pass; whether to deploy now is the user's call.",
            lookup: ToolCall {
                name: "run_tests",
                input: json!({}),
                label: "Run the test suite",
            },
            found: "128 passed, 0 failed.",
            questions: vec![
                QuestionInfo::new(
                    "Deploy to production now?",
                    "Deploy",
                    [
                        QuestionOption::new("Yes", "Ship it"),
                        QuestionOption::new("No", "Wait for the next window"),
                    ],
                )
                .options_only(),
                QuestionInfo::new(
                    "Who should be notified?",
                    "Notify",
                    [
                        QuestionOption::new("Team", "The whole team channel"),
                        QuestionOption::new("On-call", "Only the on-call engineer"),
                    ],
                )
                .multiple(),
            ],
        },
    ]
}

#[cfg(test)]
mod tests {
    // A failing `unwrap` in a test is a test failure with a backtrace, which is what we want.
    #![allow(clippy::unwrap_used)]

    use askbus_bus::Bus;
    use askbus_protocol::{Block, ClientView, Resolution, Transcripts};
    use askbus_question::{ApprovalAsked, ApprovalReply, Decision, QuestionAsked};
    use futures_util::StreamExt;

    use super::*;

    /// A timeline block in a few words: what a reader of the web UI sees.
    fn shape(block: &Block) -> String {
        match block {
            Block::GroupStart => "group {".into(),
            Block::GroupEnd { summary } => format!("}} {summary}"),
            Block::User { .. } => "user".into(),
            Block::Text { is_final, .. } => format!("text final={is_final}"),
            Block::Thinking { .. } => "thinking".into(),
            Block::ToolUse(call) => format!("tool_use {}", call.name),
            Block::ToolResult(result) => format!("tool_result {} {:?}", result.name, result.status),
            Block::Request(request) => {
                let outcome = match &request.resolution {
                    Some(Resolution::Answered(_)) => "answered",
                    Some(Resolution::Decided(_)) => "decided",
                    Some(Resolution::TimedOut) => "timed out",
                    Some(Resolution::Cancelled) => "cancelled",
                    None => "pending",
                };
                format!("request {} {outcome}", request.action_requests[0].name)
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_shows_tool_groups_around_a_question_and_an_approval() {
        let hub = RequestHub::new(Bus::new());
        let bus = hub.bus().clone();
        let transcripts = Transcripts::new(&hub);
        let mut questions_asked = bus.subscribe::<QuestionAsked>();
        let mut approvals_asked = bus.subscribe::<ApprovalAsked>();
        let mut steps = bus.subscribe::<AgentStep>();
        let shutdown = CancellationToken::new();
        let agent = tokio::spawn(run(hub.clone(), shutdown.clone()));

        let question = questions_asked.next().await.unwrap().unwrap().request;
        drop(
            hub.questions()
                .reply(question.id, vec![vec!["SQLite".into()]])
                .unwrap(),
        );
        let approval = approvals_asked.next().await.unwrap().unwrap().request;
        drop(
            hub.approvals()
                .reply(approval.id, ApprovalReply::new([Decision::Approve]))
                .unwrap(),
        );
        // The turn ends with the agent's final text.
        while !matches!(
            steps.next().await.unwrap().unwrap().step,
            Step::Text { is_final: true, .. }
        ) {}
        shutdown.cancel();
        agent.await.unwrap();

        let history = transcripts.history(DEMO_SESSION).await.unwrap();
        let timeline = ClientView::from_history(&history);
        let blocks = timeline.blocks();
        let shapes: Vec<String> = blocks.iter().map(shape).collect();
        assert_eq!(
            shapes,
            [
                "user",
                "group {",
                "thinking",
                "tool_use search_code",
                "tool_result search_code Success",
                "} Search the code for a database",
                "request ask_user_question answered",
                "group {",
                "thinking",
                "tool_use count_rows",
                "tool_result count_rows Success",
                "tool_use delete_rows",
                "request delete_rows decided",
                "tool_result delete_rows Success",
                "} Delete expired sessions",
                "text final=true",
            ]
        );

        let Some(Block::ToolUse(delete)) = blocks.get(11) else {
            panic!("{:?}", blocks.get(11));
        };
        assert!(delete.id.starts_with("toolu_"), "{}", delete.id);
        assert_eq!(
            approval.action_requests[0].tool_use_id.as_deref(),
            Some(delete.id.as_str()),
            "the approval is of that call"
        );
        let Some(Block::ToolResult(deleted)) = blocks.get(13) else {
            panic!("{:?}", blocks.get(13));
        };
        let ran = deleted.content.as_deref().unwrap_or_default();
        let approved = approval.action_requests[0].args.to_string();
        assert!(
            ran.contains(&approved),
            "it ran with the approved arguments {approved}: {ran}"
        );
        assert_eq!(hub.questions().pending_count(), 0);
        assert_eq!(
            hub.approvals().pending_count(),
            0,
            "shutdown left nothing pending"
        );
    }
}
