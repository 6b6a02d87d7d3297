//! The adversarial suite: the real `askbus` binary on its defaults (loopback, no token,
//! SQLite) against an attacker and a careless client. Each test is a probe that once got
//! through, or one that must keep failing to get through.

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use support::Server;

/// A server on a fresh SQLite file, as `cargo run --release` runs it.
async fn server() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    (Server::start(&store).await, dir)
}

/// An approval of `delete_db` with `args`, from the agent's tool call `toolu_1`.
fn delete_db(args: Value) -> Value {
    json!({"session_id": "agent", "action_requests": [
        {"name": "delete_db", "args": args, "tool_use_id": "toolu_1"}
    ]})
}

#[tokio::test]
async fn an_approval_is_never_reused_for_arguments_the_human_did_not_see() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let approved = server
        .post(&http, "/approval", &delete_db(json!({"db": "staging"})))
        .await;
    let id = approved.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = json!({"decisions": [{"type": "approve"}]});
    assert_eq!(
        server
            .post_status(&http, &format!("/approval/{id}/reply"), &reply)
            .await,
        200
    );

    let reused = server
        .post(&http, "/approval", &delete_db(json!({"db": "production"})))
        .await;
    assert_eq!(reused.status(), 409);
    let error: Value = reused.json().await.unwrap();
    assert_eq!(error["code"], "call_id_reused");
    assert!(
        error["message"].as_str().unwrap().contains("toolu_1"),
        "{error}"
    );

    // A question from a reused tool call with another question gets no old answer either.
    let ask = |question: &str| {
        json!({"sessionID": "agent", "tool": {"messageID": "m", "callID": "call_1"},
               "questions": [{"question": question, "header": "Go",
                              "options": [{"label": "Yes", "description": ""}]}]})
    };
    let first = server.ask(&http, &ask("Drop the staging tables?")).await;
    let answer = json!({"answers": [["Yes"]]});
    assert_eq!(
        server
            .post_status(&http, &format!("/question/{first}/reply"), &answer)
            .await,
        200
    );
    assert_eq!(
        server
            .post_status(&http, "/question", &ask("Drop the production tables?"))
            .await,
        409
    );
    // The same content is the same request: a retry gets its outcome.
    assert_eq!(
        server.ask(&http, &ask("Drop the staging tables?")).await,
        first
    );
}

#[tokio::test]
async fn one_edit_is_never_copied_over_other_actions() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let created = server
        .post(
            &http,
            "/approval",
            &json!({"session_id": "agent", "action_requests": [
                {"name": "delete_rows", "args": {"table": "tmp"}},
                {"name": "send_email", "args": {"to": "boss"}},
            ]}),
        )
        .await;
    let id = created.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lone_edit = json!({"decisions": [
        {"type": "edit", "edited_action": {"name": "delete_rows", "args": {"table": "users"}}}
    ]});
    let path = format!("/approval/{id}/reply");
    assert_eq!(server.post_status(&http, &path, &lone_edit).await, 422);
    let status = server.get(&http, &format!("/approval/{id}")).await;
    assert_eq!(status["status"], "pending", "nothing was decided: {status}");
}

/// Sends a reply whose body announces `length` bytes and then arrives one byte per TCP
/// segment, `dripped` of them, on a blocking socket, then gives up; answers what the
/// server answered once the connection ended.
fn drip(address: &str, path: &str, length: usize, dripped: usize) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(address)?;
    socket.set_nodelay(true)?;
    write!(
        socket,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )?;
    for _ in 0..dripped {
        socket.write_all(b" ")?;
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    socket.shutdown(std::net::Shutdown::Write)?;
    let mut answer = String::new();
    socket.read_to_string(&mut answer)?;
    Ok(answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dripped_body_costs_no_more_memory_than_the_body_limit() {
    const CONNECTIONS: usize = 10;
    const DRIPPED: usize = 4_000;
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let id = server.ask(&http, &support::question("call-drip")).await;
    let path = format!("/question/{id}/reply");
    let before = server.resident_kib() * 1024;
    let address = server.address().to_owned();
    let drippers: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let (address, path) = (address.clone(), path.clone());
            std::thread::spawn(move || drip(&address, &path, 60_000, DRIPPED))
        })
        .collect();
    for dripper in drippers {
        // The body ends short of its length: the server answers once the client gives up.
        dripper.join().unwrap().unwrap();
    }
    let grown = (server.peak_resident_kib() * 1024).saturating_sub(before);
    eprintln!(
        "{CONNECTIONS} connections dripping {DRIPPED} bytes each: peak RSS {} KiB above {} KiB",
        grown / 1024,
        before / 1024
    );
    // Each connection may hold its body (60 kB) and a read buffer; one pinned 8 KiB buffer
    // per byte would be 32 MB per connection.
    assert!(
        grown < 16 * 1024 * 1024,
        "peak RSS grew by {grown} bytes for {CONNECTIONS} dripping connections"
    );
    // The question is untouched, and the server answers.
    assert_eq!(
        server.get(&http, &format!("/question/{id}")).await["status"],
        "pending"
    );
}

#[tokio::test]
async fn a_content_length_over_the_limit_is_refused_at_once() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (server, _dir) = server().await;
    let mut socket = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap();
    let head = format!(
        "POST /question HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{{",
        server.address()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    // Nothing more is sent: the answer must not wait for the body (or the request timeout).
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), socket.read(&mut answer))
        .await
        .expect("answered before the body arrived")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#""code":"payload_too_large""#), "{answer}");
}

/// Sends `request` raw and reads the answer until the server closes or 5 s pass.
async fn raw(server: &Server, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap();
    // The server may answer (and close) before all of an oversized request is sent.
    let _ = socket.write_all(request).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        socket.read_to_end(&mut answer),
    )
    .await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn every_error_is_json_even_the_connections_own() {
    let (server, _dir) = server().await;
    let host = format!("Host: {}\r\n", server.address());
    let long_target = format!("GET /{} HTTP/1.1\r\n{host}\r\n", "a".repeat(70_000));
    let big_header = format!(
        "GET /health HTTP/1.1\r\n{host}X-Big: {}\r\n\r\n",
        "a".repeat(500_000)
    );
    let many_fields: String = (0..200).map(|n| format!("X-{n}: a\r\n")).collect();
    let many_fields = format!("GET /health HTTP/1.1\r\n{host}{many_fields}\r\n");
    let bad_method = format!("G@T /health HTTP/1.1\r\n{host}\r\n");
    let mcp_without_accept = format!(
        "POST /mcp HTTP/1.1\r\n{host}Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    );
    let foreign_host =
        "GET /question HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n".to_owned();
    for (request, status, code) in [
        (long_target, 414, "uri_too_long"),
        (big_header, 431, "header_too_large"),
        (many_fields, 431, "header_too_large"),
        (bad_method, 400, "bad_request"),
        (mcp_without_accept, 406, "not_acceptable"),
        (foreign_host, 421, "misdirected_request"),
    ] {
        let answer = raw(&server, request.as_bytes()).await;
        let (head, body) = answer
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("{answer:?}"));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        let body: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{answer}"));
        assert_eq!(body["code"], code, "{body}");
        assert!(!body["message"].as_str().unwrap().is_empty());
    }
}

#[tokio::test]
async fn ids_have_one_spelling_and_timeouts_a_bound() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let id = server.ask(&http, &support::question("call-alias")).await;
    let ulid = id.trim_start_matches("que_");
    assert!(ulid.starts_with('0'), "{id}");
    for alias in [
        format!("que_8{}", &ulid[1..]),
        format!("que_G{}", &ulid[1..]),
        format!("que_{}", ulid.to_lowercase()),
    ] {
        let answer = http
            .get(format!("{}/question/{alias}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "{alias} names no question");
    }
    let mut forever = support::question("call-forever");
    for (timeout, status) in [(json!(1.7e19), 422), (json!(1e300), 422), (json!(-1), 422)] {
        forever["timeout"] = timeout.clone();
        let answer = server.post(&http, "/question", &forever).await;
        assert_eq!(answer.status(), status, "{timeout}");
        let error: Value = answer.json().await.unwrap();
        assert_eq!(error["code"], "invalid");
    }
}

#[tokio::test]
async fn oversized_deep_and_invalid_bodies_are_refused_at_once() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let id = server.ask(&http, &support::question("call-bodies")).await;
    let path = format!("{}/question/{id}/reply", server.base);
    // As deep as the body limit allows (a deeper one is too large: 413, below).
    let deep = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000));
    let mut invalid_utf8 = br#"{"answers": [[""#.to_vec();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe]);
    invalid_utf8.extend_from_slice(br#""]]}"#);
    for (body, statuses) in [
        (deep.into_bytes(), &[400][..]),
        (invalid_utf8, &[400]),
        (br#"{"answers": [[1e999]]}"#.to_vec(), &[400, 422]),
    ] {
        let started = std::time::Instant::now();
        let answer = http
            .post(&path)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        assert!(statuses.contains(&status), "{status}");
        let error: Value = answer.json().await.unwrap();
        assert!(error["code"].is_string(), "{error}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "at once"
        );
    }
    // 10 MB in chunks, without a length: refused once the limit is passed, while the
    // client is still sending (a length over the limit is refused before: see above).
    let (mut answers, mut requests) = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap()
        .into_split();
    let head = format!(
        "POST /question/{id}/reply HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        server.address()
    );
    let sender = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        requests.write_all(head.as_bytes()).await?;
        let chunk = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
        for _ in 0..160 {
            requests.write_all(chunk.as_bytes()).await?;
        }
        std::io::Result::Ok(())
    });
    let mut answer = vec![0; 4096];
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::io::AsyncReadExt::read(&mut answers, &mut answer),
    )
    .await
    .expect("answered at once")
    .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#""code":"payload_too_large""#), "{answer}");
    sender.abort();
    assert_eq!(
        server.get(&http, &format!("/question/{id}")).await["status"],
        "pending"
    );
}

#[tokio::test]
async fn a_header_sent_slowly_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (server, _dir) = server().await;
    let mut socket = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap();
    let started = std::time::Instant::now();
    socket
        .write_all(format!("GET /health HTTP/1.1\r\nHost: {}\r\n", server.address()).as_bytes())
        .await
        .unwrap();
    // Never the blank line: the server closes the connection after its header timeout
    // (10 s) without an answer.
    let mut answer = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        socket.read_to_end(&mut answer),
    )
    .await
    .expect("closed within 20 s");
    assert!(read.is_ok_and(|read| read == 0), "{answer:?}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_long_polls_all_wake() {
    const POLLS: usize = 2_000;
    let (server, _dir) = server().await;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let id = server.ask(&http, &support::question("call-polls")).await;
    let wait = format!("{}/question/{id}/wait?timeout=60", server.base);
    let polls: Vec<_> = (0..POLLS)
        .map(|_| {
            let (http, wait) = (http.clone(), wait.clone());
            tokio::spawn(async move { http.get(wait).send().await?.json::<Value>().await })
        })
        .collect();
    // Every poll is waiting once the server holds them all: give them time to connect.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let answer = json!({"answers": [["eu"]]});
    assert_eq!(
        server
            .post_status(&http, &format!("/question/{id}/reply"), &answer)
            .await,
        200
    );
    for poll in polls {
        let status = poll.await.unwrap().unwrap();
        assert_eq!(status["status"], "replied", "{status}");
    }
}

/// `POST /question` in `session`, from no tool call.
fn ask_in(session: &str) -> Value {
    json!({"sessionID": session, "timeout": null, "questions": [
        {"question": "Go on?", "header": "Go", "options": [{"label": "Yes", "description": ""}]}
    ]})
}

/// `count` creates in `session`, 32 at a time; the statuses, and one refusal's
/// `Retry-After` and body.
async fn flood(
    server: &Server,
    http: &reqwest::Client,
    session: &str,
    count: usize,
) -> (Vec<u16>, Option<(String, Value)>) {
    use futures_util::StreamExt;
    let body = ask_in(session);
    let responses: Vec<reqwest::Response> = futures_util::stream::iter(0..count)
        .map(|_| server.post(http, "/question", &body))
        .buffer_unordered(32)
        .collect()
        .await;
    let statuses = responses.iter().map(|r| r.status().as_u16()).collect();
    let mut refusal = None;
    for response in responses {
        if response.status() == 429 && refusal.is_none() {
            let retry = response.headers()["retry-after"]
                .to_str()
                .unwrap()
                .to_owned();
            refusal = Some((retry, response.json().await.unwrap()));
        }
    }
    (statuses, refusal)
}

/// A runaway agent that creates questions without end is refused once its session holds
/// 1,000 (the default), with 429 `quota` and `Retry-After`; other sessions, `/health` and
/// replies go on, and an answer frees a slot. The server's total is capped the same way.
#[tokio::test]
async fn a_flood_of_creates_is_refused_at_the_pending_limits() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let server = Server::start_with(
        dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--store",
            &store,
            "--max-pending",
            "1500",
        ],
        &[],
    )
    .await;
    let http = reqwest::Client::new();

    let (statuses, refusal) = flood(&server, &http, "runaway", 1_050).await;
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 1_000);
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 50);
    let (retry, body) = refusal.unwrap();
    assert_eq!(retry, "30");
    assert_eq!(body["code"], "quota");
    assert!(
        body["message"].as_str().unwrap().contains("\"runaway\""),
        "{body}"
    );

    // The server's total: 500 more fit, in another session, then nothing.
    let (statuses, refusal) = flood(&server, &http, "other", 510).await;
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 500);
    let (_, body) = refusal.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("1500 requests"),
        "{body}"
    );

    // What does not create still works, and an answer makes room.
    assert_eq!(server.get(&http, "/health").await["healthy"], true);
    let pending = server.get(&http, "/question?sessionID=runaway").await;
    assert_eq!(pending.as_array().unwrap().len(), 1_000);
    let id = pending[0]["id"].as_str().unwrap();
    let answer = json!({"answers": [["Yes"]]});
    let path = format!("/question/{id}/reply");
    assert_eq!(server.post_status(&http, &path, &answer).await, 200);
    assert_eq!(
        server
            .post_status(&http, "/question", &ask_in("runaway"))
            .await,
        200
    );
}

/// Streams opened until refused: with the open-files limit at 1,024 (hard 2,048), the
/// server raises it to 2,048 and holds at most 1,536 streams, then answers 503
/// `too_many_streams` with `Retry-After`, while `/health`, a reply and the streams already
/// open go on; closed streams free their slots. (Without the cap, streams took every file
/// descriptor and `/health` stopped answering.)
#[tokio::test]
async fn a_flood_of_event_streams_is_refused_before_the_files_run_out() {
    // This process holds as many connections as the server, plus a few.
    rlimit::increase_nofile_limit(4_096).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let args = ["--listen", "127.0.0.1:0", "--store", store.as_str()];
    let server = Server::start_with_open_files(dir.path(), &args, 1_024, 2_048).await;
    let http = reqwest::Client::new();
    let id = server.ask(&http, &ask_in("agent")).await;

    let url = format!("{}/event", server.base);
    let mut open = Vec::new();
    let refused = loop {
        let response = http.get(&url).send().await.unwrap();
        if response.status() != 200 {
            break response;
        }
        open.push(response);
        assert!(open.len() <= 2_048, "no cap below the file limit");
    };
    assert_eq!(open.len(), askbus_server::event_streams_for(2_048));
    assert_eq!(open.len(), 1_536);
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "10");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "too_many_streams");

    assert_eq!(server.get(&http, "/health").await["healthy"], true);
    let answer = json!({"answers": [["Yes"]]});
    let path = format!("/question/{id}/reply");
    assert_eq!(server.post_status(&http, &path, &answer).await, 200);
    let mut seen = String::new();
    while !seen.contains("question.replied") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), open[0].chunk())
            .await
            .expect("the open stream carries the reply")
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }

    // Ten clients leave: ten new streams get in (once the server saw them go).
    open.truncate(open.len() - 10);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut reopened = 0;
    while reopened < 10 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "slots came back: {reopened}"
        );
        let response = http.get(&url).send().await.unwrap();
        if response.status() == 200 {
            open.push(response);
            reopened += 1;
        } else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// A runaway agent floods one session: the human reads it a page at a time (the next page
/// named in `Link` and `x-next-cursor`), sees every session's count, and refuses all of it
/// with one call, which the agent's long poll hears; another session is spared. Before,
/// lists had no pages, no counts, and a flood was refused one request at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_session_is_paged_counted_and_refused_in_one_call() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let question = |session: &str, n: usize| {
        json!({"sessionID": session, "questions": [{"question": format!("Step {n}?"),
               "header": "Step", "options": [{"label": "Go", "description": ""}]}]})
    };
    let calm = server.ask(&http, &question("calm", 0)).await;
    let asks = futures_util::future::join_all((0..240).map(|n| {
        let (server, http, body) = (&server, &http, question("runaway", n));
        async move { server.ask(http, &body).await }
    }));
    let mut asked = asks.await;
    asked.sort();
    let approval = json!({"session_id": "runaway",
                          "action_requests": [{"name": "drop_table", "args": {"table": "users"}}]});
    for _ in 0..10 {
        assert_eq!(server.post_status(&http, "/approval", &approval).await, 200);
    }

    // A page at a time, each naming the next, together every request once, in id order.
    let mut paged = Vec::new();
    let mut next = Some("/question?sessionID=runaway&limit=100".to_owned());
    while let Some(path) = next.take() {
        let response = http
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let cursor = response
            .headers()
            .get("x-next-cursor")
            .map(|cursor| cursor.to_str().unwrap().to_owned());
        let link = response
            .headers()
            .get("link")
            .map(|link| link.to_str().unwrap().to_owned());
        let page: Vec<Value> = response.json().await.unwrap();
        assert!(page.len() <= 100);
        paged.extend(
            page.iter()
                .map(|request| request["id"].as_str().unwrap().to_owned()),
        );
        if let (Some(cursor), Some(link)) = (cursor, link) {
            assert_eq!(paged.last(), Some(&cursor));
            next = Some(
                link.trim_start_matches('<')
                    .trim_end_matches(">; rel=\"next\"")
                    .to_owned(),
            );
        }
    }
    assert_eq!(paged, asked);
    let counts = server.get(&http, "/session/pending").await;
    assert_eq!(
        counts["sessions"],
        json!([
            {"session_id": "calm", "questions": 1, "approvals": 0},
            {"session_id": "runaway", "questions": 240, "approvals": 10},
        ])
    );

    let waiting = {
        let url = format!("{}/question/{}/wait?timeout=30", server.base, asked[7]);
        let http = http.clone();
        tokio::spawn(async move { http.get(url).send().await.unwrap().json::<Value>().await })
    };
    let refused = server
        .post(
            &http,
            "/session/runaway/reject",
            &json!({"reason": "runaway agent"}),
        )
        .await;
    assert_eq!(refused.status(), 200);
    assert_eq!(
        refused.json::<Value>().await.unwrap(),
        json!({"rejected": 250, "questions": 240, "approvals": 10, "cancelled": 0})
    );
    let heard = waiting.await.unwrap().unwrap();
    assert_eq!(
        (heard["status"].as_str(), heard["reason"].as_str()),
        (Some("rejected"), Some("runaway agent"))
    );
    let left = server.get(&http, "/question").await;
    assert_eq!(left.as_array().unwrap().len(), 1);
    assert_eq!(left[0]["id"], calm);
    assert_eq!(server.get(&http, "/approval").await, json!([]));
}

/// A session nobody reads while more events than the bus keeps (4,096) go by in other
/// sessions still has its whole history, pending question included: the web UI once said
/// "Nothing recorded for this session yet" beside that question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_unread_while_thousands_of_events_go_by_keeps_its_history() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let step = json!({"type": "user", "text": "Clean up the disk"});
    server.step(&http, "quiet", &step).await;
    let mut question = support::question("call-quiet");
    question["sessionID"] = json!("quiet");
    let id = server.ask(&http, &question).await;
    server.post_steps(&http, "busy", 4_200, 32, "noise").await;

    let history = server.get(&http, "/session/quiet/history").await;
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{history:#}");
    assert_eq!(messages[0]["content"][0]["text"], "Clean up the disk");
    let part = &messages[1]["content"][0];
    assert_eq!(part["approval_key"], "quiet_1", "the question's seed key");
    assert_eq!(part["isResolved"], false);
    let by_key = server.get(&http, "/question/quiet_1").await;
    assert_eq!(by_key["id"], id.as_str());
}

/// Big steps are kept in the store, not in the server's memory: after 2,000 steps of 60 KB
/// (117 MiB) posted to one session, the server holds no more than the bus's replay window
/// (16 MiB of events' JSON, `--max-event-history-mib`, about as much again as values) and
/// 48 MiB besides. It once also kept every transcript whole, about three times what was
/// posted, for good; then the replay window's 4,096 events held every step. Reading the
/// history folds at most the session's newest 16 MiB of records (about 1/8 more before a
/// trim).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_steps_are_not_kept_in_memory() {
    const STEPS: usize = 2_000;
    const STEP_BYTES: usize = 60 * 1024;
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let big = "x".repeat(STEP_BYTES);
    server.post_steps(&http, "warm-up", 16, 8, &big).await;
    let before = server.resident_kib();
    server.post_steps(&http, "flood", STEPS, 8, &big).await;
    let after = server.resident_kib();
    let posted_kib = u64::try_from(STEPS * STEP_BYTES / 1024).unwrap();
    eprintln!("resident: {before} KiB before, {after} KiB after {STEPS} steps of 60 KB");
    assert!(
        after.saturating_sub(before) < 2 * 16 * 1024 + 48 * 1024,
        "resident memory grew from {before} KiB to {after} KiB ({posted_kib} KiB posted)"
    );
    // Its newest 16 MiB (--max-history-mib), each step about 61 KB as stored.
    let history = server.get(&http, "/session/flood/history").await;
    let kept = history["messages"].as_array().unwrap().len();
    assert!((250..=310).contains(&kept), "{kept} messages");
}

/// What a flooded session's readers make the server hold is bounded. Its history keeps
/// 16 MiB (`--max-history-mib`), not 1,000 records of 64 KB. 30 streams of it that nobody
/// reads hold a page of records each: each once held every frame of the session until its
/// client read them, about 63 MB a stream, 1.9 GB for 30. 20 concurrent reads of its
/// history take turns, four at a time: they once peaked at 1.8 GB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_sessions_readers_hold_bounded_memory() {
    use std::io::Read;
    const STREAMS: usize = 30;
    const READS: usize = 20;
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    server.flood(&http, "flood").await;
    let history = server.get(&http, "/session/flood/history").await;
    let kept = serde_json::to_vec(&history["messages"]).unwrap().len();
    assert!(kept < 18 * 1024 * 1024, "a history of {kept} bytes");

    let before = server.resident_kib();
    let mut streams = Vec::new();
    for _ in 0..STREAMS {
        let mut socket = server.request_on_socket("/session/flood/stream");
        // Its first frames arrive: the stream is open and being written.
        let mut start = [0; 4096];
        socket.read_exact(&mut start).unwrap();
        assert!(start.starts_with(b"HTTP/1.1 200"));
        streams.push(socket);
    }
    let streaming = server.resident_kib();
    eprintln!("resident: {before} KiB, then {streaming} KiB with {STREAMS} streams unread");
    assert!(
        streaming.saturating_sub(before) < 128 * 1024,
        "{STREAMS} unread streams took resident memory from {before} KiB to {streaming} KiB"
    );
    drop(streams);

    let before = server.resident_kib();
    server.reset_peak_resident();
    let url = format!("{}/session/flood/history", server.base);
    let reads = (0..READS).map(|_| {
        let request = http.get(&url).send();
        async move { request.await.unwrap().bytes().await.unwrap().len() }
    });
    for read in futures_util::future::join_all(reads).await {
        assert_eq!(read, serde_json::to_vec(&history).unwrap().len());
    }
    let peak = server.peak_resident_kib();
    eprintln!("resident: {before} KiB, peak {peak} KiB during {READS} history reads");
    assert!(
        peak.saturating_sub(before) < 512 * 1024,
        "{READS} history reads took resident memory from {before} KiB to {peak} KiB"
    );
}

/// An approval in `session` whose arguments are `values` empty objects (the heaviest
/// shape per byte of JSON), timing out after `timeout` seconds.
fn heavy_approval(session: &str, values: usize, timeout: u64) -> Value {
    json!({"session_id": session, "timeout": timeout, "action_requests": [
        {"name": "insert_rows", "args": {"rows": vec![json!({}); values]}}
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_requests_weigh_is_bounded_not_only_their_number() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    // A body within the size limit whose parsed form weighs 30 times more: refused.
    let heaviest = heavy_approval("heavy", 20_000, 300);
    assert_eq!(server.post_status(&http, "/approval", &heaviest).await, 422);

    server.reset_peak_resident();
    let before = server.resident_kib();
    // Ask and let expire, again and again: nothing pending, and what is remembered of the
    // resolved ones is bounded by weight, not by the 10,000 the count allows.
    for _ in 0..300 {
        let created = server
            .post_status(&http, "/approval", &heavy_approval("churn", 1_900, 0))
            .await;
        assert_eq!(created, 200);
    }
    // Then keep them pending until the weight budget refuses more.
    let mut admitted = 0;
    let refused = loop {
        let answer = server
            .post(
                &http,
                "/approval",
                &heavy_approval(&format!("s{admitted}"), 1_900, 3_600),
            )
            .await;
        if answer.status() != 200 {
            break answer;
        }
        admitted += 1;
        assert!(admitted < 5_000, "never refused");
    };
    assert_eq!(refused.status(), 429);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["code"], "quota");
    assert!(
        error["message"].as_str().unwrap().contains("MiB"),
        "{error}"
    );
    let grown = server.peak_resident_kib().saturating_sub(before);
    eprintln!(
        "300 expired and {admitted} pending requests of 1,900 values: peak RSS {} MiB above {} MiB",
        grown >> 10,
        before >> 10
    );
    assert!(grown < 768 << 10, "peak RSS grew by {} MiB", grown >> 10);
    assert_eq!(server.get(&http, "/health").await["healthy"], true);
}
