//! The dispatcher: claims due deliveries, sends each to its target (a webhook, a Slack
//! channel, a mailbox), records every attempt.
//!
//! It never blocks an ask or a reply: messages are already in the store when it hears of
//! them, and it works from there. At most `concurrency` posts are in flight; a slow
//! receiver holds only its own slots (each post is bounded by the timeout), and a claim asks
//! only for as many deliveries as there are free slots, so nothing claimed waits behind a
//! slow batch while its lease runs out.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askbus_store::{AfterAttempt, Attempt, Delivery, Store, Write, now_ms};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::sign::WebhookSecret;
use crate::target::{OutboxNotifier, Target, Webhook};

/// The most deliveries one claim takes.
const CLAIM_BATCH: usize = 256;

/// How often the dispatcher looks for due deliveries when nothing woke it: retries come
/// due, and other instances of a shared store write messages it is not woken for.
const POLL: Duration = Duration::from_secs(1);

/// After a wake, how long between looks while the woken-for message is not durable yet (it
/// is claimable only once its write commits), and how many looks.
const SOON: (Duration, u32) = (Duration::from_millis(10), 20);

/// How long a wake waits before it claims: the change that woke it is being answered (its
/// HTTP 200, the agent's resumption) on the same cores, and goes first; messages that
/// arrive meanwhile are claimed together.
const GATHER: Duration = Duration::from_millis(2);

/// The most deliveries the outbox holds pending unless configured otherwise.
pub const DEFAULT_MAX_PENDING: u64 = 100_000;

/// How often the pending estimate is read from the store again.
const RECOUNT: Duration = Duration::from_secs(1);

/// How long a claim keeps a delivery from other dispatchers: longer than any attempt.
const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// How long to wait after the store failed before trying it again.
const STORE_RETRY: Duration = Duration::from_secs(1);

/// The most of a receiver's answer read (so the connection can be reused); the rest is
/// dropped with the connection.
const MAX_ANSWER: usize = 64 * 1024;

/// Makes the answer links that `*.asked` messages carry for a target's recipient.
pub trait AnswerLinks: Send + Sync + 'static {
    /// An absolute URL that answers the request `request_id` (`que_…`, `apr_…`) acting as
    /// `recipient`, expiring no later than the request (`expires_at_ms`), or `None` if the
    /// recipient may not answer it (no such credential, or one that decides nothing).
    fn answer_url(
        &self,
        recipient: &str,
        request_id: &str,
        expires_at_ms: Option<u64>,
    ) -> Option<String>;
}

/// When a failed delivery is tried again: exponential backoff with jitter, until the retry
/// window since the message was made has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait after the first failure (before jitter).
    pub first: Duration,
    /// The longest wait between two attempts (before jitter).
    pub longest: Duration,
    /// How long after its message was made a delivery is still tried: its last attempt is
    /// at the end of the window, then it is abandoned.
    pub window: Duration,
}

impl Default for RetryPolicy {
    /// 1 s, doubling to 10 minutes, for 24 hours.
    fn default() -> Self {
        Self {
            first: Duration::from_secs(1),
            longest: Duration::from_secs(600),
            window: Duration::from_secs(24 * 60 * 60),
        }
    }
}

impl RetryPolicy {
    /// What becomes of a delivery made at `created_at_ms` whose attempt number `attempts`
    /// (counted from 1) failed at `now_ms`: due again after the backoff, scaled by `jitter`
    /// (0 to 1) into its upper half, but never after the window's end; abandoned once the
    /// window is over.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use askbus_notify::RetryPolicy;
    /// use askbus_store::AfterAttempt;
    ///
    /// let policy = RetryPolicy::default();
    /// // The third failure waits 4 s, give or take half of it.
    /// let AfterAttempt::RetryAt { at_ms } = policy.after_failure(3, 0, 10_000, 0.0) else {
    ///     panic!("retried");
    /// };
    /// assert_eq!(at_ms, 12_000);
    /// // A day later, nothing more is tried.
    /// assert_eq!(policy.after_failure(90, 0, 86_400_000, 0.5), AfterAttempt::Abandon);
    /// ```
    pub fn after_failure(
        &self,
        attempts: u32,
        created_at_ms: u64,
        now_ms: u64,
        jitter: f64,
    ) -> AfterAttempt {
        let end = created_at_ms.saturating_add(millis(self.window));
        if now_ms >= end {
            return AfterAttempt::Abandon;
        }
        let doubling = 2_u32.saturating_pow(attempts.saturating_sub(1).min(31));
        let backoff = self.first.saturating_mul(doubling).min(self.longest);
        let wait = backoff.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
        AfterAttempt::RetryAt {
            at_ms: now_ms.saturating_add(millis(wait)).min(end),
        }
    }
}

/// What the dispatcher did, for metrics.
#[derive(Debug, Default)]
pub struct DeliveryStats {
    /// Deliveries the receiver took.
    delivered: AtomicU64,
    /// Attempts that failed (each retry counts).
    failed_attempts: AtomicU64,
    /// Deliveries given up on.
    abandoned: AtomicU64,
    /// Posts in flight now.
    in_flight: AtomicU64,
    /// Deliveries pending in the store, about: read from it often, counted up as messages
    /// are made in between.
    pending: AtomicU64,
    /// Deliveries not made because the outbox was full.
    dropped: AtomicU64,
    /// The targets whose latest attempt here failed: held to half the outbox, so a
    /// receiver that is down cannot crowd out the ones that take their messages.
    failing: Mutex<HashSet<String>>,
}

impl DeliveryStats {
    /// Deliveries the receiver took, since the start.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Attempts that failed (each retry counts), since the start.
    pub fn failed_attempts(&self) -> u64 {
        self.failed_attempts.load(Ordering::Relaxed)
    }

    /// Deliveries given up on, since the start.
    pub fn abandoned(&self) -> u64 {
        self.abandoned.load(Ordering::Relaxed)
    }

    /// Posts in flight now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Deliveries pending in the store, about (as last read, plus those made since).
    pub fn pending(&self) -> u64 {
        self.pending.load(Ordering::Relaxed)
    }

    /// Deliveries not made because the outbox was full, since the start.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Which of `targets` a new message goes to, with about `max_pending` deliveries
    /// allowed to wait: every target while there is room; a target whose latest attempt
    /// failed only while the outbox is under half full, so a receiver that is down (for a
    /// day, say) fills half of it at most and the others keep getting their messages. Those
    /// admitted count as pending; the rest as dropped.
    pub(crate) fn admit(&self, targets: &[String], max_pending: u64) -> Vec<String> {
        let failing = self.failing.lock().unwrap_or_else(PoisonError::into_inner);
        let admitted: Vec<String> = targets
            .iter()
            .filter(|target| {
                let limit = if failing.contains(*target) {
                    max_pending / 2
                } else {
                    max_pending
                };
                self.pending
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |pending| {
                        (pending < limit).then_some(pending + 1)
                    })
                    .is_ok()
            })
            .cloned()
            .collect();
        drop(failing);
        let dropped = (targets.len() - admitted.len()) as u64;
        self.dropped.fetch_add(dropped, Ordering::Relaxed);
        admitted
    }

    /// Notes how the latest attempt to `target` went.
    fn attempted(&self, target: &str, delivered: bool) {
        let mut failing = self.failing.lock().unwrap_or_else(PoisonError::into_inner);
        if delivered {
            failing.remove(target);
        } else if !failing.contains(target) {
            failing.insert(target.to_owned());
        }
    }
}

/// Delivers the outbox's messages to their targets; see the crate docs.
pub struct Dispatcher {
    /// Shared with the posting tasks.
    inner: Arc<Inner>,
    /// How many posts may be in flight at once.
    concurrency: usize,
    /// The most deliveries the outbox holds pending.
    max_pending: u64,
}

/// What every posting task needs.
struct Inner {
    store: Arc<dyn Store>,
    /// The targets by name.
    targets: HashMap<String, Target>,
    /// The names of the targets by the names an earlier version kept their deliveries
    /// under ([`Target::former_name`]); where two had one former name, the one configured
    /// last, as that version's own lookup had it.
    formerly: HashMap<String, String>,
    links: Option<Arc<dyn AnswerLinks>>,
    retry: RetryPolicy,
    /// The longest one post may take.
    timeout: Duration,
    client: reqwest::Client,
    stats: Arc<DeliveryStats>,
    /// Woken by the notifier on every message.
    wake: Arc<Notify>,
}

impl Dispatcher {
    /// A dispatcher delivering the messages of `store` to `webhooks`, signed with `secret`:
    /// 10 s per post, 64 posts at once, [`RetryPolicy::default`]. Start it with
    /// [`spawn`](Self::spawn) after giving the hub its [`notifier`](Self::notifier).
    pub fn new(store: Arc<dyn Store>, webhooks: Vec<Webhook>, secret: WebhookSecret) -> Self {
        let targets = webhooks
            .into_iter()
            .map(|webhook| Target::Webhook {
                webhook,
                secret: secret.clone(),
            })
            .collect();
        Self::for_targets(store, targets)
    }

    /// A dispatcher delivering the messages of `store` to `targets` (webhooks, Slack
    /// channels, mailboxes; one retry policy for all), as [`new`](Self::new) does.
    pub fn for_targets(store: Arc<dyn Store>, targets: Vec<Target>) -> Self {
        let formerly = targets
            .iter()
            .filter_map(|target| Some((target.former_name()?, target.name())))
            .collect();
        Self {
            inner: Arc::new(Inner {
                store,
                targets: targets
                    .into_iter()
                    .map(|target| (target.name(), target))
                    .collect(),
                formerly,
                links: None,
                retry: RetryPolicy::default(),
                timeout: Duration::from_secs(10),
                client: client(),
                stats: Arc::default(),
                wake: Arc::default(),
            }),
            concurrency: 64,
            max_pending: DEFAULT_MAX_PENDING,
        }
    }

    /// Makes answer links for targets that name a recipient.
    #[must_use]
    pub fn with_links(mut self, links: Arc<dyn AnswerLinks>) -> Self {
        self.inner_mut().links = Some(links);
        self
    }

    /// Retries failed deliveries by `policy`.
    #[must_use]
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.inner_mut().retry = policy;
        self
    }

    /// Gives up on one post after `timeout` (and tries again later).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.inner_mut().timeout = timeout;
        self
    }

    /// Drops new messages while about `max_pending` deliveries are pending (default
    /// 100,000): see [`OutboxNotifier`].
    #[must_use]
    pub fn with_max_pending(mut self, max_pending: u64) -> Self {
        self.max_pending = max_pending;
        self
    }

    /// Keeps at most `concurrency` posts in flight (at least 1).
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// The notifier to give the hub
    /// ([`RequestHub::with_notifier`](askbus_question::RequestHub::with_notifier)): it
    /// addresses every request event to this dispatcher's targets and wakes it.
    pub fn notifier(&self) -> Arc<OutboxNotifier> {
        let mut names: Vec<String> = self.inner.targets.keys().cloned().collect();
        names.sort();
        Arc::new(OutboxNotifier::new(
            names,
            Arc::clone(&self.inner.wake),
            Arc::clone(&self.inner.stats),
            self.max_pending,
        ))
    }

    /// Its counters, for metrics.
    pub fn stats(&self) -> Arc<DeliveryStats> {
        Arc::clone(&self.inner.stats)
    }

    /// Delivers from now on, in a task of the current runtime, until `shutdown` is
    /// cancelled (posts in flight then finish on their own, bounded by the timeout).
    pub fn spawn(self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            tokio::select! {
                () = shutdown.cancelled() => {}
                () = self.run() => {}
            }
        })
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::get_mut(&mut self.inner)
            .unwrap_or_else(|| unreachable!("configured before it is spawned or cloned"))
    }

    async fn run(self) {
        let slots = Arc::new(Semaphore::new(self.concurrency));
        let lease = millis(self.inner.timeout + LEASE_MARGIN);
        let mut soon = 0;
        let mut counted = tokio::time::Instant::now();
        self.inner.recount().await;
        loop {
            if counted.elapsed() >= RECOUNT {
                self.inner.recount().await;
                counted = tokio::time::Instant::now();
            }
            let Ok(first) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let free = slots.available_permits() + 1;
            match self
                .inner
                .store
                .claim_deliveries(now_ms(), lease, free.min(CLAIM_BATCH))
                .await
            {
                Err(error) => {
                    drop(first);
                    tracing::warn!("webhooks: could not claim deliveries: {error}");
                    tokio::time::sleep(STORE_RETRY).await;
                }
                Ok(claimed) if claimed.is_empty() => {
                    drop(first);
                    let wait = if soon > 0 {
                        soon -= 1;
                        SOON.0
                    } else {
                        POLL
                    };
                    tokio::select! {
                        () = self.inner.wake.notified() => {
                            soon = SOON.1;
                            tokio::time::sleep(GATHER).await;
                        }
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                Ok(claimed) => {
                    let mut first = Some(first);
                    for delivery in claimed {
                        let slot = match first.take() {
                            Some(slot) => slot,
                            None => match Arc::clone(&slots).acquire_owned().await {
                                Ok(slot) => slot,
                                Err(_) => return,
                            },
                        };
                        tokio::spawn(Arc::clone(&self.inner).deliver(delivery, slot));
                    }
                }
            }
        }
    }
}

impl Inner {
    /// Reads how many deliveries are pending (every instance's, over a shared store) into
    /// the estimate the notifier bounds the outbox by.
    async fn recount(&self) {
        match self.store.pending_deliveries().await {
            Ok(pending) => self.stats.pending.store(pending, Ordering::Relaxed),
            Err(error) => tracing::warn!("webhooks: cannot count pending deliveries: {error}"),
        }
    }

    /// Makes one attempt at `delivery` and records it, holding `_slot` meanwhile.
    async fn deliver(self: Arc<Self>, delivery: Delivery, _slot: OwnedSemaphorePermit) {
        self.stats.in_flight.fetch_add(1, Ordering::Relaxed);
        let attempt = self.attempt(&delivery).await;
        self.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
        let counter = match attempt.then {
            AfterAttempt::Delivered => &self.stats.delivered,
            AfterAttempt::RetryAt { .. } => &self.stats.failed_attempts,
            AfterAttempt::Abandon => &self.stats.abandoned,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        // A delivery queued under a target's former name is counted and logged under its
        // name now, which shows no secret.
        let target = self.current_name(&delivery.target);
        self.stats
            .attempted(target, attempt.then == AfterAttempt::Delivered);
        if let Some(error) = &attempt.error {
            // A failed attempt that will be tried again is routine; one given up on means a
            // receiver never heard of a request: an operator must see it.
            if attempt.then == AfterAttempt::Abandon {
                tracing::warn!(
                    "notify: {} to {} failed (attempt {}), and is given up: {error}",
                    delivery.message_id,
                    target,
                    delivery.attempts + 1
                );
            } else {
                tracing::info!(
                    "notify: {} to {} failed (attempt {}): {error}",
                    delivery.message_id,
                    target,
                    delivery.attempts + 1
                );
            }
        }
        let recorded = self.store.write(Write::Attempted {
            message_id: delivery.message_id,
            target: delivery.target,
            attempt,
        });
        if let Err(error) = recorded.await {
            // Its lease runs out and it is sent again: at least once, never lost.
            tracing::warn!("webhooks: could not record an attempt: {error}");
        }
    }

    /// Sends `delivery` to its target and says how it went. A target this instance does
    /// not have fails like an unreachable one: another instance of a shared store may have
    /// it (or this one will again, after a restart with it), so it is tried again by the
    /// retry policy, never dropped at once.
    async fn attempt(&self, delivery: &Delivery) -> Attempt {
        let sent = match self.target_named(&delivery.target) {
            Some(target) => self.send(target, delivery).await,
            None => Err(Failure::retry(
                None,
                format!(
                    "no target named {:?} is configured on this instance",
                    delivery.target
                ),
            )),
        };
        let at_ms = now_ms();
        match sent {
            Ok(status) => Attempt {
                at_ms,
                status,
                error: None,
                then: AfterAttempt::Delivered,
            },
            Err(failure) => Attempt {
                at_ms,
                status: failure.status,
                then: if failure.give_up {
                    AfterAttempt::Abandon
                } else {
                    self.retry.after_failure(
                        delivery.attempts + 1,
                        delivery.created_at_ms,
                        at_ms,
                        jitter(),
                    )
                },
                error: Some(failure.error),
            },
        }
    }

    /// The target named `name`, by its name or its former one.
    fn target_named(&self, name: &str) -> Option<&Target> {
        self.targets.get(self.current_name(name))
    }

    /// The name now of the target a delivery was queued for under `name`: `name` itself,
    /// unless it is the name an earlier version kept a target's deliveries under (a
    /// delivery queued before an upgrade).
    fn current_name<'a>(&'a self, name: &'a str) -> &'a str {
        if self.targets.contains_key(name) {
            return name;
        }
        self.formerly.get(name).map_or(name, String::as_str)
    }

    /// Sends `delivery` to `target`, with the answer link of the target's recipient if it
    /// has one.
    async fn send(&self, target: &Target, delivery: &Delivery) -> Result<Option<u16>, Failure> {
        let link = self.link_for(target, &delivery.payload);
        match target {
            Target::Webhook { webhook, secret } => {
                let body = match &link {
                    Some(link) => with_answer_url(&delivery.payload, link),
                    None => delivery.payload.clone(),
                };
                self.post(webhook, secret, delivery, body).await
            }
            Target::Slack(slack) => {
                let message = slack.message(&delivery.payload, link.as_deref());
                slack.post(&self.client, &message, self.timeout).await
            }
            Target::Email(email) => {
                let message =
                    email.message(&delivery.message_id, &delivery.payload, link.as_deref())?;
                email.send(message).await
            }
        }
    }

    /// The answer link of `target`'s recipient for the request an `*.asked` `payload`
    /// asks, if the target has a recipient who may answer it.
    fn link_for(&self, target: &Target, payload: &str) -> Option<String> {
        let (recipient, links) = (target.recipient()?, self.links.as_ref()?);
        let told = crate::render::Told::parse(payload).filter(|told| told.is_asked())?;
        links.answer_url(recipient, told.request_id(), told.expires_at())
    }

    /// Posts `body` (`delivery`'s payload, as `webhook` gets it) to `webhook`, signed with
    /// `secret`.
    async fn post(
        &self,
        webhook: &Webhook,
        secret: &WebhookSecret,
        delivery: &Delivery,
        body: String,
    ) -> Result<Option<u16>, Failure> {
        let timestamp = now_ms() / 1000;
        let signature = secret.sign(&delivery.message_id, timestamp, &body);
        let sent = self
            .client
            .post(webhook.url.clone())
            .header("webhook-id", &delivery.message_id)
            .header("webhook-timestamp", timestamp)
            .header("webhook-signature", signature)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::USER_AGENT, "askbus-webhooks")
            .timeout(self.timeout)
            .body(body)
            .send()
            .await;
        let (status, error) = match sent {
            Ok(mut response) => {
                let status = response.status();
                let mut read = 0;
                while read < MAX_ANSWER {
                    match response.chunk().await {
                        Ok(Some(chunk)) => read += chunk.len(),
                        Ok(None) | Err(_) => break,
                    }
                }
                let error =
                    (!status.is_success()).then(|| format!("the receiver answered {status}"));
                (Some(status.as_u16()), error)
            }
            Err(error) if error.is_timeout() => {
                (None, Some(format!("no answer within {:?}", self.timeout)))
            }
            Err(error) => (None, Some(describe(error))),
        };
        match (error, status) {
            (None, _) => Ok(status),
            // Standard Webhooks: 410 Gone asks the sender to stop.
            (Some(error), Some(410)) => Err(Failure::give_up(status, error)),
            (Some(error), _) => Err(Failure::retry(status, error)),
        }
    }
}

/// `payload` (an `*.asked` message) with `link` added to its data as `answer_url`.
fn with_answer_url(payload: &str, link: &str) -> String {
    let Ok(mut message) = serde_json::from_str::<serde_json::Value>(payload) else {
        return payload.to_owned();
    };
    message["data"]["answer_url"] = serde_json::Value::String(link.to_owned());
    message.to_string()
}

/// Why one attempt failed, and whether another could do better.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The receiver's HTTP status, if it answered.
    pub(crate) status: Option<u16>,
    /// What went wrong, in words (never a secret).
    pub(crate) error: String,
    /// Whether no retry can fix it: the delivery is abandoned at once.
    pub(crate) give_up: bool,
}

impl Failure {
    /// A failure that another attempt, later, may not meet.
    pub(crate) fn retry(status: Option<u16>, error: impl Into<String>) -> Self {
        Self {
            status,
            error: error.into(),
            give_up: false,
        }
    }

    /// A failure every attempt would meet.
    pub(crate) fn give_up(status: Option<u16>, error: impl Into<String>) -> Self {
        Self {
            status,
            error: error.into(),
            give_up: true,
        }
    }
}

/// A connection error in a few words, with its cause (reqwest's own display says only
/// "error sending request"), without the URL: a receiver's URL may hold its secret (in its
/// query or path), and this text is logged and listed in `/webhook/deliveries`.
pub(crate) fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The HTTP client of every channel. It follows no redirect: a receiver answering `3xx`
/// would otherwise have the server post its signed message (with a recipient's answer
/// link) wherever it points, inside the network too; a `3xx` is a failed attempt.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        // Fails only if the TLS backend cannot start, when no channel could work at all.
        .expect("the HTTP client of the notification channels builds")
}

/// A number from 0 to 1 that spreads retries apart.
fn jitter() -> f64 {
    f64::from(getrandom::u32().unwrap_or(u32::MAX / 2)) / f64::from(u32::MAX)
}

/// A duration in whole milliseconds.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn backs_off_exponentially_within_jitter_and_the_window() {
        let policy = RetryPolicy::default();
        let wait = |attempts, jitter| match policy.after_failure(attempts, 0, 1_000, jitter) {
            AfterAttempt::RetryAt { at_ms } => at_ms - 1_000,
            other => panic!("{other:?}"),
        };
        assert_eq!((wait(1, 0.0), wait(1, 1.0)), (500, 1_000));
        assert_eq!((wait(2, 0.0), wait(2, 1.0)), (1_000, 2_000));
        // Capped at 10 minutes, however many failures.
        assert_eq!(wait(40, 1.0), 600_000);
        // Never past the window's end: the last attempt is at its end.
        let end = 86_400_000;
        assert_eq!(
            policy.after_failure(30, 0, end - 10, 1.0),
            AfterAttempt::RetryAt { at_ms: end }
        );
        assert_eq!(policy.after_failure(31, 0, end, 0.0), AfterAttempt::Abandon);
    }
}
