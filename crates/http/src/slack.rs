//! `POST /slack/interactivity`: a button pressed in Slack answers the request it shows.
//!
//! The askbus messages in Slack (see the `askbus-notify` crate's `slack` module) carry
//! buttons whose `action_id` is a [`SlackAction`]. Slack tells the app's interactivity
//! URL of each press: a form-encoded `payload=` holding a `block_actions` JSON payload,
//! signed with the app's signing secret. This route takes it.
//!
//! Policy, in exact words:
//!
//! - **Slack's signature is the credential.** The route takes no bearer token; it answers
//!   `401` unless `X-Slack-Signature` is `v0=` and the hex HMAC-SHA256, under the signing
//!   secret, of `v0:{X-Slack-Request-Timestamp}:{the raw body}`, compared in constant time,
//!   and unless that timestamp is within 5 minutes of now (an older request, even signed,
//!   is a replay). Nothing in the body is read before both hold. Without a signing secret
//!   configured the route is `404`.
//! - **A Slack user acts as the askbus identity mapped to it, and as no one else.** The
//!   user is looked up in the configured map (Slack user id to an askbus credential's name)
//!   and acts as that credential as it is configured now, in its sessions: an unmapped user,
//!   or one mapped to a name that is no credential, resolves nothing and is told so
//!   (`200`, since Slack shows nothing of a refusal status).
//! - **A press is an answer like any other.** It goes through the very handlers the API
//!   answers with, acting as that identity: the same roles (an agent's identity never
//!   decides), the same never-the-asker rule, named reviewers, quorum votes, the same
//!   exactly-once resolution. A question's button answers it with that option's label, read
//!   from the request (the button carries only indexes); Approve and Reject decide every
//!   tool call of the approval alike.
//! - **Slack is told the outcome through the payload's `response_url`.** Done: the
//!   message is replaced by itself without its buttons, with who decided what. Refused (not
//!   allowed, the wrong role, a vote already cast, an answer that does not fit): the reason
//!   goes to the presser alone (ephemeral), and the message stays for others to answer.
//!   Already answered (`409`): the message is replaced, naming who answered. The
//!   `response_url` comes from a payload whose signature was verified, so only Slack names
//!   where these go; the post is made after the route has answered (Slack wants an answer
//!   within 3 seconds) and bounded by a 10-second timeout.

use std::time::Duration;

use askbus_notify::{SlackAction, approval_shown_whole, offers_option_buttons, slack_escape};
use askbus_question::{Decision, Identity, QuestionId};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::auth::{Authorized, Caller, TokenScope};
use crate::error::{ApiError, ErrorCode};
use crate::extract::{ApiJson, QuestionPath, SegmentPath, read_body};
use crate::questions::ReplyBody;
use crate::{AppState, approvals, questions};

/// How far a signed request's timestamp may be from now, either way.
pub const MAX_SLACK_AGE: Duration = Duration::from_secs(5 * 60);

/// How long the post to a `response_url` may take.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// The settings of Slack interactivity: the app's signing secret, and who each Slack user
/// is here.
#[derive(Clone)]
pub struct SlackInteractivity {
    /// The app's signing secret (Slack's "Basic Information" page).
    secret: std::sync::Arc<[u8]>,
    /// Slack user id to askbus credential name.
    users: Vec<(String, String)>,
    /// Posts to `response_url`s.
    client: reqwest::Client,
}

/// A `--slack-signing-secret` that cannot be one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a Slack signing secret is the app's (Basic Information, App Credentials): one word")]
pub struct BadSigningSecret;

impl SlackInteractivity {
    /// Verifies presses with `signing_secret`, acting for the Slack users of `users`
    /// (Slack user id, askbus credential name).
    ///
    /// # Errors
    ///
    /// [`BadSigningSecret`] if the secret is empty or holds spaces.
    pub fn new(
        signing_secret: &str,
        users: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, BadSigningSecret> {
        let secret = signing_secret.trim();
        if secret.is_empty() || secret.contains(char::is_whitespace) {
            return Err(BadSigningSecret);
        }
        Ok(Self {
            secret: std::sync::Arc::from(secret.as_bytes()),
            users: users.into_iter().collect(),
            client: reqwest::Client::new(),
        })
    }

    /// The askbus name Slack user `user` acts as, if it is mapped.
    fn name_of(&self, user: &str) -> Option<&str> {
        self.users
            .iter()
            .find(|(slack, _)| slack == user)
            .map(|(_, name)| name.as_str())
    }

    /// Whether `signature` (`v0=<hex>`) signs `timestamp` and `body`, in constant time.
    fn verify(&self, timestamp: &str, body: &[u8], signature: &str) -> bool {
        let Some(signature) = signature
            .strip_prefix("v0=")
            .and_then(|hex_digits| hex::decode(hex_digits).ok())
        else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(b"v0:");
        mac.update(timestamp.as_bytes());
        mac.update(b":");
        mac.update(body);
        // `verify_slice` compares in constant time (`subtle`).
        mac.verify_slice(&signature).is_ok()
    }
}

impl std::fmt::Debug for SlackInteractivity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackInteractivity")
            .field("users", &self.users)
            .finish_non_exhaustive()
    }
}

/// Take a button press from Slack (Slack's signature, no token).
#[utoipa::path(
    post,
    path = "/slack/interactivity",
    operation_id = "slack.interactivity",
    tag = "slack",
    params(
        ("X-Slack-Request-Timestamp" = String, Header, description = "When Slack signed the request, seconds since the Unix epoch: at most 5 minutes from now"),
        ("X-Slack-Signature" = String, Header, description = "`v0=` and the hex HMAC-SHA256 of `v0:{timestamp}:{body}` under the app's signing secret"),
    ),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`payload=` and Slack's `block_actions` JSON, as Slack sends it"),
    responses(
        (status = 200, description = "Taken: the request was answered, or the presser may not answer it; either way Slack is told through the payload's `response_url`"),
        (status = 400, description = "Signed, but not a form with a JSON `payload`", body = crate::error::ErrorBody),
        (status = 401, description = "No valid signature, or a timestamp more than 5 minutes away (a replay)", body = crate::error::ErrorBody),
        (status = 404, description = "Slack interactivity is not configured (no signing secret)", body = crate::error::ErrorBody),
        (status = 413, description = "Body too large", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn interactivity(
    State(state): State<AppState>,
    request: Request,
) -> Result<StatusCode, ApiError> {
    let Some(slack) = state.inner.config.slack.clone() else {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            "Slack interactivity is not configured on this server",
        ));
    };
    let timestamp = header(request.headers(), "x-slack-request-timestamp");
    let signature = header(request.headers(), "x-slack-signature");
    let body = read_body(request.into_body(), state.inner.config.body_limit).await?;
    let now = askbus_store::now_ms() / 1000;
    let fresh = timestamp
        .parse::<u64>()
        .is_ok_and(|at| now.abs_diff(at) <= MAX_SLACK_AGE.as_secs());
    if !fresh {
        return Err(ApiError::unauthorized(
            "X-Slack-Request-Timestamp is missing or more than 5 minutes from now",
        ));
    }
    if !slack.verify(&timestamp, &body, &signature) {
        return Err(ApiError::unauthorized(
            "X-Slack-Signature does not sign this request with the app's signing secret",
        ));
    }
    let payload = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body)
        .ok()
        .and_then(|fields| fields.into_iter().find(|(name, _)| name == "payload"))
        .and_then(|(_, payload)| serde_json::from_str::<Value>(&payload).ok())
        .ok_or_else(|| ApiError::bad_request("expected a form with a JSON `payload`"))?;
    let pressed = payload["actions"]
        .as_array()
        .and_then(|actions| actions.first())
        .and_then(|action| action["action_id"].as_str())
        .and_then(SlackAction::parse);
    let Some(action) = pressed.filter(|action| *action != SlackAction::Open) else {
        // Not a press of ours (another app's, or the link button's): nothing to do.
        return Ok(StatusCode::OK);
    };
    let user = payload["user"]["id"].as_str().unwrap_or("");
    let response = match caller_for(&state, &slack, user) {
        None => Response::Refused(format!(
            "You are not allowed to answer askbus requests from Slack: your Slack user ({}) is not mapped to an askbus reviewer",
            if user.is_empty() { "unknown" } else { user }
        )),
        Some(caller) => press(&state, caller, &action).await,
    };
    if let Some(url) = payload["response_url"]
        .as_str()
        .and_then(|url| reqwest::Url::parse(url).ok())
        .filter(|url| matches!(url.scheme(), "http" | "https"))
    {
        let body = response.body(&payload);
        let client = slack.client.clone();
        tokio::spawn(async move {
            let sent = client
                .post(url)
                .json(&body)
                .timeout(RESPONSE_TIMEOUT)
                .send()
                .await;
            if let Err(error) = sent.and_then(reqwest::Response::error_for_status) {
                // Without the URL: Slack's `response_url` lets whoever reads it post to
                // the channel for half an hour.
                let error = error.without_url();
                tracing::warn!("slack: could not update the message: {error}");
            }
        });
    }
    Ok(StatusCode::OK)
}

/// What Slack is told of a press.
enum Response {
    /// Done, or already done: the message is replaced, without its buttons, by this line.
    Replace(String),
    /// Refused: only the presser sees why.
    Refused(String),
}

impl Response {
    /// The body posted to `response_url`.
    fn body(&self, payload: &Value) -> Value {
        match self {
            Self::Refused(text) => json!({
                "response_type": "ephemeral",
                "replace_original": false,
                "text": text,
            }),
            Self::Replace(text) => {
                // The message as it was, less its buttons, then what became of it.
                let mut blocks: Vec<Value> = payload["message"]["blocks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|block| block["type"] != "actions")
                    .cloned()
                    .collect();
                blocks.push(json!({
                    "type": "section",
                    "text": {"type": "mrkdwn", "text": slack_escape(text)},
                }));
                json!({"replace_original": true, "text": text, "blocks": blocks})
            }
        }
    }
}

/// The caller a press of Slack user `user` acts as: the credential its mapped name names,
/// as configured now (without credentials, `local` is everyone); `None` if none.
fn caller_for(state: &AppState, slack: &SlackInteractivity, user: &str) -> Option<Caller> {
    let (identity, scope) = crate::links::credential_named(state, slack.name_of(user)?)?;
    Some(Caller(Authorized {
        scope,
        token: None,
        identity,
    }))
}

/// Does what `action` says, as `caller`, through the API's own handlers.
async fn press(state: &AppState, caller: Caller, action: &SlackAction) -> Response {
    let who = caller.0.identity.clone();
    let done = match action {
        SlackAction::Answer {
            request,
            question,
            option,
        } => answer(state, caller.clone(), request, *question, *option).await,
        SlackAction::Approve { request } | SlackAction::Reject { request } => {
            let approve = matches!(action, SlackAction::Approve { .. });
            decide(state, caller.clone(), request, approve).await
        }
        // The handler answers this one before: a link button decides nothing.
        SlackAction::Open => return Response::Refused("this button only opens the request".into()),
    };
    match done {
        Ok(what) => Response::Replace(format!("{what} by {who}")),
        Err((error, request)) if error.code() == ErrorCode::AlreadyResolved => {
            let by = decided_by(state, &request)
                .await
                .map(|by| format!(" by {by}"))
                .unwrap_or_default();
            Response::Replace(format!("Already answered{by}: nothing was changed"))
        }
        Err((error, _)) => Response::Refused(format!(
            "Not done ({}): {}",
            error.code().status().as_u16(),
            error.message()
        )),
    }
}

/// A failed press: the API's error, and the request it was about.
type Refusal = (ApiError, String);

/// Answers question `request` with option `option` of question `question`.
async fn answer(
    state: &AppState,
    caller: Caller,
    request: &str,
    question: usize,
    option: usize,
) -> Result<String, Refusal> {
    let failed = |error| (error, request.to_owned());
    let id: QuestionId = request
        .parse()
        .map_err(|_| failed(ApiError::bad_request("not a question id")))?;
    let snapshot = questions::visible(state, &caller, id)
        .await
        .map_err(failed)?;
    let asked = &snapshot.request.questions;
    // Buttons answer only what the message offers them for (one posted before that rule
    // may offer more).
    let offered = serde_json::to_value(asked)
        .ok()
        .as_ref()
        .and_then(Value::as_array)
        .is_some_and(|questions| offers_option_buttons(questions));
    if !offered {
        return Err(failed(ApiError::invalid(
            "this question is not answered from Slack: open the request to answer it",
        )));
    }
    let label = asked
        .get(question)
        .and_then(|asked| asked.options.get(option))
        .map(|option| option.label.clone())
        .ok_or_else(|| failed(ApiError::invalid("the question has no such option")))?;
    let answers: Vec<Vec<String>> = (0..asked.len())
        .map(|index| {
            if index == question {
                vec![label.clone()]
            } else {
                Vec::new()
            }
        })
        .collect();
    questions::reply(
        State(state.clone()),
        caller,
        QuestionPath(id),
        ReplyBody::Value(json!({ "answers": answers })),
    )
    .await
    .map(drop)
    .map_err(failed)?;
    Ok(format!(
        "Answered “{}”",
        askbus_question::visible::visible_text(&label, false)
    ))
}

/// Approves (or rejects) every tool call of approval `request`.
async fn decide(
    state: &AppState,
    caller: Caller,
    request: &str,
    approve: bool,
) -> Result<String, Refusal> {
    let failed = |error| (error, request.to_owned());
    let snapshot = approvals::visible(state, &caller, request)
        .await
        .map_err(failed)?;
    // Approve decides what the message showed, so only a request it shows whole (the
    // message offers no Approve otherwise, but one posted before that rule may).
    if approve
        && !serde_json::to_value(&snapshot.request.action_requests)
            .ok()
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|actions| approval_shown_whole(actions))
    {
        return Err(failed(ApiError::invalid(
            "this request does not fit in a Slack message whole: open it to approve it",
        )));
    }
    let decision = if approve {
        Decision::Approve
    } else {
        Decision::Reject { message: None }
    };
    let reply = serde_json::from_value(json!({
        "decisions": vec![decision; snapshot.request.action_requests.len()],
    }))
    .map_err(|_| failed(ApiError::new(ErrorCode::Internal, "internal error")))?;
    approvals::reply(
        State(state.clone()),
        caller,
        SegmentPath(request.to_owned()),
        ApiJson(reply),
    )
    .await
    .map(drop)
    .map_err(failed)?;
    Ok(if approve { "Approved" } else { "Rejected" }.to_owned())
}

/// Who decided the resolved request `request`, if anyone is known to have.
async fn decided_by(state: &AppState, request: &str) -> Option<Identity> {
    let everywhere = Caller(Authorized {
        scope: TokenScope::AllSessions,
        token: None,
        identity: Identity::local(),
    });
    if let Ok(id) = request.parse::<QuestionId>() {
        return questions::visible(state, &everywhere, id)
            .await
            .ok()?
            .decided_by;
    }
    approvals::visible(state, &everywhere, request)
        .await
        .ok()?
        .decided_by
}

/// A header's value as text, empty when absent or not text.
fn header(headers: &HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The example of Slack's documentation ("Verifying requests from Slack").
    #[test]
    fn verifies_slack_s_documented_example_and_nothing_altered() {
        let slack = SlackInteractivity::new("8f742231b10e8888abcd99yyyzzz85a5", []).unwrap();
        let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let signature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert!(slack.verify("1531420618", body.as_bytes(), signature));
        assert!(!slack.verify("1531420619", body.as_bytes(), signature));
        assert!(!slack.verify("1531420618", b"token=other", signature));
        assert!(!slack.verify(
            "1531420618",
            body.as_bytes(),
            &signature.replace("v0=", "v1=")
        ));
        assert!(!slack.verify("1531420618", body.as_bytes(), "v0=zz"));
        assert!(SlackInteractivity::new(" ", []).is_err());
        assert!(!format!("{slack:?}").contains("8f742231"));
    }
}
