//! A request's `locale` over HTTP: given on `POST /question` and `POST /approval`, kept on
//! the request wherever it is read (the list, the request, the event), and refused with
//! 422 when it is no language tag.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{TestApp, get, post_json};

/// A question asking for a region, in `locale` (absent when `None`).
fn question(locale: Option<&str>) -> Value {
    let mut body = json!({
        "sessionID": "s",
        "questions": [{"question": "Chọn khu vực?", "header": "Khu vực", "options": [{"label": "EU"}]}],
    });
    if let Some(locale) = locale {
        body["locale"] = json!(locale);
    }
    body
}

#[tokio::test]
async fn a_question_keeps_its_locale_wherever_it_is_read() {
    let app = TestApp::new();
    let (status, asked) = app
        .call(post_json("/question", &question(Some("vi"))))
        .await;
    assert_eq!(status, StatusCode::OK, "{asked}");
    assert_eq!(asked["locale"], "vi");
    let id = asked["id"].as_str().unwrap();

    let (_, listed) = app.call(get("/question")).await;
    assert_eq!(listed[0]["locale"], "vi");
    let (_, read) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(read["locale"], "vi");

    let (status, plain) = app.call(post_json("/question", &question(None))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        plain.get("locale").is_none(),
        "no locale: none on the wire: {plain}"
    );
}

#[tokio::test]
async fn an_approval_keeps_its_locale() {
    let app = TestApp::new();
    let body = json!({
        "session_id": "s",
        "action_requests": [{"name": "delete_rows", "args": {"table": "users"}}],
        "locale": "zh-CN",
    });
    let (status, asked) = app.call(post_json("/approval", &body)).await;
    assert_eq!(status, StatusCode::OK, "{asked}");
    assert_eq!(asked["locale"], "zh-CN");
    let (_, listed) = app.call(get("/approval")).await;
    assert_eq!(listed[0]["locale"], "zh-CN");
}

#[tokio::test]
async fn a_locale_that_is_no_language_tag_is_refused_and_asks_nothing() {
    let app = TestApp::new();
    for bad in [
        "",
        "v",
        "vi_VN",
        "vi-",
        "<script>",
        "vi-VNVNVNVNVN",
        &"a".repeat(9),
    ] {
        let (status, error) = app.call(post_json("/question", &question(Some(bad)))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad:?}: {error}");
        assert!(
            error.to_string().contains("no language tag"),
            "{bad:?}: {error}"
        );
    }
    let long = format!("vi{}", "-abcdefgh".repeat(4));
    let (status, _) = app
        .call(post_json("/question", &question(Some(&long))))
        .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "longer than 35 characters"
    );
    let (_, listed) = app.call(get("/question")).await;
    assert_eq!(listed, json!([]), "nothing was asked");

    for good in ["vi", "zh-CN", "zh-Hant-TW", "en-US"] {
        let (status, asked) = app
            .call(post_json("/question", &question(Some(good))))
            .await;
        assert_eq!(
            (status, asked["locale"].clone()),
            (StatusCode::OK, json!(good))
        );
    }
}
