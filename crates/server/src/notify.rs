//! The server's notifications: the flags of every channel (webhooks, Slack, email) made
//! settings, answer links for recipients, and the dispatcher started beside the API.
//!
//! - `--webhook URL` (repeatable) posts every request event to `URL`; `--webhook NAME=URL`
//!   also puts NAME's answer link in each `*.asked` message. Deliveries are signed with
//!   `--webhook-secret` (required with any webhook).
//! - `--slack-token xoxb-…` with `--slack-channel ID` posts every request event to that
//!   channel (through `--slack-api-url`, Slack's by default), asked requests with buttons;
//!   `--slack-link-as NAME` adds an "Open" button with NAME's answer link (everyone in the
//!   channel can use it). `--slack-signing-secret` turns on `POST /slack/interactivity`,
//!   where a button pressed by a Slack user mapped with `--slack-user SLACKID=NAME` answers
//!   as NAME (any credential: its role decides what it may do, as for a token).
//! - `--smtp-url smtp://HOST:PORT` with `--email-from` and `--email-to [NAME=]ADDRESS`
//!   (repeatable) mails every request event to each address, NAME's answer link in the
//!   asked ones.
//!
//! A recipient NAME (of a webhook, an email, `--slack-link-as`) must be a credential that
//! may answer: a reviewer, an admin, or `local` without tokens. Every channel's messages
//! are kept in the server's store until delivered, under one retry policy
//! (`--webhook-retry-window`): see the `askbus-notify` crate.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use askbus_http::{LinkKey, SlackInteractivity};
use askbus_notify::{
    AnswerLinks, Dispatcher, Email, RetryPolicy, Slack, Target, Webhook, WebhookSecret,
};
use askbus_question::{Identity, RequestHub, RequestId};

use crate::{ConfigError, Secret, Settings};

/// How long one SMTP attempt may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a server delivers every request event.
#[derive(Debug, Clone)]
pub struct NotifySettings {
    /// The webhooks, Slack channel and mailboxes.
    pub targets: Vec<Target>,
    /// How failed deliveries are retried.
    pub retry: RetryPolicy,
    /// The most deliveries kept pending; new messages are dropped beyond.
    pub max_pending: u64,
}

/// The notification flags, as given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NotifyFlags<'a> {
    pub(crate) webhooks: &'a [String],
    pub(crate) webhook_secrets: &'a [Secret],
    pub(crate) retry_window: Option<Duration>,
    pub(crate) max_pending: u64,
    pub(crate) slack_token: Option<&'a str>,
    pub(crate) slack_channel: Option<&'a str>,
    pub(crate) slack_api_url: &'a str,
    pub(crate) slack_link_as: Option<&'a str>,
    pub(crate) smtp_url: Option<&'a str>,
    pub(crate) email_from: Option<&'a str>,
    pub(crate) email_to: &'a [String],
}

impl NotifySettings {
    /// Whether any target's messages carry a recipient's answer links.
    pub(crate) fn has_recipients(&self) -> bool {
        self.targets
            .iter()
            .any(|target| target.recipient().is_some())
    }

    /// The settings of the notification flags, checked against the credentials that may
    /// answer (`deciders`); `None` without any channel.
    pub(crate) fn parse(
        flags: NotifyFlags<'_>,
        deciders: &[Identity],
    ) -> Result<Option<Self>, ConfigError> {
        let mut targets = Vec::new();
        let webhooks = given(flags.webhooks.iter().map(String::as_str))
            .map(Webhook::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if !webhooks.is_empty() {
            let secrets = Secrets::parse(flags.webhook_secrets, &webhooks)?;
            for webhook in webhooks {
                if let Some(recipient) = &webhook.recipient {
                    may_answer(recipient, deciders, "--webhook")?;
                }
                let secret = secrets
                    .of(&webhook)
                    .ok_or(ConfigError::WebhookSecretRequired)?;
                targets.push(Target::Webhook { webhook, secret });
            }
            if secrets.shared_by(targets.len()) {
                tracing::warn!(
                    "webhooks: several receivers share one --webhook-secret, so each can sign \
                     messages the others take as this server's; give each its own with \
                     --webhook-secret URL=whsec_…"
                );
            }
        }
        match (flags.slack_token, flags.slack_channel) {
            (Some(token), Some(channel)) => {
                let mut slack = Slack::new(token, channel, flags.slack_api_url)?;
                if let Some(name) = flags.slack_link_as.map(str::trim) {
                    may_answer(name, deciders, "--slack-link-as")?;
                    slack = slack.with_link_as(name);
                }
                targets.push(Target::Slack(slack));
            }
            (None, None) if flags.slack_link_as.is_none() => {}
            _ => {
                return Err(ConfigError::ChannelIncomplete(
                    "--slack-token and --slack-channel go together (and --slack-link-as needs both)",
                ));
            }
        }
        let recipients: Vec<&str> = given(flags.email_to.iter().map(String::as_str)).collect();
        match (flags.smtp_url, flags.email_from, recipients.is_empty()) {
            (Some(url), Some(from), false) => {
                for to in recipients {
                    let email = Email::new(url, from, to, SMTP_TIMEOUT)?;
                    if let Some(recipient) = &email.recipient {
                        may_answer(recipient, deciders, "--email-to")?;
                    }
                    targets.push(Target::Email(email));
                }
            }
            (None, None, true) => {}
            _ => {
                return Err(ConfigError::ChannelIncomplete(
                    "--smtp-url, --email-from and --email-to go together",
                ));
            }
        }
        if targets.is_empty() {
            return Ok(None);
        }
        let mut retry = RetryPolicy::default();
        if let Some(window) = flags.retry_window {
            retry.window = window;
        }
        Ok(Some(Self {
            targets,
            retry,
            max_pending: flags.max_pending,
        }))
    }
}

/// Slack interactivity's settings of `--slack-signing-secret` and `--slack-user`, each
/// user's NAME checked against the configured credentials (`names`); `None` without a
/// signing secret.
pub(crate) fn slack_interactivity(
    signing_secret: Option<&str>,
    users: &[String],
    names: &[Identity],
) -> Result<Option<SlackInteractivity>, ConfigError> {
    let users = given(users.iter().map(String::as_str))
        .map(|entry| {
            let (slack, name) = entry
                .split_once('=')
                .map(|(slack, name)| (slack.trim(), name.trim()))
                .filter(|(slack, name)| !slack.is_empty() && !name.is_empty())
                .ok_or_else(|| ConfigError::BadSlackUser(entry.to_owned()))?;
            if !names.iter().any(|identity| *identity.name == *name) {
                return Err(ConfigError::UnknownSlackUser(name.to_owned()));
            }
            Ok((slack.to_owned(), name.to_owned()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    match signing_secret {
        Some(secret) => Ok(Some(SlackInteractivity::new(secret, users)?)),
        None if users.is_empty() => Ok(None),
        None => Err(ConfigError::ChannelIncomplete(
            "--slack-user needs --slack-signing-secret (Slack signs every button press with it)",
        )),
    }
}

/// The non-empty entries of a repeatable flag, trimmed.
fn given<'a>(entries: impl IntoIterator<Item = &'a str>) -> impl Iterator<Item = &'a str> {
    entries
        .into_iter()
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
}

/// `Ok` if `name` is a credential that may answer, for `flag`'s recipient.
/// The `--webhook-secret` entries: one for every webhook, and one per URL.
struct Secrets {
    /// `whsec_…` alone.
    default: Option<WebhookSecret>,
    /// `URL=whsec_…`, by the webhook of that URL.
    by_url: Vec<(Webhook, WebhookSecret)>,
}

impl Secrets {
    /// The entries, each `URL=` matched to one of `webhooks`.
    fn parse(entries: &[Secret], webhooks: &[Webhook]) -> Result<Self, ConfigError> {
        let mut secrets = Self {
            default: None,
            by_url: Vec::new(),
        };
        for entry in given(entries.iter().map(Secret::expose)) {
            // The URL ends where `=whsec_` starts: the secret's base64 may end in `=`.
            match entry.find("=whsec_") {
                Some(at) => {
                    let url = entry[..at].trim();
                    let named = Webhook::parse(url)
                        .ok()
                        .filter(|named| webhooks.iter().any(|webhook| webhook.url == named.url))
                        .ok_or_else(|| {
                            // Named as the start-up line names webhooks: the URL as
                            // written may hold the receiver's secret.
                            ConfigError::SecretForNoWebhook(Webhook::parse(url).map_or_else(
                                |_| "(not an http(s) URL)".to_owned(),
                                |named| named.name(),
                            ))
                        })?;
                    let secret = WebhookSecret::parse(&entry[at + 1..])?;
                    secrets.by_url.push((named, secret));
                }
                None => secrets.default = Some(WebhookSecret::parse(entry)?),
            }
        }
        Ok(secrets)
    }

    /// The secret of `webhook`: its own, or the default.
    fn of(&self, webhook: &Webhook) -> Option<WebhookSecret> {
        self.by_url
            .iter()
            .find(|(named, _)| named.url == webhook.url)
            .map(|(_, secret)| secret.clone())
            .or_else(|| self.default.clone())
    }

    /// Whether the default secret signs for more than one of `webhooks` webhooks.
    fn shared_by(&self, webhooks: usize) -> bool {
        self.default.is_some() && webhooks.saturating_sub(self.by_url.len()) > 1
    }
}

fn may_answer(name: &str, deciders: &[Identity], flag: &'static str) -> Result<(), ConfigError> {
    if deciders.iter().any(|identity| *identity.name == *name) {
        Ok(())
    } else {
        Err(ConfigError::UnknownRecipient {
            flag,
            name: name.to_owned(),
        })
    }
}

/// Answer links for recipients, made with the server's link key under its public URL.
struct RecipientLinks {
    key: LinkKey,
    /// The server's URL, without a trailing `/`.
    base: String,
    /// The credentials that may answer, by name.
    deciders: Vec<Identity>,
}

impl AnswerLinks for RecipientLinks {
    fn answer_url(
        &self,
        recipient: &str,
        request_id: &str,
        expires_at_ms: Option<u64>,
    ) -> Option<String> {
        let acts_as = self
            .deciders
            .iter()
            .find(|identity| *identity.name == *recipient)?;
        let request = RequestId::from_str(request_id).ok()?;
        let minted = self.key.mint(request, acts_as.clone(), expires_at_ms);
        Some(format!("{}{}", self.base, minted.path))
    }
}

/// Starts delivering to `settings`' channels from `hub`'s store until `shutdown`, and
/// returns the hub telling them of every request; `hub` unchanged without channels (or a
/// store). Answer links are made under `public_url`.
pub(crate) fn start(
    hub: RequestHub,
    settings: &mut Settings,
    public_url: &str,
    shutdown: &tokio_util::sync::CancellationToken,
) -> RequestHub {
    if let Some(slack) = &settings.http.slack {
        tracing::info!(
            "slack: button presses answered at {}/slack/interactivity ({slack:?})",
            public_url.trim_end_matches('/')
        );
    }
    let (Some(notify), Some(store)) = (&settings.notify, hub.store()) else {
        return hub;
    };
    let links = RecipientLinks {
        key: settings.http.link_key.clone(),
        base: public_url.trim_end_matches('/').to_owned(),
        deciders: settings.recipients(),
    };
    let dispatcher = Dispatcher::for_targets(Arc::clone(store), notify.targets.clone())
        .with_retry(notify.retry)
        .with_max_pending(notify.max_pending)
        .with_links(Arc::new(links));
    settings.http.webhooks = Some(dispatcher.stats());
    let hub = hub.with_notifier(dispatcher.notifier());
    tracing::info!(
        "notify: delivering every request event to {}",
        notify
            .targets
            .iter()
            .map(|target| format!("{} {}", target.channel(), target.name()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    dispatcher.spawn(shutdown.clone());
    hub
}
