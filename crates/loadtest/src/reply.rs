//! The reply the reply-throughput tests send, and the questions it answers: the same in
//! the `http_load` bench and in the `reply_instructions` example, so that instruction
//! counts and throughput measure the same request.

use askbus_question::{QuestionInfo, QuestionOption};

/// The body of every `POST /question/{id}/reply`: one answer per question of
/// [`reply_questions`].
pub const REPLY_BODY: &str = r#"{"answers":[["A"],["B","C"]]}"#;

/// Two questions that [`REPLY_BODY`] answers: one pick of two, then a multiple choice.
pub fn reply_questions() -> Vec<QuestionInfo> {
    vec![
        QuestionInfo::new(
            "Which letter first?",
            "First",
            [
                QuestionOption::new("A", "the first letter"),
                QuestionOption::new("Z", "the last letter"),
            ],
        ),
        QuestionInfo::new(
            "Which letters next?",
            "Next",
            [
                QuestionOption::new("B", "the second letter"),
                QuestionOption::new("C", "the third letter"),
            ],
        )
        .multiple(),
    ]
}
