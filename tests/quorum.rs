//! Quorum: an approval that needs M of N distinct reviewers. Every reviewer's decision is a
//! vote (`approval.decided`); the request ends once, when M of them decided alike or one
//! of them ran nothing (a veto), and its outcome lists every vote. No voter votes twice,
//! the asker never votes, and a request naming its reviewers takes no one else's vote.
//! Checked without a store, over SQLite (votes are recorded, outcomes keep them) and over
//! shared stores (votes cast through different instances at once reach one outcome).

use std::sync::Arc;
use std::time::Duration;

use askbus::bus::{Envelope, Subscription};
use askbus::question::{
    Action, ApprovalDecided, ApprovalReplied, ApprovalReply, ApprovalReplyError, ApprovalVote,
    Decision, DecisionType, Duties, EditedAction, Identity, NotAllowed, OutcomeKind,
    PendingApproval, QuorumFloor, RequestHub, ReviewConfig, Role, SubmitError, Timeout,
};
use askbus_store::{
    Ack, ChangeKind, HistoryPage, MemoryStore, SqliteStore, Store, StoreError, StoreLayer, Write,
};
use futures_util::StreamExt;
use serde_json::json;

use crate::support::{TestRedis, poll_once, ready_envelopes, roomy_bus};

/// How long a check waits for what another instance must cause, before failing.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

fn delete_rows() -> Action {
    Action::new("delete_rows", json!({"table": "users"}))
}

/// `delete_rows` needs `quorum` reviewers alike, of those named if any are.
fn needs(quorum: u32, reviewers: Option<&[&str]>) -> Vec<ReviewConfig> {
    let config = ReviewConfig::new("delete_rows", DecisionType::ALL).with_quorum(quorum);
    vec![match reviewers {
        Some(names) => config.with_reviewers(names.iter().copied()),
        None => config,
    }]
}

fn reviewer(name: &str) -> Identity {
    Identity::new(name, Role::Reviewer)
}

fn approve() -> ApprovalReply {
    ApprovalReply::new([Decision::Approve])
}

fn edit(table: &str) -> ApprovalReply {
    ApprovalReply::new([Decision::Edit {
        edited_action: EditedAction {
            name: "delete_rows".into(),
            args: json!({ "table": table }),
        },
    }])
}

fn reject(message: &str) -> ApprovalReply {
    ApprovalReply::new([Decision::Reject {
        message: Some(message.into()),
    }])
}

/// A hub with separation of duties on, as a server with credentials runs it.
fn separated(hub: RequestHub) -> RequestHub {
    hub.with_duties(Duties {
        never_the_asker: true,
    })
}

/// `delete_rows` asked in `session` through `hub`, needing 2 reviewers alike, never timing
/// out, once durable.
async fn two_of_two(hub: &RequestHub, session: &str) -> PendingApproval {
    let mut asking = hub
        .approvals()
        .request(session, vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    asking.recorded().await.unwrap();
    asking
}

/// `name`, a reviewer, approves `id` through `hub`; the vote is durable.
async fn approve_as(hub: &RequestHub, name: &str, id: askbus::question::ApprovalId) {
    as_reviewer(hub, name)
        .approvals()
        .reply(id, approve())
        .unwrap()
        .await
        .unwrap();
}

/// `hub`'s handle for `name`, a reviewer.
fn as_reviewer(hub: &RequestHub, name: &str) -> RequestHub {
    hub.acting_as(reviewer(name))
}

fn voters(votes: &[ApprovalVote]) -> Vec<&str> {
    votes.iter().map(|vote| &*vote.decided_by.name).collect()
}

/// The `approval.*` events among `events`, as `(type, voter or decider)`.
fn approval_events(events: &[Envelope]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|event| {
            if let Some(decided) = event.downcast_ref::<ApprovalDecided>() {
                let vote = &decided.vote;
                let tally = format!(
                    "{} {}/{}",
                    vote.decided_by.name, decided.agreeing, decided.quorum
                );
                return Some(("decided".to_owned(), tally));
            }
            if let Some(replied) = event.downcast_ref::<ApprovalReplied>() {
                let by = replied.answered_by.as_ref().map(|by| by.name.to_string());
                return Some(("replied".to_owned(), by.unwrap_or_default()));
            }
            event
                .event_type()
                .starts_with("approval.")
                .then(|| (event.event_type().to_owned(), String::new()))
        })
        .collect()
}

#[tokio::test]
async fn two_of_two_needs_two_distinct_reviewers_and_never_the_asker() {
    let hub = separated(RequestHub::new(roomy_bus()));
    let mut events = hub.bus().subscribe_all();
    let agent = hub.acting_as(Identity::new("agent-1", Role::Agent));
    let mut pending = agent
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let id = pending.id();
    assert_eq!(pending.request().quorum(), 2);

    // The asker is no reviewer; nor is an admin that asked.
    assert!(matches!(
        agent.approvals().reply(id, approve()),
        Err(ApprovalReplyError::NotAllowed(NotAllowed::MayNotDecide(_)))
    ));
    let ops = hub.acting_as(Identity::new("ops", Role::Admin));
    let own = ops
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    assert!(matches!(
        ops.approvals().reply(own.id(), approve()),
        Err(ApprovalReplyError::NotAllowed(NotAllowed::OwnRequest(_)))
    ));

    // Alice's approval is one vote: the request stays pending, and says so.
    approve_as(&hub, "alice", id).await;
    assert!(
        poll_once(&mut pending).is_none(),
        "one vote of two decides nothing"
    );
    let snapshot = hub.approvals().get(id).unwrap();
    assert_eq!(snapshot.outcome, None);
    assert_eq!(snapshot.votes.len(), 1);
    assert_eq!(&*snapshot.votes[0].by.name, "alice");
    // Alice cannot make the quorum alone.
    assert!(matches!(
        as_reviewer(&hub, "alice").approvals().reply(id, approve()),
        Err(ApprovalReplyError::NotAllowed(NotAllowed::AlreadyDecided(
            _
        )))
    ));

    approve_as(&hub, "bob", id).await;
    let decided = pending.await.unwrap();
    assert_eq!(decided.decisions, [Decision::Approve]);
    assert_eq!(voters(&decided.votes), ["alice", "bob"]);
    let resolved = hub.approvals().get(id).unwrap();
    assert_eq!(resolved.decided_by.unwrap().name.as_ref(), "bob");
    assert!(matches!(
        as_reviewer(&hub, "carol").approvals().reply(id, approve()),
        Err(ApprovalReplyError::AlreadyResolved {
            outcome: OutcomeKind::Replied,
            ..
        })
    ));

    // Each vote once, then the one outcome, once.
    let seen = ready_envelopes(&mut events);
    let of_this: Vec<Envelope> = seen
        .into_iter()
        .filter(|event| event.json().contains(&id.to_string()))
        .collect();
    assert_eq!(
        approval_events(&of_this),
        [
            ("approval.asked", ""),
            ("decided", "alice 1/2"),
            ("decided", "bob 2/2"),
            ("replied", "bob"),
        ]
        .map(|(kind, by)| (kind.to_owned(), by.to_owned()))
    );
    drop(own);
}

#[tokio::test]
async fn votes_count_when_alike_and_one_that_runs_nothing_is_a_veto() {
    let hub = separated(RequestHub::new(roomy_bus()));
    let vote = |name: &str, id, reply| {
        as_reviewer(&hub, name)
            .approvals()
            .reply(id, reply)
            .map(drop)
    };

    // Alice approves, Bob edits: no two alike yet. Carol approves: Alice's and Carol's
    // are two alike, and the outcome is theirs.
    let mut split = hub
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    vote("alice", split.id(), approve()).unwrap();
    vote("bob", split.id(), edit("tmp")).unwrap();
    assert!(
        poll_once(&mut split).is_none(),
        "an approve and an edit are not alike"
    );
    vote("carol", split.id(), approve()).unwrap();
    let decided = split.await.unwrap();
    assert_eq!(decided.decisions, [Decision::Approve]);
    assert_eq!(voters(&decided.votes), ["alice", "bob", "carol"]);

    // Two edits to the same arguments are alike.
    let edited = hub
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    vote("alice", edited.id(), edit("tmp")).unwrap();
    vote("bob", edited.id(), edit("tmp")).unwrap();
    assert_eq!(edited.await.unwrap().decisions, edit("tmp").decisions);

    // One reviewer may stop what none alone may run.
    let vetoed = hub
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(3, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    vote("alice", vetoed.id(), approve()).unwrap();
    vote("bob", vetoed.id(), reject("not in production")).unwrap();
    let decided = vetoed.await.unwrap();
    assert_eq!(decided.decisions, reject("not in production").decisions);
    assert_eq!(voters(&decided.votes), ["alice", "bob"]);
}

#[tokio::test]
async fn a_request_that_names_its_reviewers_takes_only_their_votes() {
    let hub = separated(RequestHub::new(roomy_bus()));
    let named = hub
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, Some(&["alice", "bob"])))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    for outsider in [reviewer("carol"), Identity::new("root", Role::Admin)] {
        let refused = hub
            .acting_as(outsider)
            .approvals()
            .reply(named.id(), edit("tmp"));
        assert!(
            matches!(
                refused,
                Err(ApprovalReplyError::NotAllowed(NotAllowed::NotNamed(_)))
            ),
            "{refused:?}"
        );
    }
    for name in ["alice", "bob"] {
        drop(
            as_reviewer(&hub, name)
                .approvals()
                .reply(named.id(), approve())
                .unwrap(),
        );
    }
    assert_eq!(named.await.unwrap().decisions, [Decision::Approve]);

    // A review config that could never be decided is refused when asked.
    let refused = |configs| {
        hub.approvals()
            .request("ops", vec![delete_rows()])
            .review(configs)
            .timeout(Timeout::Never)
            .submit()
            .map(drop)
    };
    for configs in [
        needs(0, None),
        needs(101, None),
        needs(3, Some(&["alice", "bob"])),
        needs(2, Some(&["alice", "alice"])),
    ] {
        let error = refused(configs.clone()).unwrap_err();
        assert!(
            matches!(error, SubmitError::Invalid(_)),
            "{configs:?}: {error}"
        );
    }

    // Without a quorum, votes a client sends are not the outcome's.
    let plain = hub
        .approvals()
        .request("ops", vec![delete_rows()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let mut forged = approve();
    forged.votes = vec![ApprovalVote {
        id: "vot_01JZ6Q3V8R5M2K7D4T9WXYZABC".parse().unwrap(),
        decided_by: reviewer("mallory"),
        decisions: vec![Decision::Approve],
        user_edit_content: None,
        decided_at: 0,
    }];
    drop(
        as_reviewer(&hub, "alice")
            .approvals()
            .reply(plain.id(), forged)
            .unwrap(),
    );
    assert!(plain.await.unwrap().votes.is_empty());
}

#[tokio::test]
async fn sqlite_records_each_vote_and_the_outcome_keeps_them_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let open = || async {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
        let hub = RequestHub::builder()
            .bus(roomy_bus())
            .store(Arc::clone(&store))
            .build()
            .await
            .unwrap();
        (separated(hub), store)
    };
    let (hub, store) = open().await;
    let pending = hub
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let id = pending.id();
    let detached = pending.detach();
    let half = hub
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    approve_as(&hub, "alice", half.id).await;
    for name in ["alice", "bob"] {
        approve_as(&hub, name, id).await;
    }
    let history = store
        .history("ops", HistoryPage::From(0), 100)
        .await
        .unwrap();
    let votes: Vec<String> = history
        .iter()
        .filter_map(|record| match &record.entry {
            ChangeKind::Event(event) if event.event_type == "approval.decided" => {
                let decided: ApprovalDecided = serde_json::from_str(&event.properties).unwrap();
                Some(decided.vote.decided_by.name.to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        votes,
        ["alice", "alice", "bob"],
        "each vote is in the session's history"
    );
    drop((hub, store));

    let (hub, _store) = open().await;
    let snapshot = hub.approvals().get(detached.id).unwrap();
    let Some(askbus::question::Outcome::Replied(reply)) = snapshot.outcome else {
        panic!("the restarted hub lost the outcome: {snapshot:?}");
    };
    assert_eq!(voters(&reply.votes), ["alice", "bob"]);
    assert_eq!(snapshot.decided_by.unwrap().name.as_ref(), "bob");

    // A vote cast before the restart still counts after it, once.
    let half_way = hub.approvals().get(half.id).unwrap();
    assert_eq!(half_way.outcome, None);
    assert_eq!(half_way.votes.len(), 1);
    assert!(matches!(
        as_reviewer(&hub, "alice")
            .approvals()
            .reply(half.id, approve()),
        Err(ApprovalReplyError::NotAllowed(NotAllowed::AlreadyDecided(
            _
        )))
    ));
    approve_as(&hub, "bob", half.id).await;
    let outcome = hub.approvals().wait(half.id).await.unwrap();
    let askbus::question::Outcome::Replied(reply) = outcome else {
        panic!("not replied: {outcome:?}");
    };
    assert_eq!(voters(&reply.votes), ["alice", "bob"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_votes_through_different_instances_reach_one_outcome() {
    let store = MemoryStore::new();
    check_votes_across_instances([(); 4].map(|()| Arc::new(store.clone()) as Arc<dyn Store>)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_votes_through_different_instances_reach_one_outcome() {
    let redis = TestRedis::new().await;
    check_votes_across_instances([
        Arc::new(redis.open().await) as Arc<dyn Store>,
        Arc::new(redis.open().await),
        Arc::new(redis.open().await),
        Arc::new(redis.open().await),
    ])
    .await;
}

/// A shared memory store that refuses the next `failing` resolutions, as a Redis that
/// blinked.
struct BlinkingResolves {
    store: MemoryStore,
    failing: std::sync::atomic::AtomicUsize,
}

impl StoreLayer for BlinkingResolves {
    fn inner(&self) -> &dyn Store {
        &self.store
    }
    fn write(&self, write: Write) -> Ack {
        use std::sync::atomic::Ordering;
        if matches!(write, Write::Resolve { .. })
            && self
                .failing
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(1)
                })
                .is_ok()
        {
            let (refusal, refused) = Ack::channel();
            let _ = refusal.send(Err(StoreError::Unresponsive));
            return refused;
        }
        self.store.write(write)
    }
}

/// Over a shared store, the outcome a quorum reached is proposed in the background; when
/// the store cannot take it then, it is proposed again until it can, and the asker gets it
/// (it stayed pending until a restart before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_whose_outcome_the_store_could_not_take_is_settled_once_it_can() {
    let store = Arc::new(BlinkingResolves {
        store: MemoryStore::new(),
        failing: std::sync::atomic::AtomicUsize::new(0),
    });
    let hub = separated(
        crate::shared::instance(Arc::clone(&store) as Arc<dyn Store>)
            .await
            .hub,
    );
    let asking = two_of_two(&hub, "blink").await;
    let id = asking.id();
    hub.caught_up().await.unwrap();
    for name in ["alice", "bob"] {
        if name == "bob" {
            // The deciding vote is taken; the outcome it settles is refused twice.
            store.failing.store(2, std::sync::atomic::Ordering::SeqCst);
        }
        approve_as(&hub, name, id).await;
    }
    let decided = tokio::time::timeout(EVENT_TIMEOUT, asking)
        .await
        .expect("the quorum's outcome was settled")
        .unwrap();
    assert_eq!(voters(&decided.votes), ["alice", "bob"]);
    assert_eq!(
        store.failing.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "both refusals were met"
    );
}

/// Alice votes through B and Bob through C at the same moment, on a request A asked: each
/// instance counts both votes in the log's order, the request ends once, and every
/// instance tells the same story.
async fn check_votes_across_instances(stores: [Arc<dyn Store>; 4]) {
    let [a, b, c, d] = stores;
    let instance = |store| async move {
        let instance = crate::shared::instance(store).await;
        (separated(instance.hub), instance.events)
    };
    let (a, mut a_events) = instance(a).await;
    let (b, _) = instance(b).await;
    let (c, mut c_events) = instance(c).await;

    // An instance started after a vote was cast counts it too.
    let asked = two_of_two(&a, "late").await.detach();
    b.caught_up().await.unwrap();
    approve_as(&b, "alice", asked.id).await;
    let (late, _) = instance(d).await;
    assert_eq!(voters_so_far(&late, asked.id), ["alice"]);
    assert!(matches!(
        as_reviewer(&late, "alice")
            .approvals()
            .reply(asked.id, approve()),
        Err(ApprovalReplyError::NotAllowed(NotAllowed::AlreadyDecided(
            _
        )))
    ));

    // One reviewer voting through two instances at once counts once; the other vote is
    // refused, at once or once the log says which came first, never taken silently.
    let twice = two_of_two(&a, "twice").await.detach().id;
    b.caught_up().await.unwrap();
    c.caught_up().await.unwrap();
    let (through_b, through_c) = (as_reviewer(&b, "dave"), as_reviewer(&c, "dave"));
    let cast = |hub: RequestHub, reply: ApprovalReply| async move {
        match hub.approvals().reply(twice, reply) {
            Ok(durable) => durable.await.map_err(|error| error.to_string()),
            Err(refused) => Err(refused.to_string()),
        }
    };
    let (by_b, by_c) = tokio::join!(cast(through_b, approve()), cast(through_c, edit("tmp")));
    let counted = [&by_b, &by_c].iter().filter(|cast| cast.is_ok()).count();
    assert_eq!(counted, 1, "{by_b:?} {by_c:?}");
    let refused = by_b.err().or(by_c.err()).unwrap();
    assert!(refused.contains("already"), "{refused}");
    a.caught_up().await.unwrap();
    assert_eq!(voters_so_far(&a, twice), ["dave"]);

    for round in 0..5 {
        let session = format!("ops-{round}");
        let pending = two_of_two(
            &a.acting_as(Identity::new("agent-1", Role::Agent)),
            &session,
        )
        .await;
        let id = pending.id();
        b.caught_up().await.unwrap();
        c.caught_up().await.unwrap();
        let alice = as_reviewer(&b, "alice");
        let bob = as_reviewer(&c, "bob");
        let (by_alice, by_bob) = tokio::join!(
            async { alice.approvals().reply(id, approve()).unwrap().await },
            async { bob.approvals().reply(id, approve()).unwrap().await },
        );
        by_alice.unwrap();
        by_bob.unwrap();
        let decided = tokio::time::timeout(EVENT_TIMEOUT, pending)
            .await
            .expect("the quorum ended the request")
            .unwrap();
        assert_eq!(decided.decisions, [Decision::Approve]);
        let mut names = voters(&decided.votes);
        names.sort_unstable();
        assert_eq!(names, ["alice", "bob"]);

        for events in [&mut a_events, &mut c_events] {
            let seen = events_until_replied(events, &id.to_string()).await;
            let kinds: Vec<String> = approval_events(&seen)
                .into_iter()
                .map(|(kind, _)| kind)
                .collect();
            assert_eq!(kinds, ["approval.asked", "decided", "decided", "replied"]);
        }
    }
}

/// The names of the reviewers who voted on pending request `id`, as `hub` knows them.
fn voters_so_far(hub: &RequestHub, id: askbus::question::ApprovalId) -> Vec<String> {
    let snapshot = hub.approvals().get(id).expect("the request is known");
    snapshot
        .votes
        .iter()
        .map(|vote| vote.by.name.to_string())
        .collect()
}

/// The events of request `id` up to its `approval.replied`, and a moment more to show
/// there is no second outcome.
async fn events_until_replied(events: &mut Subscription, id: &str) -> Vec<Envelope> {
    let mut seen = Vec::new();
    let collect = async {
        while let Some(event) = events.next().await {
            let event = event.expect("the test bus is roomy enough never to lag");
            if !event.json().contains(id) {
                continue;
            }
            let replied = event.downcast_ref::<ApprovalReplied>().is_some();
            seen.push(event);
            if replied {
                return;
            }
        }
    };
    if tokio::time::timeout(EVENT_TIMEOUT, collect).await.is_err() {
        panic!("no approval.replied for {id}; saw {seen:?}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    seen.extend(
        ready_envelopes(events)
            .into_iter()
            .filter(|event| event.json().contains(id)),
    );
    seen
}

#[tokio::test]
async fn any_reviewer_may_stop_what_the_named_ones_would_approve() {
    let hub = separated(RequestHub::new(roomy_bus()));
    let agent = hub.acting_as(Identity::new("agent-1", Role::Agent));
    // The agent names the one reviewer it hopes to fool: only bob may approve, but
    // anyone may refuse, and the session's kill switch still works for everyone.
    let ask = |session: &str| {
        agent
            .approvals()
            .request(session, vec![delete_rows()])
            .review(needs(1, Some(&["bob"])))
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
    };
    let vetoed = ask("ops");
    assert!(matches!(
        as_reviewer(&hub, "alice")
            .approvals()
            .reply(vetoed.id(), approve()),
        Err(ApprovalReplyError::NotAllowed(NotAllowed::NotNamed(_)))
    ));
    drop(
        as_reviewer(&hub, "alice")
            .approvals()
            .reply(vetoed.id(), reject("no"))
            .unwrap(),
    );
    assert!(!vetoed.await.unwrap().decisions[0].runs());

    let stopped = agent
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    drop(
        as_reviewer(&hub, "bob")
            .approvals()
            .reply(stopped.id(), approve())
            .unwrap(),
    );
    let rejected = as_reviewer(&hub, "alice")
        .reject_session("ops", Some("stop"))
        .await
        .unwrap();
    assert_eq!(rejected.approvals, 1);
    let decided = stopped.await.unwrap();
    assert!(!decided.decisions[0].runs());
    // The session's refusal is alice's vote, listed after bob's.
    assert_eq!(voters(&decided.votes), ["bob", "alice"]);
    // Naming only bob does not take the kill switch from alice either.
    let named = ask("ops");
    let rejected = as_reviewer(&hub, "alice")
        .reject_session("ops", None)
        .await
        .unwrap();
    assert_eq!(rejected.approvals, 1);
    assert!(!named.await.unwrap().decisions[0].runs());

    // A reviewer who approved may still veto: the approval is not what runs.
    let changed = agent
        .approvals()
        .request("ops", vec![delete_rows()])
        .review(needs(2, None))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let alice = as_reviewer(&hub, "alice");
    drop(alice.approvals().reply(changed.id(), approve()).unwrap());
    drop(
        alice
            .approvals()
            .reply(changed.id(), reject("on second thought"))
            .unwrap(),
    );
    let decided = changed.await.unwrap();
    assert_eq!(decided.decisions, reject("on second thought").decisions);
    assert_eq!(voters(&decided.votes), ["alice", "alice"]);
}

#[tokio::test]
async fn review_configs_whose_named_reviewers_could_never_approve_are_refused() {
    let hub = RequestHub::new(roomy_bus());
    let read = Action::new("read_rows", json!({"table": "users"}));
    let ask = |configs: Vec<ReviewConfig>| {
        hub.approvals()
            .request("ops", vec![delete_rows(), read.clone()])
            .review(configs)
            .timeout(Timeout::Never)
            .submit()
            .map(drop)
    };
    let config = |name: &str| ReviewConfig::new(name, DecisionType::ALL);
    // A quorum of 3 on one tool, two reviewers named on the other: nobody else may approve.
    let error = ask(vec![
        config("delete_rows").with_quorum(3),
        config("read_rows").with_reviewers(["x", "y"]),
    ])
    .unwrap_err();
    assert!(error.to_string().contains("quorum of 3"), "{error}");
    // Two lists with no one in common.
    assert!(
        ask(vec![
            config("delete_rows").with_reviewers(["alice"]),
            config("read_rows").with_reviewers(["bob"]),
        ])
        .is_err()
    );
    ask(vec![
        config("delete_rows")
            .with_reviewers(["alice", "bob"])
            .with_quorum(2),
        config("read_rows").with_reviewers(["bob", "alice", "carol"]),
    ])
    .unwrap();
}

#[tokio::test]
async fn the_operators_floor_raises_every_request_and_no_agent_lowers_it() {
    let floor: QuorumFloor = "delete_rows=2".parse().unwrap();
    let hub = separated(RequestHub::new(roomy_bus()).with_quorum_floor(floor));
    let agent = hub.acting_as(Identity::new("agent-1", Role::Agent));
    let quorum_of = |configs: Vec<ReviewConfig>| {
        let pending = agent
            .approvals()
            .request("ops", vec![delete_rows()])
            .review(configs)
            .timeout(Timeout::Never)
            .submit()
            .unwrap();
        let request = pending.detach();
        (request.quorum(), request.review_configs.len())
    };
    assert_eq!(quorum_of(vec![]), (2, 1), "a config is added");
    assert_eq!(quorum_of(needs(1, None)), (2, 1), "raised, not added");
    assert_eq!(quorum_of(needs(3, None)), (3, 1), "more is kept");
    // Other tools are not touched.
    let read = agent
        .approvals()
        .request("ops", vec![Action::new("read_rows", json!({}))])
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    assert_eq!((read.quorum(), read.review_configs.len()), (1, 0));
    // And one reviewer's approval is a vote, not a run.
    let pending = agent
        .approvals()
        .request("ops", vec![delete_rows()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    drop(
        as_reviewer(&hub, "alice")
            .approvals()
            .reply(pending.id(), approve())
            .unwrap(),
    );
    assert_eq!(hub.approvals().get(pending.id()).unwrap().outcome, None);

    for bad in ["drop_table", "drop_table=0", "=2", "*=x", "*=101"] {
        assert!(bad.parse::<QuorumFloor>().is_err(), "{bad}");
    }
    let every: QuorumFloor = "*=3".parse().unwrap();
    assert_eq!((every.of("anything"), every.highest()), (3, 3));
}
