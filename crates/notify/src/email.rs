//! Email: every request event mailed to one recipient through an SMTP relay.
//!
//! A `*.asked` event is an email with the request in plain text and in simple HTML, and,
//! for a recipient who may answer (`NAME=ADDRESS`), NAME's answer link: a single-use link
//! that acts as NAME alone, so the mailbox, and no one else, holds it. Every other event (an
//! outcome, a vote) is a short email naming the request, what happened and who decided.
//! Emails about one request thread together in a mail client without anything kept: the
//! asked email's `Message-ID` is made of the request id, and every later one names it in
//! `In-Reply-To` and `References`.
//!
//! # Failures
//!
//! The relay's answer decides: a transient refusal (SMTP 4xx), a connection that fails or
//! times out, is a failed attempt retried by the dispatcher's policy; a permanent one
//! (SMTP 5xx: no such mailbox, relaying denied, a bad sender) abandons the delivery at
//! once, since sending it again would be refused again.
//!
//! The relay is named as lettre's URLs name it: `smtp://HOST:PORT` (plain, for a relay on
//! the same host or network), `smtp://HOST:587?tls=required` (STARTTLS), `smtps://HOST`
//! (TLS from the start; rustls and the platform's roots), with `USER:PASSWORD@` for a relay
//! that wants a login. The URL is never logged nor shown in `Debug`.

use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::dispatch::Failure;
use crate::render::Told;

/// One recipient's mailbox, and the relay that reaches it.
#[derive(Clone)]
pub struct Email {
    /// The address mailed.
    pub to: Mailbox,
    /// The sender the emails name.
    pub from: Mailbox,
    /// Whose answer links its asked emails carry (the recipient's credential), if any.
    pub recipient: Option<String>,
    /// The relay (holds its login, if any: never shown).
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

/// Why email settings are not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadEmail {
    /// The relay's URL is not one lettre reads. Its text is not repeated: it may hold a
    /// password.
    #[error(
        "the SMTP URL is not one of smtp://HOST:PORT, smtp://HOST:PORT?tls=required or smtps://HOST[:PORT] (with USER:PASSWORD@ if the relay wants a login)"
    )]
    SmtpUrl,
    /// An address that is not one.
    #[error("{0:?} is not an email address")]
    Address(String),
    /// The recipient's name is empty.
    #[error("{0:?} names no recipient before `=` (write `ADDRESS` or `NAME=ADDRESS`)")]
    NoRecipient(String),
}

impl Email {
    /// Mails `to` (`ADDRESS`, or `NAME=ADDRESS` for one whose asked emails carry answer
    /// links acting as NAME) from `from`, through the relay at `smtp_url`; each attempt
    /// gives up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`BadEmail`] if the URL or an address cannot be read.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use askbus_notify::Email;
    ///
    /// let email = Email::new(
    ///     "smtp://user:hunter2@127.0.0.1:2525",
    ///     "askbus@example.com",
    ///     "alice=alice@example.com",
    ///     Duration::from_secs(10),
    /// )
    /// .unwrap();
    /// assert_eq!(email.name(), "email:alice@example.com");
    /// assert_eq!(email.recipient.as_deref(), Some("alice"));
    /// assert!(!format!("{email:?}").contains("hunter2"));
    /// ```
    pub fn new(smtp_url: &str, from: &str, to: &str, timeout: Duration) -> Result<Self, BadEmail> {
        let to = to.trim();
        let (recipient, address) = match to.split_once('=') {
            Some((name, address)) => (Some(name.trim()), address.trim()),
            None => (None, to),
        };
        if recipient.is_some_and(str::is_empty) {
            return Err(BadEmail::NoRecipient(to.to_owned()));
        }
        let mailbox = |address: &str| {
            address
                .parse::<Mailbox>()
                .map_err(|_| BadEmail::Address(address.to_owned()))
        };
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url.trim())
            .map_err(|_| BadEmail::SmtpUrl)?
            .timeout(Some(timeout))
            .build();
        Ok(Self {
            to: mailbox(address)?,
            from: mailbox(from.trim())?,
            recipient: recipient.map(str::to_owned),
            transport,
        })
    }

    /// The name its deliveries are kept under: `email:ADDRESS`.
    pub fn name(&self) -> String {
        format!("email:{}", self.to.email)
    }

    /// The email telling of the event in `payload` (message `message_id`), with `link`
    /// (the recipient's answer link) on an asked request.
    pub(crate) fn message(
        &self,
        message_id: &str,
        payload: &str,
        link: Option<&str>,
    ) -> Result<Message, Failure> {
        let told = Told::parse(payload)
            .ok_or_else(|| Failure::give_up(None, "the message is not an outbox payload"))?;
        let thread = format!("<{}@askbus>", told.request_id());
        let builder = Message::builder()
            .from(self.from.clone())
            .to(self.to.clone());
        let (builder, plain) = if told.is_asked() {
            let mut plain = told.asked_text();
            if let Some(link) = link {
                plain.push_str(&format!("\nAnswer it here: {link}\n"));
            }
            let builder = builder
                .subject(format!("[askbus] {}", told.asked_title()))
                .message_id(Some(thread));
            (builder, plain)
        } else {
            let line = told.outcome_line();
            let builder = builder
                .subject(format!("[askbus] {}", crate::render::truncate(&line, 140)))
                .message_id(Some(format!("<{message_id}@askbus>")))
                .in_reply_to(thread.clone())
                .references(thread);
            (builder, format!("{line}\n"))
        };
        let html = html_of(&plain, link);
        builder
            .multipart(MultiPart::alternative_plain_html(plain, html))
            .map_err(|error| Failure::give_up(None, format!("the email cannot be made: {error}")))
    }

    /// Sends `message` through the relay.
    pub(crate) async fn send(&self, message: Message) -> Result<Option<u16>, Failure> {
        match self.transport.send(message).await {
            Ok(_) => Ok(None),
            Err(error) => {
                let code = error.status().map(|code| code.to_string());
                let said = match &code {
                    Some(code) => format!("the SMTP relay answered {code}: {error}"),
                    None => format!("SMTP: {error}"),
                };
                if error.is_permanent() {
                    Err(Failure::give_up(None, said))
                } else {
                    Err(Failure::retry(None, said))
                }
            }
        }
    }
}

impl std::fmt::Debug for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Email")
            .field("to", &self.to.to_string())
            .field("from", &self.from.to_string())
            .field("recipient", &self.recipient)
            .finish_non_exhaustive()
    }
}

/// The HTML part: the plain text, escaped, one paragraph per blank-line-separated block,
/// and the link as a link.
fn html_of(plain: &str, link: Option<&str>) -> String {
    let mut html = String::from("<!doctype html><html><body>");
    for paragraph in plain.split("\n\n") {
        let paragraph = escape_html(paragraph.trim()).replace('\n', "<br>");
        if !paragraph.is_empty() {
            html.push_str(&format!("<p>{paragraph}</p>"));
        }
    }
    if let Some(link) = link {
        html.push_str(&format!(
            "<p><a href=\"{}\">Answer this request</a></p>",
            escape_html(link)
        ));
    }
    html.push_str("</body></html>");
    html
}

/// `text` safe in HTML text and attribute values.
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn refuses_bad_urls_and_addresses_without_repeating_the_url() {
        let new = |url, to| Email::new(url, "askbus@example.com", to, Duration::from_secs(1));
        assert_eq!(
            new("http://user:secret@x", "a@example.com").unwrap_err(),
            BadEmail::SmtpUrl
        );
        assert!(!BadEmail::SmtpUrl.to_string().contains("secret"));
        assert!(matches!(
            new("smtp://127.0.0.1:25", "not an address").unwrap_err(),
            BadEmail::Address(_)
        ));
        assert!(matches!(
            new("smtp://127.0.0.1:25", "=a@example.com").unwrap_err(),
            BadEmail::NoRecipient(_)
        ));
    }

    #[test]
    fn html_escapes_the_request_s_text() {
        let html = html_of("<b>hi</b>\n\nline", Some("http://x/answer/a?b&c"));
        assert!(
            html.contains("<p>&lt;b&gt;hi&lt;/b&gt;</p><p>line</p>"),
            "{html}"
        );
        assert!(
            html.contains("href=\"http://x/answer/a?b&amp;c\""),
            "{html}"
        );
    }
}
