//! Throughput of durable ask -> reply cycles: SQLite (group commit) against the in-memory
//! store and against no store at all, in the same run.
//!
//! A cycle is what a server does for one question: `submit` (recorded in the store, as
//! are its events), a
//! `reply` whose answer is acknowledged only once it is durable (the point where HTTP
//! answers 200), and the asker taking the answers. [`AGENTS`] agents run cycles at once on a
//! multi-thread runtime, as concurrent HTTP clients would; SQLite commits every write queued
//! while the previous commit ran in one transaction, so throughput grows with concurrency
//! instead of being capped by one fsync per answer.
//!
//! Criterion reports the time of [`CYCLES`] cycles and their throughput (cycles/s).

use std::sync::Arc;
use std::time::{Duration, Instant};

use askbus_bus::{Bus, BusConfig};
use askbus_question::{QuestionConfig, QuestionService};
use askbus_store::{MemoryStore, SqliteStore, Store};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

mod support;

use support::database_question;

/// Agents asking at once.
const AGENTS: usize = 64;
/// Cycles per measured iteration.
const CYCLES: usize = 2048;

/// Runs `CYCLES` durable cycles over `AGENTS` concurrent agents; returns the elapsed time.
async fn cycles(questions: &QuestionService) -> Duration {
    let started = Instant::now();
    let agents: Vec<_> = (0..AGENTS)
        .map(|_| {
            let questions = questions.clone();
            tokio::spawn(async move {
                for _ in 0..CYCLES / AGENTS {
                    let mut pending = questions
                        .ask("bench", database_question())
                        .submit()
                        .expect("valid questions");
                    pending.recorded().await.expect("the question is durable");
                    questions
                        .reply(pending.id(), vec![vec!["SQLite".into()]])
                        .expect("a valid reply")
                        .await
                        .expect("the answer is durable");
                    pending.await.expect("answered");
                }
            })
        })
        .collect();
    for agent in agents {
        agent.await.expect("the agent ran");
    }
    started.elapsed()
}

fn durable_cycles(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = QuestionConfig::default();
    // As the server does: the bus records its events in the same store.
    let with_store = |store: Arc<dyn Store>| {
        runtime
            .block_on(async {
                let bus =
                    askbus_store::resume_bus(BusConfig::default(), Arc::clone(&store)).await?;
                QuestionService::with_store(bus, config, store).await
            })
            .expect("the store opens")
    };
    let services = [
        ("no_store", QuestionService::with_config(Bus::new(), config)),
        ("memory_store", with_store(Arc::new(MemoryStore::new()))),
        (
            "sqlite_store",
            with_store(Arc::new(
                SqliteStore::open(dir.path().join("bench.db")).expect("the SQLite file opens"),
            )),
        ),
    ];

    let mut group = c.benchmark_group("durable_cycles");
    group.throughput(Throughput::Elements(CYCLES as u64));
    group.sample_size(20);
    for (name, questions) in &services {
        group.bench_function(*name, |b| {
            b.iter_custom(|iterations| {
                (0..iterations)
                    .map(|_| runtime.block_on(cycles(questions)))
                    .sum()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, durable_cycles);
criterion_main!(benches);
