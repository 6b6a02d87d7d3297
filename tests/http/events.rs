//! SSE: framing, replay after `Last-Event-ID`, resync, session filter, heartbeat, shutdown.

use std::time::Duration;

use askbus::question::Timeout;
use serde_json::json;

use super::{Frame, TestApp, language};

/// Asserts `frame` is bus event `kind` with an `id:` line equal to its JSON `id`.
fn assert_event(frame: &Frame, kind: &str) -> String {
    assert_eq!(frame.kind(), kind, "{:?}", frame.data);
    let id = frame.id.clone().expect("bus events carry an id: line");
    assert_eq!(frame.data["id"], id.as_str());
    assert!(id.starts_with("evt_"));
    id
}

#[tokio::test]
async fn the_first_frame_is_server_connected_then_every_event() {
    let app = TestApp::new();
    let mut frames = app.events("/event", &[]).await;
    let connected = frames.next().await;
    assert_eq!(
        connected.data,
        json!({"type": "server.connected", "properties": {}})
    );
    let cursor = connected.id.expect("connected carries the start cursor");
    assert_eq!(cursor, app.questions.bus().head().to_string());

    let pending = app
        .questions
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .expect("valid");
    let id = pending.id();
    drop(
        app.questions
            .reply(id, vec![vec!["Rust".to_owned()]])
            .expect("reply"),
    );

    let asked = frames.next().await;
    assert_event(&asked, "question.asked");
    assert_eq!(asked.data["properties"]["id"], id.to_string());
    assert_eq!(asked.data["properties"]["sessionID"], "s1");
    let replied = frames.next().await;
    assert_event(&replied, "question.replied");
    assert_eq!(
        replied.data["properties"],
        json!({
            "sessionID": "s1",
            "requestID": id.to_string(),
            "answers": [["Rust"]],
            "answeredBy": {"name": "local", "role": "admin"}
        })
    );
    drop(pending);
}

#[tokio::test]
async fn last_event_id_replays_exactly_what_followed() {
    let app = TestApp::new();
    let mut live = app.events("/event", &[]).await;
    let origin = live.next().await.id.expect("cursor");
    let ids: Vec<String> = (0..6).map(|_| app.ask("s1")).collect();
    let mut cursors = vec![origin];
    for _ in 0..6 {
        cursors.push(assert_event(&live.next().await, "question.asked"));
    }

    // Resume after each event in turn (header or query): exactly the following ones.
    for (index, cursor) in cursors.iter().enumerate() {
        let mut frames = if index % 2 == 0 {
            app.events("/event", &[("last-event-id", cursor)]).await
        } else {
            app.events(&format!("/event?last_event_id={cursor}"), &[])
                .await
        };
        let connected = frames.next().await;
        assert_eq!(connected.kind(), "server.connected");
        assert_eq!(connected.id.as_deref(), Some(cursor.as_str()));
        for expected in &ids[index..] {
            let frame = frames.next().await;
            assert_event(&frame, "question.asked");
            assert_eq!(frame.data["properties"]["id"], expected.as_str());
        }
        if index + 1 == cursors.len() {
            // Then live events, with no duplicate.
            let next = app.ask("s1");
            let frame = frames.next().await;
            assert_event(&frame, "question.asked");
            assert_eq!(frame.data["properties"]["id"], next.as_str());
        }
    }
}

#[tokio::test]
async fn a_reconnect_loses_nothing_while_events_keep_coming() {
    let app = TestApp::new();
    let mut frames = app.events("/event", &[]).await;
    frames.next().await;
    app.ask("s1");
    let seen = assert_event(&frames.next().await, "question.asked");
    drop(frames);

    // Published while disconnected.
    let missed: Vec<String> = (0..3).map(|_| app.ask("s1")).collect();
    let mut frames = app.events("/event", &[("last-event-id", &seen)]).await;
    assert_eq!(frames.next().await.id.as_deref(), Some(seen.as_str()));
    for expected in missed {
        let frame = frames.next().await;
        assert_eq!(frame.data["properties"]["id"], expected);
    }
}

#[tokio::test]
async fn a_cursor_older_than_the_history_gets_resync() {
    let app = TestApp::with_history(2, 64);
    let mut frames = app.events("/event", &[]).await;
    let connected = frames.next().await;
    let old = connected.id.expect("cursor");
    drop(frames);
    for _ in 0..5 {
        app.ask("s1");
    }
    let mut frames = app.events("/event", &[("last-event-id", &old)]).await;
    let connected = frames.next().await;
    assert_eq!(connected.kind(), "server.connected");
    let resync = frames.next().await;
    assert_eq!(
        resync.data,
        json!({"type": "server.resync", "properties": {"reason": "cursor_too_old"}})
    );
    // The resync cursor is the live start: resuming from it after the snapshot misses nothing.
    assert_eq!(resync.id, connected.id);
    assert_eq!(resync.id, Some(app.questions.bus().head().to_string()));
    let next = app.ask("s1");
    assert_eq!(frames.next().await.data["properties"]["id"], next);
}

#[tokio::test]
async fn an_unknown_or_malformed_cursor_gets_resync() {
    let app = TestApp::new();
    for cursor in [
        "evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
        "garbage",
        "que_01M81X811YCJJ5QZ7DSS847BYK",
        // Not visible ASCII, so not readable as header text.
        "évt_01M81X811YCJJ5QZ7DSS847BYK",
    ] {
        let mut frames = app.events("/event", &[("last-event-id", cursor)]).await;
        assert_eq!(frames.next().await.kind(), "server.connected");
        let resync = frames.next().await;
        assert_eq!(
            resync.data["properties"]["reason"], "unknown_cursor",
            "{cursor}"
        );
    }
}

#[tokio::test]
async fn a_lagging_stream_catches_up_from_history_without_a_gap() {
    // Subscribers buffer 2 events, the history keeps 100: a lag is recovered silently.
    let app = TestApp::with_history(100, 2);
    let mut frames = app.events("/event", &[]).await;
    frames.next().await;
    let ids: Vec<String> = (0..10).map(|_| app.ask("s1")).collect();
    for expected in ids {
        let frame = frames.next().await;
        assert_event(&frame, "question.asked");
        assert_eq!(frame.data["properties"]["id"], expected);
    }
}

#[tokio::test]
async fn a_lag_beyond_the_history_gets_resync() {
    let app = TestApp::with_history(3, 2);
    let mut frames = app.events("/event", &[]).await;
    frames.next().await;
    for _ in 0..10 {
        app.ask("s1");
    }
    let resync = frames.next().await;
    assert_eq!(resync.kind(), "server.resync");
    assert_eq!(resync.data["properties"]["reason"], "lagged");
    assert!(resync.data["properties"]["missed"].as_u64() > Some(0));
    assert_eq!(resync.id, Some(app.questions.bus().head().to_string()));
    let next = app.ask("s1");
    assert_eq!(frames.next().await.data["properties"]["id"], next);
}

#[tokio::test]
async fn the_session_filter_keeps_that_session_only() {
    let app = TestApp::new();
    let mut frames = app.events("/event?sessionID=s2", &[]).await;
    assert_eq!(frames.next().await.kind(), "server.connected");
    app.ask("s1");
    let wanted = app.ask("s2");
    app.ask("s1");
    app.questions.cancel_session("s1");
    app.questions.cancel_session("s2");
    let asked = frames.next().await;
    assert_eq!(asked.data["properties"]["id"], wanted);
    let cancelled = frames.next().await;
    assert_eq!(cancelled.kind(), "question.cancelled");
    assert_eq!(cancelled.data["properties"]["requestID"], wanted);
}

#[tokio::test]
async fn global_event_wraps_each_payload() {
    let app = TestApp::with_config(askbus_http::HttpConfig {
        directory: "/work/project".to_owned(),
        ..Default::default()
    });
    let mut frames = app.events("/global/event?directory=/ignored", &[]).await;
    let connected = frames.next().await;
    assert_eq!(
        connected.data,
        json!({"directory": "/work/project", "payload": {"type": "server.connected", "properties": {}}})
    );
    let id = app.ask("s1");
    let frame = frames.next().await;
    assert_eq!(frame.data["directory"], "/work/project");
    assert_eq!(frame.data["payload"]["type"], "question.asked");
    assert_eq!(frame.data["payload"]["properties"]["id"], id);
    assert_eq!(frame.data["payload"]["id"].as_str(), frame.id.as_deref());
}

#[tokio::test(start_paused = true)]
async fn a_heartbeat_comes_every_ten_seconds() {
    let app = TestApp::new();
    let mut frames = app
        .events("/event", &[("x-opencode-directory", "/tmp")])
        .await;
    frames.next().await;
    let started = tokio::time::Instant::now();
    for beat in 1..=3 {
        let frame = frames.next().await;
        assert_eq!(
            frame.data,
            json!({"type": "server.heartbeat", "properties": {}})
        );
        assert!(frame.id.is_none(), "heartbeats are not bus events");
        assert_eq!(started.elapsed(), Duration::from_secs(10 * beat));
    }
}

#[tokio::test]
async fn shutdown_ends_open_streams() {
    let app = TestApp::new();
    let mut first = app.events("/event", &[]).await;
    let mut second = app.events("/global/event", &[]).await;
    first.next().await;
    second.next().await;
    app.shutdown.cancel();
    assert!(first.try_next().await.is_none());
    assert!(second.try_next().await.is_none());
}
