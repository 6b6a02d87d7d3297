//! The seeds' own JSON through the router, verbatim: seed 000's questions (`multiSelect`,
//! the free-text "Khác" option, no `header` or `description`), its reply message keyed by
//! question text (`{"answers": {"<question>": "<answer>"}}`), and the same answers resuming
//! a session (seed 002).

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{TestApp, get, post_json};
use crate::support::seed_000_questions;

/// Asks `questions` in `session` over `POST /question`; returns the new request.
async fn ask(app: &TestApp, session: &str, questions: Value) -> Value {
    let (status, request) = app
        .call(post_json(
            "/question",
            &json!({"sessionID": session, "questions": questions}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{request}");
    request
}

/// Replies to `request` with `body`; returns the request's answers once replied.
async fn reply(app: &TestApp, request: &Value, body: &Value) -> Value {
    let id = request["id"].as_str().unwrap();
    let (status, answer) = app
        .call(post_json(&format!("/question/{id}/reply"), body))
        .await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)), "{body}");
    let (_, state) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(state["status"], "replied");
    state["answers"].clone()
}

/// Seed 000's questions are stored as written: single-select from `"multiSelect": false`,
/// and "Khác" kept as the free-text option (`input`), so custom answers are on; the other
/// options keep OpenCode's `{label, description}` shape.
#[tokio::test]
async fn the_seeds_questions_are_asked_as_written() {
    let app = TestApp::new();
    let request = ask(&app, "abc-123", seed_000_questions()).await;
    let seed = seed_000_questions();
    for (asked, written) in request["questions"]
        .as_array()
        .unwrap()
        .iter()
        .zip(seed.as_array().unwrap())
    {
        assert_eq!(asked["question"], written["question"]);
        assert_eq!(asked["header"], written["header"]);
        assert_eq!(asked["multiple"], false);
        assert_eq!(asked["custom"], true);
        assert_eq!(
            asked["options"], written["options"],
            "no option added or changed"
        );
    }
}

/// Seed 000's own question template ("Cấu Trúc Câu Hỏi"), verbatim.
#[tokio::test]
async fn the_seeds_question_template_is_accepted() {
    let app = TestApp::new();
    let template = json!({
        "question": "Câu hỏi hiển thị cho user",
        "header": "Tiêu đề nhóm (optional)",
        "multiSelect": false,
        "options": [
            {
                "label": "Option 1",
                "description": "Mô tả chi tiết"
            },
            {
                "label": "Option 2 (Recommended)",
                "description": "Được đề xuất"
            },
            {
                "label": "Khác",
                "description": "Nhập giá trị tùy chỉnh",
                "input": true
            }
        ]
    });
    let request = ask(&app, "s1", json!([template])).await;
    assert_eq!(request["questions"][0]["options"], template["options"]);
    let answers = reply(
        &app,
        &request,
        &json!({"answers": {"Câu hỏi hiển thị cho user": "Option 2 (Recommended)"}}),
    )
    .await;
    assert_eq!(answers, json!([["Option 2 (Recommended)"]]));
}

/// Seed 000's approval message, verbatim (`type`, `session_id` and `approval_key` beside
/// `answers` keyed by question text), answers `POST /question/{id}/reply`.
#[tokio::test]
async fn the_seeds_reply_message_answers_by_question_text() {
    let app = TestApp::new();
    let request = ask(&app, "abc-123", seed_000_questions()).await;
    let message = json!({
        "type": "approval",
        "session_id": "abc-123",
        "approval_key": "abc-123_1",
        "answers": {
            "Thảo muốn tập trung vào mục tiêu nào?": "Cổ tức bền vững (Recommended)",
            "Thời gian nắm giữ dự kiến?": "Trên 3 năm"
        }
    });
    assert_eq!(
        reply(&app, &request, &message).await,
        json!([["Cổ tức bền vững (Recommended)"], ["Trên 3 năm"]])
    );
}

/// Choosing "Khác" means typing: the seed's answer is the text itself, and is taken as the
/// custom answer; the seed's "[No preference]" skips a question.
#[tokio::test]
async fn the_free_text_option_takes_the_humans_own_words() {
    let app = TestApp::new();
    let request = ask(&app, "abc-123", seed_000_questions()).await;
    let answers = reply(
        &app,
        &request,
        &json!({"answers": {
            "Thảo muốn tập trung vào mục tiêu nào?": "Cổ tức và tăng trưởng cân bằng",
            "Thời gian nắm giữ dự kiến?": "[No preference]"
        }}),
    )
    .await;
    assert_eq!(
        answers,
        json!([["Cổ tức và tăng trưởng cân bằng"], ["[No preference]"]])
    );
}

/// A free-text option on a question that refuses custom answers contradicts itself: 422,
/// naming the question; so do two free-text options.
#[tokio::test]
async fn a_free_text_option_needs_custom_answers() {
    let app = TestApp::new();
    let khac = json!({"label": "Khác", "description": "Nhập giá trị tùy chỉnh", "input": true});
    for (options, custom, expected) in [
        (
            json!([{"label": "Trên 3 năm"}, khac]),
            false,
            "`custom` is false",
        ),
        (
            json!([khac, {"label": "Other", "input": true}]),
            true,
            "more than one option",
        ),
    ] {
        let body = json!({"sessionID": "s1", "questions": [
            {"question": "Thời gian nắm giữ dự kiến?", "options": options, "custom": custom}
        ]});
        let (status, error) = app.call(post_json("/question", &body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("Thời gian nắm giữ dự kiến?") && message.contains(expected),
            "{error}"
        );
    }
}

/// `"multiSelect": true` makes a multi-select question, and the seed's multi-select answer
/// (labels joined with ", ") selects each label. `header` and `description`, optional in
/// the seed, may be left out.
#[tokio::test]
async fn a_multi_select_question_takes_the_seeds_comma_joined_answer() {
    let app = TestApp::new();
    let request = ask(
        &app,
        "s1",
        json!([{
            "question": "Nhóm ngành quan tâm?",
            "multiSelect": true,
            "options": [
                {"label": "Ngân hàng"},
                {"label": "Thép (Steel)"},
                {"label": "Khác", "input": true}
            ]
        }]),
    )
    .await;
    let asked = &request["questions"][0];
    assert_eq!(asked["multiple"], true);
    assert_eq!(asked["header"], "");
    assert_eq!(
        asked["options"][0],
        json!({"label": "Ngân hàng", "description": ""})
    );
    let answers = reply(
        &app,
        &request,
        &json!({
            "answers": {
                "Nhóm ngành quan tâm?": "Ngân hàng, Thép (Steel)"
            }
        }),
    )
    .await;
    assert_eq!(answers, json!([["Ngân hàng", "Thép (Steel)"]]));
}

/// The seed's skip, verbatim: `"[No preference]"` keyed by the question.
#[tokio::test]
async fn the_seeds_skip_skips() {
    let app = TestApp::new();
    let request = ask(
        &app,
        "s1",
        json!([{"question": "Câu hỏi bị bỏ qua?", "options": [{"label": "A"}]}]),
    )
    .await;
    let answers = reply(
        &app,
        &request,
        &json!({
            "answers": {
                "Câu hỏi bị bỏ qua?": "[No preference]"
            }
        }),
    )
    .await;
    assert_eq!(answers, json!([["[No preference]"]]));
}

/// Seed 000's answers resume the session (seed 002's `{agent_id, session_id, input}`).
#[tokio::test]
async fn the_seeds_keyed_answers_resume_a_session() {
    let app = TestApp::new();
    let request = ask(&app, "abc-123", seed_000_questions()).await;
    let resume = json!({
        "agent_id": "approval-agent",
        "session_id": "abc-123",
        "input": {
            "answers": {
                "Thảo muốn tập trung vào mục tiêu nào?": "Cổ tức bền vững (Recommended)",
                "Thời gian nắm giữ dự kiến?": "Trên 3 năm"
            }
        }
    });
    let (status, body) = app
        .call(post_json("/session/abc-123/resume", &resume))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["checkpoint_id"], request["id"]);
    let (_, state) = app
        .call(get(&format!(
            "/question/{}",
            request["id"].as_str().unwrap()
        )))
        .await;
    assert_eq!(
        state["answers"],
        json!([["Cổ tức bền vững (Recommended)"], ["Trên 3 năm"]])
    );
}

/// Keyed answers must be strings, under `answers` as in a bare keyed body.
#[tokio::test]
async fn a_keyed_answer_that_is_not_a_string_is_refused() {
    let app = TestApp::new();
    let request = ask(&app, "abc-123", seed_000_questions()).await;
    let id = request["id"].as_str().unwrap();
    let body = json!({"answers": {"Thời gian nắm giữ dự kiến?": ["Trên 3 năm"]}});
    let (status, error) = app
        .call(post_json(&format!("/question/{id}/reply"), &body))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("must be a string"),
        "{error}"
    );
}
