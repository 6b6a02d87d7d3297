//! Answer links: a reviewer's signed, expiring, single-use URL for one request. The first
//! use wins (also among 20 at once), later ones are `409`; an altered, forged or moved link
//! is `404`, an expired one `410`; a link acts as its reviewer, under every rule a token
//! would be (never an agent, never the asker, one vote each), and needs no token at all.

use std::time::Duration;

use askbus::question::{Duties, Identity, RequestHub, Role};
use askbus_http::{AccessToken, HttpConfig, LinkKey};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{TestApp, language, request};

const ADMIN: &str = "admin-secret-0123456789";
const AGENT: &str = "agent-secret-0123456789";
const ALICE: &str = "alice-secret-0123456789";
const BOB: &str = "bob-secret-0123456789abc";

/// A router with an admin, an agent and two reviewers, never the asker deciding.
fn app() -> TestApp {
    TestApp::with_hub(separated_hub(), config(LinkKey::random(), tokens()))
}

fn separated_hub() -> RequestHub {
    RequestHub::new(askbus::bus::Bus::new()).with_duties(Duties {
        never_the_asker: true,
    })
}

fn tokens() -> Vec<AccessToken> {
    vec![
        AccessToken::all_sessions(ADMIN),
        AccessToken::new(AGENT, Identity::new("agent-1", Role::Agent)),
        AccessToken::new(ALICE, Identity::new("alice", Role::Reviewer)),
        AccessToken::new(BOB, Identity::new("bob", Role::Reviewer)),
    ]
}

fn config(link_key: LinkKey, tokens: Vec<AccessToken>) -> HttpConfig {
    HttpConfig {
        tokens,
        link_key,
        ..HttpConfig::default()
    }
}

/// A question the agent asks in `session`, waiting `timeout` seconds (`None`: the
/// default); its id.
async fn ask(app: &TestApp, session: &str, timeout: Option<f64>) -> String {
    let mut body =
        json!({"sessionID": session, "questions": [serde_json::to_value(language()).unwrap()]});
    if let Some(timeout) = timeout {
        body["timeout"] = json!(timeout);
    }
    let (status, created) = app
        .call(request("POST", "/question", AGENT, Some(body)))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    created["id"].as_str().unwrap().to_owned()
}

/// A link to `request` (`/question/que_…`, `/approval/apr_…`) minted with `token`,
/// with `body`: the status and the answer.
async fn mint(
    app: &TestApp,
    request_path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    app.call(request(
        "POST",
        &format!("{request_path}/link"),
        token,
        body,
    ))
    .await
}

/// The path of a link alice mints for `request_path`.
async fn alices_link(app: &TestApp, request_path: &str) -> String {
    let (status, minted) = mint(app, request_path, ALICE, None).await;
    assert_eq!(status, StatusCode::OK, "{minted}");
    assert_eq!(
        minted["acts_as"],
        json!({"name": "alice", "role": "reviewer"})
    );
    minted["path"].as_str().unwrap().to_owned()
}

fn rust() -> Value {
    json!({"answers": [["Rust"]]})
}

#[tokio::test]
async fn a_link_answers_once_without_a_token_and_then_shows_who_did() {
    let app = app();
    let question = ask(&app, "ops", None).await;
    let link = alices_link(&app, &format!("/question/{question}")).await;

    let (status, read) = app
        .call(request("GET", &format!("{link}/request"), None, None))
        .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["kind"], "question");
    assert_eq!(read["request"]["id"], question.as_str());
    assert_eq!(read["request"]["status"], "pending");
    assert!(read["expires_at"].as_u64().unwrap() > 0);

    let (status, body) = app.call(request("POST", &link, None, Some(rust()))).await;
    assert_eq!((status, &body), (StatusCode::OK, &json!(true)));
    let (status, again) = app.call(request("POST", &link, None, Some(rust()))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    let (_, read) = app
        .call(request("GET", &format!("{link}/request"), None, None))
        .await;
    assert_eq!(read["request"]["status"], "replied");
    assert_eq!(read["request"]["answeredBy"]["name"], "alice");
    // A resolved request gets no new link.
    let (status, _) = mint(&app, &format!("/question/{question}"), ALICE, None).await;
    assert_eq!(status, StatusCode::CONFLICT);

    // A question's link may decline it too.
    let declined = ask(&app, "ops", None).await;
    let link = alices_link(&app, &format!("/question/{declined}")).await;
    let reject = format!("{link}/reject");
    let (status, _) = app
        .call(request(
            "POST",
            &reject,
            None,
            Some(json!({"reason": "not now"})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, read) = app
        .call(request("GET", &format!("{link}/request"), None, None))
        .await;
    assert_eq!(read["request"]["status"], "rejected");
}

#[tokio::test]
async fn of_twenty_clicks_at_once_exactly_one_answers() {
    let app = app();
    let question = ask(&app, "ops", None).await;
    let link = alices_link(&app, &format!("/question/{question}")).await;
    let clicks = (0..20).map(|n| {
        let answer = if n % 2 == 0 { "Rust" } else { "Go" };
        app.call(request(
            "POST",
            &link,
            None,
            Some(json!({"answers": [[answer]]})),
        ))
    });
    let outcomes = futures_util::future::join_all(clicks).await;
    let won = outcomes
        .iter()
        .filter(|(status, _)| *status == StatusCode::OK)
        .count();
    let refused = outcomes
        .iter()
        .filter(|(status, _)| *status == StatusCode::CONFLICT)
        .count();
    assert_eq!((won, refused), (1, 19), "{outcomes:?}");
}

#[tokio::test]
async fn altered_forged_and_moved_links_are_not_found_and_expired_ones_are_gone() {
    let app = app();
    let first = ask(&app, "ops", None).await;
    let second = ask(&app, "ops", None).await;
    let link = alices_link(&app, &format!("/question/{first}")).await;
    let other = alices_link(&app, &format!("/question/{second}")).await;

    let (signed, signature) = link.rsplit_once('.').unwrap();
    let flipped = if signature.starts_with('A') { "B" } else { "A" };
    let altered = format!("{signed}.{flipped}{}", &signature[1..]);
    // The first link's signature on the second link's fields: replayed across requests.
    let (other_signed, _) = other.rsplit_once('.').unwrap();
    let moved = format!("{other_signed}.{signature}");
    let elevated = link.replace(".reviewer.", ".admin.");
    for forged in [altered, moved, elevated, "/answer/nonsense".to_owned()] {
        let (status, body) = app.call(request("POST", &forged, None, Some(rust()))).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{forged}: {body}");
        let (status, _) = app
            .call(request("GET", &format!("{forged}/request"), None, None))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{forged}");
    }
    // Neither question was answered by any of them.
    for id in [&first, &second] {
        let (_, read) = app
            .call(request("GET", &format!("/question/{id}"), ADMIN, None))
            .await;
        assert_eq!(read["status"], "pending");
    }

    // A link expires with its request.
    let brief = ask(&app, "ops", Some(0.3)).await;
    let link = alices_link(&app, &format!("/question/{brief}")).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (status, body) = app.call(request("POST", &link, None, Some(rust()))).await;
    assert_eq!(status, StatusCode::GONE, "{body}");
    assert_eq!(body["code"], "link_expired");
}

#[tokio::test]
async fn a_link_acts_as_its_reviewer_under_every_rule_a_token_would() {
    let app = app();
    let question = ask(&app, "ops", None).await;
    let path = format!("/question/{question}");
    // Agents decide nothing, so they hand out no links; a link acts as its minter only.
    assert_eq!(
        mint(&app, &path, AGENT, None).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, minted) = mint(&app, &path, ADMIN, Some(json!({"for": "bob"}))).await;
    assert_eq!(status, StatusCode::OK, "{minted}");
    assert_eq!(minted["acts_as"]["name"], "admin", "never another's");
    // Alice's link renamed to bob (the name is base64url in the token) is no link.
    let alices = alices_link(&app, &path).await;
    assert!(alices.contains(".YWxpY2U."), "{alices}");
    let bobs = alices.replace(".YWxpY2U.", ".Ym9i.");
    assert_eq!(
        app.call(request("POST", &bobs, None, Some(rust()))).await.0,
        StatusCode::NOT_FOUND
    );

    // An admin that asked cannot answer through its own link either.
    let body =
        json!({"session_id": "ops", "action_requests": [{"name": "delete_rows", "args": {}}]});
    let (_, created) = app
        .call(request("POST", "/approval", ADMIN, Some(body)))
        .await;
    let own = format!("/approval/{}", created["id"].as_str().unwrap());
    let (_, minted) = mint(&app, &own, ADMIN, None).await;
    let approve = json!({"decisions": [{"type": "approve"}]});
    let (status, refused) = app
        .call(request(
            "POST",
            minted["path"].as_str().unwrap(),
            None,
            Some(approve.clone()),
        ))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");

    // Under a quorum a link is one vote: it acts once.
    let body = json!({
        "session_id": "ops",
        "action_requests": [{"name": "delete_rows", "args": {}}],
        "review_configs": [{"action_name": "delete_rows", "quorum": 2}],
    });
    let (_, created) = app
        .call(request("POST", "/approval", AGENT, Some(body)))
        .await;
    let two = format!("/approval/{}", created["approval_key"].as_str().unwrap());
    let link = alices_link(&app, &two).await;
    let vote = || request("POST", &link, None, Some(approve.clone()));
    assert_eq!(app.call(vote()).await.0, StatusCode::OK);
    assert_eq!(app.call(vote()).await.0, StatusCode::FORBIDDEN);
    let (_, read) = app
        .call(request("GET", &format!("{link}/request"), None, None))
        .await;
    assert_eq!(read["kind"], "approval");
    assert_eq!(read["request"]["status"], "pending");
    assert_eq!(read["request"]["votes"][0]["decided_by"]["name"], "alice");
}

#[tokio::test]
async fn a_link_answers_only_for_a_credential_as_it_is_configured_now() {
    let hub = separated_hub();
    let key = LinkKey::random();
    let before = TestApp::with_hub(hub.clone(), config(key.clone(), tokens()));
    let question = ask(&before, "ops", None).await;
    let link = alices_link(&before, &format!("/question/{question}")).await;

    // The same server restarted with the same secret, alice no longer configured.
    let removed: Vec<AccessToken> = tokens()
        .into_iter()
        .filter(|token| &*token.identity().name != "alice")
        .collect();
    let after = TestApp::with_hub(hub.clone(), config(key.clone(), removed));
    let (status, _) = after.call(request("POST", &link, None, Some(rust()))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Alice now reviewing another session only.
    let mut moved = tokens();
    moved.retain(|token| &*token.identity().name != "alice");
    moved.push(
        AccessToken::new(ALICE, Identity::new("alice", Role::Reviewer)).in_session("elsewhere"),
    );
    let after = TestApp::with_hub(hub.clone(), config(key.clone(), moved));
    let (status, _) = after.call(request("POST", &link, None, Some(rust()))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Configured as before, the link works.
    let again = TestApp::with_hub(hub, config(key, tokens()));
    let (status, _) = again.call(request("POST", &link, None, Some(rust()))).await;
    assert_eq!(status, StatusCode::OK);
}
