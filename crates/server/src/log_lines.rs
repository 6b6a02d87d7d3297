//! askbus's log lines: tracing-subscriber's layout, with the id of the request being
//! served in every line of it, at a fraction of the cost of a span per request.
//!
//! Every line logged while a request is served must name the request's id (`x-request-id`),
//! and every request logs its access line ([`askbus_http::AccessLog`]). A `request` span
//! per request did both, and was most of what logging cost: tracing-subscriber formats a
//! span's fields when the span is made, enters and leaves it at every poll, and its
//! default format writes each field through `Debug` and the level through a styling
//! library even without colours. With metrics and the access line on, a reply cost 62k
//! instructions against 35.5k without; issue 20 allows 5%.
//!
//! So no span: the id is already where the bus reads it to stamp events
//! ([`askbus_bus::with_request_id`]), and [`LogLines`] writes it from there into every line
//! logged on the request's task, in the shape the span had (`request{id=…}:` in text,
//! `"span":{"id":…,"name":"request"}` in JSON). Fields are written by a visitor of our own
//! (numbers through `itoa`/`ryu`, strings as they are unless they need quotes), and the
//! timestamp's date and time are formatted once a second. Spans an embedder opens still
//! show, as tracing-subscriber shows them. Lines logged off the request's task (a task it
//! spawned, a timer) carry no id, as they carried no span.
//!
//! Text: `2026-11-28T08:30:00.123456Z  INFO request{id=trace-42}: askbus::access:
//! method=POST route=/question/{id}/reply status=200 ms=0.412` (one line).
//! JSON: `{"timestamp":…,"level":"INFO","fields":{…},"target":…,"span":{"id":…,"name":"request"}}`,
//! with `"spans":[…]` when an embedder's spans enclose the line.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// What the binary logs when `RUST_LOG` is not set (an `EnvFilter` directive): `info` and
/// up, one access line per request among them, without the HTTP libraries' chatter.
pub const DEFAULT_LOG_FILTER: &str = "info,tower_http=warn,hyper=warn";

/// The event format of askbus's logs (see the module docs): give it to
/// `tracing_subscriber::fmt().event_format(…)`; for [`LogLines::json`], also
/// `.fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())`, so that the fields
/// of an embedder's spans are JSON too.
///
/// ```
/// tracing_subscriber::fmt()
///     .event_format(askbus_server::LogLines::text())
///     .with_writer(std::io::stderr)
///     .finish();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LogLines {
    json: bool,
}

impl LogLines {
    /// Human-readable lines, as tracing-subscriber's default format lays them out.
    #[must_use]
    pub const fn text() -> Self {
        Self { json: false }
    }

    /// One JSON object per line.
    #[must_use]
    pub const fn json() -> Self {
        Self { json: true }
    }
}

impl<S, N> FormatEvent<S, N> for LogLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let request = askbus_bus::current_request_id();
        let metadata = event.metadata();
        if self.json {
            writer.write_str(r#"{"timestamp":""#)?;
            write_timestamp(&mut writer)?;
            write!(writer, r#"","level":"{}","fields":{{"#, metadata.level())?;
            let mut fields = Fields::new(writer.by_ref(), true);
            event.record(&mut fields);
            fields.result?;
            writer.write_str(r#"},"target":"#)?;
            write_json_str(&mut writer, metadata.target())?;
            if let Some(id) = request {
                writer.write_str(r#","span":{"id":"#)?;
                write_json_str(&mut writer, &id)?;
                writer.write_str(r#","name":"request"}"#)?;
            }
            if let Some(scope) = context.event_scope() {
                writer.write_str(r#","spans":["#)?;
                for (at, span) in scope.from_root().enumerate() {
                    writer.write_str(if at == 0 { "{" } else { ",{" })?;
                    let extensions = span.extensions();
                    // Under `JsonFields` a span's fields are a JSON object: its members
                    // join the span's name.
                    let members = extensions
                        .get::<FormattedFields<N>>()
                        .and_then(|fields| fields.strip_prefix('{')?.strip_suffix('}'))
                        .filter(|members| !members.trim().is_empty());
                    if let Some(members) = members {
                        write!(writer, "{members},")?;
                    }
                    writer.write_str(r#""name":"#)?;
                    write_json_str(&mut writer, span.name())?;
                    writer.write_char('}')?;
                }
                writer.write_char(']')?;
            }
            writer.write_str("}\n")
        } else {
            write_timestamp(&mut writer)?;
            write_level(&mut writer, *metadata.level())?;
            if let Some(scope) = context.event_scope() {
                for span in scope.from_root() {
                    writer.write_str(span.name())?;
                    let extensions = span.extensions();
                    if let Some(fields) = extensions.get::<FormattedFields<N>>()
                        && !fields.is_empty()
                    {
                        write!(writer, "{{{fields}}}")?;
                    }
                    writer.write_char(':')?;
                }
                writer.write_char(' ')?;
            }
            if let Some(id) = request {
                writer.write_str("request{id=")?;
                write_text_value(&mut writer, &id, true)?;
                writer.write_str("}: ")?;
            }
            writer.write_str(metadata.target())?;
            writer.write_str(": ")?;
            let mut fields = Fields::new(writer.by_ref(), false);
            event.record(&mut fields);
            fields.result?;
            writer.write_char('\n')
        }
    }
}

/// The level, padded as tracing-subscriber pads it, coloured as it colours it when the
/// writer takes colours.
fn write_level(writer: &mut Writer<'_>, level: Level) -> fmt::Result {
    let name = match level {
        Level::TRACE => "TRACE",
        Level::DEBUG => "DEBUG",
        Level::INFO => " INFO",
        Level::WARN => " WARN",
        Level::ERROR => "ERROR",
    };
    if writer.has_ansi_escapes() {
        let colour = match level {
            Level::TRACE => "35",
            Level::DEBUG => "34",
            Level::INFO => "32",
            Level::WARN => "33",
            Level::ERROR => "31",
        };
        write!(writer, " \x1b[{colour}m{name}\x1b[0m ")
    } else {
        writer.write_char(' ')?;
        writer.write_str(name)?;
        writer.write_char(' ')
    }
}

/// The date and time to the second, formatted once a second per thread.
struct Second {
    unix: u64,
    text: String,
}

thread_local! {
    static SECOND: RefCell<Second> = const {
        RefCell::new(Second {
            unix: u64::MAX,
            text: String::new(),
        })
    };
}

/// Now, in RFC 3339 with microseconds, UTC (`2026-11-28T08:30:00.123456Z`), as
/// tracing-subscriber writes it.
fn write_timestamp(writer: &mut Writer<'_>) -> fmt::Result {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    SECOND.with_borrow_mut(|second| {
        if second.unix != now.as_secs() {
            second.unix = now.as_secs();
            second.text.clear();
            let time = i64::try_from(now.as_secs())
                .ok()
                .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
                .unwrap_or_default();
            write!(second.text, "{}", time.format("%Y-%m-%dT%H:%M:%S"))?;
        }
        writer.write_str(&second.text)
    })?;
    let micros = now.subsec_micros();
    // Six digits, zero-padded: a million added, its leading 1 skipped.
    let mut digits = itoa::Buffer::new();
    let padded = digits.format(1_000_000 + micros);
    writer.write_char('.')?;
    writer.write_str(&padded[1..])?;
    writer.write_char('Z')
}

/// Writes an event's fields: `message key=value …` in text, the members of an object in
/// JSON.
struct Fields<'w> {
    writer: Writer<'w>,
    json: bool,
    first: bool,
    result: fmt::Result,
}

impl<'w> Fields<'w> {
    fn new(writer: Writer<'w>, json: bool) -> Self {
        Self {
            writer,
            json,
            first: true,
            result: Ok(()),
        }
    }

    /// Starts the field `field`: the separator, and its name (in text, unless it is the
    /// message).
    fn start(&mut self, field: &Field) -> fmt::Result {
        let first = std::mem::take(&mut self.first);
        if self.json {
            if !first {
                self.writer.write_char(',')?;
            }
            write_json_str(&mut self.writer, field.name())?;
            self.writer.write_char(':')
        } else {
            if !first {
                self.writer.write_char(' ')?;
            }
            if field.name() != "message" {
                self.writer.write_str(field.name())?;
                self.writer.write_char('=')?;
            }
            Ok(())
        }
    }

    fn write(&mut self, field: &Field, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = self.start(field).and_then(|()| value(&mut self.writer));
        }
    }

    fn write_str(&mut self, field: &Field, value: &str) {
        if self.json {
            self.write(field, |writer| write_json_str(writer, value));
        } else if field.name() == "message" {
            // A message as it is, as tracing-subscriber writes it.
            self.write(field, |writer| writer.write_str(value));
        } else {
            self.write(field, |writer| write_text_value(writer, value, false));
        }
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.write_str(field, value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.write(field, |writer| {
            writer.write_str(itoa::Buffer::new().format(value))
        });
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.write(field, |writer| {
            writer.write_str(itoa::Buffer::new().format(value))
        });
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if value.is_finite() {
            self.write(field, |writer| {
                writer.write_str(ryu::Buffer::new().format_finite(value))
            });
        } else if self.json {
            // JSON has no NaN or infinity.
            self.write(field, |writer| writer.write_str("null"));
        } else {
            self.write(field, |writer| write!(writer, "{value}"));
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.write(field, |writer| write!(writer, "{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.json {
            self.write_str(field, &format!("{value:?}"));
        } else {
            self.write(field, |writer| write!(writer, "{value:?}"));
        }
    }
}

/// A string value in a text line: as it is, unless quotes (and escapes) are needed to tell
/// where it ends or to keep it on one line (a client's request id, a session id); inside
/// `request{…}`, also when it holds a brace.
fn write_text_value(writer: &mut Writer<'_>, value: &str, in_braces: bool) -> fmt::Result {
    let plain = !value.is_empty()
        && value.bytes().all(|byte| {
            byte.is_ascii_graphic()
                && byte != b'"'
                && byte != b'='
                && !(in_braces && matches!(byte, b'{' | b'}'))
        });
    if plain {
        writer.write_str(value)
    } else {
        write!(writer, "{value:?}")
    }
}

/// `text` as a JSON string, quotes and escapes included.
fn write_json_str(writer: &mut Writer<'_>, text: &str) -> fmt::Result {
    if text
        .bytes()
        .all(|byte| byte >= 0x20 && byte != b'"' && byte != b'\\')
    {
        writer.write_char('"')?;
        writer.write_str(text)?;
        writer.write_char('"')
    } else {
        let quoted = serde_json::to_string(text).map_err(|_| fmt::Error)?;
        writer.write_str(&quoted)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test that cannot go on fails")]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use futures_util::FutureExt;
    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::fmt::format::JsonFields;

    use super::LogLines;

    /// Every line written, kept.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Lines {
        type Writer = Self;

        fn make_writer(&'a self) -> Self {
            self.clone()
        }
    }

    impl Lines {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// Logs what the server's code logs, in an embedder's span, with and without a request.
    fn log_some() {
        askbus_bus::with_request_id("req-\"7\"".into(), async {
            tracing::info!(target: "askbus::access", method = "POST", route = "/q/{id}", status = 200_u16, ms = 0.25);
        })
        .now_or_never()
        .unwrap();
        let outer = tracing::info_span!("outer", job = 3);
        outer.in_scope(|| {
            tracing::warn!(
                reason = "has space",
                ratio = f64::NAN,
                "store {} down",
                "redis"
            );
        });
    }

    #[test]
    fn text_lines_name_the_request_and_write_fields_plainly() {
        let lines = Lines::default();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(lines.clone())
            .event_format(LogLines::text())
            .finish();
        tracing::subscriber::with_default(subscriber, log_some);
        let text = lines.text();
        let logged: Vec<&str> = text.lines().collect();
        assert_eq!(logged.len(), 2, "{text}");
        assert_eq!(
            &logged[0][27..],
            "  INFO request{id=\"req-\\\"7\\\"\"}: askbus::access: method=POST route=/q/{id} status=200 ms=0.25",
            "{text}"
        );
        assert_eq!(
            &logged[1][27..],
            "  WARN outer{job=3}: log_lines::tests: store redis down reason=\"has space\" ratio=NaN"
                .replace("log_lines::tests", module_path!())
                .as_str(),
        );
        assert!(!text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn json_lines_are_objects_naming_the_request_and_the_spans() {
        let lines = Lines::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(lines.clone())
            .event_format(LogLines::json())
            .fmt_fields(JsonFields::new())
            .finish();
        tracing::subscriber::with_default(subscriber, log_some);
        let parsed: Vec<serde_json::Value> = lines
            .text()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(parsed.len(), 2);
        let access = &parsed[0];
        assert_eq!(
            access["span"],
            serde_json::json!({"id": "req-\"7\"", "name": "request"})
        );
        assert_eq!(
            access["fields"],
            serde_json::json!({"method": "POST", "route": "/q/{id}", "status": 200, "ms": 0.25})
        );
        assert_eq!(access["target"], "askbus::access");
        assert_eq!(access["level"], "INFO");
        assert!(access.get("spans").is_none(), "{access}");
        let warning = &parsed[1];
        assert!(warning.get("span").is_none(), "no request: {warning}");
        assert_eq!(
            warning["spans"],
            serde_json::json!([{"job": 3, "name": "outer"}])
        );
        assert_eq!(
            warning["fields"],
            serde_json::json!({"message": "store redis down", "reason": "has space", "ratio": null})
        );
        assert_eq!(warning["level"], "WARN");
    }

    #[test]
    fn colours_mark_the_level_only_when_the_writer_takes_them() {
        let lines = Lines::default();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(true)
            .with_writer(lines.clone())
            .event_format(LogLines::text())
            .finish();
        tracing::subscriber::with_default(subscriber, || tracing::error!("boom"));
        assert!(
            lines.text().contains(" \u{1b}[31mERROR\u{1b}[0m "),
            "{}",
            lines.text()
        );
    }
}
