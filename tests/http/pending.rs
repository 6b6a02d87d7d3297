//! What a human needs when an agent floods them: paged lists (`limit`, `after`, the next
//! page in `Link` and `x-next-cursor`), counts of pending requests per session, and one
//! call that refuses everything a session has pending.

use std::sync::Arc;

use askbus::question::{
    Action, ApprovalConfig, ApprovalError, Decision, DecisionType, QuestionConfig, RequestHub,
    ReviewConfig,
};
use askbus::question::{Identity, Role};
use askbus::{AskError, Bus, Timeout};
use askbus_http::{AccessToken, HttpConfig};
use askbus_store::{OutcomeState, SqliteStore, Store};
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use serde_json::{Value, json};

use super::{TestApp, get, language, post_json};

const ADMIN: &str = "admin-secret-0123456789";
const SCOPED: &str = "scoped-secret-0123456789";

/// Submits a detached approval of `action` (allowing `allowed`, or every decision) in
/// `session`; returns its id text.
fn ask_approval(
    app: &TestApp,
    session: &str,
    action: &str,
    allowed: Option<&[DecisionType]>,
) -> String {
    let configs = allowed
        .map(|allowed| vec![ReviewConfig::new(action, allowed.iter().copied())])
        .unwrap_or_default();
    app.hub
        .approvals()
        .request(session, vec![Action::new(action, json!({}))])
        .review(configs)
        .timeout(Timeout::Never)
        .submit()
        .unwrap()
        .detach()
        .id
        .to_string()
}

/// The ids of a listed page.
fn ids(page: &Value) -> Vec<String> {
    page.as_array()
        .expect("a list is a JSON array")
        .iter()
        .map(|request| request["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The next page's `Link` and `x-next-cursor`, if the answer has them.
fn next(headers: &HeaderMap) -> Option<(String, String)> {
    let link = headers.get(header::LINK)?.to_str().unwrap().to_owned();
    let cursor = headers["x-next-cursor"].to_str().unwrap().to_owned();
    Some((link, cursor))
}

/// Follows `uri`'s `Link: rel="next"` headers to the end; returns each page's ids.
async fn pages(app: &TestApp, uri: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut uri = uri.to_owned();
    loop {
        let (status, headers, page) = app.call_with_headers(get(&uri)).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {page}");
        pages.push(ids(&page));
        let Some((link, cursor)) = next(&headers) else {
            return pages;
        };
        assert_eq!(
            pages.last().unwrap().last(),
            Some(&cursor),
            "the cursor is the page's last id"
        );
        uri = link
            .strip_prefix('<')
            .and_then(|link| link.strip_suffix(">; rel=\"next\""))
            .unwrap_or_else(|| panic!("a Link to the next page: {link}"))
            .to_owned();
    }
}

#[tokio::test]
async fn lists_page_by_limit_and_cursor_and_without_limit_answer_everything() {
    let app = TestApp::new();
    let asked: Vec<String> = (0..5)
        .map(|index| app.ask(if index % 2 == 0 { "s1" } else { "s2" }))
        .collect();

    // No limit: the whole list, as OpenCode's `question.list` expects, with no paging headers.
    let (status, headers, all) = app.call_with_headers(get("/question")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&all), asked);
    assert_eq!(next(&headers), None);

    assert_eq!(
        pages(&app, "/question?limit=2").await,
        [&asked[0..2], &asked[2..4], &asked[4..5]],
    );
    let (_, headers, _) = app.call_with_headers(get("/question?limit=2")).await;
    assert_eq!(
        next(&headers),
        Some((
            format!("</question?limit=2&after={}>; rel=\"next\"", asked[1]),
            asked[1].clone()
        )),
    );
    // A page that ends exactly at the last request says no more.
    assert_eq!(
        pages(&app, "/question?limit=5").await,
        std::slice::from_ref(&asked)
    );
    // `after` alone: everything after it.
    let (_, rest) = app
        .call(get(&format!("/question?after={}", asked[2])))
        .await;
    assert_eq!(ids(&rest), &asked[3..]);

    // With the session filter, the next page keeps it.
    let s1 = [asked[0].clone(), asked[2].clone(), asked[4].clone()];
    assert_eq!(
        pages(&app, "/question?sessionID=s1&limit=2").await,
        [&s1[0..2], &s1[2..3]],
    );
    let (_, headers, _) = app
        .call_with_headers(get("/question?sessionID=s1&limit=1"))
        .await;
    assert_eq!(
        next(&headers).unwrap().0,
        format!(
            "</question?sessionID=s1&limit=1&after={}>; rel=\"next\"",
            s1[0]
        ),
    );

    // A cursor need not be pending any more: the page goes on after it.
    app.questions
        .reject(asked[1].parse().unwrap(), None)
        .unwrap()
        .await
        .unwrap();
    let (_, page) = app
        .call(get(&format!("/question?limit=1&after={}", asked[1])))
        .await;
    assert_eq!(ids(&page), [asked[2].clone()]);
}

#[tokio::test]
async fn approvals_page_too_and_either_kind_of_id_is_a_cursor() {
    let app = TestApp::new();
    let first = ask_approval(&app, "s1", "deploy", None);
    let question = app.ask("s1");
    let second = ask_approval(&app, "s2", "deploy", None);
    let third = ask_approval(&app, "s1", "deploy", None);

    assert_eq!(
        pages(&app, "/approval?limit=2").await,
        [vec![first.clone(), second.clone()], vec![third.clone()]]
    );
    // Both spellings of the session filter, kept in the next page's link.
    for name in ["session_id", "sessionID"] {
        let (status, headers, page) = app
            .call_with_headers(get(&format!("/approval?{name}=s1&limit=1")))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ids(&page), std::slice::from_ref(&first));
        assert_eq!(
            next(&headers).unwrap().0,
            format!("</approval?session_id=s1&limit=1&after={first}>; rel=\"next\""),
        );
    }
    // The question asked between them is a cursor for approvals (one order for both kinds).
    let (_, page) = app.call(get(&format!("/approval?after={question}"))).await;
    assert_eq!(ids(&page), [second, third.clone()]);
    let (_, page) = app.call(get(&format!("/question?after={first}"))).await;
    assert_eq!(ids(&page), [question]);
    let (_, page) = app.call(get(&format!("/question?after={third}"))).await;
    assert_eq!(ids(&page), Vec::<String>::new());
}

#[tokio::test]
async fn a_limit_beyond_the_maximum_is_lowered_and_bad_paging_is_a_400() {
    let app = TestApp::new();
    let asked: Vec<String> = (0..1001).map(|_| app.ask("flood")).collect();
    let (status, headers, page) = app.call_with_headers(get("/question?limit=5000")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&page), &asked[..1000], "a page holds at most 1000");
    assert_eq!(next(&headers).unwrap().1, asked[999]);

    for (uri, message) in [
        ("/question?limit=0", "`limit` must be at least 1"),
        ("/approval?limit=0", "`limit` must be at least 1"),
        (
            "/question?after=evt_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "`after` must be a request id",
        ),
        ("/approval?after=nonsense", "`after` must be a request id"),
    ] {
        let (status, error) = app.call(get(uri)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(error["code"], "bad_request", "{uri}");
        assert!(
            error["message"].as_str().unwrap().starts_with(message),
            "{uri}: {error}"
        );
    }
    let (status, error) = app.call(get("/question?limit=ten")).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("bad_request"))
    );
}

fn with_token(uri: &str, token: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap()
}

fn scoped_app() -> TestApp {
    TestApp::with_config(HttpConfig {
        tokens: vec![
            AccessToken::all_sessions(ADMIN),
            // A human reviewing one session: it decides there, and sees nothing else.
            AccessToken::new(SCOPED, Identity::new("scoped", Role::Reviewer)).in_session("mine"),
        ],
        ..HttpConfig::default()
    })
}

#[tokio::test]
async fn a_scoped_token_pages_and_counts_its_own_session_only() {
    let app = scoped_app();
    let mine = [app.ask("mine"), app.ask("mine")];
    app.ask("theirs");
    ask_approval(&app, "theirs", "deploy", None);

    let (status, headers, page) = app
        .call_with_headers(with_token("/question?limit=1", SCOPED))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&page), [mine[0].clone()]);
    assert_eq!(
        next(&headers).unwrap().0,
        format!(
            "</question?sessionID=mine&limit=1&after={}>; rel=\"next\"",
            mine[0]
        ),
    );
    let (_, page) = app
        .call(with_token(
            &format!("/question?limit=5&after={}", mine[0]),
            SCOPED,
        ))
        .await;
    assert_eq!(ids(&page), [mine[1].clone()]);
    let (_, page) = app.call(with_token("/approval?limit=5", SCOPED)).await;
    assert_eq!(ids(&page), Vec::<String>::new());
    let (status, error) = app
        .call(with_token("/question?sessionID=theirs&limit=1", SCOPED))
        .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("forbidden"))
    );

    let (status, counts) = app.call(with_token("/session/pending", SCOPED)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        counts["sessions"],
        json!([{"session_id": "mine", "questions": 2, "approvals": 0}])
    );
    let (_, counts) = app.call(with_token("/session/pending", ADMIN)).await;
    assert_eq!(counts["sessions"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn counts_per_session_stand_at_the_event_they_reflect() {
    let app = TestApp::new();
    let (status, counts) = app.call(get("/session/pending")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(counts["sessions"], json!([]));

    app.ask("b");
    ask_approval(&app, "a", "deploy", None);
    app.ask("a");
    let last_question = app.ask("b");
    let questions_as_of = app.hub.bus().head().to_string();
    ask_approval(&app, "c", "deploy", None);
    let approvals_as_of = app.hub.bus().head().to_string();
    app.questions
        .reject(last_question.parse().unwrap(), None)
        .unwrap()
        .await
        .unwrap();
    let rejected_at = app.hub.bus().head().to_string();

    let (_, counts) = app.call(get("/session/pending")).await;
    assert_eq!(
        counts["sessions"],
        json!([
            {"session_id": "a", "questions": 1, "approvals": 1},
            {"session_id": "b", "questions": 1, "approvals": 0},
            {"session_id": "c", "questions": 0, "approvals": 1},
        ]),
        "ascending by session, the rejected question gone"
    );
    // Each kind's counts stand at the newest event when they were read.
    assert_eq!(counts["questions_as_of"], rejected_at);
    assert_eq!(counts["approvals_as_of"], rejected_at);
    assert!(questions_as_of < approvals_as_of && approvals_as_of < rejected_at);
}

/// A session with two questions, an approval that allows `reject` and one that does not,
/// and another session's question: what `reject` of the first must leave alone.
struct Flooded {
    hub: RequestHub,
    questions: [askbus::question::PendingQuestion; 2],
    rejectable: askbus::question::PendingApproval,
    unrejectable: askbus::question::PendingApproval,
    other: String,
}

fn flood(app: &TestApp) -> Flooded {
    let ask = |session| {
        app.questions
            .ask(session, vec![language()])
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
    };
    let approve = |name: &str, allowed: Vec<DecisionType>| {
        app.hub
            .approvals()
            .request(
                "runaway",
                vec![
                    Action::new(name, json!({"n": 1})),
                    Action::new("log", json!({})),
                ],
            )
            .review(vec![ReviewConfig::new(name, allowed)])
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
    };
    Flooded {
        hub: app.hub.clone(),
        questions: [ask("runaway"), ask("runaway")],
        rejectable: approve(
            "delete_rows",
            vec![DecisionType::Approve, DecisionType::Reject],
        ),
        unrejectable: approve("deploy", vec![DecisionType::Approve, DecisionType::Edit]),
        other: ask("calm").detach().id.to_string(),
    }
}

#[tokio::test]
async fn reject_refuses_everything_the_session_has_pending_and_publishes_each_outcome() {
    let app = TestApp::new();
    let mut events = app.events("/event", &[]).await;
    assert_eq!(events.next().await.kind(), "server.connected");
    let Flooded {
        hub,
        questions,
        rejectable,
        unrejectable,
        other,
    } = flood(&app);

    let (status, body) = app
        .call(post_json(
            "/session/runaway/reject",
            &json!({"reason": "stop"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"rejected": 3, "questions": 2, "approvals": 1, "cancelled": 1})
    );

    for question in questions {
        assert_eq!(
            question.await,
            Err(AskError::Rejected {
                reason: Some("stop".into())
            })
        );
    }
    let reject = Decision::Reject {
        message: Some("stop".into()),
    };
    assert_eq!(
        rejectable.await.unwrap().decisions,
        [reject.clone(), reject]
    );
    // `deploy` may not be rejected: the request is cancelled, so nothing of it runs.
    assert!(matches!(unrejectable.await, Err(ApprovalError::Cancelled)));
    assert_eq!(
        hub.questions().list(None).len(),
        1,
        "the other session's question stays"
    );
    assert_eq!(hub.questions().list(None)[0].id.to_string(), other);

    let mut kinds = Vec::new();
    while kinds.len() < 9 {
        kinds.push(events.next().await.kind().to_owned());
    }
    assert_eq!(
        kinds,
        [
            "question.asked",
            "question.asked",
            "approval.asked",
            "approval.asked",
            "question.asked",
            "question.rejected",
            "question.rejected",
            "approval.replied",
            "approval.cancelled",
        ]
    );

    // Nothing left: a second call refuses nothing, without a body too.
    let request = Request::post("/session/runaway/reject")
        .body(Body::empty())
        .unwrap();
    let (status, body) = app.call(request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"rejected": 0, "questions": 0, "approvals": 0, "cancelled": 0})
    );
}

#[tokio::test]
async fn reject_of_another_session_is_refused_to_a_scoped_token() {
    let app = scoped_app();
    let theirs = app.ask("theirs");
    let mine = app.ask("mine");
    let post = |uri: &str, token: &str| {
        Request::post(uri)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap()
    };
    let (status, error) = app.call(post("/session/theirs/reject", SCOPED)).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("forbidden"))
    );
    let (status, _) = app
        .call(with_token(&format!("/question/{theirs}"), ADMIN))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, question) = app
        .call(with_token(&format!("/question/{theirs}"), ADMIN))
        .await;
    assert_eq!(question["status"], "pending", "nothing was rejected");

    let (status, body) = app.call(post("/session/mine/reject", SCOPED)).await;
    assert_eq!(
        (status, body["questions"].as_u64()),
        (StatusCode::OK, Some(1))
    );
    let (_, question) = app
        .call(with_token(&format!("/question/{mine}"), ADMIN))
        .await;
    assert_eq!(question["status"], "rejected");
    let (status, error) = app.call(post("/session/mine/reject", "wrong")).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthorized"))
    );
}

#[tokio::test]
async fn reject_needs_a_json_body_if_it_has_one() {
    let app = TestApp::new();
    let id = app.ask("s1");
    let request = Request::post("/session/s1/reject")
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("stop"))
        .unwrap();
    let (status, error) = app.call(request).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Some("unsupported_media_type")
        )
    );
    let (status, error) = app
        .call(post_json("/session/s1/reject", &json!({"reason": 5})))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let (_, question) = app.call(get(&format!("/question/{id}"))).await;
    assert_eq!(question["status"], "pending");
}

#[tokio::test]
async fn reject_answers_once_the_store_has_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("askbus.db")).unwrap());
    let hub = RequestHub::with_store(
        Bus::new(),
        QuestionConfig::default(),
        ApprovalConfig::default(),
        Arc::clone(&store),
    )
    .await
    .unwrap();
    let app = TestApp::with_hub(hub, HttpConfig::default());
    let Flooded {
        questions,
        rejectable,
        unrejectable,
        ..
    } = flood(&app);
    let ids = [
        questions[0].id().to_string(),
        questions[1].id().to_string(),
        rejectable.id().to_string(),
        unrejectable.id().to_string(),
    ];

    let (status, body) = app
        .call(post_json("/session/runaway/reject", &json!({})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Read straight from the store as soon as the 200 is in.
    let mut states = Vec::new();
    for id in &ids {
        let stored = store.get(id).await.unwrap().expect("the request is stored");
        states.push(stored.outcome.map(|outcome| outcome.state));
    }
    assert_eq!(
        states,
        [
            Some(OutcomeState::Rejected),
            Some(OutcomeState::Rejected),
            Some(OutcomeState::Replied),
            Some(OutcomeState::Cancelled),
        ]
    );
}
