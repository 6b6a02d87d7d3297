//! Where a Redis store is: the `redis://` URL and the key prefix, read from one string.

use super::RedisStore;
use crate::StoreError;

/// Where a [`RedisStore`] keeps its keys: a Redis server (`redis://[USER:PASSWORD@]HOST:PORT[/DB]`;
/// this build speaks no TLS) and a key prefix, written together as one URL with an optional
/// `prefix` query parameter: `redis://127.0.0.1:6379/0?prefix=team-a`. The prefix defaults
/// to [`RedisStore::DEFAULT_PREFIX`]; servers that share requests use the same one, and
/// deployments that must not see each other's requests use different ones.
///
/// Shown (`Display`, `Debug`) without the URL's credentials, so it can be logged.
///
/// # Examples
///
/// ```
/// use askbus_store::RedisLocation;
///
/// let location: RedisLocation = "redis://:secret@10.0.0.5:6379/2?prefix=team-a".parse().unwrap();
/// assert_eq!(location.prefix(), "team-a");
/// assert_eq!(location.to_string(), "redis://***@10.0.0.5:6379/2 (keys under team-a:)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RedisLocation {
    /// The URL without the prefix parameter, as the Redis client takes it.
    pub(super) url: String,
    /// Prepended, with a `:`, to every key.
    pub(super) prefix: String,
}

impl RedisLocation {
    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL with its credentials (`user:password@`) hidden.
    fn redacted(&self) -> String {
        crate::without_credentials(&self.url)
    }
}

impl std::str::FromStr for RedisLocation {
    type Err = StoreError;

    /// Reads `redis://…`, taking the `prefix` query parameter off.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnsupportedUrl`] for another scheme (`rediss://` included: this build
    /// has no TLS) or an empty prefix; [`StoreError::Redis`] for a URL the Redis client
    /// cannot read.
    fn from_str(text: &str) -> Result<Self, StoreError> {
        let text = text.trim();
        if text.starts_with("rediss://") {
            return Err(StoreError::UnsupportedUrl(format!(
                "{} (TLS is not built in: reach Redis with redis:// on a private network or \
                 through a TLS tunnel)",
                crate::without_credentials(text)
            )));
        }
        if !text.starts_with("redis://") {
            return Err(StoreError::UnsupportedUrl(crate::without_credentials(text)));
        }
        let (base, query) = text.split_once('?').unwrap_or((text, ""));
        let mut prefix = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair.strip_prefix("prefix=") {
                Some(value) => prefix = Some(value.to_owned()),
                None => kept.push(pair),
            }
        }
        let prefix = prefix.unwrap_or_else(|| RedisStore::DEFAULT_PREFIX.to_owned());
        if prefix.is_empty() || prefix.contains(char::is_whitespace) {
            return Err(StoreError::UnsupportedUrl(format!(
                "{} (the prefix must be a non-empty word)",
                crate::without_credentials(text)
            )));
        }
        let url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        // Parsed, not connected: a URL the client cannot use is refused up front.
        redis::Client::open(url.as_str())?;
        Ok(Self { url, prefix })
    }
}

impl std::fmt::Display for RedisLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (keys under {}:)", self.redacted(), self.prefix)
    }
}

impl std::fmt::Debug for RedisLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLocation")
            .field("url", &self.redacted())
            .field("prefix", &self.prefix)
            .finish()
    }
}
