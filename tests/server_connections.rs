//! The server's accept loop (`askbus_server::serve`) over real TCP: a request header or
//! body that stalls is cut off (`/mcp`'s too), event streams are not, and shutdown never
//! waits on a client. `/mcp` is behind the API's tokens.
//!
//! Each test configures short limits so it proves a timeout by waiting a fraction of a
//! second; the generous upper bounds only catch a hang.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use askbus_server::{Cli, Settings};
use clap::Parser;
use futures_util::StreamExt;
use serde_json::Value;
use sse_stream::SseStream;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Longest any step may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(5);

/// The server as the binary runs it, on an ephemeral loopback port.
struct Server {
    address: SocketAddr,
    shutdown: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

/// Default settings, changed by `configure`, served.
async fn serve(configure: impl FnOnce(&mut Settings)) -> Server {
    let mut settings = Cli::try_parse_from(["askbus", "--store", "memory"])
        .expect("flags")
        .settings()
        .expect("valid");
    // The raw requests of these tests name the host `askbus`.
    settings.http.allowed_hosts = vec!["askbus".parse().expect("a host name")];
    configure(&mut settings);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(askbus_server::serve(listener, settings, shutdown.clone()));
    Server {
        address,
        shutdown,
        task,
    }
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Cancels the token and waits for `serve` to return; how long that took.
    async fn stop(self) -> Duration {
        let started = Instant::now();
        self.shutdown.cancel();
        tokio::time::timeout(HANG, self.task)
            .await
            .expect("shutdown does not hang")
            .expect("task")
            .expect("clean");
        started.elapsed()
    }
}

/// Everything the server sends on `stream` until it closes the connection.
async fn read_until_closed(stream: &mut (impl AsyncRead + Unpin)) -> String {
    let mut received = Vec::new();
    let read = tokio::time::timeout(HANG, stream.read_to_end(&mut received))
        .await
        .expect("the server closes the connection");
    // A reset is a close too; what arrived before it is what counts.
    drop(read);
    String::from_utf8_lossy(&received).into_owned()
}

async fn health(client: &reqwest::Client, server: &Server) -> reqwest::StatusCode {
    client
        .get(server.url("/health"))
        .send()
        .await
        .expect("health")
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_request_header_is_cut_off_without_an_answer() {
    let header_timeout = Duration::from_millis(200);
    let server = serve(|settings| settings.connections.header_read_timeout = header_timeout).await;

    // The server starts its clock when it accepts the connection, after this.
    let started = Instant::now();
    let mut stalled = TcpStream::connect(server.address).await.expect("connect");
    stalled
        .write_all(b"GET /health HTTP/1.1\r\nhost: askbus\r\n")
        .await
        .expect("half a header");
    let answer = read_until_closed(&mut stalled).await;
    assert_eq!(answer, "", "closed without an answer");
    assert!(
        started.elapsed() >= header_timeout,
        "not before the timeout"
    );

    // Meanwhile and afterwards, complete requests are served.
    let client = reqwest::Client::new();
    assert_eq!(health(&client, &server).await, reqwest::StatusCode::OK);
    server.stop().await;
}

/// Past `--max-connections`, the next client waits in the listen backlog, unanswered,
/// until a connection closes; then it is served. Connections that sent nothing count: they
/// are what a client opening connections faster than the header timeout closes them holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_the_next_client_waits_until_one_closes() {
    let server = serve(|settings| {
        settings.connections.max_connections = 2;
        settings.connections.header_read_timeout = Duration::from_secs(30);
    })
    .await;
    let silent = TcpStream::connect(server.address).await.expect("connect");
    let mut quiet = TcpStream::connect(server.address).await.expect("connect");
    let mut waiting = TcpStream::connect(server.address).await.expect("connect");
    waiting
        .write_all(b"GET /health HTTP/1.1\r\nhost: askbus\r\nconnection: close\r\n\r\n")
        .await
        .expect("a request");
    let mut byte = [0_u8; 1];
    assert!(
        tokio::time::timeout(Duration::from_millis(500), waiting.read(&mut byte))
            .await
            .is_err(),
        "served past the cap"
    );

    drop(silent);
    let answer = read_until_closed(&mut waiting).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The slot the answered connection held is free again too.
    quiet
        .write_all(b"GET /health HTTP/1.1\r\nhost: askbus\r\nconnection: close\r\n\r\n")
        .await
        .expect("a request");
    let answer = read_until_closed(&mut quiet).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let client = reqwest::Client::new();
    assert_eq!(health(&client, &server).await, reqwest::StatusCode::OK);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_request_body_gets_408() {
    let server = serve(|settings| {
        settings.http.request_timeout = Duration::from_millis(200);
    })
    .await;

    let mut stalled = TcpStream::connect(server.address).await.expect("connect");
    stalled
        .write_all(
            b"POST /question HTTP/1.1\r\nhost: askbus\r\ncontent-type: application/json\r\n\
              content-length: 100\r\n\r\n{\"sessionID\":",
        )
        .await
        .expect("a header and part of a body");
    let answer = read_until_closed(&mut stalled).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body = answer.split("\r\n\r\n").nth(1).expect("a body");
    assert!(body.contains(r#""code":"request_timeout""#), "{body}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_mcp_request_body_gets_408() {
    let request_timeout = Duration::from_millis(300);
    let server = serve(|settings| settings.http.request_timeout = request_timeout).await;

    let (mut answers, mut requests) = TcpStream::connect(server.address)
        .await
        .expect("connect")
        .into_split();
    let started = Instant::now();
    requests
        .write_all(
            b"POST /mcp HTTP/1.1\r\nhost: askbus\r\ncontent-type: application/json\r\n\
              accept: application/json, text/event-stream\r\ncontent-length: 60000\r\n\r\n{",
        )
        .await
        .expect("a header and the start of a body");
    // A byte every 20 ms: never idle for long, never done.
    let trickle = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(20));
        loop {
            every.tick().await;
            if requests.write_all(b" ").await.is_err() {
                break;
            }
        }
    });
    let answer = read_until_closed(&mut answers).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body = answer.split("\r\n\r\n").nth(1).expect("a body");
    assert!(body.contains(r#""code":"request_timeout""#), "{body}");
    assert!(
        started.elapsed() >= request_timeout,
        "not before the timeout"
    );
    trickle.abort();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_needs_the_token_when_the_server_has_one() {
    const TOKEN: &str = "mcp-connections-test-token-0123456789";
    let server = serve(|settings| {
        settings.http.tokens = vec![askbus_http::AccessToken::all_sessions(TOKEN)];
    })
    .await;
    let initialize = initialize_message();
    let client = reqwest::Client::new();
    let post = |token: Option<&str>| {
        let request = client
            .post(server.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
        .send()
    };

    for token in [None, Some("not-the-token")] {
        let refused = post(token).await.expect("answered");
        assert_eq!(
            refused.status(),
            reqwest::StatusCode::UNAUTHORIZED,
            "{token:?}"
        );
        let body: Value = refused.json().await.expect("JSON");
        assert_eq!(body["code"], "unauthorized", "{body}");
    }
    let accepted = post(Some(TOKEN)).await.expect("answered");
    assert_eq!(accepted.status(), reqwest::StatusCode::OK);
    drop(accepted);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_outlives_the_header_timeout() {
    let header_timeout = Duration::from_millis(150);
    let server = serve(|settings| {
        settings.connections.header_read_timeout = header_timeout;
        settings.http.heartbeat_interval = Duration::from_millis(100);
    })
    .await;

    let client = reqwest::Client::new();
    let response = client
        .get(server.url("/event"))
        .send()
        .await
        .expect("stream");
    let opened = Instant::now();
    let mut frames = SseStream::from_bytes_stream(response.bytes_stream());
    // Frames keep coming for several header timeouts: nobody reads a header meanwhile.
    let mut heartbeats = 0;
    while opened.elapsed() < header_timeout * 4 {
        let frame = tokio::time::timeout(HANG, frames.next())
            .await
            .expect("a frame")
            .expect("the stream is open")
            .expect("well-formed SSE");
        let data: Value = serde_json::from_str(frame.data.as_deref().expect("data")).expect("JSON");
        if data["type"] == "server.heartbeat" {
            heartbeats += 1;
        }
    }
    assert!(heartbeats >= 4, "{heartbeats} heartbeats");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_streams_and_idle_connections_at_once() {
    // A grace period far longer than the test allows: only a prompt close passes.
    let server = serve(|settings| {
        settings.connections.shutdown_grace = Duration::from_secs(60);
    })
    .await;

    let client = reqwest::Client::new();
    let response = client
        .get(server.url("/event"))
        .send()
        .await
        .expect("stream");
    let mut frames = SseStream::from_bytes_stream(response.bytes_stream());
    let connected = frames.next().await.expect("a frame").expect("SSE");
    assert!(connected.data.expect("data").contains("server.connected"));

    // A keep-alive connection, idle after one answered request.
    let mut idle = TcpStream::connect(server.address).await.expect("connect");
    idle.write_all(b"GET /health HTTP/1.1\r\nhost: askbus\r\n\r\n")
        .await
        .expect("request");
    let mut answer = [0; 12];
    idle.read_exact(&mut answer).await.expect("answer");
    assert_eq!(&answer, b"HTTP/1.1 200");

    let took = server.stop().await;
    assert!(took < HANG, "shutdown took {took:?}");
    let rest = tokio::time::timeout(HANG, frames.next())
        .await
        .expect("the stream ends");
    assert!(rest.is_none(), "{rest:?}");
    let mut buffer = Vec::new();
    tokio::time::timeout(HANG, idle.read_to_end(&mut buffer))
        .await
        .expect("the idle connection is closed")
        .expect("a clean close");
    // Only the rest of the first answer: no second response, no error page.
    assert!(!String::from_utf8_lossy(&buffer).contains("HTTP/1.1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_busy_after_the_grace_period_is_dropped() {
    let grace = Duration::from_millis(200);
    let server = serve(|settings| {
        settings.connections.shutdown_grace = grace;
        settings.http.request_timeout = Duration::from_secs(600);
    })
    .await;

    // A request whose body never finishes keeps its connection busy.
    let mut busy = TcpStream::connect(server.address).await.expect("connect");
    busy.write_all(
        b"POST /question HTTP/1.1\r\nhost: askbus\r\ncontent-type: application/json\r\n\
          content-length: 100\r\n\r\n{",
    )
    .await
    .expect("a header and part of a body");
    // Wait until the server has the request: another request on a new connection is
    // answered after the first was accepted.
    let client = reqwest::Client::new();
    assert_eq!(health(&client, &server).await, reqwest::StatusCode::OK);

    let took = server.stop().await;
    assert!(took >= grace, "the busy connection was given {took:?}");
    assert_eq!(
        read_until_closed(&mut busy).await,
        "",
        "dropped, not answered"
    );
}

/// An MCP `initialize` request, as a client of protocol version 2025-06-18 sends it.
fn initialize_message() -> Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "askbus-test", "version": "0"}},
    })
}

/// `initialize` over `/mcp` with `token`; the session id the server gave, or the refusal.
async fn mcp_session(
    client: &reqwest::Client,
    server: &Server,
    token: &str,
) -> Result<String, reqwest::Response> {
    let answer = client
        .post(server.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(token)
        .json(&initialize_message())
        .send()
        .await
        .expect("answered");
    if answer.status() != reqwest::StatusCode::OK {
        return Err(answer);
    }
    let session = answer.headers()["mcp-session-id"]
        .to_str()
        .expect("a session id")
        .to_owned();
    drop(answer);
    Ok(session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mcp_request_holds_a_slot_of_its_token() {
    const TOKENS: [&str; 2] = [
        "mcp-slots-token-one-0123456789abcdef",
        "mcp-slots-token-two-0123456789abcdef",
    ];
    // Four slots, two per token (the default share with two tokens).
    let server = serve(|settings| {
        settings.http.tokens = TOKENS
            .iter()
            .map(|token| askbus_http::AccessToken::all_sessions(*token))
            .collect();
        settings.http.event_streams = askbus_http::StreamSlots::new(4);
        settings.http.max_event_streams_per_token = 2;
    })
    .await;
    let client = reqwest::Client::new();
    let open_stream = |token: &'static str, session: String| {
        client
            .get(server.url("/mcp"))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .bearer_auth(token)
            .send()
    };
    // The first token's two MCP streams are its share: its next request is refused with
    // 429, even a POST, while the other token still has room.
    let mut held = Vec::new();
    for _ in 0..2 {
        let session = mcp_session(&client, &server, TOKENS[0])
            .await
            .expect("a slot free");
        let stream = open_stream(TOKENS[0], session).await.expect("answered");
        assert_eq!(stream.status(), reqwest::StatusCode::OK);
        held.push(stream);
    }
    let refused = mcp_session(&client, &server, TOKENS[0])
        .await
        .expect_err("over its share");
    assert_eq!(refused.status(), reqwest::StatusCode::TOO_MANY_REQUESTS);
    let body: Value = refused.json().await.expect("JSON");
    assert_eq!(body["code"], "quota", "{body}");
    let session = mcp_session(&client, &server, TOKENS[1])
        .await
        .expect("its own share");
    held.push(open_stream(TOKENS[1], session).await.expect("answered"));
    // A closed stream gives its slot back.
    drop(held.remove(0));
    let deadline = Instant::now() + HANG;
    while mcp_session(&client, &server, TOKENS[0]).await.is_err() {
        assert!(Instant::now() < deadline, "the slot came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(held);
    server.stop().await;
}

/// A session outlives its requests (until its client closes it, or 300 s idle), so a client
/// sending `initialize` after `initialize` could make the server hold sessions without end:
/// past `--max-mcp-sessions`, a new one is refused with 503, and a closed one makes room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_sessions_are_capped_and_a_closed_one_makes_room() {
    const TOKEN: &str = "mcp-sessions-cap-token-0123456789abcdef";
    let server = serve(|settings| {
        settings.http.tokens = vec![askbus_http::AccessToken::all_sessions(TOKEN)];
        settings.max_mcp_sessions = 2;
    })
    .await;
    let client = reqwest::Client::new();
    let first = mcp_session(&client, &server, TOKEN)
        .await
        .expect("a first session");
    let second = mcp_session(&client, &server, TOKEN)
        .await
        .expect("a second session");
    let refused = mcp_session(&client, &server, TOKEN)
        .await
        .expect_err("no third session");
    assert_eq!(refused.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.expect("JSON");
    assert_eq!(body["code"], "too_many_streams", "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|message| message.contains("2 MCP sessions")),
        "{body}"
    );
    // Nor by another spelling the endpoint accepts: the method name escaped, or a session
    // id that is not text (the endpoint reads it as none).
    let escaped = r#"{"jsonrpc": "2.0", "id": 1, "method": "initiali\u007ae",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "askbus-test", "version": "0"}}}"#;
    let not_text = reqwest::header::HeaderValue::from_bytes(b"\xff").expect("obs-text");
    let plain = serde_json::to_string(&initialize_message()).expect("JSON");
    for (body, session) in [(escaped.to_owned(), None), (plain, Some(not_text))] {
        let mut post = client
            .post(server.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .bearer_auth(TOKEN)
            .body(body.clone());
        if let Some(session) = session {
            post = post.header("mcp-session-id", session);
        }
        let answer = post.send().await.expect("answered");
        assert_eq!(
            answer.status(),
            reqwest::StatusCode::SERVICE_UNAVAILABLE,
            "{body}: {:?}",
            answer.headers().get("mcp-session-id")
        );
    }
    // A request within an open session still goes through.
    let ping = client
        .post(server.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &second)
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .expect("answered");
    assert!(ping.status().is_success(), "{}", ping.status());

    let closed = client
        .delete(server.url("/mcp"))
        .header("mcp-session-id", &first)
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("answered");
    assert!(closed.status().is_success(), "{}", closed.status());
    mcp_session(&client, &server, TOKEN)
        .await
        .expect("room for a session again");
    server.stop().await;
}

/// A client that asks and then stops reading would make the server hold the response for
/// as long as it keeps the connection (a list of every pending request, on as many
/// connections as it can open): a write that waits past the write timeout drops it. A
/// client that reads on is served on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_nobody_reads_is_dropped_after_the_write_timeout() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use askbus_server::{ConnectionLimits, serve_router};
    use axum::body::{Body, Bytes};
    use tokio::sync::mpsc;

    /// Tells which response (by the order of the requests) was given up, when it is.
    struct GivenUp(usize, mpsc::UnboundedSender<usize>);
    impl Drop for GivenUp {
        fn drop(&mut self) {
            let _ = self.1.send(self.0);
        }
    }

    let write_timeout = Duration::from_millis(300);
    let (given_up, mut gone) = mpsc::unbounded_channel();
    let requests = Arc::new(AtomicUsize::new(0));
    // Each response is an endless body of 64 KiB chunks.
    let endless = move || {
        let guard = GivenUp(requests.fetch_add(1, Ordering::Relaxed), given_up.clone());
        async move {
            let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
            Body::from_stream(futures_util::stream::unfold(guard, move |guard| {
                let chunk = chunk.clone();
                async move { Some((Ok::<_, std::io::Error>(chunk), guard)) }
            }))
        }
    };
    let app = axum::Router::new().route("/endless", axum::routing::get(endless));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let limits = ConnectionLimits {
        write_timeout,
        ..ConnectionLimits::default()
    };
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve_router(listener, app, limits, shutdown.clone()));
    let get = b"GET /endless HTTP/1.1\r\nhost: askbus\r\n\r\n";

    // A client that reads on, all along.
    let mut reader = TcpStream::connect(address).await.expect("connect");
    reader.write_all(get).await.expect("a request");
    let stop_reading = CancellationToken::new();
    let reading = tokio::spawn({
        let stop = stop_reading.clone();
        async move {
            let mut buffer = vec![0; 256 * 1024];
            let mut total = 0;
            while !stop.is_cancelled() {
                let read = tokio::time::timeout(HANG, reader.read(&mut buffer))
                    .await
                    .expect("bytes in time")
                    .expect("the connection is open");
                assert!(read > 0, "served on, {total} bytes so far");
                total += read;
            }
            (reader, total)
        }
    });
    tokio::time::sleep(write_timeout * 5).await;
    assert!(gone.try_recv().is_err(), "the reader's response goes on");

    // One that never reads: once its socket is full, a write waits, and is given up.
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("a small buffer");
    let mut stalled = socket.connect(address).await.expect("connect");
    stalled.write_all(get).await.expect("a request");
    let first_given_up = tokio::time::timeout(HANG * 4, gone.recv())
        .await
        .expect("the unread response was given up in time");
    assert_eq!(first_given_up, Some(1), "the second request's, never read");
    stop_reading.cancel();
    let (reader, total) = reading.await.expect("the reader read on");
    assert!(total > 1024 * 1024, "the reader took {total} bytes");
    drop((reader, stalled));
    shutdown.cancel();
    tokio::time::timeout(HANG, server)
        .await
        .expect("shutdown does not hang")
        .expect("task");
}
