//! A proptest state machine: random sequences of asks, replies, rejects, cancels, dropped
//! futures, cancelled sessions and time steps, checked after every step against a model.

use std::collections::BTreeSet;
use std::time::Duration;

use askbus::bus::Subscription;
use askbus::question::{
    AskError, OutcomeKind, PendingQuestion, QuestionId, QuestionService, ReplyError, Timeout,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::support::{
    QuestionEvent, language, poll_once, question_event, ready_envelopes, service,
};

const SESSIONS: usize = 3;
/// Request indices beyond the number asked stand for an id that was never issued.
const INDICES: usize = 12;

#[derive(Debug, Clone)]
enum Op {
    /// Ask in session `session`, timing out after `timeout_secs` (or never).
    Ask {
        session: usize,
        timeout_secs: Option<u64>,
    },
    Reply(usize),
    Reject(usize),
    Cancel(usize),
    /// Drop the asker's future (if it still holds one).
    DropFuture(usize),
    CancelSession(usize),
    /// Advance paused time by this many seconds.
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..SESSIONS, proptest::option::weighted(0.75, 1..=5u64))
            .prop_map(|(session, timeout_secs)| Op::Ask { session, timeout_secs }),
        2 => (0..INDICES).prop_map(Op::Reply),
        1 => (0..INDICES).prop_map(Op::Reject),
        1 => (0..INDICES).prop_map(Op::Cancel),
        1 => (0..INDICES).prop_map(Op::DropFuture),
        1 => (0..SESSIONS).prop_map(Op::CancelSession),
        2 => (0..=3u64).prop_map(Op::Advance),
    ]
}

/// One asked request: what the model says about it, and the asker's future.
struct Request {
    id: QuestionId,
    session: usize,
    /// Seconds since the start at which it times out.
    deadline: Option<u64>,
    /// The model's outcome; `None` while pending.
    outcome: Option<OutcomeKind>,
    /// The asker's future, until it is dropped or has yielded its outcome.
    future: Option<PendingQuestion>,
}

/// The model plus the system under test and what its event stream showed so far.
struct Harness {
    service: QuestionService,
    events: Subscription,
    requests: Vec<Request>,
    /// Seconds of paused time since the start.
    now: u64,
    /// Requests whose `question.asked` was seen.
    asked_seen: BTreeSet<QuestionId>,
    /// Requests whose terminal event was seen.
    terminal_seen: BTreeSet<QuestionId>,
}

fn session_name(session: usize) -> String {
    format!("session-{session}")
}

fn unknown_id() -> QuestionId {
    "que_7ZZZZZZZZZZZZZZZZZZZZZZZZZ".parse().expect("valid id")
}

impl Harness {
    fn new() -> Self {
        let service = service();
        let events = service.bus().subscribe_all();
        Self {
            service,
            events,
            requests: Vec::new(),
            now: 0,
            asked_seen: BTreeSet::new(),
            terminal_seen: BTreeSet::new(),
        }
    }

    fn id(&self, index: usize) -> QuestionId {
        self.requests
            .get(index)
            .map_or_else(unknown_id, |request| request.id)
    }

    /// What the model expects a reply, reject or cancel of `index` to return; records the
    /// outcome if it wins.
    fn expect_resolution(&mut self, index: usize, kind: OutcomeKind) -> Result<(), ReplyError> {
        let id = self.id(index);
        let Some(request) = self.requests.get_mut(index) else {
            return Err(ReplyError::NotFound(id));
        };
        match request.outcome {
            Some(outcome) => Err(ReplyError::AlreadyResolved { id, outcome }),
            None => {
                request.outcome = Some(kind);
                Ok(())
            }
        }
    }

    async fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Ask {
                session,
                timeout_secs,
            } => {
                let timeout = timeout_secs.map_or(Timeout::Never, |secs| {
                    Timeout::After(Duration::from_secs(secs))
                });
                let pending = self
                    .service
                    .ask(session_name(session), vec![language()])
                    .timeout(timeout)
                    .submit()
                    .map_err(|error| TestCaseError::fail(error.to_string()))?;
                if let Some(previous) = self.requests.last() {
                    prop_assert!(previous.id < pending.id(), "ids ascend");
                }
                self.requests.push(Request {
                    id: pending.id(),
                    session,
                    deadline: timeout_secs.map(|secs| self.now + secs),
                    outcome: None,
                    future: Some(pending),
                });
            }
            Op::Reply(index) => {
                let actual = self
                    .service
                    .reply(self.id(index), vec![vec!["Rust".into()]])
                    .map(drop);
                let expected = self.expect_resolution(index, OutcomeKind::Replied);
                prop_assert_eq!(actual, expected);
            }
            Op::Reject(index) => {
                let actual = self.service.reject(self.id(index), None).map(drop);
                let expected = self.expect_resolution(index, OutcomeKind::Rejected);
                prop_assert_eq!(actual, expected);
            }
            Op::Cancel(index) => {
                let actual = self.service.cancel(self.id(index)).map(drop);
                let expected = self.expect_resolution(index, OutcomeKind::Cancelled);
                prop_assert_eq!(actual, expected);
            }
            Op::DropFuture(index) => {
                if let Some(request) = self.requests.get_mut(index)
                    && let Some(future) = request.future.take()
                {
                    drop(future);
                    request.outcome.get_or_insert(OutcomeKind::Cancelled);
                }
            }
            Op::CancelSession(session) => {
                let cancelled = self.service.cancel_session(&session_name(session));
                let mut expected = 0;
                for request in &mut self.requests {
                    if request.session == session && request.outcome.is_none() {
                        request.outcome = Some(OutcomeKind::Cancelled);
                        expected += 1;
                    }
                }
                prop_assert_eq!(cancelled, expected);
            }
            Op::Advance(secs) => {
                tokio::time::advance(Duration::from_secs(secs)).await;
                self.now += secs;
                for request in &mut self.requests {
                    if request.outcome.is_none()
                        && request
                            .deadline
                            .is_some_and(|deadline| deadline <= self.now)
                    {
                        request.outcome = Some(OutcomeKind::TimedOut);
                    }
                }
                // Give the service's timer task its turn; bounded, so a timer that never
                // fires shows up as a mismatch below rather than a hang.
                let expected_pending = self.pending_ids().len();
                for _ in 0..64 {
                    if self.service.pending_count() == expected_pending {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
            }
        }
        Ok(())
    }

    fn pending_ids(&self) -> Vec<QuestionId> {
        self.requests
            .iter()
            .filter(|request| request.outcome.is_none())
            .map(|request| request.id)
            .collect()
    }

    /// Compares the service, its event stream and the askers' futures with the model.
    fn check(&mut self) -> Result<(), TestCaseError> {
        let expected_pending = self.pending_ids();
        let listed: Vec<QuestionId> = self
            .service
            .list(None)
            .iter()
            .map(|request| request.id)
            .collect();
        prop_assert_eq!(&listed, &expected_pending, "pending set at t={}", self.now);
        prop_assert_eq!(self.service.pending_count(), expected_pending.len());

        for envelope in ready_envelopes(&mut self.events) {
            match question_event(&envelope) {
                Some(QuestionEvent::Asked(id)) => {
                    prop_assert!(self.asked_seen.insert(id), "{} asked twice", id);
                }
                Some(QuestionEvent::Terminal(id, kind)) => {
                    prop_assert!(self.asked_seen.contains(&id), "{} ended before asked", id);
                    prop_assert!(self.terminal_seen.insert(id), "{} ended twice", id);
                    let model = self.requests.iter().find(|request| request.id == id);
                    prop_assert_eq!(model.and_then(|request| request.outcome), Some(kind));
                }
                None => prop_assert!(false, "an event that is not a question's"),
            }
        }
        prop_assert_eq!(self.asked_seen.len(), self.requests.len());
        let resolved = self.requests.len() - expected_pending.len();
        prop_assert_eq!(
            self.terminal_seen.len(),
            resolved,
            "one terminal event each"
        );

        for request in &mut self.requests {
            let Some(future) = request.future.as_mut() else {
                continue;
            };
            let polled = poll_once(future);
            match (request.outcome, polled) {
                (None, None) => {}
                (Some(kind), Some(result)) => {
                    let expected = match kind {
                        OutcomeKind::Replied => Ok(vec![vec!["Rust".to_owned()]]),
                        OutcomeKind::Rejected => Err(AskError::Rejected { reason: None }),
                        OutcomeKind::TimedOut => Err(AskError::TimedOut),
                        OutcomeKind::Cancelled => Err(AskError::Cancelled),
                    };
                    prop_assert_eq!(result, expected);
                    // A future that completed has nothing left to cancel when dropped.
                    request.future = None;
                }
                (outcome, polled) => {
                    prop_assert!(
                        false,
                        "{}: model {:?}, future {:?}",
                        request.id,
                        outcome,
                        polled
                    );
                }
            }
        }
        Ok(())
    }

    /// Cancels whatever is left, then checks that nothing is pending and every request
    /// ended with exactly one terminal event.
    fn finish(mut self) -> Result<(), TestCaseError> {
        for session in 0..SESSIONS {
            let cancelled = self.service.cancel_session(&session_name(session));
            let mut expected = 0;
            for request in &mut self.requests {
                if request.session == session && request.outcome.is_none() {
                    request.outcome = Some(OutcomeKind::Cancelled);
                    expected += 1;
                }
            }
            prop_assert_eq!(cancelled, expected);
        }
        for request in &mut self.requests {
            drop(request.future.take());
        }
        self.check()?;
        prop_assert_eq!(self.service.pending_count(), 0);
        prop_assert!(self.service.list(None).is_empty());
        prop_assert_eq!(self.terminal_seen.len(), self.requests.len());
        Ok(())
    }
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|error| TestCaseError::fail(error.to_string()))?;
    runtime.block_on(async {
        let mut harness = Harness::new();
        for op in ops {
            harness.apply(op).await?;
            harness.check()?;
        }
        harness.finish()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_service_matches_a_model_of_pending_requests(ops in proptest::collection::vec(op(), 1..48)) {
        run(&ops)?;
    }
}
