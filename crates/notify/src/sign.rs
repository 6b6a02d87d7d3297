//! Standard Webhooks signatures: how a receiver knows a message came from this server and
//! was not changed or replayed.
//!
//! Per the Standard Webhooks specification (<https://www.standardwebhooks.com/>), every
//! delivery carries `webhook-id` (the message id, the same on every retry), `webhook-timestamp`
//! (seconds since the Unix epoch, when this attempt was signed) and `webhook-signature`:
//! `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under the secret. The
//! secret is written `whsec_` and the base64 of its bytes, as the specification's libraries
//! (`standardwebhooks` for Python and JavaScript, Svix's) take it, so a receiver verifies
//! with theirs and none of ours.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The prefix of a secret's written form.
const PREFIX: &str = "whsec_";

/// The fewest secret bytes accepted (the specification asks for 24 to 64).
const MIN_BYTES: usize = 24;

/// The most secret bytes accepted.
const MAX_BYTES: usize = 64;

/// A webhook signing secret.
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

/// Why a written secret is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSecret {
    /// Not `whsec_` and base64.
    #[error(
        "a webhook secret is `whsec_` followed by base64 (for example `whsec_$(openssl rand -base64 32)`)"
    )]
    NotBase64,
    /// Too short or too long.
    #[error("a webhook secret holds {MIN_BYTES} to {MAX_BYTES} bytes; this one holds {0}")]
    Length(usize),
}

impl WebhookSecret {
    /// The secret written as `whsec_<base64>`.
    ///
    /// # Errors
    ///
    /// [`BadSecret`] if it is not base64 after the prefix, or not 24 to 64 bytes long.
    pub fn parse(written: &str) -> Result<Self, BadSecret> {
        let encoded = written.trim();
        let encoded = encoded.strip_prefix(PREFIX).ok_or(BadSecret::NotBase64)?;
        let bytes = STANDARD.decode(encoded).map_err(|_| BadSecret::NotBase64)?;
        if !(MIN_BYTES..=MAX_BYTES).contains(&bytes.len()) {
            return Err(BadSecret::Length(bytes.len()));
        }
        Ok(Self(bytes))
    }

    /// The signature header's value for a message: `v1,<base64 HMAC-SHA256>` of
    /// `{id}.{timestamp}.{body}`.
    pub fn sign(&self, id: &str, timestamp: u64, body: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body.as_bytes());
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The example of the Standard Webhooks specification's reference libraries.
    #[test]
    fn signs_as_the_specification_s_example() {
        let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = secret.sign(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn refuses_secrets_that_are_not_whsec_base64_of_24_to_64_bytes() {
        assert_eq!(
            WebhookSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap_err(),
            BadSecret::NotBase64
        );
        assert_eq!(
            WebhookSecret::parse("whsec_not base64!").unwrap_err(),
            BadSecret::NotBase64
        );
        assert_eq!(
            WebhookSecret::parse("whsec_c2hvcnQ=").unwrap_err(),
            BadSecret::Length(5)
        );
    }
}
