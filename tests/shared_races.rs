//! Races between instances sharing a store, checked by proptest: random programs of asks,
//! then replies, rejects, cancels, dropped askers and cancelled sessions fired at once from
//! three hubs over one shared store (each a task of its own on a multi-thread runtime),
//! while some asks time out. Whatever the interleaving, once everything settled:
//!
//! - at most one resolution per request was acknowledged, and the request ended that way
//!   (a reply acknowledged is the answer, with its answers);
//! - every instance, every instance's bus and the store agree on each request's outcome;
//! - each bus shows a request's `question.asked` once, then at most one terminal event;
//! - an asker that kept waiting got the outcome.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askbus::bus::Subscription;
use askbus::question::{
    AskError, DurableError, Outcome, OutcomeKind, PendingQuestion, QuestionId, ReplyError,
    RequestHub, Timeout,
};
use askbus_store::{MemoryStore, OutcomeState, Store};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::support::{answers, language, outcomes_in_stream, ready_envelopes, roomy_bus};

const INSTANCES: usize = 3;
const SESSIONS: usize = 2;

/// One question asked before the racing starts.
#[derive(Debug, Clone)]
struct Ask {
    instance: usize,
    session: usize,
    /// Times out after this many milliseconds, or never.
    timeout_ms: Option<u64>,
}

/// One racing operation; `request` indexes the asks (modulo their count).
#[derive(Debug, Clone)]
enum Op {
    Reply { instance: usize, request: usize },
    Reject { instance: usize, request: usize },
    Cancel { instance: usize, request: usize },
    DropAsker { request: usize },
    CancelSession { instance: usize, session: usize },
}

fn ask() -> impl Strategy<Value = Ask> {
    (
        0..INSTANCES,
        0..SESSIONS,
        proptest::option::weighted(0.3, 1..=40u64),
    )
        .prop_map(|(instance, session, timeout_ms)| Ask {
            instance,
            session,
            timeout_ms,
        })
}

fn op() -> impl Strategy<Value = Op> {
    let target = (0..INSTANCES, 0..8usize);
    prop_oneof![
        4 => target.clone().prop_map(|(instance, request)| Op::Reply { instance, request }),
        2 => target.clone().prop_map(|(instance, request)| Op::Reject { instance, request }),
        1 => target.prop_map(|(instance, request)| Op::Cancel { instance, request }),
        1 => (0..8usize).prop_map(|request| Op::DropAsker { request }),
        1 => (0..INSTANCES, 0..SESSIONS)
            .prop_map(|(instance, session)| Op::CancelSession { instance, session }),
    ]
}

/// What one racing operation got back.
#[derive(Debug, Clone, PartialEq)]
enum Answered {
    /// Acknowledged: the store took it. For a reply, with its answers.
    Taken(Option<Vec<Vec<String>>>),
    /// Refused: already resolved (here or by the store), or not known here yet.
    Refused,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn instances_sharing_a_store_agree_whatever_races(
        asks in proptest::collection::vec(ask(), 1..6),
        ops in proptest::collection::vec(op(), 0..16),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(run(asks, ops))?;
    }
}

async fn run(asks: Vec<Ask>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let store = MemoryStore::new();
    let mut hubs = Vec::new();
    let mut buses = Vec::new();
    for _ in 0..INSTANCES {
        let bus = roomy_bus();
        buses.push(bus.subscribe_all());
        let shared = Arc::new(store.clone()) as Arc<dyn Store>;
        let hub = RequestHub::builder()
            .bus(bus)
            .store(shared)
            .shared()
            .build()
            .await
            .unwrap();
        hubs.push(hub);
    }
    let mut ids = Vec::new();
    let mut askers = Vec::new();
    for ask in &asks {
        let timeout = ask.timeout_ms.map_or(Timeout::Never, |ms| {
            Timeout::After(Duration::from_millis(ms))
        });
        let session = format!("session-{}", ask.session);
        let pending = hubs[ask.instance]
            .questions()
            .ask(session, vec![language()])
            .timeout(timeout)
            .submit()
            .unwrap();
        ids.push(pending.id());
        askers.push(Some(pending));
    }
    let askers = Arc::new(Mutex::new(askers));

    // The race: every operation at once, each from its own task.
    let tasks: Vec<_> = ops
        .iter()
        .enumerate()
        .map(|(index, op)| {
            let (hubs, ids, askers) = (hubs.clone(), ids.clone(), Arc::clone(&askers));
            let op = op.clone();
            tokio::spawn(async move { race(index, op, &hubs, &ids, &askers).await })
        })
        .collect();
    let mut taken: BTreeMap<QuestionId, Vec<(Op, Answered)>> = BTreeMap::new();
    for (task, op) in tasks.into_iter().zip(&ops) {
        if let Some((id, answered)) = task.await.unwrap() {
            taken.entry(id).or_default().push((op.clone(), answered));
        }
    }

    // Settle: every timeout is due, every instance applied every change.
    tokio::time::sleep(Duration::from_millis(100)).await;
    for hub in &hubs {
        hub.caught_up().await.unwrap();
    }

    let streams: Vec<_> = buses
        .iter_mut()
        .map(|bus: &mut Subscription| outcomes_in_stream(&ready_envelopes(bus)))
        .collect();
    let askers = std::mem::take(&mut *askers.lock().unwrap());
    for ((ask, &id), asker) in asks.iter().zip(&ids).zip(askers) {
        let outcome = hubs[0].questions().get(id).unwrap().outcome;
        let kind = outcome.as_ref().map(Outcome::kind);
        for hub in &hubs[1..] {
            let elsewhere = hub.questions().get(id).unwrap().outcome;
            prop_assert_eq!(
                elsewhere.as_ref(),
                outcome.as_ref(),
                "{} on another instance",
                id
            );
        }
        for stream in &streams {
            prop_assert_eq!(stream.get(&id), Some(&kind), "{} on a bus", id);
        }
        let stored = store.get(&id.to_string()).await.unwrap().unwrap();
        let stored = stored.outcome.map(|outcome| outcome.state);
        prop_assert_eq!(stored.map(state_kind), kind, "{} in the store", id);

        let acknowledged: Vec<_> = taken
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|(_, answered)| *answered != Answered::Refused)
            .collect();
        prop_assert!(acknowledged.len() <= 1, "{}: {:?}", id, acknowledged);
        match acknowledged.first() {
            Some((Op::Reply { .. }, Answered::Taken(Some(given)))) => {
                prop_assert_eq!(&outcome, &Some(Outcome::Replied(given.clone().into())));
            }
            Some((Op::Reject { .. }, _)) => {
                prop_assert_eq!(kind, Some(OutcomeKind::Rejected));
            }
            Some((Op::Cancel { .. }, _)) => prop_assert_eq!(kind, Some(OutcomeKind::Cancelled)),
            Some(other) => prop_assert!(false, "unexpected acknowledgement {:?}", other),
            None => {
                // Nothing acknowledged: it ended on its own, was cancelled, or still waits.
                prop_assert!(
                    matches!(
                        kind,
                        None | Some(OutcomeKind::Cancelled | OutcomeKind::TimedOut)
                    ),
                    "{} ended {:?} without an acknowledged answer",
                    id,
                    kind
                );
                if kind == Some(OutcomeKind::TimedOut) {
                    prop_assert!(ask.timeout_ms.is_some(), "{} timed out with no timeout", id);
                }
            }
        }
        if let Some(asker) = asker {
            let got = if kind.is_some() {
                tokio::time::timeout(Duration::from_secs(5), asker)
                    .await
                    .ok()
            } else {
                None
            };
            let expected = outcome.map(|outcome| match outcome {
                Outcome::Replied(answers) => Ok(answers.to_vec()),
                Outcome::Rejected { reason } => Err(AskError::Rejected { reason }),
                Outcome::TimedOut => Err(AskError::TimedOut),
                Outcome::Defaulted(answers) => Err(AskError::DefaultApplied {
                    answers: answers.to_vec(),
                }),
                Outcome::Cancelled => Err(AskError::Cancelled),
            });
            prop_assert_eq!(got, expected, "{}: what its asker got", id);
        }
    }
    Ok(())
}

/// Runs one racing operation; for one aimed at a request, what it got back.
async fn race(
    index: usize,
    op: Op,
    hubs: &[RequestHub],
    ids: &[QuestionId],
    askers: &Mutex<Vec<Option<PendingQuestion>>>,
) -> Option<(QuestionId, Answered)> {
    let id = |request: usize| ids[request % ids.len()];
    let (id, attempt, given) = match op {
        Op::Reply { instance, request } => {
            let given = answers(&[&[&format!("answer of op {index}")]]);
            let attempt = hubs[instance].questions().reply(id(request), given.clone());
            (id(request), attempt, Some(given))
        }
        Op::Reject { instance, request } => {
            let attempt = hubs[instance].questions().reject(id(request), None);
            (id(request), attempt, None)
        }
        Op::Cancel { instance, request } => (
            id(request),
            hubs[instance].questions().cancel(id(request)),
            None,
        ),
        Op::DropAsker { request } => {
            let asker = askers.lock().unwrap()[request % ids.len()].take();
            drop(asker);
            return None;
        }
        Op::CancelSession { instance, session } => {
            hubs[instance].cancel_session(&format!("session-{session}"));
            return None;
        }
    };
    let answered = match attempt {
        Ok(durable) => match durable.await {
            Ok(()) => Answered::Taken(given),
            Err(DurableError::AlreadyResolved { .. }) => Answered::Refused,
            Err(DurableError::Store(error)) => panic!("the memory store failed: {error}"),
            Err(DurableError::NotCounted(why)) => panic!("no question takes votes: {why}"),
            Err(error @ DurableError::NotHere { .. }) => panic!("the store lost nothing: {error}"),
        },
        Err(ReplyError::AlreadyResolved { .. } | ReplyError::NotFound(_)) => Answered::Refused,
        Err(refused) => panic!("a valid answer was refused: {refused}"),
    };
    Some((id, answered))
}

fn state_kind(state: OutcomeState) -> OutcomeKind {
    match state {
        OutcomeState::Replied => OutcomeKind::Replied,
        OutcomeState::Rejected => OutcomeKind::Rejected,
        OutcomeState::TimedOut => OutcomeKind::TimedOut,
        OutcomeState::Cancelled => OutcomeKind::Cancelled,
    }
}
