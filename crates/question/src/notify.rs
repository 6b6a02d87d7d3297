//! Telling the outside world: the outbox message that goes with each change of a request.
//!
//! A webhook receiver, a chat or a mailbox hears of a request through the store's outbox
//! (see `askbus_store`'s `outbox` module): the message is written with the change it tells
//! of, so a crash after a human was told "done" cannot lose it, and over a shared store
//! exactly one instance writes it. What the message says, and to whom, is a [`Notifier`]'s
//! business (the server's turns an event into a signed webhook's payload with answer
//! links); the registry only hands it each request event, as the bus would publish it,
//! when it records the change:
//!
//! - a request registered: its `*.asked` event, queued right after the insert;
//! - a request ended: its outcome's event, inside the resolution, so only the outcome
//!   that wins (over a shared store, one of several instances' proposals) tells anyone;
//! - a vote (a quorum's reply): its `approval.decided` event, right after the vote's record.
//!
//! The [`Durable`](crate::Durable) a caller awaits covers the message too.

use askbus_bus::{Bus, Event};
use askbus_store::{OutboxMessage, SessionEvent};

/// A request event, as a [`Notifier`] is handed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The event's stable type name (`question.asked`).
    pub event_type: String,
    /// The session the request belongs to.
    pub session_id: Option<String>,
    /// The event's properties, exactly as the bus publishes them.
    pub properties: serde_json::Value,
}

/// Turns request events into the outbox messages that tell the outside world of them.
///
/// Called under the registry's lock, while the change is recorded: it must be quick and
/// must not call back into the hub.
pub trait Notifier: Send + Sync + 'static {
    /// The message telling of `notice`, or `None` if nobody is to hear of it.
    fn message(&self, notice: Notice) -> Option<OutboxMessage>;
}

/// Where a kind's events go when it announces one: the bus, or a [`Notice`] being made.
pub(crate) trait EventSink {
    /// Takes `event`.
    fn announce<E: Event>(&mut self, event: E);
}

impl EventSink for &Bus {
    fn announce<E: Event>(&mut self, event: E) {
        self.publish(event);
    }
}

impl EventSink for Option<Notice> {
    fn announce<E: Event>(&mut self, event: E) {
        *self = Some(Notice {
            event_type: E::TYPE.to_owned(),
            session_id: event.session_id().map(str::to_owned),
            // Events are plain data: they always serialise.
            properties: serde_json::to_value(&event).unwrap_or_default(),
        });
    }
}

impl Notice {
    /// The notice of a session event (a vote's record), whose properties are its event's.
    pub(crate) fn of_session_event(event: &SessionEvent) -> Self {
        Self {
            event_type: event.event_type.clone(),
            session_id: Some(event.session_id.clone()),
            properties: serde_json::from_str(&event.properties).unwrap_or_default(),
        }
    }
}
