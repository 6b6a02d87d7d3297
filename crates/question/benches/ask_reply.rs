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
//! figures measure the data structures, not a scheduler.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use askbus_bus::Bus;
use askbus_question::{Answer, QuestionInfo, QuestionOption, QuestionService};
use criterion::{Criterion, criterion_group, criterion_main};
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

fn ask_reply_cycle(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime");
    // Entering the runtime lets the service start its timer task, so every request carries
    // its default 600 s deadline exactly as in production.
    let _entered = runtime.enter();

    let mut group = c.benchmark_group("ask_reply_cycle");

    let questions = QuestionService::new(Bus::new());
    let mut subscriber = questions.bus().subscribe_all();
    let payload = two_questions();
    group.bench_function("askbus", |b| {
        b.iter(|| {
            let pending = questions
                .ask("session", payload.clone())
                .submit()
                .expect("valid questions");
            drop(
                questions
                    .reply(pending.id(), answers())
                    .expect("a valid reply"),
            );
            let answered = pending.now_or_never().expect("resolved by the reply");
            black_box(answered.expect("answers"));
            for _ in 0..2 {
                black_box(subscriber.next().now_or_never());
            }
        });
    });

    let (events, mut receiver) = broadcast::channel::<Arc<dyn std::any::Any + Send + Sync>>(1024);
    let mut map: HashMap<u128, oneshot::Sender<Vec<Answer>>> = HashMap::new();
    let mut next_id = 0_u128;
    group.bench_function("baseline", |b| {
        b.iter(|| {
            next_id += 1;
            let request = Arc::new(payload.clone());
            let (sender, outcome) = oneshot::channel();
            map.insert(next_id, sender);
            let _ = events.send(request);
            let sender = map.remove(&next_id).expect("just inserted");
            let reply = Arc::new(answers());
            let _ = sender.send(reply.to_vec());
            let _ = events.send(reply);
            black_box(outcome.now_or_never());
            for _ in 0..2 {
                black_box(receiver.try_recv().ok());
            }
        });
    });
    group.finish();
}

criterion_group!(benches, ask_reply_cycle);
criterion_main!(benches);
