//! The audit log of askbus: a receipt of every decision, hash-chained, optionally signed,
//! and checked offline from an export alone.
//!
//! # Why
//!
//! An answer changes what an agent does next; whoever runs agents must be able to show,
//! later, who decided what, on which content, and when, and that nobody changed the record
//! since. The store's requests are not that record: retention deletes them, and a row can
//! be edited without a trace. The audit log is kept apart, never deleted by askbus, and
//! each entry is bound to all before it by a hash chain, so a change to any entry, or a
//! removed or reordered one, is detected by anyone holding an export; with a key, each
//! entry is signed, so only the key's holder could have written it.
//!
//! # The policy, in exact words
//!
//! - **Every winning resolution writes its receipt atomically.** The resolution carries an
//!   [`AuditDraft`] (who asked, who decided, the SHA-256 of the request as stored, the
//!   outcome and its data, when) to the store, which appends it as the next entry in the
//!   same atomic step as the resolution, and only if the resolution wins (see
//!   [`Write::Resolve`](askbus_store::Write::Resolve)). So an acknowledged answer always has
//!   its entry, across `kill -9`, and a request has at most one entry.
//! - **Entries are numbered 1, 2, 3, … with no gap**, one sequence per store, shared by
//!   every instance over Redis.
//! - **The chain:** entry `n`'s hash is `sha256(prev, n, draft)`: `prev` is entry
//!   `n - 1`'s hash ([`GENESIS`], 32 zero bytes, for the first entry), `n` is 8 bytes
//!   big-endian and `draft` the entry's stored bytes ([`entry_hash`]). With a key, the
//!   seal also holds the Ed25519 signature of the 32 hash bytes.
//! - **Sealing is a second step.** An entry's hash needs its predecessor's, which another
//!   instance may be writing at the same moment, so a [`Sealer`] computes seals after the
//!   fact, in order, every [`SEAL_INTERVAL`] (200 ms). Several sealers may run at once: they
//!   compute identical seals, and the store keeps the first.
//! - **An export is checked offline.** [`export`] writes one [`AuditLine`] per line; [`verify`]
//!   needs only those lines (and the public key, to check signatures), and names the first
//!   entry that does not hold. The end of an export cannot vouch for itself: compare its
//!   head ([`Summary::head`]) with one noted earlier.
//!
//! The crate knows the store, not HTTP: the server runs the [`Sealer`] and the CLI, the
//! HTTP layer shows [`AuditLine`]s.
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//!
//! use askbus_audit::{AuditDraft, Sealer, export, generate_key, verify};
//! use askbus_store::{
//!     MemoryStore, OutcomeRecord, OutcomeState, RequestKind, RequestRecord, Store, Write,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let request = RequestRecord {
//!     id: "que_1".into(),
//!     kind: RequestKind::Question,
//!     session_id: "s".into(),
//!     call_id: None,
//!     created_at_ms: 1,
//!     expires_at_ms: None,
//!     body: r#"{"questions":[]}"#.into(),
//! };
//! store.write(Write::Insert(request.clone())).await.unwrap();
//! let outcome = OutcomeRecord::new(OutcomeState::Replied, r#"[["Yes"]]"#, 2);
//! let draft = AuditDraft::new(&request, &outcome, None).to_json();
//! store
//!     .write(Write::Resolve {
//!         kind: RequestKind::Question,
//!         id: request.id.clone(),
//!         outcome,
//!         audit: Some(draft),
//!         outbox: None,
//!     })
//!     .await
//!     .unwrap();
//!
//! let key = generate_key().unwrap();
//! let mut sealer = Sealer::new(Arc::clone(&store), Some(key.clone()));
//! assert_eq!(sealer.seal_pending().await.unwrap(), 1);
//! let mut lines = Vec::new();
//! export(&*store, &mut lines).await.unwrap();
//! let checked = verify(lines.as_slice(), Some(&key.verifying_key())).unwrap();
//! assert_eq!((checked.entries, checked.signed), (1, 1));
//! # }
//! ```

#[cfg(feature = "seal")]
mod chain;
mod draft;
#[cfg(feature = "seal")]
mod keys;
#[cfg(feature = "seal")]
mod sealer;
#[cfg(feature = "seal")]
mod verify;

#[cfg(feature = "seal")]
pub use chain::{AuditLine, GENESIS, Seal, entry_hash};
pub use draft::{AuditDraft, AuditOutcome, RequestShown, request_digest};
#[cfg(feature = "seal")]
pub use ed25519_dalek::{SigningKey, VerifyingKey};
#[cfg(feature = "seal")]
pub use keys::{
    generate_key, parse_public_key, public_key_path, public_key_pem, read_signing_key,
    write_key_files,
};
#[cfg(feature = "seal")]
pub use sealer::{SEAL_INTERVAL, Sealer, export};
#[cfg(feature = "seal")]
pub use verify::{Problem, Summary, VerifyError, verify};

/// Why an audit operation failed.
#[cfg(feature = "seal")]
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] askbus_store::StoreError),
    /// The store's audit log skips a number: it is not what askbus wrote.
    #[error("the audit log skips from entry {} to {found}", expected - 1)]
    Gap {
        /// The number that should have come.
        expected: u64,
        /// The number that came.
        found: u64,
    },
    /// A stored seal does not continue the chain: the store was changed behind askbus's
    /// back at or before this entry. Nothing is sealed after it.
    #[error("the stored seal of audit entry {seq} does not continue the chain")]
    BrokenSeal {
        /// The entry.
        seq: u64,
    },
    /// An entry to export has no seal yet (seal first).
    #[error("audit entry {seq} is not sealed")]
    Unsealed {
        /// The entry.
        seq: u64,
    },
    /// A key could not be made, read or encoded.
    #[error("{0}")]
    Key(String),
    /// A file or stream could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
