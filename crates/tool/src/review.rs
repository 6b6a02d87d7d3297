//! How a refused tool call reads to the model: one wording for the approval guard and
//! the approval tool, so a human's "no" is reported the same wherever it came from.
//!
//! The two differ only in who would run the call. The guard runs an approved call itself,
//! so a refused one "did not run"; with the approval tool the model runs what was approved,
//! so a refused call is one it must "not run". [`Runner`] picks that clause; the rest of
//! each sentence is shared.

/// Who runs a call once a human approved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runner {
    /// The approval guard, which runs the tool it wraps.
    Guard,
    /// The model, which asked the approval tool first.
    Model,
}

/// Why a reviewed call must not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal<'a> {
    /// A human decided against it (`reject` or `respond`), with their message if any.
    Decided {
        /// What the human said.
        message: Option<&'a str>,
    },
    /// Nobody decided before the request's deadline.
    TimedOut,
    /// The request was cancelled (its session was stopped).
    Cancelled,
}

/// The text the model reads about a refused call to `tool`.
pub(crate) fn refusal_text(tool: &str, refusal: Refusal<'_>, runner: Runner) -> String {
    let not_run = match runner {
        Runner::Guard => "it did not run",
        Runner::Model => "do not run it",
    };
    match refusal {
        Refusal::Decided {
            message: Some(message),
        } => format!("A human reviewed this call to `{tool}`; {not_run}. Their answer: {message}"),
        Refusal::Decided { message: None } => format!(
            "A human rejected this call to `{tool}`; {not_run}. Do not retry it unchanged: continue without it, or ask the user what they want."
        ),
        Refusal::TimedOut => format!(
            "Nobody approved this call to `{tool}` in time, so {not_run}. Do not report it as done."
        ),
        Refusal::Cancelled => format!(
            "The approval of this call to `{tool}` was cancelled (the session was stopped); {not_run}."
        ),
    }
}
