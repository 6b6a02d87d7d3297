//! Races on a multi-thread runtime: many resolutions of one request at once, of which
//! exactly one wins and the event stream shows that one only.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use askbus::question::{AskError, OutcomeKind, QuestionId, QuestionService, ReplyError, Timeout};
use tokio::sync::Barrier;

use crate::support::{language, outcomes_in_stream, ready_envelopes, service};

/// A task that waits at `barrier`, then runs `resolve` against `service`.
fn contender<T: Send + 'static>(
    service: &QuestionService,
    barrier: &Arc<Barrier>,
    resolve: impl FnOnce(&QuestionService) -> T + Send + 'static,
) -> tokio::task::JoinHandle<T> {
    let service = service.clone();
    let barrier = Arc::clone(barrier);
    tokio::spawn(async move {
        barrier.wait().await;
        resolve(&service)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_replies_resolve_exactly_once() {
    const ITERATIONS: usize = 300;
    const REPLIERS: usize = 6;
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let mut winners: BTreeMap<QuestionId, usize> = BTreeMap::new();

    for _ in 0..ITERATIONS {
        let pending = service
            .ask("race", vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .expect("valid");
        let id = pending.id();
        let barrier = Arc::new(Barrier::new(REPLIERS));
        let repliers: Vec<_> = (0..REPLIERS)
            .map(|replier| {
                contender(&service, &barrier, move |service| {
                    service
                        .reply(id, vec![vec![format!("answer {replier}")]])
                        .map(drop)
                })
            })
            .collect();
        let mut results = Vec::new();
        for replier in repliers {
            results.push(replier.await.expect("replier ran"));
        }

        let won: Vec<usize> = (0..REPLIERS).filter(|&r| results[r].is_ok()).collect();
        assert_eq!(won.len(), 1, "exactly one reply wins: {results:?}");
        let winner = won[0];
        for (replier, result) in results.iter().enumerate() {
            if replier != winner {
                assert_eq!(
                    *result,
                    Err(ReplyError::AlreadyResolved {
                        id,
                        outcome: OutcomeKind::Replied
                    })
                );
            }
        }
        assert_eq!(
            pending.await,
            Ok(vec![vec![format!("answer {winner}")]]),
            "the asker gets the winning answer"
        );
        winners.insert(id, winner);
    }

    assert_eq!(service.pending_count(), 0);
    let envelopes = ready_envelopes(&mut subscription);
    let outcomes = outcomes_in_stream(&envelopes);
    assert_eq!(outcomes.len(), ITERATIONS);
    assert!(
        outcomes
            .values()
            .all(|outcome| *outcome == Some(OutcomeKind::Replied))
    );
    // The one `question.replied` of each request carries the winner's answer.
    for envelope in &envelopes {
        if let Some(replied) = envelope.downcast_ref::<askbus::question::QuestionReplied>() {
            let winner = winners[&replied.request_id];
            assert_eq!(*replied.answers, [vec![format!("answer {winner}")]]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_reject_cancel_drop_and_timeout_race_to_one_outcome() {
    const ITERATIONS: usize = 300;
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let mut outcomes_seen: BTreeMap<QuestionId, OutcomeKind> = BTreeMap::new();

    for iteration in 0..ITERATIONS {
        // Some requests may time out while the others race; some at once.
        let timeout = match iteration % 3 {
            0 => Timeout::Never,
            1 => Timeout::After(Duration::ZERO),
            _ => Timeout::After(Duration::from_millis(1)),
        };
        let session = format!("session-{iteration}");
        let pending = service
            .ask(session.as_str(), vec![language()])
            .timeout(timeout)
            .submit()
            .expect("valid");
        let id = pending.id();
        let barrier = Arc::new(Barrier::new(5));
        let reply = contender(&service, &barrier, move |service| {
            service.reply(id, vec![vec!["Rust".into()]]).map(drop)
        });
        let reject = contender(&service, &barrier, move |service| {
            service.reject(id, None).map(drop)
        });
        let cancel = contender(&service, &barrier, move |service| {
            service.cancel(id).map(drop)
        });
        let cancel_session = contender(&service, &barrier, move |service| {
            service.cancel_session(&session)
        });
        let drop_future = contender(&service, &barrier, move |_| drop(pending));

        let replied = reply.await.expect("ran");
        let rejected = reject.await.expect("ran");
        let cancelled = cancel.await.expect("ran");
        let session_cancelled = cancel_session.await.expect("ran");
        drop_future.await.expect("ran");

        // Every contender has run; the request has its outcome, timer or not.
        let outcome = service.wait(id).await.expect("remembered").kind();
        outcomes_seen.insert(id, outcome);
        let mut winners = 0;
        for (result, kind) in [
            (&replied, OutcomeKind::Replied),
            (&rejected, OutcomeKind::Rejected),
            (&cancelled, OutcomeKind::Cancelled),
        ] {
            match result {
                Ok(()) => {
                    winners += 1;
                    assert_eq!(outcome, kind);
                }
                Err(error) => assert_eq!(
                    *error,
                    ReplyError::AlreadyResolved { id, outcome },
                    "iteration {iteration}"
                ),
            }
        }
        assert!(session_cancelled <= 1);
        if session_cancelled == 1 {
            winners += 1;
            assert_eq!(outcome, OutcomeKind::Cancelled);
        }
        assert!(winners <= 1, "iteration {iteration}: {winners} winners");
        if winners == 0 {
            // Only the timer or the dropped future can have won.
            assert!(
                matches!(outcome, OutcomeKind::TimedOut | OutcomeKind::Cancelled),
                "iteration {iteration}: {outcome}"
            );
        }
        if matches!(timeout, Timeout::Never) {
            assert_ne!(outcome, OutcomeKind::TimedOut);
        }
    }

    assert_eq!(service.pending_count(), 0);
    let outcomes = outcomes_in_stream(&ready_envelopes(&mut subscription));
    let expected: BTreeMap<QuestionId, Option<OutcomeKind>> = outcomes_seen
        .into_iter()
        .map(|(id, kind)| (id, Some(kind)))
        .collect();
    assert_eq!(outcomes, expected, "the stream shows each winner, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_racing_the_asker_dropping_its_future_resolves_once() {
    const ITERATIONS: usize = 300;
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    for _ in 0..ITERATIONS {
        let asker = tokio::spawn({
            let service = service.clone();
            async move {
                tokio::time::timeout(
                    Duration::from_micros(50),
                    service.ask("s", vec![language()]).timeout(Timeout::Never),
                )
                .await
            }
        });
        // Wait for the question to appear, then answer it while the asker may give up.
        let id = loop {
            if let Some(request) = service.list(None).first() {
                break request.id;
            }
            if asker.is_finished() {
                break QuestionId::from_ulid(0u128.into());
            }
            tokio::task::yield_now().await;
        };
        let replied = service.reply(id, vec![vec!["Go".into()]]).map(drop);
        let asked = asker.await.expect("asker ran");
        match (&replied, &asked) {
            (Ok(()), Ok(answers)) => assert_eq!(*answers, Ok(vec![vec!["Go".to_owned()]])),
            // The asker gave up after the reply landed: the answer was still given once.
            (Ok(()), Err(_elapsed)) => {}
            (Err(error), Err(_elapsed)) => assert!(
                matches!(
                    error,
                    ReplyError::AlreadyResolved {
                        outcome: OutcomeKind::Cancelled,
                        ..
                    } | ReplyError::NotFound(_)
                ),
                "{error}"
            ),
            (Err(error), Ok(answers)) => panic!("reply failed ({error}) yet ask got {answers:?}"),
        }
        if let Ok(Err(error)) = &asked {
            assert_ne!(*error, AskError::TimedOut);
        }
        assert_eq!(service.pending_count(), 0, "no leak either way");
    }
    let outcomes = outcomes_in_stream(&ready_envelopes(&mut subscription));
    assert!(
        outcomes.values().all(Option::is_some),
        "every request ended"
    );
}
