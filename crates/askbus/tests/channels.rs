//! Slack and email from the real binary: a fake Slack Web API and a tiny SMTP sink, both
//! started here on loopback, receive what askbus sends; button presses come back signed
//! exactly as Slack signs them, and answer as the mapped identity or not at all.

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use support::{Server, question};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The signing secret of Slack's own documentation example.
const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

/// Tokens of the roles test: an agent that asks, a reviewer that decides, an admin that
/// reads the deliveries.
const AGENT: &str = "agent-secret-0123456789abcdef0123";
const REVIEWER: &str = "reviewer-secret-0123456789abcdef01";
const ADMIN: &str = "admin-secret-0123456789abcdef012345";

/// How long anything may take to arrive.
const WITHIN: Duration = Duration::from_secs(30);

/// A fake Slack: records every `chat.postMessage` and every post to a `response_url`.
#[derive(Clone, Default)]
struct FakeSlack {
    /// `(path, authorization header, JSON body)` of every call, in order.
    calls: Arc<Mutex<Vec<(String, String, Value)>>>,
    /// How many more `chat.postMessage` calls answer `ok: false`.
    refuse: Arc<Mutex<usize>>,
}

impl FakeSlack {
    /// Starts it on loopback; its base URL.
    async fn start(&self) -> String {
        async fn post_message(
            State(slack): State<FakeSlack>,
            headers: HeaderMap,
            axum::Json(body): axum::Json<Value>,
        ) -> axum::Json<Value> {
            let auth = headers
                .get("authorization")
                .map(|value| value.to_str().unwrap().to_owned())
                .unwrap_or_default();
            slack
                .calls
                .lock()
                .unwrap()
                .push(("chat.postMessage".into(), auth, body));
            let mut refuse = slack.refuse.lock().unwrap();
            if *refuse > 0 {
                *refuse -= 1;
                // As Slack answers errors: 200 and `ok: false`.
                return axum::Json(json!({"ok": false, "error": "ratelimited"}));
            }
            axum::Json(json!({"ok": true, "ts": "1700000000.000100"}))
        }
        async fn response(
            State(slack): State<FakeSlack>,
            axum::Json(body): axum::Json<Value>,
        ) -> &'static str {
            slack
                .calls
                .lock()
                .unwrap()
                .push(("response".into(), String::new(), body));
            "ok"
        }
        let app = axum::Router::new()
            .route("/api/chat.postMessage", axum::routing::post(post_message))
            .route("/response", axum::routing::post(response))
            .with_state(self.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        base
    }

    /// The first recorded call to `path` whose body satisfies `wanted`, waiting for it.
    async fn call(&self, path: &str, wanted: impl Fn(&Value) -> bool) -> (String, Value) {
        tokio::time::timeout(WITHIN, async {
            loop {
                let found = self
                    .calls
                    .lock()
                    .unwrap()
                    .iter()
                    .find(|(at, _, body)| at == path && wanted(body))
                    .map(|(_, auth, body)| (auth.clone(), body.clone()));
                if let Some(found) = found {
                    return found;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no {path} call as wanted: {:#?}",
                self.calls.lock().unwrap()
            )
        })
    }

    /// How many calls to `path` were recorded.
    fn count(&self, path: &str) -> usize {
        let calls = self.calls.lock().unwrap();
        calls.iter().filter(|(at, _, _)| at == path).count()
    }
}

/// Whether a message's JSON mentions `text` anywhere.
fn mentions(value: &Value, text: &str) -> bool {
    value.to_string().contains(text)
}

/// Every `action_id` of a Block Kit message's buttons.
fn action_ids(message: &Value) -> Vec<String> {
    message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "actions")
        .flat_map(|block| block["elements"].as_array().unwrap().iter())
        .filter_map(|button| button["action_id"].as_str().map(str::to_owned))
        .collect()
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The form body of a `block_actions` press of `action_id` by Slack user `user`, and its
/// `X-Slack-Signature` at `timestamp` under `secret`, exactly as Slack makes them.
fn press(
    user: &str,
    action_id: &str,
    response_url: &str,
    timestamp: u64,
    secret: &str,
) -> (String, String) {
    let payload = json!({
        "type": "block_actions",
        "user": {"id": user, "username": user, "team_id": "T1"},
        "api_app_id": "A1",
        "container": {"type": "message", "message_ts": "1700000000.000100"},
        "channel": {"id": "C1", "name": "askbus"},
        "message": {"ts": "1700000000.000100", "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Question: Region"}},
            {"type": "actions", "elements": []},
        ]},
        "response_url": response_url,
        "actions": [{"type": "button", "action_id": action_id, "block_id": "b1",
                     "text": {"type": "plain_text", "text": "x"}, "action_ts": "1700000001.0"}],
    });
    let body = serde_urlencoded::to_string([("payload", payload.to_string())]).unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    let signature = format!("v0={}", hex::encode(mac.finalize().into_bytes()));
    (body, signature)
}

/// Posts a press to the server as Slack would (no token, no Origin); the status.
async fn post_press(
    http: &reqwest::Client,
    server: &Server,
    (body, signature): (String, String),
    timestamp: u64,
) -> u16 {
    http.post(format!("{}/slack/interactivity", server.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp.to_string())
        .header("x-slack-signature", signature)
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// `GET path` with `token`, as JSON.
async fn get(http: &reqwest::Client, server: &Server, path: &str, token: &str) -> Value {
    http.get(format!("{}{path}", server.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `POST path` with `token` and a JSON body, as JSON (which must be 200).
async fn post(
    http: &reqwest::Client,
    server: &Server,
    path: &str,
    token: &str,
    body: &Value,
) -> Value {
    let response = http
        .post(format!("{}{path}", server.base))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_buttons_answer_as_the_mapped_identity_and_only_with_slack_s_signature() {
    let slack = FakeSlack::default();
    // The first message Slack refuses (`ok: false`): it is retried.
    *slack.refuse.lock().unwrap() = 1;
    let fake = slack.start().await;
    let api = format!("{fake}/api");
    let response_url = format!("{fake}/response");
    let server = Server::start_with(
        Path::new("."),
        &[
            "--listen",
            "127.0.0.1:0",
            "--store",
            "memory",
            "--agent-token",
            &format!("bot={AGENT}"),
            "--reviewer-token",
            &format!("alice={REVIEWER}"),
            "--token",
            ADMIN,
            "--slack-token",
            "xoxb-test-token",
            "--slack-channel",
            "C1",
            "--slack-api-url",
            &api,
            "--slack-signing-secret",
            SIGNING_SECRET,
            "--slack-user",
            "U_ALICE=alice,U_BOT=bot",
            "--slack-link-as",
            "alice",
        ],
        &[],
    )
    .await;
    tokio::time::timeout(WITHIN, async {
        while !server
            .logged()
            .iter()
            .any(|line| line.contains("delivering every request event to slack slack:C1"))
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the start-up log names the channel");
    let http = reqwest::Client::new();
    let asked = post(&http, &server, "/question", AGENT, &question("call-1")).await;
    let question_id = asked["id"].as_str().unwrap().to_owned();

    // The asked message: Block Kit, a button per option, and the recipient's link.
    let (auth, message) = slack
        .call("chat.postMessage", |body| {
            mentions(body, &question_id) && body["blocks"][0]["type"] == "header"
        })
        .await;
    assert_eq!(auth, "Bearer xoxb-test-token");
    assert_eq!(message["channel"], "C1");
    assert_eq!(message["blocks"][0]["text"]["text"], "Question: Region");
    let ids = action_ids(&message);
    assert_eq!(
        ids,
        [
            format!("askbus:{question_id}:0:0"),
            format!("askbus:{question_id}:0:1"),
            "askbus:open".to_owned()
        ]
    );
    let open = message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|block| block["elements"][0]["url"].as_str())
        .unwrap();
    assert!(
        open.starts_with(&format!("{}/answer/", server.base)),
        "{open}"
    );
    // Slack refused it once (`ok: false`), so it was sent twice, and is listed so.
    let deliveries = tokio::time::timeout(WITHIN, async {
        loop {
            let listed = get(&http, &server, "/webhook/deliveries", ADMIN).await;
            let retried = listed.as_array().unwrap().iter().any(|delivery| {
                delivery["target"] == "slack:C1"
                    && delivery["state"] == "delivered"
                    && delivery["attempts"] == 2
            });
            if retried {
                return listed;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the refused message is retried and delivered");
    assert!(!deliveries.as_array().unwrap().is_empty());
    assert!(slack.count("chat.postMessage") >= 2);

    // An approval: its tool call and Approve / Reject.
    let approval = post(
        &http,
        &server,
        "/approval",
        AGENT,
        &json!({"session_id": "agent", "action_requests": [{"name": "delete_db", "args": {"db": "production"}}]}),
    )
    .await;
    let approval_id = approval["id"].as_str().unwrap().to_owned();
    let (_, message) = slack
        .call("chat.postMessage", |body| {
            mentions(body, &approval_id) && body["blocks"][0]["type"] == "header"
        })
        .await;
    assert!(mentions(&message, "delete_db") && mentions(&message, "production"));
    let approve = format!("askbus:{approval_id}:approve");
    assert!(action_ids(&message).contains(&approve));
    assert!(action_ids(&message).contains(&format!("askbus:{approval_id}:reject")));

    let pending = |path: String| {
        let http = http.clone();
        let server = &server;
        async move { get(&http, server, &path, ADMIN).await["status"] == "pending" }
    };
    let answer_eu = format!("askbus:{question_id}:0:0");

    // A wrong signature, and a right one that is too old: 401, nothing answered.
    let at = now();
    let forged = press("U_ALICE", &answer_eu, &response_url, at, "not-the-secret");
    assert_eq!(post_press(&http, &server, forged, at).await, 401);
    let stale = now() - 6 * 60;
    let replayed = press("U_ALICE", &answer_eu, &response_url, stale, SIGNING_SECRET);
    assert_eq!(post_press(&http, &server, replayed, stale).await, 401);
    assert!(pending(format!("/question/{question_id}")).await);

    // An unmapped Slack user: told so, nothing answered.
    let at = now();
    let stranger = press("U_NOBODY", &answer_eu, &response_url, at, SIGNING_SECRET);
    assert_eq!(post_press(&http, &server, stranger, at).await, 200);
    let (_, told) = slack
        .call("response", |body| mentions(body, "U_NOBODY"))
        .await;
    assert_eq!(told["response_type"], "ephemeral");
    assert!(mentions(&told, "not allowed"), "{told}");
    assert!(pending(format!("/question/{question_id}")).await);

    // The agent's Slack user may not approve: the roles apply, 403 told to it alone.
    let at = now();
    let agent_press = press("U_BOT", &approve, &response_url, at, SIGNING_SECRET);
    assert_eq!(post_press(&http, &server, agent_press, at).await, 200);
    let (_, told) = slack.call("response", |body| mentions(body, "403")).await;
    assert_eq!(told["response_type"], "ephemeral");
    assert_eq!(told["replace_original"], false);
    assert!(pending(format!("/approval/{approval_id}")).await);

    // The reviewer's Slack user answers: as alice, and the message says so.
    let at = now();
    let alice = press("U_ALICE", &answer_eu, &response_url, at, SIGNING_SECRET);
    assert_eq!(post_press(&http, &server, alice, at).await, 200);
    let answered = get(&http, &server, &format!("/question/{question_id}"), ADMIN).await;
    assert_eq!(answered["status"], "replied", "{answered}");
    assert_eq!(answered["answers"], json!([["eu"]]));
    assert_eq!(answered["answeredBy"]["name"], "alice");
    let (_, replaced) = slack
        .call("response", |body| {
            body["replace_original"] == true && mentions(body, "“eu”")
        })
        .await;
    assert!(mentions(&replaced, "alice"), "{replaced}");
    // Its buttons are gone; the rest of the message stays.
    assert!(action_ids(&replaced).is_empty());
    assert_eq!(replaced["blocks"][0]["type"], "header");

    let at = now();
    let alice_approves = press("U_ALICE", &approve, &response_url, at, SIGNING_SECRET);
    assert_eq!(post_press(&http, &server, alice_approves, at).await, 200);
    let approved = get(&http, &server, &format!("/approval/{approval_id}"), ADMIN).await;
    assert_eq!(approved["status"], "replied", "{approved}");
    assert_eq!(approved["decisions"], json!([{"type": "approve"}]));
    assert_eq!(approved["answered_by"]["name"], "alice");

    // An approval the message cannot show whole (a description long enough to push the
    // arguments out, with a code block of its own that would pass for them): no Approve
    // in its message, the agent's text shown as plain text, and an Approve pressed anyway
    // (a message posted before the rule) refused; it waits for a human who sees it all.
    let padding = format!("```{{\"command\": \"ls\"}}```{}", " ".repeat(3_000));
    let hidden = post(
        &http,
        &server,
        "/approval",
        AGENT,
        &json!({"session_id": "agent", "action_requests": [
            {"name": "bash", "description": padding, "args": {"command": "rm -rf /srv"}},
        ]}),
    )
    .await;
    let hidden_id = hidden["id"].as_str().unwrap().to_owned();
    let (_, message) = slack
        .call("chat.postMessage", |body| {
            mentions(body, &hidden_id) && body["blocks"][0]["type"] == "header"
        })
        .await;
    let approve_hidden = format!("askbus:{hidden_id}:approve");
    assert!(!action_ids(&message).contains(&approve_hidden), "{message}");
    assert!(action_ids(&message).contains(&format!("askbus:{hidden_id}:reject")));
    assert_eq!(
        message["blocks"][1]["text"]["type"], "plain_text",
        "{message}"
    );
    assert!(
        mentions(&message, "open the request to approve it"),
        "{message}"
    );
    let at = now();
    let pressed = press(
        "U_ALICE",
        &approve_hidden,
        &response_url,
        at,
        SIGNING_SECRET,
    );
    assert_eq!(post_press(&http, &server, pressed, at).await, 200);
    slack
        .call("response", |body| {
            mentions(body, "does not fit in a Slack message whole")
        })
        .await;
    assert!(pending(format!("/approval/{hidden_id}")).await);

    // A second press: already answered, by whom.
    let at = now();
    let again = press("U_ALICE", &answer_eu, &response_url, at, SIGNING_SECRET);
    assert_eq!(post_press(&http, &server, again, at).await, 200);
    slack
        .call("response", |body| {
            mentions(body, "Already answered by alice")
        })
        .await;

    // The outcomes follow in the channel, naming who decided.
    slack
        .call("chat.postMessage", |body| {
            mentions(body, &question_id) && mentions(body, "was answered by alice")
        })
        .await;
    slack
        .call("chat.postMessage", |body| {
            mentions(body, &approval_id) && mentions(body, "was decided by alice")
        })
        .await;
}

/// A tiny SMTP server: answers every command as a relay that takes everything, and sends
/// each message's data to the channel.
async fn smtp_sink(listener: TcpListener, messages: tokio::sync::mpsc::UnboundedSender<String>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let messages = messages.clone();
        tokio::spawn(async move {
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            write.write_all(b"220 sink ESMTP\r\n").await.unwrap();
            while let Ok(Some(line)) = lines.next_line().await {
                let command = line.to_ascii_uppercase();
                let answer: &[u8] = if command.starts_with("EHLO") || command.starts_with("HELO") {
                    b"250 sink\r\n"
                } else if command.starts_with("DATA") {
                    write.write_all(b"354 go on\r\n").await.unwrap();
                    let mut data = String::new();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if line == "." {
                            break;
                        }
                        data.push_str(&line);
                        data.push('\n');
                    }
                    messages.send(data).unwrap();
                    b"250 queued\r\n"
                } else if command.starts_with("QUIT") {
                    write.write_all(b"221 bye\r\n").await.unwrap();
                    return;
                } else {
                    b"250 ok\r\n"
                };
                write.write_all(answer).await.unwrap();
            }
        });
    }
}

/// The text of a quoted-printable body (soft line breaks joined, `=XX` decoded).
fn quoted_printable(text: &str) -> String {
    let joined = text.replace("=\n", "");
    let mut bytes = Vec::new();
    let mut rest = joined.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        match (
            first,
            tail.get(..2).and_then(|hex| std::str::from_utf8(hex).ok()),
        ) {
            (b'=', Some(hex)) if u8::from_str_radix(hex, 16).is_ok() => {
                bytes.push(u8::from_str_radix(hex, 16).unwrap());
                rest = &tail[2..];
            }
            _ => {
                bytes.push(first);
                rest = tail;
            }
        }
    }
    String::from_utf8(bytes).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_s_link_answers_as_its_recipient_through_an_smtp_relay_down_then_up() {
    // Nothing listens on the relay's port at first.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let smtp = format!("smtp://127.0.0.1:{port}");
    let server = Server::start_with(
        Path::new("."),
        &[
            "--listen",
            "127.0.0.1:0",
            "--store",
            "memory",
            "--smtp-url",
            &smtp,
            "--email-from",
            "askbus@example.com",
            "--email-to",
            "local=alice@example.com",
        ],
        &[],
    )
    .await;
    let http = reqwest::Client::new();
    let id = server.ask(&http, &question("call-1")).await;

    // The relay is down: the attempt fails, is listed, and waits for its retry.
    tokio::time::timeout(WITHIN, async {
        loop {
            let pending = server.get(&http, "/webhook/deliveries?state=pending").await;
            let failed = pending.as_array().unwrap().iter().any(|delivery| {
                delivery["target"] == "email:alice@example.com"
                    && delivery["last_attempt"]["error"].is_string()
            });
            if failed {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the failed attempt is listed");

    // Up: the asked email arrives, with the recipient's link.
    let (sender, mut received) = tokio::sync::mpsc::unbounded_channel();
    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    tokio::spawn(smtp_sink(listener, sender));
    let asked = tokio::time::timeout(WITHIN, received.recv())
        .await
        .expect("the asked email arrives once the relay is up")
        .unwrap();
    let asked = quoted_printable(&asked);
    assert!(
        asked.contains("Subject: [askbus] Question: Region"),
        "{asked}"
    );
    assert!(asked.contains("To: alice@example.com"), "{asked}");
    assert!(
        asked.contains(&format!("Message-ID: <{id}@askbus>")),
        "{asked}"
    );
    assert!(asked.contains("Which region?"), "{asked}");
    let link_at = asked.find(&format!("{}/answer/", server.base)).unwrap();
    let link: String = asked[link_at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '<')
        .collect();
    let answered = http
        .post(&link)
        .json(&json!({"answers": [["eu"]]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200, "{link}");
    let status = server.get(&http, &format!("/question/{id}")).await;
    assert_eq!(status["answeredBy"]["name"], "local", "{status}");

    // The outcome follows, in the same thread.
    let outcome = tokio::time::timeout(WITHIN, received.recv())
        .await
        .expect("the outcome email arrives")
        .unwrap();
    let outcome = quoted_printable(&outcome);
    assert!(
        outcome.contains(&format!("In-Reply-To: <{id}@askbus>")),
        "{outcome}"
    );
    assert!(outcome.contains("was answered by local"), "{outcome}");
    assert!(outcome.contains(": eu"), "{outcome}");
    // Both are recorded as delivered (just after the relay took them).
    tokio::time::timeout(WITHIN, async {
        loop {
            let delivered = server
                .get(&http, "/webhook/deliveries?state=delivered")
                .await;
            if delivered.as_array().unwrap().len() == 2 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("both emails are recorded as delivered");
}
