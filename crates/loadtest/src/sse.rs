//! One subscriber of `GET /event`, over real TCP, recording what it receives and when.
//!
//! Frames are read with an SSE parser (`sse-stream`) and sorted by askbus's framing: a bus
//! event is a frame with an `id:` line whose data is the envelope `{"id":…}`; the server's
//! own frames are `{"type":"server.…"}`. Only the `server.connected` cursor and
//! `server.resync` frames (the server admitting a gap) are kept of those; heartbeats are
//! skipped. Event data is not parsed further: the bench needs ids and arrival times, and
//! 100,000 JSON parses a second would take the cores the server is being measured on.

use std::time::Instant;

use futures_util::StreamExt;
use sse_stream::SseByteStream;
use tokio_util::sync::CancellationToken;

/// What one connection to the event stream saw.
#[derive(Debug, Default)]
pub struct Connection {
    /// The `id:` of the `server.connected` frame: the cursor the stream starts after.
    pub connected_after: Option<String>,
    /// Every bus event, in arrival order.
    pub events: Vec<Received>,
    /// How many `server.resync` frames arrived.
    pub resyncs: usize,
    /// Why the connection ended before it was stopped, if it did.
    pub failure: Option<String>,
}

/// One bus event as a subscriber received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The event id (the frame's `id:` line).
    pub id: String,
    /// When the parser handed the frame over.
    pub at: Instant,
}

/// Opens `url` (a `GET /event` URL), resuming after `last_event_id` if given, and records
/// frames until `stop` is cancelled or the stream ends.
///
/// `on_connected` runs when the `server.connected` frame arrives, `on_event` after each
/// bus event is recorded; both run on the reading task, so keep them cheap.
///
/// # Cancel safety
///
/// Cancelling `stop` drops the connection at once, mid-stream, as a client that goes away
/// does; what was received until then is returned.
pub async fn follow(
    client: &reqwest::Client,
    url: &str,
    last_event_id: Option<&str>,
    mut on_connected: impl FnMut(),
    mut on_event: impl FnMut(),
    stop: &CancellationToken,
) -> Connection {
    let mut connection = Connection::default();
    let mut request = client.get(url);
    if let Some(cursor) = last_event_id {
        request = request.header("last-event-id", cursor);
    }
    let response = tokio::select! {
        biased;
        () = stop.cancelled() => return connection,
        response = request.send() => response,
    };
    let response = match response.and_then(reqwest::Response::error_for_status) {
        Ok(response) => response,
        Err(error) => {
            connection.failure = Some(format!("cannot open the stream: {error}"));
            return connection;
        }
    };
    let mut frames = SseByteStream::new(response.bytes_stream());
    loop {
        let frame = tokio::select! {
            biased;
            () = stop.cancelled() => return connection,
            frame = frames.next() => frame,
        };
        let frame = match frame {
            Some(Ok(frame)) => frame,
            Some(Err(error)) => {
                connection.failure = Some(format!("the stream broke: {error}"));
                return connection;
            }
            None => {
                connection.failure = Some("the server ended the stream".to_owned());
                return connection;
            }
        };
        let at = Instant::now();
        let data = frame.data.as_deref().unwrap_or_default();
        match frame.id {
            Some(id) if data.starts_with(r#"{"id""#) => {
                connection.events.push(Received { id, at });
                on_event();
            }
            id if data.contains(r#""type":"server.connected""#) => {
                connection.connected_after = id;
                on_connected();
            }
            _ if data.contains(r#""type":"server.resync""#) => connection.resyncs += 1,
            _ => {}
        }
    }
}
