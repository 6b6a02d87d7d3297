//! Sealing: computing each entry's seal after it is appended, and exporting sealed entries.

use std::sync::Arc;
use std::time::Duration;

use askbus_store::Store;
use ed25519_dalek::SigningKey;
use tokio_util::sync::CancellationToken;

use crate::chain::{AuditLine, GENESIS, Seal};
use crate::{AuditError, Summary};

/// How often [`Sealer::run`] seals what was appended: an entry is unsealed (its `prev` and
/// `hash` `null` in `GET /audit`) for about this long after its answer at most, while the
/// store answers.
pub const SEAL_INTERVAL: Duration = Duration::from_millis(200);

/// How many entries a sealer reads (and seals) at a time.
const BATCH: usize = 256;

/// Seals the entries of a store's audit log, in order, each after the one before it.
///
/// A resolution appends its entry in its own atomic step (so an answer is never
/// acknowledged without its entry), but its seal needs the previous entry's hash, which
/// concurrent resolutions on other instances may not have yet: sealing is a second step,
/// done by whichever sealer comes first. It is safe to run several at once, on one
/// instance or many: a seal is set only if the entry has none, and every sealer computes
/// the same seal for an entry (the same hash; Ed25519 signatures are deterministic), so it
/// does not matter whose stays. All instances must use the same key (or none).
///
/// A stored seal that does not continue the chain (the store was changed behind askbus's
/// back) stops the sealer there with [`AuditError::BrokenSeal`]: nothing is sealed on top
/// of it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
///
/// use askbus_audit::Sealer;
/// use askbus_store::{MemoryStore, Store};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
/// let mut sealer = Sealer::new(store, None);
/// assert_eq!(sealer.seal_pending().await.unwrap(), 0);
/// # }
/// ```
pub struct Sealer {
    /// Whose audit log.
    store: Arc<dyn Store>,
    /// Signs each seal's hash, if given.
    key: Option<SigningKey>,
    /// The number of the last entry known sealed (0: none), every entry up to it checked.
    sealed_seq: u64,
    /// That entry's hash ([`GENESIS`] for none).
    sealed_hash: [u8; 32],
}

impl Sealer {
    /// A sealer of `store`'s audit log, signing with `key` if given.
    pub fn new(store: Arc<dyn Store>, key: Option<SigningKey>) -> Self {
        Self {
            store,
            key,
            sealed_seq: 0,
            sealed_hash: GENESIS,
        }
    }

    /// Seals every entry appended so far that has no seal, in order; answers how many it
    /// sealed. Entries sealed already (by this or another sealer) are checked, not sealed
    /// again.
    ///
    /// # Errors
    ///
    /// [`AuditError::Store`] if the store cannot be read or written (what was sealed before
    /// stays sealed; the next call goes on), [`AuditError::Gap`] or
    /// [`AuditError::BrokenSeal`] if the log is not what askbus wrote.
    ///
    /// # Cancel safety
    ///
    /// Cancelling it loses nothing: seals already written stay, and the next call seals
    /// the rest.
    pub async fn seal_pending(&mut self) -> Result<u64, AuditError> {
        let mut sealed = 0;
        loop {
            let entries = self.store.audit_entries(self.sealed_seq, BATCH).await?;
            let mut seals = Vec::new();
            let (mut seq, mut hash) = (self.sealed_seq, self.sealed_hash);
            for entry in &entries {
                if entry.seq != seq + 1 {
                    return Err(AuditError::Gap {
                        expected: seq + 1,
                        found: entry.seq,
                    });
                }
                let (seal, next) = Seal::make(&hash, entry.seq, &entry.draft, self.key.as_ref());
                match entry.seal.as_deref() {
                    None => seals.push((entry.seq, seal.to_json())),
                    Some(stored) => {
                        // The signature may be another key's (or none); the chain must hold.
                        let continues = Seal::parse(stored).is_some_and(|stored| {
                            stored.prev == seal.prev && stored.hash == seal.hash
                        });
                        if !continues {
                            return Err(AuditError::BrokenSeal { seq: entry.seq });
                        }
                    }
                }
                (seq, hash) = (entry.seq, next);
            }
            let count = seals.len() as u64;
            if !seals.is_empty() {
                self.store.seal_audit(seals).await?;
            }
            sealed += count;
            (self.sealed_seq, self.sealed_hash) = (seq, hash);
            if entries.len() < BATCH {
                return Ok(sealed);
            }
        }
    }

    /// Seals what is appended every [`SEAL_INTERVAL`] until `shutdown` is cancelled, then
    /// once more. A failure is logged (once, until sealing works again) and tried again at
    /// the next interval.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut interval = tokio::time::interval(SEAL_INTERVAL);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            let stopping = tokio::select! {
                () = shutdown.cancelled() => true,
                _ = interval.tick() => false,
            };
            match self.seal_pending().await {
                Ok(_) if failing => {
                    tracing::info!("the audit log is sealed again");
                    failing = false;
                }
                Ok(_) => {}
                Err(error) if !failing => {
                    tracing::warn!("cannot seal the audit log: {error}; trying again");
                    failing = true;
                }
                Err(_) => {}
            }
            if stopping {
                return;
            }
        }
    }
}

/// Writes every entry of `store`'s audit log to `out`, one [`AuditLine`] per line, as
/// `verify` reads them; answers what it wrote. Seal them first ([`Sealer::seal_pending`]).
///
/// # Errors
///
/// [`AuditError::Unsealed`] at the first entry without a seal, [`AuditError::Store`] if the
/// store cannot be read, [`AuditError::Io`] if `out` cannot be written.
pub async fn export(
    store: &dyn Store,
    mut out: impl std::io::Write,
) -> Result<Summary, AuditError> {
    let mut summary = Summary::default();
    loop {
        let entries = store.audit_entries(summary.entries, BATCH).await?;
        for entry in &entries {
            let line = AuditLine::of(entry);
            let Some(hash) = line.hash.clone() else {
                return Err(AuditError::Unsealed { seq: entry.seq });
            };
            writeln!(out, "{}", line.to_json())?;
            summary.entries = entry.seq;
            summary.signed += u64::from(line.sig.is_some());
            summary.head = Some(hash);
        }
        if entries.len() < BATCH {
            out.flush()?;
            return Ok(summary);
        }
    }
}
