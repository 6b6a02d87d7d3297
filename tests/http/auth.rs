//! Bearer tokens: missing, unknown, and session-scoped.

use askbus::question::{Identity, Role};
use askbus_http::{AccessToken, HttpConfig};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::json;

use super::{TestApp, request};

const ADMIN: &str = "admin-secret-0123456789";
const SCOPED: &str = "scoped-secret-0123456789";

fn app() -> TestApp {
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
async fn missing_or_unknown_tokens_are_401() {
    let app = app();
    let id = app.ask("mine");
    for token in [
        None,
        Some("wrong"),
        Some(&ADMIN[..ADMIN.len() - 1]),
        Some(""),
    ] {
        for (method, uri) in [
            ("GET", "/question".to_owned()),
            ("GET", format!("/question/{id}")),
            ("POST", format!("/question/{id}/reject")),
            ("GET", "/event".to_owned()),
            ("POST", "/session/mine/cancel".to_owned()),
        ] {
            let response =
                tower::ServiceExt::oneshot(app.router.clone(), request(method, &uri, token, None))
                    .await
                    .expect("infallible");
            assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
            let (status, body) = app.call(request(method, &uri, token, None)).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {uri} {token:?}");
            assert_eq!(body["code"], "unauthorized");
        }
    }
    // Nothing was rejected by the unauthorised calls.
    let (_, body) = app
        .call(request(
            "GET",
            &format!("/question/{id}"),
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(body["status"], "pending");
}

#[tokio::test]
async fn the_scheme_is_case_insensitive() {
    let app = app();
    let request = Request::get("/question")
        .header(header::AUTHORIZATION, format!("bearer {ADMIN}"))
        .body(Body::empty())
        .expect("request");
    assert_eq!(app.call(request).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_scoped_token_sees_only_its_session() {
    let app = app();
    let mine = app.ask("mine");
    let theirs = app.ask("theirs");

    // Lists are filtered to the token's session.
    let (status, listed) = app
        .call(request("GET", "/question", Some(SCOPED), None))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    assert_eq!(listed[0]["id"], mine);
    let (status, body) = app
        .call(request(
            "GET",
            "/question?sessionID=theirs",
            Some(SCOPED),
            None,
        ))
        .await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::FORBIDDEN, &json!("forbidden"))
    );

    // Another session's request does not exist for this token.
    for (method, uri, body) in [
        ("GET", format!("/question/{theirs}"), None),
        ("GET", format!("/question/{theirs}/wait?timeout=0"), None),
        (
            "POST",
            format!("/question/{theirs}/reply"),
            Some(json!({"answers": [["Rust"]]})),
        ),
        ("POST", format!("/question/{theirs}/reject"), None),
    ] {
        let (status, answer) = app.call(request(method, &uri, Some(SCOPED), body)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}");
        assert_eq!(answer["code"], "not_found");
        assert_eq!(answer["_tag"], "QuestionNotFoundError");
    }
    // Naming another session outright is forbidden.
    let (status, _) = app
        .call(request(
            "POST",
            "/session/theirs/cancel",
            Some(SCOPED),
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let create = json!({"sessionID": "theirs", "questions": [{"question": "Q?", "header": "Q", "options": []}]});
    let (status, body) = app
        .call(request("POST", "/question", Some(SCOPED), Some(create)))
        .await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::FORBIDDEN, &json!("forbidden"))
    );
    let (status, body) = app
        .call(request(
            "GET",
            "/event?sessionID=theirs",
            Some(SCOPED),
            None,
        ))
        .await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::FORBIDDEN, &json!("forbidden"))
    );

    // Theirs is untouched; mine can be answered with the scoped token.
    let (_, body) = app
        .call(request(
            "GET",
            &format!("/question/{theirs}"),
            Some(ADMIN),
            None,
        ))
        .await;
    assert_eq!(body["status"], "pending");
    let (status, _) = app
        .call(request(
            "POST",
            &format!("/question/{mine}/reply"),
            Some(SCOPED),
            Some(json!({"answers": [["Rust"]]})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_scoped_token_streams_only_its_session() {
    let app = app();
    let auth = format!("Bearer {SCOPED}");
    let mut frames = app.events("/event", &[("authorization", &auth)]).await;
    assert_eq!(frames.next().await.kind(), "server.connected");
    app.ask("theirs");
    let mine = app.ask("mine");
    let frame = frames.next().await;
    assert_eq!(frame.kind(), "question.asked");
    assert_eq!(frame.data["properties"]["id"], mine);
}

#[tokio::test]
async fn cors_allows_listed_origins_only_and_never_credentials() {
    let app = TestApp::with_config(HttpConfig {
        cors_origins: vec!["http://localhost:5173".parse().expect("an origin")],
        ..HttpConfig::default()
    });
    let preflight = |origin: &str| {
        Request::options("/question")
            .header(header::ORIGIN, origin)
            .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
            .header(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                "authorization,content-type",
            )
            .body(Body::empty())
            .expect("request")
    };
    let allowed =
        tower::ServiceExt::oneshot(app.router.clone(), preflight("http://localhost:5173"))
            .await
            .expect("infallible");
    let headers = allowed.headers();
    assert_eq!(
        headers[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "http://localhost:5173"
    );
    assert!(
        headers
            .get(header::ACCESS_CONTROL_ALLOW_CREDENTIALS)
            .is_none()
    );
    let allowed_headers = headers[header::ACCESS_CONTROL_ALLOW_HEADERS]
        .to_str()
        .expect("ascii");
    assert!(
        allowed_headers.contains("authorization"),
        "{allowed_headers}"
    );

    let refused = tower::ServiceExt::oneshot(app.router.clone(), preflight("http://evil.example"))
        .await
        .expect("infallible");
    assert!(
        refused
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none()
    );
}

#[tokio::test]
async fn a_scoped_token_sees_and_decides_only_its_own_approvals_and_session() {
    let app = app();
    let action = || askbus::question::Action::new("deploy", json!({"env": "prod"}));
    let submit = |session: &str| {
        app.hub
            .approvals()
            .request(session, vec![action()])
            .timeout(askbus::Timeout::Never)
            .submit()
            .expect("valid")
            .detach()
    };
    let mine = submit("mine");
    let theirs = submit("theirs");
    let call = |method: &'static str, uri: String, body: Option<serde_json::Value>| {
        let router = app.router.clone();
        async move {
            let response =
                tower::ServiceExt::oneshot(router, request(method, &uri, Some(SCOPED), body))
                    .await
                    .expect("infallible");
            response.status()
        }
    };
    let approve = json!({"decisions": [{"type": "approve"}]});
    // Another session's requests do not exist for this token, by id or by key.
    for address in [theirs.id.to_string(), "theirs_1".to_owned()] {
        assert_eq!(
            call("GET", format!("/approval/{address}"), None).await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            call(
                "POST",
                format!("/approval/{address}/reply"),
                Some(approve.clone())
            )
            .await,
            StatusCode::NOT_FOUND
        );
    }
    assert_eq!(
        call("GET", "/approval?session_id=theirs".into(), None).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        call("GET", "/session/theirs/interrupt".into(), None).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        call(
            "POST",
            "/session/theirs/resume".into(),
            Some(json!({"input": {"confirm": true}}))
        )
        .await,
        StatusCode::FORBIDDEN
    );
    let create = json!({"session_id": "theirs", "action_requests": [{"name": "x", "args": {}}]});
    assert_eq!(
        call("POST", "/approval".into(), Some(create)).await,
        StatusCode::FORBIDDEN
    );
    // Its own session works.
    assert_eq!(
        call("GET", "/session/mine/interrupt".into(), None).await,
        StatusCode::OK
    );
    assert_eq!(
        call(
            "POST",
            format!("/approval/{}/reply", mine.id),
            Some(approve)
        )
        .await,
        StatusCode::OK
    );
    assert_eq!(
        app.hub.approvals().pending_count(),
        1,
        "theirs is untouched"
    );
}

#[tokio::test]
async fn a_scoped_token_learns_nothing_from_another_sessions_keys() {
    let app = app();
    let theirs = app.ask("theirs");
    let mine = app.ask("mine");
    // Their first request's key, and a key nobody holds: the same answer, naming no id.
    for key in ["theirs_1", "theirs_9"] {
        let (status, body) = app
            .call(request(
                "GET",
                &format!("/question/{key}"),
                Some(SCOPED),
                None,
            ))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{key}: {body}");
        assert_eq!(
            body["message"],
            format!("no question request has the key `{key}`"),
            "{key}"
        );
        assert!(!body.to_string().contains(&theirs), "{body}");
    }
    // Its own session's key works.
    let (status, body) = app
        .call(request("GET", "/question/mine_1", Some(SCOPED), None))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], mine);
}
