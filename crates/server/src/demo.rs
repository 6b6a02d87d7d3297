//! `--demo`: a scripted agent that keeps asking sample questions, and after each one asks
//! for the approval of a tool call, so a newcomer sees the whole flow (event stream, list,
//! reply, approve / edit / reject) without writing an agent.

use std::time::Duration;

use askbus_question::{
    Action, AskError, DecisionType, QuestionInfo, QuestionOption, RequestHub, ReviewConfig, Timeout,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The session the demo agent asks in.
pub(crate) const DEMO_SESSION: &str = "demo";

/// Pause between two questions.
const PAUSE: Duration = Duration::from_secs(5);

/// How long each demo question waits for a human.
const QUESTION_TIMEOUT: Duration = Duration::from_secs(300);

/// Asks the sample questions in turn, each followed by an approval request, forever, until
/// `shutdown`.
pub(crate) async fn run(hub: RequestHub, shutdown: CancellationToken) {
    let questions = hub.questions();
    let script = samples();
    for (turn, sample) in script.iter().cycle().enumerate() {
        tracing::info!(
            session = DEMO_SESSION,
            "demo agent asks: {:?} (answer it with curl, see the README)",
            sample[0].question
        );
        let asked = questions.ask(
            DEMO_SESSION,
            sample.clone(),
            None,
            Timeout::After(QUESTION_TIMEOUT),
        );
        let outcome = tokio::select! {
            outcome = asked => outcome,
            // Dropping `asked` cancels the question.
            () = shutdown.cancelled() => return,
        };
        match outcome {
            Ok(answers) => tracing::info!(turn, ?answers, "demo agent got its answers"),
            Err(AskError::Rejected { reason }) => {
                tracing::info!(turn, ?reason, "demo agent was told no");
            }
            Err(error) => tracing::info!(turn, %error, "demo agent got no answer"),
        }
        if !pause(&shutdown).await {
            return;
        }
        let cleanup = Action::new(
            "delete_rows",
            json!({"table": "sessions", "older_than_days": 30 + turn}),
        )
        .with_description("Delete expired sessions from the production database");
        let review = ReviewConfig::new(
            "delete_rows",
            [
                DecisionType::Approve,
                DecisionType::Edit,
                DecisionType::Reject,
            ],
        );
        tracing::info!(session = DEMO_SESSION, "demo agent asks to run delete_rows");
        let approval = hub.approvals().request_approval(
            DEMO_SESSION,
            vec![cleanup],
            vec![review],
            Timeout::After(QUESTION_TIMEOUT),
        );
        let decided = tokio::select! {
            decided = approval => decided,
            // Dropping the request cancels it.
            () = shutdown.cancelled() => return,
        };
        match decided {
            Ok(reply) => {
                tracing::info!(turn, decisions = ?reply.decisions, "demo agent got its decision")
            }
            Err(error) => tracing::info!(turn, %error, "demo agent may not run delete_rows"),
        }
        if !pause(&shutdown).await {
            return;
        }
    }
}

/// Waits [`PAUSE`]; `false` if the server shuts down first.
async fn pause(shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(PAUSE) => true,
        () = shutdown.cancelled() => false,
    }
}

/// Single choice, multiple choice, free text, and two questions at once.
fn samples() -> Vec<Vec<QuestionInfo>> {
    vec![
        vec![
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
        vec![
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
        vec![QuestionInfo::new(
            "What should the CLI be called?",
            "Name",
            [QuestionOption::new("askbus", "Keep the project name")],
        )],
        vec![
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
    ]
}
