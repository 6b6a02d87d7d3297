//! Typed events and the envelope they travel in.
//!
//! An [`Event`] is a plain serde type with a stable wire name. Publishing wraps it, once, in
//! an [`Envelope`] that every subscriber shares: subscribers clone a pointer, never the
//! payload. The envelope's JSON form `{"id","type","properties"}` (and `"requestID"` when an
//! HTTP request caused the event: see the `cause` module) is produced the first time anyone
//! asks for it and then cached, so a thousand SSE clients cost one serialisation. It is
//! written in one pass, the payload straight into the envelope's buffer, and where the
//! properties lie in it is kept: the readers that want the properties alone (a journal's
//! record, the `v2` and OpenCode frames, once per client) borrow that slice instead of
//! serialising the payload again or parsing the envelope.

use std::any::Any;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::EventId;

/// A typed event with a stable name.
///
/// The name is part of the public contract (UIs switch on it), so it is a constant of the
/// type, not something derived from the Rust type name.
///
/// # Examples
///
/// ```
/// use askbus_bus::Event;
///
/// #[derive(Clone, serde::Serialize)]
/// struct Pinged {
///     from: String,
/// }
///
/// impl Event for Pinged {
///     const TYPE: &'static str = "demo.pinged";
/// }
/// ```
pub trait Event: Serialize + Clone + Send + Sync + 'static {
    /// The stable event name, `noun.past_participle` (`question.asked`).
    const TYPE: &'static str;

    /// The session this event concerns, if any. Consumers that show one session's events
    /// (a filtered SSE stream, a scoped token) read it from the envelope without parsing
    /// the payload's JSON.
    fn session_id(&self) -> Option<&str> {
        None
    }
}

/// One published event as every subscriber sees it: its id, its type name and its payload.
///
/// Cloning is a reference-count increment.
#[derive(Clone)]
pub struct Envelope {
    /// Shared by the history ring and every subscriber.
    inner: Arc<EnvelopeInner<dyn Payload>>,
}

/// The single allocation behind an [`Envelope`]; the payload is stored inline, unsized.
struct EnvelopeInner<P: ?Sized> {
    /// The event's id, assigned by the bus at publish time.
    id: EventId,
    /// The id of the request whose serving published it, if any (see the `cause` module).
    request_id: Option<Arc<str>>,
    /// The compact JSON of the whole envelope, made on first request.
    json: OnceLock<EnvelopeJson>,
    /// The typed event.
    payload: P,
}

/// Object-safe view of an [`Event`], so envelopes of every type share one channel.
trait Payload: Send + Sync {
    fn event_type(&self) -> &str;
    fn session_id(&self) -> Option<&str>;
    fn as_any(&self) -> &dyn Any;
    /// Appends the payload's compact JSON to `out`; on an error, `out` may hold part of it.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;
}

impl<E: Event> Payload for E {
    fn event_type(&self) -> &str {
        E::TYPE
    }

    fn session_id(&self) -> Option<&str> {
        Event::session_id(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }
}

/// An event read back from a record (a durable store) instead of published as a Rust
/// value: only its JSON survives, so typed subscribers never see it (it downcasts to no
/// [`Event`]), while JSON readers (the SSE stream) see it exactly as it was.
pub(crate) struct RecordedPayload {
    /// The stable type name it was published under.
    event_type: Box<str>,
    /// The session it concerns, if any.
    session_id: Option<Box<str>>,
    /// Its properties, as published.
    properties: Box<RawValue>,
}

impl RecordedPayload {
    /// A recorded event of `event_type`; `properties` must be JSON.
    pub(crate) fn new(
        event_type: &str,
        session_id: Option<&str>,
        properties: &str,
    ) -> serde_json::Result<Self> {
        Ok(Self {
            event_type: event_type.into(),
            session_id: session_id.map(Into::into),
            properties: RawValue::from_string(properties.to_owned())?,
        })
    }
}

impl Payload for RecordedPayload {
    fn event_type(&self) -> &str {
        &self.event_type
    }

    fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(self.properties.get().as_bytes());
        Ok(())
    }
}

/// The wire form of an envelope, made once per envelope: the text, and where in it the
/// properties are.
struct EnvelopeJson {
    /// `{"id":…,"type":…,"properties":…}`, with `,"requestID":…` before the last brace.
    text: Box<str>,
    /// The bytes of `text` that are the properties' JSON.
    properties: Range<usize>,
}

impl EnvelopeJson {
    /// The envelope of the event `id` of `event_type`, whose properties `write_properties`
    /// appends, caused by the request `request_id` if any.
    fn write(
        id: EventId,
        event_type: &str,
        write_properties: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
        request_id: Option<&str>,
    ) -> serde_json::Result<Self> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"{\"id\":");
        serde_json::to_writer(&mut out, &id)?;
        out.extend_from_slice(b",\"type\":");
        serde_json::to_writer(&mut out, event_type)?;
        out.extend_from_slice(b",\"properties\":");
        let start = out.len();
        write_properties(&mut out)?;
        let properties = start..out.len();
        if let Some(request_id) = request_id {
            out.extend_from_slice(b",\"requestID\":");
            serde_json::to_writer(&mut out, request_id)?;
        }
        out.push(b'}');
        let text = String::from_utf8(out).map_err(serde::ser::Error::custom)?;
        Ok(Self {
            text: text.into_boxed_str(),
            properties,
        })
    }

    /// The properties' JSON.
    fn properties(&self) -> &str {
        self.text.get(self.properties.clone()).unwrap_or("null")
    }
}

impl Envelope {
    pub(crate) fn new<E: Event>(id: EventId, event: E, request_id: Option<Arc<str>>) -> Self {
        Self {
            inner: Arc::new(EnvelopeInner {
                id,
                request_id,
                json: OnceLock::new(),
                payload: event,
            }),
        }
    }

    /// An envelope read back from a record of published events (see
    /// [`Journal`](crate::Journal)): `properties` must be the JSON the event had when it
    /// was published. Typed subscriptions skip it; its [`json`](Self::json) is the original.
    ///
    /// # Errors
    ///
    /// `properties` is not valid JSON.
    pub fn recorded(
        id: EventId,
        event_type: &str,
        session_id: Option<&str>,
        properties: &str,
    ) -> serde_json::Result<Self> {
        let payload = RecordedPayload::new(event_type, session_id, properties)?;
        Ok(Self::with_payload(id, payload, None))
    }

    /// The envelope of a recorded event, published while request `request_id` was served
    /// (here, not where it was recorded).
    pub(crate) fn with_payload(
        id: EventId,
        payload: RecordedPayload,
        request_id: Option<Arc<str>>,
    ) -> Self {
        Self {
            inner: Arc::new(EnvelopeInner {
                id,
                request_id,
                json: OnceLock::new(),
                payload,
            }),
        }
    }

    /// The event's properties alone, as compact JSON: what a [`Journal`](crate::Journal)
    /// records, and what [`recorded`](Self::recorded) takes back. A slice of the
    /// envelope's [`json`](Self::json) (made by this call if nobody asked for it yet).
    pub fn properties_json(&self) -> &str {
        self.made_json().properties()
    }

    /// The event's id: ascending in publish order, and the cursor to resume after it.
    pub fn id(&self) -> EventId {
        self.inner.id
    }

    /// The event's stable type name (`question.asked`).
    pub fn event_type(&self) -> &str {
        self.inner.payload.event_type()
    }

    /// The id of the request (its `x-request-id`) whose serving published this event, if
    /// it was published inside [`with_request_id`](crate::with_request_id).
    pub fn request_id(&self) -> Option<&str> {
        self.inner.request_id.as_deref()
    }

    /// The session the event concerns, if its type says ([`Event::session_id`]).
    pub fn session_id(&self) -> Option<&str> {
        self.inner.payload.session_id()
    }

    /// The payload, if this envelope carries an `E`.
    pub fn downcast_ref<E: Event>(&self) -> Option<&E> {
        self.inner.payload.as_any().downcast_ref()
    }

    /// The compact JSON `{"id":…,"type":…,"properties":…}`, with `"requestID":…` last
    /// when [`request_id`](Self::request_id) is some, serialised on the first call and
    /// shared by every later one.
    ///
    /// Event payloads are plain data, so serialisation does not fail in practice; if a
    /// payload ever cannot be serialised, `properties` is `{"error": "<why>"}` rather than
    /// the event silently disappearing from JSON consumers.
    pub fn json(&self) -> &str {
        &self.made_json().text
    }

    /// The envelope's JSON, made on the first call.
    fn made_json(&self) -> &EnvelopeJson {
        self.inner.json.get_or_init(|| {
            let (id, event_type, request_id) = (self.id(), self.event_type(), self.request_id());
            EnvelopeJson::write(
                id,
                event_type,
                |out| self.inner.payload.write_json(out),
                request_id,
            )
            .or_else(|error| {
                let properties = error_properties(&error);
                EnvelopeJson::write(
                    id,
                    event_type,
                    |out| {
                        out.extend_from_slice(properties.get().as_bytes());
                        Ok(())
                    },
                    request_id,
                )
            })
            .unwrap_or_else(|_| EnvelopeJson {
                text: "null".into(),
                properties: 0..4,
            })
        })
    }
}

impl Serialize for Envelope {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue =
            serde_json::from_str(self.json()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl fmt::Debug for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope")
            .field("id", &self.id())
            .field("type", &self.event_type())
            .finish_non_exhaustive()
    }
}

/// The properties that stand in for a payload that cannot be serialised.
fn error_properties(error: &serde_json::Error) -> Box<RawValue> {
    serde_json::value::to_raw_value(&serde_json::json!({ "error": error.to_string() }))
        .unwrap_or_else(|_| RawValue::NULL.to_owned())
}
