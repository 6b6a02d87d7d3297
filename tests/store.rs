//! The storage backends against one contract: memory, SQLite (restart = reopen the file)
//! and Redis (the real server on 127.0.0.1:6379; a missing Redis fails the test).

use std::sync::Arc;
use std::time::Duration;

use crate::support::{PrivateRedis, TestRedis, until_ok};
use askbus_store::{
    AfterAttempt, Attempt, AuditRecord, ChangeKind, Delivery, DeliveryQuery, DeliveryState,
    EventRecord, HistoryPage, HistoryRecord, LogPosition, MemoryStore, OutboxMessage,
    OutcomeRecord, OutcomeState, RedisStore, RequestKind, RequestRecord, SWEEP_INTERVAL,
    SessionEvent, SqliteStore, Store, StoreError, Write, Written, keep_resolved_for,
};

#[tokio::test]
async fn memory_store_keeps_the_contract() {
    check_contract(&MemoryStore::new()).await;
}

#[tokio::test]
async fn sqlite_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    check_contract(&SqliteStore::open(dir.path().join("askbus.db")).unwrap()).await;
}

#[tokio::test]
async fn redis_store_keeps_the_contract() {
    let redis = TestRedis::new().await;
    check_contract(&redis.open().await).await;
}

#[tokio::test]
async fn memory_store_keeps_the_audit_log() {
    let store = MemoryStore::new();
    check_audit(&store, &store.clone()).await;
}

#[tokio::test]
async fn sqlite_store_keeps_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = SqliteStore::open(&path).unwrap();
    check_audit(&store, &store.clone()).await;
    let before = store.audit_entries(0, 10).await.unwrap();
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.audit_entries(0, 10).await.unwrap(), before);
}

/// Two instances append to one audit log, numbered in one sequence.
#[tokio::test]
async fn redis_store_keeps_the_audit_log() {
    let redis = TestRedis::new().await;
    check_audit(&redis.open().await, &redis.open().await).await;
}

#[tokio::test]
async fn memory_store_keeps_session_histories() {
    check_history(&MemoryStore::new().with_history_limit(4), 4 + 1).await;
}

#[tokio::test]
async fn sqlite_store_keeps_session_histories() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("askbus.db")).unwrap();
    check_history(&store.with_history_limit(4), 4 + 1).await;
}

#[tokio::test]
async fn redis_store_keeps_session_histories() {
    let redis = TestRedis::new().await;
    check_history(&redis.open().await.with_history_limit(4), 4 + 1).await;
}

#[tokio::test]
async fn memory_store_keeps_session_histories_within_their_bytes() {
    check_history_bytes(&MemoryStore::new().with_history_bytes(HISTORY_BYTES)).await;
}

#[tokio::test]
async fn sqlite_store_keeps_session_histories_within_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("askbus.db")).unwrap();
    check_history_bytes(&store.with_history_bytes(HISTORY_BYTES)).await;
}

#[tokio::test]
async fn redis_store_keeps_session_histories_within_their_bytes() {
    let redis = TestRedis::new().await;
    check_history_bytes(&redis.open().await.with_history_bytes(HISTORY_BYTES)).await;
}

/// A history written before histories were counted in bytes (Redis schema 4) is counted
/// whole at its next record, and trimmed by bytes from then on.
#[tokio::test]
async fn redis_store_counts_the_bytes_of_a_history_written_before_it() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    for n in 0..8 {
        write(&store, Write::Event(big_step("s", n, 500))).await;
    }
    drop(store);
    // As version 4 left it: no byte counts.
    let counts = format!("{}:history_bytes", redis.prefix);
    redis.command(redis::cmd("DEL").arg(&counts));
    let store = redis.open().await.with_history_bytes(HISTORY_BYTES);
    write(&store, Write::Event(big_step("s", 8, 500))).await;
    let kept = whole_history(&store, "s").await;
    assert_eq!(kept.len(), 9, "under 8 KiB: nothing dropped");
    let counted: usize = redis.query(redis::cmd("HGET").arg(&counts).arg("s"));
    assert_eq!(counted, history_bytes(&kept));
    for n in 9..32 {
        write(&store, Write::Event(big_step("s", n, 500))).await;
    }
    let kept = whole_history(&store, "s").await;
    assert!(history_bytes(&kept) <= HISTORY_BYTES + HISTORY_BYTES / 8);
    let counted: usize = redis.query(redis::cmd("HGET").arg(&counts).arg("s"));
    assert_eq!(counted, history_bytes(&kept));
}

/// A SQLite file of schema 3 (histories counted in records only) is upgraded with the
/// bytes of its histories counted.
#[tokio::test]
async fn sqlite_store_upgrade_counts_the_bytes_of_histories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = SqliteStore::open(&path).unwrap();
    for n in 0..16 {
        write(&store, Write::Event(big_step("s", n, 1_000))).await;
    }
    drop(store);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "ALTER TABLE histories DROP COLUMN bytes; ALTER TABLE requests DROP COLUMN decided_by;
             DROP TABLE audit; DROP TABLE deliveries; PRAGMA user_version = 3;",
        )
        .unwrap();
    let store = SqliteStore::open(&path)
        .unwrap()
        .with_history_bytes(HISTORY_BYTES);
    write(&store, Write::Event(big_step("s", 16, 1_000))).await;
    let kept = whole_history(&store, "s").await;
    assert!(
        history_bytes(&kept) <= HISTORY_BYTES,
        "{}",
        history_bytes(&kept)
    );
    assert_eq!(
        kept.last().map(|record| &record.entry),
        Some(&ChangeKind::Event(big_step("s", 16, 1_000)))
    );
}

#[tokio::test]
async fn memory_store_forgets_quiet_histories() {
    check_forget_histories(&MemoryStore::new()).await;
}

#[tokio::test]
async fn sqlite_store_forgets_quiet_histories() {
    let dir = tempfile::tempdir().unwrap();
    check_forget_histories(&SqliteStore::open(dir.path().join("askbus.db")).unwrap()).await;
}

#[tokio::test]
async fn redis_store_forgets_quiet_histories() {
    let redis = TestRedis::new().await;
    check_forget_histories(&redis.open().await).await;
}

/// A file an older askbus wrote (schema 2: no histories) is upgraded when opened, its
/// requests kept; one a newer askbus wrote is refused.
#[tokio::test]
async fn sqlite_store_upgrades_an_older_schema_and_refuses_a_newer_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = SqliteStore::open(&path).unwrap();
    write(&store, Write::Insert(question("que_1", None))).await;
    write(&store, Write::Insert(in_session("que_2", "u"))).await;
    drop(store);
    let schema = |sql: &str| {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(sql)
            .unwrap()
    };
    schema(
        "DROP TABLE history; DROP TABLE histories; ALTER TABLE requests DROP COLUMN decided_by;
         DROP TABLE audit; DROP TABLE deliveries; PRAGMA user_version = 2;",
    );

    let store = SqliteStore::open(&path).unwrap();
    assert!(store.get("que_1").await.unwrap().is_some());
    write(&store, Write::Event(step_event("s", 1))).await;
    let history = whole_history(&store, "s").await;
    assert_eq!(history.len(), 1, "{history:?}");
    // Its session waits for que_1, asked before the upgrade: its history is kept.
    assert_eq!(store.forget_quiet_histories(u64::MAX, 10).await.unwrap(), 0);
    write(&store, resolve("que_2", OutcomeState::Replied)).await;
    assert_eq!(
        store.get("que_2").await.unwrap().unwrap().outcome,
        Some(outcome(OutcomeState::Replied)),
        "the upgrade adds the column of who decided"
    );
    drop(store);

    schema("PRAGMA user_version = 99;");
    match SqliteStore::open(&path) {
        Err(StoreError::NewerSchema { found, supported }) => {
            assert_eq!((found, supported), (99, 7))
        }
        other => panic!("a newer schema was not refused: {other:?}"),
    }
}

/// A read whose reader left before its turn costs the writer thread nothing: 500 reads of
/// a 16 MB history, each given up as soon as asked, once held up whatever was queued after
/// them (the next read here; the writes of the next group) until every one had run.
#[tokio::test]
async fn sqlite_store_skips_the_reads_nobody_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("askbus.db")).unwrap();
    let steps: Vec<_> = (0..256)
        .map(|n| store.write(Write::Event(big_step("big", n, 64 * 1024))))
        .collect();
    for step in steps {
        step.await.unwrap();
    }
    for _ in 0..500 {
        drop(store.history("big", HistoryPage::From(0), usize::MAX));
    }
    let started = std::time::Instant::now();
    assert!(store.get("que_none").await.unwrap().is_none());
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(2),
        "the next read waited {waited:?}"
    );
}

/// A write that makes SQLite roll the whole transaction back (here a trigger's
/// `RAISE(ROLLBACK)`, as a full disk or an I/O error may) fails its whole group, and the
/// writes after it in the group are not committed alone: every write's answer says what
/// the file holds. (They were: the next savepoint began a transaction of its own, which
/// committed, while its answer said the group failed.)
#[tokio::test]
async fn sqlite_store_answers_what_it_holds_when_sqlite_rolls_a_group_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    drop(SqliteStore::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER boom BEFORE INSERT ON requests WHEN NEW.id = 'que_boom'
             BEGIN SELECT RAISE(ROLLBACK, 'the disk is full'); END;",
        )
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    // Queued behind a large group, so that these land in one group of their own.
    let busy: Vec<_> = (0..64)
        .map(|n| store.write(Write::Event(big_step("busy", n, 64 * 1024))))
        .collect();
    let acks: Vec<_> = ["que_1", "que_boom", "que_2"]
        .into_iter()
        .map(|id| (id, store.write(Write::Insert(question(id, None)))))
        .collect();
    // They may share the failed group: whatever the answer, it is what the file holds.
    let mut failed = 0;
    for step in busy {
        failed += usize::from(step.await.is_err());
    }
    for (id, ack) in acks {
        let answered = ack.await;
        let held = store.get(id).await.unwrap().is_some();
        assert_eq!(
            answered.is_ok(),
            held,
            "{id}: answered {answered:?}, held {held}"
        );
        if id == "que_boom" {
            let refused = answered.unwrap_err().to_string();
            assert!(refused.contains("the disk is full"), "{refused}");
        }
    }
    assert_eq!(
        whole_history(&store, "busy").await.len(),
        64 - failed,
        "a step is kept if and only if it was answered as written"
    );
    assert!(store.get("que_boom").await.unwrap().is_none());
    write(&store, Write::Insert(question("que_3", None))).await;
    assert!(
        store.get("que_3").await.unwrap().is_some(),
        "the store goes on"
    );
}

/// A SQLite store's histories are the same after a reopen, and keep their positions.
#[tokio::test]
async fn sqlite_store_keeps_histories_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = SqliteStore::open(&path).unwrap();
    write(&store, Write::Insert(question("que_1", None))).await;
    write(&store, Write::Event(step_event("s", 1))).await;
    let before = whole_history(&store, "s").await;
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(whole_history(&store, "s").await, before);
    write(&store, Write::Event(step_event("s", 2))).await;
    let after = whole_history(&store, "s").await;
    assert_eq!(after[..2], before);
    assert!(after[2].position > before[1].position);
}

#[tokio::test]
async fn memory_store_forgets_old_resolved_requests() {
    check_forget(&MemoryStore::new()).await;
}

#[tokio::test]
async fn sqlite_store_forgets_old_resolved_requests() {
    let dir = tempfile::tempdir().unwrap();
    check_forget(&SqliteStore::open(dir.path().join("askbus.db")).unwrap()).await;
}

#[tokio::test]
async fn redis_store_forgets_old_resolved_requests() {
    let redis = TestRedis::new().await;
    check_forget(&redis.open().await).await;
}

/// The sweeper deletes what is due one interval after it starts and at each interval, and
/// ends once its store is dropped.
#[tokio::test(start_paused = true)]
async fn keep_resolved_for_sweeps_each_interval_until_the_store_is_gone() {
    const DAY: Duration = Duration::from_secs(24 * 3600);
    let resolved_days_ago = |id: &str, days: u64| Write::Resolve {
        kind: RequestKind::Question,
        id: id.into(),
        outcome: OutcomeRecord::new(
            OutcomeState::Replied,
            "[]",
            askbus_store::now_ms() - days * 86_400_000,
        ),
        audit: None,
        outbox: None,
    };
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    for id in ["que_1", "que_2"] {
        write(&*store, Write::Insert(question(id, None))).await;
    }
    write(&*store, resolved_days_ago("que_1", 3)).await;
    write(&*store, resolved_days_ago("que_2", 0)).await;

    let sweeper = tokio::spawn(keep_resolved_for(Arc::downgrade(&store), DAY));
    tokio::time::sleep(SWEEP_INTERVAL - Duration::from_secs(1)).await;
    assert!(store.get("que_1").await.unwrap().is_some(), "not swept yet");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(store.get("que_1").await.unwrap(), None);
    assert!(store.get("que_2").await.unwrap().is_some());
    // Resolved long ago but recorded since: the next sweep takes it.
    write(&*store, Write::Insert(question("que_3", None))).await;
    write(&*store, resolved_days_ago("que_3", 2)).await;
    tokio::time::sleep(SWEEP_INTERVAL).await;
    assert_eq!(store.get("que_3").await.unwrap(), None);
    assert!(store.get("que_2").await.unwrap().is_some());

    drop(store);
    tokio::time::timeout(2 * SWEEP_INTERVAL, sweeper)
        .await
        .expect("the sweeper ends with its store")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_resolves_exactly_once_under_concurrent_attempts() {
    let store = MemoryStore::new();
    check_exactly_once(&[store.clone(), store.clone(), store]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_resolves_exactly_once_under_concurrent_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("askbus.db")).unwrap();
    check_exactly_once(&[store.clone(), store.clone(), store]).await;
}

/// Three handles with their own connections and writer tasks stand for three instances.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_store_resolves_exactly_once_across_instances() {
    let redis = TestRedis::new().await;
    let instances = [redis.open().await, redis.open().await, redis.open().await];
    check_exactly_once(&instances).await;
}

#[tokio::test]
async fn redis_instances_share_requests_outcomes_and_events() {
    let redis = TestRedis::new().await;
    let (a, b) = (redis.open().await, redis.open().await);
    write(&a, Write::Insert(question("que_1", Some("call-1")))).await;
    write(&a, Write::Append(event("evt_1"))).await;

    let loaded = b.requests(RequestKind::Question, 10).await.unwrap();
    assert_eq!(ids(&loaded.pending), ["que_1"]);
    assert_eq!(
        write(&b, resolve("que_1", OutcomeState::Replied)).await,
        Written::Resolved
    );
    assert_eq!(
        write(&a, resolve("que_1", OutcomeState::Rejected)).await,
        Written::AlreadyResolved(OutcomeState::Replied)
    );
    let found = a
        .find_by_call(RequestKind::Question, "s", "call-1")
        .await
        .unwrap();
    assert_eq!(found.unwrap().outcome.unwrap().state, OutcomeState::Replied);
    assert_eq!(b.recent_events(10).await.unwrap(), [event("evt_1")]);
}

#[tokio::test]
async fn sqlite_store_keeps_everything_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        write(&store, Write::Insert(question("que_1", Some("call-1")))).await;
        write(&store, Write::Insert(question("que_2", None))).await;
        write(&store, Write::Append(event("evt_1"))).await;
        write(&store, resolve("que_1", OutcomeState::Replied)).await;
        write(&store, Write::Append(event("evt_2"))).await;
    }
    let store = SqliteStore::open(&path).unwrap();
    let loaded = store.requests(RequestKind::Question, 10).await.unwrap();
    assert_eq!(ids(&loaded.pending), ["que_2"]);
    assert_eq!(ids(&loaded.resolved), ["que_1"]);
    let again = store
        .find_by_call(RequestKind::Question, "s", "call-1")
        .await
        .unwrap();
    assert_eq!(again.unwrap().outcome, Some(outcome(OutcomeState::Replied)));
    assert_eq!(
        store.recent_events(10).await.unwrap(),
        [event("evt_1"), event("evt_2")]
    );
    assert_eq!(
        write(&store, resolve("que_1", OutcomeState::Cancelled)).await,
        Written::AlreadyResolved(OutcomeState::Replied)
    );
}

#[tokio::test]
async fn sqlite_store_refuses_a_file_another_store_has_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let first = SqliteStore::open(&path).unwrap();
    write(&first, Write::Append(event("evt_1"))).await;
    let refused = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(refused, StoreError::Locked { .. }), "{refused}");
    drop(first);
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.recent_events(1).await.unwrap(), [event("evt_1")]);
}

#[tokio::test]
async fn memory_change_log_keeps_the_contract() {
    let store = MemoryStore::new();
    check_change_log(&store, &store.clone()).await;
}

/// Two handles with their own connections stand for two instances: one writes, the other
/// follows.
#[tokio::test]
async fn redis_change_log_keeps_the_contract() {
    let redis = TestRedis::new().await;
    check_change_log(&redis.open().await, &redis.open().await).await;
}

/// A Redis that lost its script cache without the connection breaking (`SCRIPT FLUSH`)
/// refuses the calls of the changes script (`NOSCRIPT`), doing nothing of them. Writes it
/// refused are sent again, the script loaded first, if the store sent nothing after them
/// (the next write of an idle store); otherwise they fail, not done, rather than be done
/// after what came after them (here a read, which saw them not done).
#[tokio::test]
async fn redis_store_writes_after_its_scripts_were_flushed() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    write(&store, Write::Insert(question("que_1", None))).await;
    redis.command(redis::cmd("SCRIPT").arg("FLUSH"));
    assert_eq!(
        write(&store, Write::Insert(question("que_2", None))).await,
        Written::Inserted
    );
    assert_eq!(
        write(&store, resolve("que_1", OutcomeState::Replied)).await,
        Written::Resolved
    );

    redis.command(redis::cmd("SCRIPT").arg("FLUSH"));
    // Both queued before the writer runs (one thread): the read goes right after the write.
    let refused = store.write(Write::Insert(question("que_3", None)));
    let read = store.get("que_3");
    assert_eq!(read.await.unwrap(), None);
    let refused = refused.await;
    assert!(
        matches!(&refused, Err(StoreError::CommitFailed(why)) if why.contains("script")),
        "{refused:?}"
    );
    assert_eq!(
        write(&store, Write::Insert(question("que_3", None))).await,
        Written::Inserted
    );
    let changes = whole_log(&store).await;
    assert_eq!(changes.len(), 4);
}

/// A Redis that went away fails writes and reads at once, with the reason, instead of
/// holding them; once it is back, the store reconnects by itself and writes again, and
/// what Redis acknowledged before it went away (kept in its append-only file) is there.
#[tokio::test]
async fn redis_store_writes_again_once_a_restarted_redis_is_back() {
    let mut redis = PrivateRedis::start().await;
    let store = redis.open().await;
    write(&store, Write::Insert(question("que_1", None))).await;

    redis.kill();
    let refused = tokio::time::timeout(
        Duration::from_secs(5),
        store.write(Write::Insert(question("que_2", None))),
    )
    .await
    .expect("a write to a Redis that is gone fails, it does not hang");
    assert!(matches!(refused, Err(StoreError::Redis(_))), "{refused:?}");
    let unread = tokio::time::timeout(Duration::from_secs(5), store.get("que_1"))
        .await
        .expect("a read of a Redis that is gone fails, it does not hang");
    assert!(matches!(unread, Err(StoreError::Redis(_))), "{unread:?}");

    redis.restart().await;
    // The first attempts may fall in the pause between reconnection attempts.
    let inserted = until_ok(|| store.write(Write::Insert(question("que_3", None)))).await;
    assert_eq!(inserted, Written::Inserted);
    let loaded = store.requests(RequestKind::Question, 10).await.unwrap();
    assert_eq!(ids(&loaded.pending), ["que_1", "que_3"]);
    assert_eq!(
        write(&store, resolve("que_1", OutcomeState::Replied)).await,
        Written::Resolved
    );
}

/// Redis restarts while the store is idle: the store learns its connection broke only when
/// it next uses it, and the first write and read after that still succeed (they never
/// left this process on the broken connection, so they go again on a new one).
#[tokio::test]
async fn redis_store_first_write_after_an_idle_restart_succeeds() {
    let mut redis = PrivateRedis::start().await;
    let store = redis.open().await;
    write(&store, Write::Insert(question("que_1", None))).await;
    redis.restart().await;
    // redis-rs notices the closed socket in its own time.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        store
            .write(Write::Insert(question("que_2", None)))
            .await
            .unwrap(),
        Written::Inserted
    );
    // Again, once the store may reconnect again (a quarter of a second after it last did).
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.restart().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let found = store.get("que_1").await.unwrap();
    assert_eq!(found.unwrap().request, question("que_1", None));
}

/// The reads on the connection that is not the writer's (the change log's head, history
/// pages) are read again on a new one when Redis restarted while that one was idle.
#[tokio::test]
async fn redis_store_reads_aside_again_after_an_idle_restart() {
    let mut redis = PrivateRedis::start().await;
    let store = redis.open().await;
    let log = store.change_log().unwrap();
    write(&store, Write::Insert(question("que_1", None))).await;
    assert_eq!(log.head().await.unwrap(), LogPosition(1));
    assert_eq!(whole_history(&store, "s").await.len(), 1);
    redis.restart().await;
    // redis-rs notices the closed socket in its own time.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(whole_history(&store, "s").await.len(), 1);
    redis.restart().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(log.head().await.unwrap(), LogPosition(1));
}

/// The pause between attempts to reach Redis grows while it stays down, and starts over
/// once it is back: a Redis that restarts again soon after is reconnected to as quickly as
/// the first time, not after the grown pause.
#[tokio::test]
async fn redis_store_reconnects_quickly_again_after_a_long_outage() {
    let mut redis = PrivateRedis::start().await;
    let store = redis.open().await;
    let insert = |n: usize| store.write(Write::Insert(question(&format!("que_{n}"), None)));
    // Writes until one succeeds; answers how long that took.
    let written_within = |mut n: usize| async move {
        let started = std::time::Instant::now();
        until_ok(|| {
            n += 1;
            insert(n)
        })
        .await;
        started.elapsed()
    };
    redis.kill();
    // Failed attempts for 3 s: the pause grows past 2 s.
    let outage = std::time::Instant::now();
    let mut n = 0;
    while outage.elapsed() < Duration::from_secs(3) {
        assert!(insert(n).await.is_err());
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    redis.restart().await;
    written_within(1_000).await;

    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.restart().await;
    let again = written_within(2_000).await;
    assert!(
        again < Duration::from_secs(1),
        "reconnected only after {again:?}"
    );
}

/// A prefix an older askbus wrote is upgraded when opened; one a newer askbus wrote is
/// refused, and left as it is.
#[tokio::test]
async fn redis_store_upgrades_an_older_schema_and_refuses_a_newer_one() {
    let redis = TestRedis::new().await;
    let schema = format!("{}:schema", redis.prefix);
    redis.command(redis::cmd("SET").arg(&schema).arg(1));
    let store = redis.open().await;
    assert_eq!(
        write(&store, Write::Insert(question("que_1", None))).await,
        Written::Inserted
    );
    assert_eq!(redis.get(&schema), "7");

    redis.command(redis::cmd("SET").arg(&schema).arg(8));
    match RedisStore::open(crate::support::REDIS_URL, &redis.prefix).await {
        Err(StoreError::NewerSchema { found, supported }) => assert_eq!((found, supported), (8, 7)),
        other => panic!("a newer schema was not refused: {other:?}"),
    }
    assert_eq!(redis.get(&schema), "8");
}

/// Requests left pending under schema version 3 (which did not count each session's
/// pending requests) keep their session's history once a version 4 store opened the
/// prefix.
#[tokio::test]
async fn redis_store_upgrade_counts_the_requests_pending_before_it() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    write(&store, Write::Insert(in_session("que_1", "waiting"))).await;
    write(&store, Write::Insert(in_session("que_2", "done"))).await;
    write(&store, resolve("que_2", OutcomeState::Replied)).await;
    drop(store);
    // As version 3 left it: no counts.
    redis.command(redis::cmd("DEL").arg(format!("{}:waiting", redis.prefix)));
    redis.command(
        redis::cmd("SET")
            .arg(format!("{}:schema", redis.prefix))
            .arg(3),
    );

    let store = redis.open().await;
    assert_eq!(store.forget_quiet_histories(u64::MAX, 10).await.unwrap(), 1);
    assert_eq!(whole_history(&store, "waiting").await.len(), 1);
    assert!(whole_history(&store, "done").await.is_empty());
}

/// Requests resolved under schema version 2 (which did not index resolution times) can be
/// forgotten once a version 3 store has opened the prefix.
#[tokio::test]
async fn redis_store_upgrade_lets_earlier_resolutions_be_forgotten() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    write(&store, Write::Insert(question("que_1", None))).await;
    write(&store, Write::Insert(question("que_2", None))).await;
    write(&store, resolve("que_1", OutcomeState::Replied)).await;
    drop(store);
    // As version 2 left it: no resolution times; and a resolved id whose request was
    // deleted by hand.
    redis.command(redis::cmd("DEL").arg(format!("{}:resolved_at", redis.prefix)));
    redis.command(
        redis::cmd("ZADD")
            .arg(format!("{}:resolved:question", redis.prefix))
            .arg(0)
            .arg("que_0"),
    );
    redis.command(
        redis::cmd("SET")
            .arg(format!("{}:schema", redis.prefix))
            .arg(2),
    );

    let store = redis.open().await;
    assert_eq!(store.forget_resolved(u64::MAX, 10).await.unwrap(), 1);
    assert_eq!(store.get("que_1").await.unwrap(), None);
    assert!(store.get("que_2").await.unwrap().is_some());
}

/// A damaged log entry is a change nobody can apply, read in its place: a reader goes on
/// past it instead of stopping there for good.
#[tokio::test]
async fn redis_change_log_reads_past_a_damaged_entry() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    write(&store, Write::Insert(question("que_1", None))).await;
    let log = format!("{}:log", redis.prefix);
    redis.command(redis::cmd("INCR").arg(format!("{log}:seq")));
    redis.command(
        redis::cmd("XADD")
            .arg(&log)
            .arg("0-2")
            .arg("change")
            .arg("{not json"),
    );
    write(&store, Write::Insert(question("que_2", None))).await;
    let changes = whole_log(&store).await;
    let positions: Vec<u64> = changes.iter().map(|change| change.position.0).collect();
    assert_eq!(positions, [1, 2, 3]);
    assert_eq!(
        changes[0].kind,
        ChangeKind::Inserted(question("que_1", None))
    );
    assert!(matches!(&changes[1].kind, ChangeKind::Unreadable(why) if why.contains("not json")));
    assert_eq!(
        changes[2].kind,
        ChangeKind::Inserted(question("que_2", None))
    );
}

/// A log entry is read whatever the order of its fields, though the stores write its `op`
/// first.
#[tokio::test]
async fn redis_change_log_reads_an_entry_whose_op_is_not_first() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    let log = format!("{}:log", redis.prefix);
    redis.command(redis::cmd("INCR").arg(format!("{log}:seq")));
    let resolved = r#"{"id":"que_1","outcome":{"state":"rejected","body":"{}",
        "resolved_at_ms":1},"op":"resolved","kind":"question"}"#;
    redis.command(
        redis::cmd("XADD")
            .arg(&log)
            .arg("0-1")
            .arg("change")
            .arg(resolved),
    );
    let changes = whole_log(&store).await;
    assert_eq!(
        changes[0].kind,
        ChangeKind::Resolved {
            kind: RequestKind::Question,
            id: "que_1".into(),
            outcome: OutcomeRecord::new(OutcomeState::Rejected, "{}", 1),
        }
    );
}

/// Changes sent together (one script call) succeed or fail one by one.
#[tokio::test]
async fn redis_store_fails_a_change_alone() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    // Damage what questions need, not what approvals need.
    redis.command(
        redis::cmd("SET")
            .arg(format!("{}:pending:question", redis.prefix))
            .arg("x"),
    );
    let approval = RequestRecord {
        kind: RequestKind::Approval,
        ..question("apr_1", None)
    };
    let (refused, inserted) = tokio::join!(
        store.write(Write::Insert(question("que_1", None))),
        store.write(Write::Insert(approval)),
    );
    assert!(
        matches!(refused, Err(StoreError::CommitFailed(_))),
        "{refused:?}"
    );
    assert_eq!(inserted.unwrap(), Written::Inserted);
    // Refused whole: nothing of the question was written, and only the approval is logged.
    let exists: u64 = redis.query(redis::cmd("EXISTS").arg(format!("{}:req:que_1", redis.prefix)));
    assert_eq!(exists, 0, "the refused question's hash was written");
    let logged: Vec<_> = whole_log(&store)
        .await
        .into_iter()
        .map(|change| change.kind)
        .collect();
    assert!(
        matches!(logged.as_slice(), [ChangeKind::Inserted(request)] if request.id == "apr_1"),
        "{logged:?}"
    );
}

/// A resolution that would write a key of another type (its session's history, set by
/// hand) fails before it writes anything: the request is still pending, no audit entry
/// says otherwise, and once the key is mended the answer goes through.
#[tokio::test]
async fn redis_store_fails_a_resolution_whole_on_a_key_of_another_type() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    write(&store, Write::Insert(question("que_1", None))).await;
    let history = format!("{}:hist:s", redis.prefix);
    redis.command(redis::cmd("DEL").arg(&history));
    redis.command(redis::cmd("SET").arg(&history).arg("x"));
    let answer = || Write::Resolve {
        kind: RequestKind::Question,
        id: "que_1".into(),
        outcome: outcome(OutcomeState::Replied),
        audit: Some("replied".into()),
        outbox: None,
    };

    let refused = store.write(answer()).await;
    let Err(StoreError::CommitFailed(reason)) = &refused else {
        panic!("{refused:?}");
    };
    assert!(reason.contains("holds a string"), "{reason}");
    let state: String = redis.query(
        redis::cmd("HGET")
            .arg(format!("{}:req:que_1", redis.prefix))
            .arg("state"),
    );
    assert_eq!(state, "pending");
    let loaded = store.requests(RequestKind::Question, 10).await.unwrap();
    assert_eq!(ids(&loaded.pending), ["que_1"]);
    assert!(loaded.resolved.is_empty());
    assert!(store.audit_entries(0, 10).await.unwrap().is_empty());
    assert_eq!(
        whole_log(&store).await.len(),
        1,
        "only the insert is logged"
    );

    redis.command(redis::cmd("DEL").arg(&history));
    assert_eq!(write(&store, answer()).await, Written::Resolved);
    let drafts: Vec<String> = store
        .audit_entries(0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.draft)
        .collect();
    assert_eq!(drafts, ["replied"]);
}

#[tokio::test]
async fn sqlite_store_has_no_change_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("askbus.db")).unwrap();
    assert!(store.change_log().is_none());
}

/// A reader whose position fell out of the log is told, instead of reading on past a gap.
#[tokio::test]
async fn memory_change_log_refuses_a_trimmed_position() {
    let store = MemoryStore::new();
    let log = store.change_log().unwrap();
    let start = log.head().await.unwrap();
    for n in 0..=askbus_store::LOG_RETENTION {
        write(&store, Write::Insert(question(&format!("que_{n}"), None))).await;
    }
    let trimmed = log.read_after(start, 10, Duration::ZERO).await.unwrap_err();
    assert!(
        matches!(trimmed, StoreError::LogTrimmed { after } if after == start),
        "{trimmed}"
    );
    let newest = log.head().await.unwrap();
    let kept = log.read_after(newest, 10, Duration::ZERO).await.unwrap();
    assert!(kept.is_empty());
}

#[tokio::test]
async fn redis_change_log_refuses_a_trimmed_position() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    let log = store.change_log().unwrap();
    let start = log.head().await.unwrap();
    for id in ["que_1", "que_2", "que_3"] {
        write(&store, Write::Insert(question(id, None))).await;
    }
    // What Redis's own trimming does to a log that outgrew its length.
    let stream = format!("{}:log", redis.prefix);
    redis.command(redis::cmd("XTRIM").arg(&stream).arg("MAXLEN").arg(1));
    let trimmed = log.read_after(start, 10, Duration::ZERO).await.unwrap_err();
    assert!(
        matches!(trimmed, StoreError::LogTrimmed { after } if after == start),
        "{trimmed}"
    );

    // A Redis that lost everything numbers its changes from 1 again: a reader that was
    // further along is told when it reconnects, not left waiting for numbers it passed.
    let far_along = log.head().await.unwrap();
    redis.command(redis::cmd("DEL").arg(&stream).arg(format!("{stream}:seq")));
    let follower = redis.open().await;
    let rewound = follower
        .change_log()
        .unwrap()
        .read_after(far_along, 10, Duration::ZERO)
        .await
        .unwrap_err();
    assert!(
        matches!(rewound, StoreError::LogTrimmed { .. }),
        "{rewound}"
    );
}

/// A change counter behind its log (its key lost while the log was kept: deleted by hand,
/// evicted) refuses no change: the log's head is still its newest change, and the next
/// change is numbered after it, where every reader reads on, instead of each change's
/// number being refused by the log for good (and the change written without its entry).
#[tokio::test]
async fn redis_store_numbers_changes_past_a_counter_that_fell_behind() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    let log = store.change_log().unwrap();
    for id in ["que_1", "que_2"] {
        write(&store, Write::Insert(question(id, None))).await;
    }
    redis.command(redis::cmd("DEL").arg(format!("{}:log:seq", redis.prefix)));
    assert_eq!(log.head().await.unwrap(), LogPosition(2));

    assert_eq!(
        write(&store, Write::Insert(in_session("que_3", "other"))).await,
        Written::Inserted
    );
    assert_eq!(
        write(&store, resolve("que_1", OutcomeState::Replied)).await,
        Written::Resolved
    );
    let positions: Vec<u64> = whole_log(&store)
        .await
        .iter()
        .map(|change| change.position.0)
        .collect();
    assert_eq!(positions, [1, 2, 3, 4]);
    assert_eq!(log.head().await.unwrap(), LogPosition(4));
    assert_eq!(history_positions(&store, "s").await, [1, 2, 4]);
}

/// A session's history kept while the log and its counter were lost: the session's next
/// change is numbered after the history's newest record, in the history and in the log,
/// instead of being logged and then refused by the history (a change the other instances
/// apply while its writer is told it failed). Readers find the gap and load again.
#[tokio::test]
async fn redis_store_numbers_changes_past_a_history_that_outlived_its_log() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    for id in ["que_1", "que_2"] {
        write(&store, Write::Insert(question(id, None))).await;
    }
    let log = format!("{}:log", redis.prefix);
    redis.command(redis::cmd("DEL").arg(&log).arg(format!("{log}:seq")));

    assert_eq!(
        write(&store, Write::Insert(question("que_3", None))).await,
        Written::Inserted
    );
    assert_eq!(history_positions(&store, "s").await, [1, 2, 3]);
    let reader = store.change_log().unwrap();
    let changes = reader
        .read_after(LogPosition(2), 10, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        changes
            .iter()
            .map(|change| &change.kind)
            .collect::<Vec<_>>(),
        [&ChangeKind::Inserted(question("que_3", None))]
    );
    let gap = reader
        .read_after(LogPosition::START, 10, Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(gap, StoreError::LogTrimmed { .. }), "{gap}");
}

/// An audit counter behind its log (its key lost) refuses no resolution: the next entry
/// is numbered after the log's newest, with no gap.
#[tokio::test]
async fn redis_store_numbers_audit_entries_past_a_counter_that_fell_behind() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    write(&store, Write::Audit("first".into())).await;
    redis.command(redis::cmd("DEL").arg(format!("{}:audit:seq", redis.prefix)));
    write(&store, Write::Insert(question("que_1", None))).await;
    let with_draft = Write::Resolve {
        kind: RequestKind::Question,
        id: "que_1".into(),
        outcome: outcome(OutcomeState::Replied),
        audit: Some("second".into()),
        outbox: None,
    };
    assert_eq!(write(&store, with_draft).await, Written::Resolved);
    assert_eq!(
        write(&store, Write::Audit("third".into())).await,
        Written::Appended
    );
    let drafts: Vec<(u64, String)> = store
        .audit_entries(0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| (entry.seq, entry.draft))
        .collect();
    assert_eq!(
        drafts,
        [
            (1, "first".into()),
            (2, "second".into()),
            (3, "third".into())
        ]
    );
}

/// Changes queued at once go to Redis in script calls of many changes each, which count
/// their numbers among themselves and store the counters once at their end: a burst of
/// them is numbered one by one in queue order, in the log, the histories and the audit
/// log, with the counters at the last numbers; a burst after the counters were lost goes
/// on after the newest entries.
#[tokio::test]
async fn redis_store_numbers_a_burst_of_changes_in_queue_order() {
    const BURST: usize = 70;
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    let ids: Vec<String> = (1..=BURST).map(|n| format!("que_{n}")).collect();
    let session = |n: usize| if n.is_multiple_of(2) { "s" } else { "other" };
    let queued: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| store.write(Write::Insert(in_session(id, session(n)))))
        .chain(ids.iter().map(|id| {
            store.write(Write::Resolve {
                kind: RequestKind::Question,
                id: id.clone(),
                outcome: outcome(OutcomeState::Replied),
                audit: Some(format!("decided {id}")),
                outbox: None,
            })
        }))
        .collect();
    for written in futures_util::future::join_all(queued).await {
        assert!(
            matches!(written, Ok(Written::Inserted | Written::Resolved)),
            "{written:?}"
        );
    }
    let log = store
        .change_log()
        .unwrap()
        .read_after(LogPosition::START, 4 * BURST, Duration::ZERO)
        .await
        .unwrap();
    let numbered: Vec<(u64, String)> = log
        .iter()
        .map(|change| {
            let id = match &change.kind {
                ChangeKind::Inserted(request) => format!("+{}", request.id),
                ChangeKind::Resolved { id, .. } => format!("={id}"),
                other => panic!("unexpected change {other:?}"),
            };
            (change.position.0, id)
        })
        .collect();
    let expected: Vec<(u64, String)> = (1..)
        .zip(
            ids.iter()
                .map(|id| format!("+{id}"))
                .chain(ids.iter().map(|id| format!("={id}"))),
        )
        .collect();
    assert_eq!(numbered, expected);
    let evens: Vec<u64> = (0..2 * BURST as u64)
        .filter(|n| (n % BURST as u64).is_multiple_of(2))
        .map(|n| n + 1)
        .collect();
    assert_eq!(history_positions(&store, "s").await, evens);
    let drafts: Vec<(u64, String)> = store
        .audit_entries(0, 2 * BURST)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| (entry.seq, entry.draft))
        .collect();
    let expected: Vec<(u64, String)> = (1..)
        .zip(ids.iter().map(|id| format!("decided {id}")))
        .collect();
    assert_eq!(drafts, expected);
    assert_eq!(
        redis.get(&format!("{}:log:seq", redis.prefix)),
        (2 * BURST).to_string()
    );
    assert_eq!(
        redis.get(&format!("{}:audit:seq", redis.prefix)),
        BURST.to_string()
    );

    redis.command(
        redis::cmd("DEL")
            .arg(format!("{}:log:seq", redis.prefix))
            .arg(format!("{}:audit:seq", redis.prefix)),
    );
    let again: Vec<_> = (0..BURST)
        .map(|n| store.write(Write::Audit(format!("again {n}"))))
        .chain((0..BURST).map(|n| store.write(Write::Event(step_event("s", n)))))
        .collect();
    for written in futures_util::future::join_all(again).await {
        assert_eq!(written.unwrap(), Written::Appended);
    }
    let audit_numbers: Vec<u64> = store
        .audit_entries(0, 3 * BURST)
        .await
        .unwrap()
        .iter()
        .map(|entry| entry.seq)
        .collect();
    assert_eq!(audit_numbers, (1..=2 * BURST as u64).collect::<Vec<_>>());
    let history = history_positions(&store, "s").await;
    assert_eq!(
        history[history.len() - BURST..],
        (2 * BURST as u64 + 1..=3 * BURST as u64).collect::<Vec<_>>()
    );
    assert_eq!(
        redis.get(&format!("{}:log:seq", redis.prefix)),
        (3 * BURST).to_string()
    );
    assert_eq!(
        redis.get(&format!("{}:audit:seq", redis.prefix)),
        (2 * BURST).to_string()
    );
}

#[tokio::test]
async fn open_picks_the_backend_from_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite:{}", dir.path().join("askbus.db").display());
    for url in ["memory", sqlite.as_str()] {
        let store = askbus_store::open(url).await.unwrap();
        assert_eq!(
            write(&*store, Write::Append(event("evt_1"))).await,
            Written::Appended
        );
    }
    let refused = askbus_store::open("postgres://localhost")
        .await
        .err()
        .unwrap();
    assert!(
        matches!(refused, StoreError::UnsupportedUrl(_)),
        "{refused}"
    );
}

/// However a store URL is wrong, its password stays out of the error (which the server
/// logs).
#[tokio::test]
async fn a_refused_store_url_does_not_show_its_password() {
    for (url, password) in [
        ("postgres://admin:hunter2@db:5432/askbus", "hunter2"),
        ("rediss://:hunter2@redis:6380/0", "hunter2"),
        ("redis://:hunter2@redis:6379/0?prefix=", "hunter2"),
        ("redis://:hunt/er2@redis:6379/0?prefix=", "hunt/er2"),
        ("postgres://admin:hunt#er2@db:5432/askbus", "hunt#er2"),
        ("rediss://:hunt?er2@redis:6380/0", "hunt?er2"),
    ] {
        let refused = askbus_store::open(url).await.err().expect("refused");
        let shown = refused.to_string();
        assert!(
            matches!(refused, StoreError::UnsupportedUrl(_)) && !shown.contains(password),
            "{url}: {shown}"
        );
        assert!(shown.contains("***@"), "{url}: {shown}");
    }
}

/// Everything every backend must do the same way.
async fn check_contract(store: &dyn Store) {
    for (id, call) in [
        ("que_1", Some("call-1")),
        ("que_2", None),
        ("que_3", Some("call-1")),
    ] {
        assert_eq!(
            write(store, Write::Insert(question(id, call))).await,
            Written::Inserted
        );
    }
    let mut approval = question("apr_1", Some("call-1"));
    approval.kind = RequestKind::Approval;
    assert_eq!(
        write(store, Write::Insert(approval)).await,
        Written::Inserted
    );
    assert!(
        store
            .write(Write::Insert(question("que_1", None)))
            .await
            .is_err()
    );

    let loaded = store.requests(RequestKind::Question, 10).await.unwrap();
    assert_eq!(ids(&loaded.pending), ["que_1", "que_2", "que_3"]);
    assert!(loaded.resolved.is_empty());
    assert_eq!(
        loaded.pending[0],
        stored(question("que_1", Some("call-1")), None)
    );

    assert_eq!(
        write(store, resolve("que_1", OutcomeState::Replied)).await,
        Written::Resolved
    );
    assert_eq!(
        write(store, resolve("que_3", OutcomeState::TimedOut)).await,
        Written::Resolved
    );
    assert_eq!(
        write(store, resolve("que_1", OutcomeState::Rejected)).await,
        Written::AlreadyResolved(OutcomeState::Replied)
    );
    assert_eq!(
        write(store, resolve("que_9", OutcomeState::Replied)).await,
        Written::NotFound
    );
    // Resolving through the wrong kind finds nothing, even for an existing id.
    let wrong_kind = Write::Resolve {
        kind: RequestKind::Question,
        id: "apr_1".into(),
        outcome: outcome(OutcomeState::Replied),
        audit: None,
        outbox: None,
    };
    assert_eq!(write(store, wrong_kind).await, Written::NotFound);

    let loaded = store.requests(RequestKind::Question, 10).await.unwrap();
    assert_eq!(ids(&loaded.pending), ["que_2"]);
    assert_eq!(ids(&loaded.resolved), ["que_1", "que_3"]);
    // Who decided is read back as written, and nobody as nobody.
    assert_eq!(
        loaded.resolved[0].outcome,
        Some(outcome(OutcomeState::Replied))
    );
    assert!(outcome(OutcomeState::Replied).decided_by.is_some());
    assert_eq!(
        loaded.resolved[1].outcome,
        Some(outcome(OutcomeState::TimedOut))
    );
    let newest_only = store.requests(RequestKind::Question, 1).await.unwrap();
    assert_eq!(ids(&newest_only.resolved), ["que_3"]);
    let approvals = store.requests(RequestKind::Approval, 10).await.unwrap();
    assert_eq!(ids(&approvals.pending), ["apr_1"]);

    // The newest request of a tool call wins; kinds and sessions are separate keys.
    let by_call = store
        .find_by_call(RequestKind::Question, "s", "call-1")
        .await
        .unwrap();
    assert_eq!(by_call.map(|found| found.request.id), Some("que_3".into()));
    let by_call = store
        .find_by_call(RequestKind::Approval, "s", "call-1")
        .await
        .unwrap();
    assert_eq!(by_call.map(|found| found.request.id), Some("apr_1".into()));
    let other_session = store
        .find_by_call(RequestKind::Question, "t", "call-1")
        .await;
    assert_eq!(other_session.unwrap(), None);

    let got = store.get("que_1").await.unwrap().unwrap();
    assert_eq!(
        got.outcome.map(|outcome| outcome.state),
        Some(OutcomeState::Replied)
    );
    assert_eq!(store.get("que_9").await.unwrap(), None);

    let events: Vec<_> = ["evt_1", "evt_2", "evt_3"].map(event).into();
    for appended in &events {
        assert_eq!(
            write(store, Write::Append(appended.clone())).await,
            Written::Appended
        );
    }
    assert_eq!(store.recent_events(2).await.unwrap(), events[1..]);
    assert_eq!(store.recent_events(10).await.unwrap(), events);
    assert!(store.recent_events(0).await.unwrap().is_empty());
}

/// Each session's history: a request's insert, its winning outcome (a losing one adds
/// nothing) and events are its records, in order, at ascending positions; reading after a
/// position reads on; past its limit a history keeps its newest records, at least `limit`
/// (4) and at most `max_kept`.
async fn check_history(store: &dyn Store, max_kept: usize) {
    write(store, Write::Insert(question("que_1", None))).await;
    write(store, Write::Event(step_event("s", 1))).await;
    write(store, Write::Insert(in_session("que_2", "t"))).await;
    write(store, resolve("que_1", OutcomeState::Replied)).await;
    write(store, resolve("que_1", OutcomeState::Cancelled)).await;
    write(store, resolve("que_9", OutcomeState::Cancelled)).await;
    write(store, Write::Event(step_event("s", 2))).await;

    let history = whole_history(store, "s").await;
    let entries: Vec<_> = history.iter().map(|record| record.entry.clone()).collect();
    assert_eq!(
        entries,
        [
            ChangeKind::Inserted(question("que_1", None)),
            ChangeKind::Event(step_event("s", 1)),
            ChangeKind::Resolved {
                kind: RequestKind::Question,
                id: "que_1".into(),
                outcome: outcome(OutcomeState::Replied),
            },
            ChangeKind::Event(step_event("s", 2)),
        ]
    );
    assert!(
        history
            .windows(2)
            .all(|pair| pair[0].position < pair[1].position),
        "{history:?}"
    );
    // A page from a record starts with it; one before a record ends before it.
    let from = |position, limit| store.history("s", HistoryPage::From(position), limit);
    let before = |position, limit| store.history("s", HistoryPage::Before(position), limit);
    assert_eq!(from(history[1].position, 10).await.unwrap(), history[1..]);
    assert_eq!(from(history[1].position, 2).await.unwrap(), history[1..3]);
    assert_eq!(from(0, 1).await.unwrap(), history[..1]);
    assert_eq!(from(history[3].position + 1, 10).await.unwrap(), []);
    assert_eq!(before(u64::MAX, 3).await.unwrap(), history[1..]);
    assert_eq!(before(history[1].position, 3).await.unwrap(), history[..1]);
    assert_eq!(before(history[0].position, 3).await.unwrap(), []);
    assert_eq!(from(0, 0).await.unwrap(), []);
    let other = whole_history(store, "t").await;
    assert_eq!(other.len(), 1);
    assert_eq!(
        other[0].entry,
        ChangeKind::Inserted(in_session("que_2", "t"))
    );
    assert!(whole_history(store, "nobody").await.is_empty());

    // A read sees the writes queued before it, acknowledged or not.
    let queued = store.write(Write::Event(step_event("t", 3)));
    let read = whole_history(store, "t").await;
    assert_eq!(
        read.last().unwrap().entry,
        ChangeKind::Event(step_event("t", 3))
    );
    queued.await.unwrap();

    for n in 0..250 {
        write(store, Write::Event(step_event("long", n))).await;
    }
    let long = whole_history(store, "long").await;
    assert!((4..=max_kept).contains(&long.len()), "{} kept", long.len());
    assert_eq!(
        long.last().map(|record| &record.entry),
        Some(&ChangeKind::Event(step_event("long", 249)))
    );

    // Queued at once (Redis takes them in one script call): kept as if one by one.
    let burst: Vec<_> = (0..250)
        .map(|n| store.write(Write::Event(step_event("burst", n))))
        .collect();
    for written in burst {
        written.await.unwrap();
    }
    let burst = whole_history(store, "burst").await;
    assert!(
        (4..=max_kept).contains(&burst.len()),
        "{} kept",
        burst.len()
    );
    assert_eq!(
        burst.last().map(|record| &record.entry),
        Some(&ChangeKind::Event(step_event("burst", 249)))
    );
}

/// The byte limit the `…_within_their_bytes` tests set: 8 KiB.
const HISTORY_BYTES: usize = 8 * 1024;

/// A step of `session` whose JSON is a little over `bytes` long.
fn big_step(session: &str, n: usize, bytes: usize) -> SessionEvent {
    SessionEvent {
        properties: format!(r#"{{"n":{n},"text":"{}"}}"#, "x".repeat(bytes)),
        ..step_event(session, n)
    }
}

/// The bytes `records` count: the length of each one's JSON.
fn history_bytes(records: &[HistoryRecord]) -> usize {
    records
        .iter()
        .map(|record| serde_json::to_string(&record.entry).unwrap().len())
        .sum()
}

/// Past its byte limit a history keeps its newest records within it, a batch at a time
/// (at most an eighth over before it is trimmed), whatever their count; one record over
/// the limit on its own is kept, alone, until the next.
async fn check_history_bytes(store: &dyn Store) {
    for n in 0..100 {
        write(store, Write::Event(big_step("s", n, 500))).await;
        let kept = whole_history(store, "s").await;
        let bytes = history_bytes(&kept);
        assert!(
            bytes <= HISTORY_BYTES + HISTORY_BYTES / 8,
            "{bytes} bytes kept"
        );
        assert_eq!(
            kept.last().map(|record| &record.entry),
            Some(&ChangeKind::Event(big_step("s", n, 500)))
        );
    }
    let kept = whole_history(store, "s").await;
    assert!(kept.len() >= HISTORY_BYTES / 600, "{} kept", kept.len());
    // Queued at once (Redis takes them in one script call): counted as if one by one.
    let burst: Vec<_> = (0..100)
        .map(|n| store.write(Write::Event(big_step("burst", n, 500))))
        .collect();
    for written in burst {
        written.await.unwrap();
    }
    let bytes = history_bytes(&whole_history(store, "burst").await);
    assert!(
        (HISTORY_BYTES - 600..=HISTORY_BYTES + HISTORY_BYTES / 8).contains(&bytes),
        "{bytes} bytes kept"
    );
    write(store, Write::Event(big_step("s", 100, 2 * HISTORY_BYTES))).await;
    let kept = whole_history(store, "s").await;
    assert_eq!(kept.len(), 1, "only the newest, over the limit on its own");
    // The next record takes its place: the two are over the limit.
    write(store, Write::Event(big_step("s", 101, 500))).await;
    let kept = whole_history(store, "s").await;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].entry, ChangeKind::Event(big_step("s", 101, 500)));
}

/// `forget_quiet_histories` deletes the histories whose newest record is older than asked
/// and whose session has nothing pending, no more than asked.
async fn check_forget_histories(store: &dyn Store) {
    write(store, Write::Insert(in_session("que_1", "answered"))).await;
    write(store, resolve("que_1", OutcomeState::Replied)).await;
    write(store, Write::Insert(in_session("que_2", "waiting"))).await;
    write(store, Write::Event(step_event("steps", 1))).await;
    write(store, Write::Event(step_event("waiting", 1))).await;

    // Recorded after the time asked: kept.
    assert_eq!(store.forget_quiet_histories(1, 10).await.unwrap(), 0);
    assert_eq!(store.forget_quiet_histories(u64::MAX, 1).await.unwrap(), 1);
    assert_eq!(store.forget_quiet_histories(u64::MAX, 10).await.unwrap(), 1);
    assert_eq!(store.forget_quiet_histories(u64::MAX, 10).await.unwrap(), 0);
    for gone in ["answered", "steps"] {
        assert!(whole_history(store, gone).await.is_empty(), "{gone}");
    }
    assert_eq!(whole_history(store, "waiting").await.len(), 2);
    // The requests themselves are another matter: only `forget_resolved` deletes them.
    assert!(store.get("que_1").await.unwrap().is_some());

    // Once nothing of it is pending, a quiet session's history goes too.
    write(
        store,
        Write::Resolve {
            kind: RequestKind::Question,
            id: "que_2".into(),
            outcome: outcome(OutcomeState::Cancelled),
            audit: None,
            outbox: None,
        },
    )
    .await;
    assert_eq!(store.forget_quiet_histories(u64::MAX, 10).await.unwrap(), 1);
    assert!(whole_history(store, "waiting").await.is_empty());
    // A new record starts a new history, above every position before it.
    write(store, Write::Event(step_event("waiting", 2))).await;
    assert_eq!(whole_history(store, "waiting").await.len(), 1);
}

/// `forget_resolved` deletes resolved requests by the time they were resolved, the longest
/// resolved first and no more than asked, with their tool-call entries unless the call
/// asked again; pending requests stay whatever their age.
async fn check_forget(store: &dyn Store) {
    let resolved_at = |id: &str, at_ms: u64| Write::Resolve {
        kind: RequestKind::Question,
        id: id.into(),
        outcome: OutcomeRecord::new(OutcomeState::Replied, "[]", at_ms),
        audit: None,
        outbox: None,
    };
    let approval = RequestRecord {
        kind: RequestKind::Approval,
        ..question("apr_1", Some("call-a"))
    };
    for request in [
        question("que_1", Some("call-1")),
        question("que_2", None),
        question("que_3", Some("call-3")),
        question("que_4", None),
        approval,
    ] {
        write(store, Write::Insert(request)).await;
    }
    // Resolved in another order than asked: que_3 first, then que_1, then que_2.
    write(store, resolved_at("que_3", 1_000)).await;
    write(store, resolved_at("que_1", 2_000)).await;
    write(store, resolved_at("que_2", 3_000)).await;
    write(
        store,
        Write::Resolve {
            kind: RequestKind::Approval,
            id: "apr_1".into(),
            outcome: OutcomeRecord::new(OutcomeState::Rejected, "{}", 1_500),
            audit: None,
            outbox: None,
        },
    )
    .await;
    // The same tool call asked again; its newer request is pending.
    write(store, Write::Insert(question("que_5", Some("call-1")))).await;

    assert_eq!(store.forget_resolved(2_500, 2).await.unwrap(), 2);
    assert_eq!(store.get("que_3").await.unwrap(), None);
    assert_eq!(store.get("apr_1").await.unwrap(), None);
    assert!(
        store.get("que_1").await.unwrap().is_some(),
        "past the limit"
    );
    assert_eq!(
        store
            .find_by_call(RequestKind::Question, "s", "call-3")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_by_call(RequestKind::Approval, "s", "call-a")
            .await
            .unwrap(),
        None
    );

    assert_eq!(store.forget_resolved(2_500, 10).await.unwrap(), 1);
    assert_eq!(store.get("que_1").await.unwrap(), None);
    let again = store
        .find_by_call(RequestKind::Question, "s", "call-1")
        .await
        .unwrap();
    assert_eq!(
        again.unwrap().request.id,
        "que_5",
        "the newer ask keeps its entry"
    );
    assert_eq!(store.forget_resolved(2_500, 10).await.unwrap(), 0);

    assert_eq!(store.forget_resolved(u64::MAX, 10).await.unwrap(), 1);
    let loaded = store.requests(RequestKind::Question, 10).await.unwrap();
    assert_eq!(ids(&loaded.pending), ["que_4", "que_5"]);
    assert!(loaded.resolved.is_empty(), "{:?}", loaded.resolved);
    assert!(
        store
            .requests(RequestKind::Approval, 10)
            .await
            .unwrap()
            .resolved
            .is_empty()
    );
    // A forgotten request is unknown to a late resolution.
    assert_eq!(
        write(store, resolve("que_1", OutcomeState::Rejected)).await,
        Written::NotFound
    );
}

/// Many concurrent resolutions of one request through `handles`: exactly one wins, the
/// stored outcome is the winner's, and so is the one audit entry the round appends (each
/// attempt carries a draft).
async fn check_exactly_once<S: Store + Clone>(handles: &[S]) {
    const ATTEMPTS: usize = 24;
    for round in 0..4 {
        let id = format!("que_{round}");
        write(&handles[0], Write::Insert(question(&id, None))).await;
        let attempts: Vec<_> = (0..ATTEMPTS)
            .map(|attempt| {
                let store = handles[attempt % handles.len()].clone();
                let resolve = Write::Resolve {
                    kind: RequestKind::Question,
                    id: id.clone(),
                    outcome: OutcomeRecord::new(OutcomeState::Replied, attempt.to_string(), 7),
                    audit: Some(format!("{round}:{attempt}")),
                    outbox: None,
                };
                tokio::spawn(async move { (attempt, store.write(resolve).await.unwrap()) })
            })
            .collect();
        let mut winners = Vec::new();
        for attempt in attempts {
            match attempt.await.unwrap() {
                (attempt, Written::Resolved) => winners.push(attempt),
                (_, written) => {
                    assert_eq!(written, Written::AlreadyResolved(OutcomeState::Replied));
                }
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let stored = handles[1 % handles.len()].get(&id).await.unwrap().unwrap();
        assert_eq!(stored.outcome.unwrap().body, winners[0].to_string());
        let round_seq = u64::try_from(round).unwrap();
        let entries = handles[2 % handles.len()]
            .audit_entries(round_seq, 10)
            .await
            .unwrap();
        assert_eq!(
            entries,
            [AuditRecord {
                seq: round_seq + 1,
                draft: format!("{round}:{}", winners[0]),
                seal: None,
            }],
            "round {round}"
        );
    }
}

/// The audit log: a winning resolution appends its draft as the next entry, numbered from
/// 1 with no gap; a losing one, one for no request and one without a draft append nothing;
/// an entry of its own (`Write::Audit`) is numbered in the same sequence;
/// a read sees the resolutions queued before it; pages follow a number; a seal is set once;
/// retention deletes requests, never entries. `other` is another handle on the same store.
async fn check_audit(store: &dyn Store, other: &dyn Store) {
    assert_eq!(store.audit_entries(0, 10).await.unwrap(), []);
    for id in ["que_1", "que_2", "que_3", "que_4"] {
        write(store, Write::Insert(question(id, None))).await;
    }
    let with_draft = |id: &str, state, draft: &str| Write::Resolve {
        kind: RequestKind::Question,
        id: id.into(),
        outcome: outcome(state),
        audit: Some(draft.into()),
        outbox: None,
    };
    // Any text is kept byte for byte: the store does not look inside.
    let first = "{\"n\":\"ü\\n\"}\n+-";
    assert_eq!(
        write(store, with_draft("que_1", OutcomeState::Replied, first)).await,
        Written::Resolved
    );
    assert_eq!(
        write(other, with_draft("que_1", OutcomeState::Rejected, "lost")).await,
        Written::AlreadyResolved(OutcomeState::Replied)
    );
    assert_eq!(
        write(store, with_draft("que_9", OutcomeState::Replied, "none")).await,
        Written::NotFound
    );
    assert_eq!(
        write(store, resolve("que_2", OutcomeState::Cancelled)).await,
        Written::Resolved
    );
    assert_eq!(
        write(other, with_draft("que_3", OutcomeState::TimedOut, "")).await,
        Written::Resolved
    );
    let queued = store.write(with_draft("que_4", OutcomeState::Rejected, "fourth"));
    let entries = store.audit_entries(0, 10).await.unwrap();
    assert_eq!(queued.await.unwrap(), Written::Resolved);
    let entry = |seq, draft: &str, seal: Option<&str>| AuditRecord {
        seq,
        draft: draft.into(),
        seal: seal.map(Into::into),
    };
    let unsealed = [
        entry(1, first, None),
        entry(2, "", None),
        entry(3, "fourth", None),
    ];
    assert_eq!(entries, unsealed);
    assert_eq!(other.audit_entries(1, 10).await.unwrap(), unsealed[1..]);
    assert_eq!(store.audit_entries(0, 2).await.unwrap(), unsealed[..2]);
    assert_eq!(store.audit_entries(3, 10).await.unwrap(), []);
    assert_eq!(store.audit_entries(0, 0).await.unwrap(), []);

    store.seal_audit(vec![(1, "s1".into())]).await.unwrap();
    other
        .seal_audit(vec![(1, "other".into()), (3, "s3".into())])
        .await
        .unwrap();
    store.seal_audit(Vec::new()).await.unwrap();
    assert_eq!(
        other.audit_entries(0, 10).await.unwrap(),
        [
            entry(1, first, Some("s1")),
            entry(2, "", None),
            entry(3, "fourth", Some("s3"))
        ]
    );

    // An entry for a decision that ends no request (a grant revoked) is numbered next,
    // from either handle, and a resolution after it follows it.
    assert_eq!(
        write(other, Write::Audit("revoked".into())).await,
        Written::Appended
    );
    write(store, Write::Insert(question("que_5", None))).await;
    assert_eq!(
        write(store, with_draft("que_5", OutcomeState::Replied, "fifth")).await,
        Written::Resolved
    );
    assert_eq!(
        store.audit_entries(3, 10).await.unwrap(),
        [entry(4, "revoked", None), entry(5, "fifth", None)]
    );

    assert_eq!(store.forget_resolved(u64::MAX, 100).await.unwrap(), 5);
    assert_eq!(store.get("que_1").await.unwrap(), None);
    assert_eq!(store.audit_entries(0, 10).await.unwrap().len(), 5);
}

/// What every change log must do: `writer` changes the record, `reader` (another handle on
/// the same store: another instance) follows.
async fn check_change_log(writer: &dyn Store, reader: &dyn Store) {
    let log = reader
        .change_log()
        .expect("a shared store has a change log");
    let start = log.head().await.unwrap();
    assert_eq!(
        start,
        LogPosition::START,
        "a fresh store has logged nothing"
    );
    // Nothing yet: the read waits, then answers empty.
    let quiet = log.read_after(start, 10, Duration::from_millis(50)).await;
    assert_eq!(quiet.unwrap(), []);

    // A waiting reader is woken by another handle's write.
    let waiting = log.read_after(start, 10, Duration::from_secs(10));
    let (woken, inserted) = tokio::join!(waiting, async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        write(writer, Write::Insert(question("que_1", Some("call-1")))).await
    });
    assert_eq!(inserted, Written::Inserted);
    let woken = woken.unwrap();
    assert_eq!(woken.len(), 1);
    assert_eq!(
        woken[0].kind,
        ChangeKind::Inserted(question("que_1", Some("call-1")))
    );
    assert!(woken[0].position > start);

    // Only the winning resolution is logged; a failed insert logs nothing.
    write(writer, Write::Insert(question("que_2", None))).await;
    assert_eq!(
        write(writer, resolve("que_1", OutcomeState::Replied)).await,
        Written::Resolved
    );
    assert!(matches!(
        write(writer, resolve("que_1", OutcomeState::Cancelled)).await,
        Written::AlreadyResolved(_)
    ));
    assert_eq!(
        write(writer, resolve("que_9", OutcomeState::Cancelled)).await,
        Written::NotFound
    );
    assert!(
        writer
            .write(Write::Insert(question("que_2", None)))
            .await
            .is_err()
    );

    let after_first = log
        .read_after(woken[0].position, 10, Duration::ZERO)
        .await
        .unwrap();
    let kinds: Vec<_> = after_first
        .iter()
        .map(|change| change.kind.clone())
        .collect();
    assert_eq!(
        kinds,
        [
            ChangeKind::Inserted(question("que_2", None)),
            ChangeKind::Resolved {
                kind: RequestKind::Question,
                id: "que_1".into(),
                outcome: outcome(OutcomeState::Replied),
            },
        ]
    );
    assert!(after_first[0].position < after_first[1].position);
    assert_eq!(log.head().await.unwrap(), after_first[1].position);

    // `limit` caps a read; the next read goes on from its last change.
    let first_two = log.read_after(start, 2, Duration::ZERO).await.unwrap();
    assert_eq!(first_two.len(), 2);
    let rest = log
        .read_after(first_two[1].position, 10, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].kind.request_kind(), Some(RequestKind::Question));

    // An event is logged too, for every instance to pass on; it is no request's.
    write(writer, Write::Event(step_event("s", 1))).await;
    let events = log
        .read_after(rest[0].position, 10, Duration::ZERO)
        .await
        .unwrap();
    let kinds: Vec<_> = events.iter().map(|change| change.kind.clone()).collect();
    assert_eq!(kinds, [ChangeKind::Event(step_event("s", 1))]);
    assert_eq!(events[0].kind.request_kind(), None);
}

async fn write(store: &(impl Store + ?Sized), write: Write) -> Written {
    store.write(write).await.unwrap()
}

fn question(id: &str, call_id: Option<&str>) -> RequestRecord {
    RequestRecord {
        id: id.into(),
        kind: RequestKind::Question,
        session_id: "s".into(),
        call_id: call_id.map(Into::into),
        created_at_ms: 1_700_000_000_000,
        expires_at_ms: call_id.map(|_| 1_700_000_600_000),
        body: format!(r#"{{"id":"{id}"}}"#),
    }
}

/// A question of `session`.
fn in_session(id: &str, session: &str) -> RequestRecord {
    RequestRecord {
        session_id: session.into(),
        ..question(id, None)
    }
}

/// An agent step of `session`, the `n`th.
fn step_event(session: &str, n: usize) -> SessionEvent {
    SessionEvent {
        session_id: session.into(),
        event_type: "agent.step".into(),
        properties: format!(r#"{{"n":{n}}}"#),
    }
}

/// An outcome in `state`: a person's (replied, rejected) names who decided it, the others
/// nobody, so every test that reads an outcome back checks both.
fn outcome(state: OutcomeState) -> OutcomeRecord {
    let decided_by = matches!(state, OutcomeState::Replied | OutcomeState::Rejected)
        .then(|| r#"{"name":"alice","role":"reviewer"}"#.to_owned());
    OutcomeRecord::new(
        state,
        format!(r#"{{"state":"{}"}}"#, state.as_str()),
        1_700_000_001_000,
    )
    .decided_by(decided_by)
}

fn resolve(id: &str, state: OutcomeState) -> Write {
    Write::Resolve {
        kind: RequestKind::Question,
        id: id.into(),
        outcome: outcome(state),
        audit: None,
        outbox: None,
    }
}

fn stored(request: RequestRecord, outcome: Option<OutcomeRecord>) -> askbus_store::StoredRequest {
    askbus_store::StoredRequest { request, outcome }
}

fn event(id: &str) -> EventRecord {
    EventRecord {
        id: id.into(),
        event_type: "question.asked".into(),
        session_id: (id != "evt_2").then(|| "s".into()),
        properties: format!(r#"{{"n":"{id}"}}"#),
    }
}

fn ids(requests: &[askbus_store::StoredRequest]) -> Vec<&str> {
    requests
        .iter()
        .map(|stored| stored.request.id.as_str())
        .collect()
}

/// Writes Redis executed are acknowledged, however long their turn takes: 3,000 steps of
/// 64 KB queued at once (about 190 MB, in pipelines of up to 1,024) were once answered
/// "Redis: timed out" by the hundreds, after half a second in flight, although Redis
/// recorded them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_store_acknowledges_big_writes_that_wait_their_turn() {
    const STEPS: usize = 3_000;
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    let big = "x".repeat(64 * 1024);
    let acks: Vec<_> = (0..STEPS)
        .map(|n| {
            store.write(Write::Event(SessionEvent {
                session_id: format!("s{}", n % 8),
                event_type: "agent.step".into(),
                properties: format!(r#"{{"n":{n},"text":"{big}"}}"#),
            }))
        })
        .collect();
    let mut failed = Vec::new();
    for ack in acks {
        if let Err(error) = ack.await {
            failed.push(error.to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        failed.first()
    );
}

/// The positions of the records of `session`'s history, oldest first.
async fn history_positions(store: &(impl Store + ?Sized), session: &str) -> Vec<u64> {
    let history = whole_history(store, session).await;
    history.iter().map(|record| record.position).collect()
}

/// Every change of `store`'s log from its first (at most ten), as a reader from the start
/// reads them.
async fn whole_log(store: &(impl Store + ?Sized)) -> Vec<askbus_store::Change> {
    store
        .change_log()
        .unwrap()
        .read_after(LogPosition::START, 10, Duration::ZERO)
        .await
        .unwrap()
}

/// Every record of `session`'s history, oldest first.
async fn whole_history(store: &(impl Store + ?Sized), session: &str) -> Vec<HistoryRecord> {
    store
        .history(session, HistoryPage::From(0), usize::MAX)
        .await
        .unwrap()
}

/// A resolution recorded before outcomes named who decided (its JSON has no `decided_by`)
/// reads back naming nobody, and one naming nobody is written without the field, so
/// records of either age read the same.
#[test]
fn resolutions_without_a_decider_read_back_naming_nobody() {
    let older = r#"{"op":"resolved","kind":"question","id":"que_1",
        "outcome":{"state":"timed_out","body":"{}","resolved_at_ms":5}}"#;
    let read: ChangeKind = serde_json::from_str(older).unwrap();
    let nobody = OutcomeRecord::new(OutcomeState::TimedOut, "{}", 5);
    assert_eq!(
        read,
        ChangeKind::Resolved {
            kind: RequestKind::Question,
            id: "que_1".into(),
            outcome: nobody.clone(),
        }
    );
    assert!(
        !serde_json::to_string(&nobody)
            .unwrap()
            .contains("decided_by")
    );
    let named = nobody.decided_by(Some(r#"{"name":"bob"}"#.into()));
    let json = serde_json::to_string(&named).unwrap();
    assert_eq!(serde_json::from_str::<OutcomeRecord>(&json).unwrap(), named);
}

// The outbox: the same checks over the three backends.

#[tokio::test]
async fn memory_outbox_lists_deliveries() {
    check_outbox_listing(&MemoryStore::new()).await;
}

#[tokio::test]
async fn sqlite_outbox_lists_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    check_outbox_listing(&SqliteStore::open(dir.path().join("askbus.db")).unwrap()).await;
}

#[tokio::test]
async fn redis_outbox_lists_deliveries() {
    let redis = TestRedis::new().await;
    check_outbox_listing(&redis.open().await).await;
}

#[tokio::test]
async fn memory_outbox_takes_a_message_only_from_the_winning_resolution() {
    check_outbox_resolve(&MemoryStore::new()).await;
}

#[tokio::test]
async fn sqlite_outbox_takes_a_message_only_from_the_winning_resolution() {
    let dir = tempfile::tempdir().unwrap();
    check_outbox_resolve(&SqliteStore::open(dir.path().join("askbus.db")).unwrap()).await;
}

#[tokio::test]
async fn redis_outbox_takes_a_message_only_from_the_winning_resolution() {
    let redis = TestRedis::new().await;
    check_outbox_resolve(&redis.open().await).await;
}

#[tokio::test]
async fn memory_outbox_claims_due_deliveries_for_a_lease() {
    check_outbox_claims(&MemoryStore::new()).await;
}

#[tokio::test]
async fn sqlite_outbox_claims_due_deliveries_for_a_lease() {
    let dir = tempfile::tempdir().unwrap();
    check_outbox_claims(&SqliteStore::open(dir.path().join("askbus.db")).unwrap()).await;
}

#[tokio::test]
async fn redis_outbox_claims_due_deliveries_for_a_lease() {
    let redis = TestRedis::new().await;
    check_outbox_claims(&redis.open().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_outbox_claims_each_delivery_once_under_racing_claimers() {
    let store = MemoryStore::new();
    check_claim_race(&[store.clone(), store.clone(), store]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_outbox_claims_each_delivery_once_under_racing_claimers() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("askbus.db")).unwrap();
    check_claim_race(&[store.clone(), store]).await;
}

/// Three handles with their own connections and writer tasks stand for three instances.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_outbox_claims_each_delivery_once_across_instances() {
    let redis = TestRedis::new().await;
    let instances = [redis.open().await, redis.open().await, redis.open().await];
    check_claim_race(&instances).await;
}

#[tokio::test]
async fn memory_outbox_forgets_settled_deliveries() {
    check_forget_deliveries(&MemoryStore::new()).await;
}

#[tokio::test]
async fn sqlite_outbox_forgets_settled_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    check_forget_deliveries(&SqliteStore::open(dir.path().join("askbus.db")).unwrap()).await;
}

#[tokio::test]
async fn redis_outbox_forgets_settled_deliveries() {
    let redis = TestRedis::new().await;
    check_forget_deliveries(&redis.open().await).await;
}

/// Only one process opens a SQLite file, so the leases found in it are a gone process's:
/// a reopened store claims its claimed deliveries again at once (a retry keeps its time),
/// and keeps what was settled and every payload byte for byte.
#[tokio::test]
async fn sqlite_outbox_forgets_the_leases_of_the_process_before() {
    const HOUR: u64 = 3_600_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let sent = message("msg_1", &["a", "b", "c"], 1_000);
    let store = SqliteStore::open(&path).unwrap();
    write(&store, Write::Enqueue(sent.clone())).await;
    assert_eq!(
        claimed(&store.claim_deliveries(2_000, HOUR, 10).await.unwrap()),
        ["msg_1/a", "msg_1/b", "msg_1/c"]
    );
    write(&store, attempted("msg_1", "b", failed(2_100, 100_000))).await;
    write(&store, attempted("msg_1", "c", delivered(2_200))).await;
    assert!(
        store
            .claim_deliveries(2_300, HOUR, 10)
            .await
            .unwrap()
            .is_empty()
    );
    drop(store);

    let store = SqliteStore::open(&path).unwrap();
    let again = store.claim_deliveries(2_300, HOUR, 10).await.unwrap();
    assert_eq!(
        again,
        [Delivery {
            next_attempt_ms: Some(2_300 + HOUR),
            ..pending_delivery(&sent, "a")
        }]
    );
    assert_eq!(again[0].payload.as_bytes(), sent.payload.as_bytes());
    assert_eq!(
        claimed(&store.claim_deliveries(100_000, HOUR, 10).await.unwrap()),
        ["msg_1/b"]
    );
    let kept = store.deliveries(everything()).await.unwrap();
    assert_eq!(
        kept[2],
        Delivery {
            state: DeliveryState::Delivered,
            attempts: 1,
            next_attempt_ms: None,
            last_attempt: Some(delivered(2_200)),
            ..pending_delivery(&sent, "c")
        }
    );
    assert_eq!(store.pending_deliveries().await.unwrap(), 2);
}

/// The count of requests ever held never goes down, whatever is forgotten: a reader that
/// numbers per request (the seeds' keys) continues above every number it gave.
#[tokio::test]
async fn the_count_of_requests_ever_held_survives_forgetting() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("askbus.db")).unwrap());
    for store in [sqlite, Arc::new(MemoryStore::new()) as Arc<dyn Store>] {
        for id in ["que_1", "que_2", "que_3"] {
            write(store.as_ref(), Write::Insert(question(id, None))).await;
            write(store.as_ref(), resolve(id, OutcomeState::Replied)).await;
        }
        assert_eq!(store.forget_resolved(u64::MAX, 100).await.unwrap(), 3);
        store.forget_quiet_histories(u64::MAX, 100).await.unwrap();
        let loaded = store.requests(RequestKind::Question, 10).await.unwrap();
        assert!(loaded.pending.is_empty() && loaded.resolved.is_empty());
        assert!(loaded.requests_ever >= 3, "{}", loaded.requests_ever);
    }
}

/// A file of schema 6 (before the outbox) is upgraded with an empty outbox, its requests
/// kept.
#[tokio::test]
async fn sqlite_store_upgrade_adds_the_outbox() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = SqliteStore::open(&path).unwrap();
    write(&store, Write::Insert(question("que_1", None))).await;
    drop(store);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE deliveries; PRAGMA user_version = 6;")
        .unwrap();

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.pending_deliveries().await.unwrap(), 0);
    assert_eq!(
        store
            .requests(RequestKind::Question, 0)
            .await
            .unwrap()
            .requests_ever,
        1,
        "the count of requests ever held"
    );
    assert_eq!(
        write(&store, resolve_telling("que_1", "msg_1", &["hook"])).await,
        Written::Resolved
    );
    assert_eq!(
        claimed(&store.claim_deliveries(u64::MAX, 1, 10).await.unwrap()),
        ["msg_1/hook"]
    );
    drop(store);
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 7);
}

/// A prefix of schema 6 (before the outbox) is upgraded by setting its version: the outbox
/// starts empty, the requests are kept.
#[tokio::test]
async fn redis_store_upgrade_adds_the_outbox() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    write(&store, Write::Insert(question("que_1", None))).await;
    drop(store);
    let schema = format!("{}:schema", redis.prefix);
    redis.command(redis::cmd("SET").arg(&schema).arg(6));

    let store = redis.open().await;
    assert_eq!(redis.get(&schema), "7");
    assert_eq!(store.pending_deliveries().await.unwrap(), 0);
    assert_eq!(
        write(&store, resolve_telling("que_1", "msg_1", &["hook"])).await,
        Written::Resolved
    );
    assert_eq!(
        claimed(&store.claim_deliveries(u64::MAX, 1, 10).await.unwrap()),
        ["msg_1/hook"]
    );
}

/// A damaged delivery fails the listing with its reason, and is passed over by a claim,
/// which still claims the others.
#[tokio::test]
async fn sqlite_outbox_passes_over_a_damaged_delivery() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = SqliteStore::open(&path).unwrap();
    write(&store, Write::Enqueue(message("msg_1", &["a", "b"], 1_000))).await;
    drop(store);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("UPDATE deliveries SET last_attempt = '{' WHERE target = 'a';")
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    check_damaged_delivery(&store).await;
}

#[tokio::test]
async fn redis_outbox_passes_over_a_damaged_delivery() {
    let redis = TestRedis::new().await;
    let store = redis.open().await;
    write(&store, Write::Enqueue(message("msg_1", &["a", "b"], 1_000))).await;
    redis.command(
        redis::cmd("HSET")
            .arg(format!("{}:dlv:msg_1\ta", redis.prefix))
            .arg("attempts")
            .arg("many"),
    );
    check_damaged_delivery(&store).await;
    // A due entry with no delivery behind it is taken off the due ones.
    redis.command(
        redis::cmd("ZADD")
            .arg(format!("{}:outbox:due", redis.prefix))
            .arg(0)
            .arg("msg_0\tgone"),
    );
    assert_eq!(store.pending_deliveries().await.unwrap(), 2);
    assert!(
        store
            .claim_deliveries(2_000, 1, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.pending_deliveries().await.unwrap(),
        1,
        "the damaged one, leased"
    );
}

async fn check_damaged_delivery(store: &dyn Store) {
    match store.deliveries(everything()).await {
        Err(StoreError::Corrupt(reason)) => assert!(reason.contains("msg_1"), "{reason}"),
        other => panic!("a damaged delivery was read: {other:?}"),
    }
    assert_eq!(
        claimed(&store.claim_deliveries(2_000, 60_000, 10).await.unwrap()),
        ["msg_1/b"]
    );
    assert_eq!(
        write(store, attempted("msg_1", "b", delivered(2_100))).await,
        Written::Appended
    );
}

/// Two messages to three targets each: six pending deliveries, listed newest message first
/// (a message's by target), by state, a page at a time; a message enqueued again adds only
/// the deliveries it did not have.
async fn check_outbox_listing(store: &dyn Store) {
    let older = message("msg_01", &["c", "a", "b"], 1_000);
    let newer = message("msg_02", &["b", "c", "a"], 2_000);
    for sent in [&older, &newer] {
        assert_eq!(
            write(store, Write::Enqueue(sent.clone())).await,
            Written::Appended
        );
    }
    assert_eq!(store.pending_deliveries().await.unwrap(), 6);
    let all = store.deliveries(everything()).await.unwrap();
    assert_eq!(
        claimed(&all),
        [
            "msg_02/a", "msg_02/b", "msg_02/c", "msg_01/a", "msg_01/b", "msg_01/c"
        ]
    );
    assert_eq!(all[0], pending_delivery(&newer, "a"));
    assert_eq!(all[5], pending_delivery(&older, "c"));

    write(store, attempted("msg_01", "b", delivered(3_000))).await;
    write(store, attempted("msg_02", "c", abandoned(3_100))).await;
    write(store, attempted("msg_02", "a", failed(3_200, 9_000))).await;
    assert_eq!(store.pending_deliveries().await.unwrap(), 4);
    let only = |state| DeliveryQuery {
        state: Some(state),
        ..everything()
    };
    let done = store
        .deliveries(only(DeliveryState::Delivered))
        .await
        .unwrap();
    assert_eq!(
        done,
        [Delivery {
            state: DeliveryState::Delivered,
            attempts: 1,
            next_attempt_ms: None,
            last_attempt: Some(delivered(3_000)),
            ..pending_delivery(&older, "b")
        }]
    );
    let given_up = store
        .deliveries(only(DeliveryState::Abandoned))
        .await
        .unwrap();
    assert_eq!(claimed(&given_up), ["msg_02/c"]);
    let pending = store
        .deliveries(only(DeliveryState::Pending))
        .await
        .unwrap();
    assert_eq!(
        claimed(&pending),
        ["msg_02/a", "msg_02/b", "msg_01/a", "msg_01/c"]
    );
    assert_eq!(
        pending[0],
        Delivery {
            attempts: 1,
            next_attempt_ms: Some(9_000),
            last_attempt: Some(failed(3_200, 9_000)),
            ..pending_delivery(&newer, "a")
        }
    );
    let limited = DeliveryQuery {
        limit: 1,
        ..only(DeliveryState::Pending)
    };
    assert_eq!(
        claimed(&store.deliveries(limited).await.unwrap()),
        ["msg_02/b"]
    );

    // A page at a time: each page ends with a whole message here.
    let page = |before: Option<&str>| DeliveryQuery {
        before: before.map(Into::into),
        state: None,
        limit: 3,
    };
    let first = store.deliveries(page(None)).await.unwrap();
    assert_eq!(claimed(&first), ["msg_02/a", "msg_02/b", "msg_02/c"]);
    let second = store
        .deliveries(page(Some(&first[2].message_id)))
        .await
        .unwrap();
    assert_eq!(claimed(&second), ["msg_01/a", "msg_01/b", "msg_01/c"]);
    assert!(
        store
            .deliveries(page(Some("msg_01")))
            .await
            .unwrap()
            .is_empty()
    );
    let pending_before = DeliveryQuery {
        before: Some("msg_02".into()),
        ..only(DeliveryState::Pending)
    };
    assert_eq!(
        claimed(&store.deliveries(pending_before).await.unwrap()),
        ["msg_01/a", "msg_01/c"]
    );
    assert!(
        store
            .deliveries(DeliveryQuery {
                limit: 0,
                ..everything()
            })
            .await
            .unwrap()
            .is_empty()
    );

    // Enqueued again, with one more target: the delivered one stays delivered.
    let again = message("msg_01", &["b", "d"], 1_000);
    assert_eq!(write(store, Write::Enqueue(again)).await, Written::Appended);
    assert_eq!(store.pending_deliveries().await.unwrap(), 5);
    let all = store.deliveries(everything()).await.unwrap();
    assert_eq!(all.len(), 7);
    assert_eq!(
        all[3..],
        [
            pending_delivery(&older, "a"),
            done[0].clone(),
            pending_delivery(&older, "c"),
            pending_delivery(&older, "d"),
        ]
    );
}

/// A resolution's message is added with it if it wins, and only then.
async fn check_outbox_resolve(store: &dyn Store) {
    write(store, Write::Insert(question("que_1", None))).await;
    let won = Write::Resolve {
        kind: RequestKind::Question,
        id: "que_1".into(),
        outcome: outcome(OutcomeState::Replied),
        audit: Some(r#"{"draft":1}"#.into()),
        outbox: Some(telling("msg_1", &["hook", "chat"])),
    };
    assert_eq!(write(store, won).await, Written::Resolved);
    assert_eq!(store.pending_deliveries().await.unwrap(), 2);
    assert_eq!(store.audit_entries(0, 10).await.unwrap().len(), 1);
    let lost = resolve_telling("que_1", "msg_2", &["hook", "mail"]);
    assert_eq!(
        write(store, lost).await,
        Written::AlreadyResolved(OutcomeState::Replied)
    );
    let unknown = resolve_telling("que_404", "msg_3", &["hook"]);
    assert_eq!(write(store, unknown).await, Written::NotFound);
    assert_eq!(store.pending_deliveries().await.unwrap(), 2);
    let all = store.deliveries(everything()).await.unwrap();
    assert_eq!(claimed(&all), ["msg_1/chat", "msg_1/hook"]);
    assert_eq!(
        all[1],
        pending_delivery(&telling("msg_1", &["hook", "chat"]), "hook")
    );
    // A resolution telling nobody adds nothing.
    write(store, Write::Insert(question("que_2", None))).await;
    write(store, resolve("que_2", OutcomeState::Rejected)).await;
    assert_eq!(store.pending_deliveries().await.unwrap(), 2);
}

/// Claims take the due deliveries, the longest due first, for a lease; an attempt's
/// outcome decides what becomes of a delivery, unless it is settled already.
async fn check_outbox_claims(store: &dyn Store) {
    const LEASE: u64 = 60_000;
    write(store, Write::Enqueue(message("msg_1", &["b", "a"], 1_000))).await;
    write(store, Write::Enqueue(message("msg_2", &["a"], 500))).await;
    write(store, Write::Enqueue(message("msg_3", &["a"], 5_000))).await;
    assert!(
        store
            .claim_deliveries(2_000, LEASE, 0)
            .await
            .unwrap()
            .is_empty()
    );

    let first = store.claim_deliveries(2_000, LEASE, 2).await.unwrap();
    assert_eq!(
        claimed(&first),
        ["msg_2/a", "msg_1/a"],
        "the longest due first"
    );
    assert!(
        first
            .iter()
            .all(|delivery| delivery.next_attempt_ms == Some(2_000 + LEASE))
    );
    assert_eq!(
        first[1],
        Delivery {
            next_attempt_ms: Some(2_000 + LEASE),
            ..pending_delivery(&message("msg_1", &[], 1_000), "a")
        }
    );
    assert_eq!(
        claimed(&store.claim_deliveries(2_000, LEASE, 10).await.unwrap()),
        ["msg_1/b"]
    );
    assert!(
        store
            .claim_deliveries(3_000, LEASE, 10)
            .await
            .unwrap()
            .is_empty(),
        "within the lease, and msg_3 is not due yet"
    );

    // Failed, due again at 10 s; delivered, never again.
    let retry = failed(2_500, 10_000);
    assert_eq!(
        write(store, attempted("msg_2", "a", retry.clone())).await,
        Written::Appended
    );
    assert_eq!(
        write(store, attempted("msg_1", "a", delivered(2_600))).await,
        Written::Appended
    );
    assert_eq!(
        claimed(&store.claim_deliveries(9_000, LEASE, 10).await.unwrap()),
        ["msg_3/a"]
    );
    let after_lease = store
        .claim_deliveries(2_000 + LEASE, 1_000, 10)
        .await
        .unwrap();
    assert_eq!(claimed(&after_lease), ["msg_2/a", "msg_1/b"]);
    assert_eq!(after_lease[0].attempts, 1);
    assert_eq!(after_lease[0].last_attempt, Some(retry));

    // A late attempt on a settled delivery changes nothing.
    assert_eq!(
        write(store, attempted("msg_1", "a", failed(2_700, 3_000))).await,
        Written::Appended
    );
    let settled = Delivery {
        state: DeliveryState::Delivered,
        attempts: 1,
        next_attempt_ms: None,
        last_attempt: Some(delivered(2_600)),
        ..pending_delivery(&message("msg_1", &[], 1_000), "a")
    };
    let everyone = store.deliveries(everything()).await.unwrap();
    assert_eq!(
        everyone
            .iter()
            .find(|d| claimed(&[(*d).clone()]) == ["msg_1/a"]),
        Some(&settled)
    );
    for now in [1 << 40, u64::MAX - 1] {
        let late = store.claim_deliveries(now, 1, 100).await.unwrap();
        assert_eq!(
            claimed(&late),
            ["msg_1/b", "msg_2/a", "msg_3/a"].map(String::from)
        );
    }

    // Given up: settled too.
    assert_eq!(
        write(store, attempted("msg_1", "b", abandoned(4_000))).await,
        Written::Appended
    );
    assert_eq!(store.pending_deliveries().await.unwrap(), 2);
    assert_eq!(
        write(store, attempted("msg_9", "a", delivered(4_000))).await,
        Written::NotFound
    );
    assert_eq!(
        write(store, attempted("msg_1", "z", delivered(4_000))).await,
        Written::NotFound
    );
}

/// Many claimers, through every handle, race for 200 deliveries: each is claimed once.
async fn check_claim_race<S: Store + Clone>(handles: &[S]) {
    const TARGETS: [&str; 5] = ["t1", "t2", "t3", "t4", "t5"];
    for n in 0..40 {
        write(
            &handles[0],
            Write::Enqueue(message(&format!("msg_{n:03}"), &TARGETS, 1)),
        )
        .await;
    }
    let claimers: Vec<_> = (0..16)
        .map(|claimer| {
            let store = handles[claimer % handles.len()].clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let batch = store
                        .claim_deliveries(1_000, 3_600_000, 1 + claimer % 5)
                        .await
                        .unwrap();
                    if batch.is_empty() {
                        return mine;
                    }
                    mine.extend(claimed(&batch));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for claimer in claimers {
        all.extend(claimer.await.unwrap());
    }
    let unique: std::collections::BTreeSet<_> = all.iter().collect();
    assert_eq!(all.len(), 200, "claimed more than once, or not at all");
    assert_eq!(unique.len(), 200);
    assert_eq!(handles[0].pending_deliveries().await.unwrap(), 200);
}

/// Settled deliveries are forgotten by the time of their last attempt, the oldest first and
/// no more than asked; pending ones never, whatever their age; the sweep forgets them after
/// the retention period.
async fn check_forget_deliveries(store: &dyn Store) {
    write(
        store,
        Write::Enqueue(message("msg_1", &["a", "b", "c", "d"], 100)),
    )
    .await;
    write(store, Write::Enqueue(message("msg_2", &["a"], 100))).await;
    write(store, attempted("msg_1", "a", delivered(1_000))).await;
    write(store, attempted("msg_1", "b", abandoned(3_000))).await;
    write(store, attempted("msg_1", "c", delivered(2_000))).await;
    write(store, attempted("msg_1", "d", failed(500, 600))).await;
    let left = || async { claimed(&store.deliveries(everything()).await.unwrap()) };

    assert_eq!(store.forget_deliveries(2_500, 0).await.unwrap(), 0);
    assert_eq!(store.forget_deliveries(2_500, 1).await.unwrap(), 1);
    assert_eq!(left().await, ["msg_2/a", "msg_1/b", "msg_1/c", "msg_1/d"]);
    assert_eq!(store.forget_deliveries(2_500, 10).await.unwrap(), 1);
    assert_eq!(store.forget_deliveries(2_500, 10).await.unwrap(), 0);
    assert_eq!(
        store.forget_deliveries(3_000, 10).await.unwrap(),
        0,
        "not before"
    );
    assert_eq!(store.forget_deliveries(u64::MAX, 10).await.unwrap(), 1);
    assert_eq!(left().await, ["msg_2/a", "msg_1/d"]);
    assert_eq!(store.forget_deliveries(u64::MAX, 10).await.unwrap(), 0);
    assert_eq!(store.pending_deliveries().await.unwrap(), 2);
    assert_eq!(
        write(store, attempted("msg_1", "a", delivered(4_000))).await,
        Written::NotFound,
        "forgotten"
    );
    assert_eq!(
        claimed(&store.claim_deliveries(700, 1, 10).await.unwrap()),
        ["msg_2/a", "msg_1/d"]
    );

    // The sweep: settled a day ago, forgotten; settled now, kept; pending, kept.
    const DAY: Duration = Duration::from_secs(24 * 3600);
    let now = askbus_store::now_ms();
    write(
        store,
        attempted("msg_1", "d", delivered(now - 2 * 86_400_000)),
    )
    .await;
    write(store, attempted("msg_2", "a", delivered(now))).await;
    write(store, Write::Enqueue(message("msg_3", &["a"], now))).await;
    askbus_store::sweep(store, DAY).await;
    assert_eq!(left().await, ["msg_3/a", "msg_2/a"]);
}

/// A message of `id` to `targets`, made at `created_at_ms`, whose payload needs escaping.
fn message(id: &str, targets: &[&str], created_at_ms: u64) -> OutboxMessage {
    OutboxMessage {
        id: id.into(),
        targets: targets.iter().map(|&target| target.into()).collect(),
        payload: format!("{{\"message\":\"{id}\",\"text\":\"ja \\\"oui\\\"\\n✓\\t\"}}"),
        created_at_ms,
    }
}

/// The message a resolution tells of.
fn telling(id: &str, targets: &[&str]) -> OutboxMessage {
    message(id, targets, 1_700_000_001_000)
}

/// The resolution of `request` (replied) that tells `targets` with the message `message_id`.
fn resolve_telling(request: &str, message_id: &str, targets: &[&str]) -> Write {
    Write::Resolve {
        kind: RequestKind::Question,
        id: request.into(),
        outcome: outcome(OutcomeState::Replied),
        audit: None,
        outbox: Some(telling(message_id, targets)),
    }
}

/// `message`'s delivery to `target` as enqueued: pending, due at its creation.
fn pending_delivery(message: &OutboxMessage, target: &str) -> Delivery {
    Delivery {
        message_id: message.id.clone(),
        target: target.into(),
        payload: message.payload.clone(),
        created_at_ms: message.created_at_ms,
        state: DeliveryState::Pending,
        attempts: 0,
        next_attempt_ms: Some(message.created_at_ms),
        last_attempt: None,
    }
}

/// Every delivery (up to a thousand), newest message first.
fn everything() -> DeliveryQuery {
    DeliveryQuery {
        before: None,
        state: None,
        limit: 1000,
    }
}

/// `message/target` of each delivery, in order.
fn claimed(deliveries: &[Delivery]) -> Vec<String> {
    deliveries
        .iter()
        .map(|delivery| format!("{}/{}", delivery.message_id, delivery.target))
        .collect()
}

fn attempted(message_id: &str, target: &str, attempt: Attempt) -> Write {
    Write::Attempted {
        message_id: message_id.into(),
        target: target.into(),
        attempt,
    }
}

fn delivered(at_ms: u64) -> Attempt {
    Attempt {
        at_ms,
        status: Some(200),
        error: None,
        then: AfterAttempt::Delivered,
    }
}

fn failed(at_ms: u64, retry_at_ms: u64) -> Attempt {
    Attempt {
        at_ms,
        status: Some(503),
        error: Some("503 Service Unavailable".into()),
        then: AfterAttempt::RetryAt { at_ms: retry_at_ms },
    }
}

fn abandoned(at_ms: u64) -> Attempt {
    Attempt {
        at_ms,
        status: None,
        error: Some("connection refused".into()),
        then: AfterAttempt::Abandon,
    }
}
