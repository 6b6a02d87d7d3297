//! The site guard in front of everything the server serves: the `Host` a request names,
//! and the site a browser's request comes from.

use askbus_http::{AllowedHost, CorsOrigin, HttpConfig, SiteGuard, guarded, guarded_and_logged};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::json;
use tower::ServiceExt;

use super::TestApp;

/// A guarded API of a server listening on 127.0.0.1:4717 with `config`.
fn guarded_app(config: HttpConfig) -> TestApp {
    let mut app = TestApp::with_config(config.clone());
    let listen = "127.0.0.1:4717".parse().unwrap();
    app.router = guarded(app.router, SiteGuard::new(listen, &config));
    app
}

/// `method path` with `headers` and an optional JSON body; its status and error code.
async fn check(
    app: &TestApp,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (StatusCode, String) {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = match body {
        Some(body) => request
            .header("content-length", body.len())
            .body(Body::from(body.to_owned())),
        None => request.body(Body::empty()),
    }
    .unwrap();
    let (status, json) = app.call(request).await;
    (status, json["code"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn no_route_answers_for_a_foreign_host() {
    let config = HttpConfig {
        allowed_hosts: vec![
            "askbus.internal".parse().unwrap(),
            "ui.example.com:8443".parse().unwrap(),
        ],
        ..HttpConfig::default()
    };
    let app = guarded_app(config);
    for (host, allowed) in [
        ("127.0.0.1:4717", true),
        ("localhost:4717", true),
        ("LocalHost.:4717", true),
        ("LOCALHOST:4717", true),
        ("[::1]:4717", true),
        ("askbus.internal", true),
        ("askbus.internal:9999", true),
        ("ui.example.com:8443", true),
        ("attacker.example:4717", false),
        ("localhost:4718", false),
        ("127.0.0.1:47170", false),
        ("127.0.0.1:471", false),
        ("localhost", false),
        ("127.0.0.1.attacker.example:4717", false),
        ("ui.example.com", false),
        ("[::2]:4717", false),
        ("bad host", false),
    ] {
        // (`/health` and `/ready` answer any host: `probes_pass_by_ip_address_and_nothing_else_does`.)
        for path in ["/question", "/openapi.json", "/no-such-route", "/health/"] {
            let (status, code) = check(&app, "GET", path, &[("host", host)], None).await;
            if allowed {
                assert_ne!(status, StatusCode::MISDIRECTED_REQUEST, "{host} {path}");
            } else {
                assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{host} {path}");
                assert_eq!(code, "misdirected_request");
            }
        }
    }
    // An absolute-form target names its host too.
    let (status, _) = check(
        &app,
        "GET",
        "http://attacker.example:4717/question",
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    // Not a browser: no Host, no check.
    let (status, _) = check(&app, "GET", "/question", &[], None).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn any_host_is_allowed_only_when_configured() {
    let app = guarded_app(HttpConfig {
        allowed_hosts: vec![AllowedHost::Any],
        ..HttpConfig::default()
    });
    let (status, _) = check(
        &app,
        "GET",
        "/question",
        &[("host", "anything.example")],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn no_cross_site_request_changes_anything() {
    let config = HttpConfig {
        cors_origins: vec!["http://localhost:5173".parse::<CorsOrigin>().unwrap()],
        ..HttpConfig::default()
    };
    let app = guarded_app(config);
    app.ask("demo");
    let host = ("host", "127.0.0.1:4717");
    let cancel = "/session/demo/cancel";
    let json_type = ("content-type", "application/json");
    for (headers, body, expected) in [
        // A page of another origin: its fetch, its form, its bodiless no-cors POST.
        (
            vec![host, ("origin", "http://attacker.example")],
            None,
            StatusCode::FORBIDDEN,
        ),
        (
            vec![
                host,
                ("origin", "null"),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            Some("a=b"),
            StatusCode::FORBIDDEN,
        ),
        (
            vec![host, ("sec-fetch-site", "cross-site")],
            None,
            StatusCode::FORBIDDEN,
        ),
        (
            vec![host, ("origin", "http://localhost:4718")],
            None,
            StatusCode::FORBIDDEN,
        ),
        // Bodies a browser may send anywhere are not JSON.
        (
            vec![host, ("content-type", "text/plain")],
            Some("{}"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (vec![host], Some("{}"), StatusCode::UNSUPPORTED_MEDIA_TYPE),
        (
            vec![host, ("content-type", "multipart/form-data; boundary=x")],
            Some("--x--"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
    ] {
        let (status, _) = check(&app, "POST", cancel, &headers, body).await;
        assert_eq!(status, expected, "{headers:?} {body:?}");
    }
    assert_eq!(app.questions.pending_count(), 1, "nothing was cancelled");
    // The server's own page, and a configured UI origin, may.
    for headers in [
        vec![
            host,
            ("origin", "http://127.0.0.1:4717"),
            ("sec-fetch-site", "same-origin"),
        ],
        vec![
            host,
            ("origin", "http://localhost:5173"),
            ("sec-fetch-site", "cross-site"),
        ],
        vec![host, json_type],
        vec![host],
    ] {
        let (status, _) = check(&app, "POST", cancel, &headers, None).await;
        assert_eq!(status, StatusCode::OK, "{headers:?}");
    }
    let (status, _) = check(
        &app,
        "POST",
        cancel,
        &[host, json_type, ("origin", "http://127.0.0.1:4717")],
        Some(&json!({}).to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn another_site_may_open_the_ui_but_not_read_the_api() {
    let app = guarded_app(HttpConfig::default());
    let host = ("host", "127.0.0.1:4717");
    let cross_site = ("sec-fetch-site", "cross-site");
    // A stream an attacker's page opens would hold a connection for nothing.
    for mode in ["cors", "no-cors"] {
        let (status, _) = check(
            &app,
            "GET",
            "/question",
            &[host, cross_site, ("sec-fetch-mode", mode)],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{mode}");
    }
    let (status, _) = check(
        &app,
        "GET",
        "/question",
        &[host, ("origin", "http://attacker.example")],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A link to the server, followed: a top-level navigation is not refused; a frame of
    // another site's page is (it could hold a stream open).
    let navigate = ("sec-fetch-mode", "navigate");
    for (dest, expected) in [
        ("document", StatusCode::OK),
        ("iframe", StatusCode::FORBIDDEN),
    ] {
        let headers = [host, cross_site, navigate, ("sec-fetch-dest", dest)];
        let (status, _) = check(&app, "GET", "/health", &headers, None).await;
        assert_eq!(status, expected, "{dest}");
    }
}

#[tokio::test]
async fn every_host_a_request_names_is_checked() {
    let app = guarded_app(HttpConfig::default());
    let request = Request::get("/question")
        .header("host", "127.0.0.1:4717")
        .header("host", "attacker.example:4717")
        .body(Body::empty())
        .unwrap();
    let (status, error) = app.call(request).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{error}");
}

#[tokio::test]
async fn a_header_larger_than_the_server_reads_is_431() {
    let app = guarded_app(HttpConfig::default());
    let host = ("host", "127.0.0.1:4717");
    let big = "a".repeat(askbus_http::MAX_HEADER_BYTES);
    let (status, code) = check(&app, "GET", "/health", &[host, ("x-big", &big)], None).await;
    assert_eq!(status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    assert_eq!(code, "header_too_large");
    let fits = "a".repeat(askbus_http::MAX_HEADER_BYTES / 2);
    let (status, _) = check(&app, "GET", "/health", &[host, ("x-big", &fits)], None).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn probes_pass_by_ip_address_and_nothing_else_does() {
    let app = guarded_app(HttpConfig::default());
    let by_ip = [("host", "10.1.2.3:4717")];
    for probe in ["/health", "/ready"] {
        assert_eq!(
            check(&app, "GET", probe, &by_ip, None).await.0,
            StatusCode::OK
        );
    }
    let (status, code) = check(&app, "GET", "/question", &by_ip, None).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::MISDIRECTED_REQUEST, "misdirected_request")
    );
    let (status, _) = check(&app, "POST", "/health", &by_ip, Some("{}")).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
}

/// A scraper reaches each pod by its address: with tokens, `/metrics` answers the admin's
/// token whatever host it names; without tokens (loopback, where a rebinding page could
/// reach it) it is refused by IP address as every other route is.
#[tokio::test]
async fn metrics_pass_by_ip_address_only_where_tokens_are_required() {
    let admin = "metrics-admin-token-0123456789";
    let with_tokens = guarded_app(HttpConfig {
        tokens: vec![askbus_http::AccessToken::all_sessions(admin)],
        ..HttpConfig::default()
    });
    let bearer = format!("Bearer {admin}");
    let by_ip = [
        ("host", "10.1.2.3:4717"),
        ("authorization", bearer.as_str()),
    ];
    let mut scrape = Request::get("/metrics");
    for (name, value) in by_ip {
        scrape = scrape.header(name, value);
    }
    let scraped = with_tokens
        .router
        .clone()
        .oneshot(scrape.body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(scraped.status(), StatusCode::OK, "the admin's scrape by IP");
    let (status, _) = check(&with_tokens, "GET", "/metrics", &by_ip[..1], None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no token, no figures");
    let (status, _) = check(&with_tokens, "GET", "/question", &by_ip, None).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "only the scrape");

    let open = guarded_app(HttpConfig::default());
    let (status, _) = check(&open, "GET", "/metrics", &by_ip[..1], None).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
}

/// The binary's front door logs what the guard refuses too: the access layer runs in front
/// of the guard, so a refused request still gets its id back, as every logged one does.
#[tokio::test]
async fn the_logged_front_door_runs_the_access_log_in_front_of_the_guard() {
    let config = HttpConfig::default();
    let mut app = TestApp::with_config(config.clone());
    let listen = "127.0.0.1:4717".parse().unwrap();
    app.router = guarded_and_logged(app.router, SiteGuard::new(listen, &config));
    for (host, status) in [
        ("127.0.0.1:4717", StatusCode::OK),
        ("attacker.example:4717", StatusCode::MISDIRECTED_REQUEST),
    ] {
        let request = Request::get("/question")
            .header("host", host)
            .header("x-request-id", "front-door-1")
            .body(Body::empty())
            .unwrap();
        let (got, headers, _) = app.call_with_headers(request).await;
        assert_eq!(got, status, "{host}");
        assert_eq!(headers["x-request-id"], "front-door-1", "{host}");
    }
}
