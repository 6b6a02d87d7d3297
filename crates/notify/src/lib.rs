//! Reaching the human where they are: every request event delivered to webhooks, durably.
//!
//! # How a message travels
//!
//! 1. The hub's [`Notifier`] ([`OutboxNotifier`]) turns each request event (`question.asked`,
//!    every outcome, each vote) into an outbox message: a Standard Webhooks payload
//!    `{"type", "timestamp", "data"}` whose `data` is the event exactly as the event stream
//!    shows it, under a `msg_` id, for every configured target. The registry writes it in
//!    the same atomic step as the change it tells of (see `askbus_question`'s `notify`
//!    module and `askbus_store`'s `outbox` module), before anyone is told "done".
//! 2. A [`Dispatcher`] claims due deliveries from the store for a lease, posts each to its
//!    target signed per Standard Webhooks ([`WebhookSecret`]), a bounded number at once,
//!    and records every attempt: delivered (any 2xx), or failed and due again after an
//!    exponential backoff with jitter ([`RetryPolicy`]), until the retry window (24 hours
//!    by default) has passed. Asks and replies never wait for it.
//! 3. A process that dies mid-delivery leaves its claims to expire (SQLite forgets them on
//!    the next start); the delivery is sent again, under the same `webhook-id`, which is
//!    what receivers deduplicate on. Delivery is therefore at least once.
//!
//! # Answer links
//!
//! A target may be a *recipient*'s (`alice=https://…`): the `*.asked` messages it gets then
//! carry `data.answer_url`, a single-use link that answers as that recipient (made by the
//! [`AnswerLinks`] the server provides: the HTTP crate's signed links, so every rule of who
//! may answer applies). Each recipient's link goes only to its own targets: a receiver never
//! holds a link to act as someone else.

mod dispatch;
mod sign;
mod target;

pub use dispatch::{AnswerLinks, DEFAULT_MAX_PENDING, DeliveryStats, Dispatcher, RetryPolicy};
pub use sign::{BadSecret, WebhookSecret};
pub use target::{BadWebhook, OutboxNotifier, Webhook};
