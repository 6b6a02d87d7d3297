//! `--demo`: a scripted agent that keeps asking sample questions, so a newcomer sees the
//! whole flow (event stream, list, reply) without writing an agent.

use std::time::Duration;

use askbus_question::{AskError, QuestionInfo, QuestionOption, QuestionService, Timeout};
use tokio_util::sync::CancellationToken;

/// The session the demo agent asks in.
pub(crate) const DEMO_SESSION: &str = "demo";

/// Pause between two questions.
const PAUSE: Duration = Duration::from_secs(5);

/// How long each demo question waits for a human.
const QUESTION_TIMEOUT: Duration = Duration::from_secs(300);

/// Asks the sample questions in turn, forever, until `shutdown`.
pub(crate) async fn run(questions: QuestionService, shutdown: CancellationToken) {
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
        tokio::select! {
            () = tokio::time::sleep(PAUSE) => {}
            () = shutdown.cancelled() => return,
        }
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
