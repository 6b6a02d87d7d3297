//! Where messages go, and the notifier that addresses them.

use std::fmt;
use std::sync::Arc;

use askbus_question::{Notice, Notifier};
use askbus_store::{OutboxMessage, now_ms};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use crate::dispatch::DeliveryStats;
use crate::email::Email;
use crate::sign::WebhookSecret;
use crate::slack::Slack;

/// One place the dispatcher delivers every request event to: a webhook, a Slack channel
/// or a mailbox. Each is kept under its [`name`](Self::name), which is how deliveries
/// queued in the store find their target again after a restart.
#[derive(Debug, Clone)]
pub enum Target {
    /// A webhook endpoint, and the secret its deliveries are signed with.
    Webhook {
        /// Where.
        webhook: Webhook,
        /// What signs its deliveries.
        secret: WebhookSecret,
    },
    /// A Slack channel.
    Slack(Slack),
    /// One recipient's mailbox.
    Email(Email),
}

impl Target {
    /// The name its deliveries are kept under: [`Webhook::name`], `slack:CHANNEL`, or
    /// `email:ADDRESS`. Stable across restarts; never holds a secret.
    pub fn name(&self) -> String {
        match self {
            Self::Webhook { webhook, .. } => webhook.name(),
            Self::Slack(slack) => slack.name(),
            Self::Email(email) => email.name(),
        }
    }

    /// The kind of channel, for logs and metrics: `webhook`, `slack` or `email`.
    pub fn channel(&self) -> &'static str {
        match self {
            Self::Webhook { .. } => "webhook",
            Self::Slack(_) => "slack",
            Self::Email(_) => "email",
        }
    }

    /// The name its deliveries were kept under by an earlier version, if it had another
    /// ([`Webhook`]s showed their path then).
    pub(crate) fn former_name(&self) -> Option<String> {
        match self {
            Self::Webhook { webhook, .. } => webhook.former_name(),
            Self::Slack(_) | Self::Email(_) => None,
        }
    }

    /// Whose answer links its `*.asked` messages carry, if anyone's.
    pub fn recipient(&self) -> Option<&str> {
        match self {
            Self::Webhook { webhook, .. } => webhook.recipient.as_deref(),
            Self::Slack(slack) => slack.link_as.as_deref(),
            Self::Email(email) => email.recipient.as_deref(),
        }
    }
}

/// A webhook endpoint: where every request event is posted. Its `Debug` shows its
/// [`name`](Webhook::name), never its URL, which may hold the receiver's secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    /// The URL posted to.
    pub url: reqwest::Url,
    /// Whose answer links its `*.asked` messages carry, if anyone's.
    pub recipient: Option<String>,
}

/// Why a `--webhook` value is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadWebhook {
    /// Not an `http://` or `https://` URL.
    #[error("{0:?} is not an http:// or https:// URL (write `URL` or `NAME=URL`)")]
    NotHttp(String),
    /// The recipient's name is empty.
    #[error("{0:?} names no recipient before `=` (write `URL` or `NAME=URL`)")]
    NoRecipient(String),
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// A webhook written `URL`, or `NAME=URL` for one whose `*.asked` messages carry answer
    /// links acting as `NAME`.
    ///
    /// # Errors
    ///
    /// [`BadWebhook`] if the URL is not http(s), or the name is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use askbus_notify::Webhook;
    ///
    /// let plain = Webhook::parse("http://127.0.0.1:9000/hook?team=ops").unwrap();
    /// assert_eq!(plain.recipient, None);
    /// let alice = Webhook::parse("alice=https://hooks.example.com/alice").unwrap();
    /// assert_eq!(alice.recipient.as_deref(), Some("alice"));
    /// assert_eq!(alice.url.as_str(), "https://hooks.example.com/alice");
    /// assert!(Webhook::parse("ftp://example.com").is_err());
    /// // Its name (logged, listed) holds no path, query, user or password: any may be
    /// // the receiver's secret, as a Slack or Discord webhook's path is.
    /// let slack = Webhook::parse("https://hooks.slack.com/services/T0/B0/s3cr3t").unwrap();
    /// assert!(slack.name().starts_with("https://hooks.slack.com/..."));
    /// assert!(!slack.name().contains("s3cr3t"));
    /// let login = Webhook::parse("https://bot:pw@hooks.example.com/in?key=1").unwrap();
    /// assert!(!login.name().contains("pw") && !login.name().contains("key"));
    /// // Its fingerprint tells apart URLs that differ anywhere.
    /// let other = Webhook::parse("https://bot:pw@hooks.example.com/in?key=2").unwrap();
    /// assert_ne!(login.name(), other.name());
    /// // A URL that is its origin alone is shown whole.
    /// let bare = Webhook::parse("bob=https://hooks.example.com").unwrap();
    /// assert_eq!(bare.name(), "bob=https://hooks.example.com/");
    /// ```
    pub fn parse(written: &str) -> Result<Self, BadWebhook> {
        let written = written.trim();
        // A `NAME=` prefix comes before the scheme; an `=` after it is the URL's own.
        let (recipient, url) = match written.split_once('=') {
            Some((name, url)) if !name.contains("://") => (Some(name.trim()), url.trim()),
            _ => (None, written),
        };
        if recipient.is_some_and(str::is_empty) {
            return Err(BadWebhook::NoRecipient(written.to_owned()));
        }
        let url = reqwest::Url::parse(url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
            .ok_or_else(|| BadWebhook::NotHttp(url.to_owned()))?;
        Ok(Self {
            url,
            recipient: recipient.map(str::to_owned),
        })
    }

    /// The name its deliveries are kept under, and the one logs and
    /// `/webhook/deliveries` show: the recipient and the URL's origin, then, for a URL
    /// with more than its origin (a path other than `/`, a query, a user or a password),
    /// `/...` and a fingerprint of the URL without its fragment in place of the rest. The
    /// path, the query, the user and the password may each hold the receiver's secret (a
    /// Slack or Discord webhook's path does), so none is shown. Stable across restarts,
    /// so deliveries queued before one find their target after it; different for URLs
    /// that differ anywhere but in their fragment.
    pub fn name(&self) -> String {
        let origin = self.url.origin().ascii_serialization();
        let bare = self.url.path() == "/"
            && self.url.query().is_none()
            && self.url.username().is_empty()
            && self.url.password().is_none();
        let shown = if bare {
            format!("{origin}/")
        } else {
            let mut url = self.url.clone();
            url.set_fragment(None);
            let digest = Sha256::digest(url.as_str().as_bytes());
            let fingerprint: String = digest[..4]
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            format!("{origin}/...{fingerprint}")
        };
        match &self.recipient {
            Some(recipient) => format!("{recipient}={shown}"),
            None => shown,
        }
    }

    /// The name its deliveries were kept under before [`name`](Self::name) hid the path
    /// (the URL without its query, fragment, user and password), when it differs: a
    /// delivery queued under it before an upgrade still finds this webhook.
    pub(crate) fn former_name(&self) -> Option<String> {
        let mut url = self.url.clone();
        url.set_query(None);
        url.set_fragment(None);
        let _ = url.set_password(None);
        let _ = url.set_username("");
        let former = match &self.recipient {
            Some(recipient) => format!("{recipient}={url}"),
            None => url.to_string(),
        };
        (former != self.name()).then_some(former)
    }
}

/// The [`Notifier`] that addresses every request event to every target, as a Standard
/// Webhooks payload, and wakes the [`Dispatcher`](crate::Dispatcher) that sends it.
///
/// The outbox is bounded: once about `max_pending` deliveries wait (receivers down, or an
/// agent making requests faster than they take them), new messages are dropped, counted
/// ([`DeliveryStats::dropped`]) and logged, rather than growing the store without end.
#[derive(Debug)]
pub struct OutboxNotifier {
    /// The targets' names.
    targets: Vec<String>,
    /// Wakes the dispatcher.
    wake: Arc<Notify>,
    /// The dispatcher's figures: the pending estimate read here, the drops counted here.
    stats: Arc<DeliveryStats>,
    /// The most deliveries the outbox holds pending.
    max_pending: u64,
}

impl OutboxNotifier {
    /// A notifier for the targets named `targets`, waking `wake` on every message, and
    /// dropping messages while `stats` estimates `max_pending` deliveries pending.
    pub(crate) fn new(
        targets: Vec<String>,
        wake: Arc<Notify>,
        stats: Arc<DeliveryStats>,
        max_pending: u64,
    ) -> Self {
        Self {
            targets,
            wake,
            stats,
            max_pending,
        }
    }
}

impl Notifier for OutboxNotifier {
    fn message(&self, notice: Notice) -> Option<OutboxMessage> {
        if self.targets.is_empty() {
            return None;
        }
        let targets = self.stats.admit(&self.targets, self.max_pending);
        if targets.len() < self.targets.len() {
            tracing::warn!(
                "notify: {} not sent to {} of {} targets: {} deliveries are pending already \
                 (--webhook-max-pending; a failing target may hold half)",
                notice.event_type,
                self.targets.len() - targets.len(),
                self.targets.len(),
                self.stats.pending()
            );
        }
        if targets.is_empty() {
            return None;
        }
        let created_at_ms = now_ms();
        let timestamp = i64::try_from(created_at_ms)
            .ok()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_default();
        let payload = serde_json::json!({
            "type": notice.event_type,
            "timestamp": timestamp,
            "data": notice.properties,
        });
        self.wake.notify_one();
        Some(OutboxMessage {
            id: format!("msg_{}", ulid::Ulid::generate()),
            targets,
            payload: payload.to_string(),
            created_at_ms,
        })
    }
}
