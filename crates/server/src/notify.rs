//! The server's webhooks: the flags made settings, answer links for recipients, and the
//! dispatcher started beside the API.
//!
//! `--webhook URL` (repeatable) posts every request event to `URL`; `--webhook NAME=URL`
//! also puts NAME's answer link in each `*.asked` message (NAME must be a credential that
//! may answer: a reviewer, an admin, or `local` without tokens). Deliveries are signed with
//! `--webhook-secret` (required with any webhook) and kept in the server's store until
//! delivered: see the `askbus-notify` crate.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use askbus_http::LinkKey;
use askbus_notify::{AnswerLinks, Dispatcher, RetryPolicy, Webhook, WebhookSecret};
use askbus_question::{Identity, RequestHub, RequestId};

use crate::{ConfigError, Settings};

/// The webhooks a server delivers to.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// Where.
    pub webhooks: Vec<Webhook>,
    /// What signs them.
    pub secret: WebhookSecret,
    /// How failed deliveries are retried.
    pub retry: RetryPolicy,
}

impl WebhookSettings {
    /// The settings of the `--webhook` flags, checked against the credentials that may
    /// answer (`deciders`); `None` without webhooks.
    pub(crate) fn parse(
        webhooks: &[String],
        secret: Option<&str>,
        retry_window: Option<Duration>,
        deciders: &[Identity],
    ) -> Result<Option<Self>, ConfigError> {
        let webhooks = webhooks
            .iter()
            .map(|webhook| webhook.trim())
            .filter(|webhook| !webhook.is_empty())
            .map(Webhook::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if webhooks.is_empty() {
            return Ok(None);
        }
        let secret = WebhookSecret::parse(secret.ok_or(ConfigError::WebhookSecretRequired)?)?;
        for recipient in webhooks
            .iter()
            .filter_map(|webhook| webhook.recipient.as_ref())
        {
            if !deciders
                .iter()
                .any(|identity| *identity.name == **recipient)
            {
                return Err(ConfigError::UnknownRecipient(recipient.clone()));
            }
        }
        let mut retry = RetryPolicy::default();
        if let Some(window) = retry_window {
            retry.window = window;
        }
        Ok(Some(Self {
            webhooks,
            secret,
            retry,
        }))
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

/// Starts delivering `settings`' webhooks from `hub`'s store until `shutdown`, and returns
/// the hub telling them of every request; `hub` unchanged without webhooks (or a store).
/// Answer links are made under `public_url`.
pub(crate) fn start(
    hub: RequestHub,
    settings: &mut Settings,
    public_url: &str,
    shutdown: &tokio_util::sync::CancellationToken,
) -> RequestHub {
    let (Some(webhooks), Some(store)) = (&settings.webhooks, hub.store()) else {
        return hub;
    };
    let links = RecipientLinks {
        key: settings.http.link_key.clone(),
        base: public_url.trim_end_matches('/').to_owned(),
        deciders: settings.deciders(),
    };
    let dispatcher = Dispatcher::new(
        Arc::clone(store),
        webhooks.webhooks.clone(),
        webhooks.secret.clone(),
    )
    .with_retry(webhooks.retry)
    .with_links(Arc::new(links));
    settings.http.webhooks = Some(dispatcher.stats());
    let hub = hub.with_notifier(dispatcher.notifier());
    tracing::info!(
        "webhooks: delivering every request event to {}",
        webhooks
            .webhooks
            .iter()
            .map(Webhook::name)
            .collect::<Vec<_>>()
            .join(", ")
    );
    dispatcher.spawn(shutdown.clone());
    hub
}
