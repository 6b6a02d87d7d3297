//! Checking an export offline: [`verify`].

use std::io::BufRead;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signature, VerifyingKey};

use crate::chain::{AuditLine, GENESIS, entry_hash};

/// What a [`verify`] (or an export) went through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// How many entries: the number of the last one.
    pub entries: u64,
    /// How many carry a signature (with a key, how many signatures were verified: all).
    pub signed: u64,
    /// The last entry's hash (lowercase hex), `None` for an empty log: compare it with the
    /// head a server shows (`GET /audit`) or one noted earlier to see that nothing was cut
    /// off the end.
    pub head: Option<String>,
}

/// The first entry of an export that does not hold, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}{}: {problem}", seq.map(|seq| format!(" (entry {seq})")).unwrap_or_default())]
pub struct VerifyError {
    /// The line (from 1) where the export stops holding.
    pub line: u64,
    /// The entry's number, if the line could be read that far.
    pub seq: Option<u64>,
    /// What is wrong with it.
    pub problem: Problem,
}

/// What is wrong with an entry of an export.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The line cannot be read (not UTF-8, or the file cannot be read).
    #[error("cannot read it: {0}")]
    Unreadable(String),
    /// The line is not an audit line, byte for byte as an export writes it (not JSON,
    /// another field, other spacing or escaping).
    #[error("it is not an audit line as `askbus audit export` writes it")]
    Malformed,
    /// Its number is not the next one: an entry before it was removed, or lines were
    /// reordered or repeated.
    #[error("expected entry {expected} here: an entry is missing, or out of order")]
    OutOfOrder {
        /// The number the entry should have.
        expected: u64,
    },
    /// It has no seal (`prev` and `hash` are `null`).
    #[error("it is not sealed")]
    Unsealed,
    /// Its `prev` is not the hash of the entry before it.
    #[error("its prev is not the hash of the entry before it")]
    BrokenLink,
    /// Its `hash` is not the hash of its number and draft after `prev`: the draft (or the
    /// number) was changed.
    #[error("its hash does not match its contents: the entry was changed")]
    WrongHash,
    /// A key was given and the entry has no signature.
    #[error("it is not signed")]
    Unsigned,
    /// Its signature is not the key's signature of its hash.
    #[error("its signature does not verify with the public key")]
    BadSignature,
}

/// Checks an export (one [`AuditLine`] per line, as `askbus audit export` writes them)
/// from `reader`: the entries are numbered 1, 2, 3, … (so a removed, repeated or reordered
/// line fails), each line is byte for byte what an export writes, each `prev` is the hash
/// before it, each `hash` recomputes from the entry's number and draft; with
/// `public_key`, each entry is signed and its signature verifies (strictly). Without a
/// key, signatures are not checked: the chain alone shows changes, but not who made them
/// (anyone can recompute a chain); only a signature shows that.
///
/// An export cut short at its end still holds: compare [`Summary::head`] with a head
/// noted earlier (or the server's) to see that nothing is missing there.
///
/// # Errors
///
/// [`VerifyError`] naming the first line (and entry) that does not hold, and why.
///
/// # Examples
///
/// ```
/// use askbus_audit::{AuditLine, GENESIS, Problem, Seal, verify};
///
/// let (seal, _) = Seal::make(&GENESIS, 1, r#"{"request_id":"que_1"}"#, None);
/// let line = AuditLine {
///     seq: 1,
///     prev: Some(seal.prev),
///     hash: Some(seal.hash),
///     sig: None,
///     draft: r#"{"request_id":"que_1"}"#.into(),
/// };
/// let export = format!("{}\n", line.to_json());
/// assert_eq!(verify(export.as_bytes(), None).unwrap().entries, 1);
///
/// let changed = export.replace("que_1", "que_2");
/// let error = verify(changed.as_bytes(), None).unwrap_err();
/// assert_eq!((error.line, error.problem), (1, Problem::WrongHash));
/// ```
pub fn verify(
    reader: impl BufRead,
    public_key: Option<&VerifyingKey>,
) -> Result<Summary, VerifyError> {
    let mut summary = Summary::default();
    let mut prev = GENESIS;
    for (index, text) in reader.lines().enumerate() {
        let line_number = index as u64 + 1;
        let fail = |seq, problem| VerifyError {
            line: line_number,
            seq,
            problem,
        };
        let text = text.map_err(|error| fail(None, Problem::Unreadable(error.to_string())))?;
        let line: AuditLine =
            serde_json::from_str(&text).map_err(|_| fail(None, Problem::Malformed))?;
        let seq = Some(line.seq);
        // Only what export writes, byte for byte: a change anywhere on the line fails,
        // even in spacing or escaping that JSON would read the same.
        if line.to_json() != text {
            return Err(fail(seq, Problem::Malformed));
        }
        let expected = summary.entries + 1;
        if line.seq != expected {
            return Err(fail(seq, Problem::OutOfOrder { expected }));
        }
        let (Some(line_prev), Some(line_hash)) = (&line.prev, &line.hash) else {
            return Err(fail(seq, Problem::Unsealed));
        };
        if *line_prev != hex::encode(prev) {
            return Err(fail(seq, Problem::BrokenLink));
        }
        let hash = entry_hash(&prev, line.seq, &line.draft);
        if *line_hash != hex::encode(hash) {
            return Err(fail(seq, Problem::WrongHash));
        }
        if let Some(key) = public_key {
            let Some(sig) = &line.sig else {
                return Err(fail(seq, Problem::Unsigned));
            };
            if !signed_by(key, &hash, sig) {
                return Err(fail(seq, Problem::BadSignature));
            }
        }
        summary.entries = line.seq;
        summary.signed += u64::from(line.sig.is_some());
        summary.head = Some(hex::encode(hash));
        prev = hash;
    }
    Ok(summary)
}

/// Whether `sig` (standard base64, in its one canonical spelling) is `key`'s signature of
/// `hash`.
fn signed_by(key: &VerifyingKey, hash: &[u8; 32], sig: &str) -> bool {
    let Ok(bytes) = BASE64.decode(sig) else {
        return false;
    };
    let Ok(signature) = Signature::from_slice(&bytes) else {
        return false;
    };
    BASE64.encode(&bytes) == sig && key.verify_strict(hash, &signature).is_ok()
}
