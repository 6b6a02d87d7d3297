//! The seeds' own JSON through the router, verbatim: seed 000's questions (`multiSelect`,
//! the free-text "Khác" option, no `header` or `description`), its reply message keyed by
//! question text (`{"answers": {"<question>": "<answer>"}}`), and the same answers resuming
//! a session (seed 002).

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{TestApp, get, post_json};
use crate::support::{seed_000_questions, seed_001_approval_request_block};

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

/// Seed 000's key, `{session_id}_{n}`: each question request of a session gets the next
/// one (`approvalKey`), and every question route takes it in place of the id. The seed's
/// reply message, verbatim, answers the request its `approval_key` names.
#[tokio::test]
async fn the_seeds_key_addresses_a_question() {
    let app = TestApp::new();
    let first = ask(&app, "abc-123", seed_000_questions()).await;
    let second = ask(&app, "abc-123", seed_000_questions()).await;
    let other = ask(&app, "thao", seed_000_questions()).await;
    assert_eq!(first["approvalKey"], "abc-123_1");
    assert_eq!(second["approvalKey"], "abc-123_2");
    assert_eq!(other["approvalKey"], "thao_1", "each session counts from 1");

    let (status, found) = app.call(get("/question/thao_1")).await;
    assert_eq!((status, &found["id"]), (StatusCode::OK, &other["id"]));

    // 000_8135dbde111ba45a.txt, "Gửi Trả Lời — approval message", verbatim.
    let message = json!({
        "type": "approval",
        "session_id": "abc-123",
        "approval_key": "abc-123_1",
        "answers": {
            "Thảo muốn tập trung vào mục tiêu nào?": "Cổ tức bền vững (Recommended)",
            "Thời gian nắm giữ dự kiến?": "Trên 3 năm"
        }
    });
    let key = message["approval_key"].as_str().unwrap();
    let (status, answer) = app
        .call(post_json(&format!("/question/{key}/reply"), &message))
        .await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)));
    let (_, state) = app
        .call(get(&format!("/question/{}", first["id"].as_str().unwrap())))
        .await;
    assert_eq!(state["status"], "replied");
    let (_, state) = app.call(get("/question/abc-123_2")).await;
    assert_eq!(
        state["status"], "pending",
        "the session's second request is apart"
    );

    let (status, error) = app.call(get("/question/abc-123_9")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
    let (status, error) = app.call(get("/question/abc-123")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("{sessionID}_{n}"),
        "{error}"
    );
}

/// The key is the `approval_key` of the question's `approval_request` block, as in seed
/// 000's stream ("Block approval_request — Stream", whose session is `session-id`).
#[tokio::test]
async fn the_seeds_stream_carries_the_questions_key() {
    let app = TestApp::new();
    let mut frames = app.events("/session/session-id/stream", &[]).await;
    ask(&app, "session-id", seed_000_questions()).await;
    // 000_8135dbde111ba45a.txt, "Block approval_request — Stream", Start, verbatim (its
    // `index` is the session's block count, 0 here).
    let mut start = json!({
        "type": "content_block_start",
        "index": 3,
        "content_block": {
            "type": "approval_request",
            "approval_key": "session-id_1"
        }
    });
    start["index"] = json!(0);
    let turn = frames.next().await;
    assert_eq!(
        turn.data,
        json!({"type": "message_start", "message_id": "msg_1"})
    );
    let mut frame = frames.next().await.data;
    assert_eq!(frame["message_id"], "msg_1", "{frame}");
    frame.as_object_mut().unwrap().remove("message_id");
    assert_eq!(frame, start);
}

/// Seed 001's `approval_request` block, verbatim, makes an approval through
/// `POST /approval` (with the asking `session_id`): `actions` are the calls up for review,
/// each `{require_approval, timeout}` reviews the action at its position with every
/// decision, and its `timeout` is the request's. The seed's own decision message, verbatim,
/// then answers it by its key.
#[tokio::test]
async fn the_seeds_approval_request_block_makes_an_approval() {
    let app = TestApp::new();
    // 001_80c8035cdf420067.txt, "Block approval_request", "Ví Dụ Đầy Đủ": the
    // `content_block`, verbatim.
    let mut block = seed_001_approval_request_block();
    block["session_id"] = json!("abc-123");
    let (status, request) = app.call(post_json("/approval", &block)).await;
    assert_eq!(status, StatusCode::OK, "{request}");
    assert_eq!(request["approval_key"], "abc-123_1");
    assert_eq!(request["action_requests"], block["actions"]);
    assert_eq!(
        request["review_configs"],
        json!([{"action_name": "execute_trade", "allowed_decisions": ["approve", "edit", "reject", "respond"]}])
    );
    let timeout = request["expires_at"].as_u64().unwrap() - request["created_at"].as_u64().unwrap();
    assert_eq!(timeout, 300_000);

    // 001_80c8035cdf420067.txt, "Lệnh approval — Phản Hồi Quyết Định", "Phê Duyệt", verbatim.
    let approve = json!({
        "type": "approval",
        "session_id": "abc-123",
        "approval_key": "abc-123_1",
        "decisions": [
            {
                "type": "approve"
            }
        ]
    });
    let (status, body) = app
        .call(post_json("/approval/abc-123_1/reply", &approve))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)));
    let (_, state) = app.call(get("/approval/abc-123_1")).await;
    assert_eq!(state["status"], "replied", "{state}");
}

/// A seed review config that does not make sense is refused by position: one past the
/// actions, or one whose action needs no approval.
#[tokio::test]
async fn a_seed_review_config_that_reviews_nothing_is_refused() {
    let app = TestApp::new();
    let action = json!({"name": "execute_trade", "args": {"symbol": "VNM"}});
    for (configs, expected) in [
        (
            json!([{"require_approval": true}, {"require_approval": true, "timeout": 300}]),
            "review_configs[1]",
        ),
        (
            json!([{"require_approval": false}]),
            "`require_approval` is false",
        ),
    ] {
        let body = json!({"session_id": "s1", "actions": [action], "review_configs": configs});
        let (status, error) = app.call(post_json("/approval", &body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap_or_default()
                .contains(expected),
            "{error}"
        );
    }
}

/// Seed 004, "F5 khi có Pending Approval": the history of a session waiting on a tool
/// approval says `agent_status: running` and holds the `pending_approval`; once approved
/// and the agent gave its final answer, it is `idle` with none.
#[tokio::test]
async fn the_seeds_history_says_what_the_agent_waits_on() {
    let app = TestApp::new();
    let step = async |body: Value| {
        let (status, answer) = app.call(post_json("/session/thao/step", &body)).await;
        assert_eq!((status, answer), (StatusCode::OK, json!(true)), "{body}");
    };
    let history = async || app.call(get("/session/thao/history")).await.1;
    assert_eq!(history().await["agent_status"], "idle", "nothing recorded");

    step(json!({"type": "user", "text": "Xem danh mục"})).await;
    step(json!({"type": "tool_use", "id": "tc-1", "name": "get_portfolio_detail"})).await;
    assert_eq!(history().await["agent_status"], "running");
    let body = json!({
        "session_id": "thao",
        "actions": [{"name": "get_portfolio_detail", "args": {}, "tool_use_id": "tc-1"}],
        "review_configs": [{"require_approval": true, "timeout": 300}]
    });
    let (status, request) = app.call(post_json("/approval", &body)).await;
    assert_eq!(status, StatusCode::OK, "{request}");
    let waiting = history().await;
    assert_eq!(waiting["agent_status"], "running", "{waiting:#}");
    let pending = &waiting["pending_approval"];
    assert_eq!(pending["approval_key"], "thao_1", "{waiting:#}");
    assert_eq!(pending["isResolved"], false);
    assert_eq!(pending["actionRequests"][0]["name"], "get_portfolio_detail");

    let approve = json!({"decisions": [{"type": "approve"}]});
    let (status, _) = app
        .call(post_json("/approval/thao_1/reply", &approve))
        .await;
    assert_eq!(status, StatusCode::OK);
    step(json!({"type": "tool_result", "tool_use_id": "tc-1", "name": "get_portfolio_detail"}))
        .await;
    let working = history().await;
    assert_eq!(working["agent_status"], "running", "no final answer yet");
    assert!(working.get("pending_approval").is_none(), "{working:#}");
    step(json!({"type": "text", "text": "Xong.", "is_final": true})).await;
    let done = history().await;
    assert_eq!(done["agent_status"], "idle", "{done:#}");
    assert!(done.get("pending_approval").is_none(), "{done:#}");
}

/// Seed 000's per-tool `display_as_content`, on `POST /session/{id}/step`: a call marked
/// so is shown outside groups (seed 004: `share_thought`), closing the group before it.
#[tokio::test]
async fn a_step_marked_display_as_content_is_shown_outside_groups() {
    let app = TestApp::new();
    for step in [
        json!({"type": "tool_use", "id": "tc-1", "name": "write_todos"}),
        json!({"type": "tool_use", "id": "tc-2", "name": "share_thought", "display_as_content": true}),
    ] {
        let (status, body) = app.call(post_json("/session/s1/step", &step)).await;
        assert_eq!((status, body), (StatusCode::OK, json!(true)), "{step}");
    }
    let (_, history) = app.call(get("/session/s1/history")).await;
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{history:#}");
    assert_eq!(messages[0]["display_type"], "group_start", "{history:#}");
    assert_eq!(messages[0]["group_closed"], true, "{history:#}");
    assert_eq!(messages[1]["tool_calls"][0]["name"], "share_thought");
    assert_eq!(messages[1]["display_type"], "content", "{history:#}");
}

/// Seed 001's key is the session's interrupt count: a question and an approval of one
/// session count together, so the key in the seeds' stream names one request, whichever
/// kind it is, and each kind's routes answer 404 for the other's key.
#[tokio::test]
async fn questions_and_approvals_of_a_session_count_their_keys_together() {
    let app = TestApp::new();
    let question = ask(&app, "abc-123", seed_000_questions()).await;
    let body = json!({
        "session_id": "abc-123",
        "actions": [{"name": "execute_trade", "args": {"symbol": "VNM"}}],
        "review_configs": [{"require_approval": true}]
    });
    let (status, approval) = app.call(post_json("/approval", &body)).await;
    assert_eq!(status, StatusCode::OK, "{approval}");
    assert_eq!(question["approvalKey"], "abc-123_1");
    assert_eq!(approval["approval_key"], "abc-123_2");
    let (status, _) = app.call(get("/approval/abc-123_1")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.call(get("/question/abc-123_2")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
