//! What the benches share: the request they ask.

use askbus_question::{QuestionInfo, QuestionOption};

/// One single-choice question with two options, the size of a typical request.
pub(crate) fn database_question() -> Vec<QuestionInfo> {
    vec![QuestionInfo::new(
        "Which database should the service use?",
        "Database",
        [
            QuestionOption::new("SQLite", "embedded, zero setup"),
            QuestionOption::new("Postgres", "a server, scales out"),
        ],
    )]
}
