//! Caps on pending requests (`PendingLimits`) through the library: per session, per account
//! and in total, both kinds together; joins never refused; slots freed by every outcome;
//! counts restored from a store and followed from a shared one; and a race on a
//! multi-thread runtime that never passes a cap.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use askbus::bus::Bus;
use askbus::question::{
    Action, ApprovalReply, Decision, FollowUp, MAX_ESCALATE_TO, MAX_ID_BYTES, PendingLimits,
    PendingQuestion, QuotaExceeded, RequestHub, SubmitError, Timeout, ToolRef,
};
use askbus_store::{MemoryStore, RequestKind, Store};
use serde_json::json;

use crate::support::{answers, language, ready_envelopes, roomy_bus, settle, targets};

/// A hub on a roomy bus with `limits`.
fn hub(limits: PendingLimits) -> RequestHub {
    RequestHub::new(roomy_bus()).with_pending_limits(limits)
}

/// At most `per_session` pending per session, and no other limit.
fn per_session(per_session: usize) -> PendingLimits {
    PendingLimits {
        per_session,
        per_account: usize::MAX,
        total: usize::MAX,
        bytes: usize::MAX,
        values_per_request: usize::MAX,
    }
}

/// A question of `session`, optionally from tool call `call`.
fn ask(
    hub: &RequestHub,
    session: &str,
    call: Option<&str>,
) -> Result<PendingQuestion, SubmitError> {
    let tool = call.map(|call| ToolRef {
        message_id: "m".to_owned(),
        call_id: call.to_owned(),
    });
    hub.questions()
        .ask(session, vec![language()])
        .tool(tool)
        .timeout(Timeout::Never)
        .submit()
}

/// The limit `refused` names, or a panic if it was not refused for quota.
#[track_caller]
fn exceeded<T>(refused: Result<T, SubmitError>) -> QuotaExceeded {
    match refused {
        Err(SubmitError::OverQuota(exceeded)) => exceeded,
        Err(refused) => panic!("refused, not for quota: {refused}"),
        Ok(_) => panic!("accepted past the limit"),
    }
}

fn delete_rows() -> Vec<Action> {
    vec![Action::new("delete_rows", json!({"table": "users"}))]
}

#[tokio::test]
async fn a_session_at_its_limit_is_refused_and_nothing_changes() {
    let hub = hub(per_session(2));
    let mut events = hub.bus().subscribe_all();
    let _first = ask(&hub, "s1", None).unwrap();
    let _second = hub
        .approvals()
        .request("s1", delete_rows())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    assert_eq!(ready_envelopes(&mut events).len(), 2);

    let refused = exceeded(ask(&hub, "s1", None));
    assert_eq!(
        refused,
        QuotaExceeded::Session {
            session: "s1".into(),
            limit: 2
        }
    );
    let message = refused.to_string();
    assert!(
        message.contains("\"s1\"") && message.contains('2'),
        "{message}"
    );
    let refused_approval = hub
        .approvals()
        .request("s1", delete_rows())
        .timeout(Timeout::Never)
        .submit();
    assert!(matches!(
        exceeded(refused_approval),
        QuotaExceeded::Session { .. }
    ));
    assert!(ready_envelopes(&mut events).is_empty(), "nothing published");
    assert_eq!(hub.questions().pending_count(), 1);
    assert_eq!(hub.approvals().pending_count(), 1);
    // The session's question is `s1_1`, its approval `s1_2` (the kinds count together).
    assert!(
        hub.approvals().id_for_key("s1_3").is_none(),
        "the refused approval took no key"
    );
    // With room again (the question withdrawn), the next request takes that key.
    drop(_first);
    let next = hub
        .approvals()
        .request("s1", delete_rows())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    assert_eq!(&*next.request().approval_key, "s1_3");

    // Another session has room of its own.
    let _other = ask(&hub, "s2", None).unwrap();
}

#[tokio::test]
async fn the_total_counts_both_kinds_of_every_session() {
    let hub = hub(PendingLimits {
        total: 3,
        ..PendingLimits::default()
    });
    let _held = [ask(&hub, "a", None).unwrap(), ask(&hub, "b", None).unwrap()];
    let _approval = hub
        .approvals()
        .request("c", delete_rows())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    assert_eq!(
        exceeded(ask(&hub, "d", None)),
        QuotaExceeded::Total { limit: 3 }
    );
    let refused = hub
        .approvals()
        .request("d", delete_rows())
        .timeout(Timeout::Never)
        .submit();
    assert_eq!(exceeded(refused), QuotaExceeded::Total { limit: 3 });
}

#[tokio::test]
async fn an_account_at_its_limit_leaves_room_for_the_others() {
    let hub = hub(PendingLimits {
        per_account: 2,
        ..PendingLimits::default()
    });
    let agent = hub.for_account("token 1");
    let _held = [
        ask(&agent, "s1", None).unwrap(),
        ask(&agent, "s2", None).unwrap(),
    ];
    let refused = exceeded(ask(&agent, "s3", None));
    assert_eq!(
        refused,
        QuotaExceeded::Account {
            account: "token 1".into(),
            limit: 2
        }
    );
    assert!(refused.to_string().contains("token 1"), "{refused}");
    let refused = agent
        .approvals()
        .request("s3", delete_rows())
        .timeout(Timeout::Never)
        .submit();
    assert!(matches!(exceeded(refused), QuotaExceeded::Account { .. }));

    // Another account, and the hub itself, still have room.
    let _other = ask(&hub.for_account("token 2"), "s3", None).unwrap();
    let _own = ask(&hub, "s3", None).unwrap();
}

#[tokio::test]
async fn a_retry_of_the_same_tool_call_joins_however_full_the_session_is() {
    let hub = hub(per_session(1));
    let first = ask(&hub, "s1", Some("call-1")).unwrap();
    let id = first.id();
    // Full: a new request is refused, but the same call joins the one it made.
    assert!(matches!(
        exceeded(ask(&hub, "s1", Some("call-2"))),
        QuotaExceeded::Session { .. }
    ));
    let joined = ask(&hub, "s1", Some("call-1")).unwrap();
    assert_eq!(joined.id(), id);
    // The same call asking something else is the call-id rule's, not the quota's.
    let other = hub
        .questions()
        .ask("s1", vec![targets()])
        .tool(ToolRef {
            message_id: "m".to_owned(),
            call_id: "call-1".to_owned(),
        })
        .timeout(Timeout::Never)
        .submit();
    assert!(
        matches!(other, Err(SubmitError::Invalid(ref invalid)) if invalid.conflicting_request().is_some()),
        "{other:?}"
    );

    // A join of an answered request gets its answer, and takes no slot either.
    hub.questions()
        .reply(id, answers(&[&["Rust"]]))
        .unwrap()
        .await
        .unwrap();
    let _next = ask(&hub, "s1", Some("call-2")).unwrap();
    let answered = ask(&hub, "s1", Some("call-1")).unwrap();
    assert_eq!(answered.await.unwrap(), answers(&[&["Rust"]]));
    drop((first, joined));
}

#[tokio::test(start_paused = true)]
async fn every_outcome_frees_its_slot() {
    let hub = hub(per_session(1));
    let full = |hub: &RequestHub| matches!(ask(hub, "s1", None), Err(SubmitError::OverQuota(_)));

    let replied = ask(&hub, "s1", None).unwrap();
    assert!(full(&hub));
    drop(
        hub.questions()
            .reply(replied.id(), answers(&[&["Go"]]))
            .unwrap(),
    );
    replied.await.unwrap();

    let rejected = ask(&hub, "s1", None).unwrap();
    assert!(full(&hub));
    drop(hub.questions().reject(rejected.id(), None).unwrap());
    drop(rejected);

    let dropped = ask(&hub, "s1", None).unwrap();
    assert!(full(&hub));
    drop(dropped);

    let cancelled = hub
        .approvals()
        .request("s1", delete_rows())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    assert!(full(&hub));
    assert_eq!(hub.cancel_session("s1"), 1);
    drop(cancelled);

    let approved = hub
        .approvals()
        .request("s1", delete_rows())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    assert!(full(&hub));
    drop(
        hub.approvals()
            .reply(approved.id(), ApprovalReply::new([Decision::Approve]))
            .unwrap(),
    );
    approved.await.unwrap();

    let timing_out = hub
        .questions()
        .ask("s1", vec![language()])
        .timeout(Duration::from_secs(5))
        .submit()
        .unwrap();
    assert!(full(&hub));
    tokio::time::sleep(Duration::from_secs(6)).await;
    settle().await;
    assert!(timing_out.await.is_err(), "timed out");

    assert!(ask(&hub, "s1", None).is_ok(), "every slot was freed");
}

#[tokio::test]
async fn without_limits_nothing_is_refused() {
    let hub = RequestHub::new(Bus::new());
    let held: Vec<_> = (0..2_000).map(|_| ask(&hub, "s1", None).unwrap()).collect();
    assert_eq!(hub.questions().pending_count(), held.len());
}

#[tokio::test]
async fn limits_count_what_was_pending_before_them_and_can_change() {
    let hub = RequestHub::new(roomy_bus());
    let _held = [
        ask(&hub, "s1", None).unwrap(),
        ask(&hub, "s1", None).unwrap(),
    ];
    let hub = hub.with_pending_limits(per_session(2));
    assert!(matches!(
        exceeded(ask(&hub, "s1", None)),
        QuotaExceeded::Session { limit: 2, .. }
    ));
    let hub = hub.with_pending_limits(per_session(3));
    let _third = ask(&hub, "s1", None).unwrap();
    assert!(matches!(
        exceeded(ask(&hub, "s1", None)),
        QuotaExceeded::Session { limit: 3, .. }
    ));
}

#[tokio::test]
async fn requests_restored_from_the_store_count_and_a_refusal_writes_nothing() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let open = || {
        RequestHub::builder()
            .bus(roomy_bus())
            .store(Arc::clone(&store))
            .build()
    };
    let before = open().await.unwrap();
    for _ in 0..2 {
        let mut pending = ask(&before, "s1", None).unwrap();
        pending.recorded().await.unwrap();
        drop(pending.detach());
    }
    drop(before);

    let hub = open().await.unwrap().with_pending_limits(per_session(2));
    assert_eq!(hub.questions().pending_count(), 2, "restored");
    assert!(matches!(
        exceeded(ask(&hub, "s1", None)),
        QuotaExceeded::Session { .. }
    ));
    let stored = store.requests(RequestKind::Question, 10).await.unwrap();
    assert_eq!(
        stored.pending.len(),
        2,
        "the refused request was not written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_instances_requests_count_here_but_are_never_refused() {
    let store = MemoryStore::new();
    let instance = || {
        RequestHub::builder()
            .bus(roomy_bus())
            .store(Arc::new(store.clone()))
            .shared()
            .build()
    };
    let a = instance().await.unwrap();
    let b = instance()
        .await
        .unwrap()
        .with_pending_limits(per_session(1));
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut pending = ask(&a, "s1", None).unwrap();
        pending.recorded().await.unwrap();
        held.push(pending);
    }
    b.caught_up().await.unwrap();
    assert_eq!(
        b.questions().pending_count(),
        2,
        "B knows both, past its limit"
    );
    assert!(matches!(
        exceeded(ask(&b, "s1", None)),
        QuotaExceeded::Session { .. }
    ));

    // Once A's askers are gone (their requests cancelled), B has room again.
    drop(held);
    a.caught_up().await.unwrap();
    for _ in 0..100 {
        b.caught_up().await.unwrap();
        if b.questions().pending_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(ask(&b, "s1", None).is_ok());
}

/// Many tasks on several threads create at once, of both kinds, while others cancel whole
/// sessions: what is pending never passes a limit, and once everything ended the full
/// quota is free again (no slot was lost or counted twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_and_cancels_never_pass_a_limit() {
    const TOTAL: usize = 150;
    const PER_SESSION: usize = 40;
    const SESSIONS: usize = 5;
    let hub = hub(PendingLimits {
        per_session: PER_SESSION,
        total: TOTAL,
        ..per_session(PER_SESSION)
    });
    // Five sessions of 40 could hold 200: the total stops them at exactly 150.
    assert_eq!(race(&hub, 16, 60, false).await, TOTAL);
    check_within_limits(&hub, TOTAL, PER_SESSION, SESSIONS);

    // Now with cancels racing the creates.
    race(&hub, 16, 60, true).await;
    check_within_limits(&hub, TOTAL, PER_SESSION, SESSIONS);
    for session in 0..SESSIONS {
        hub.cancel_session(&format!("s{session}"));
    }
    assert_eq!(
        race(&hub, 16, 60, false).await,
        TOTAL,
        "every slot is free again"
    );
}

/// `tasks` tasks each try `attempts` creates (questions and approvals in turn) in one of
/// five sessions, at once; with `cancelling`, as many more cancel those sessions meanwhile.
/// Returns how many creates were accepted.
async fn race(hub: &RequestHub, tasks: usize, attempts: usize, cancelling: bool) -> usize {
    let accepted = Arc::new(AtomicUsize::new(0));
    let contenders = if cancelling { 2 * tasks } else { tasks };
    let barrier = Arc::new(tokio::sync::Barrier::new(contenders));
    let mut handles = Vec::new();
    for task in 0..contenders {
        let (hub, accepted, barrier) = (hub.clone(), Arc::clone(&accepted), Arc::clone(&barrier));
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            let session = format!("s{}", task % 5);
            for attempt in 0..attempts {
                if task >= tasks {
                    hub.cancel_session(&session);
                } else {
                    let made = if attempt % 2 == 0 {
                        ask(&hub, &session, None).map(|pending| drop(pending.detach()))
                    } else {
                        hub.approvals()
                            .request(session.as_str(), delete_rows())
                            .timeout(Timeout::Never)
                            .submit()
                            .map(|pending| drop(pending.detach()))
                    };
                    match made {
                        Ok(()) => {
                            accepted.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(SubmitError::OverQuota(_)) => {}
                        Err(refused) => panic!("{refused}"),
                    }
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    accepted.load(Ordering::SeqCst)
}

/// What `hub` holds is within the limits.
#[track_caller]
fn check_within_limits(hub: &RequestHub, total: usize, per_session: usize, sessions: usize) {
    let pending = hub.questions().pending_count() + hub.approvals().pending_count();
    assert!(pending <= total, "{pending} pending");
    for session in 0..sessions {
        let session = format!("s{session}");
        let held =
            hub.questions().list(Some(&session)).len() + hub.approvals().list(Some(&session)).len();
        assert!(held <= per_session, "{session} holds {held}");
    }
}

/// An approval whose arguments hold `values` JSON values (an array of empty objects, the
/// heaviest shape per byte).
fn heavy(values: usize) -> Vec<Action> {
    let args = json!({"rows": vec![json!({}); values]});
    vec![Action::new("insert_rows", args)]
}

#[tokio::test]
async fn requests_are_capped_by_what_they_weigh_not_only_by_count() {
    // Room for a few heavy requests, and as many light ones as the count allows.
    let limits = PendingLimits {
        bytes: 1024 * 1024,
        ..per_session(usize::MAX)
    };
    let hub = hub(limits);
    let mut pending = Vec::new();
    let refused = loop {
        match hub
            .approvals()
            .request("s1", heavy(1_500))
            .timeout(Timeout::Never)
            .submit()
        {
            Ok(request) => pending.push(request),
            Err(refused) => break refused,
        }
        assert!(pending.len() < 100, "never refused");
    };
    assert_eq!(
        exceeded(Err::<(), _>(refused)),
        QuotaExceeded::Bytes { limit: 1024 * 1024 }
    );
    assert!(
        (2..20).contains(&pending.len()),
        "{} admitted",
        pending.len()
    );
    // Ending one frees its weight.
    drop(pending.pop());
    settle().await;
    assert!(
        hub.approvals()
            .request("s1", heavy(1_500))
            .timeout(Timeout::Never)
            .submit()
            .is_ok(),
        "the weight of an ended request is free again"
    );
}

#[tokio::test]
async fn one_request_may_hold_only_so_many_json_values() {
    let hub = hub(PendingLimits {
        values_per_request: 1_000,
        ..per_session(usize::MAX)
    });
    let mut events = hub.bus().subscribe_all();
    let refused = hub
        .approvals()
        .request("s1", heavy(1_000))
        .timeout(Timeout::Never)
        .submit();
    let Err(SubmitError::Invalid(invalid)) = refused else {
        panic!("a request of 1,000 empty objects is refused as invalid");
    };
    assert!(invalid.to_string().contains("JSON values"), "{invalid}");
    assert!(ready_envelopes(&mut events).is_empty(), "nothing was asked");
    assert_eq!(hub.approvals().pending_count(), 0);
    assert!(
        hub.approvals()
            .request("s1", heavy(400))
            .timeout(Timeout::Never)
            .submit()
            .is_ok()
    );
}

/// What the quota does not weigh is bounded by rule, on every kind: an id the asker gives
/// (a session's, a tool call's, a message's, a decider's to escalate to) is at most
/// `MAX_ID_BYTES` long, and a request escalates to at most `MAX_ESCALATE_TO` deciders,
/// each once. Nothing refused is asked.
#[tokio::test]
async fn ids_and_escalations_a_request_carries_are_bounded() {
    let hub = hub(per_session(usize::MAX));
    let mut events = hub.bus().subscribe_all();
    let long = "s".repeat(MAX_ID_BYTES + 1);
    let fits = "s".repeat(MAX_ID_BYTES);
    let invalid = |refused: Result<(), SubmitError>, names: &str| match refused {
        Err(SubmitError::Invalid(invalid)) => {
            let message = invalid.to_string();
            assert!(message.contains(names), "{message}");
        }
        other => panic!("refused as invalid, naming {names}: {other:?}"),
    };
    invalid(
        ask(&hub, &long, None).map(drop),
        "the session id is 257 bytes long",
    );
    invalid(
        ask(&hub, "s1", Some(&long)).map(drop),
        "the tool call's id (`callID`) is 257 bytes",
    );
    invalid(
        hub.approvals()
            .request(long.as_str(), heavy(1))
            .submit()
            .map(drop),
        "the session id is 257 bytes long",
    );
    invalid(
        hub.approvals()
            .request(
                "s1",
                vec![Action::new("insert_rows", json!({})).with_tool_use_id(long.clone())],
            )
            .submit()
            .map(drop),
        "a tool call's id (`tool_use_id`) is 257 bytes long",
    );
    let escalating = |names: Vec<String>| {
        hub.approvals()
            .request("s1", heavy(1))
            .timeout(Timeout::After(Duration::from_secs(60)))
            .follow_up(FollowUp::default().escalate_after(Duration::from_secs(30), names))
            .submit()
            .map(drop)
    };
    invalid(
        escalating(vec![long.clone()]),
        "a name in `escalate_to` is 257 bytes long",
    );
    invalid(
        escalating(
            (0..=MAX_ESCALATE_TO)
                .map(|n| format!("reviewer-{n}"))
                .collect(),
        ),
        "a request may escalate to at most 64",
    );
    invalid(
        escalating(vec!["bob".into(), "alice".into(), "bob".into()]),
        "`escalate_to` names \"bob\" twice",
    );
    assert!(ready_envelopes(&mut events).is_empty(), "nothing was asked");

    assert!(
        ask(&hub, &fits, Some(&fits)).is_ok(),
        "an id of 256 bytes fits"
    );
    assert!(
        escalating(
            (0..MAX_ESCALATE_TO)
                .map(|n| format!("reviewer-{n}"))
                .collect()
        )
        .is_ok(),
        "64 deciders fit"
    );
}

#[tokio::test]
async fn resolved_requests_are_forgotten_past_a_quarter_of_the_bytes() {
    let hub = hub(PendingLimits {
        bytes: 4 * 1024 * 1024,
        ..per_session(usize::MAX)
    });
    let mut ids = Vec::new();
    for _ in 0..40 {
        let request = hub
            .approvals()
            .request("s1", heavy(1_500))
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        ids.push(request.id());
        drop(hub.approvals().cancel(request.id()).unwrap());
        drop(request);
    }
    // Each weighs some 250 KB: a quarter of 4 MiB keeps the newest few, not all 40 (the
    // count would keep 10,000).
    let remembered = ids
        .iter()
        .filter(|id| hub.approvals().get(**id).is_some())
        .count();
    assert!((1..10).contains(&remembered), "{remembered} remembered");
    assert!(
        hub.approvals().get(*ids.last().unwrap()).is_some(),
        "the newest is kept"
    );
    assert!(
        hub.approvals().get(ids[0]).is_none(),
        "the oldest is forgotten"
    );
}
