//! Create throughput with quotas on and off, in the same run.
//!
//! One cycle: `submit` a one-question request (validation, the quota's check when on, id,
//! pending map, deadline index, `question.asked`), then drop its future (cancel: removal,
//! the quota's release when on, `question.cancelled`). Beside it 10,000 requests are
//! pending in 100 sessions, so the quota's counts are those of a busy server, and the
//! cycles rotate over those sessions.
//!
//! `quotas_off`: a hub without limits (nothing is counted). `quotas_on`: the server's
//! defaults (1,000 per session, 100,000 in total, and a per-account limit), each create
//! charged to an account as the server charges its token. The ratio of the two is the
//! cost of the quotas on the path every create takes.
//!
//! Each is measured in three rounds, alternately (`quotas_off/1`, `quotas_on/1`,
//! `quotas_off/2`, ...): this machine's speed drifts between minutes, and alternating
//! shifts both sides alike. Compare the medians of the rounds.

use std::hint::black_box;

use askbus_bus::Bus;
use askbus_question::{PendingLimits, PendingQuestion, QuestionService, RequestHub};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

mod support;

use support::database_question;

const SESSIONS: usize = 100;
const PENDING_PER_SESSION: usize = 100;
/// Measured rounds of each side, alternately.
const ROUNDS: usize = 3;

/// The questions of `hub`, with the background requests pending (kept by the caller).
fn with_background(hub: &RequestHub) -> (QuestionService, Vec<PendingQuestion>) {
    let questions = hub.questions().clone();
    let background = (0..SESSIONS * PENDING_PER_SESSION)
        .map(|index| {
            questions
                .ask(format!("session-{}", index % SESSIONS), database_question())
                .submit()
                .expect("room for the background")
        })
        .collect();
    (questions, background)
}

fn create_cycle(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime");
    // Every request carries its default deadline, as in production.
    let _entered = runtime.enter();
    let sessions: Vec<String> = (0..SESSIONS)
        .map(|index| format!("session-{index}"))
        .collect();
    let payload = database_question();

    let off = RequestHub::new(Bus::new());
    let on = RequestHub::new(Bus::new())
        .with_pending_limits(PendingLimits {
            per_account: 50_000,
            ..PendingLimits::default()
        })
        .for_account("token 1");
    let (off_questions, _off_background) = with_background(&off);
    let (on_questions, _on_background) = with_background(&on);

    let mut group = c.benchmark_group("create_cycle");
    let sides = [("quotas_off", &off_questions), ("quotas_on", &on_questions)];
    for (round, (name, questions)) in (1..=ROUNDS).flat_map(|round| sides.map(|side| (round, side)))
    {
        let mut next = 0;
        group.bench_function(BenchmarkId::new(name, round), |b| {
            b.iter(|| {
                next = (next + 1) % SESSIONS;
                let pending = questions
                    .ask(sessions[next].as_str(), payload.clone())
                    .submit()
                    .expect("room below the limits");
                black_box(pending.id());
            });
        });
    }
    group.finish();
}

criterion_group!(benches, create_cycle);
criterion_main!(benches);
