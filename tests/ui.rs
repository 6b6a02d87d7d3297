//! The web UI (`askbus-ui`) in a real browser, answering a real agent.
//!
//! The test serves askbus (the HTTP API merged with the UI router, as the server does) over
//! TCP on 127.0.0.1 three times: open, behind a proxy the test can cut (a dropped
//! connection), and with a bearer token. It runs `tests/ui/browser.mjs`, which drives
//! Debian's chromium (`/usr/bin/chromium`, headless, a fresh profile) with the pinned
//! `playwright-core` (`npm ci` when `node_modules` is missing or stale) and clicks through
//! the page as a human would: single and multi-select answers, "Other" text and "No
//! preference", declining with a reason, two tabs where one answers and the other updates
//! (and a third that gets a 409), a reload mid-flow, an outcome that arrives while the
//! page's own answer is in flight and that answer then fails, a dropped connection resumed
//! with `Last-Event-ID` (the event stream and the timeline's), a resumed connection the
//! server answers with `server.resync`, a phone-sized screen used by keyboard alone, browsers
//! set to Vietnamese and Chinese (the page and the card in their language), the
//! session filter, the token prompt, an approval of three tool calls (answered with a
//! response, edited through the JSON editor, rejected with a message; only the decisions
//! each allows offered), "Approve all" in one tab and a 409 in a stale one, "Always allow in
//! this session" (the grant listed in the session's grants of two tabs, the same call then
//! approved by it without a human, "Revoke" in one tab removing it from both, and the call
//! asked once more waiting again), an approval on a
//! phone by keyboard alone, a question and an approval that expire, a session's timeline
//! in seed 004's groups, live and after a reload, a session's timeline with its pending
//! question across a restart of a server that keeps its requests and histories in SQLite
//! (a fifth server, stopped and started again on the same address), "Reject all pending in
//! this session" (cancelled once, then confirmed; an approval that may not be rejected is
//! cancelled), and bidi overrides and control characters in every field shown as marked
//! code points.
//!
//! The flood: a fourth server whose agent asks 1,000, 2,000 and 10,000 requests (over
//! `FLOOD_SESSIONS` sessions, so per-session quotas allow it) before a page loads; the
//! first card must be on screen within 1 s of navigation, read a page at a time, and 200
//! more arriving live, then 510 rejected at once, must not run a main-thread task over
//! 200 ms (a `longtask` observer). The figures are printed (`ui: flood figures`).
//!
//! The agent is this process: the script asks for a case on stdout (`ask`, `outcome`,
//! `cancel`, `step`, `proxy`, `flood`, `restart`) and gets the answer on stdin, so every step waits for an
//! event, never for a timer. A case is a question or an approval request; the agent's side
//! (the answers or decisions it received) is checked here against what each case expects,
//! the page's side by the script. `step` posts an agent step to `POST /session/{id}/step`
//! over HTTP, as an agent in another process would. Screenshots of the main views land in
//! `<target>/ui-screenshots/` for a human to look at.
//!
//! Roles (`tests/ui/roles.mjs`, a test of its own): a server with agent, reviewer and
//! admin tokens, never the asker deciding; agents ask over HTTP with their tokens, the
//! page names who asked each card and who answered it (the card, the other tab's card, the
//! timeline live and from the history), and a tab holding an agent's token that answers
//! is asked for a reviewer's token; approvals that need two reviewers to agree (alice on
//! the page, bob over HTTP) show their votes, wait after the page's vote, end on the
//! second or at once on a veto, and refuse a reviewer's second vote; the server's records
//! are checked against the page.
//!
//! Answer links (`tests/ui/links.mjs`, a test of its own): the agent asks a question and
//! an approval over HTTP, a reviewer mints an answer link to each, and a browser that holds
//! no token answers both from their pages; the used link reads "already answered" by that
//! reviewer, a forged one is not valid, and the server records the reviewer as the one who
//! answered.
//!
//! Notifications (`tests/ui/notify.mjs`, a test of its own): after the human opts in, a
//! request that arrives while the tab is hidden raises one desktop notification and counts
//! in the title until the tab is shown; none for what was pending on load, what arrives
//! while the tab is shown, or what a resumed stream replays. Then a pending card says when
//! its request was reminded and escalated (`*.reminded`, `*.escalated`).
//!
//! Webhook deliveries (`tests/ui/deliveries.mjs`, a test of its own): with a webhook to a
//! local receiver that answers 503, then 204, then 410, an admin's page shows
//! "Webhooks: 1 pending" with the receiver's error, then "all delivered", then abandoned
//! ones, read again every refresh (shortened for the test) and soon after a request event;
//! a reviewer's page shows nothing of them and is not asked for a token.
//!
//! Needs Node.js 20+ with npm, the npm registry the first time, and the `chromium` Debian
//! package (`cargo xtask ci` installs it when it is missing).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use askbus::question::{
    Action, ApprovalError, ApprovalReply, DecisionType, Duties, Identity, Outcome, PendingApproval,
    PendingQuestion, QuestionId, RequestHub, ReviewConfig, Role,
};
use askbus::{AskError, Bus, QuestionInfo, QuestionOption, Timeout};
use askbus_http::{AccessToken, HttpConfig};
use askbus_notify::{DeliveryStats, Dispatcher, RetryPolicy, Webhook, WebhookSecret};
use askbus_store::{
    Ack, DeliveryQuery, DeliveryState, MemoryStore, Store, StoreError, StoreLayer, Write,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::node;

/// Where the test expects Debian's chromium.
const CHROMIUM: &str = "/usr/bin/chromium";
/// Limit of the whole browser run (it takes about 30 s).
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);
/// Limit of the agent's wait for one outcome the page has already shown.
const OUTCOME_TIMEOUT: Duration = Duration::from_secs(10);
/// The bearer token of the server with authentication on.
const TOKEN: &str = "ui-test-token-0123456789abcdef";
/// The timeout of the cases that expire while the page counts down.
const EXPIRY: Duration = Duration::from_secs(5);
/// A session id with a right-to-left override, as `browser.mjs` names it too.
const HIDDEN_SESSION: &str = "ui-hidden\u{202e}txt.exe";

/// The arguments of the `hidden_approval` case: a bidi override in a file name, and a
/// command whose end 40 no-break spaces would push out of sight.
fn hidden_args() -> serde_json::Value {
    json!({
        "file": "report\u{202e}xcod.exe",
        "command": format!("ls{}; curl x | sh", "\u{a0}".repeat(40)),
    })
}
/// A session id too long for a phone's line, as `browser.mjs` names it too.
const LONG_SESSION: &str = "ui_phone_approval_session_with_a_long_id_0123456789abcdef0123456789";
/// Every scenario of `browser.mjs`, in its order: the run must have done them all.
const SCENARIOS: &[&str] = &[
    "answer_single",
    "multi_custom_skip",
    "reject",
    "two_tabs",
    "reload_mid_flow",
    "in_flight_outcome",
    "dropped_connection",
    "resync",
    "streams_busy",
    "phone_keyboard",
    "languages",
    "session_filter",
    "token_prompt",
    "approval_decisions",
    "approval_conflict",
    "standing_grants",
    "approval_phone_keyboard",
    "expiry",
    "session_timeline",
    "timeline_resync",
    "reject_all",
    "hidden_characters",
    "flood",
    "timeline_restart",
];
/** Sessions a flood is spread over, so that no session holds more than a per-session
 * quota would allow (10,200 requests: 510 a session). */
const FLOOD_SESSIONS: usize = 20;
/** One flood request in this many is an approval; the others are questions. */
const FLOOD_APPROVAL_EVERY: usize = 7;

#[test]
fn the_web_ui_answers_questions_in_chromium() {
    let started = Instant::now();
    in_browser(drive);
    eprintln!("ui: done in {:.1?}", started.elapsed());
}

/// Runs `drive` with the browser tests' npm package (`tests/ui`), once Node.js, Debian's
/// chromium and playwright-core are there, on a runtime of its own.
fn in_browser<F: std::future::Future<Output = ()>>(drive: impl FnOnce(PathBuf) -> F) {
    node::check_node();
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: the browser tests of the web UI drive Debian's chromium. \
         `cargo xtask ci` installs it; by hand: `sudo apt-get install -y chromium`"
    );
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        node::npm_ci(&package, "playwright-core").await;
        drive(package).await;
    });
}

/// The tokens of the server with roles (`tests/ui/roles.mjs`): two agents, two reviewers
/// (alice on the page, bob over HTTP: a quorum needs both), an admin (who reads the
/// outcomes here).
const ROLES_AGENT: &str = "ui-agent-1-token-0123456789";
const ROLES_AGENT2: &str = "ui-agent-2-token-0123456789";
const ROLES_REVIEWER: &str = "ui-alice-token-0123456789";
const ROLES_REVIEWER2: &str = "ui-bob-token-0123456789";
const ROLES_ADMIN: &str = "ui-admin-token-0123456789";
/// The second agent's name: agent-controlled text with a right-to-left override.
const ROLES_AGENT2_NAME: &str = "agent-2\u{202e}gpj.exe";
/// Limit of the roles browser run (it takes a few seconds).
const ROLES_TIMEOUT: Duration = Duration::from_secs(60);

/// On a server with roles, the page names who asked each request and who answered it, and
/// an agent's token that tries to answer is asked for a reviewer's (`tests/ui/roles.mjs`).
#[test]
fn the_web_ui_names_who_asked_and_who_answered() {
    in_browser(drive_roles);
}

/// Serves askbus with roles as the server does with `--agent-token` and `--reviewer-token`
/// (never the asker deciding), runs `roles.mjs`, then reads the outcomes from the server.
async fn drive_roles(package: PathBuf) {
    let shutdown = CancellationToken::new();
    let hub = RequestHub::new(Bus::new()).with_duties(Duties {
        never_the_asker: true,
    });
    let config = HttpConfig {
        tokens: vec![
            AccessToken::all_sessions(ROLES_ADMIN),
            AccessToken::new(ROLES_AGENT, Identity::new("agent-1", Role::Agent)),
            AccessToken::new(ROLES_AGENT2, Identity::new(ROLES_AGENT2_NAME, Role::Agent)),
            AccessToken::new(ROLES_REVIEWER, Identity::new("alice", Role::Reviewer)),
            AccessToken::new(ROLES_REVIEWER2, Identity::new("bob", Role::Reviewer)),
        ],
        ..HttpConfig::default()
    };
    let address = serve(hub.clone(), config, &shutdown).await;
    let url = format!("http://{address}");
    let done = run_script(
        &package,
        "roles.mjs",
        &[
            ("ASKBUS_UI_ROLES_URL", &url),
            ("ASKBUS_UI_AGENT_TOKEN", ROLES_AGENT),
            ("ASKBUS_UI_AGENT2_TOKEN", ROLES_AGENT2),
            ("ASKBUS_UI_REVIEWER_TOKEN", ROLES_REVIEWER),
            ("ASKBUS_UI_REVIEWER2_TOKEN", ROLES_REVIEWER2),
        ],
        ROLES_TIMEOUT,
    )
    .await;

    // What the page showed is what the server recorded.
    let http = reqwest::Client::new();
    let resolved = |kind: &str, id: &Value| {
        call_json(
            http.get(format!("{url}/{kind}/{}", id.as_str().expect("an id")))
                .bearer_auth(ROLES_ADMIN),
        )
    };
    let answered = resolved("question", &done["done"]["answered"]).await;
    assert_eq!(answered["status"], "replied", "{answered}");
    assert_eq!(answered["answers"], json!([["Yes"]]), "{answered}");
    assert_eq!(
        answered["askedBy"],
        json!({"name": "agent-1", "role": "agent"})
    );
    assert_eq!(
        answered["answeredBy"],
        json!({"name": "alice", "role": "reviewer"})
    );
    let declined = resolved("question", &done["done"]["declined"]).await;
    assert_eq!(declined["status"], "rejected", "{declined}");
    assert_eq!(
        declined["askedBy"],
        json!({"name": ROLES_AGENT2_NAME, "role": "agent"})
    );
    assert_eq!(
        declined["answeredBy"],
        json!({"name": "alice", "role": "reviewer"})
    );
    assert_eq!(hub.questions().pending_count(), 0);

    // The quorums: who voted what, in order, and whose vote ended each.
    let reviewer = |name: &str| json!({"name": name, "role": "reviewer"});
    let voters = |approval: &Value| -> Vec<(Value, Value)> {
        approval["votes"]
            .as_array()
            .unwrap_or_else(|| panic!("votes: {approval}"))
            .iter()
            .map(|vote| (vote["decided_by"].clone(), vote["decisions"].clone()))
            .collect()
    };
    let approved = json!([{"type": "approve"}]);
    for key in ["quorum", "twice"] {
        let approval = resolved("approval", &done["done"][key]).await;
        assert_eq!(approval["status"], "replied", "{approval}");
        assert_eq!(approval["decisions"], approved, "{approval}");
        assert_eq!(approval["answered_by"], reviewer("bob"), "{approval}");
        assert_eq!(
            voters(&approval),
            [
                (reviewer("alice"), approved.clone()),
                (reviewer("bob"), approved.clone())
            ],
            "{approval}"
        );
    }
    let vetoed = resolved("approval", &done["done"]["vetoed"]).await;
    assert_eq!(vetoed["status"], "replied", "{vetoed}");
    assert_eq!(vetoed["decisions"], json!([{"type": "reject"}]), "{vetoed}");
    assert_eq!(vetoed["answered_by"], reviewer("alice"), "{vetoed}");
    assert_eq!(
        voters(&vetoed),
        [(reviewer("alice"), json!([{"type": "reject"}]))],
        "{vetoed}"
    );
    // `always`: a grant of alice's, and the call it approved without asking.
    let always = resolved("approval", &done["done"]["always"]).await;
    assert_eq!(always["answered_by"], reviewer("alice"), "{always}");
    assert_eq!(always["granted"]["id"], done["done"]["always"], "{always}");
    let granted = resolved("approval", &done["done"]["granted"]).await;
    assert_eq!(granted["status"], "replied", "{granted}");
    assert_eq!(
        granted["auto_approved_by"][0]["id"], done["done"]["always"],
        "{granted}"
    );
    assert_eq!(hub.approvals().pending_count(), 0);
    shutdown.cancel();
}

/// The tokens of the server of answer links (`tests/ui/links.mjs`): the agent asks, alice
/// mints the links (the browser holds no token), bob completes a quorum over HTTP, the
/// admin reads the outcomes.
const LINKS_AGENT: &str = "ui-links-agent-token-0123456789";
const LINKS_REVIEWER: &str = "ui-links-alice-token-0123456789";
const LINKS_REVIEWER2: &str = "ui-links-bob-token-0123456789";
const LINKS_ADMIN: &str = "ui-links-admin-token-0123456789";
/// Limit of the answer links' browser run (it takes a few seconds).
const LINKS_TIMEOUT: Duration = Duration::from_secs(60);

/// A reviewer answers a question and approvals from their answer links, in a browser that
/// holds no token; a used link says who answered, a vote under a quorum waits, a refusal
/// reads as the server says it, a forged link is not valid (`tests/ui/links.mjs`).
#[test]
fn answer_links_answer_without_a_token() {
    in_browser(drive_links);
}

/// Serves askbus with an agent, two reviewers and an admin token (links signed by the
/// default random key); asks a question and three approvals (one plain, one that needs two
/// reviewers, one that names bob) as the agent, mints alice's links to them over HTTP, runs
/// `links.mjs` with their paths, then has bob decide the two alice could not end, and
/// reads the outcomes from the server.
async fn drive_links(package: PathBuf) {
    let shutdown = CancellationToken::new();
    let hub = RequestHub::new(Bus::new()).with_duties(Duties {
        never_the_asker: true,
    });
    let config = HttpConfig {
        tokens: vec![
            AccessToken::all_sessions(LINKS_ADMIN),
            AccessToken::new(LINKS_AGENT, Identity::new("agent-1", Role::Agent)),
            AccessToken::new(LINKS_REVIEWER, Identity::new("alice", Role::Reviewer)),
            AccessToken::new(LINKS_REVIEWER2, Identity::new("bob", Role::Reviewer)),
        ],
        ..HttpConfig::default()
    };
    let address = serve(hub.clone(), config, &shutdown).await;
    let url = format!("http://{address}");
    let http = reqwest::Client::new();
    let post = |token: &str, path: &str, body: Value| {
        call_json(
            http.post(format!("{url}{path}"))
                .bearer_auth(token)
                .json(&body),
        )
    };

    let question = post(
        LINKS_AGENT,
        "/question",
        json!({
            "sessionID": "ui-links",
            "questions": [{
                "question": "Ship the release?",
                "header": "Ship",
                "options": [
                    {"label": "Yes", "description": "ship it now"},
                    {"label": "No", "description": "not yet"},
                ],
            }],
        }),
    )
    .await;
    // A `deploy` approval under `review_configs`, as the agent asks it.
    let ask_approval = |review_configs: Value| {
        post(
            LINKS_AGENT,
            "/approval",
            json!({
                "session_id": "ui-links",
                "action_requests": [{"name": "deploy", "args": {"env": "production"}}],
                "review_configs": review_configs,
            }),
        )
    };
    let approval = ask_approval(json!([])).await;
    let quorum = ask_approval(json!([{"action_name": "deploy", "quorum": 2}])).await;
    let named = ask_approval(json!([{"action_name": "deploy", "reviewers": ["bob"]}])).await;
    let id = |request: &Value| request["id"].as_str().expect("an id").to_owned();
    let alice = json!({"name": "alice", "role": "reviewer"});
    let mut links = Vec::new();
    for (kind, request) in [
        ("question", &question),
        ("approval", &approval),
        ("approval", &quorum),
        ("approval", &named),
    ] {
        let link = post(
            LINKS_REVIEWER,
            &format!("/{kind}/{}/link", id(request)),
            json!({}),
        )
        .await;
        assert_eq!(link["acts_as"], alice, "{link}");
        let path = link["path"].as_str().expect("a path").to_owned();
        assert_eq!(
            path,
            format!("/answer/{}", link["token"].as_str().expect("a token"))
        );
        links.push(path);
    }

    let done = run_script(
        &package,
        "links.mjs",
        &[
            ("ASKBUS_UI_LINKS_URL", &url),
            ("ASKBUS_UI_QUESTION_LINK", &links[0]),
            ("ASKBUS_UI_APPROVAL_LINK", &links[1]),
            ("ASKBUS_UI_QUORUM_LINK", &links[2]),
            ("ASKBUS_UI_NAMED_LINK", &links[3]),
        ],
        LINKS_TIMEOUT,
    )
    .await;
    assert_eq!(done, json!({"done": true}));
    // Bob decides what alice's links could not end.
    let approve = json!({"decisions": [{"type": "approve"}]});
    for request in [&quorum, &named] {
        let path = format!("/approval/{}/reply", id(request));
        post(LINKS_REVIEWER2, &path, approve.clone()).await;
    }

    // What the page showed is what the server recorded: alice answered, through her links.
    let read = |kind: &str, request: &Value| {
        call_json(
            http.get(format!("{url}/{kind}/{}", id(request)))
                .bearer_auth(LINKS_ADMIN),
        )
    };
    let answered = read("question", &question).await;
    assert_eq!(answered["status"], "replied", "{answered}");
    assert_eq!(answered["answers"], json!([["Yes"]]), "{answered}");
    assert_eq!(answered["answeredBy"], alice, "{answered}");
    let approved = read("approval", &approval).await;
    assert_eq!(approved["status"], "replied", "{approved}");
    assert_eq!(approved["decisions"], approve["decisions"], "{approved}");
    assert_eq!(approved["answered_by"], alice, "{approved}");
    let bob = json!({"name": "bob", "role": "reviewer"});
    let agreed = read("approval", &quorum).await;
    assert_eq!(agreed["status"], "replied", "{agreed}");
    let voters: Vec<&Value> = agreed["votes"]
        .as_array()
        .unwrap_or_else(|| panic!("votes: {agreed}"))
        .iter()
        .map(|vote| &vote["decided_by"])
        .collect();
    assert_eq!(voters, [&alice, &bob], "{agreed}");
    // Had alice's refused approval counted, it alone would have ended this one.
    let refused = read("approval", &named).await;
    assert_eq!(refused["status"], "replied", "{refused}");
    assert_eq!(refused["answered_by"], bob, "{refused}");
    assert_eq!(hub.questions().pending_count(), 0);
    assert_eq!(hub.approvals().pending_count(), 0);
    shutdown.cancel();
}

/// Limit of the notifications' browser run (it takes a few seconds).
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(60);

/// Requests that arrive while the tab is hidden raise desktop notifications, once the
/// human opted in, and count in the tab's title (`tests/ui/notify.mjs`).
#[test]
fn the_web_ui_notifies_of_requests_while_hidden() {
    in_browser(drive_notify);
}

/// Serves askbus without tokens and runs `notify.mjs`, which asks its requests over HTTP
/// at the moments it needs them and approves one, as an agent and a reviewer elsewhere.
async fn drive_notify(package: PathBuf) {
    let shutdown = CancellationToken::new();
    let hub = RequestHub::new(Bus::new());
    let address = serve(hub.clone(), HttpConfig::default(), &shutdown).await;
    let url = format!("http://{address}");
    let done = run_script(
        &package,
        "notify.mjs",
        &[("ASKBUS_UI_NOTIFY_URL", &url)],
        NOTIFY_TIMEOUT,
    )
    .await;
    assert_eq!(done, json!({"done": true}));
    // The approvals the script decided (one while the tab was hidden).
    assert_eq!(hub.approvals().pending_count(), 0);
    shutdown.cancel();
}

/// Limit of the unrecorded answers' browser run (it takes a few seconds).
const UNRECORDED_TIMEOUT: Duration = Duration::from_secs(60);
/// The reviewer who mints the answer link of the unrecorded answers' run.
const UNRECORDED_REVIEWER: &str = "ui-unrecorded-alice-0123456789";

/// An answer, a decision and a link's answer that the store fails to commit: each card says
/// it was not recorded and the agent was given nothing, never "You answered", in the tab
/// that answered and in one that only watched; the agent gets `NotRecorded`
/// (`tests/ui/unrecorded.mjs`).
#[test]
fn the_web_ui_says_when_the_store_refused_an_answer() {
    in_browser(drive_unrecorded);
}

/// A memory store that fails to commit every outcome, as a full disk would.
struct RefusedOutcomes(MemoryStore);

impl StoreLayer for RefusedOutcomes {
    fn inner(&self) -> &dyn Store {
        &self.0
    }
    fn write(&self, write: Write) -> Ack {
        if !matches!(write, Write::Resolve { .. }) {
            return self.0.write(write);
        }
        let (sender, refused) = Ack::channel();
        let _ = sender.send(Err(StoreError::CommitFailed(
            "database or disk is full".to_owned(),
        )));
        refused
    }
}

/// Asks two questions and an approval in process on a hub whose store refuses outcomes,
/// serves it open (the page) and with a reviewer's token (who mints a link to the second
/// question), runs `unrecorded.mjs`, and checks the agent was handed none of the answers.
async fn drive_unrecorded(package: PathBuf) {
    let shutdown = CancellationToken::new();
    let hub = RequestHub::builder()
        .store(Arc::new(RefusedOutcomes(MemoryStore::new())) as Arc<dyn Store>)
        .build()
        .await
        .expect("the store opens");
    let session = "ui-unrecorded";
    let ask = |text: &str| {
        hub.questions()
            .ask(
                session,
                vec![QuestionInfo::new(
                    text,
                    "Ship",
                    [
                        QuestionOption::new("Yes", "go ahead"),
                        QuestionOption::new("No", "not now"),
                    ],
                )],
            )
            .submit()
            .expect("a valid question")
    };
    let on_page = ask("Ship the release?");
    let by_link = ask("Tag the release?");
    let approval = hub
        .approvals()
        .request(
            session,
            vec![Action::new("deploy", json!({"env": "production"}))],
        )
        .submit()
        .expect("a valid approval request");
    let (on_page_id, by_link_id, approval_id) = (
        on_page.id().to_string(),
        by_link.id().to_string(),
        approval.id().to_string(),
    );
    let open = serve(hub.clone(), HttpConfig::default(), &shutdown).await;
    let with_token = serve(
        hub.clone(),
        HttpConfig {
            tokens: vec![AccessToken::new(
                UNRECORDED_REVIEWER,
                Identity::new("alice", Role::Reviewer),
            )],
            ..HttpConfig::default()
        },
        &shutdown,
    )
    .await;
    let link = call_json(
        reqwest::Client::new()
            .post(format!("http://{with_token}/question/{by_link_id}/link"))
            .bearer_auth(UNRECORDED_REVIEWER)
            .json(&json!({})),
    )
    .await;
    let link = format!(
        "http://{with_token}{}",
        link["path"].as_str().expect("a link's path")
    );

    let done = run_script(
        &package,
        "unrecorded.mjs",
        &[
            ("ASKBUS_UI_UNRECORDED_URL", &format!("http://{open}")),
            ("ASKBUS_UI_UNRECORDED_QUESTION", &on_page_id),
            ("ASKBUS_UI_UNRECORDED_APPROVAL", &approval_id),
            ("ASKBUS_UI_UNRECORDED_LINK", &link),
        ],
        UNRECORDED_TIMEOUT,
    )
    .await;
    assert_eq!(done, json!({"done": true}));
    for (what, asked) in [("on the page", on_page), ("by the link", by_link)] {
        let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, asked)
            .await
            .expect("the agent is told");
        assert!(
            matches!(outcome, Err(AskError::NotRecorded(_))),
            "the question answered {what}: {outcome:?}"
        );
    }
    let decided = tokio::time::timeout(OUTCOME_TIMEOUT, approval)
        .await
        .expect("the agent is told");
    assert!(
        matches!(decided, Err(ApprovalError::NotRecorded(_))),
        "{decided:?}"
    );
    shutdown.cancel();
}

/// Limit of the deliveries' browser run (it takes about 15 s).
const DELIVERIES_TIMEOUT: Duration = Duration::from_secs(90);
/// The tokens of the deliveries' server with roles: an admin (who may read them) and a
/// reviewer (who may not).
const DELIVERIES_ADMIN: &str = "ui-deliveries-admin-0123456789";
const DELIVERIES_REVIEWER: &str = "ui-deliveries-alice-0123456789";
/// The webhooks' signing secret (the receiver does not check it).
const DELIVERIES_SECRET: &str = "whsec_C2FtcGxlLXNlY3JldC1mb3ItYXNrYnVzLXRlc3RzIQ==";
/// Quick retries, so a receiver that recovers is delivered to within 2 s, and one that
/// keeps failing is tried again while the page looks.
const DELIVERIES_RETRY: RetryPolicy = RetryPolicy {
    first: Duration::from_secs(1),
    longest: Duration::from_secs(2),
    window: Duration::from_secs(300),
};

/// An admin's page shows how the webhooks' deliveries stand, pending with their errors,
/// abandoned, or all delivered, kept current; a reviewer's shows nothing of them and is
/// not asked for another token (`tests/ui/deliveries.mjs`).
#[test]
fn the_web_ui_shows_webhook_deliveries_to_admins() {
    in_browser(drive_deliveries);
}

/// Serves askbus twice (without tokens, and with an admin's and a reviewer's) with a
/// webhook to one local receiver whose answer the script sets, runs `deliveries.mjs`, then
/// reads the deliveries the open server's store holds.
async fn drive_deliveries(package: PathBuf) {
    let shutdown = CancellationToken::new();
    let receiver = WebhookReceiver::start(&shutdown).await;
    let (open_hub, open_store, open_stats) = webhooked_hub(&receiver.hook, &shutdown).await;
    let open = serve(
        open_hub,
        HttpConfig {
            webhooks: Some(open_stats),
            ..HttpConfig::default()
        },
        &shutdown,
    )
    .await;
    let (auth_hub, _, auth_stats) = webhooked_hub(&receiver.hook, &shutdown).await;
    let auth = serve(
        auth_hub,
        HttpConfig {
            webhooks: Some(auth_stats),
            tokens: vec![
                AccessToken::all_sessions(DELIVERIES_ADMIN),
                AccessToken::new(DELIVERIES_REVIEWER, Identity::new("alice", Role::Reviewer)),
            ],
            ..HttpConfig::default()
        },
        &shutdown,
    )
    .await;
    let (open, auth) = (format!("http://{open}"), format!("http://{auth}"));
    // The name the deliveries list the webhook by: its origin and a fingerprint.
    let hook_name = Webhook::parse(&receiver.hook).unwrap().name();
    let screenshots = screenshot_dir();
    let done = run_script(
        &package,
        "deliveries.mjs",
        &[
            ("ASKBUS_UI_DELIVERIES_URL", &open),
            ("ASKBUS_UI_DELIVERIES_AUTH_URL", &auth),
            ("ASKBUS_UI_DELIVERIES_RECEIVER", &receiver.control),
            ("ASKBUS_UI_DELIVERIES_HOOK", &hook_name),
            ("ASKBUS_UI_DELIVERIES_ADMIN", DELIVERIES_ADMIN),
            ("ASKBUS_UI_DELIVERIES_REVIEWER", DELIVERIES_REVIEWER),
            (
                "ASKBUS_UI_SCREENSHOTS",
                screenshots.to_str().expect("a UTF-8 target directory"),
            ),
        ],
        DELIVERIES_TIMEOUT,
    )
    .await;
    assert_eq!(done, json!({"done": true}));
    // What the page showed last: of the four questions' messages, the two the receiver
    // answered 410 abandoned, the two it answered 503 and then 204 delivered.
    let deliveries = open_store
        .deliveries(DeliveryQuery {
            limit: 10,
            ..DeliveryQuery::default()
        })
        .await
        .expect("the deliveries");
    let states: Vec<DeliveryState> = deliveries.iter().map(|delivery| delivery.state).collect();
    assert_eq!(
        states,
        [
            DeliveryState::Abandoned,
            DeliveryState::Delivered,
            DeliveryState::Abandoned,
            DeliveryState::Delivered,
        ],
        "newest first: {deliveries:?}"
    );
    assert!(
        deliveries[1].attempts > 1 && deliveries[3].attempts > 1,
        "the 503s were retried: {deliveries:?}"
    );
    shutdown.cancel();
}

/// A hub over a fresh memory store whose request events go to `hook` (with
/// [`DELIVERIES_RETRY`]); the store, and the dispatcher's counters for `/metrics`.
async fn webhooked_hub(
    hook: &str,
    shutdown: &CancellationToken,
) -> (RequestHub, Arc<dyn Store>, Arc<DeliveryStats>) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let hub = RequestHub::builder()
        .bus(Bus::new())
        .store(Arc::clone(&store))
        .build()
        .await
        .expect("a hub over a memory store");
    let dispatcher = Dispatcher::new(
        Arc::clone(&store),
        vec![Webhook::parse(hook).expect("the receiver's URL")],
        WebhookSecret::parse(DELIVERIES_SECRET).expect("a webhook secret"),
    )
    .with_retry(DELIVERIES_RETRY);
    let hub = hub.with_notifier(dispatcher.notifier());
    let stats = dispatcher.stats();
    dispatcher.spawn(shutdown.clone());
    (hub, store, stats)
}

/// A local webhook receiver answering every post with the status last `PUT` to its control
/// route (503 at first), so the script decides when it recovers.
struct WebhookReceiver {
    /// Where webhooks post: `http://127.0.0.1:PORT/hook`.
    hook: String,
    /// Where the script `PUT`s the status to answer with (`204`, `410`, `503`).
    control: String,
}

impl WebhookReceiver {
    async fn start(shutdown: &CancellationToken) -> Self {
        let answer = Arc::new(AtomicU16::new(503));
        let posted = Arc::clone(&answer);
        let router = axum::Router::new()
            .route(
                "/hook",
                axum::routing::post(move || {
                    let status = posted.load(Ordering::SeqCst);
                    async move {
                        axum::http::StatusCode::from_u16(status)
                            .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR)
                    }
                }),
            )
            .route(
                "/answer",
                axum::routing::put(move |body: String| async move {
                    match body.trim().parse::<u16>() {
                        Ok(status) if axum::http::StatusCode::from_u16(status).is_ok() => {
                            answer.store(status, Ordering::SeqCst);
                            axum::http::StatusCode::NO_CONTENT
                        }
                        _ => axum::http::StatusCode::BAD_REQUEST,
                    }
                }),
            );
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("the bound address");
        tokio::spawn(
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown.clone().cancelled_owned())
                .into_future(),
        );
        Self {
            hook: format!("http://{address}/hook"),
            control: format!("http://{address}/answer"),
        }
    }
}

/// Runs `node <script>` in the browser tests' npm `package` with `env` (and chromium's
/// path), within `limit`: its one line on stdout, as JSON. Its log (stderr) is in the
/// panic message of a failure.
async fn run_script(package: &Path, script: &str, env: &[(&str, &str)], limit: Duration) -> Value {
    let run = Command::new("node")
        .arg(script)
        .current_dir(package)
        .envs(env.iter().copied())
        .env("ASKBUS_UI_CHROMIUM", CHROMIUM)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(limit, run)
        .await
        .unwrap_or_else(|_| panic!("{script} took longer than {limit:?}"))
        .unwrap_or_else(|error| panic!("run node {script}: {error}"));
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{script} failed ({}); log:\n{log}",
        output.status
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!("{script} printed no `done` line ({error}): {stdout}; log:\n{log}")
    })
}

/// Sends `request` to the API: its JSON answer, which must be a success.
async fn call_json(request: reqwest::RequestBuilder) -> Value {
    let response = request.send().await.expect("an answer of the API");
    let status = response.status();
    let url = response.url().clone();
    let body = response.text().await.expect("a body");
    assert!(status.is_success(), "{url}: {status} {body}");
    serde_json::from_str(&body).unwrap_or_else(|error| panic!("{url}: {error}: {body}"))
}

/// Which served askbus a case is asked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// No authentication (reached directly or through the proxy).
    Open,
    /// Bearer token required.
    Auth,
    /// Keeps everything in SQLite and can be restarted: its cases are asked as an agent
    /// in another process asks (nothing here waits on them), so a restart loses no asker.
    Durable,
}

/// One request the agent asks when the script says so.
struct Case {
    server: Server,
    session: &'static str,
    ask: Ask,
    timeout: Timeout,
    /// The request's `locale`, if the agent names one.
    locale: Option<&'static str>,
    /// What the agent must receive: answers or decisions, or the error's kind and reason.
    expected: Value,
}

/// What a case asks for.
enum Ask {
    /// `ask()`: questions.
    Questions(Vec<QuestionInfo>),
    /// `request_approval()`: tool calls to review.
    Approval {
        actions: Vec<Action>,
        review_configs: Vec<ReviewConfig>,
    },
}

/// A case the agent asked and waits on.
enum Pending {
    Question(PendingQuestion),
    Approval(PendingApproval),
    /// A question asked on the durable server, whose outcome is read from that server's
    /// hub of the moment.
    Durable(QuestionId),
}

/// The cases `browser.mjs` asks for, by key.
fn case(key: &str) -> Option<Case> {
    let option = |label: &str, description: &str| QuestionOption::new(label, description);
    let yes_no = |question: &str, header: &str| {
        QuestionInfo::new(
            question,
            header,
            [option("Yes", "go ahead"), option("No", "not now")],
        )
        .options_only()
    };
    let database = || {
        QuestionInfo::new(
            "Which database should the service use?",
            "Database",
            [
                option("Postgres", "the production default"),
                option("SQLite", "one file, no server"),
            ],
        )
        .options_only()
    };
    let answers = |answers: Value| json!({ "answers": answers });
    let open = |session, questions, expected| Case {
        server: Server::Open,
        session,
        ask: Ask::Questions(questions),
        timeout: Timeout::Default,
        locale: None,
        expected,
    };
    let approval = |session, actions, review_configs, expected| Case {
        server: Server::Open,
        session,
        ask: Ask::Approval {
            actions,
            review_configs,
        },
        timeout: Timeout::Default,
        locale: None,
        expected,
    };
    let cancelled = || json!({"error": {"kind": "cancelled"}});
    let timed_out = || json!({"error": {"kind": "timed_out"}});
    Some(match key {
        "single" => open("ui-single", vec![database()], answers(json!([["SQLite"]]))),
        "multi" => open(
            "ui-multi",
            vec![
                QuestionInfo::new(
                    "Which signals should be exported?",
                    "Telemetry",
                    [
                        option("Logs", "structured, one line per event"),
                        option("Metrics", "counters and histograms"),
                        option("Traces", "spans across services"),
                    ],
                )
                .multiple(),
                // Seed 000's free-text option, shown as the question's "Other".
                QuestionInfo::new(
                    "Which compression should responses use?",
                    "Compression",
                    [
                        option("gzip", "everywhere"),
                        option("zstd", "smaller, newer"),
                        QuestionOption::free_text("Khác", "Nhập giá trị tùy chỉnh"),
                    ],
                ),
                QuestionInfo::new(
                    "Which region should host it?",
                    "Region",
                    [option("eu-west", "Ireland"), option("us-east", "Virginia")],
                )
                .options_only(),
            ],
            answers(json!([
                ["Logs", "Traces", "Profiles"],
                ["brotli level 5"],
                ["[No preference]"]
            ])),
        ),
        "reject" => open(
            "ui-reject",
            vec![yes_no("Rename the public API now?", "API")],
            json!({"error": {"kind": "rejected", "reason": "Not now, ask me after lunch"}}),
        ),
        "tabs" => open("ui-tabs", vec![database()], answers(json!([["Postgres"]]))),
        "in_flight" => open(
            "ui-in-flight",
            vec![database()],
            answers(json!([["Postgres"]])),
        ),
        "in_flight_marker" => open(
            "ui-in-flight",
            vec![yes_no("Open a pull request?", "PR")],
            cancelled(),
        ),
        "resync1" => open(
            "ui-resync",
            vec![yes_no("Squash the commits?", "Squash")],
            cancelled(),
        ),
        "resync2" => open(
            "ui-resync",
            vec![yes_no("Bump the version?", "Version")],
            answers(json!([["Yes"]])),
        ),
        "resync3" => open(
            "ui-resync",
            vec![yes_no("Update the changelog?", "Changelog")],
            cancelled(),
        ),
        "reload1" => open(
            "ui-reload",
            vec![
                QuestionInfo::new(
                    "Where should it deploy?",
                    "Target",
                    [
                        option("Staging", "the test cluster"),
                        option("Production", "real users"),
                    ],
                )
                .multiple()
                .options_only(),
                QuestionInfo::new(
                    "When should it deploy?",
                    "When",
                    [option("Now", ""), option("Tonight", "after 22:00")],
                ),
            ],
            answers(json!([["Staging"], ["Friday 18:00"]])),
        ),
        "reload2" => open(
            "ui-reload",
            vec![yes_no("Merge the dependency update?", "Merge")],
            answers(json!([["Yes"]])),
        ),
        "reload3" => open(
            "ui-reload",
            vec![yes_no("Run the full test suite first?", "Tests")],
            cancelled(),
        ),
        "drop1" => open(
            "ui-drop",
            vec![
                QuestionInfo::new(
                    "What should happen to the old migrations?",
                    "Migrations",
                    [
                        option("Keep", "leave them"),
                        option("Delete", "squash them"),
                    ],
                )
                .options_only(),
            ],
            answers(json!([["Keep"]])),
        ),
        "drop2" => open(
            "ui-drop",
            vec![
                QuestionInfo::new(
                    "What should happen to the build cache?",
                    "Cache",
                    [option("Keep", "faster"), option("Delete", "cleaner")],
                )
                .options_only(),
            ],
            answers(json!([["Delete"]])),
        ),
        "drop3" => open(
            "ui-drop",
            vec![yes_no("Notify the team now?", "Notify")],
            json!({"error": {"kind": "rejected", "reason": null}}),
        ),
        "phone" => open(
            "ui-phone",
            vec![QuestionInfo::new(
                "When should the report be ready?",
                "Deadline",
                [
                    option("Today", "by 18:00"),
                    option("Tomorrow", "first thing"),
                ],
            )],
            answers(json!([["Tomorrow"]])),
        ),
        "locale_vi" | "locale_zh" => open(
            if key == "locale_vi" {
                "ui-locale-vi"
            } else {
                "ui-locale-zh"
            },
            vec![QuestionInfo::new(
                "Which region should host the data?",
                "Region",
                [option("EU", "Frankfurt"), option("US", "Virginia")],
            )],
            answers(json!([[if key == "locale_vi" { "EU" } else { "亚洲" }]])),
        ),
        "filter_a" => open(
            "ui-filter-a",
            vec![yes_no("Publish the crate?", "Release")],
            cancelled(),
        ),
        "filter_b" => open(
            "ui-filter-b",
            vec![yes_no("Tag the release?", "Release")],
            cancelled(),
        ),
        "approval" => approval(
            "ui-approval",
            vec![
                Action::new(
                    "send_email",
                    json!({"to": "team@example.com", "subject": "Release 1.2 is out"}),
                )
                .with_description("Announce the release to the team"),
                Action::new(
                    "execute_trade",
                    json!({"symbol": "VNM", "quantity": 100, "side": "buy"}),
                )
                .with_description("Buy 100 VNM at market price"),
                Action::new(
                    "delete_rows",
                    json!({"table": "users", "where": "last_login < '2020-01-01'"}),
                )
                .with_description("Delete users inactive since 2020"),
            ],
            // send_email has no config: every decision is allowed.
            vec![
                ReviewConfig::new(
                    "execute_trade",
                    [
                        DecisionType::Approve,
                        DecisionType::Edit,
                        DecisionType::Reject,
                    ],
                ),
                ReviewConfig::new("delete_rows", [DecisionType::Reject, DecisionType::Respond]),
            ],
            json!({"decisions": [
                {"type": "respond", "message": "Send it after the release notes are out"},
                {"type": "edit", "edited_action": {
                    "name": "execute_trade",
                    "args": {"symbol": "VNM", "quantity": 10, "side": "buy"},
                }},
                {"type": "reject", "message": "Keep the users table"},
            ]}),
        ),
        "conflict" => approval(
            "ui-conflict",
            vec![
                Action::new("create_branch", json!({"name": "release-1.3"})),
                Action::new("open_pull_request", json!({"base": "main", "head": "release-1.3"})),
            ],
            vec![],
            json!({"decisions": [{"type": "approve"}, {"type": "approve"}]}),
        ),
        // One call three times: granted `always`, then approved by the grant, then (the
        // grant revoked) asked again and approved once.
        "grant_first" | "grant_second" | "grant_third" => approval(
            "ui-grants",
            vec![Action::new(
                "bash",
                json!({"command": "git status", "cwd": "/srv/app"}),
            )],
            vec![],
            match key {
                "grant_first" => json!({"decisions": [{"type": "approve"}], "granted": {
                    "tool": "bash", "args": [{"command": "git status", "cwd": "/srv/app"}],
                }}),
                "grant_second" => json!({"decisions": [{"type": "approve"}], "auto_approved_by": [{
                    "tool": "bash", "args": [{"command": "git status", "cwd": "/srv/app"}],
                }]}),
                _ => json!({"decisions": [{"type": "approve"}]}),
            },
        ),
        "phone_approval" => approval(
            LONG_SESSION,
            vec![
                Action::new(
                    "deploy_release",
                    json!({
                        "artifact": "https://artifacts.example.com/releases/askbus/1.3.0/askbus-1.3.0-x86_64-unknown-linux-gnu.tar.gz",
                        "targets": ["eu-west-1", "us-east-1"],
                    }),
                )
                .with_tool_use_id("tc-p1"),
            ],
            vec![ReviewConfig::new(
                "deploy_release",
                [DecisionType::Approve, DecisionType::Reject],
            )],
            json!({"decisions": [{
                "type": "reject",
                "message": "Wait for the build sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            }]}),
        ),
        "expiry_approval" => Case {
            timeout: Timeout::After(EXPIRY),
            ..approval(
                "ui-expiry",
                vec![Action::new("restart_service", json!({"service": "api"})).with_tool_use_id("tc-e1")],
                vec![],
                timed_out(),
            )
        },
        "expiry_question" => Case {
            timeout: Timeout::After(EXPIRY),
            ..open(
                "ui-expiry",
                vec![yes_no("Roll back the last deploy?", "Rollback")],
                timed_out(),
            )
        },
        "timeline_question" => open(
            "ui-timeline",
            vec![
                QuestionInfo::new(
                    "Which index should the report cover?",
                    "Index",
                    [
                        option("VNINDEX", "the whole market"),
                        option("VN30", "the 30 largest"),
                    ],
                )
                .options_only(),
            ],
            answers(json!([["VN30"]])),
        ),
        "timeline_approval" => approval(
            "ui-timeline",
            vec![Action::new(
                "publish_report",
                json!({"title": "The market today", "channel": "#markets"}),
            )],
            vec![ReviewConfig::new(
                "publish_report",
                [DecisionType::Approve, DecisionType::Reject],
            )],
            json!({"decisions": [{"type": "approve"}]}),
        ),
        "reject_all_q1" => open(
            "ui-reject-all",
            vec![yes_no("Drop the staging database?", "Drop")],
            json!({"error": {"kind": "rejected", "reason": "Stop, the agent is looping"}}),
        ),
        "reject_all_q2" => open(
            "ui-reject-all",
            vec![yes_no("Drop the backup database?", "Drop")],
            json!({"error": {"kind": "rejected", "reason": "Stop, the agent is looping"}}),
        ),
        "reject_all_approval" => approval(
            "ui-reject-all",
            vec![Action::new("drop_table", json!({"table": "users"}))],
            vec![ReviewConfig::new(
                "drop_table",
                [DecisionType::Approve, DecisionType::Reject],
            )],
            json!({"decisions": [{"type": "reject", "message": "Stop, the agent is looping"}]}),
        ),
        // Its review config does not allow `reject`: the request is cancelled instead.
        "reject_all_locked" => approval(
            "ui-reject-all",
            vec![Action::new("restart_service", json!({"service": "db"}))],
            vec![ReviewConfig::new(
                "restart_service",
                [DecisionType::Approve, DecisionType::Edit],
            )],
            cancelled(),
        ),
        "reject_all_other" => open(
            "ui-reject-all-other",
            vec![yes_no("Keep this one?", "Keep")],
            cancelled(),
        ),
        // Bidi overrides and controls in every field the agent writes: the page must show
        // them, not let them reorder the text (`report\u{202e}xcod.exe` reads `reportexe.docx`).
        // So are variation selectors and other default-ignorable characters, which can
        // carry hidden bytes after a visible word, and a run of no-break spaces, which
        // would push what follows out of sight.
        "hidden_approval" => approval(
            HIDDEN_SESSION,
            vec![
                Action::new("open\u{202e}fdp.exe", hidden_args())
                    .with_description(
                        "Open report\u{202e}xcod.exe\u{0007} for the user\u{00ad}\u{e0041}\u{e0042}\u{e0100}\u{fe00}\u{034f}",
                    ),
            ],
            vec![],
            json!({"decisions": [{"type": "edit", "edited_action": {
                "name": "open\u{202e}fdp.exe",
                "args": hidden_args(),
            }}]}),
        ),
        "hidden_question" => open(
            HIDDEN_SESSION,
            vec![
                QuestionInfo::new(
                    "Rename report\u{202e}xcod.exe? \u{1f469}\u{1f3fd}\u{200d}\u{1f4bb}",
                    "Re\u{2067}name",
                    [option("Yes\u{200f}\u{202d}", "rename it"), option("No", "")],
                )
                .options_only(),
            ],
            answers(json!([["Yes\u{200f}\u{202d}"]])),
        ),
        "restart_question" => Case {
            server: Server::Durable,
            ..open(
                "ui-restart",
                vec![
                    QuestionInfo::new(
                        "What should happen to the merged branches?",
                        "Branches",
                        [
                            option("Delete them", "they are merged"),
                            option("Keep them", "for the record"),
                        ],
                    )
                    .options_only(),
                ],
                answers(json!([["Delete them"]])),
            )
        },
        // The agent asks in Chinese; the reviewer's browser speaks English: the card's
        // controls are in the reviewer's language, not the agent's choice.
        "locale_agent" => Case {
            locale: Some("zh-CN"),
            ..approval(
                "ui-locale-agent",
                vec![Action::new("deploy", json!({"env": "prod"}))],
                vec![],
                json!({"decisions": [{"type": "approve"}]}),
            )
        },
        "auth" => Case {
            server: Server::Auth,
            session: "ui-auth",
            timeout: Timeout::Default,
            locale: None,
            ask: Ask::Questions(vec![
                QuestionInfo::new(
                    "Go ahead with the migration plan?",
                    "Plan",
                    [
                        option("Approve the plan", "run it tonight"),
                        option("Revise it", "I will comment first"),
                    ],
                )
                .options_only(),
            ]),
            expected: answers(json!([["Approve the plan"]])),
        },
        _ => return None,
    })
}

/// The agent's state: the requests it asked and still holds.
struct Agent {
    open: RequestHub,
    auth: RequestHub,
    /// The server of the flood, and how many requests it was asked so far.
    flood: RequestHub,
    flooded: usize,
    /// The server that keeps everything in SQLite, as it runs now.
    durable: Durable,
    pending: HashMap<String, (Pending, Value)>,
    /// Keys whose outcome was checked (or which were cancelled), for the final tally.
    settled: Vec<String>,
    proxy_up: watch::Sender<bool>,
    /// Where the open server is, for the steps the agent posts over HTTP.
    open_url: String,
    http: reqwest::Client,
}

impl Agent {
    /// Answers one request line of the script: `Ok` payload or an error message for it.
    async fn handle(&mut self, request: &Value) -> Result<Value, String> {
        let key = request["key"].as_str().unwrap_or_default().to_owned();
        match request["op"].as_str() {
            Some("ask") => {
                let case = case(&key).ok_or_else(|| format!("no case {key:?}"))?;
                let hub = match case.server {
                    Server::Open => &self.open,
                    Server::Auth => &self.auth,
                    Server::Durable => &self.durable.hub,
                };
                let (pending, request) = match case.ask {
                    Ask::Questions(questions) if case.server == Server::Durable => {
                        let mut pending = hub
                            .questions()
                            .ask(case.session, questions)
                            .timeout(case.timeout)
                            .submit()
                            .map_err(|error| format!("ask {key}: {error}"))?;
                        pending
                            .recorded()
                            .await
                            .map_err(|error| format!("record {key}: {error}"))?;
                        let request = pending.detach();
                        let id = request.id;
                        (Pending::Durable(id), serde_json::to_value(request.as_ref()))
                    }
                    Ask::Questions(questions) => {
                        let mut asking = hub.questions().ask(case.session, questions);
                        if let Some(locale) = case.locale {
                            asking = asking.locale(locale);
                        }
                        let pending = asking
                            .timeout(case.timeout)
                            .submit()
                            .map_err(|error| format!("ask {key}: {error}"))?;
                        let request = serde_json::to_value(pending.request().as_ref());
                        (Pending::Question(pending), request)
                    }
                    Ask::Approval {
                        actions,
                        review_configs,
                    } => {
                        let mut asking = hub.approvals().request(case.session, actions);
                        if let Some(locale) = case.locale {
                            asking = asking.locale(locale);
                        }
                        let pending = asking
                            .review(review_configs)
                            .timeout(case.timeout)
                            .submit()
                            .map_err(|error| format!("ask {key}: {error}"))?;
                        let request = serde_json::to_value(pending.request().as_ref());
                        (Pending::Approval(pending), request)
                    }
                };
                let request = request.map_err(|error| error.to_string())?;
                if self
                    .pending
                    .insert(key.clone(), (pending, case.expected))
                    .is_some()
                {
                    return Err(format!("case {key} was asked twice"));
                }
                Ok(request)
            }
            Some("outcome") => {
                let (pending, expected) = self
                    .pending
                    .remove(&key)
                    .ok_or_else(|| format!("case {key} is not pending"))?;
                let outcome =
                    tokio::time::timeout(OUTCOME_TIMEOUT, pending.outcome(&self.durable.hub))
                        .await
                        .map_err(|_| format!("case {key}: the agent got nothing"))?;
                if outcome != expected {
                    return Err(format!(
                        "case {key}: the agent got {outcome}, expected {expected}"
                    ));
                }
                self.settled.push(key);
                Ok(outcome)
            }
            Some("cancel") => {
                let (pending, expected) = self
                    .pending
                    .remove(&key)
                    .ok_or_else(|| format!("case {key} is not pending"))?;
                if expected != json!({"error": {"kind": "cancelled"}}) {
                    return Err(format!("case {key} expects {expected}, not a cancel"));
                }
                // Dropping the future is how an agent gives up: the question is cancelled.
                drop(pending);
                self.settled.push(key);
                Ok(json!(true))
            }
            Some("step") => {
                let session = request["session"]
                    .as_str()
                    .ok_or("`step` needs a `session`")?;
                let base = match request["server"].as_str() {
                    Some("durable") => self.durable.url(),
                    _ => self.open_url.clone(),
                };
                let url = format!("{base}/session/{session}/step");
                let response = self
                    .http
                    .post(url)
                    .json(&request["step"])
                    .send()
                    .await
                    .map_err(|error| format!("post the step: {error}"))?;
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                if status != reqwest::StatusCode::OK || body != "true" {
                    return Err(format!("the step was refused: {status} {body}"));
                }
                Ok(json!(true))
            }
            Some("flood") => {
                let count = request["count"]
                    .as_u64()
                    .ok_or("`flood` needs a numeric `count`")?;
                for _ in 0..count {
                    self.flood_one()?;
                }
                Ok(json!({ "total": self.flooded }))
            }
            Some("restart") => {
                self.durable.restart().await?;
                Ok(json!(true))
            }
            Some("proxy") => {
                let up = request["up"]
                    .as_bool()
                    .ok_or("`proxy` needs a boolean `up`")?;
                self.proxy_up.send_replace(up);
                Ok(json!(true))
            }
            other => Err(format!("unknown op {other:?}")),
        }
    }
}

impl Agent {
    /// One more request of a runaway agent on the flood server, left pending (detached):
    /// a question, or every `FLOOD_APPROVAL_EVERY`th an approval, in one of
    /// `FLOOD_SESSIONS` sessions in turn.
    fn flood_one(&mut self) -> Result<(), String> {
        let n = self.flooded;
        let session = format!("ui-flood-{:02}", n % FLOOD_SESSIONS);
        if n.is_multiple_of(FLOOD_APPROVAL_EVERY) {
            let action = Action::new("delete_rows", json!({"table": format!("t{n}")}));
            let pending = self
                .flood
                .approvals()
                .request(session, vec![action])
                .timeout(Timeout::Never)
                .submit()
                .map_err(|error| format!("flood approval {n}: {error}"))?;
            drop(pending.detach());
        } else {
            let question = QuestionInfo::new(
                format!("Flood question {n}: go on?"),
                "Flood",
                [
                    QuestionOption::new("Yes", "go on"),
                    QuestionOption::new("No", "stop"),
                ],
            );
            let pending = self
                .flood
                .questions()
                .ask(session, vec![question])
                .timeout(Timeout::Never)
                .submit()
                .map_err(|error| format!("flood question {n}: {error}"))?;
            drop(pending.detach());
        }
        self.flooded += 1;
        Ok(())
    }
}

impl Pending {
    /// Waits for what the agent receives, as the script compares it (`durable`: the
    /// durable server's hub, for its cases).
    async fn outcome(self, durable: &RequestHub) -> Value {
        match self {
            Self::Question(pending) => question_outcome_json(pending.await),
            Self::Approval(pending) => approval_outcome_json(pending.await),
            Self::Durable(id) => match durable.questions().wait(id).await {
                Ok(Outcome::Replied(answers)) => json!({ "answers": answers }),
                other => json!({"error": {"kind": format!("{other:?}")}}),
            },
        }
    }
}

/// The server that keeps its requests and histories in a SQLite file, as `askbus` does by
/// default, on a fixed address so that a page reconnects to it after a restart.
struct Durable {
    /// The SQLite file.
    path: PathBuf,
    /// Where it listens, the same after a restart.
    address: SocketAddr,
    /// Its requests, as the agent asks them.
    hub: RequestHub,
    /// Stops this run of it (its streams too).
    shutdown: CancellationToken,
    /// This run's server task.
    served: JoinHandle<std::io::Result<()>>,
}

impl Durable {
    /// Opens the store at `path` and serves it on `address` (a fresh port for `None`).
    async fn start(path: PathBuf, address: Option<SocketAddr>) -> Result<Self, String> {
        // A restarted server's file is unlocked once the last handle of the old store is
        // gone, which the old run's tasks let go of as they end.
        let store =
            crate::support::until_ok(|| async { askbus_store::SqliteStore::open(&path) }).await;
        let store: std::sync::Arc<dyn askbus_store::Store> = std::sync::Arc::new(store);
        let bus = askbus_store::resume_bus(askbus::bus::BusConfig::default(), store.clone())
            .await
            .map_err(|error| error.to_string())?;
        let hub = RequestHub::builder()
            .bus(bus)
            .store(store)
            .build()
            .await
            .map_err(|error| error.to_string())?;
        let listener = TcpListener::bind(address.unwrap_or(SocketAddr::from(([127, 0, 0, 1], 0))))
            .await
            .map_err(|error| format!("bind the durable server: {error}"))?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let shutdown = CancellationToken::new();
        let config = HttpConfig::default();
        let guard = askbus_http::SiteGuard::new(address, &config);
        let app =
            askbus_http::router(hub.clone(), config, shutdown.clone()).merge(askbus_ui::router());
        let app = askbus_http::guarded(app, guard);
        let served = tokio::spawn(
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.clone().cancelled_owned())
                .into_future(),
        );
        Ok(Self {
            path,
            address,
            hub,
            shutdown,
            served,
        })
    }

    fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Stops this run (ending its streams; the pages see the server go away) and starts
    /// another on the same file and address.
    async fn restart(&mut self) -> Result<(), String> {
        self.shutdown.cancel();
        (&mut self.served)
            .await
            .map_err(|error| format!("the durable server's task: {error}"))?
            .map_err(|error| format!("the durable server: {error}"))?;
        let placeholder = RequestHub::new(Bus::new());
        drop(std::mem::replace(&mut self.hub, placeholder));
        *self = Self::start(self.path.clone(), Some(self.address)).await?;
        Ok(())
    }
}

/// What the agent received for a question.
fn question_outcome_json(outcome: Result<Vec<Vec<String>>, AskError>) -> Value {
    match outcome {
        Ok(answers) => json!({ "answers": answers }),
        Err(AskError::Rejected { reason }) => {
            json!({"error": {"kind": "rejected", "reason": reason}})
        }
        Err(AskError::TimedOut) => json!({"error": {"kind": "timed_out"}}),
        Err(AskError::DefaultApplied { answers }) => {
            json!({"error": {"kind": "default_applied", "answers": answers}})
        }
        Err(AskError::Cancelled) => json!({"error": {"kind": "cancelled"}}),
        Err(AskError::Invalid(error)) => {
            json!({"error": {"kind": "invalid", "reason": error.to_string()}})
        }
        Err(AskError::NotRecorded(why)) => {
            json!({"error": {"kind": "not_recorded", "reason": why.to_string()}})
        }
        Err(AskError::OverQuota(exceeded)) => {
            json!({"error": {"kind": "over_quota", "reason": exceeded.to_string()}})
        }
        Err(AskError::NotAllowed(refused)) => {
            json!({"error": {"kind": "not_allowed", "reason": refused.to_string()}})
        }
    }
}

/// What the agent received for an approval: the whole reply, exactly as delivered.
fn approval_outcome_json(outcome: Result<ApprovalReply, ApprovalError>) -> Value {
    match outcome {
        Ok(reply) => {
            let mut reply =
                serde_json::to_value(reply).unwrap_or_else(|error| json!(error.to_string()));
            // A grant's id and time differ every run: what the agent is checked for is
            // which calls it covers.
            let covers =
                |grant: &mut Value| *grant = json!({"tool": grant["tool"], "args": grant["args"]});
            if let Some(granted) = reply.get_mut("granted") {
                covers(granted);
            }
            if let Some(Value::Array(grants)) = reply.get_mut("auto_approved_by") {
                grants.iter_mut().for_each(covers);
            }
            reply
        }
        Err(ApprovalError::TimedOut) => json!({"error": {"kind": "timed_out"}}),
        Err(ApprovalError::Cancelled) => json!({"error": {"kind": "cancelled"}}),
        Err(ApprovalError::Invalid(error)) => {
            json!({"error": {"kind": "invalid", "reason": error.to_string()}})
        }
        Err(ApprovalError::NotRecorded(why)) => {
            json!({"error": {"kind": "not_recorded", "reason": why.to_string()}})
        }
        Err(ApprovalError::OverQuota(exceeded)) => {
            json!({"error": {"kind": "over_quota", "reason": exceeded.to_string()}})
        }
        Err(ApprovalError::NotAllowed(refused)) => {
            json!({"error": {"kind": "not_allowed", "reason": refused.to_string()}})
        }
    }
}

/// Serves askbus three ways, runs `browser.mjs` and answers its agent requests.
async fn drive(package: PathBuf) {
    let shutdown = CancellationToken::new();
    let open = RequestHub::new(Bus::new());
    let auth = RequestHub::new(Bus::new());
    let flood = RequestHub::new(Bus::new());
    let flood_address = serve(flood.clone(), HttpConfig::default(), &shutdown).await;
    let durable_dir = tempfile::tempdir().expect("a directory for the durable server");
    let durable = Durable::start(durable_dir.path().join("askbus.db"), None)
        .await
        .expect("the durable server starts");
    let durable_url = durable.url();
    let (proxy_up, proxy_watch) = watch::channel(true);
    let proxy_listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the proxy");
    let proxy_address = proxy_listener.local_addr().expect("the proxy's address");
    // The page behind the proxy names the proxy's address as its host.
    let open_config = HttpConfig {
        allowed_hosts: vec![proxy_address.to_string().parse().expect("a host")],
        ..HttpConfig::default()
    };
    let open_address = serve(open.clone(), open_config, &shutdown).await;
    tokio::spawn(proxy(proxy_listener, open_address, proxy_watch));
    let auth_config = HttpConfig {
        tokens: vec![AccessToken::all_sessions(TOKEN)],
        ..HttpConfig::default()
    };
    let auth_address = serve(auth.clone(), auth_config, &shutdown).await;

    let screenshots = screenshot_dir();
    // Old failure screenshots would mislead: start from an empty directory.
    let _ = std::fs::remove_dir_all(&screenshots);
    std::fs::create_dir_all(&screenshots).expect("create the screenshot directory");

    let mut child = Command::new("node")
        .arg("browser.mjs")
        .current_dir(package)
        .env("ASKBUS_UI_URL", format!("http://{open_address}"))
        .env("ASKBUS_UI_PROXY_URL", format!("http://{proxy_address}"))
        .env("ASKBUS_UI_AUTH_URL", format!("http://{auth_address}"))
        .env("ASKBUS_UI_FLOOD_URL", format!("http://{flood_address}"))
        .env("ASKBUS_UI_DURABLE_URL", &durable_url)
        .env("ASKBUS_UI_TOKEN", TOKEN)
        .env("ASKBUS_UI_CHROMIUM", CHROMIUM)
        .env("ASKBUS_UI_SCREENSHOTS", &screenshots)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node browser.mjs");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    // The script's log, passed on as it comes (shown by the test harness on failure).
    let log = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut all = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
            all.push_str(&line);
            all.push('\n');
        }
        all
    });

    let mut agent = Agent {
        open: open.clone(),
        auth: auth.clone(),
        flood: flood.clone(),
        flooded: 0,
        durable,
        pending: HashMap::new(),
        settled: Vec::new(),
        proxy_up,
        open_url: format!("http://{open_address}"),
        http: reqwest::Client::new(),
    };
    let exchange = async {
        let mut lines = BufReader::new(stdout).lines();
        loop {
            let line = lines
                .next_line()
                .await
                .map_err(|error| format!("read node's stdout: {error}"))?
                .ok_or("node closed its stdout before its `done` line")?;
            let message: Value = serde_json::from_str(&line)
                .map_err(|error| format!("node printed non-JSON ({error}): {line}"))?;
            if let Some(done) = message.get("done") {
                return Ok::<Value, String>(done.clone());
            }
            let reply = match agent.handle(&message).await {
                Ok(ok) => json!({"rpc": message["rpc"], "ok": ok}),
                Err(error) => json!({"rpc": message["rpc"], "error": error}),
            };
            stdin
                .write_all(format!("{reply}\n").as_bytes())
                .await
                .map_err(|error| format!("write to node: {error}"))?;
        }
    };
    let outcome = tokio::time::timeout(BROWSER_TIMEOUT, exchange).await;
    if !matches!(outcome, Ok(Ok(_))) {
        let _ = child.start_kill();
    }
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let log = log.await.expect("the log reader");
    let done = match (outcome, status) {
        (Ok(Ok(done)), Ok(Ok(status))) if status.success() => done,
        (Err(_), _) => panic!(
            "the browser run took longer than {BROWSER_TIMEOUT:?}; screenshots in {}; log:\n{log}",
            screenshots.display()
        ),
        (outcome, status) => panic!(
            "the browser run failed ({outcome:?}, exit {status:?}); screenshots of the \
             failing pages in {}; log:\n{log}",
            screenshots.display()
        ),
    };

    assert_eq!(done["scenarios"], json!(SCENARIOS), "every scenario ran");
    // The flood figures, for the record (the script asserted the limits).
    eprintln!("ui: flood figures: {}", done["flood"]);
    assert_eq!(
        agent.flooded, 10_200,
        "the flood: 10,000 before the page loaded, 200 live"
    );
    let shots = done["screenshots"].as_array().expect("the screenshot list");
    for name in [
        "questions-desktop",
        "conflict-409",
        "standing-grants",
        "offline-desktop",
        "question-phone",
        "list-desktop",
        "token-prompt",
        "approval-desktop",
        "timeline-desktop",
        "timeline-phone",
        "approval-phone",
        "question-expired",
        "reject-all-confirm",
        "hidden-characters",
        "flood-desktop",
    ] {
        let file = screenshots.join(format!("{name}.png"));
        assert!(
            shots.iter().any(|shot| shot.as_str() == file.to_str()),
            "{name} was taken"
        );
        let bytes = std::fs::read(&file).unwrap_or_else(|error| panic!("{file:?}: {error}"));
        assert!(bytes.starts_with(b"\x89PNG"), "{file:?} is a PNG");
    }
    // Every case that was asked was settled and checked; nothing is left pending.
    assert!(
        agent.pending.is_empty(),
        "unsettled: {:?}",
        agent.pending.keys()
    );
    let mut settled = agent.settled.clone();
    settled.sort();
    assert_eq!(
        settled,
        [
            "approval",
            "auth",
            "conflict",
            "drop1",
            "drop2",
            "drop3",
            "expiry_approval",
            "expiry_question",
            "filter_a",
            "filter_b",
            "grant_first",
            "grant_second",
            "grant_third",
            "hidden_approval",
            "hidden_question",
            "in_flight",
            "in_flight_marker",
            "locale_agent",
            "locale_vi",
            "locale_zh",
            "multi",
            "phone",
            "phone_approval",
            "reject",
            "reject_all_approval",
            "reject_all_locked",
            "reject_all_other",
            "reject_all_q1",
            "reject_all_q2",
            "reload1",
            "reload2",
            "reload3",
            "restart_question",
            "resync1",
            "resync2",
            "resync3",
            "single",
            "tabs",
            "timeline_approval",
            "timeline_question",
        ]
    );
    for hub in [&open, &auth, &agent.durable.hub] {
        assert_eq!(hub.questions().pending_count(), 0);
        assert_eq!(hub.approvals().pending_count(), 0);
    }
    agent.durable.shutdown.cancel();
    shutdown.cancel();
}

/// Serves the API and the UI for `hub` on a fresh loopback port, behind the site guard, as
/// the server does.
async fn serve(hub: RequestHub, config: HttpConfig, shutdown: &CancellationToken) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let address = listener.local_addr().expect("the bound address");
    let guard = askbus_http::SiteGuard::new(address, &config);
    let app = askbus_http::router(hub, config, shutdown.clone()).merge(askbus_ui::router());
    let app = askbus_http::guarded(app, guard);
    tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.clone().cancelled_owned())
            .into_future(),
    );
    address
}

/// A TCP proxy to `upstream` that can be cut: while `up` is false it closes every open
/// connection and every new one at once, as a lost network does to a browser.
async fn proxy(listener: TcpListener, upstream: SocketAddr, up: watch::Receiver<bool>) {
    while let Ok((mut client, _)) = listener.accept().await {
        if !*up.borrow() {
            continue;
        }
        let mut up = up.clone();
        tokio::spawn(async move {
            let Ok(mut server) = TcpStream::connect(upstream).await else {
                return;
            };
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                _ = up.wait_for(|up| !*up) => {}
            }
        });
    }
}

/// `<target>/ui-screenshots`: `CARGO_TARGET_DIR` if set (absolute), else the target directory this
/// test binary was built in (`<target>/<profile>/deps/tests-…`).
fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.parent()?.parent()?.to_path_buf())
        })
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("ui-screenshots")
}
