//! One ask -> reply cycle, against the bare primitives it is built from, in the same run.
//!
//! `askbus` cycle: `submit` a 2-question request (id, validation, pending map, deadline
//! index, `question.asked` publish), `reply` (validation, removal, `question.replied`
//! publish, outcome delivery), take the answers from the future, and let one subscriber
//! drain both events.
//!
//! `baseline` cycle: the same work done with bare primitives and no bookkeeping: a oneshot
//! channel, a `HashMap` insert and remove, two `broadcast` sends of a shared payload, and
//! one receiver draining them.
//!
//! Both run synchronously on one thread (futures polled once with `now_or_never`), so the
//! figures measure the data structures, not a scheduler. After criterion's figures, the two
//! are timed again in alternating rounds and their ratio printed with the target (at most
//! 2x), for `cargo xtask bench`'s table; beside it, the same rounds time askbus remembering
//! 100 resolved requests instead of the default 10,000, which splits the ratio into cold
//! memory and the hub's work.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use askbus_bus::Bus;
use askbus_question::{Answer, QuestionConfig, QuestionInfo, QuestionOption, QuestionService};
use criterion::{Criterion, criterion_group};
use futures_util::{FutureExt, StreamExt};
use tokio::sync::{broadcast, oneshot};

fn two_questions() -> Vec<QuestionInfo> {
    vec![
        QuestionInfo::new(
            "Which database should the service use?",
            "Database",
            [
                QuestionOption::new("SQLite", "embedded, zero setup"),
                QuestionOption::new("Postgres", "a server, scales out"),
            ],
        ),
        QuestionInfo::new(
            "Which platforms should we ship?",
            "Platforms",
            [
                QuestionOption::new("Linux", "x86_64 and arm64"),
                QuestionOption::new("macOS", "universal binary"),
            ],
        )
        .multiple(),
    ]
}

fn answers() -> Vec<Answer> {
    vec![vec!["SQLite".into()], vec!["Linux".into(), "macOS".into()]]
}

/// The askbus side: a service with a timer (requests carry their default deadline, as in
/// production) and one subscriber draining every event.
struct Askbus {
    questions: QuestionService,
    subscriber: askbus_bus::Subscription,
    payload: Vec<QuestionInfo>,
}

impl Askbus {
    /// As configured by default: the newest 10,000 resolved requests remembered.
    fn new() -> Self {
        Self::remembering(QuestionConfig::default().retain_resolved)
    }

    /// Remembering the newest `retain_resolved` resolved requests: each cycle forgets the
    /// oldest, which the default leaves cold in memory by the time it goes.
    fn remembering(retain_resolved: usize) -> Self {
        let questions = QuestionService::with_config(
            Bus::new(),
            QuestionConfig {
                retain_resolved,
                ..QuestionConfig::default()
            },
        );
        let subscriber = questions.bus().subscribe_all();
        Self {
            questions,
            subscriber,
            payload: two_questions(),
        }
    }

    fn cycle(&mut self) {
        let pending = self
            .questions
            .ask("session", self.payload.clone())
            .submit()
            .expect("valid questions");
        drop(
            self.questions
                .reply(pending.id(), answers())
                .expect("a valid reply"),
        );
        let answered = pending.now_or_never().expect("resolved by the reply");
        black_box(answered.expect("answers"));
        for _ in 0..2 {
            black_box(self.subscriber.next().now_or_never());
        }
    }
}

/// The baseline side: a oneshot, a map, a broadcast channel and its one receiver.
struct Baseline {
    events: broadcast::Sender<Arc<dyn std::any::Any + Send + Sync>>,
    receiver: broadcast::Receiver<Arc<dyn std::any::Any + Send + Sync>>,
    map: HashMap<u128, oneshot::Sender<Vec<Answer>>>,
    next_id: u128,
    payload: Vec<QuestionInfo>,
}

impl Baseline {
    fn new() -> Self {
        let (events, receiver) = broadcast::channel(1024);
        Self {
            events,
            receiver,
            map: HashMap::new(),
            next_id: 0,
            payload: two_questions(),
        }
    }

    fn cycle(&mut self) {
        self.next_id += 1;
        let request = Arc::new(self.payload.clone());
        let (sender, outcome) = oneshot::channel();
        self.map.insert(self.next_id, sender);
        let _ = self.events.send(request);
        let sender = self.map.remove(&self.next_id).expect("just inserted");
        let reply = Arc::new(answers());
        let _ = sender.send(reply.to_vec());
        let _ = self.events.send(reply);
        black_box(outcome.now_or_never());
        for _ in 0..2 {
            black_box(self.receiver.try_recv().ok());
        }
    }
}

fn ask_reply_cycle(c: &mut Criterion) {
    let runtime = current_thread();
    // Entering the runtime lets the service start its timer task, so every request carries
    // its default 600 s deadline exactly as in production.
    let _entered = runtime.enter();

    let mut group = c.benchmark_group("ask_reply_cycle");
    let mut askbus = Askbus::new();
    group.bench_function("askbus", |b| b.iter(|| askbus.cycle()));
    let mut baseline = Baseline::new();
    group.bench_function("baseline", |b| b.iter(|| baseline.cycle()));
    group.finish();
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
}

/// The target: an askbus cycle costs at most twice the baseline's.
const TARGET_RATIO: f64 = 2.0;

/// How many resolved requests the second askbus side remembers: few enough to stay warm.
const FEW_REMEMBERED: usize = 100;

/// The verdict `cargo xtask bench` gathers (the format of `askbus_loadtest::Target`, which
/// this crate cannot depend on): askbus and the baseline timed in alternating rounds of the
/// same length, judged on the median of the rounds' ratios, as the load benches do.
///
/// Beside the verdict, the same rounds time askbus remembering only [`FEW_REMEMBERED`]
/// resolved requests: the difference is what forgetting a cold request costs a cycle
/// (cache misses, not instructions; the two run the same code), so the figure says how
/// much of the ratio is the default memory of 10,000 and how much the hub's work.
#[allow(clippy::print_stdout, reason = "a benchmark's figures are its output")]
fn same_run_ratio(full_run: bool) {
    let (rounds, cycles) = if full_run { (15, 20_000) } else { (1, 100) };
    let runtime = current_thread();
    let _entered = runtime.enter();
    let (mut askbus, mut baseline) = (Askbus::new(), Baseline::new());
    let mut warm = Askbus::remembering(FEW_REMEMBERED);
    let time = |cycle: &mut dyn FnMut()| {
        let started = Instant::now();
        for _ in 0..cycles {
            cycle();
        }
        started.elapsed().as_secs_f64() * 1e9 / f64::from(cycles)
    };
    let rounds: Vec<Round> = (0..rounds)
        .map(|_| Round {
            askbus_ns: time(&mut || askbus.cycle()),
            baseline_ns: time(&mut || baseline.cycle()),
            warm_ns: time(&mut || warm.cycle()),
        })
        .collect();
    let median_by = |ratio: fn(&Round) -> f64| {
        let mut sorted = rounds.clone();
        sorted.sort_by(|a, b| ratio(a).total_cmp(&ratio(b)));
        sorted[sorted.len() / 2]
    };
    let Round {
        askbus_ns,
        baseline_ns,
        ..
    } = median_by(|round| round.askbus_ns / round.baseline_ns);
    let ratio = askbus_ns / baseline_ns;
    println!(
        "TARGET | in-process ask -> reply, one subscriber | baseline oneshot + map + broadcast \
         {baseline_ns:.0} ns | askbus {askbus_ns:.0} ns | ratio {ratio:.2}x | target <= \
         {TARGET_RATIO}x | {}",
        if ratio <= TARGET_RATIO {
            "met"
        } else {
            "MISSED"
        }
    );
    let warm = median_by(|round| round.warm_ns / round.baseline_ns);
    println!(
        "  the same rounds, askbus remembering {FEW_REMEMBERED} resolved requests instead of \
         {}: {:.0} ns, ratio {:.2}x",
        QuestionConfig::default().retain_resolved,
        warm.warm_ns,
        warm.warm_ns / warm.baseline_ns,
    );
}

/// One round of [`same_run_ratio`]: nanoseconds a cycle of each side.
#[derive(Debug, Clone, Copy)]
struct Round {
    askbus_ns: f64,
    baseline_ns: f64,
    warm_ns: f64,
}

criterion_group!(benches, ask_reply_cycle);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    same_run_ratio(std::env::args().any(|argument| argument == "--bench"));
}
