//! The audit log's receipts: drafts, sealing over a store, export, offline verification
//! (property-tested against changed bytes, removed and swapped lines), key files.

use std::sync::Arc;
use std::time::Duration;

use askbus_audit::{
    AuditDraft, AuditError, AuditLine, GENESIS, Problem, Seal, Sealer, SigningKey, Summary,
    VerifyError, export, parse_public_key, public_key_pem, read_signing_key, verify,
    write_key_files,
};
use askbus_store::{
    MemoryStore, OutcomeRecord, OutcomeState, RequestKind, RequestRecord, Store, Write, Written,
};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;

/// A fixed key, so that failures reproduce.
fn key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

fn request(id: &str) -> RequestRecord {
    RequestRecord {
        id: id.into(),
        kind: RequestKind::Approval,
        session_id: "s".into(),
        call_id: None,
        created_at_ms: 1,
        expires_at_ms: None,
        body: format!(r#"{{"id":"{id}","calls":[]}}"#),
    }
}

/// Inserts `id` into `store` and resolves it with its receipt; the resolution's result.
async fn decide(store: &dyn Store, id: &str, outcome: OutcomeRecord) -> Written {
    let request = request(id);
    store.write(Write::Insert(request.clone())).await.unwrap();
    let draft = AuditDraft::new(&request, &outcome, None).to_json();
    store
        .write(Write::Resolve {
            kind: request.kind,
            id: id.into(),
            outcome,
            audit: Some(draft),
            outbox: None,
        })
        .await
        .unwrap()
}

/// An export of `drafts` chained and sealed with `key`, one line each.
fn chain(drafts: &[String], key: Option<&SigningKey>) -> String {
    let mut prev = GENESIS;
    let mut export = String::new();
    for (seq, draft) in (1..).zip(drafts) {
        let (seal, hash) = Seal::make(&prev, seq, draft, key);
        let line = AuditLine {
            seq,
            prev: Some(seal.prev),
            hash: Some(seal.hash),
            sig: seal.sig,
            draft: draft.clone(),
        };
        export.push_str(&line.to_json());
        export.push('\n');
        prev = hash;
    }
    export
}

/// Verifies `export` with the fixed key's public half, or without a key.
fn check(export: &[u8], signed: bool) -> Result<Summary, VerifyError> {
    let public = key().verifying_key();
    verify(export, signed.then_some(&public))
}

#[test]
fn a_draft_names_the_request_by_the_hash_of_its_stored_json() {
    let request = request("apr_1");
    let outcome = OutcomeRecord::new(OutcomeState::Rejected, "not json", 9)
        .decided_by(Some(r#"{"name":"alice","role":"reviewer"}"#.into()));
    let draft = AuditDraft::new(&request, &outcome, Some(serde_json::json!({"name": "bot"})));
    let json: serde_json::Value = serde_json::from_str(&draft.to_json()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "request_id": "apr_1",
            "kind": "approval",
            "session_id": "s",
            "asked_by": {"name": "bot"},
            "decided_by": {"name": "alice", "role": "reviewer"},
            // sha256 of {"id":"apr_1","calls":[]}
            "request_sha256": "39bda6487b1c50cc77fdad16e37663b3624b294d9eb4a8551c6d60b49ab44fd9",
            "outcome": "rejected",
            "decision": "not json",
            "resolved_at_ms": 9,
        })
    );
    let nobody = AuditDraft::new(
        &request,
        &OutcomeRecord::new(OutcomeState::TimedOut, "null", 9),
        None,
    );
    assert_eq!(
        (nobody.decided_by, nobody.decision),
        (None, serde_json::Value::Null)
    );
}

/// Each way an export can be wrong is named, with its line and entry.
#[test]
fn verify_names_the_first_entry_that_does_not_hold() {
    let drafts: Vec<String> = ["a", "b", "c"].map(String::from).into();
    let signed = chain(&drafts, Some(&key()));
    let lines: Vec<&str> = signed.lines().collect();
    let join = |lines: &[&str]| {
        lines
            .iter()
            .map(|line| format!("{line}\n"))
            .collect::<String>()
    };
    let failure = |export: &str, signed| check(export.as_bytes(), signed).unwrap_err();
    let at = |line, seq, problem| VerifyError { line, seq, problem };

    let summary = check(signed.as_bytes(), true).unwrap();
    assert_eq!((summary.entries, summary.signed), (3, 3));
    assert_eq!(check(b"", true).unwrap(), Summary::default());

    assert_eq!(
        failure(&join(&[lines[0], lines[2]]), true),
        at(2, Some(3), Problem::OutOfOrder { expected: 2 })
    );
    assert_eq!(
        failure(&join(&[lines[1], lines[0], lines[2]]), true),
        at(1, Some(2), Problem::OutOfOrder { expected: 1 })
    );
    assert_eq!(
        failure(&join(&[lines[0], lines[0]]), true),
        at(2, Some(1), Problem::OutOfOrder { expected: 2 })
    );
    let changed_draft = signed.replacen(r#""draft":"b""#, r#""draft":"B""#, 1);
    assert_eq!(
        failure(&changed_draft, true),
        at(2, Some(2), Problem::WrongHash)
    );
    // Rechained from the changed entry on: the hashes hold, the signatures do not.
    let mut rechained: Vec<String> = drafts.clone();
    rechained[1] = "B".into();
    let forged = chain(&rechained, None);
    assert!(check(forged.as_bytes(), false).is_ok());
    assert_eq!(failure(&forged, true), at(1, Some(1), Problem::Unsigned));
    let other_key = chain(&rechained, Some(&SigningKey::from_bytes(&[8; 32])));
    assert_eq!(
        failure(&other_key, true),
        at(1, Some(1), Problem::BadSignature)
    );
    // A line that splices another chain's entry in: its prev is not the hash before it.
    let other = chain(&["x".to_owned(), "c".to_owned()], Some(&key()));
    let spliced = join(&[lines[0], other.lines().nth(1).unwrap()]);
    assert_eq!(failure(&spliced, true), at(2, Some(2), Problem::BrokenLink));
    // JSON that reads the same is still not what export writes.
    let spaced = signed.replacen(r#"{"seq":1,"#, r#"{"seq": 1,"#, 1);
    assert_eq!(failure(&spaced, true), at(1, Some(1), Problem::Malformed));
    assert_eq!(failure("{\n", true), at(1, None, Problem::Malformed));
    let unsealed = AuditLine::of(&askbus_store::AuditRecord {
        seq: 1,
        draft: "a".into(),
        seal: None,
    });
    assert_eq!(
        failure(&format!("{}\n", unsealed.to_json()), false),
        at(1, Some(1), Problem::Unsealed)
    );
    let not_utf8 = check(b"\xff\n", false).unwrap_err();
    assert!(
        matches!(not_utf8.problem, Problem::Unreadable(_)),
        "{not_utf8}"
    );
    assert_eq!(
        at(2, Some(3), Problem::WrongHash).to_string(),
        "line 2 (entry 3): its hash does not match its contents: the entry was changed"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any changed byte, any removed line but the last (whose absence only the head shows)
    /// and any two swapped lines fail a signed verify; the export as written passes.
    #[test]
    fn verify_fails_any_change_to_a_signed_export(
        drafts in proptest::collection::vec(any::<String>(), 2..6),
        at in any::<proptest::sample::Index>(),
        flip in 1..=255_u8,
        line in any::<proptest::sample::Index>(),
        other in any::<proptest::sample::Index>(),
    ) {
        let export = chain(&drafts, Some(&key()));
        let summary = check(export.as_bytes(), true).unwrap();
        prop_assert_eq!((summary.entries, summary.signed), (drafts.len() as u64, drafts.len() as u64));

        let mut changed = export.clone().into_bytes();
        changed[at.index(export.len())] ^= flip;
        prop_assert!(check(&changed, true).is_err());

        let lines: Vec<&str> = export.lines().collect();
        let removed = line.index(lines.len() - 1);
        let without: String = lines
            .iter()
            .enumerate()
            .filter(|(index, _)| *index != removed)
            .map(|(_, line)| format!("{line}\n"))
            .collect();
        let error = check(without.as_bytes(), false).unwrap_err();
        prop_assert_eq!(error.line, removed as u64 + 1);

        let (first, second) = (line.index(lines.len()), other.index(lines.len()));
        prop_assume!(first != second);
        let mut swapped = lines.clone();
        swapped.swap(first, second);
        let swapped: String = swapped.iter().map(|line| format!("{line}\n")).collect();
        let error = check(swapped.as_bytes(), false).unwrap_err();
        prop_assert_eq!(error.line, first.min(second) as u64 + 1);
    }
}

/// A sealer seals every entry in order, once; another (or the same, again) finds nothing
/// to do; the export of the sealed log verifies with the key.
#[tokio::test]
async fn sealers_seal_each_entry_once_and_the_export_verifies() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut first = Sealer::new(Arc::clone(&store), Some(key()));
    let mut second = Sealer::new(Arc::clone(&store), Some(key()));
    for n in 0..300 {
        let outcome = OutcomeRecord::new(OutcomeState::Replied, format!("[{n}]"), n);
        assert_eq!(
            decide(&*store, &format!("apr_{n:03}"), outcome).await,
            Written::Resolved
        );
    }
    // Entry 1 sealed by one, the rest by either: the seals are the same.
    store
        .seal_audit(vec![(
            1,
            Seal::make(
                &GENESIS,
                1,
                &store.audit_entries(0, 1).await.unwrap()[0].draft,
                Some(&key()),
            )
            .0
            .to_json(),
        )])
        .await
        .unwrap();
    let (a, b) = tokio::join!(first.seal_pending(), second.seal_pending());
    let sealed = a.unwrap() + b.unwrap();
    assert!((299..=598).contains(&sealed), "{sealed} sealed");
    assert_eq!(first.seal_pending().await.unwrap(), 0);
    let mut fresh = Sealer::new(Arc::clone(&store), None);
    assert_eq!(
        fresh.seal_pending().await.unwrap(),
        0,
        "checked, not sealed again"
    );

    let mut lines = Vec::new();
    let exported = export(&*store, &mut lines).await.unwrap();
    let verified = check(&lines, true).unwrap();
    assert_eq!(exported, verified);
    assert_eq!((verified.entries, verified.signed), (300, 300));
}

#[tokio::test]
async fn export_refuses_an_unsealed_entry_and_a_sealer_a_broken_seal() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    for id in ["apr_1", "apr_2"] {
        decide(
            &*store,
            id,
            OutcomeRecord::new(OutcomeState::Cancelled, "null", 1),
        )
        .await;
    }
    let refused = export(&*store, Vec::new()).await;
    assert!(
        matches!(refused, Err(AuditError::Unsealed { seq: 1 })),
        "{refused:?}"
    );

    // Entry 2 sealed as if entry 1 were another: nothing is sealed on top of it.
    let (forged, _) = Seal::make(&[1; 32], 2, "whatever", None);
    store.seal_audit(vec![(2, forged.to_json())]).await.unwrap();
    let mut sealer = Sealer::new(Arc::clone(&store), None);
    let broken = sealer.seal_pending().await;
    assert!(
        matches!(broken, Err(AuditError::BrokenSeal { seq: 2 })),
        "{broken:?}"
    );
}

/// The server's sealer seals within its interval, and stops with its shutdown.
#[tokio::test(start_paused = true)]
async fn a_running_sealer_seals_each_interval_until_shutdown() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(Sealer::new(Arc::clone(&store), None).run(shutdown.clone()));
    decide(
        &*store,
        "apr_1",
        OutcomeRecord::new(OutcomeState::Replied, "[]", 1),
    )
    .await;
    tokio::time::sleep(askbus_audit::SEAL_INTERVAL + Duration::from_millis(1)).await;
    assert!(store.audit_entries(0, 1).await.unwrap()[0].seal.is_some());
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(1), running)
        .await
        .expect("the sealer stops at shutdown")
        .unwrap();
}

#[test]
fn key_files_are_written_once_owner_only_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("audit.key");
    let key = key();
    let public = write_key_files(&secret, &key).unwrap();
    assert_eq!(public, dir.path().join("audit.key.pub"));
    assert_eq!(
        read_signing_key(&secret).unwrap().to_bytes(),
        key.to_bytes()
    );
    let pem = std::fs::read_to_string(&public).unwrap();
    assert_eq!(pem, public_key_pem(&key.verifying_key()).unwrap());
    assert_eq!(parse_public_key(&pem).unwrap(), key.verifying_key());
    let hex = hex_of(key.verifying_key().as_bytes());
    assert_eq!(parse_public_key(&hex).unwrap(), key.verifying_key());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // Nothing is overwritten: not the key, nor a public key left beside a new name.
    assert!(matches!(
        write_key_files(&secret, &key),
        Err(AuditError::Io(_))
    ));
    std::fs::remove_file(&secret).unwrap();
    assert!(matches!(
        write_key_files(&secret, &key),
        Err(AuditError::Io(_))
    ));
    assert!(!secret.exists());

    assert!(matches!(
        parse_public_key("not a key"),
        Err(AuditError::Key(_))
    ));
    std::fs::write(&secret, "not a key").unwrap();
    assert!(matches!(read_signing_key(&secret), Err(AuditError::Key(_))));
    assert!(matches!(
        read_signing_key(&dir.path().join("missing")),
        Err(AuditError::Io(_))
    ));
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
