//! Slack: every request event posted to a channel, asked requests with buttons that
//! answer them.
//!
//! A `*.asked` message becomes a `chat.postMessage` in Block Kit: a header, each question
//! with its options as buttons (a single-select question of a request that asks one; a
//! request of several questions, or of a multiple-select or free-text one, is answered
//! through its link), or each tool call with its arguments (cut to
//! [`MAX_ARGS`](crate::render::MAX_ARGS) characters) and Approve / Reject buttons for all
//! of them at once; and, when the channel has a recipient (`link_as`), an "Open" button
//! whose URL is that recipient's answer link. A button decides only what the message
//! shows whole ([`approval_shown_whole`], [`offers_option_buttons`]): a human approves what
//! they saw, and what does not fit is decided through the link (Reject stays: it runs
//! nothing). Everyone in the channel can follow that
//! link, so it acts as the recipient for whoever clicks: give it only to a channel whose
//! members may all answer as that name. Every other event (an outcome, a vote) is a plain
//! follow-up message naming the request, what happened and who decided. It is not posted
//! in the asked message's thread: that would need the asked message's `ts`, which the
//! outbox does not keep; the asked message itself is updated when it is answered from
//! Slack (see the HTTP crate's `slack` module).
//!
//! A button press comes back to the server's `POST /slack/interactivity` as a
//! [`SlackAction`], encoded in the button's `action_id` (at most 255 characters, as Slack
//! allows): the request id and what the button does, never an answer's text (the server
//! reads the option's label from the request itself).
//!
//! # Failures
//!
//! Slack answers most errors with HTTP 200 and `{"ok": false, "error": "…"}`: those are
//! failed attempts like any other, retried by the dispatcher's policy, except the errors
//! that no retry can fix, which abandon the delivery at once (see `GIVE_UP`: a bad or
//! revoked token, a missing scope, a channel that does not exist or that the app is not
//! in, a message Slack refuses as malformed). A status other than 2xx is retried.

use std::time::Duration;

use serde_json::{Value, json};

use crate::dispatch::Failure;
use crate::render::{Told, args_of, shown, shown_args, shown_line, truncate, who};

/// Slack errors that retrying cannot fix: the delivery is abandoned at once.
const GIVE_UP: &[&str] = &[
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "no_permission",
    "missing_scope",
    "channel_not_found",
    "not_in_channel",
    "is_archived",
    "invalid_blocks",
    "invalid_arguments",
    "msg_too_long",
];

/// The prefix of every `action_id` askbus makes.
const ACTION_PREFIX: &str = "askbus";

/// Slack's limits: buttons per actions block, characters of a button's text, of a header,
/// of a section's text.
const MAX_BUTTONS: usize = 25;
const MAX_BUTTON_TEXT: usize = 75;
const MAX_HEADER: usize = 150;
const MAX_SECTION: usize = 3_000;

/// The most questions or tool calls shown one by one (Slack takes 50 blocks a message).
const MAX_SHOWN: usize = 10;

/// A Slack channel every request event is posted to.
#[derive(Clone)]
pub struct Slack {
    /// The channel's id (`C0123…`) or name.
    pub channel: String,
    /// Slack's Web API, `https://slack.com/api` (without a trailing `/`).
    pub api_url: reqwest::Url,
    /// Whose answer links the asked messages carry (an "Open" button), if anyone's.
    pub link_as: Option<String>,
    /// The bot token (`xoxb-…`).
    token: String,
}

/// Why Slack settings are not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSlack {
    /// The token is empty or holds characters no header may.
    #[error("a Slack token is one word (a bot token starts with `xoxb-`)")]
    Token,
    /// No channel.
    #[error("a Slack channel id is needed (for example C0123456789)")]
    Channel,
    /// The API URL is not http(s).
    #[error("{0:?} is not an http:// or https:// URL")]
    ApiUrl(String),
}

/// What a button of an askbus message in Slack does, as its `action_id` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlackAction {
    /// Answers the question request `request` with option `option` of its question
    /// `question` (both counted from 0).
    Answer {
        /// `que_…`.
        request: String,
        /// Which question.
        question: usize,
        /// Which of its options.
        option: usize,
    },
    /// Approves every tool call of the approval request `request`.
    Approve {
        /// `apr_…`.
        request: String,
    },
    /// Rejects every tool call of the approval request `request`.
    Reject {
        /// `apr_…`.
        request: String,
    },
    /// Opens the answer link (a URL button: Slack tells of the click too; nothing to do).
    Open,
}

impl SlackAction {
    /// Its `action_id`: `askbus:REQUEST:QUESTION:OPTION`, `askbus:REQUEST:approve`,
    /// `askbus:REQUEST:reject` or `askbus:open`.
    ///
    /// # Examples
    ///
    /// ```
    /// use askbus_notify::SlackAction;
    ///
    /// let answer = SlackAction::Answer { request: "que_1".into(), question: 0, option: 2 };
    /// assert_eq!(answer.action_id(), "askbus:que_1:0:2");
    /// assert_eq!(SlackAction::parse("askbus:que_1:0:2"), Some(answer));
    /// assert_eq!(SlackAction::parse("someone-else:que_1"), None);
    /// ```
    pub fn action_id(&self) -> String {
        match self {
            Self::Answer {
                request,
                question,
                option,
            } => format!("{ACTION_PREFIX}:{request}:{question}:{option}"),
            Self::Approve { request } => format!("{ACTION_PREFIX}:{request}:approve"),
            Self::Reject { request } => format!("{ACTION_PREFIX}:{request}:reject"),
            Self::Open => format!("{ACTION_PREFIX}:open"),
        }
    }

    /// The action an `action_id` stands for; `None` if it is not one askbus made.
    pub fn parse(action_id: &str) -> Option<Self> {
        let mut parts = action_id.split(':');
        if parts.next()? != ACTION_PREFIX {
            return None;
        }
        let parts: Vec<&str> = parts.collect();
        match parts[..] {
            ["open"] => Some(Self::Open),
            [request, "approve"] => Some(Self::Approve {
                request: request.to_owned(),
            }),
            [request, "reject"] => Some(Self::Reject {
                request: request.to_owned(),
            }),
            [request, question, option] => Some(Self::Answer {
                request: request.to_owned(),
                question: question.parse().ok()?,
                option: option.parse().ok()?,
            }),
            _ => None,
        }
    }
}

impl Slack {
    /// Posts to `channel` with the bot `token` through the Web API at `api_url`
    /// (`https://slack.com/api`; a test points it at a fake).
    ///
    /// # Errors
    ///
    /// [`BadSlack`] for an empty token or channel, or an API URL that is not http(s).
    ///
    /// # Examples
    ///
    /// ```
    /// use askbus_notify::Slack;
    ///
    /// let slack = Slack::new("xoxb-123", "C0123", "https://slack.com/api").unwrap();
    /// assert_eq!(slack.name(), "slack:C0123");
    /// // The token is never shown.
    /// assert!(!format!("{slack:?}").contains("xoxb-123"));
    /// ```
    pub fn new(token: &str, channel: &str, api_url: &str) -> Result<Self, BadSlack> {
        let token = token.trim();
        if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(BadSlack::Token);
        }
        let channel = channel.trim();
        if channel.is_empty() {
            return Err(BadSlack::Channel);
        }
        let api_url = reqwest::Url::parse(api_url.trim().trim_end_matches('/'))
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
            .ok_or_else(|| BadSlack::ApiUrl(api_url.to_owned()))?;
        Ok(Self {
            channel: channel.to_owned(),
            api_url,
            link_as: None,
            token: token.to_owned(),
        })
    }

    /// Puts an "Open" button in asked messages: `recipient`'s answer link.
    #[must_use]
    pub fn with_link_as(mut self, recipient: impl Into<String>) -> Self {
        self.link_as = Some(recipient.into());
        self
    }

    /// The name its deliveries are kept under: `slack:CHANNEL`.
    pub fn name(&self) -> String {
        format!("slack:{}", self.channel)
    }

    /// The `chat.postMessage` body telling of the event in `payload`, with `link` (the
    /// recipient's answer link) on an asked request.
    pub(crate) fn message(&self, payload: &str, link: Option<&str>) -> Value {
        let Some(told) = Told::parse(payload) else {
            return json!({"channel": self.channel, "text": "askbus: an event it could not read"});
        };
        if !told.is_asked() {
            let line = told.outcome_line();
            return json!({
                "channel": self.channel,
                "text": truncate(&line, MAX_SECTION),
                "blocks": [section(&escape(&line))],
            });
        }
        let mut blocks = vec![json!({
            "type": "header",
            "text": {"type": "plain_text", "text": truncate(&told.asked_title(), MAX_HEADER)},
        })];
        let id = told.request_id().to_owned();
        if told.is_approval() {
            approval_blocks(&told, &id, &mut blocks);
        } else {
            question_blocks(&told, &id, &mut blocks);
        }
        let mut context = format!("Session `{}` · {}", escape(&told.session()), escape(&id));
        if let Some(by) = who(&told.data["askedBy"]).or_else(|| who(&told.data["asked_by"])) {
            context.push_str(&format!(" · asked by {}", escape(&by)));
        }
        blocks.push(json!({
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": truncate(&context, MAX_SECTION)}],
        }));
        if let Some(link) = link {
            blocks.push(json!({
                "type": "actions",
                "elements": [{
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Open"},
                    "url": link,
                    "action_id": SlackAction::Open.action_id(),
                }],
            }));
        }
        json!({
            "channel": self.channel,
            "text": truncate(&told.asked_title(), MAX_SECTION),
            "blocks": blocks,
        })
    }

    /// Posts `message` with `chat.postMessage`.
    pub(crate) async fn post(
        &self,
        client: &reqwest::Client,
        message: &Value,
        timeout: Duration,
    ) -> Result<Option<u16>, Failure> {
        let mut url = self.api_url.clone();
        url.path_segments_mut()
            .map_err(|()| Failure::retry(None, "the Slack API URL cannot take a path"))?
            .push("chat.postMessage");
        let sent = client
            .post(url)
            .bearer_auth(&self.token)
            .header(reqwest::header::USER_AGENT, "askbus-notify")
            .json(message)
            .timeout(timeout)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) if error.is_timeout() => {
                return Err(Failure::retry(
                    None,
                    format!("no answer within {timeout:?}"),
                ));
            }
            Err(error) => return Err(Failure::retry(None, crate::dispatch::describe(error))),
        };
        let status = response.status();
        if !status.is_success() {
            return Err(Failure::retry(
                Some(status.as_u16()),
                format!("Slack answered {status}"),
            ));
        }
        let answer: Value = response.json().await.unwrap_or_default();
        if answer["ok"] == true {
            return Ok(Some(status.as_u16()));
        }
        let error = answer["error"].as_str().unwrap_or("no `ok` in its answer");
        let said = format!("Slack refused the message: {error}");
        if GIVE_UP.contains(&error) {
            Err(Failure::give_up(Some(status.as_u16()), said))
        } else {
            Err(Failure::retry(Some(status.as_u16()), said))
        }
    }
}

impl std::fmt::Debug for Slack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slack")
            .field("channel", &self.channel)
            .field("api_url", &self.api_url.as_str())
            .field("link_as", &self.link_as)
            .finish_non_exhaustive()
    }
}

/// Whether a request's `questions` (as the event's JSON shows them) get their options as
/// buttons: a lone single-select question whose every label fits on its button whole, so
/// a button answers exactly what it says (Slack cuts a button's text at 75 characters, and
/// two labels alike that far would look the same). Otherwise the request is answered
/// through its link. The interactivity route checks the same before it answers.
pub fn offers_option_buttons(questions: &[Value]) -> bool {
    let [question] = questions else {
        return false;
    };
    question["multiple"] != true
        && question["options"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|option| option["input"] != true)
            .all(|option| {
                option["label"].is_string()
                    && shown_line(&option["label"]).chars().count() <= MAX_BUTTON_TEXT
            })
}

/// Whether an approval's tool calls are shown whole in its message, which is the only way
/// its Approve button is offered: at most 10 calls, each one's arguments whole (at most
/// 600 characters, with no code fence of their own to mangle), and each call's text
/// within a block. A human approves what they saw;
/// anything cut, they decide through the request's link. The interactivity route checks
/// the same before it approves.
pub fn approval_shown_whole(actions: &[Value]) -> bool {
    actions.len() <= MAX_SHOWN
        && actions.iter().all(|action| {
            let args = shown_args(action);
            args.chars().count() <= crate::render::MAX_ARGS
                && !args.contains(CODE_FENCE)
                && action_heading(action).chars().count() <= MAX_SECTION
        })
}

/// Slack's mark of a code block.
const CODE_FENCE: &str = "```";

/// A tool call's name and the agent's description of it, shown as plain text: no text of
/// the agent's is read as formatting (a code block of its own would pass for arguments).
fn action_heading(action: &Value) -> String {
    let mut heading = format!("Tool: {}", shown_line(&action["name"]));
    if action["description"]
        .as_str()
        .is_some_and(|text| !text.is_empty())
    {
        heading.push('\n');
        heading.push_str(&shown(&action["description"]));
    }
    heading
}

/// The blocks of a `question.asked`: each question, and buttons for the options of a lone
/// single-select question.
fn question_blocks(told: &Told, id: &str, blocks: &mut Vec<Value>) {
    let questions = told.questions();
    let buttons = offers_option_buttons(questions);
    for (index, question) in questions.iter().take(MAX_SHOWN).enumerate() {
        let mut text = String::new();
        if question["header"].as_str().is_some_and(|h| !h.is_empty()) {
            text.push_str(&format!("*{}*\n", escape(&shown_line(&question["header"]))));
        }
        text.push_str(&escape(&shown(&question["question"])));
        let options = question["options"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        if !buttons {
            for option in options {
                text.push_str(&format!("\n• {}", escape(&shown_line(&option["label"]))));
            }
        }
        blocks.push(section(&text));
        if buttons {
            let elements: Vec<Value> = options
                .iter()
                .enumerate()
                // A free-text option needs its text typed: the link answers it.
                .filter(|(_, option)| option["input"] != true)
                .take(MAX_BUTTONS)
                .map(|(option_index, option)| {
                    let action = SlackAction::Answer {
                        request: id.to_owned(),
                        question: index,
                        option: option_index,
                    };
                    button(&shown_line(&option["label"]), &action, None)
                })
                .collect();
            if !elements.is_empty() {
                blocks.push(json!({"type": "actions", "elements": elements}));
            }
        }
    }
    if questions.len() > MAX_SHOWN {
        blocks.push(section(&format!(
            "…and {} more question(s): open the request to see them all",
            questions.len() - MAX_SHOWN
        )));
    }
}

/// The blocks of an `approval.asked`: each tool call, then Approve (only when every call
/// is shown whole: [`approval_shown_whole`]) and Reject.
fn approval_blocks(told: &Told, id: &str, blocks: &mut Vec<Value>) {
    let actions = told.actions();
    for action in actions.iter().take(MAX_SHOWN) {
        blocks.push(json!({
            "type": "section",
            "text": {"type": "plain_text", "text": truncate(&action_heading(action), MAX_SECTION)},
        }));
        blocks.push(section(&format!(
            "{CODE_FENCE}{}{CODE_FENCE}",
            escape(&args_of(action)).replace(CODE_FENCE, "'''")
        )));
    }
    if actions.len() > MAX_SHOWN {
        blocks.push(section(&format!(
            "…and {} more tool call(s): open the request to see them all",
            actions.len() - MAX_SHOWN
        )));
    }
    let request = id.to_owned();
    let reject = button(
        "Reject",
        &SlackAction::Reject {
            request: request.clone(),
        },
        Some("danger"),
    );
    let elements = if approval_shown_whole(actions) {
        vec![
            button(
                "Approve",
                &SlackAction::Approve { request },
                Some("primary"),
            ),
            reject,
        ]
    } else {
        blocks.push(section(
            "Not all of it fits here: open the request to approve it. Rejecting runs nothing.",
        ));
        vec![reject]
    };
    blocks.push(json!({"type": "actions", "elements": elements}));
}

/// A mrkdwn section of `text` (already escaped), cut to Slack's limit.
fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, MAX_SECTION)}})
}

/// A button doing `action`.
fn button(text: &str, action: &SlackAction, style: Option<&str>) -> Value {
    let mut button = json!({
        "type": "button",
        "text": {"type": "plain_text", "text": truncate(text, MAX_BUTTON_TEXT)},
        "action_id": action.action_id(),
    });
    if let Some(style) = style {
        button["style"] = json!(style);
    }
    button
}

/// `text` safe in Slack's mrkdwn: `&`, `<` and `>` escaped, as Slack asks, so no text of a
/// request can make a mention or a link.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn slack() -> Slack {
        Slack::new("xoxb-1", "C1", "http://127.0.0.1:1/api").unwrap()
    }

    fn payload(kind: &str, data: Value) -> String {
        json!({"type": kind, "timestamp": "", "data": data}).to_string()
    }

    #[test]
    fn a_lone_question_gets_a_button_per_option_and_the_link_an_open_button() {
        let asked = payload(
            "question.asked",
            json!({
                "id": "que_01JZ6Q3V8R5M2K7D4T9WXYZABC", "sessionID": "s<1>",
                "questions": [{"question": "Which region?", "header": "Region", "options": [
                    {"label": "eu", "description": ""}, {"label": "us", "description": ""},
                    {"label": "other", "description": "", "input": true}]}],
            }),
        );
        let message = slack().message(&asked, Some("http://askbus/answer/t"));
        let blocks = message["blocks"].as_array().unwrap();
        assert_eq!(blocks[0]["text"]["text"], "Question: Region");
        let ids: Vec<&str> = blocks[2]["elements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|button| button["action_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "askbus:que_01JZ6Q3V8R5M2K7D4T9WXYZABC:0:0",
                "askbus:que_01JZ6Q3V8R5M2K7D4T9WXYZABC:0:1"
            ]
        );
        assert!(
            blocks[3]["elements"][0]["text"]
                .as_str()
                .unwrap()
                .contains("s&lt;1&gt;")
        );
        assert_eq!(blocks[4]["elements"][0]["url"], "http://askbus/answer/t");
    }

    /// The buttons of a message decide what it shows: an Approve only for tool calls shown
    /// whole, option buttons only for labels that fit on them.
    #[test]
    fn buttons_only_decide_what_the_message_shows_whole() {
        let approval = |actions: Value| {
            let asked = payload(
                "approval.asked",
                json!({"id": "apr_1", "sessionID": "s", "action_requests": actions}),
            );
            action_ids_of(&slack().message(&asked, None))
        };
        let call = |args: Value| json!({"name": "bash", "args": args});
        let shown = approval(json!([call(json!({"command": "ls"}))]));
        assert_eq!(shown, ["askbus:apr_1:approve", "askbus:apr_1:reject"]);
        for hidden in [
            json!([call(json!({"command": "x".repeat(600)}))]),
            json!([call(json!({"command": "```"}))]),
            json!(vec![call(json!({"command": "ls"})); MAX_SHOWN + 1]),
            json!([{"name": "bash", "description": "d".repeat(MAX_SECTION), "args": {}}]),
        ] {
            assert_eq!(
                approval(hidden.clone()),
                ["askbus:apr_1:reject"],
                "{hidden}"
            );
        }

        let question = |label: String| {
            let asked = payload(
                "question.asked",
                json!({"id": "que_1", "sessionID": "s", "questions": [{
                    "question": "Which?", "header": "Which",
                    "options": [{"label": "short", "description": ""},
                                {"label": label, "description": ""}],
                }]}),
            );
            action_ids_of(&slack().message(&asked, None))
        };
        assert_eq!(question("b".repeat(MAX_BUTTON_TEXT)).len(), 2);
        assert!(question("b".repeat(MAX_BUTTON_TEXT + 1)).is_empty());
    }

    /// The agent's hidden characters are marked wherever the message shows its text, as
    /// the web UI marks them: a right-to-left override or a variation selector changes
    /// nothing a reviewer reads, and Approve is measured on what is shown.
    #[test]
    fn hidden_characters_are_marked_in_every_text_of_a_message() {
        let asked = payload(
            "approval.asked",
            json!({"id": "apr_1", "sessionID": "s\u{202e}1", "action_requests": [{
                "name": "open\u{202e}fdp.exe", "description": "Open it\u{e0041}",
                "args": {"file": "report\u{202e}xcod.exe", "note": "ok\u{fe00}"},
            }]}),
        );
        let message = slack().message(&asked, None);
        let text = message.to_string();
        for marked in [
            "Approval: open⟨U+202E⟩fdp.exe",
            "Tool: open⟨U+202E⟩fdp.exe\\nOpen it⟨U+E0041⟩",
            r#"\\u202excod.exe"#,
            r#"ok\\ufe00"#,
            "Session `s⟨U+202E⟩1`",
        ] {
            assert!(text.contains(marked), "{marked} in {text}");
        }
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{fe00}'),
            "{text}"
        );
        assert_eq!(
            action_ids_of(&message),
            ["askbus:apr_1:approve", "askbus:apr_1:reject"]
        );
        // 100 hidden characters are 600 shown ones: past what Approve may stand for.
        let long = json!([{"name": "bash", "args": {"c": "\u{200b}".repeat(100)}}]);
        assert!(!approval_shown_whole(long.as_array().unwrap()));

        let asked = payload(
            "question.asked",
            json!({"id": "que_1", "sessionID": "s", "questions": [{
                "question": "Rename\u{202e}?", "header": "Re\u{2067}name",
                "options": [{"label": "Yes\u{fe00}", "description": ""}],
            }]}),
        );
        let text = slack().message(&asked, None).to_string();
        for marked in [
            "Question: Re⟨U+2067⟩name",
            "Rename⟨U+202E⟩?",
            "\"text\":\"Yes⟨U+FE00⟩\"",
        ] {
            assert!(text.contains(marked), "{marked} in {text}");
        }
    }

    /// Every `action_id` of a message's buttons.
    fn action_ids_of(message: &Value) -> Vec<String> {
        message["blocks"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|block| block["elements"].as_array().into_iter().flatten())
            .filter_map(|element| element["action_id"].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn action_ids_read_back_and_others_are_not_ours() {
        for action in [
            SlackAction::Approve {
                request: "apr_1".into(),
            },
            SlackAction::Reject {
                request: "apr_1".into(),
            },
            SlackAction::Open,
            SlackAction::Answer {
                request: "que_1".into(),
                question: 3,
                option: 24,
            },
        ] {
            assert_eq!(SlackAction::parse(&action.action_id()), Some(action));
        }
        for other in [
            "",
            "askbus",
            "askbus:que_1:x:1",
            "askbus:a:b:c:d",
            "other:open",
        ] {
            assert_eq!(SlackAction::parse(other), None, "{other}");
        }
    }

    #[test]
    fn refuses_unusable_settings() {
        assert_eq!(
            Slack::new(" ", "C1", "https://slack.com/api").unwrap_err(),
            BadSlack::Token
        );
        assert_eq!(
            Slack::new("x", "", "https://slack.com/api").unwrap_err(),
            BadSlack::Channel
        );
        assert!(matches!(
            Slack::new("x", "C1", "ftp://x").unwrap_err(),
            BadSlack::ApiUrl(_)
        ));
    }
}
