//! The yardstick for reply throughput: the least an axum server can do for the same request.
//!
//! `POST /question/{id}/reply` with `{"answers": [["A"], ["B", "C"]]}`: the handler extracts
//! the path segment, parses the body into a serde struct with axum's `Json` (content-type
//! check included) and answers `true`, as askbus does, but looks nothing up and stores
//! nothing. What askbus costs beyond this is its own work: id parsing, auth, the registry,
//! validation, the `question.replied` event, error shaping and its middleware.

use axum::extract::Path;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;

/// The route askbus answers replies on, with the baseline handler.
pub fn router() -> Router {
    Router::new().route("/question/{id}/reply", post(reply))
}

/// The body of a reply, as askbus's primary form.
#[derive(Debug, Deserialize)]
struct ReplyBody {
    /// One answer (a list of labels) per question.
    answers: Vec<Vec<String>>,
}

async fn reply(Path(id): Path<String>, Json(body): Json<ReplyBody>) -> Json<bool> {
    // Keep the parsed values alive to the end, so the parse is not optimised away.
    std::hint::black_box((id, body.answers));
    Json(true)
}
