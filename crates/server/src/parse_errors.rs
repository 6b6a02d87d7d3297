//! The connection's own answers, in the API's error shape.
//!
//! hyper answers a request it cannot parse by itself, before any route sees it: `400` for
//! a malformed request line or header, `414` for a target longer than it reads (64 KiB),
//! `431` for a header larger than its buffer or with too many fields. Those answers have no
//! body, and hyper offers no hook to give them one. [`JsonParseErrors`] wraps the socket
//! and rewrites exactly those answers as they are written, so every error a client gets
//! from askbus is `{"code", "message"}` JSON.
//!
//! It recognises them by their shape: a `400`, `414` or `431` status line, then
//! `connection: close` and `content-length: 0`, and nothing after the head. Every answer
//! of the router has a body (its errors are JSON, [`askbus_http::guarded`] sees to it), so
//! no answer of a route can look like one.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use askbus_http::{ApiError, ErrorCode};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection (`io`) whose bodiless parse-error answers leave as JSON; everything else
/// passes through untouched.
pub(crate) struct JsonParseErrors<IO> {
    /// The socket.
    io: IO,
    /// A rewritten answer being written: its bytes, how many are written, and how many
    /// bytes of hyper's own answer to report written once all of them are.
    rewriting: Option<Rewrite>,
}

/// An answer rewritten as JSON, on its way out.
struct Rewrite {
    /// The answer with its JSON body.
    bytes: Vec<u8>,
    /// How many of `bytes` are written.
    written: usize,
    /// The length of the answer it replaces, reported written at the end.
    replaces: usize,
}

impl<IO> JsonParseErrors<IO> {
    pub(crate) fn new(io: IO) -> Self {
        Self {
            io,
            rewriting: None,
        }
    }
}

impl<IO: AsyncWrite + Unpin> JsonParseErrors<IO> {
    /// Writes the rest of the rewritten answer; reports the replaced answer's length once
    /// it is all out.
    fn poll_rewrite(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some(rewrite) = &mut self.rewriting {
            if rewrite.written == rewrite.bytes.len() {
                let replaces = rewrite.replaces;
                self.rewriting = None;
                return Poll::Ready(Ok(replaces));
            }
            let written =
                ready!(Pin::new(&mut self.io).poll_write(cx, &rewrite.bytes[rewrite.written..]))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            rewrite.written += written;
        }
        Poll::Ready(Ok(0))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for JsonParseErrors<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for JsonParseErrors<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.rewriting.is_none() {
            match as_json(buf) {
                Some(bytes) => {
                    self.rewriting = Some(Rewrite {
                        bytes,
                        written: 0,
                        replaces: buf.len(),
                    });
                }
                None => return Pin::new(&mut self.io).poll_write(cx, buf),
            }
        }
        self.poll_rewrite(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.rewriting.is_none() {
            let mut filled = bufs.iter().filter(|buf| !buf.is_empty());
            let only = match (filled.next(), filled.next()) {
                (Some(only), None) => as_json(only),
                _ => None,
            };
            match only {
                Some(bytes) => {
                    self.rewriting = Some(Rewrite {
                        bytes,
                        written: 0,
                        replaces: bufs.iter().map(|buf| buf.len()).sum(),
                    });
                }
                None => return Pin::new(&mut self.io).poll_write_vectored(cx, bufs),
            }
        }
        self.poll_rewrite(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// `head` with a JSON body, if it is one of hyper's bodiless parse-error answers.
fn as_json(head: &[u8]) -> Option<Vec<u8>> {
    let after_version = head.strip_prefix(b"HTTP/1.1 ")?;
    let (code, message) = match after_version.get(..4)? {
        b"400 " => (
            ErrorCode::BadRequest,
            "the request could not be parsed as HTTP/1.1",
        ),
        b"414 " => (
            ErrorCode::UriTooLong,
            "the request target is longer than the server reads (64 KiB)",
        ),
        b"431 " => (
            ErrorCode::HeaderTooLarge,
            "the request header is larger than the server reads (too many fields, or too long)",
        ),
        _ => return None,
    };
    let head = std::str::from_utf8(head).ok()?;
    let head = head.strip_suffix("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let fields: Vec<&str> = lines.collect();
    let canned = fields.contains(&"connection: close")
        && fields.contains(&"content-length: 0")
        && fields.len() <= 3;
    if !canned {
        return None;
    }
    let body = ApiError::new(code, message).to_json();
    let mut answer = format!(
        "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for date in fields.iter().filter(|field| field.starts_with("date: ")) {
        answer.push_str(date);
        answer.push_str("\r\n");
    }
    answer.push_str("\r\n");
    let mut answer = answer.into_bytes();
    answer.extend_from_slice(&body);
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bodiless_parse_error_answers_are_rewritten() {
        let canned = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Wed, 25 Nov 2026 02:33:09 GMT\r\n\r\n";
        let rewritten = String::from_utf8(as_json(canned).expect("rewritten")).expect("UTF-8");
        assert!(rewritten.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(rewritten.contains("\r\ndate: Wed, 25 Nov 2026 02:33:09 GMT\r\n"));
        let (head, body) = rewritten.split_once("\r\n\r\n").expect("a head and a body");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let body: serde_json::Value = serde_json::from_str(body).expect("a JSON body");
        assert_eq!(body["code"], "header_too_large");

        for untouched in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
            b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n\r\n",
        ] {
            assert_eq!(as_json(untouched), None, "{:?}", String::from_utf8_lossy(untouched));
        }
    }
}
