//! `cargo bench --bench webhook_load` (also run by `cargo xtask bench`): what outbound
//! webhooks cost and carry, reported as figures.
//!
//! 1. **Reply → agent resumes, with and without webhooks.** askbus served on loopback over
//!    each store (memory, SQLite); the agent long-polls `GET /question/{id}/wait` on one
//!    connection, the human posts the reply on another, and the time from sending the reply
//!    to the agent's answer is measured, per cycle. The same server setup runs without
//!    webhooks and with three (to a local receiver answering 204), in alternating rounds:
//!    the target is that webhooks add no latency (the message is written with the
//!    change, in the same store step, and sent by the dispatcher after). The human answers
//!    20 ms after the ask, once the asked message went out, as a human (who takes seconds)
//!    would: what is measured is the answer's own path, message included.
//! 2. **Deliveries per second.** Messages enqueued in the store (three targets each) are
//!    delivered by the dispatcher (64 posts in flight) to the local receiver; the figure is
//!    deliveries per second from start to the last one (target >= 2,000/s). The bare
//!    baseline, in the same run: plain `reqwest` posts of the same bodies, 64 in flight, to
//!    the same receiver, with no store, no signing and no bookkeeping.
//!
//! Without `--bench` (under `cargo test --all-targets`) a smoke version runs a few cycles
//! and a few hundred deliveries, checks that every one happened, and measures nothing worth
//! reading.

#![allow(clippy::print_stdout, reason = "a benchmark's figures are its output")]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use askbus_bus::Bus;
use askbus_http::HttpConfig;
use askbus_loadtest::Served;
use askbus_loadtest::stats::{Latencies, Millis, median};
use askbus_loadtest::target::verdict;
use askbus_notify::{Dispatcher, Webhook, WebhookSecret};
use askbus_question::RequestHub;
use askbus_store::{MemoryStore, OutboxMessage, SqliteStore, Store, Write, now_ms};
use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use futures_util::StreamExt;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// The `askbus` binary's allocator, so the servers hosted here behave as it does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The secret deliveries are signed with.
const SECRET: &str = "whsec_C2FtcGxlLXNlY3JldC1mb3ItYXNrYnVzLXRlc3RzIQ==";

/// Targets from the issue; missing one is reported, not fatal.
const TARGET_DELIVERIES_PER_SECOND: f64 = 2_000.0;
const TARGET_WEBHOOK_COST: f64 = 1.10;

/// The posts in flight, for the dispatcher and the baseline alike.
const IN_FLIGHT: usize = 64;

/// How large a run is.
struct Plan {
    /// Reply → resume cycles per round and setup.
    cycles: usize,
    /// Alternating rounds (without, then with webhooks).
    rounds: usize,
    /// Messages enqueued for the throughput run (three deliveries each).
    messages: usize,
}

fn main() -> ExitCode {
    askbus_loadtest::memory_as_the_binary();
    let plan = if std::env::args().any(|argument| argument == "--bench") {
        Plan {
            cycles: 400,
            rounds: 3,
            messages: 10_000,
        }
    } else {
        Plan {
            cycles: 10,
            rounds: 1,
            messages: 100,
        }
    };
    let runtime = match Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("webhook_load: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&plan)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("webhook_load: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(plan: &Plan) -> anyhow::Result<()> {
    let receiver = Receiver::start().await?;
    let scratch = scratch_directory();
    std::fs::create_dir_all(&scratch)?;
    println!("webhook_load: reply -> agent resumes over HTTP, without and with 3 webhooks");
    for store in ["memory", "sqlite"] {
        let mut without = Vec::new();
        let mut with = Vec::new();
        for round in 0..plan.rounds {
            let bare = resume_round(plan, store, &scratch, None).await?;
            let hooked = resume_round(plan, store, &scratch, Some(&receiver)).await?;
            println!(
                "  {store} round {}: without {bare}; with {hooked}",
                round + 1
            );
            without.push(bare);
            with.push(hooked);
        }
        let p50 = |rounds: &[Latencies]| {
            median(
                rounds
                    .iter()
                    .map(|figures| figures.p50.as_secs_f64())
                    .collect(),
            )
        };
        let p99 = |rounds: &[Latencies]| {
            median(
                rounds
                    .iter()
                    .map(|figures| figures.p99.as_secs_f64())
                    .collect(),
            )
        };
        let cost = p50(&with) / p50(&without);
        println!(
            "  {store}: median p50 without {} with {} ({cost:.2}x, target <= {TARGET_WEBHOOK_COST:.2}x: {}); median p99 without {} with {}",
            Millis(Duration::from_secs_f64(p50(&without))),
            Millis(Duration::from_secs_f64(p50(&with))),
            verdict(cost <= TARGET_WEBHOOK_COST),
            Millis(Duration::from_secs_f64(p99(&without))),
            Millis(Duration::from_secs_f64(p99(&with))),
        );
    }
    println!(
        "webhook_load: {} deliveries ({} messages x 3 targets), {IN_FLIGHT} in flight",
        plan.messages * 3,
        plan.messages
    );
    let baseline = bare_posts(&receiver, plan.messages * 3).await?;
    println!("  bare reqwest posts: {baseline:.0}/s");
    for store in ["memory", "sqlite"] {
        let rate = delivery_rate(plan, store, &scratch, &receiver).await?;
        println!(
            "  {store}: {rate:.0} deliveries/s ({:.2}x the bare posts; target >= {TARGET_DELIVERIES_PER_SECOND:.0}/s: {})",
            rate / baseline,
            verdict(rate >= TARGET_DELIVERIES_PER_SECOND)
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// The local receiver: answers every post 204, and counts the baseline's.
struct Receiver {
    served: Served,
    /// Posts to `/bare`, the baseline's path.
    received: Arc<AtomicU64>,
}

impl Receiver {
    async fn start() -> anyhow::Result<Self> {
        let received = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&received);
        let router = Router::new()
            .route(
                "/bare",
                post(move || {
                    counted.fetch_add(1, Ordering::Relaxed);
                    std::future::ready(StatusCode::NO_CONTENT)
                }),
            )
            .route(
                "/{target}",
                post(|| std::future::ready(StatusCode::NO_CONTENT)),
            );
        let served = Served::start(router, CancellationToken::new()).await?;
        Ok(Self { served, received })
    }

    fn webhooks(&self) -> anyhow::Result<Vec<Webhook>> {
        ["one", "two", "three"]
            .iter()
            .map(|target| Ok(Webhook::parse(&self.served.url(&format!("/{target}")))?))
            .collect()
    }
}

/// A fresh store of `kind` under `scratch`.
fn open_store(kind: &str, scratch: &std::path::Path) -> anyhow::Result<Arc<dyn Store>> {
    Ok(match kind {
        "memory" => Arc::new(MemoryStore::new()),
        _ => {
            let path = scratch.join(format!("{}.db", ulid::Ulid::generate()));
            Arc::new(SqliteStore::open(&path)?)
        }
    })
}

/// One round of reply → resume cycles over a fresh server on `store`, delivering to
/// `receiver`'s three targets if given.
async fn resume_round(
    plan: &Plan,
    store: &str,
    scratch: &std::path::Path,
    receiver: Option<&Receiver>,
) -> anyhow::Result<Latencies> {
    let store = open_store(store, scratch)?;
    let shutdown = CancellationToken::new();
    let mut hub = RequestHub::builder()
        .bus(Bus::new())
        .store(Arc::clone(&store))
        .build()
        .await?;
    let mut config = HttpConfig::default();
    if let Some(receiver) = receiver {
        let dispatcher =
            Dispatcher::new(store, receiver.webhooks()?, WebhookSecret::parse(SECRET)?);
        config.webhooks = Some(dispatcher.stats());
        hub = hub.with_notifier(dispatcher.notifier());
        dispatcher.spawn(shutdown.clone());
    }
    let router = askbus_http::router(hub, config, shutdown.clone());
    let server = Served::start(router, shutdown.clone()).await?;
    let agent = reqwest::Client::new();
    let human = reqwest::Client::new();
    let question = serde_json::json!({
        "sessionID": "bench",
        "questions": [{"question": "Go?", "header": "Go", "options": [{"label": "yes", "description": ""}]}],
    });
    let mut samples = Vec::with_capacity(plan.cycles);
    for _ in 0..plan.cycles {
        let created: serde_json::Value = human
            .post(server.url("/question"))
            .json(&question)
            .send()
            .await?
            .json()
            .await?;
        let id = created["id"].as_str().context("a question id")?.to_owned();
        let wait = tokio::spawn({
            let (agent, url) = (agent.clone(), server.url(&format!("/question/{id}/wait")));
            async move {
                let answer = agent
                    .get(url)
                    .send()
                    .await?
                    .json::<serde_json::Value>()
                    .await?;
                anyhow::Ok((Instant::now(), answer))
            }
        });
        // The agent's long poll is parked, and the asked message delivered, before the
        // human answers (a human takes seconds; what is measured is the answer's path).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let sent = Instant::now();
        let replied = human
            .post(server.url(&format!("/question/{id}/reply")))
            .json(&serde_json::json!({"answers": [["yes"]]}))
            .send()
            .await?;
        ensure!(replied.status() == 200, "reply: {}", replied.status());
        let (resumed, answer) = wait.await??;
        ensure!(
            answer["status"] == "replied",
            "the agent resumed with {answer}"
        );
        samples.push(resumed.saturating_duration_since(sent));
    }
    server.stop().await?;
    Latencies::of(samples).context("no cycles")
}

/// Deliveries per second of a dispatcher working through `plan.messages` messages to
/// three targets each, queued in a fresh `store`.
async fn delivery_rate(
    plan: &Plan,
    store: &str,
    scratch: &std::path::Path,
    receiver: &Receiver,
) -> anyhow::Result<f64> {
    let store = open_store(store, scratch)?;
    let webhooks = receiver.webhooks()?;
    let targets: Vec<String> = webhooks.iter().map(Webhook::name).collect();
    let mut acks = Vec::with_capacity(plan.messages);
    for number in 0..plan.messages {
        acks.push(store.write(Write::Enqueue(OutboxMessage {
            id: format!("msg_{}", ulid::Ulid::generate()),
            targets: targets.clone(),
            payload: payload(number),
            created_at_ms: now_ms(),
        })));
    }
    for ack in acks {
        ack.await?;
    }
    let total = u64::try_from(plan.messages * 3)?;
    let shutdown = CancellationToken::new();
    let dispatcher = Dispatcher::new(Arc::clone(&store), webhooks, WebhookSecret::parse(SECRET)?)
        .with_concurrency(IN_FLIGHT);
    let stats = dispatcher.stats();
    let started = Instant::now();
    dispatcher.spawn(shutdown.clone());
    let deadline = started + Duration::from_secs(120);
    while stats.delivered() < total {
        if Instant::now() > deadline {
            bail!("{} of {total} delivered in 120 s", stats.delivered());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    shutdown.cancel();
    ensure!(
        store.pending_deliveries().await? == 0,
        "deliveries left pending"
    );
    ensure!(stats.failed_attempts() == 0, "failed attempts");
    Ok(total as f64 / elapsed.as_secs_f64())
}

/// Posts per second of plain `reqwest` posts of the same bodies, `IN_FLIGHT` at once.
async fn bare_posts(receiver: &Receiver, count: usize) -> anyhow::Result<f64> {
    let client = reqwest::Client::new();
    let url = receiver.served.url("/bare");
    let before = receiver.received.load(Ordering::Relaxed);
    let started = Instant::now();
    let statuses: Vec<_> = futures_util::stream::iter(0..count)
        .map(|number| {
            let request = client
                .post(&url)
                .header("content-type", "application/json")
                .body(payload(number));
            async move { request.send().await.map(|response| response.status()) }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let elapsed = started.elapsed();
    for status in statuses {
        ensure!(
            status? == StatusCode::NO_CONTENT,
            "the receiver refused a post"
        );
    }
    let received = receiver.received.load(Ordering::Relaxed) - before;
    ensure!(
        received == u64::try_from(count)?,
        "{received} of {count} posts received"
    );
    Ok(count as f64 / elapsed.as_secs_f64())
}

/// A message's payload, the size of a `question.replied` event's.
fn payload(number: usize) -> String {
    serde_json::json!({
        "type": "question.replied",
        "timestamp": "2026-11-25T12:00:00.000Z",
        "data": {
            "sessionID": "bench",
            "requestID": format!("que_{number:026}"),
            "answers": [["yes"]],
            "answeredBy": {"name": "local", "role": "admin"},
        },
    })
    .to_string()
}

fn scratch_directory() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("webhook_load-{}", std::process::id()))
}
