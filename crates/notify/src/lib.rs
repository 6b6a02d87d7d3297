//! Reaching the human where they are: every request event delivered to webhooks, a Slack
//! channel or a mailbox, durably.
//!
//! # How a message travels
//!
//! 1. The hub's [`Notifier`](askbus_question::Notifier) ([`OutboxNotifier`]) turns each request event (`question.asked`,
//!    every outcome, each vote) into an outbox message: a Standard Webhooks payload
//!    `{"type", "timestamp", "data"}` whose `data` is the event exactly as the event stream
//!    shows it, under a `msg_` id, for every configured target. The registry writes it in
//!    the same atomic step as the change it tells of (see `askbus_question`'s `notify`
//!    module and `askbus_store`'s `outbox` module), before anyone is told "done".
//! 2. A [`Dispatcher`] claims due deliveries from the store for a lease, sends each to its
//!    [`Target`], a bounded number at once, and records every attempt: delivered, or
//!    failed and due again after an exponential backoff with jitter ([`RetryPolicy`]),
//!    until the retry window (24 hours by default) has passed, or abandoned at once when
//!    the target refused it for good. Asks and replies never wait for it. Each kind of
//!    target reads the same payload:
//!    - a [`Webhook`] gets it as it is, signed per Standard Webhooks ([`WebhookSecret`]);
//!      any 2xx delivers it, 410 Gone abandons it;
//!    - a [`Slack`] channel gets it told in Block Kit through `chat.postMessage`, asked
//!      requests with buttons that answer them (see [`SlackAction`]); Slack's
//!      `{"ok": false}` is a failure like any other, a few errors no retry can fix abandon;
//!    - an [`Email`] recipient gets it as an email through an SMTP relay; 4xx retries,
//!      5xx abandons.
//! 3. A process that dies mid-delivery leaves its claims to expire (SQLite forgets them on
//!    the next start); the delivery is sent again, under the same `webhook-id`, which is
//!    what receivers deduplicate on. Delivery is therefore at least once.
//!
//! # Answer links
//!
//! A target may be a *recipient*'s (`alice=https://…`, `alice=alice@example.com`, a Slack
//! channel's `link_as`): the `*.asked` messages it gets then carry a single-use link that
//! answers as that recipient (a webhook's in `data.answer_url`, an email's in its text,
//! Slack's as an "Open" button), made by the [`AnswerLinks`] the server provides: the HTTP
//! crate's signed links, so every rule of who may answer applies. Each recipient's link
//! goes only to its own targets: a receiver never holds a link to act as someone else. A
//! Slack channel is read by all its members, so its link acts as `link_as` for any of them:
//! name a recipient for a channel only when that is what its members may do.
//!
//! At least once means a Slack message or an email may, rarely, arrive twice (a process
//! killed between the send and its record); a webhook receiver deduplicates by
//! `webhook-id`, a person sees the same request twice and answers it once.

mod dispatch;
mod email;
mod render;
mod sign;
mod slack;
mod target;

pub use dispatch::{AnswerLinks, DEFAULT_MAX_PENDING, DeliveryStats, Dispatcher, RetryPolicy};
pub use email::{BadEmail, Email};
pub use sign::{BadSecret, WebhookSecret};
pub use slack::{
    BadSlack, Slack, SlackAction, approval_shown_whole, escape as slack_escape,
    offers_option_buttons,
};
pub use target::{BadWebhook, OutboxNotifier, Target, Webhook};
