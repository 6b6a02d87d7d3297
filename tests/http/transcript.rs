//! The seeds' content-block stream and flat history over HTTP: steps posted by an agent,
//! questions and approvals in their place, history + stream replay equal to the live
//! stream (without a store and over one), histories that no flood of other events takes
//! away, and the resync a cursor that cannot be resumed gets.

use askbus::Timeout;
use askbus::question::Action;
use askbus_protocol::{ClientView, Frame, History};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Frames, TestApp, get, language, post_json};

/// Reads frames until the one whose cursor is `last`; returns them in order.
async fn frames_until(frames: &mut Frames, last: &str) -> Vec<Frame> {
    let mut read = Vec::new();
    loop {
        let frame = frames.next().await;
        read.push(serde_json::from_value(frame.data).expect("a seed frame"));
        if frame.id.as_deref() == Some(last) {
            return read;
        }
    }
}

async fn history(app: &TestApp, session: &str) -> History {
    let (status, body) = app.call(get(&format!("/session/{session}/history"))).await;
    assert_eq!(status, StatusCode::OK);
    serde_json::from_value(body).expect("a seed history")
}

async fn step(app: &TestApp, session: &str, step: Value) {
    let (status, body) = app
        .call(post_json(&format!("/session/{session}/step"), &step))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)), "{step}");
}

#[tokio::test]
async fn history_plus_stream_replay_is_the_live_stream() {
    history_plus_stream_replay_is_the_live_stream_of(TestApp::new()).await;
}

#[tokio::test]
async fn history_plus_stream_replay_is_the_live_stream_over_a_store() {
    let app = TestApp::with_store(16, askbus_store::DEFAULT_HISTORY_LIMIT).await;
    history_plus_stream_replay_is_the_live_stream_of(app).await;
}

async fn history_plus_stream_replay_is_the_live_stream_of(app: TestApp) {
    let mut live = app.events("/session/s1/stream", &[]).await;
    step(
        &app,
        "s1",
        json!({"type": "user", "text": "Clean up the database"}),
    )
    .await;
    step(
        &app,
        "s1",
        json!({"type": "tool_use", "id": "tc-1", "name": "web_search", "input": {"query": "vacuum"}}),
    )
    .await;
    let question = app
        .questions
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    let middle = history(&app, "s1").await;

    let (status, _) = app
        .call(post_json(
            &format!("/question/{}/reply", question.id),
            &json!({"answers": [["Rust"]]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let approval = app
        .hub
        .approvals()
        .request(
            "s1",
            vec![Action::new("delete_rows", json!({"table": "sessions"}))],
        )
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    let (status, _) = app
        .call(post_json(
            &format!("/approval/{}/reply", approval.id),
            &json!({"decisions": [{"type": "approve"}]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    step(
        &app,
        "s1",
        json!({"type": "text", "text": "Done.", "is_final": true}),
    )
    .await;
    let end = history(&app, "s1").await;
    let last = end.last_event_id.to_string();

    let everything = frames_until(&mut live, &last).await;
    let kinds: Vec<String> = everything
        .iter()
        .map(|frame| {
            serde_json::to_value(frame).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(kinds.contains(&"group_start".to_owned()), "{kinds:?}");
    let text = serde_json::to_string(&everything).unwrap();
    assert!(
        text.contains("ask_user_question"),
        "the question is an approval_request"
    );
    assert!(
        text.contains("delete_rows"),
        "the approval is in the stream"
    );
    assert!(
        text.contains(r#""decisions":[{"type":"approve"}]"#),
        "{text}"
    );

    // A client that loaded the history halfway resumes after its cursor.
    let cursor = middle.last_event_id.to_string();
    let mut resumed = app
        .events("/session/s1/stream", &[("last-event-id", &cursor)])
        .await;
    let mut view = ClientView::from_history(&middle);
    for frame in frames_until(&mut resumed, &last).await {
        view.apply(&frame);
    }
    let mut watched = ClientView::new();
    for frame in &everything {
        watched.apply(frame);
    }
    assert_eq!(view, watched, "history + replay = live");
    assert_eq!(
        ClientView::from_history(&end),
        watched,
        "and the end's history agrees"
    );
}

#[tokio::test]
async fn bad_steps_and_cursors_are_refused() {
    let app = TestApp::new();
    let (status, error) = app
        .call(post_json("/session/s1/step", &json!({"type": "dance"})))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error["code"], "invalid");
    let (status, error) = app
        .call(get("/session/s1/stream?last_event_id=yesterday"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["message"].as_str().unwrap().contains("cursor"));
    let empty = history(&app, "nobody").await;
    assert!(empty.messages.is_empty());
}

#[tokio::test]
async fn the_stream_ends_on_shutdown() {
    let app = TestApp::new();
    let mut frames = app.events("/session/s1/stream", &[]).await;
    app.shutdown.cancel();
    assert!(frames.try_next().await.is_none());
}

/// A session nobody reads while many more events than the bus keeps go by (other
/// sessions' steps) still has its whole history: its steps and its pending question.
#[tokio::test]
async fn a_session_nobody_reads_keeps_its_whole_history() {
    let with_store = TestApp::with_store(16, askbus_store::DEFAULT_HISTORY_LIMIT).await;
    // Without a store the history is read from the bus as events come: between requests,
    // as a server's tasks take turns.
    let in_memory = TestApp::with_history(16, 16);
    for app in [with_store, in_memory] {
        step(&app, "quiet", json!({"type": "user", "text": "Clean up"})).await;
        step(
            &app,
            "quiet",
            json!({"type": "tool_use", "id": "tc-1", "name": "web_search"}),
        )
        .await;
        app.ask("quiet");
        for n in 0..200 {
            let noise = json!({"type": "thinking", "thinking": format!("busy {n}")});
            step(&app, &format!("busy-{}", n % 7), noise).await;
            tokio::task::yield_now().await;
        }
        let history = serde_json::to_value(history(&app, "quiet").await).unwrap();
        let messages = history["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{history:#}");
        let part = &messages[2]["content"][0];
        assert_eq!(part["approval_key"], "quiet_1", "the question's seed key");
        assert_eq!(part["isResolved"], false);
    }
}

/// The frames of `uri` until the stream ends.
async fn until_the_end(app: &TestApp, uri: &str, headers: &[(&str, &str)]) -> Vec<super::Frame> {
    let mut frames = app.events(uri, headers).await;
    let mut read = Vec::new();
    while let Some(frame) = frames.try_next().await {
        read.push(frame);
    }
    read
}

/// A cursor whose records are no longer kept, or one of an askbus before histories were
/// kept in the store, gets one `server.resync` frame and the stream ends; reloading the
/// history gives a cursor that resumes.
#[tokio::test]
async fn a_cursor_that_cannot_be_resumed_gets_a_resync() {
    let app = TestApp::with_store(16, 4).await;
    for n in 0..3 {
        step(
            &app,
            "s1",
            json!({"type": "thinking", "thinking": format!("{n}")}),
        )
        .await;
    }
    let early = history(&app, "s1").await.last_event_id.to_string();
    for n in 0..10 {
        step(&app, "s1", json!({"type": "text", "text": format!("{n}")})).await;
    }
    let old_askbus = "evt_01JZ6Q3V8R5M2K7D4T9WXYZABC";
    let now = history(&app, "s1").await.last_event_id;
    // Frames its record does not have: one past the last, and one past every number (its
    // successor overflowed, and panicked a debug build).
    let past_its_frames = format!("h{}-{}.1000", now.origin, now.record);
    let overflowing = format!("h{}-{}.{}", now.origin, now.record, u64::MAX);
    for (cursor, reason) in [
        (early.as_str(), "cursor_too_old"),
        (old_askbus, "unknown_cursor"),
        (&past_its_frames, "unknown_cursor"),
        (&overflowing, "unknown_cursor"),
    ] {
        let by_header =
            until_the_end(&app, "/session/s1/stream", &[("last-event-id", cursor)]).await;
        let by_query = until_the_end(
            &app,
            &format!("/session/s1/stream?last_event_id={cursor}"),
            &[],
        )
        .await;
        for frames in [by_header, by_query] {
            assert_eq!(frames.len(), 1, "{cursor}: {frames:?}");
            assert_eq!(frames[0].kind(), "server.resync");
            assert_eq!(frames[0].data["properties"]["reason"], reason, "{cursor}");
            assert_eq!(frames[0].id, None);
        }
    }
    let again = history(&app, "s1").await;
    let cursor = again.last_event_id.to_string();
    let mut resumed = app
        .events("/session/s1/stream", &[("last-event-id", &cursor)])
        .await;
    step(&app, "s1", json!({"type": "user", "text": "Thanks!"})).await;
    // The user speaking ends the agent's turn, then shows what they said.
    let frame = resumed.next().await;
    assert_eq!(frame.kind(), "message_stop", "{frame:?}");
    let frame = resumed.next().await;
    assert_eq!(frame.kind(), "content_block_start", "{frame:?}");
}
