//! The hash chain: how an entry is hashed, sealed and written as a line.

use askbus_store::AuditRecord;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signer, SigningKey};
use sha2::{Digest, Sha256};

/// The `prev` of the first entry: 32 zero bytes.
pub const GENESIS: [u8; 32] = [0; 32];

/// The hash of entry `seq` whose draft is `draft`, after the entry whose hash is `prev`:
/// `sha256(prev || seq as 8 bytes big-endian || draft's bytes)`.
///
/// The draft is hashed byte for byte as stored, never re-serialised, so anyone holding the
/// stored text recomputes the same hash.
pub fn entry_hash(prev: &[u8; 32], seq: u64, draft: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(prev);
    hasher.update(seq.to_be_bytes());
    hasher.update(draft.as_bytes());
    hasher.finalize().into()
}

/// The seal of an entry: the hash it follows, its own hash, and with a signing key the
/// Ed25519 signature of its hash. Kept in the store as JSON (`{"prev":hex,"hash":hex,
/// "sig":base64}`, `sig` absent when unsigned).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seal {
    /// The previous entry's hash, lowercase hex ([`GENESIS`] for the first).
    pub prev: String,
    /// This entry's [`entry_hash`], lowercase hex.
    pub hash: String,
    /// The Ed25519 signature of the 32 hash bytes, standard base64; `None` when unsigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// One entry as `askbus audit export` writes it (one JSON object per line) and `GET /audit`
/// answers it: its number, its seal's fields and its draft, the exact text that was
/// hashed (a JSON document in a JSON string).
///
/// `prev` and `hash` are `null` for an entry not sealed yet (only `GET /audit` shows
/// such; an export seals first).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AuditLine {
    /// The entry's number, from 1, with no gap.
    pub seq: u64,
    /// The previous entry's hash (lowercase hex); `null` while unsealed.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub prev: Option<String>,
    /// This entry's hash (lowercase hex); `null` while unsealed.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub hash: Option<String>,
    /// Ed25519 signature of the hash bytes (standard base64); absent when unsigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
    /// The entry: an `AuditDraft`'s JSON, as stored and hashed.
    pub draft: String,
}

impl Seal {
    /// The seal of entry `seq` with `draft`, after the entry whose hash is `prev`, signed
    /// with `key` if given; and its hash. Ed25519 signatures are deterministic, so every
    /// sealer with the same key makes the same seal.
    pub fn make(
        prev: &[u8; 32],
        seq: u64,
        draft: &str,
        key: Option<&SigningKey>,
    ) -> (Self, [u8; 32]) {
        let hash = entry_hash(prev, seq, draft);
        let seal = Self {
            prev: hex::encode(prev),
            hash: hex::encode(hash),
            sig: key.map(|key| BASE64.encode(key.sign(&hash).to_bytes())),
        };
        (seal, hash)
    }

    /// The seal read back from its stored JSON; `None` if it is not a seal.
    pub fn parse(json: &str) -> Option<Self> {
        serde_json::from_str(json).ok()
    }

    /// The seal's JSON, as the store keeps it.
    pub fn to_json(&self) -> String {
        // Strings only: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl AuditLine {
    /// The line of a stored entry: sealed if its seal reads back, else with `prev` and
    /// `hash` `null`.
    pub fn of(record: &AuditRecord) -> Self {
        let seal = record.seal.as_deref().and_then(Seal::parse);
        Self {
            seq: record.seq,
            prev: seal.as_ref().map(|seal| seal.prev.clone()),
            hash: seal.as_ref().map(|seal| seal.hash.clone()),
            sig: seal.and_then(|seal| seal.sig),
            draft: record.draft.clone(),
        }
    }

    /// The line's JSON, without a line break: exactly what `verify` expects on a line.
    pub fn to_json(&self) -> String {
        // Numbers and strings only: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}
