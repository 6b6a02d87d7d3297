//! `cargo bench --bench resume_load` (also run by `cargo xtask bench`): how long an agent
//! waiting over HTTP takes to resume once a human answers, against a plain round trip of
//! the same client, in the same run; see the `askbus_loadtest` crate docs for the policy.
//!
//! A cycle: a question is asked in process (and recorded), the agent's client times a
//! `GET /health` round trip (the yardstick: what one request costs on this machine now),
//! then sends `GET /question/{id}/wait`; once the wait is in, the human's client (another
//! connection) posts the reply. The figure is the time from sending the reply to the
//! agent's client holding the answer. Each store is measured in rounds, the memory store
//! and SQLite alternating (this machine's speed drifts between minutes), and judged on the
//! medians: resume / health round trip, target <= 3x (memory) and <= 5x (SQLite, which
//! answers the agent only once the answer is on disk).
//!
//! Correctness fails the run: every wait must answer `replied` with the answer sent, and
//! every reply `200`. Without `--bench` (under `cargo test --all-targets`) a smoke version
//! runs 20 cycles per store and measures nothing worth reading.

#![allow(clippy::print_stdout, reason = "a benchmark's figures are its output")]

use std::fmt;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use askbus_http::HttpConfig;
use askbus_loadtest::cpu::{CpuSample, CpuShare};
use askbus_loadtest::stats::{Latencies, median};
use askbus_loadtest::{Served, Target};
use askbus_question::{QuestionInfo, QuestionOption, RequestHub, Timeout};
use askbus_store::{MemoryStore, SqliteStore, Store};
use tokio_util::sync::CancellationToken;

/// The `askbus` binary's allocator, as in the other load benches.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The reply the human sends, answering [`question`].
const REPLY_BODY: &str = r#"{"answers":[["Yes"]]}"#;

/// How long the agent's wait may last (never reached: the reply comes within milliseconds).
const WAIT_SECONDS: u32 = 30;

/// How long after sending its wait the agent's request is taken to be in: the reply must
/// not overtake it, or the figure would be a read of a resolved question.
const WAIT_SETTLES: Duration = Duration::from_millis(2);

fn main() -> ExitCode {
    askbus_loadtest::memory_as_the_binary();
    let full_run = std::env::args().any(|argument| argument == "--bench");
    let (cycles, rounds) = if full_run { (400, 3) } else { (20, 1) };
    match run(cycles, rounds, full_run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("resume_load: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The stores measured, with their targets (resume / health round trip, at most).
const STORES: [(StoreKind, f64); 2] = [(StoreKind::Memory, 3.0), (StoreKind::Sqlite, 5.0)];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreKind {
    Memory,
    Sqlite,
}

impl StoreKind {
    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory store",
            Self::Sqlite => "SQLite",
        }
    }
}

/// One round of one store.
struct Round {
    /// The agent's `GET /health` round trips.
    health: Vec<Duration>,
    /// From sending the reply to the agent holding the answer.
    resume: Vec<Duration>,
    /// Processor use meanwhile.
    cpu: Option<CpuShare>,
}

fn run(cycles: usize, rounds: usize, full_run: bool) -> anyhow::Result<()> {
    println!(
        "resume_load, {} run: {cycles} cycles per round, {rounds} rounds per store, one \
         agent; the server, the agent and the human share the machine's cores",
        if full_run {
            "full"
        } else {
            "smoke (no --bench argument: correctness only, figures meaningless)"
        }
    );
    let server = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("server")
        .build()?;
    let directory = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("resume_load-{}", std::process::id()));
    std::fs::create_dir_all(&directory)?;
    let mut measured: Vec<(StoreKind, Vec<Round>)> =
        STORES.iter().map(|&(kind, _)| (kind, Vec::new())).collect();
    for round in 0..rounds {
        for (kind, results) in &mut measured {
            let database = directory.join(format!("round-{round}.db"));
            let result = server
                .block_on(resume_round(*kind, &database, cycles))
                .with_context(|| format!("{} round {}", kind.name(), round + 1))?;
            results.push(result);
        }
    }
    std::fs::remove_dir_all(&directory)?;
    server.shutdown_timeout(Duration::from_secs(1));
    for ((kind, results), (_, target)) in measured.iter().zip(STORES) {
        println!("{}", Figures::of(*kind, results, target));
    }
    Ok(())
}

/// A fresh server on `kind` of store; `cycles` cycles of ask, health, wait, reply.
async fn resume_round(
    kind: StoreKind,
    database: &std::path::Path,
    cycles: usize,
) -> anyhow::Result<Round> {
    let store: Arc<dyn Store> = match kind {
        StoreKind::Memory => Arc::new(MemoryStore::new()),
        StoreKind::Sqlite => Arc::new(SqliteStore::open(database)?),
    };
    // As the server opens its store: the bus resumes from (and records in) it too.
    let hub = RequestHub::builder().store(store).build().await?;
    let shutdown = CancellationToken::new();
    let router = askbus_http::router(hub.clone(), HttpConfig::default(), shutdown.clone());
    let served = Served::start(router, shutdown).await?;
    // Two clients: two connections, as an agent and a human's browser would be.
    let agent = reqwest::Client::builder().no_proxy().build()?;
    let human = reqwest::Client::builder().no_proxy().build()?;
    let mut round = Round {
        health: Vec::with_capacity(cycles),
        resume: Vec::with_capacity(cycles),
        cpu: None,
    };
    let cpu = CpuSample::now();
    for _ in 0..cycles {
        let mut asked = hub
            .questions()
            .ask("resume", vec![question()])
            .timeout(Timeout::Never)
            .submit()?;
        asked.recorded().await?;
        let id = asked.detach().id;

        let started = Instant::now();
        let health = agent.get(served.url("/health")).send().await?;
        health.error_for_status()?.bytes().await?;
        round.health.push(started.elapsed());

        let wait = tokio::spawn(
            agent
                .get(served.url(&format!("/question/{id}/wait?timeout={WAIT_SECONDS}")))
                .send(),
        );
        tokio::time::sleep(WAIT_SETTLES).await;
        let replied_at = Instant::now();
        let reply = human
            .post(served.url(&format!("/question/{id}/reply")))
            .header("content-type", "application/json")
            .body(REPLY_BODY)
            .send();
        let (reply, waited) = tokio::join!(reply, async {
            let response = wait.await??.error_for_status()?;
            let body: serde_json::Value = response.json().await?;
            anyhow::Ok((replied_at.elapsed(), body))
        });
        let (resumed, body) = waited?;
        let reply = reply?;
        if reply.status() != reqwest::StatusCode::OK {
            bail!("the reply to {id} answered {}", reply.status());
        }
        if body["status"] != "replied" || body["answers"] != serde_json::json!([["Yes"]]) {
            bail!("the agent's wait on {id} answered {body}");
        }
        round.resume.push(resumed);
    }
    round.cpu = cpu
        .zip(CpuSample::now())
        .and_then(|(from, to)| from.until(to));
    served.stop().await?;
    Ok(round)
}

/// One yes/no question.
fn question() -> QuestionInfo {
    QuestionInfo::new(
        "Go ahead?",
        "Proceed",
        [
            QuestionOption::new("Yes", "go ahead"),
            QuestionOption::new("No", "stop"),
        ],
    )
}

/// What one store's rounds came to.
struct Figures<'a> {
    kind: StoreKind,
    rounds: &'a [Round],
    target: f64,
}

impl<'a> Figures<'a> {
    fn of(kind: StoreKind, rounds: &'a [Round], target: f64) -> Self {
        Self {
            kind,
            rounds,
            target,
        }
    }
}

/// The median of `samples`, in seconds.
fn median_seconds(samples: &[Duration]) -> f64 {
    median(samples.iter().map(Duration::as_secs_f64).collect())
}

impl fmt::Display for Figures<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.kind.name();
        writeln!(f, "reply -> agent resumes over HTTP, {name}:")?;
        let mut ratios = Vec::new();
        for (number, round) in self.rounds.iter().enumerate() {
            let ratio = median_seconds(&round.resume) / median_seconds(&round.health);
            ratios.push(ratio);
            let show = |samples: &[Duration]| {
                Latencies::of(samples.to_vec())
                    .map_or_else(|| "no samples".to_owned(), |l| l.to_string())
            };
            writeln!(
                f,
                "  round {}: health round trip {}; resume {}; ratio {ratio:.2}x",
                number + 1,
                show(&round.health),
                show(&round.resume),
            )?;
            if let Some(cpu) = round.cpu {
                writeln!(f, "    meanwhile {cpu}")?;
            }
        }
        let all = |pick: fn(&Round) -> &Vec<Duration>| -> Vec<Duration> {
            self.rounds
                .iter()
                .flat_map(|round| pick(round).iter().copied())
                .collect()
        };
        let ratio = median(ratios);
        let resume = Latencies::of(all(|round| &round.resume));
        let target = Target {
            name: format!("reply -> agent resumes over HTTP, {name}"),
            baseline: format!(
                "GET /health round trip p50 {}",
                askbus_loadtest::stats::Millis(Duration::from_secs_f64(median_seconds(&all(
                    |round| &round.health
                ))))
            ),
            askbus: resume.map_or_else(|| "no samples".to_owned(), |l| l.to_string()),
            ratio,
            target: format!("<= {:.0}x", self.target),
            met: ratio <= self.target,
        };
        write!(f, "{target}")
    }
}
