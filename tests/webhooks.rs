//! Webhook delivery in process: retries of a receiver that fails, times out or is gone, the
//! retry window, what `GET /webhook/deliveries` shows and to whom, and one message per
//! event over a shared store. (The real binary against the Standard Webhooks reference
//! library, a receiver down and `kill -9`: the `askbus` package's `tests/webhooks.rs`.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use askbus::bus::Bus;
use askbus::question::{
    FollowUp, Identity, PendingQuestion, QuestionInfo, QuestionOption, RequestHub, Role, Timeout,
};
use askbus_http::{AccessToken, HttpConfig};
use askbus_notify::{DeliveryStats, Dispatcher, RetryPolicy, Webhook, WebhookSecret};
use askbus_store::{DeliveryQuery, DeliveryState, MemoryStore, OutboxMessage, Store, Write};
use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use http_body_util::BodyExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::http::{TestApp, request};

#[tokio::test]
async fn a_delivery_queued_under_a_webhook_s_former_name_still_arrives() {
    let receiver = Receiver::start(|_| (StatusCode::NO_CONTENT, Duration::ZERO)).await;
    let webhook = Webhook::parse(&receiver.url).unwrap();
    assert_ne!(
        webhook.name(),
        receiver.url,
        "a webhook's name hides its path"
    );
    // Queued before an upgrade, by a version that named a webhook by its URL without the
    // query.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let message_id = "msg_01JDQ3Z5V7X8Y9Z0A1B2C3D4E5";
    store
        .write(Write::Enqueue(OutboxMessage {
            id: message_id.to_owned(),
            targets: vec![receiver.url.clone()],
            payload: serde_json::json!({
                "type": "question.asked",
                "timestamp": "2026-11-01T00:00:00Z",
                "data": {"id": "que_1"},
            })
            .to_string(),
            created_at_ms: askbus_store::now_ms(),
        }))
        .await
        .unwrap();
    let shutdown = CancellationToken::new();
    Dispatcher::new(
        Arc::clone(&store),
        vec![webhook],
        WebhookSecret::parse(SECRET).unwrap(),
    )
    .with_retry(QUICK)
    .spawn(shutdown.clone());
    let delivery = settled(&store, Duration::from_secs(10)).await;
    assert_eq!(delivery.state, DeliveryState::Delivered, "{delivery:?}");
    let received = receiver.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0].id, message_id);
    shutdown.cancel();
}

const SECRET: &str = "whsec_C2FtcGxlLXNlY3JldC1mb3ItYXNrYnVzLXRlc3RzIQ==";

/// Quick retries, so a test sees several attempts in well under a second.
const QUICK: RetryPolicy = RetryPolicy {
    first: Duration::from_millis(20),
    longest: Duration::from_millis(80),
    window: Duration::from_secs(30),
};

/// One post a receiver got.
#[derive(Debug, Clone)]
struct Received {
    id: String,
    kind: String,
}

/// A local receiver answering each post with what `answer` says for its number (from 0).
struct Receiver {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    async fn start(
        answer: impl Fn(usize) -> (StatusCode, Duration) + Send + Sync + 'static,
    ) -> Self {
        let received = Arc::new(Mutex::new(Vec::<Received>::new()));
        let kept = Arc::clone(&received);
        let answer = Arc::new(answer);
        let router = Router::new().route(
            "/hook",
            post(move |headers: HeaderMap, body: String| {
                let (kept, answer) = (Arc::clone(&kept), Arc::clone(&answer));
                async move {
                    let number = {
                        let mut kept = kept.lock().unwrap();
                        let message: Value = serde_json::from_str(&body).unwrap();
                        kept.push(Received {
                            id: headers["webhook-id"].to_str().unwrap().to_owned(),
                            kind: message["type"].as_str().unwrap().to_owned(),
                        });
                        kept.len() - 1
                    };
                    let (status, delay) = answer(number);
                    tokio::time::sleep(delay).await;
                    status
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// A hub over a fresh memory store whose events go to `receiver`, by a dispatcher set up
/// with `configure`; and the store.
async fn hub_to(
    receiver: &Receiver,
    configure: impl FnOnce(Dispatcher) -> Dispatcher,
    shutdown: &CancellationToken,
) -> (RequestHub, Arc<dyn Store>, Arc<DeliveryStats>) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let hub = RequestHub::builder()
        .bus(Bus::new())
        .store(Arc::clone(&store))
        .build()
        .await
        .unwrap();
    let dispatcher = configure(Dispatcher::new(
        Arc::clone(&store),
        vec![Webhook::parse(&receiver.url).unwrap()],
        WebhookSecret::parse(SECRET).unwrap(),
    ));
    let hub = hub.with_notifier(dispatcher.notifier());
    let stats = dispatcher.stats();
    dispatcher.spawn(shutdown.clone());
    (hub, store, stats)
}

/// [`hub_to`], and one question asked there (pending while the returned ticket lives).
async fn one_question_to(
    receiver: &Receiver,
    configure: impl FnOnce(Dispatcher) -> Dispatcher,
    shutdown: &CancellationToken,
) -> (Arc<dyn Store>, PendingQuestion) {
    let (hub, store, _) = hub_to(receiver, configure, shutdown).await;
    let pending = hub
        .questions()
        .ask("s1", question())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    (store, pending)
}

fn question() -> Vec<QuestionInfo> {
    vec![QuestionInfo {
        question: "Ship it?".into(),
        header: "Ship".into(),
        options: vec![QuestionOption {
            label: "yes".into(),
            description: String::new(),
            input: false,
        }],
        multiple: false,
        custom: true,
    }]
}

/// Waits until the store's only delivery is settled (or `limit` runs out) and returns it.
async fn settled(store: &Arc<dyn Store>, limit: Duration) -> askbus_store::Delivery {
    watch_deliveries(store, limit, |delivery| {
        (delivery.state != DeliveryState::Pending).then_some(delivery)
    })
    .await
}

/// Reads the store's deliveries until `pick` picks something from one of them, failing
/// after `limit`.
async fn watch_deliveries<T>(
    store: &Arc<dyn Store>,
    limit: Duration,
    pick: impl Fn(askbus_store::Delivery) -> Option<T>,
) -> T {
    tokio::time::timeout(limit, async {
        loop {
            let deliveries = store
                .deliveries(DeliveryQuery {
                    limit: 10,
                    ..DeliveryQuery::default()
                })
                .await
                .unwrap();
            if let Some(picked) = deliveries.into_iter().find_map(&pick) {
                return picked;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the deliveries come to what the test waits for")
}

#[tokio::test]
async fn a_failing_receiver_gets_the_message_again_under_the_same_webhook_id() {
    let receiver = Receiver::start(|number| match number {
        0 | 1 => (StatusCode::SERVICE_UNAVAILABLE, Duration::ZERO),
        _ => (StatusCode::NO_CONTENT, Duration::ZERO),
    })
    .await;
    let shutdown = CancellationToken::new();
    let (store, _pending) = one_question_to(
        &receiver,
        |dispatcher| dispatcher.with_retry(QUICK),
        &shutdown,
    )
    .await;

    let delivery = settled(&store, Duration::from_secs(10)).await;
    assert_eq!(delivery.state, DeliveryState::Delivered);
    assert_eq!(delivery.attempts, 3);
    assert_eq!(delivery.last_attempt.unwrap().status, Some(204));
    let received = receiver.received();
    assert_eq!(received.len(), 3, "{received:?}");
    assert!(received.iter().all(|post| post.id == delivery.message_id));
    assert!(received.iter().all(|post| post.kind == "question.asked"));
    shutdown.cancel();
}

#[tokio::test]
async fn a_receiver_that_is_gone_is_abandoned_at_once() {
    let receiver = Receiver::start(|_| (StatusCode::GONE, Duration::ZERO)).await;
    let shutdown = CancellationToken::new();
    let (store, _pending) = one_question_to(
        &receiver,
        |dispatcher| dispatcher.with_retry(QUICK),
        &shutdown,
    )
    .await;

    let delivery = settled(&store, Duration::from_secs(10)).await;
    assert_eq!(delivery.state, DeliveryState::Abandoned);
    assert_eq!(delivery.attempts, 1);
    let attempt = delivery.last_attempt.unwrap();
    assert_eq!(attempt.status, Some(410));
    assert!(attempt.error.unwrap().contains("410"));
    // Never tried again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.received().len(), 1);
    shutdown.cancel();
}

#[tokio::test]
async fn reminders_and_escalations_are_delivered_as_their_events() {
    let receiver = Receiver::start(|_| (StatusCode::NO_CONTENT, Duration::ZERO)).await;
    let shutdown = CancellationToken::new();
    let (hub, store, _) = hub_to(&receiver, |dispatcher| dispatcher, &shutdown).await;
    let pending = hub
        .questions()
        .ask("s1", question())
        .timeout(Duration::from_secs(60))
        .follow_up(
            FollowUp::default()
                .remind_after(Duration::from_millis(50))
                .escalate_after(Duration::from_millis(100), ["bob"]),
        )
        .submit()
        .unwrap();
    let kinds = |receiver: &Receiver| -> Vec<String> {
        receiver
            .received()
            .into_iter()
            .map(|post| post.kind)
            .collect()
    };
    let delivered = tokio::time::timeout(Duration::from_secs(2), async {
        while kinds(&receiver).len() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(delivered.is_ok(), "got {:?}", kinds(&receiver));
    assert_eq!(
        kinds(&receiver),
        ["question.asked", "question.reminded", "question.escalated"]
    );
    // The receiver took each; the outbox says so once each answer is recorded.
    let mut deliveries = Vec::new();
    let recorded = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            deliveries = store
                .deliveries(DeliveryQuery {
                    limit: 10,
                    ..DeliveryQuery::default()
                })
                .await
                .unwrap();
            if deliveries.len() == 3
                && deliveries
                    .iter()
                    .all(|delivery| delivery.state == DeliveryState::Delivered)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(recorded.is_ok(), "{deliveries:?}");
    drop(pending);
    shutdown.cancel();
}

#[tokio::test]
async fn a_slow_receiver_times_out_and_is_tried_again() {
    // The first post is answered well past the timeout; the second at once, with room
    // for a loaded machine (two test processes and a browser) to take its time.
    let receiver = Receiver::start(|number| match number {
        0 => (StatusCode::NO_CONTENT, Duration::from_millis(1500)),
        _ => (StatusCode::NO_CONTENT, Duration::ZERO),
    })
    .await;
    let shutdown = CancellationToken::new();
    let (store, _pending) = one_question_to(
        &receiver,
        |dispatcher| {
            dispatcher
                .with_retry(QUICK)
                .with_timeout(Duration::from_millis(400))
        },
        &shutdown,
    )
    .await;

    let delivery = settled(&store, Duration::from_secs(10)).await;
    assert_eq!(delivery.state, DeliveryState::Delivered);
    assert_eq!(delivery.attempts, 2);
    assert_eq!(receiver.received().len(), 2);
    shutdown.cancel();
}

#[tokio::test]
async fn a_receiver_failing_past_the_retry_window_is_abandoned() {
    let receiver = Receiver::start(|_| (StatusCode::INTERNAL_SERVER_ERROR, Duration::ZERO)).await;
    let shutdown = CancellationToken::new();
    let window = RetryPolicy {
        window: Duration::from_millis(300),
        ..QUICK
    };
    let (store, _pending) = one_question_to(
        &receiver,
        |dispatcher| dispatcher.with_retry(window),
        &shutdown,
    )
    .await;

    let delivery = settled(&store, Duration::from_secs(10)).await;
    assert_eq!(delivery.state, DeliveryState::Abandoned);
    // Tried until the window's end, the last attempt at its end.
    assert!(delivery.attempts >= 3, "{delivery:?}");
    let last = delivery.last_attempt.unwrap();
    assert!(last.at_ms >= delivery.created_at_ms + 300, "{last:?}");
    assert_eq!(last.status, Some(500));
    shutdown.cancel();
}

#[tokio::test]
async fn over_a_shared_store_each_event_is_one_message() {
    let receiver = Receiver::start(|_| (StatusCode::NO_CONTENT, Duration::ZERO)).await;
    let shutdown = CancellationToken::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut instances = Vec::new();
    for _ in 0..2 {
        let hub = RequestHub::builder()
            .bus(Bus::new())
            .store(Arc::clone(&store))
            .shared()
            .build()
            .await
            .unwrap();
        let dispatcher = Dispatcher::new(
            Arc::clone(&store),
            vec![Webhook::parse(&receiver.url).unwrap()],
            WebhookSecret::parse(SECRET).unwrap(),
        );
        instances.push(hub.with_notifier(dispatcher.notifier()));
        dispatcher.spawn(shutdown.clone());
    }
    // Asked on one instance, answered on the other.
    let pending = instances[0]
        .questions()
        .ask("s1", question())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let id = pending.id();
    let mut pending = pending;
    pending.recorded().await.unwrap();
    let request = pending.detach();
    instances[1].caught_up().await.unwrap();
    instances[1]
        .questions()
        .reply(id, vec![vec!["yes".to_owned()]])
        .unwrap()
        .await
        .unwrap();

    tokio::time::timeout(Duration::from_secs(10), async {
        while receiver.received().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("both messages arrive");
    // Two dispatchers claim from one outbox: still one post per message, and nothing else.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kinds: Vec<String> = receiver
        .received()
        .into_iter()
        .map(|post| post.kind)
        .collect();
    assert_eq!(
        kinds,
        ["question.asked", "question.replied"],
        "{}",
        request.id
    );
    shutdown.cancel();
}

#[tokio::test]
async fn the_deliveries_are_an_admin_s_to_read_a_page_at_a_time() {
    const ADMIN: &str = "admin-secret-for-the-webhook-tests";
    const ALICE: &str = "alice-secret-for-the-webhook-tests";
    const AGENT: &str = "agent-secret-for-the-webhook-tests";
    let receiver = Receiver::start(|_| (StatusCode::NO_CONTENT, Duration::ZERO)).await;
    let shutdown = CancellationToken::new();
    let (hub, store, stats) = hub_to(&receiver, |dispatcher| dispatcher, &shutdown).await;
    let config = HttpConfig {
        webhooks: Some(stats),
        tokens: vec![
            AccessToken::all_sessions(ADMIN),
            AccessToken::new(ALICE, Identity::new("alice", Role::Reviewer)),
            AccessToken::new(AGENT, Identity::new("agent-1", Role::Agent)),
        ],
        ..HttpConfig::default()
    };
    let app = TestApp::with_hub(hub, config);
    let mut kept = Vec::new();
    for session in ["s1", "s2", "s3"] {
        let mut pending = app
            .questions
            .ask(session, question())
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        pending.recorded().await.unwrap();
        kept.push(pending);
    }
    tokio::time::timeout(Duration::from_secs(10), async {
        while store.pending_deliveries().await.unwrap() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();

    for token in [AGENT, ALICE] {
        let (status, body) = app
            .call(request("GET", "/webhook/deliveries", token, None))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }
    let (status, _) = app
        .call(request(
            "GET",
            "/webhook/deliveries?before=que_1",
            ADMIN,
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Two a page, newest first, following the cursor: every message once.
    let mut seen = Vec::new();
    let mut uri = "/webhook/deliveries?limit=2".to_owned();
    loop {
        let (status, headers, body) = app
            .call_with_headers(request("GET", &uri, ADMIN, None))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for delivery in body.as_array().unwrap() {
            assert_eq!(delivery["state"], "delivered");
            assert_eq!(delivery["type"], "question.asked");
            seen.push(delivery["message_id"].as_str().unwrap().to_owned());
        }
        let Some(cursor) = headers.get("x-next-cursor") else {
            break;
        };
        uri = format!(
            "/webhook/deliveries?limit=2&before={}",
            cursor.to_str().unwrap()
        );
    }
    let mut newest_first = seen.clone();
    newest_first.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, newest_first);
    seen.dedup();
    assert_eq!(seen.len(), 3);

    let (_, pending) = app
        .call(request(
            "GET",
            "/webhook/deliveries?state=pending",
            ADMIN,
            None,
        ))
        .await;
    assert_eq!(pending, serde_json::json!([]));
    // The dispatcher's figures are in the metrics.
    let response = app
        .router
        .clone()
        .oneshot(request("GET", "/metrics", ADMIN, None))
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes();
    let response = String::from_utf8(response.to_vec()).unwrap();
    assert!(
        response.contains("askbus_webhook_deliveries_total{result=\"delivered\"} 3"),
        "{response}"
    );
    assert!(response.contains("askbus_webhook_pending 0"), "{response}");
    shutdown.cancel();
}

#[tokio::test]
async fn a_dead_receiver_holds_half_the_outbox_at_most_and_the_others_get_everything() {
    let dead = Receiver::start(|_| (StatusCode::SERVICE_UNAVAILABLE, Duration::ZERO)).await;
    let healthy = Receiver::start(|_| (StatusCode::NO_CONTENT, Duration::ZERO)).await;
    let shutdown = CancellationToken::new();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let hub = RequestHub::builder()
        .bus(Bus::new())
        .store(Arc::clone(&store))
        .build()
        .await
        .unwrap();
    let dead_target = Webhook::parse(&dead.url).unwrap();
    let dead_name = dead_target.name();
    let dispatcher = Dispatcher::new(
        Arc::clone(&store),
        vec![dead_target, Webhook::parse(&healthy.url).unwrap()],
        WebhookSecret::parse(SECRET).unwrap(),
    )
    // A failed delivery waits a minute: nothing leaves the dead target's share.
    .with_retry(RetryPolicy {
        first: Duration::from_secs(60),
        ..QUICK
    })
    .with_max_pending(10);
    let stats = dispatcher.stats();
    let hub = hub.with_notifier(dispatcher.notifier());
    dispatcher.spawn(shutdown.clone());
    // The ask itself is never refused: only messages are dropped.
    let ask = |session: String| {
        hub.questions()
            .ask(session, question())
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
    };
    let mut kept = vec![ask("s0".to_owned())];
    kept[0].recorded().await.unwrap();
    // The dead receiver fails once: it is failing now.
    watch_deliveries(&store, Duration::from_secs(10), |delivery| {
        (delivery.target == dead_name && delivery.attempts > 0).then_some(())
    })
    .await;
    for number in 1..7 {
        let mut pending = ask(format!("s{number}"));
        pending.recorded().await.unwrap();
        kept.push(pending);
    }

    tokio::time::timeout(Duration::from_secs(10), async {
        while healthy.received().len() < 7 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the healthy receiver gets every message");
    let pending_for_dead = store
        .deliveries(DeliveryQuery {
            state: Some(DeliveryState::Pending),
            limit: 100,
            ..DeliveryQuery::default()
        })
        .await
        .unwrap()
        .into_iter()
        .filter(|delivery| delivery.target == dead_name)
        .count();
    assert!(
        pending_for_dead <= 5,
        "{pending_for_dead} pending for the dead receiver"
    );
    assert!(stats.dropped() >= 2, "{} dropped", stats.dropped());
    assert_eq!(healthy.received().len(), 7);
    shutdown.cancel();
}

#[tokio::test]
async fn a_receiver_s_redirect_is_not_followed() {
    // The receiver points elsewhere (inside the network, say): the server must not post
    // its signed message there.
    let elsewhere = Receiver::start(|_| (StatusCode::NO_CONTENT, Duration::ZERO)).await;
    let location = elsewhere.url.clone();
    let redirecting = Router::new().route(
        "/hook",
        post(move || {
            let location = location.clone();
            async move { (StatusCode::TEMPORARY_REDIRECT, [("location", location)]) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, redirecting).await });
    let receiver = Receiver {
        url,
        received: Arc::default(),
    };
    let shutdown = CancellationToken::new();
    let (store, _pending) = one_question_to(
        &receiver,
        |dispatcher| dispatcher.with_retry(QUICK),
        &shutdown,
    )
    .await;

    let failed = watch_deliveries(&store, Duration::from_secs(10), |delivery| {
        delivery.last_attempt
    })
    .await;
    assert_eq!(failed.status, Some(307));
    assert!(
        matches!(failed.then, askbus_store::AfterAttempt::RetryAt { .. }),
        "{failed:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(elsewhere.received().is_empty(), "the redirect was followed");
    shutdown.cancel();
}

#[tokio::test]
async fn a_failed_connection_is_described_without_the_receiver_s_url() {
    // Nothing listens on this port; the URL's query holds the receiver's own secret.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let receiver = Receiver {
        url: format!("http://127.0.0.1:{port}/hook?token=receiver-secret"),
        received: Arc::default(),
    };
    let shutdown = CancellationToken::new();
    let (store, _pending) = one_question_to(
        &receiver,
        |dispatcher| dispatcher.with_retry(QUICK),
        &shutdown,
    )
    .await;
    let error = watch_deliveries(&store, Duration::from_secs(10), |delivery| {
        delivery.last_attempt?.error
    })
    .await;
    assert!(error.to_lowercase().contains("connect"), "{error}");
    assert!(!error.contains("receiver-secret"), "{error}");
    assert!(!error.contains("/hook"), "{error}");
    shutdown.cancel();
}
