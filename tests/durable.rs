//! Questions and approvals over a durable store: a restart (dropping every handle and
//! reopening the SQLite file) loses no request, no answer and no event.

use std::sync::Arc;
use std::time::Duration;

use askbus::bus::{Bus, BusConfig};
use askbus::question::{
    Action, ApprovalError, ApprovalReply, Decision, Outcome, OutcomeKind, PendingQuestion,
    QuestionService, ReplyError, RequestHub, ToolRef,
};
use askbus::{AskError, Timeout};
use askbus_store::{
    Ack, AckSender, MemoryStore, RequestKind, RequestRecord, SqliteStore, Store, StoreError,
    StoreLayer, Write, Written,
};
use futures_util::StreamExt;
use serde_json::json;

use crate::support::{language, ready_items};

/// One run of a server: the hub over a bus and the store of `dir`.
async fn start(dir: &tempfile::TempDir) -> RequestHub {
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("askbus.db")).expect("the store opens"));
    let bus = askbus_store::resume_bus(BusConfig::default(), Arc::clone(&store))
        .await
        .expect("the events load");
    RequestHub::builder()
        .bus(bus)
        .store(store)
        .build()
        .await
        .expect("the requests load")
}

/// Submits the language question in session `s1` from tool call `call_id`, never timing out.
fn ask_from_call(questions: &QuestionService, call_id: &str) -> PendingQuestion {
    questions
        .ask("s1", vec![language()])
        .tool(tool_call(call_id))
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
}

fn tool_call(call_id: &str) -> Option<ToolRef> {
    Some(ToolRef {
        message_id: "msg-1".into(),
        call_id: call_id.into(),
    })
}

#[tokio::test]
async fn a_restart_keeps_pending_questions_and_given_answers() {
    let dir = tempfile::tempdir().unwrap();
    let first = start(&dir).await;
    let questions = first.questions();
    let mut waiting = ask_from_call(questions, "call-waiting");
    waiting.recorded().await.expect("durable");
    let waiting_id = waiting.detach().id;
    let answered = ask_from_call(questions, "call-answered");
    let answered_id = answered.id();
    questions
        .reply(answered_id, vec![vec!["Go".into()]])
        .unwrap()
        .await
        .expect("the answer is durable");
    assert_eq!(answered.await, Ok(vec![vec!["Go".to_owned()]]));
    drop(first);

    let second = start(&dir).await;
    let questions = second.questions();
    let pending: Vec<_> = questions
        .list(None)
        .iter()
        .map(|request| request.id)
        .collect();
    assert_eq!(
        pending,
        [waiting_id],
        "the unanswered question is pending again"
    );
    let kept = questions
        .get(answered_id)
        .expect("the answered one is remembered");
    assert_eq!(
        kept.outcome.map(|outcome| outcome.kind()),
        Some(OutcomeKind::Replied)
    );
    assert_eq!(
        questions
            .reply(answered_id, vec![vec!["Rust".into()]])
            .map(drop),
        Err(ReplyError::AlreadyResolved {
            id: answered_id,
            outcome: OutcomeKind::Replied
        }),
        "an answer given before the restart still counts"
    );

    // The agent asks again from the same tool calls: no second prompt.
    let again = questions
        .ask("s1", vec![language()])
        .tool(tool_call("call-answered"))
        .timeout(Timeout::Never)
        .await;
    assert_eq!(again, Ok(vec![vec!["Go".to_owned()]]));
    let rejoined = ask_from_call(questions, "call-waiting");
    assert_eq!(rejoined.id(), waiting_id, "the pending question is joined");
    assert_eq!(questions.pending_count(), 1);
    drop(
        questions
            .reply(waiting_id, vec![vec!["Rust".into()]])
            .unwrap(),
    );
    assert_eq!(rejoined.await, Ok(vec![vec!["Rust".to_owned()]]));
}

#[tokio::test]
async fn new_ids_continue_above_the_stored_ones() {
    let dir = tempfile::tempdir().unwrap();
    let first = start(&dir).await;
    let before = first
        .questions()
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach()
        .id;
    drop(first);
    let second = start(&dir).await;
    let after = second
        .questions()
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach()
        .id;
    assert!(after > before, "{after} follows {before}");
}

#[tokio::test]
async fn event_cursors_from_before_a_restart_resume_without_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let first = start(&dir).await;
    let questions = first.questions();
    let asked = questions
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let cursor = first.bus().head();
    let id = asked.id();
    drop(questions.reject(id, Some("not now".into())).unwrap());
    assert_eq!(
        asked.await,
        Err(AskError::Rejected {
            reason: Some("not now".into())
        })
    );
    let missed: Vec<String> = first
        .bus()
        .subscribe_from(cursor)
        .unwrap()
        .take(1)
        .map(|envelope| envelope.unwrap().json().to_owned())
        .collect()
        .await;
    drop(first);

    let second = start(&dir).await;
    let mut resumed = second
        .bus()
        .subscribe_from(cursor)
        .expect("the cursor is known");
    let replayed = resumed.next().await.unwrap().unwrap();
    assert_eq!(replayed.event_type(), "question.rejected");
    assert_eq!(replayed.json(), missed[0], "the event reads as it did");
    second
        .questions()
        .ask("s2", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    let live = resumed.next().await.unwrap().unwrap();
    assert_eq!(live.event_type(), "question.asked");
    assert!(live.id() > replayed.id());
}

/// An event of a kilobyte, for the bus's history in bytes.
#[derive(Clone, serde::Serialize)]
struct Kilobyte {
    text: String,
}

impl askbus::Event for Kilobyte {
    const TYPE: &'static str = "test.kilobyte";
}

/// A bus resumed from the store keeps, of the events recorded, only the newest its
/// `history_bytes` allows, as it does of the events it publishes: a cursor from before them
/// is too old, one within them replays the rest.
#[tokio::test]
async fn a_resumed_bus_keeps_the_recorded_events_its_bytes_allow() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("askbus.db")).expect("the store opens"));
    let first = askbus_store::resume_bus(BusConfig::default(), Arc::clone(&store))
        .await
        .expect("the events load");
    let text = "x".repeat(1000);
    let ids: Vec<_> = (0..10)
        .map(|_| first.publish(Kilobyte { text: text.clone() }))
        .collect();
    let size = first
        .subscribe_from(ids[8])
        .expect("kept")
        .next()
        .await
        .expect("one")
        .expect("no lag")
        .json()
        .len();
    drop(first);
    // The journal's appends are queued in order: wait until the last is in.
    for _ in 0..200 {
        if store.recent_events(20).await.expect("readable").len() == 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let config = BusConfig {
        history_bytes: 4 * size + size / 2,
        ..BusConfig::default()
    };
    let second = askbus_store::resume_bus(config, Arc::clone(&store))
        .await
        .expect("the events load");
    assert!(
        matches!(
            second.subscribe_from(ids[4]),
            Err(askbus::bus::ReplayError::CursorTooOld { oldest, .. }) if oldest == ids[5]
        ),
        "only the newest four are kept"
    );
    let replayed: Vec<_> = second
        .subscribe_from(ids[5])
        .expect("the oldest cursor resumes")
        .take(4)
        .map(|envelope| envelope.expect("no lag").id())
        .collect()
        .await;
    assert_eq!(replayed, ids[6..]);
}

// Real time: the expiry reaches the waiter once SQLite's writer thread acknowledged it,
// which a paused clock would not wait for (it jumps ahead as soon as the runtime idles).
#[tokio::test]
async fn a_question_that_expired_while_the_server_was_down_times_out() {
    let dir = tempfile::tempdir().unwrap();
    {
        // A question recorded by an earlier run that expired an hour ago.
        let store = SqliteStore::open(dir.path().join("askbus.db")).unwrap();
        let id = "que_01JZ6Q3V8R5M2K7D4T9WXYZABC";
        let body = json!({
            "id": id, "sessionID": "s1", "createdAt": 1_000, "expiresAt": 2_000,
            "questions": [{"question": "Deploy?", "header": "Deploy", "options": []}],
        });
        let record = RequestRecord {
            id: id.into(),
            kind: RequestKind::Question,
            session_id: "s1".into(),
            call_id: None,
            created_at_ms: 1_000,
            expires_at_ms: Some(2_000),
            body: body.to_string(),
        };
        assert_eq!(
            store.write(Write::Insert(record)).await.unwrap(),
            Written::Inserted
        );
    }
    let hub = start(&dir).await;
    let id = "que_01JZ6Q3V8R5M2K7D4T9WXYZABC".parse().unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), hub.questions().wait(id))
        .await
        .expect("it times out at once (the bound only keeps a failure from hanging)");
    assert_eq!(
        outcome.map(|outcome| outcome.kind()),
        Ok(OutcomeKind::TimedOut)
    );
    assert_eq!(hub.questions().pending_count(), 0);
}

#[tokio::test]
async fn approval_keys_continue_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let first = start(&dir).await;
    let action = || Action::new("delete_rows", json!({"table": "users"}));
    let one = first
        .approvals()
        .request("s1", vec![action()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach();
    assert_eq!(&*one.approval_key, "s1_1");
    drop(first);

    let second = start(&dir).await;
    let approvals = second.approvals();
    assert_eq!(
        approvals.id_for_key("s1_1"),
        Some(one.id),
        "old keys still address"
    );
    let two = approvals
        .request("s1", vec![action()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    assert_eq!(&*two.request().approval_key, "s1_2");
    approvals
        .reply(one.id, ApprovalReply::new([Decision::Approve]))
        .unwrap()
        .await
        .expect("durable");
    assert_eq!(
        approvals
            .get(one.id)
            .and_then(|snapshot| snapshot.outcome)
            .map(|o| o.kind()),
        Some(OutcomeKind::Replied)
    );
}

/// A session whose requests were all forgotten before a restart continues above its old
/// keys after it: the store's count of requests ever held is the floor. Before, `s1_1`
/// was given again, and a late answer sent to the old `s1_1` would have reached a request
/// its sender never saw.
#[tokio::test]
async fn a_key_is_never_given_twice_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let forgetting = |dir: &tempfile::TempDir| {
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(dir.path().join("askbus.db")).expect("the store opens"));
        RequestHub::builder()
            .store(store)
            .questions(askbus::question::QuestionConfig {
                retain_resolved: 0,
                ..askbus::question::QuestionConfig::default()
            })
            .build()
    };
    let first = forgetting(&dir).await.expect("the requests load");
    let asked = ask_from_call(first.questions(), "call-1");
    assert_eq!(&*asked.request().approval_key, "s1_1");
    let id = asked.id();
    first
        .questions()
        .reply(id, vec![vec!["Go".into()]])
        .unwrap()
        .await
        .expect("durable");
    assert_eq!(first.questions().id_for_key("s1_1"), None, "forgotten");
    drop((first, asked));

    let second = forgetting(&dir).await.expect("the requests load");
    assert_eq!(second.questions().id_for_key("s1_1"), None);
    let n = |key: &str| -> u64 {
        key.strip_prefix("s1_")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{key:?} is no key of s1"))
    };
    let again = ask_from_call(second.questions(), "call-2");
    let after = n(&again.request().approval_key);
    assert!(
        after > 1,
        "the session continues above the key it gave before the restart: s1_{after}"
    );
    let other = ask_from_call(second.questions(), "call-3");
    assert_eq!(n(&other.request().approval_key), after + 1);
}

#[tokio::test]
async fn without_a_store_a_repeated_tool_call_also_gets_one_request() {
    let hub = RequestHub::new(Bus::new());
    let questions = hub.questions();
    let first = ask_from_call(questions, "c1");
    let second = ask_from_call(questions, "c1");
    assert_eq!(first.id(), second.id());
    let other_session = questions
        .ask("s2", vec![language()])
        .tool(tool_call("c1"))
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    assert_ne!(other_session.id(), first.id(), "call ids are per session");
    // The joiner only watches: dropping it leaves the question to its asker.
    drop(second);
    assert_eq!(questions.pending_count(), 2);
    drop(
        questions
            .reply(first.id(), vec![vec!["Go".into()]])
            .unwrap(),
    );
    assert_eq!(first.await, Ok(vec![vec!["Go".to_owned()]]));
}

/// Every outcome leaves one receipt in the store's audit log, written with the answer:
/// it names the request, the hash of its stored JSON, the outcome and its data.
#[tokio::test]
async fn every_outcome_leaves_one_audit_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(&dir).await;
    let questions = hub.questions();
    let answered = ask_from_call(questions, "call-answered");
    let answered_id = answered.id();
    questions
        .reply(answered_id, vec![vec!["Go".into()]])
        .unwrap()
        .await
        .expect("the answer is durable");
    // A second answer loses: it leaves no receipt.
    assert!(
        questions
            .reply(answered_id, vec![vec!["Rust".into()]])
            .is_err()
    );
    let mut cancelled = ask_from_call(questions, "call-cancelled");
    cancelled.recorded().await.unwrap();
    let cancelled_id = cancelled.id();
    drop(cancelled);

    let store = hub.store().expect("a hub with a store");
    // The cancel is queued as the asker drops: a read after it sees it.
    let entries = store.audit_entries(0, 100).await.unwrap();
    let drafts: Vec<askbus_audit::AuditDraft> = entries
        .iter()
        .map(|entry| serde_json::from_str(&entry.draft).unwrap())
        .collect();
    let stored = store.get(&answered_id.to_string()).await.unwrap().unwrap();
    let expected_sha =
        askbus_audit::AuditDraft::new(&stored.request, stored.outcome.as_ref().unwrap(), None)
            .request_sha256;
    assert_eq!(drafts[0].request_id, answered_id.to_string());
    assert_eq!(drafts[0].request_sha256, expected_sha);
    assert_eq!(drafts[0].outcome, askbus_audit::AuditOutcome::Replied);
    assert_eq!(drafts[0].decision, json!([["Go"]]));
    assert_eq!(drafts[1].request_id, cancelled_id.to_string());
    assert_eq!(drafts[1].outcome, askbus_audit::AuditOutcome::Cancelled);
    assert_eq!(
        entries.iter().map(|entry| entry.seq).collect::<Vec<_>>(),
        [1, 2]
    );
}

/// A memory store that holds back the acknowledgement of every outcome written until
/// [`release`](Self::release): an outcome whose write is not durable yet, for as long as a
/// test wants.
#[derive(Default)]
struct HeldOutcomes {
    store: MemoryStore,
    held: std::sync::Mutex<Vec<(AckSender, Ack)>>,
}

impl HeldOutcomes {
    /// A hub over a store holding back its outcomes.
    async fn hub() -> (Arc<Self>, RequestHub) {
        let store = Arc::new(Self::default());
        let hub = RequestHub::builder()
            .store(Arc::clone(&store) as Arc<dyn Store>)
            .build()
            .await
            .expect("the store opens");
        (store, hub)
    }

    /// Acknowledges every outcome held back so far.
    async fn release(&self) {
        let held = std::mem::take(&mut *self.held.lock().unwrap());
        for (sender, written) in held {
            let _ = sender.send(written.await);
        }
    }

    /// Answers every outcome held back so far as not written: the store failed.
    fn fail(&self) {
        let held = std::mem::take(&mut *self.held.lock().unwrap());
        for (sender, _) in held {
            let _ = sender.send(Err(StoreError::CommitFailed(
                "database or disk is full".to_owned(),
            )));
        }
    }

    fn held(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

impl StoreLayer for HeldOutcomes {
    fn inner(&self) -> &dyn Store {
        &self.store
    }
    fn write(&self, write: Write) -> Ack {
        let outcome = matches!(write, Write::Resolve { .. });
        let written = self.store.write(write);
        if !outcome {
            return written;
        }
        let (sender, held) = Ack::channel();
        self.held.lock().unwrap().push((sender, written));
        held
    }
}

/// Whether `future` completes when polled once more, after the runtime ran everything else
/// that was ready.
async fn completes_now<F: std::future::Future + Unpin>(future: &mut F) -> bool {
    tokio::task::yield_now().await;
    futures_util::poll!(future).is_ready()
}

/// An agent waiting for an answer (asking in process, or long-polling as `/wait` does,
/// before or after the reply) resumes only once the answer is durable: a crash before that
/// would have it act on an answer the restarted server does not know.
#[tokio::test]
async fn waiters_resume_only_once_the_answer_is_durable() {
    let (store, hub) = HeldOutcomes::hub().await;
    let questions = hub.questions();
    let mut asker = ask_from_call(questions, "call-1");
    asker.recorded().await.expect("the question is durable");
    let id = asker.id();
    let mut early = Box::pin(questions.wait(id));
    assert!(!completes_now(&mut early).await, "nobody answered yet");

    let mut reply = questions
        .reply(id, vec![vec!["Go".into()]])
        .expect("a valid reply");
    let mut late = Box::pin(questions.wait(id));
    assert_eq!(store.held(), 1, "the outcome was written and is held back");
    assert!(
        !completes_now(&mut reply).await,
        "the reply is not acknowledged yet"
    );
    assert!(
        !completes_now(&mut early).await,
        "a waiter from before the reply waits for the store"
    );
    assert!(
        !completes_now(&mut late).await,
        "so does one that came after it"
    );
    assert!(!completes_now(&mut asker).await, "so does the asker");
    let mut joined = ask_from_call(questions, "call-1");
    assert_eq!(joined.id(), id, "the same tool call joins the request");
    assert!(
        !completes_now(&mut joined).await,
        "and waits for the store too"
    );

    store.release().await;
    reply.await.expect("the answer is durable");
    let answer = vec![vec!["Go".to_owned()]];
    let replied = Outcome::Replied(answer.clone().into());
    assert_eq!(early.await, Ok(replied.clone()));
    assert_eq!(late.await, Ok(replied.clone()));
    assert_eq!(asker.await, Ok(answer.clone()));
    assert_eq!(joined.await, Ok(answer));
    assert_eq!(
        questions.wait(id).await,
        Ok(replied),
        "remembered, and durable"
    );
}

/// An answer the store fails to record is handed to nobody: the asker, every waiter and
/// a joining tool call get the store's failure, as the human does, since a restart would
/// forget the answer (the store still holds the question pending). The same tool call
/// asking again makes a new request, which a working store then answers.
#[tokio::test]
async fn an_answer_the_store_could_not_record_is_never_acted_on() {
    let (store, hub) = HeldOutcomes::hub().await;
    let questions = hub.questions();
    let mut asker = ask_from_call(questions, "call-1");
    asker.recorded().await.expect("the question is durable");
    let id = asker.id();
    let mut events = hub.bus().subscribe_all();
    let early = questions.wait(id);
    let reply = questions
        .reply(id, vec![vec!["Go".into()]])
        .expect("a valid reply");
    let late = questions.wait(id);
    let mut joined = ask_from_call(questions, "call-1");
    assert_eq!(joined.id(), id, "joined while the store has not answered");
    assert!(!completes_now(&mut joined).await, "nothing is durable yet");

    store.fail();
    let refused = reply.await.expect_err("the human hears the store failed");
    assert!(
        refused.to_string().contains("disk is full"),
        "the store's failure is told: {refused}"
    );
    assert_eq!(
        published(&mut events),
        [
            format!("question.replied {id}"),
            format!("question.not_recorded {id} replied"),
        ],
        "whoever saw the answer's event learns it does not stand"
    );
    for waited in [early.await, late.await, questions.wait(id).await] {
        assert!(
            matches!(&waited, Err(ReplyError::NotRecorded { id: failed, .. }) if *failed == id),
            "a waiter gets the failure, not the answer: {waited:?}"
        );
    }
    for asked in [asker.await, joined.await] {
        assert!(
            matches!(&asked, Err(AskError::NotRecorded(why)) if why.to_string().contains("disk is full")),
            "an asker gets the failure, not the answer: {asked:?}"
        );
    }

    let again = ask_from_call(questions, "call-1");
    assert_ne!(again.id(), id, "the tool call asks anew");
    let again_id = again.id();
    let reply = questions
        .reply(again_id, vec![vec!["Rust".into()]])
        .expect("a valid reply");
    store.release().await;
    reply.await.expect("the store works again");
    assert_eq!(again.await, Ok(vec![vec!["Rust".to_owned()]]));
}

/// A timeout nobody awaits the write of (no human answered) whose outcome the store fails
/// to record reaches the asker as that failure, not as the timeout a restart would forget.
#[tokio::test(start_paused = true)]
async fn a_timeout_the_store_could_not_record_reaches_the_asker_as_the_failure() {
    let (store, hub) = HeldOutcomes::hub().await;
    let mut asker = hub
        .questions()
        .ask("s1", vec![language()])
        .timeout(Timeout::After(Duration::from_secs(5)))
        .submit()
        .unwrap();
    asker.recorded().await.expect("the question is durable");
    let id = asker.id();
    let mut events = hub.bus().subscribe_all();
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(
        !completes_now(&mut asker).await,
        "the timeout is not durable yet"
    );
    assert_eq!(store.held(), 1, "the timeout was written");
    store.fail();
    let asked = asker.await;
    assert!(
        matches!(&asked, Err(AskError::NotRecorded(_))),
        "the asker gets the failure: {asked:?}"
    );
    assert_eq!(
        published(&mut events),
        [
            format!("question.timed_out {id}"),
            format!("question.not_recorded {id} timed_out"),
        ],
        "the expiry's event is followed by its refusal"
    );
}

/// `always` stands only once its approval is durable: while the store writes, nothing is
/// granted, and if it could not record the approval, the asker gets the failure and a later
/// identical call waits for a human instead of being approved on a decision no receipt
/// records.
#[tokio::test]
async fn a_grant_stands_only_once_its_approval_is_recorded() {
    let (store, hub) = HeldOutcomes::hub().await;
    let approvals = hub.approvals();
    let status = || vec![Action::new("bash", json!({"command": "git status"}))];
    let mut first = approvals
        .request("s1", status())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    first.recorded().await.expect("the request is durable");
    let mut events = hub.bus().subscribe_all();
    let (durable, _grant) = approvals.reply_always(first.id()).unwrap();
    assert_eq!(
        approvals.grants("s1"),
        [],
        "nothing stands while the store writes"
    );
    store.fail();
    durable.await.expect_err("the approval was not recorded");
    let id = first.id();
    assert_eq!(
        published(&mut events),
        [
            format!("approval.replied {id}"),
            format!("approval.not_recorded {id} replied"),
        ],
        "whoever saw the approval's event learns it does not stand"
    );
    let asked = first.await;
    assert!(
        matches!(&asked, Err(ApprovalError::NotRecorded(_))),
        "the asker gets the failure: {asked:?}"
    );
    assert_eq!(approvals.grants("s1"), [], "nothing was granted");

    let mut again = approvals
        .request("s1", status())
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    again.recorded().await.expect("the request is durable");
    assert!(
        !completes_now(&mut again).await,
        "the same call waits for a human"
    );
    assert_eq!(approvals.list(Some("s1")).len(), 1, "pending for a human");
}

/// The events published so far and not yet read from `events`, each as its type and
/// request id, and for `*.not_recorded` the outcome it says was not recorded.
fn published(events: &mut askbus::bus::Subscription) -> Vec<String> {
    ready_items(events)
        .into_iter()
        .map(|envelope| {
            let envelope = envelope.expect("the test's subscriber keeps up");
            let json: serde_json::Value = serde_json::from_str(envelope.json()).expect("JSON");
            let properties = &json["properties"];
            let id = properties["requestID"]
                .as_str()
                .or(properties["request_id"].as_str())
                .or(properties["id"].as_str())
                .expect("a request event");
            match properties["outcome"].as_str() {
                Some(outcome) => format!("{} {id} {outcome}", envelope.event_type()),
                None => format!("{} {id}", envelope.event_type()),
            }
        })
        .collect()
}

/// A shared memory store that refuses every write: a shared store that is down.
struct RefusingEveryWrite(Arc<MemoryStore>);

impl StoreLayer for RefusingEveryWrite {
    fn inner(&self) -> &dyn Store {
        &*self.0
    }
    fn write(&self, _: Write) -> Ack {
        let (sender, refused) = Ack::channel();
        let _ = sender.send(Err(StoreError::CommitFailed(
            "the store is down".to_owned(),
        )));
        refused
    }
}

/// A question the store (one server's, as SQLite) could not insert is withdrawn: its asker
/// is told, and the stream, which saw it asked, sees it cancelled. Its cancellation has no
/// row to end either, and that is no news: no `question.not_recorded` follows.
#[tokio::test]
async fn a_question_the_store_could_not_insert_is_cancelled_and_nothing_more() {
    let hub = RequestHub::builder()
        .store(Arc::new(RefusingEveryWrite(Arc::new(MemoryStore::new()))) as Arc<dyn Store>)
        .build()
        .await
        .expect("the store opens");
    let mut events = hub.bus().subscribe_all();
    let mut asker = hub
        .questions()
        .ask("s1", vec![language()])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let id = asker.id();
    asker
        .recorded()
        .await
        .expect_err("the store refused the question");
    let asked = asker.await;
    assert!(
        matches!(&asked, Err(AskError::NotRecorded(_))),
        "the asker is told: {asked:?}"
    );
    // The cancellation's own write is answered in the background: let it be.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        published(&mut events),
        [
            format!("question.asked {id}"),
            format!("question.cancelled {id}")
        ]
    );
}

/// While the shared store is down, every create is withdrawn and its cancellation retried
/// in the background, in case the insert took effect after all. A withdrawn request frees
/// its quota slot at once, so what bounds those retries is the registry's own room (1,024
/// at once): a client creating in a loop through an outage leaves no more tasks than that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_refused_in_a_shared_store_outage_leave_bounded_retries() {
    let hub = RequestHub::builder()
        .store(Arc::new(RefusingEveryWrite(Arc::new(MemoryStore::new()))) as Arc<dyn Store>)
        .shared()
        .build()
        .await
        .expect("the store is read");
    let before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    for n in 0..1_500 {
        let mut asked = hub
            .questions()
            .ask(format!("s{n}"), vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .expect("registered");
        let recorded = asked.recorded().await;
        assert!(recorded.is_err(), "{recorded:?}");
    }
    assert!(
        hub.questions().list(None).is_empty(),
        "every create withdrawn"
    );
    // The retries sleep a second between attempts; the rest end after their one.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let retrying = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
        - before;
    assert!(
        (1_000..=1_100).contains(&retrying),
        "{retrying} tasks retry withdrawals"
    );
}

/// `GET path` of `router`: the status and the body as JSON.
async fn http_get(router: &axum::Router, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = crate::support::router_get(router, path).await;
    (status, serde_json::from_str(&body).expect("JSON"))
}

/// Over HTTP as in process: a read of a request answered already (`GET /question/{id}`,
/// its `/wait`) hands out the answer only once the store holds it, and once the store
/// refused it, the 503 `outcome_not_recorded` every waiter got, never the answer an agent
/// polling over HTTP would act on. `/metrics` counts the refused outcome.
#[tokio::test]
async fn http_reads_hand_out_no_answer_the_store_does_not_hold() {
    let (store, hub) = HeldOutcomes::hub().await;
    let questions = hub.questions();
    let mut asker = ask_from_call(questions, "call-1");
    asker.recorded().await.expect("the question is durable");
    let id = asker.id();
    let router = askbus_http::router(
        hub.clone(),
        askbus_http::HttpConfig::default(),
        tokio_util::sync::CancellationToken::new(),
    );
    let reply = questions
        .reply(id, vec![vec!["Go".into()]])
        .expect("a valid reply");
    assert_eq!(store.held(), 1, "the answer is on its way to the store");

    let read = format!("/question/{id}");
    let mut early_read = Box::pin(http_get(&router, &read));
    assert!(
        !completes_now(&mut early_read).await,
        "a read of the answer waits for the store"
    );
    let (status, waited) = http_get(&router, &format!("/question/{id}/wait?timeout=0.2")).await;
    assert_eq!(status, 200, "{waited}");
    assert_eq!(waited["status"], "pending", "not durable yet: {waited}");
    assert_eq!(waited.get("answers"), None, "{waited}");

    store.fail();
    assert!(reply.await.is_err(), "the human hears the store failed");
    let (status, refused) = early_read.await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (503, Some("outcome_not_recorded")),
        "{refused}"
    );
    for path in [read, format!("/question/{id}/wait")] {
        let (status, refused) = http_get(&router, &path).await;
        assert_eq!(
            (status, refused["code"].as_str()),
            (503, Some("outcome_not_recorded")),
            "{path}: {refused}"
        );
    }
    let (status, metrics) = crate::support::router_get(&router, "/metrics").await;
    assert_eq!(status, 200, "{metrics}");
    for series in [
        "askbus_outcomes_not_recorded_total{kind=\"question\"} 1",
        "askbus_outcomes_not_recorded_total{kind=\"approval\"} 0",
    ] {
        assert!(metrics.contains(series), "{series} in {metrics}");
    }
    drop(asker);
}
