//! Several hubs over one shared store, as several server instances over one Redis: a
//! request asked through one is listed, answered and cancelled through the others, resolves
//! once whatever races for it, and every instance's bus tells the same story.
//!
//! Each check runs twice: over a `MemoryStore` shared by hubs in this process, and over the
//! real Redis on 127.0.0.1:6379 with a store (own connections, own writer and follower)
//! per instance.

use std::sync::Arc;
use std::time::Duration;

use askbus::bus::{Envelope, Subscription};
use askbus::question::{
    Action, ApprovalAsked, ApprovalReplied, ApprovalReply, AskError, Decision, DurableError,
    EditedAction, Outcome, OutcomeKind, PendingQuestion, QuestionId, ReplyError, RequestHub,
    RequestId, SessionPending, SessionRejected, Timeout, ToolRef,
};
use askbus_store::{
    BoxFuture, Change, ChangeLog, LogPosition, MemoryStore, SqliteStore, Store, StoreError,
    StoreLayer,
};
use futures_util::StreamExt;
use serde_json::json;

use crate::support::{
    PrivateRedis, QuestionEvent, TestRedis, answers, language, outcomes_in_stream, question_event,
    ready_envelopes, roomy_bus, until_ok,
};

/// How long a check waits for an event another instance must cause, before failing.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_asked_on_one_instance_is_answered_through_another() {
    check_answered_elsewhere(memory_stores()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_asked_on_one_instance_is_answered_through_another() {
    let redis = TestRedis::new().await;
    check_answered_elsewhere(redis_stores(&redis).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_concurrent_replies_through_every_instance_resolve_once() {
    check_concurrent_replies(memory_stores()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_concurrent_replies_through_every_instance_resolve_once() {
    let redis = TestRedis::new().await;
    check_concurrent_replies(redis_stores(&redis).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_dropping_the_ask_cancels_it_everywhere() {
    check_drop_cancels(memory_stores()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_dropping_the_ask_cancels_it_everywhere() {
    let redis = TestRedis::new().await;
    check_drop_cancels(redis_stores(&redis).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_every_instance_times_out_but_one_expiry_wins() {
    check_timeout(memory_stores()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_every_instance_times_out_but_one_expiry_wins() {
    let redis = TestRedis::new().await;
    check_timeout(redis_stores(&redis).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_restarted_instance_picks_up_its_requests() {
    let store = MemoryStore::new();
    check_restart(|| std::future::ready(Arc::new(store.clone()) as Arc<dyn Store>)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_restarted_instance_picks_up_its_requests() {
    let redis = TestRedis::new().await;
    check_restart(|| async { Arc::new(redis.open().await) as Arc<dyn Store> }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_approvals_and_session_cancels_cross_instances() {
    check_approvals_and_cancel(memory_stores()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_approvals_and_session_cancels_cross_instances() {
    let redis = TestRedis::new().await;
    check_approvals_and_cancel(redis_stores(&redis).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_session_is_counted_and_rejected_across_instances() {
    check_reject_session(memory_stores()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_session_is_counted_and_rejected_across_instances() {
    let redis = TestRedis::new().await;
    check_reject_session(redis_stores(&redis).await).await;
}

/// A follower that fell out of the change log's retention loads the requests again: it
/// learns of requests asked meanwhile, and of the outcome of its own asker's request.
#[tokio::test(flavor = "current_thread")]
async fn a_follower_that_fell_behind_the_log_resyncs() {
    let [a, b, _c] = instances(memory_stores()).await;
    let mine = ask_recorded(&a).await;
    let id = mine.id();
    b.hub.caught_up().await.unwrap();
    // Without an `.await`, so no follower runs on this one thread: B answers, then more
    // changes are made than the log keeps.
    let reply = b.hub.questions().reply(id, answers(&[&["Go"]])).unwrap();
    let flood = askbus_store::LOG_RETENTION + 1;
    for _ in 0..flood {
        let asked = b
            .hub
            .questions()
            .ask("flood", vec![language()])
            .timeout(Timeout::Never)
            .submit();
        drop(asked.unwrap().detach());
    }
    reply.await.unwrap();
    // A's follower finds a gap, loads the store again, and delivers the answer.
    let answered = tokio::time::timeout(EVENT_TIMEOUT, mine).await;
    assert_eq!(answered.expect("A resynced").unwrap(), answers(&[&["Go"]]));
    a.hub.caught_up().await.unwrap();
    assert_eq!(a.hub.questions().list(Some("flood")).len(), flood);
    let stats = a.hub.follower_stats().expect("a shared hub");
    assert_eq!(
        (stats.resyncs(), stats.skipped()),
        (1, 0),
        "counted for the metrics"
    );
}

/// A reply through an instance whose follower is behind completes when that follower has
/// applied the log up to the reply, not after a fixed wait: however long the follower is
/// held (here 5 s of paused time), the reply waits, and once it completes this instance
/// shows the answer.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_reply_waits_for_its_own_follower_to_reach_its_log_position() {
    let (open, held) = tokio::sync::watch::channel(true);
    let store = HeldLog {
        store: MemoryStore::new(),
        open: held,
    };
    let a = instance(Arc::new(store)).await;
    let asked = ask_recorded(&a).await;
    let id = asked.id();

    open.send_replace(false);
    let mut reply = a.hub.questions().reply(id, answers(&[&["Go"]])).unwrap();
    let held_for = Duration::from_secs(5);
    assert!(
        tokio::time::timeout(held_for, &mut reply).await.is_err(),
        "the reply completed while its follower was held"
    );
    assert_eq!(a.hub.questions().get(id).unwrap().outcome, None);

    open.send_replace(true);
    reply.await.unwrap();
    assert_eq!(
        a.hub.questions().get(id).unwrap().outcome,
        Some(Outcome::Replied(answers(&[&["Go"]]).into()))
    );
    assert_eq!(asked.await.unwrap(), answers(&[&["Go"]]));
}

/// Redis lost the change counter's key while it kept the log (deleted by hand, evicted): a
/// reply through another instance is still taken, logged and delivered. (The log refused
/// the counter's number while the store recorded the reply: the request was answered in
/// the store, pending on every instance, its asker waiting for good.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_reply_reaches_its_asker_after_the_change_counter_was_lost() {
    let redis = TestRedis::new().await;
    let [a, b, _c] = instances(redis_stores(&redis).await).await;
    let asked = ask_recorded(&a).await;
    let id = asked.id();
    b.hub.caught_up().await.unwrap();
    redis.command(redis::cmd("DEL").arg(format!("{}:log:seq", redis.prefix)));
    let reply = b.hub.questions().reply(id, answers(&[&["Go"]])).unwrap();
    reply.await.unwrap();
    let answered = tokio::time::timeout(EVENT_TIMEOUT, asked).await;
    assert_eq!(
        answered.expect("the asker got the answer").unwrap(),
        answers(&[&["Go"]])
    );
}

/// Redis lost a pending request (its key deleted, evicted): a reply through an instance
/// that does not hold the asker is refused and ends nothing there (its own waiters would
/// have heard an answer the asker never gets); the instance it was asked on ends it, and
/// its asker gets that answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_request_the_store_lost_is_decided_only_where_it_was_asked() {
    let redis = TestRedis::new().await;
    let [a, b, _c] = instances(redis_stores(&redis).await).await;
    let mut asked = ask_recorded(&a).await;
    let id = asked.id();
    b.hub.caught_up().await.unwrap();
    redis.command(redis::cmd("DEL").arg(format!("{}:req:{id}", redis.prefix)));

    let refused = b
        .hub
        .questions()
        .reply(id, answers(&[&["Rust"]]))
        .unwrap()
        .await;
    assert!(
        matches!(&refused, Err(DurableError::NotHere { request }) if *request == RequestId::Question(id)),
        "{refused:?}"
    );
    assert_eq!(
        b.hub.questions().get(id).unwrap().outcome,
        None,
        "still pending on B"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(200), &mut asked)
            .await
            .is_err(),
        "the asker heard nothing"
    );

    a.hub
        .questions()
        .reply(id, answers(&[&["Go"]]))
        .unwrap()
        .await
        .expect("the instance holding the asker ends the orphan");
    let answered = tokio::time::timeout(EVENT_TIMEOUT, asked).await;
    assert_eq!(
        answered.expect("the asker got the answer").unwrap(),
        answers(&[&["Go"]])
    );
}

/// Redis crashes and comes back (with what it acknowledged, from its append-only file):
/// while it is down a reply fails with the reason, then the same reply goes through, the
/// asker on the other instance gets it, and both buses tell it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_requests_stay_answerable_across_a_redis_restart() {
    let mut redis = PrivateRedis::start().await;
    let (mut a, mut b) = (
        instance(Arc::new(redis.open().await)).await,
        instance(Arc::new(redis.open().await)).await,
    );
    let mut asking = a
        .hub
        .questions()
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let id = asking.id();
    asking.recorded().await.unwrap();
    b.wait_for(asked(id)).await;

    redis.kill();
    let refused = b.hub.questions().reply(id, answers(&[&["Go"]])).unwrap();
    let refused = tokio::time::timeout(EVENT_TIMEOUT, refused)
        .await
        .expect("a reply while Redis is down fails, it does not hang");
    assert!(
        matches!(refused, Err(DurableError::Store(StoreError::Redis(_)))),
        "{refused:?}"
    );
    redis.restart().await;
    until_ok(|| b.hub.questions().reply(id, answers(&[&["Go"]])).unwrap()).await;
    let answered = tokio::time::timeout(EVENT_TIMEOUT, asking).await;
    assert_eq!(
        answered.expect("A's ask resolved").unwrap(),
        answers(&[&["Go"]])
    );
    for instance in [&mut a, &mut b] {
        instance.wait_for(ended(id)).await;
        // Each event once: `outcomes_in_stream` checks.
        let outcomes = outcomes_in_stream(&instance.seen);
        assert_eq!(outcomes.get(&id), Some(&Some(OutcomeKind::Replied)));
    }
}

/// While Redis is down, nobody could see a new question: asking fails at once (it does not
/// wait for an answer that cannot come), a request whose registration failed is withdrawn
/// (an HTTP create answers 503 and lists nothing), and once Redis is back asking works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_asking_while_redis_is_down_fails_and_leaves_nothing_behind() {
    let mut redis = PrivateRedis::start().await;
    let (a, mut b) = (
        instance(Arc::new(redis.open().await)).await,
        instance(Arc::new(redis.open().await)).await,
    );

    redis.kill();
    let asking = a
        .hub
        .questions()
        .ask("s1", vec![language()])
        .timeout(Timeout::Never);
    let unseen = tokio::time::timeout(EVENT_TIMEOUT, asking)
        .await
        .expect("an ask nobody can see fails, it does not wait for good");
    assert!(
        matches!(&unseen, Err(AskError::NotRecorded(why)) if matches!(why.error(), DurableError::Store(_))),
        "{unseen:?}"
    );
    // The store's error is kept as the source, not only as words.
    let source = unseen.as_ref().err().and_then(std::error::Error::source);
    assert!(
        source.is_some_and(|source| source.source().is_some()),
        "{source:?}"
    );
    // As the HTTP create does: register, then await the record.
    let mut submitted = a
        .hub
        .questions()
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let recorded = tokio::time::timeout(EVENT_TIMEOUT, submitted.recorded())
        .await
        .expect("the record fails, it does not hang");
    assert!(
        matches!(recorded, Err(DurableError::Store(StoreError::Redis(_)))),
        "{recorded:?}"
    );
    drop(submitted.detach());
    assert!(a.hub.questions().list(None).is_empty());
    // An HTTP client that went away: the record's future dropped unawaited.
    let mut abandoned = a
        .hub
        .questions()
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    drop(abandoned.recorded());
    drop(abandoned.detach());
    let mut polls = 0;
    while !a.hub.questions().list(None).is_empty() {
        polls += 1;
        assert!(polls < 200, "the abandoned request was not withdrawn");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }

    redis.restart().await;
    let asking = until_ok(|| {
        let mut asking = a
            .hub
            .questions()
            .ask("s1", vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        async move { asking.recorded().await.map(|()| asking) }
    })
    .await;
    let id = asking.id();
    b.wait_for(asked(id)).await;
    b.hub
        .questions()
        .reply(id, answers(&[&["Go"]]))
        .unwrap()
        .await
        .unwrap();
    let answered = tokio::time::timeout(EVENT_TIMEOUT, asking).await;
    assert_eq!(answered.expect("answered").unwrap(), answers(&[&["Go"]]));
    assert_eq!(a.hub.questions().list(None).len(), 0);
    assert_eq!(b.hub.questions().list(None).len(), 0);
}

#[tokio::test]
async fn a_store_only_one_process_may_use_cannot_be_shared() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Arc::new(SqliteStore::open(dir.path().join("askbus.db")).unwrap());
    let refused = RequestHub::builder()
        .bus(roomy_bus())
        .store(sqlite)
        .shared()
        .build()
        .await
        .err()
        .unwrap();
    assert!(matches!(refused, StoreError::NotShared), "{refused}");
}

/// One instance: a hub, and its bus's events since before it could publish any.
pub(crate) struct Instance {
    pub(crate) hub: RequestHub,
    /// The bus's events not read yet.
    pub(crate) events: Subscription,
    /// The bus's events read so far, in order.
    seen: Vec<Envelope>,
}

async fn check_answered_elsewhere(stores: [Arc<dyn Store>; 3]) {
    let [mut a, mut b, mut c] = instances(stores).await;
    let tool = ToolRef {
        message_id: "m1".into(),
        call_id: "call-1".into(),
    };
    let asking = a
        .hub
        .questions()
        .ask("s1", vec![language()])
        .tool(tool)
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let id = asking.id();

    b.wait_for(asked(id)).await;
    let listed: Vec<QuestionId> = b
        .hub
        .questions()
        .list(Some("s1"))
        .iter()
        .map(|request| request.id)
        .collect();
    assert_eq!(listed, [id]);
    b.hub
        .questions()
        .reply(id, answers(&[&["Go"]]))
        .unwrap()
        .await
        .unwrap();
    // Once the reply is acknowledged, the instance that took it reads its own write.
    let seen_by_b = b.hub.questions().get(id).unwrap().outcome;
    assert_eq!(
        seen_by_b,
        Some(Outcome::Replied(answers(&[&["Go"]]).into()))
    );

    let answered = tokio::time::timeout(EVENT_TIMEOUT, asking).await;
    assert_eq!(
        answered.expect("A's ask resolved").unwrap(),
        answers(&[&["Go"]])
    );
    for instance in [&mut a, &mut b, &mut c] {
        instance.wait_for(ended(id)).await;
        let outcomes = outcomes_in_stream(&instance.seen);
        assert_eq!(outcomes.get(&id), Some(&Some(OutcomeKind::Replied)));
    }
    // A second answer, through a third instance, is refused.
    let again = c.hub.questions().reply(id, answers(&[&["Rust"]]));
    assert!(
        matches!(again, Err(ReplyError::AlreadyResolved { .. })),
        "{again:?}"
    );
}

async fn check_concurrent_replies(stores: [Arc<dyn Store>; 3]) {
    const QUESTIONS: usize = 20;
    let instances = instances(stores).await;
    let mut asking = Vec::new();
    for _ in 0..QUESTIONS {
        let mut pending = instances[0]
            .hub
            .questions()
            .ask("race", vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        // In the store, so every instance's catching up below covers it.
        pending.recorded().await.unwrap();
        asking.push(pending);
    }
    for instance in &instances {
        instance.hub.caught_up().await.unwrap();
    }
    for pending in asking {
        let id = pending.id();
        // Every instance answers at once, each with its own text.
        let replies = instances.iter().enumerate().map(|(n, instance)| {
            let hub = instance.hub.clone();
            tokio::spawn(async move {
                let answer = answers(&[&[&format!("from instance {n}")]]);
                let taken = match hub.questions().reply(id, answer.clone()) {
                    Ok(durable) => durable.await,
                    Err(ReplyError::AlreadyResolved { .. }) => return None,
                    Err(other) => panic!("{id}: {other}"),
                };
                match taken {
                    Ok(()) => Some(answer),
                    Err(DurableError::AlreadyResolved { .. }) => None,
                    Err(other) => panic!("{id}: {other}"),
                }
            })
        });
        let winners: Vec<_> = futures_util::future::join_all(replies)
            .await
            .into_iter()
            .filter_map(|reply| reply.unwrap())
            .collect();
        assert_eq!(winners.len(), 1, "{id}: exactly one reply is taken");
        let answered = tokio::time::timeout(EVENT_TIMEOUT, pending).await;
        assert_eq!(answered.expect("the asker resolved").unwrap(), winners[0]);
    }
    for mut instance in instances {
        instance.hub.caught_up().await.unwrap();
        let events = ready_envelopes(&mut instance.events);
        let outcomes = outcomes_in_stream(&events);
        assert_eq!(outcomes.len(), QUESTIONS);
        assert!(
            outcomes
                .values()
                .all(|outcome| *outcome == Some(OutcomeKind::Replied)),
            "{outcomes:?}"
        );
    }
}

async fn check_drop_cancels(stores: [Arc<dyn Store>; 3]) {
    let [a, mut b, _c] = instances(stores).await;
    let asking = a
        .hub
        .questions()
        .ask("s", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let id = asking.id();
    b.wait_for(asked(id)).await;
    drop(asking);
    b.wait_for(ended(id)).await;
    assert_eq!(
        outcomes_in_stream(&b.seen).get(&id),
        Some(&Some(OutcomeKind::Cancelled))
    );
    assert_eq!(
        b.hub.questions().get(id).unwrap().outcome,
        Some(Outcome::Cancelled)
    );
}

async fn check_timeout(stores: [Arc<dyn Store>; 3]) {
    let [a, b, c] = instances(stores).await;
    let asking = a
        .hub
        .questions()
        .ask("s", vec![language()])
        .timeout(Duration::from_millis(300))
        .submit()
        .unwrap();
    let id = asking.id();
    let timed_out = tokio::time::timeout(EVENT_TIMEOUT, asking).await;
    assert_eq!(timed_out.expect("the ask ended"), Err(AskError::TimedOut));
    for mut instance in [a, b, c] {
        // Every instance's timer fired; the store took one expiry, the rest lost quietly.
        instance.wait_for(ended(id)).await;
        assert_eq!(
            outcomes_in_stream(&instance.seen).get(&id),
            Some(&Some(OutcomeKind::TimedOut))
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let later = ready_envelopes(&mut instance.events);
        assert!(
            later.iter().all(|event| question_event(event).is_none()),
            "{later:?}"
        );
    }
}

/// An instance dies with requests pending (its asker gone without cancelling, as in a
/// crash); another answers one of them; the restarted instance's agent asks again from the
/// same tool calls and gets the answer, at once or when it comes.
async fn check_restart<F: Future<Output = Arc<dyn Store>>>(store: impl Fn() -> F) {
    let b = instance(store().await).await;
    let answered_while_down = {
        let a = instance(store().await).await;
        let ask = async |call: &str| {
            let tool = ToolRef {
                message_id: "m".into(),
                call_id: call.into(),
            };
            let mut asked = a
                .hub
                .questions()
                .ask("agent", vec![language()])
                .tool(tool)
                .timeout(Timeout::Never)
                .submit()
                .unwrap();
            // In the store, so B's catching up below covers it.
            asked.recorded().await.unwrap();
            asked.detach().id
        };
        let first = ask("call-1").await;
        let second = ask("call-2").await;
        b.hub.caught_up().await.unwrap();
        (first, second)
    };
    let (first, second) = answered_while_down;
    b.hub
        .questions()
        .reply(first, answers(&[&["Rust"]]))
        .unwrap()
        .await
        .unwrap();

    let restarted = instance(store().await).await;
    let again = |call: &str| {
        let tool = ToolRef {
            message_id: "m2".into(),
            call_id: call.into(),
        };
        restarted
            .hub
            .questions()
            .ask("agent", vec![language()])
            .tool(tool)
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
    };
    let rejoined = again("call-1");
    assert_eq!(
        rejoined.id(),
        first,
        "the same request, not a second prompt"
    );
    assert_eq!(rejoined.await.unwrap(), answers(&[&["Rust"]]));
    let waiting = again("call-2");
    assert_eq!(waiting.id(), second);
    b.hub
        .questions()
        .reply(second, answers(&[&["Go"]]))
        .unwrap()
        .await
        .unwrap();
    let answered = tokio::time::timeout(EVENT_TIMEOUT, waiting).await;
    assert_eq!(
        answered.expect("the re-ask resolved").unwrap(),
        answers(&[&["Go"]])
    );
}

async fn check_approvals_and_cancel(stores: [Arc<dyn Store>; 3]) {
    let [a, b, mut c] = instances(stores).await;
    let delete = Action::new("delete_rows", json!({"table": "users"}));
    let mut reviewing = a
        .hub
        .approvals()
        .request("ops", vec![delete])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let id = reviewing.id();
    // `caught_up` covers what the store has: A's insert must be there first.
    reviewing.recorded().await.unwrap();
    b.hub.caught_up().await.unwrap();
    let edit = Decision::Edit {
        edited_action: EditedAction {
            name: "delete_rows".into(),
            args: json!({"table": "tmp"}),
        },
    };
    b.hub
        .approvals()
        .reply(id, ApprovalReply::new([edit.clone()]))
        .unwrap()
        .await
        .unwrap();
    let decided = tokio::time::timeout(EVENT_TIMEOUT, reviewing).await;
    assert_eq!(
        decided.expect("A's review resolved").unwrap().decisions,
        [edit]
    );
    c.wait_for(|event| event.downcast_ref::<ApprovalReplied>().is_some())
        .await;
    let asked_first = c
        .seen
        .iter()
        .position(|event| event.downcast_ref::<ApprovalAsked>().is_some());
    assert_eq!(asked_first, Some(c.seen.len() - 2), "asked, then replied");

    // A session cancelled through B ends A's requests of that session, and only those.
    let mut asking = ["doomed", "doomed", "spared"].map(|session| {
        a.hub
            .questions()
            .ask(session, vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
    });
    for pending in &mut asking {
        pending.recorded().await.unwrap();
    }
    let [first, second, other] = asking;
    b.hub.caught_up().await.unwrap();
    assert_eq!(b.hub.cancel_session("doomed"), 2);
    for pending in [first, second] {
        let ended = tokio::time::timeout(EVENT_TIMEOUT, pending).await;
        assert_eq!(ended.expect("cancelled"), Err(AskError::Cancelled));
    }
    a.hub.caught_up().await.unwrap();
    assert_eq!(a.hub.questions().get(other.id()).unwrap().outcome, None);
}

/// A session flooded through A is counted and paged on B, and refused through B: A's
/// askers get the rejections, and only that session's requests end.
async fn check_reject_session(stores: [Arc<dyn Store>; 3]) {
    let [a, b, _c] = instances(stores).await;
    let ask = |session| {
        a.hub
            .questions()
            .ask(session, vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
    };
    let (mut question, mut other) = (ask("runaway"), ask("calm"));
    let drop_table = Action::new("drop_table", json!({"table": "users"}));
    let mut approval = a
        .hub
        .approvals()
        .request("runaway", vec![drop_table])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    for recorded in [question.recorded(), other.recorded(), approval.recorded()] {
        recorded.await.unwrap();
    }
    b.hub.caught_up().await.unwrap();
    let counts = |questions, approvals| SessionPending {
        session_id: "runaway".into(),
        questions,
        approvals,
    };
    let calm = SessionPending {
        session_id: "calm".into(),
        questions: 1,
        approvals: 0,
    };
    assert_eq!(
        b.hub.pending_sessions().sessions,
        [calm.clone(), counts(1, 1)]
    );
    let paged = b.hub.questions().page(Some("runaway"), None, 10);
    assert_eq!(paged.len(), 1);
    assert_eq!(paged[0].id, question.id());

    let rejected = b.hub.reject_session("runaway", Some("stop")).await.unwrap();
    assert_eq!(
        rejected,
        SessionRejected {
            questions: 1,
            approvals: 1,
            cancelled: 0
        }
    );
    let ended = tokio::time::timeout(EVENT_TIMEOUT, question).await;
    assert_eq!(
        ended.expect("rejected"),
        Err(AskError::Rejected {
            reason: Some("stop".into())
        })
    );
    let decided = tokio::time::timeout(EVENT_TIMEOUT, approval).await;
    assert_eq!(
        decided.expect("decided").unwrap().decisions,
        [Decision::Reject {
            message: Some("stop".into())
        }]
    );
    a.hub.caught_up().await.unwrap();
    assert_eq!(a.hub.questions().get(other.id()).unwrap().outcome, None);
    assert_eq!(a.hub.pending_sessions().sessions, [calm]);
    drop(other.detach());
}

// One thread: neither instance's follower runs between the two asks.
#[tokio::test]
async fn a_key_two_instances_gave_at_once_addresses_neither_request() {
    let [a, b, _c] = instances(memory_stores()).await;
    let delete = |table: &str| vec![Action::new("delete_rows", json!({ "table": table }))];
    // Neither has heard of the other's request yet: each numbers the session's keys alone.
    let on_a = a
        .hub
        .approvals()
        .request("s1", delete("users"))
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    let on_b = b
        .hub
        .approvals()
        .request("s1", delete("orders"))
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    assert_eq!((&*on_a.approval_key, &*on_b.approval_key), ("s1_1", "s1_1"));
    for instance in [&a, &b] {
        instance.hub.caught_up().await.unwrap();
        // A human who saw `users` and answers "s1_1" must not approve `orders`: the key
        // names neither once both are known, and each still answers to its id.
        assert_eq!(instance.hub.approvals().id_for_key("s1_1"), None);
        assert!(instance.hub.approvals().get(on_a.id).is_some());
        assert!(instance.hub.approvals().get(on_b.id).is_some());
    }
    // Keys given after that are unique again.
    let next = a
        .hub
        .approvals()
        .request("s1", delete("logs"))
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    assert_eq!(&*next.approval_key, "s1_2");
    assert_eq!(a.hub.approvals().id_for_key("s1_2"), Some(next.id));
}

/// Three handles on one in-process store.
fn memory_stores() -> [Arc<dyn Store>; 3] {
    let store = MemoryStore::new();
    [(); 3].map(|()| Arc::new(store.clone()) as Arc<dyn Store>)
}

/// Three stores on the test's Redis keys, each with connections of its own.
async fn redis_stores(redis: &TestRedis) -> [Arc<dyn Store>; 3] {
    [
        Arc::new(redis.open().await) as Arc<dyn Store>,
        Arc::new(redis.open().await),
        Arc::new(redis.open().await),
    ]
}

async fn instances(stores: [Arc<dyn Store>; 3]) -> [Instance; 3] {
    let [a, b, c] = stores;
    [instance(a).await, instance(b).await, instance(c).await]
}

/// An instance over `store`, one of several sharing it.
pub(crate) async fn instance(store: Arc<dyn Store>) -> Instance {
    let bus = roomy_bus();
    let events = bus.subscribe_all();
    let hub = RequestHub::builder()
        .bus(bus)
        .store(store)
        .shared()
        .build()
        .await
        .unwrap();
    Instance {
        hub,
        events,
        seen: Vec::new(),
    }
}

impl Instance {
    /// Reads events up to and including the first for which `until` holds.
    async fn wait_for(&mut self, until: impl Fn(&Envelope) -> bool) {
        let (events, seen) = (&mut self.events, &mut self.seen);
        let collect = async {
            while let Some(event) = events.next().await {
                let event = event.expect("the test bus is roomy enough never to lag");
                let done = until(&event);
                seen.push(event);
                if done {
                    return;
                }
            }
        };
        if tokio::time::timeout(EVENT_TIMEOUT, collect).await.is_err() {
            panic!("the awaited event did not come; saw {:?}", self.seen);
        }
    }
}

/// A question (session `s`, no timeout) asked through `instance`, once it is in the store
/// and `instance` applied it.
async fn ask_recorded(instance: &Instance) -> PendingQuestion {
    let mut asked = instance
        .hub
        .questions()
        .ask("s", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    asked.recorded().await.unwrap();
    instance.hub.caught_up().await.unwrap();
    asked
}

fn asked(id: QuestionId) -> impl Fn(&Envelope) -> bool {
    move |event| question_event(event) == Some(QuestionEvent::Asked(id))
}

fn ended(id: QuestionId) -> impl Fn(&Envelope) -> bool {
    move |event| matches!(question_event(event), Some(QuestionEvent::Terminal(ended, _)) if ended == id)
}

/// A shared `MemoryStore` whose change log delivers what it read only while `open` holds:
/// a follower that falls behind on demand.
struct HeldLog {
    store: MemoryStore,
    open: tokio::sync::watch::Receiver<bool>,
}

impl ChangeLog for HeldLog {
    fn head(&self) -> BoxFuture<'_, LogPosition> {
        self.store
            .change_log()
            .expect("a memory store has a log")
            .head()
    }

    fn read_after(
        &self,
        after: LogPosition,
        limit: usize,
        wait: Duration,
    ) -> BoxFuture<'_, Vec<Change>> {
        Box::pin(async move {
            let log = self.store.change_log().expect("a memory store has a log");
            let changes = log.read_after(after, limit, wait).await?;
            let mut open = self.open.clone();
            open.wait_for(|&open| open)
                .await
                .map_err(|_| StoreError::Closed)?;
            Ok(changes)
        })
    }
}

impl StoreLayer for HeldLog {
    fn inner(&self) -> &dyn Store {
        &self.store
    }
    fn change_log(&self) -> Option<&dyn ChangeLog> {
        Some(self)
    }
}
